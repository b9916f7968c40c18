package stream

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDecodeReading(t *testing.T) {
	for _, tc := range []struct {
		name, key, value string
		want             Reading
	}{
		{"spec example", "12", `{"v":1,"sensor":12,"ts":1700000000000,"values":[123.0,0.05,64.2]}`, Reading{12, 1700000000000, []float64{123, 0.05, 64.2}}},
		{"no key", "", `{"v":1,"sensor":0,"ts":0,"values":[0]}`, Reading{0, 0, []float64{0}}},
		{"whitespace and order", "3", " {\n\t\"values\" : [ 1e2 , -0.5E-1 ] , \"ts\":-300000, \"sensor\": 3 ,\"v\":1 } \n", Reading{3, -300000, []float64{100, -0.05}}},
		{"unknown fields skipped", "7", `{"v":1,"site":{"a":[1,{"b":null}],"c":"x\"\u00e9"},"sensor":7,"ok":true,"ts":900000,"values":[1,2],"q":-1.5e3}`, Reading{7, 900000, []float64{1, 2}}},
		{"escaped field name", "1", `{"\u0076":1,"sensor":1,"ts":0,"values":[5]}`, Reading{1, 0, []float64{5}}},
		{"underflow is zero", "1", `{"v":1,"sensor":1,"ts":0,"values":[1e-400]}`, Reading{1, 0, []float64{0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeReading([]byte(tc.key), []byte(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if got.Sensor != tc.want.Sensor || got.TS != tc.want.TS || !slices.Equal(got.Values, tc.want.Values) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			again, err := DecodeReading([]byte(tc.key), EncodeReading(nil, &got))
			if err != nil || again.Sensor != got.Sensor || again.TS != got.TS || !slices.Equal(again.Values, got.Values) {
				t.Fatalf("round trip: %+v, %v", again, err)
			}
		})
	}
}

func TestDecodeReadingReject(t *testing.T) {
	for _, tc := range []struct {
		key, value, reason string
	}{
		{"", ``, ReasonMalformed},
		{"", `[]`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1]`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1]}x`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1,]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[01]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":1.5,"values":[1]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":"1","ts":0,"values":[1]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"sensor":1,"ts":0,"values":[1]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"values":[1]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":99999999999999999999,"values":[1]}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1],"x":[[[}`, ReasonMalformed},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1],"x":"a` + "\x01" + `"}`, ReasonMalformed},
		{"", `{"sensor":1,"ts":0,"values":[1]}`, ReasonVersion},
		{"", `{"v":2,"sensor":1,"ts":0,"values":[1]}`, ReasonVersion},
		{"", `{"v":2,"sensor":{"id":1},"ts":"2024-01-01T00:00Z","values":{}}`, ReasonVersion},
		{"", `{"v":1,"sensor":-1,"ts":0,"values":[1]}`, ReasonUnknownSensor},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[]}`, ReasonChannels},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1,NaN]}`, ReasonNonFinite},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[Infinity]}`, ReasonNonFinite},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[-Infinity]}`, ReasonNonFinite},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[null]}`, ReasonNonFinite},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1e400]}`, ReasonNonFinite},
		{"2", `{"v":1,"sensor":1,"ts":0,"values":[1]}`, ReasonKeyMismatch},
		{"01x", `{"v":1,"sensor":1,"ts":0,"values":[1]}`, ReasonKeyMismatch},
	} {
		_, err := DecodeReading([]byte(tc.key), []byte(tc.value))
		if got := ReasonOf(err); got != tc.reason {
			t.Errorf("DecodeReading(%q, %q): %v, want reason %q", tc.key, tc.value, err, tc.reason)
		}
	}
	many := `{"v":1,"sensor":1,"ts":0,"values":[` + strings.Repeat("1,", MaxChannels) + `1]}`
	if _, err := DecodeReading(nil, []byte(many)); ReasonOf(err) != ReasonChannels {
		t.Errorf("%d values: %v", MaxChannels+1, err)
	}
}

