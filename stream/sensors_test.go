package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
)

// losLoopNames are Los-loop's first detectors' IDs, for a model of 4
// sensors.
func losLoopNames(tb testing.TB) *pems.SensorNames {
	tb.Helper()
	names, err := pems.NewSensorNames(4, []string{"773869", "767541", "767542", "7a"})
	if err != nil {
		tb.Fatal(err)
	}
	return names
}

// TestDecodeReadingFor checks the readings of a model whose sensors have
// IDs, and of one without: a sensor named by ID as a string or a number,
// the key that must be its ID, an ID the model does not have, an index
// where the model has IDs, and an index where it has none.
func TestDecodeReadingFor(t *testing.T) {
	ids := losLoopNames(t)
	idx, err := pems.NewSensorNames(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		names      *pems.SensorNames
		key, value string
		sensor     int    // when accepted
		reason     string // when refused
		detail     string // in the refusal's detail
	}{
		{"ID as a string", ids, "767541", `{"v":1,"sensor":"767541","ts":0,"values":[60]}`, 1, "", ""},
		{"ID as a number", ids, "767541", `{"v":1,"sensor":767541,"ts":0,"values":[60]}`, 1, "", ""},
		{"ID without a key", ids, "", `{"v":1,"sensor":"7a","ts":0,"values":[60]}`, 3, "", ""},
		{"ID with an escape", ids, "7a", `{"v":1,"sensor":"\u0037a","ts":0,"values":[60]}`, 3, "", ""},
		{"unknown ID", ids, "999999", `{"v":1,"sensor":"999999","ts":0,"values":[60]}`, 0, ReasonUnknownSensor, `sensor "999999" is not one of the model's 4 sensor IDs (773869, 767541, …)`},
		{"unknown numeric ID", ids, "", `{"v":1,"sensor":999999,"ts":0,"values":[60]}`, 0, ReasonUnknownSensor, `sensor "999999" is not one`},
		{"index where there are IDs", ids, "1", `{"v":1,"sensor":1,"ts":0,"values":[60]}`, 0, ReasonUnknownSensor, `sensor "1" is not one`},
		{"negative ID", ids, "", `{"v":1,"sensor":-773869,"ts":0,"values":[60]}`, 0, ReasonUnknownSensor, `"-773869"`},
		{"key of another sensor", ids, "773869", `{"v":1,"sensor":"767541","ts":0,"values":[60]}`, 0, ReasonKeyMismatch, `key "773869" is not the sensor's ID "767541"`},
		{"key as an index", ids, "1", `{"v":1,"sensor":"767541","ts":0,"values":[60]}`, 0, ReasonKeyMismatch, `key "1"`},
		{"ID not a string or number", ids, "", `{"v":1,"sensor":[1],"ts":0,"values":[60]}`, 0, ReasonMalformed, `"sensor"`},
		{"index without IDs", idx, "2", `{"v":1,"sensor":2,"ts":0,"values":[60]}`, 2, "", ""},
		{"index as a string without IDs", idx, "2", `{"v":1,"sensor":"2","ts":0,"values":[60]}`, 0, ReasonMalformed, "names its sensors by index"},
		{"key mismatch without IDs", idx, "3", `{"v":1,"sensor":2,"ts":0,"values":[60]}`, 0, ReasonKeyMismatch, "key \"3\" is not the sensor id 2"},
		{"no names", nil, "773869", `{"v":1,"sensor":773869,"ts":0,"values":[60]}`, 773869, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Reading
			err := DecodeReadingFor(&r, []byte(tc.key), []byte(tc.value), tc.names)
			if tc.reason == "" {
				if err != nil || r.Sensor != tc.sensor || r.TS != 0 || !slices.Equal(r.Values, []float64{60}) {
					t.Fatalf("got %+v, %v; want sensor %d", r, err, tc.sensor)
				}
				// Encoded for the same names, it decodes the same.
				var again Reading
				key := appendKey(nil, r.Sensor, tc.names.ID(r.Sensor))
				if err := DecodeReadingFor(&again, key, EncodeReadingFor(nil, &r, tc.names), tc.names); err != nil || again.Sensor != r.Sensor {
					t.Fatalf("round trip: %+v, %v", again, err)
				}
				return
			}
			if ReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("error %v, want reason %s with %q", err, tc.reason, tc.detail)
			}
		})
	}
}

