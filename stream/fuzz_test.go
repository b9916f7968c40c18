package stream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzRestore: Restore never panics on any bytes; the fuzzer's bytes get a
// valid checksum so that it explores the checks after it. A refused
// snapshot wraps ErrSnapshot and leaves the state as it was; an accepted
// one snapshots and restores to itself, and forecasts without panicking.
func FuzzRestore(f *testing.F) {
	const n, T, C, d, steps = 4, 3, 2, 3, 9
	b := testBundle(f, n, T, C, d, 21)
	rs := streamOf(testSeries(steps, n, C, 22), steps, n, C, 77)
	st, _ := NewStateHistory(b, testStep, 2)
	mustApply(f, st, rs)
	full := st.Snapshot()
	empty, _ := NewStateHistory(b, testStep, 2)
	f.Add(full[:len(full)-4])
	f.Add(empty.Snapshot()[:len(full)-4])
	// version 1: no ring field, ring = window
	st1, _ := NewStateHistory(b, testStep, 0)
	mustApply(f, st1, rs)
	v1 := st1.Snapshot()
	v1 = append(v1[:snapHeaderV1:snapHeaderV1], v1[snapHeader:len(v1)-4]...)
	binary.LittleEndian.PutUint16(v1[4:], 1)
	f.Add(v1)
	f.Fuzz(func(t *testing.T, body []byte) {
		data := binary.LittleEndian.AppendUint32(bytes.Clone(body), crc32.Checksum(body, castagnoli))
		s, _ := NewStateHistory(b, testStep, 2)
		before := s.Snapshot()
		if err := s.Restore(data); err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error not wrapping ErrSnapshot: %v", err)
			}
			if !bytes.Equal(s.Snapshot(), before) {
				t.Fatal("refused snapshot changed the state")
			}
			return
		}
		snap := s.Snapshot()
		s2, _ := NewStateHistory(b, testStep, 2)
		if err := s2.Restore(snap); err != nil {
			t.Fatalf("own snapshot refused: %v", err)
		}
		if !bytes.Equal(s2.Snapshot(), snap) {
			t.Fatal("snapshot does not restore to itself")
		}
		var fc Forecast
		for z := 0; z < n; z++ {
			s.Forecast(z, &fc)
			w, _, _ := s.Window(nil, z)
			for _, v := range w {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("node %d window holds %g", z, v)
				}
			}
		}
	})
}

// FuzzCSVReader: the reader never panics; every row is a reading, a
// *CSVError or the end.
func FuzzCSVReader(f *testing.F) {
	for _, s := range []string{
		"ts,sensor,flow,occupancy,speed\n1767225600000,3,1,2,3\n",
		"\ufeff\"ts\",sensor,speed,flow,occupancy\r\n2026-01-01T00:05:00Z,1,,2,3\n1,\"2\n\",3,4,5\n",
		"speed,ts,sensor,flow,occupancy\n1\"5,1,2,3,4\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		c, err := NewCSVReader(strings.NewReader(in), pemsChannels)
		if err != nil {
			return
		}
		for i := 0; i < 1000; i++ {
			_, err := c.Read()
			if err == io.EOF {
				return
			}
			var ce *CSVError
			if err != nil && !errors.As(err, &ce) {
				t.Fatalf("error %v, not a CSVError", err)
			}
		}
	})
}

// FuzzDeadLetter: a dead letter of any key and value decodes to the same
// bytes.
func FuzzDeadLetter(f *testing.F) {
	f.Add([]byte("12"), []byte(`{"v":1}`), "detail")
	f.Add([]byte{0xff, 0}, []byte("\xed\xa0\x80"), "\x00\u2028")
	f.Fuzz(func(t *testing.T, key, value []byte, detail string) {
		l := DeadLetter{Reason: "malformed", Detail: detail, Key: key, Value: value, Topic: "readings", Partition: 3, Offset: 9}
		enc := EncodeDeadLetter(nil, &l)
		got, err := DecodeDeadLetter(enc)
		if err != nil {
			t.Fatalf("%q: %v", enc, err)
		}
		if !bytes.Equal(got.Key, key) || !bytes.Equal(got.Value, value) || got.Topic != l.Topic || got.Offset != l.Offset {
			t.Fatalf("round trip %+v -> %q -> %+v", l, enc, got)
		}
	})
}

// TestRestoreFieldsWithValidChecksum sets each 8-byte field of a snapshot
// to values at and around the edges, with a checksum that matches: Restore
// refuses or accepts without panicking, and an accepted state forecasts,
// emits and snapshots to bytes it restores.
func TestRestoreFieldsWithValidChecksum(t *testing.T) {
	const n, T, C, d, steps = 4, 3, 2, 3, 9
	b := testBundle(t, n, T, C, d, 21)
	rs := streamOf(testSeries(steps, n, C, 22), steps, n, C, 77)
	st, _ := NewStateHistory(b, testStep, 2)
	mustApply(t, st, rs)
	full := st.Snapshot()
	body := full[:len(full)-4]
	le := binary.LittleEndian
	accepted := 0
	for off := snapHeader; off+8 <= len(body); off += 8 {
		orig := int64(le.Uint64(body[off:]))
		for _, v := range []int64{noSlot, noSlot + 1, math.MaxInt64, 0, -1, orig + 1, orig - 1, orig + 5, orig - 5, orig + 6, orig - 6, int64(math.Float64bits(math.NaN())), int64(math.Float64bits(math.Inf(1)))} {
			m := bytes.Clone(body)
			le.PutUint64(m[off:], uint64(v))
			data := le.AppendUint32(m, crc32.Checksum(m, castagnoli))
			for _, h := range []int{0, 2, 5} {
				s, _ := NewStateHistory(b, testStep, h)
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Fatalf("off %d v %d history %d: panic %v", off, v, h, r)
						}
					}()
					if err := s.Restore(data); err != nil {
						return
					}
					accepted++
					var fc Forecast
					for z := 0; z < n; z++ {
						s.Forecast(z, &fc)
						em := NewEmitter(s, 0)
						for _, z := range em.Due(farFuture) {
							em.Emit(z, farFuture, &fc)
						}
					}
					s2, _ := NewStateHistory(b, testStep, h)
					if err := s2.Restore(s.Snapshot()); err != nil {
						t.Fatalf("off %d v %d history %d: own snapshot refused: %v", off, v, h, err)
					}
				}()
			}
		}
	}
	t.Logf("%d accepted", accepted)
}