// TestDecodeReadingNonFiniteDetail checks that a reading refused as
// non-finite names the value by its place in "values" and what it read
// as, and the way to say a reading is missing: the detail said "value 0
// is not a finite number" of [1e400], which reads as a value of 0.
func TestDecodeReadingNonFiniteDetail(t *testing.T) {
	for _, tc := range []struct{ value, want string }{
		{`{"v":1,"sensor":1,"ts":0,"values":[1e400]}`, `values[0] is +Inf`},
		{`{"v":1,"sensor":1,"ts":0,"values":[2,-Infinity]}`, `values[1] is -Inf`},
		{`{"v":1,"sensor":1,"ts":0,"values":[3,4,null]}`, `values[2] is NaN`},
	} {
		_, err := DecodeReading(nil, []byte(tc.value))
		if ReasonOf(err) != ReasonNonFinite || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "0 for a missing reading") {
			t.Errorf("DecodeReading(%q): %v, want non_finite naming %q and how to send a missing reading", tc.value, err, tc.want)
		}
	}
}

func TestValidator(t *testing.T) {
	now := time.UnixMilli(1000*testStep + 1234) // inside slot 1000
	v := &Validator{Nodes: 10, Channels: 3, StepMs: testStep, MaxAgeSlots: 12, MaxFutureSlots: 1, Now: func() time.Time { return now }}
	ok := []float64{1, 2, 3}
	for _, tc := range []struct {
		r      Reading
		reason string
	}{
		{Reading{9, 1000 * testStep, ok}, ""},
		{Reading{0, 1001 * testStep, ok}, ""},
		{Reading{0, 988 * testStep, ok}, ""},
		{Reading{10, 1000 * testStep, ok}, ReasonUnknownSensor},
		{Reading{-3, 1000 * testStep, ok}, ReasonUnknownSensor},
		{Reading{0, 1000 * testStep, []float64{1, 2}}, ReasonChannels},
		{Reading{0, 1000 * testStep, nil}, ReasonChannels},
		{Reading{0, 1000 * testStep, []float64{1, math.NaN(), 3}}, ReasonNonFinite},
		{Reading{0, 1000*testStep + 60000, ok}, ReasonOffGrid},
		{Reading{0, 987 * testStep, ok}, ReasonTooOld},
		{Reading{0, 1002 * testStep, ok}, ReasonTooNew},
		{Reading{0, math.MaxInt64 - math.MaxInt64%testStep, ok}, ReasonTooNew},
	} {
		err := v.Check(tc.r)
		if got := ReasonOf(err); got != tc.reason || (tc.reason == "") != (err == nil) {
			t.Errorf("Check(%+v): %v, want reason %q", tc.r, err, tc.reason)
		}
	}
	// A time in seconds is named as perhaps one, with its ms; one in ms
	// off the grid is not.
	grid := &Validator{StepMs: testStep}
	if err := grid.Check(Reading{0, 1767225900, ok}); ReasonOf(err) != ReasonOffGrid || !strings.Contains(err.Error(), "in seconds? ts is Unix ms: 1767225900000") {
		t.Errorf("a ts in seconds: %v, want off_grid naming seconds", err)
	}
	if err := grid.Check(Reading{0, 1767225660000, ok}); ReasonOf(err) != ReasonOffGrid || strings.Contains(err.Error(), "seconds") {
		t.Errorf("a ts in ms off the grid: %v, want off_grid without a word of seconds", err)
	}
	// Disabled checks.
	loose := &Validator{}
	if err := loose.Check(Reading{1 << 20, 7, []float64{1}}); err != nil {
		t.Errorf("zero Validator: %v", err)
	}
	// Without a clock, or with one and no future limit, a timestamp is
	// still refused where slot arithmetic would overflow or before 1970:
	// a service would otherwise move the sensor's window there for good.
	last := MaxTS - MaxTS%testStep
	for _, v := range []*Validator{{StepMs: testStep}, {StepMs: testStep, MaxAgeSlots: 12, Now: v.Now}, loose} {
		for _, tc := range []struct {
			ts     int64
			reason string
		}{
			{last, ""},
			{0, ""},
			{last + testStep, ReasonTooNew},
			{math.MaxInt64 - math.MaxInt64%testStep, ReasonTooNew},
			{1_700_000_000_000_000 - 1_700_000_000_000_000%testStep, ReasonTooNew}, // 2023 in µs
			{-testStep, ReasonTooOld},
		} {
			if v.MaxAgeSlots > 0 && tc.ts < 1000*testStep && tc.reason == "" {
				tc.reason = ReasonTooOld
			}
			err := v.Check(Reading{0, tc.ts, ok})
			if got := ReasonOf(err); got != tc.reason || (tc.reason == "") != (err == nil) {
				t.Errorf("%+v: Check(ts %d): %v, want reason %q", *v, tc.ts, err, tc.reason)
			}
		}
	}
}