// TestEncodeReadingFor: a reading of a model with IDs names its sensor by
// its ID, a JSON string; without, by its index.
func TestEncodeReadingFor(t *testing.T) {
	r := Reading{Sensor: 1, TS: 300000, Values: []float64{61.5}}
	if got := string(EncodeReadingFor(nil, &r, losLoopNames(t))); got != `{"v":1,"sensor":"767541","ts":300000,"values":[61.5]}` {
		t.Errorf("with IDs: %s", got)
	}
	if got := string(EncodeReadingFor(nil, &r, nil)); got != `{"v":1,"sensor":1,"ts":300000,"values":[61.5]}` {
		t.Errorf("without: %s", got)
	}
}

// TestDecodeReadingForAllocates: with IDs, decoding a reading into a
// reused one allocates nothing, as by index.
func TestDecodeReadingForAllocates(t *testing.T) {
	names := losLoopNames(t)
	var r Reading
	for _, tc := range []struct{ key, value string }{
		{"767541", `{"v":1,"sensor":"767541","ts":1700000000000,"values":[64.2]}`},
		{"767541", `{"v":1,"sensor":767541,"ts":1700000000000,"values":[64.2]}`},
	} {
		key, value := []byte(tc.key), []byte(tc.value)
		if n := testing.AllocsPerRun(100, func() {
			if err := DecodeReadingFor(&r, key, value, names); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: %v allocations per reading", tc.value, n)
		}
	}
}

// TestForecastWithIDs: a forecast of a model with IDs names its sensor
// and its inputs by their IDs; DecodeForecast gives the IDs (and −1 for
// the indices it cannot know), DecodeForecastFor the indices too; and
// the message's key is the ID.
func TestForecastWithIDs(t *testing.T) {
	names := losLoopNames(t)
	f := Forecast{Sensor: 1, ID: "767541", TS: 600000, Values: []float64{61.25}, Model: "m",
		Inputs: []Input{{Sensor: 0, ID: "773869", TS: 300000}, {Sensor: 1, ID: "767541", TS: 300000, Gaps: 1}}, EmittedMs: 7}
	b := EncodeForecast(nil, &f)
	if !json.Valid(b) || !strings.Contains(string(b), `{"v":1,"sensor":"767541","ts":600000`) ||
		!strings.Contains(string(b), `"inputs":[{"sensor":"773869","ts":300000},{"sensor":"767541","ts":300000,"gaps":1}]`) {
		t.Fatalf("encoded %s", b)
	}
	got, err := DecodeForecast(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Sensor != -1 || got.ID != "767541" || got.Name() != "767541" || len(got.Inputs) != 2 || got.Inputs[0].ID != "773869" || got.Inputs[0].Sensor != -1 || got.Inputs[1].Gaps != 1 {
		t.Errorf("DecodeForecast: %+v", got)
	}
	got, err = DecodeForecastFor(b, names)
	if err != nil {
		t.Fatal(err)
	}
	if !forecastEqual(got, f) || got.ID != f.ID || got.Inputs[0].ID != "773869" {
		t.Errorf("DecodeForecastFor: %+v, want %+v", got, f)
	}
	m := (&Service{}).forecastMessage(&f)
	if string(m.Key) != "767541" || string(m.Value) != string(b) {
		t.Errorf("message %q: %s", m.Key, m.Value)
	}
	// A forecast named otherwise than its model names its sensors.
	plain := EncodeForecast(nil, &Forecast{Sensor: 1, Values: []float64{1}, Inputs: []Input{{Sensor: 1}}})
	if _, err := DecodeForecastFor(plain, names); err == nil || !strings.Contains(err.Error(), "named by index") {
		t.Errorf("a forecast by index for a model with IDs: %v", err)
	}
	idx, _ := pems.NewSensorNames(4, nil)
	if _, err := DecodeForecastFor(b, idx); err == nil || !strings.Contains(err.Error(), "named by ID") {
		t.Errorf("a forecast by ID for a model without: %v", err)
	}
	other := EncodeForecast(nil, &Forecast{Sensor: 1, ID: "111", Values: []float64{1}})
	if _, err := DecodeForecastFor(other, names); err == nil || !strings.Contains(err.Error(), `"111" is not one of the model's`) {
		t.Errorf("a forecast of an unknown ID: %v", err)
	}
	if got, err := DecodeForecastFor(plain, idx); err != nil || got.Sensor != 1 || got.Inputs[0].Sensor != 1 {
		t.Errorf("a forecast by index for a model without IDs: %+v, %v", got, err)
	}
}

// FuzzDecodeReadingFor decodes the fuzzer's messages for a model whose
// sensors have IDs: a reading accepted is of one of its sensors, its key
// (if any) that sensor's ID, and it round-trips; a refusal has a known
// reason.
func FuzzDecodeReadingFor(f *testing.F) {
	for _, s := range []struct{ k, v string }{
		{"767541", `{"v":1,"sensor":"767541","ts":1700000000000,"values":[64.2]}`},
		{"", `{"v":1,"sensor":773869,"ts":0,"values":[1]}`},
		{"7a", `{"v":1,"sensor":"\u0037a","ts":0,"values":[1]}`},
		{"", `{"v":1,"sensor":"767","ts":0,"values":[1]}`},
		{"1", `{"v":1,"sensor":1,"ts":0,"values":[1]}`},
		{"", `{"v":1,"sensor":"\ud800","ts":0,"values":[1]}`},
	} {
		f.Add([]byte(s.k), []byte(s.v))
	}
	names := losLoopNames(f)
	reasons := map[string]bool{}
	for _, r := range Reasons {
		reasons[r] = true
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		var r Reading
		if err := DecodeReadingFor(&r, key, value, names); err != nil {
			if !reasons[ReasonOf(err)] {
				t.Fatalf("error without a known reason: %v", err)
			}
			return
		}
		if r.Sensor < 0 || r.Sensor >= names.Len() {
			t.Fatalf("accepted sensor %d of %q", r.Sensor, value)
		}
		if len(key) > 0 && string(key) != names.Name(r.Sensor) {
			t.Fatalf("accepted key %q for sensor %s", key, names.Name(r.Sensor))
		}
		var again Reading
		if err := DecodeReadingFor(&again, key, EncodeReadingFor(nil, &r, names), names); err != nil || again.Sensor != r.Sensor || again.TS != r.TS {
			t.Fatalf("round trip of %q: %+v, %v", value, again, err)
		}
	})
}

// TestCSVReaderIDs reads a CSV file of a model whose sensors have IDs:
// the sensor column holds them, a row of an ID the model lacks (or of an
// index) is a CSVError naming it, and the reader reads on after it.
func TestCSVReaderIDs(t *testing.T) {
	in := "ts,sensor,speed\n" +
		"2012-03-01T00:05:00Z,767541,61.5\n" +
		"300000, 7a ,\n" +
		"300000,1,60\n" +
		"300000,999999,60\n" +
		"600000,773869,58\n"
	c, err := NewCSVReader(strings.NewReader(in), []string{"speed"})
	if err != nil {
		t.Fatal(err)
	}
	c.SetSensors(losLoopNames(t))
	type row struct {
		sensor int
		err    string
	}
	var got []row
	for {
		r, err := c.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var ce *CSVError
			if !errors.As(err, &ce) || ce.Column != "sensor" {
				t.Fatalf("line %d: %v, want a CSVError of column sensor", c.Line(), err)
			}
			got = append(got, row{-1, err.Error()})
			continue
		}
		got = append(got, row{r.Sensor, ""})
	}
	want := []row{{1, ""}, {3, ""}, {-1, `line 4, column sensor: "1" is not one of the 4 sensor IDs`}, {-1, `line 5, column sensor: "999999" is not one`}, {0, ""}}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].sensor != want[i].sensor || !strings.Contains(got[i].err, want[i].err) {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestReloadKeepsSensorNames: a model that names its sensors otherwise
// (other IDs, or IDs where the service has indices, or none where it has
// IDs) is refused by Reload, naming the difference; one of the same IDs
// is taken.
func TestReloadKeepsSensorNames(t *testing.T) {
	withIDs := func(ids []string) *sdgnn.Bundle {
		b := testBundle(t, 4, 3, 1, 2, 1)
		b.Meta.SensorIDs = ids
		return b
	}
	ids := losLoopNames(t).IDs()
	svc, err := NewService(withIDs(ids), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	other := slices.Clone(ids)
	other[2] = "767543"
	for _, tc := range []struct {
		name string
		ids  []string
		want string // in the error; "" for none
	}{
		{"same IDs", slices.Clone(ids), ""},
		{"another ID", other, `names sensor 2 "767543", the service "767542"`},
		{"by index", nil, "names its sensors by index, the service by ID (773869, …)"},
	} {
		err := svc.Reload(withIDs(tc.ids))
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	plain, err := NewService(withIDs(nil), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Reload(withIDs(ids)); err == nil || !strings.Contains(err.Error(), "names its sensors by ID (773869, …), the service by index") {
		t.Errorf("IDs over indices: %v", err)
	}
}

// TestRebuildCountsStrangers: a service whose model names its sensors by
// ID, rebuilding from a forecasts topic written by a model that named
// them by index, takes none of those forecasts and counts them, for the
// warning that the topics were written for other sensors; its own are
// taken.
func TestRebuildCountsStrangers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings", "forecasts")
	b := testBundle(t, 4, 3, 1, 2, 1)
	b.Meta.SensorIDs = losLoopNames(t).IDs()
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	// Readings up to slot 10, keyed by ID, applied and committed: the
	// model's own forecast of slot 11 can have come from them (a rebuild
	// distrusts one that cannot: TestRebuildDistrustsForgedForecasts).
	writeReadingsFor(ctx, t, emb.Addr, streamOf(rampSeries(11, 4, 1), 11, 4, 1, 0), svc.names)
	commitAll(ctx, t, emb.Addr, "sdgnn-forecaster", "readings", 1)
	var msgs []kafka.Message
	for z := range 3 { // by index, as a model without IDs wrote them
		f := Forecast{Sensor: z, TS: 10 * testStep, Values: []float64{1}, Model: "old"}
		msgs = append(msgs, kafka.Message{Key: appendKey(nil, z, ""), Value: EncodeForecast(nil, &f)})
	}
	own := Forecast{Sensor: 3, ID: "7a", TS: 11 * testStep, Values: []float64{1}, Model: "new"}
	msgs = append(msgs, kafka.Message{Key: []byte("7a"), Value: EncodeForecast(nil, &own)})
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "forecasts", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := svc.rebuild(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Strangers != 3 || r.Forecasts != 1 || r.Sensors != 1 || r.Untrusted != 0 || r.Readings != 44 {
		t.Errorf("rebuilt %+v, want 44 readings, 3 strangers and the model's own forecast", r)
	}
	if info, _ := svc.State().Node(3); !info.Emitted || info.LastEmitted != 11*testStep {
		t.Errorf("sensor 7a: %+v, want its forecast of slot 11 marked", info)
	}
}

// TestOldBundleStreamsByIndex serves a bundle committed under results/,
// written before bundles recorded sensor IDs, as before: readings keyed
// and named by index are taken, a sensor named by a string is malformed,
// and its forecasts name their sensor and inputs by index, numbers.
func TestOldBundleStreamsByIndex(t *testing.T) {
	b, err := sdgnn.LoadBundle(filepath.Join("..", "results", "sz-taxi-paper-windows", "first-step-scaling", "models", "sz-taxi-sdgnn-paper-windows-seed1.sdgnn"))
	if err != nil {
		t.Fatal(err)
	}
	step := b.Meta.Norm.Time.StepMs
	st, err := NewState(b, step)
	if err != nil {
		t.Fatal(err)
	}
	names := st.Names()
	if names.HasIDs() {
		t.Fatalf("an old bundle names its sensors %s", names.Describe())
	}
	z := 12
	ks, _ := b.Receptive(z)
	t0 := b.Meta.Norm.Time.OriginMs
	var r Reading
	for k := range b.Meta.Window {
		for _, s := range ks {
			msg := fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":[%d]}`, s, t0+int64(k)*step, 30+k)
			if err := DecodeReadingFor(&r, []byte(strconv.Itoa(s)), []byte(msg), names); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := DecodeReadingFor(&r, nil, []byte(`{"v":1,"sensor":"12","ts":0,"values":[1]}`), names); ReasonOf(err) != ReasonMalformed {
		t.Errorf("a sensor named by a string: %v, want malformed", err)
	}
	var f Forecast
	if err := st.Forecast(z, &f); err != nil {
		t.Fatal(err)
	}
	msg := string(EncodeForecast(nil, &f))
	if f.ID != "" || !strings.Contains(msg, `{"v":1,"sensor":12,`) || !strings.Contains(msg, fmt.Sprintf(`"inputs":[{"sensor":%d,`, ks[0])) {
		t.Errorf("forecast %s", msg)
	}
}

// TestStateFileBeforeIDs restores a state file written by the service
// before sensor IDs were kept (testdata/state-before-ids.snap: the state
// of testBundle(4, 3, 1, 2, 1) after the readings below, written at
// 05aee5a) into the state of the same model with IDs: the file holds
// sensors by index, as it still does, so it restores to the state that
// applying those readings now gives, bit for bit, and forecasts named by
// ID come of it.
func TestStateFileBeforeIDs(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("testdata", "state-before-ids.snap"))
	if err != nil {
		t.Fatal(err)
	}
	for _, ids := range [][]string{nil, {"773869", "767541", "767542", "717447"}} {
		b := testBundle(t, 4, 3, 1, 2, 1)
		b.Meta.SensorIDs = ids
		restored, err := NewState(b, testStep)
		if err != nil {
			t.Fatal(err)
		}
		if err := restored.Restore(old); err != nil {
			t.Fatalf("ids %v: %v", ids, err)
		}
		applied, err := NewState(b, testStep)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, applied, streamOf(testSeries(8, 4, 1, 3), 8, 4, 1, 0))
		if !bytes.Equal(restored.Snapshot(), applied.Snapshot()) || !bytes.Equal(restored.Snapshot(), old) {
			t.Errorf("ids %v: the state restored from the old file differs from the readings' state, or writes another file", ids)
		}
		for z := range 4 {
			var got, want Forecast
			if err := restored.Forecast(z, &got); err != nil {
				t.Fatal(err)
			}
			if err := applied.Forecast(z, &want); err != nil {
				t.Fatal(err)
			}
			if !forecastEqual(got, want) || got.Name() != restored.Names().Name(z) || (ids != nil && got.ID != ids[z]) {
				t.Errorf("ids %v, sensor %d: restored forecast %+v, applied %+v", ids, z, got, want)
			}
		}
	}
}