// FuzzApplyWindows: after any sequence of readings, every node's window is
// what a naive model of first-wins, late-dropped readings gives (a later
// reading completing a slot's missing value), before and after a
// snapshot's round trip, into this history or another.
func FuzzApplyWindows(f *testing.F) {
	const n, T, C, d = 3, 3, 1, 2
	b := testBundle(f, n, T, C, d, 5)
	f.Add([]byte{0, 1, 5, 1, 2, 7, 0, 200, 9, 2, 3, 1}, uint8(2))
	f.Fuzz(func(t *testing.T, ops []byte, hist uint8) {
		h := int(hist % 6)
		st, _ := NewStateHistory(b, testStep, h)
		R := int64(T + h)
		type key struct {
			z    int
			slot int64
		}
		held := map[key]float64{}
		newest := map[int]int64{}
		const base = 1000
		for i := 0; i+2 < len(ops); i += 3 {
			z := int(ops[i]) % n
			slot := base + int64(int8(ops[i+1]))
			v := float64(ops[i+2])
			res, err := st.Apply(Reading{Sensor: z, TS: slot * testStep, Values: []float64{v}})
			if err != nil {
				t.Fatal(err)
			}
			nw, seen := newest[z]
			switch {
			case !seen || slot > nw:
				newest[z] = slot
				held[key{z, slot}] = v
			case slot <= nw-R:
				if res.Kind != Late {
					t.Fatalf("slot %d newest %d: %v, want late", slot, nw, res.Kind)
				}
			default:
				// The first reading wins, but one that gives a value
				// the slot lacked (0, missing) completes it.
				if old, ok := held[key{z, slot}]; !ok || old == 0 {
					held[key{z, slot}] = v
				}
			}
		}
		check := func(st *State, R int64, what string) {
			for z := 0; z < n; z++ {
				w, nwMs, ok := st.Window(nil, z)
				nw, seen := newest[z]
				if ok != seen || ok && nwMs != nw*testStep {
					t.Fatalf("%s: node %d: window ok %v newest %d, want %v %d", what, z, ok, nwMs, seen, nw*testStep)
				}
				if !ok {
					continue
				}
				for j := 0; j < T; j++ {
					sl := nw - int64(T-1-j)
					want := 0.0
					if v, ok := held[key{z, sl}]; ok && sl > nw-R {
						want = v
					}
					if w[j] != want {
						t.Fatalf("%s: node %d slot %d: %v, want %v", what, z, sl, w[j], want)
					}
				}
			}
		}
		check(st, R, "applied")
		snap := st.Snapshot()
		for _, h2 := range []int{0, h, 5} {
			st2, _ := NewStateHistory(b, testStep, h2)
			if err := st2.Restore(snap); err != nil {
				t.Fatal(err)
			}
			check(st2, R, "restored")
		}
	})
}

// FuzzForecastsQuery sends GET /forecasts and GET /forecast/{sensor} the
// fuzzer's query string and Accept header: each must answer 200 with JSON
// or CSV, or refuse with 400 (404 for a sensor without a forecast) and a
// message, never panic.
func FuzzForecastsQuery(f *testing.F) {
	for _, tc := range []struct{ query, accept string }{
		{"", ""},
		{"sensors=2,0&since=2026-01-01T00:00:00Z", "text/csv;q=0.9, application/json;q=0.5"},
		{"format=csv&since=2100000", "*/*"},
		{"sensors=1;2&format=json", "text/*;q=1, application/json"},
		{"since=&sensors=%zz", "text/csv; q=0"},
	} {
		f.Add(tc.query, tc.accept, false)
		f.Add(tc.query, tc.accept, true)
	}
	svc, h := forecastsService(f)
	for z, ts := range []int64{6 * testStep, 7 * testStep} {
		fc := Forecast{Sensor: 2 * z, TS: ts, Values: []float64{41.5, 0.125}, Model: "v1", Inputs: []Input{{Sensor: 2 * z, TS: ts - testStep}}, EmittedMs: 1234}
		svc.latest[2*z] = EncodeForecast(nil, &fc)
	}
	f.Fuzz(func(t *testing.T, query, accept string, one bool) {
		path := "/forecasts"
		if one {
			path = "/forecast/2"
		}
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.URL.RawQuery = query
		req.Header.Set("Accept", accept)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch ct := rec.Header().Get("Content-Type"); rec.Code {
		case http.StatusOK:
			if !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/csv") {
				t.Fatalf("GET %s?%s (Accept %q): 200 of type %q", path, query, accept, ct)
			}
		case http.StatusBadRequest, http.StatusNotFound:
			if rec.Body.Len() == 0 {
				t.Fatalf("GET %s?%s (Accept %q): %d without a message", path, query, accept, rec.Code)
			}
		default:
			t.Fatalf("GET %s?%s (Accept %q): %d %q", path, query, accept, rec.Code, rec.Body)
		}
	})
}