// TestDecodeForecastNull checks that a value written as null (a
// non-finite one, as EncodeForecast writes it) decodes as NaN, not as a
// forecast of 0, and round-trips so.
func TestDecodeForecastNull(t *testing.T) {
	f := Forecast{Sensor: 1, TS: 300000, Values: []float64{math.Inf(1), 2.5, math.NaN()}, Model: "m", Inputs: []Input{}}
	b := EncodeForecast(nil, &f)
	if !strings.Contains(string(b), `"values":[null,2.5,null]`) {
		t.Fatalf("encoded %s", b)
	}
	got, err := DecodeForecast(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Values) != 3 || !math.IsNaN(got.Values[0]) || got.Values[1] != 2.5 || !math.IsNaN(got.Values[2]) {
		t.Errorf("decoded values %v, want [NaN 2.5 NaN]", got.Values)
	}
	if got, err := DecodeForecast([]byte(`{"v":1,"sensor":1,"ts":0,"model":"m","inputs":[],"stale_slots":0,"emitted_ms":0}`)); err != nil || got.Values != nil {
		t.Errorf("no values: %v, %v", got.Values, err)
	}
}

func TestForecastRoundTrip(t *testing.T) {
	f := Forecast{Sensor: 12, TS: 1700000300000, Values: []float64{123.5, 0.05, -1e-300}, Model: "v\"1\n\x01é\xff",
		Inputs: []Input{{Sensor: 11, TS: 1700000000000}, {Sensor: 12, TS: 1699999700000, Gaps: 2}, {Sensor: 13, TS: 1700000000000, Missing: true, Gaps: 12}}, StaleSlots: 1, EmittedMs: 1700000301234}
	b := EncodeForecast(nil, &f)
	if !json.Valid(b) {
		t.Fatalf("invalid JSON %s", b)
	}
	// Only an input without readings says so, and only one with gaps
	// counts them.
	if !strings.Contains(string(b), `[{"sensor":11,"ts":1700000000000},{"sensor":12,"ts":1699999700000,"gaps":2},{"sensor":13,"ts":1700000000000,"missing":true,"gaps":12}]`) {
		t.Errorf("inputs in %s", b)
	}
	got, err := DecodeForecast(b)
	if err != nil {
		t.Fatal(err)
	}
	want := f
	want.Model = "v\"1\n\x01é\ufffd"
	if !forecastEqual(got, want) || got.EmittedMs != want.EmittedMs {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if _, err := DecodeForecast([]byte(`{"v":2}`)); err == nil {
		t.Error("forecast of version 2 accepted")
	}
	empty := EncodeForecast(nil, &Forecast{Values: []float64{math.NaN()}})
	if !json.Valid(empty) || !strings.Contains(string(empty), `"values":[null]`) || !strings.Contains(string(empty), `"inputs":[]`) {
		t.Errorf("empty forecast %s", empty)
	}
}

// TestForecastMessage checks the service's forecast message: the sensor
// as key and EncodeForecast's bytes as value, in one allocation, and
// neither changed by the next message (they share no scratch).
func TestForecastMessage(t *testing.T) {
	s := &Service{}
	f := Forecast{Sensor: 307, TS: 1700000300000, Values: []float64{123.5, 0.05, 61.25}, Model: "pems04-v3",
		Inputs: []Input{{Sensor: 11, TS: 1700000000000}, {Sensor: 306, TS: 1699999700000}, {Sensor: 307, TS: 1700000000000}}, EmittedMs: 1700000301234}
	m := s.forecastMessage(&f)
	if string(m.Key) != "307" || string(m.Value) != string(EncodeForecast(nil, &f)) {
		t.Fatalf("message %q: %s, want \"307\": %s", m.Key, m.Value, EncodeForecast(nil, &f))
	}
	value := string(m.Value)
	f2 := f
	f2.Sensor, f2.Values = 5, []float64{1, 2, 3}
	if m2 := s.forecastMessage(&f2); string(m2.Key) != "5" || string(m.Key) != "307" || string(m.Value) != value {
		t.Fatalf("after the next message: %q: %s", m.Key, m.Value)
	}
	if cap(m.Key) != len(m.Key) {
		t.Errorf("key's capacity %d runs into the value", cap(m.Key))
	}
	if a := testing.AllocsPerRun(100, func() { s.forecastMessage(&f) }); a != 1 {
		t.Errorf("%v allocations per forecast message, want 1", a)
	}
}

func TestDeadLetterRoundTrip(t *testing.T) {
	_, rerr := DecodeReading([]byte("3"), []byte(`{"v":1,"sensor":4,"ts":0,"values":[1]}`))
	for _, tc := range []struct {
		name   string
		l      DeadLetter
		reason string
	}{
		{"text", NewDeadLetter(rerr, []byte("3"), []byte(`{"v":1,"sensor":4,"ts":0,"values":[1]}`), "readings", 2, 77), ReasonKeyMismatch},
		{"binary", NewDeadLetter(&RejectError{ReasonMalformed, "x"}, []byte{0xff, 0}, []byte{0, 1, 0xfe}, "readings", 0, 1), ReasonMalformed},
		{"internal", NewDeadLetter(errFake("boom"), nil, nil, "t", 1, 2), "internal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeDeadLetter(nil, &tc.l)
			if !json.Valid(b) {
				t.Fatalf("invalid JSON %s", b)
			}
			got, err := DecodeDeadLetter(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Reason != tc.reason || got.Detail != tc.l.Detail || string(got.Key) != string(tc.l.Key) || string(got.Value) != string(tc.l.Value) ||
				got.Topic != tc.l.Topic || got.Partition != tc.l.Partition || got.Offset != tc.l.Offset {
				t.Fatalf("got %+v, want %+v (%s)", got, tc.l, b)
			}
		})
	}
}

type errFake string

func (e errFake) Error() string { return string(e) }

// FuzzDecodeReading: the decoder never panics, refuses with a known reason,
// and whatever it accepts re-encodes and decodes to the same reading.
func FuzzDecodeReading(f *testing.F) {
	for _, s := range []struct{ k, v string }{
		{"12", `{"v":1,"sensor":12,"ts":1700000000000,"values":[123.0,0.05,64.2]}`},
		{"", `{"v":1,"sensor":0,"ts":-300000,"values":[-0,1e308,5e-324]}`},
		{"1", `{"values":[1],"x":{"y":[true,false,null,"\u1234\n"]},"ts":0,"sensor":1,"v":1}`},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[NaN]}`},
		{"", `{"v":2}`},
		{"", `{"v":1,"sensor":1,"ts":0,"values":[1e400]}`},
		{"", `{"\u0073ensor":1,"v":1,"ts":0,"values":[1]}`},
		{"x", `[`},
		{"", ``},
	} {
		f.Add([]byte(s.k), []byte(s.v))
	}
	reasons := map[string]bool{}
	for _, r := range Reasons {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := DecodeReading(key, value)
		if err != nil {
			if !reasons[ReasonOf(err)] {
				t.Fatalf("error without a known reason: %v", err)
			}
			return
		}
		for _, v := range r.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("accepted non-finite value in %q", value)
			}
		}
		enc := EncodeReading(nil, &r)
		r2, err := DecodeReading(key, enc)
		if err != nil {
			t.Fatalf("re-encoded %s refused: %v", enc, err)
		}
		if r2.Sensor != r.Sensor || r2.TS != r.TS || !slices.EqualFunc(r.Values, r2.Values, func(a, b float64) bool {
			return math.Float64bits(a) == math.Float64bits(b)
		}) {
			t.Fatalf("round trip of %q: %+v, then %+v", value, r, r2)
		}
		var m map[string]any
		if json.Unmarshal(value, &m) != nil {
			t.Fatalf("accepted invalid JSON %q", value)
		}
	})
}

// TestDecodeVersionError: a forecast or dead letter of another version is
// refused naming that version (not the address of a pointer to it), and
// one without "v" naming that it is missing.
func TestDecodeVersionError(t *testing.T) {
	for _, tc := range []struct {
		name, msg, want string
		decode          func([]byte) error
	}{
		{"forecast v2", `{"v":2,"sensor":1,"ts":0,"values":[1]}`, "version 2, want 1", func(b []byte) error { _, err := DecodeForecast(b); return err }},
		{"forecast no v", `{"sensor":1,"ts":0,"values":[1]}`, `"v" missing`, func(b []byte) error { _, err := DecodeForecast(b); return err }},
		{"dead letter v7", `{"v":7,"reason":"malformed"}`, "version 7, want 1", func(b []byte) error { _, err := DecodeDeadLetter(b); return err }},
		{"dead letter no v", `{"reason":"malformed"}`, `"v" missing`, func(b []byte) error { _, err := DecodeDeadLetter(b); return err }},
	} {
		err := tc.decode([]byte(tc.msg))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
