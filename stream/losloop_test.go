package stream

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestEndToEndByDetectorID streams part of the real Los-loop test split,
// keyed by the detector IDs its field system uses (773869, …), through
// the embedded broker into the service: every forecast comes keyed and
// named by the same IDs, its inputs too, and equals the offline batched
// inference to 1e-9, under the plausible ranges fitted on the training
// readings (none of the real readings refused); a reading of an ID the
// model does not have, and one keyed by index, are dead-lettered as
// unknown_sensor, naming the value, and readings of its IDs that are
// implausible as out_of_range and too_old, the latter naming the sensor
// by ID, their keys and values kept; and the HTTP API takes and gives the
// IDs.
func TestEndToEndByDetectorID(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d = 12, 8
	ds := datatest.LosLoop(t)
	split, set := datatest.Chrono(t, ds, 0, T)
	s := ds.Series
	b := testBundle(t, s.Nodes, T, s.Channels, d, 5)
	b.Meta.Norm, b.Meta.SensorIDs, b.Meta.Locations = set.Norm, ds.SensorIDs, ds.Locations
	fit, fitNodes, fitSteps := split.FitData(s.Data, s.Nodes, s.Channels, T)
	bounds, err := snapshot.FitBounds(fit, fitNodes, s.Channels, fitSteps)
	if err != nil {
		t.Fatal(err)
	}
	b.Meta.Bounds = bounds
	names, err := b.SensorNames()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings", "forecasts", "readings-dead-letter")
	const stepMs = 5 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	from := split.Test.Start + T
	to := from + 24
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	n, err := Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: to, Start: start, StepMs: stepMs, Sensors: names})
	if err != nil || n != (to-from)*s.Nodes {
		t.Fatalf("published %d readings: %v", n, err)
	}
	ts := start.UnixMilli() + int64(to-1)*stepMs
	bad := []kafka.Message{
		{Key: []byte("999999"), Value: []byte(`{"v":1,"sensor":"999999","ts":` + strconv.FormatInt(ts, 10) + `,"values":[60]}`)},
		{Key: []byte("3"), Value: []byte(`{"v":1,"sensor":3,"ts":` + strconv.FormatInt(ts, 10) + `,"values":[60]}`)},
		// After the real readings of their sensors, in their partitions.
		{Key: []byte(ds.SensorIDs[5]), Value: []byte(`{"v":1,"sensor":"` + ds.SensorIDs[5] + `","ts":` + strconv.FormatInt(ts, 10) + `,"values":[1e6]}`)},
		{Key: []byte(ds.SensorIDs[6]), Value: []byte(`{"v":1,"sensor":"` + ds.SensorIDs[6] + `","ts":0,"values":[60]}`)},
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, bad...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	want := (to - (from + T) + 1) * s.Nodes
	got := forecastsByID(ctx, t, emb.Addr, names, want, from+T, start, stepMs)
	letters := deadLetters(ctx, t, emb.Addr, len(bad))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("service: %v", err)
	}
	offline, truth, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: snapshot.Range{Start: from, End: to - T + 1}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	on, off := compareOffline(t, got, offline, truth, from, to, T, s.Nodes, s.Channels)
	if math.Abs(on.MAE-off.MAE) > 1e-9 || on.Count != off.Count {
		t.Fatalf("streamed MAE %g (n=%d), offline %g (n=%d)", on.MAE, on.Count, off.MAE, off.Count)
	}
	// On several partitions: in any order.
	type letter struct{ reason, detail string }
	wantLetters := map[string]letter{
		"999999":        {ReasonUnknownSensor, `sensor "999999" is not one of the model's 207 sensor IDs (773869, 767541, …)`},
		"3":             {ReasonUnknownSensor, `sensor "3" is not one`},
		ds.SensorIDs[5]: {ReasonOutOfRange, "values[0] is 1e+06, outside the plausible range"},
		ds.SensorIDs[6]: {ReasonTooOld, "ts 0 is older than sensor " + ds.SensorIDs[6] + " holds"},
	}
	sent := map[string]string{}
	for _, m := range bad {
		sent[string(m.Key)] = string(m.Value)
	}
	for _, l := range letters {
		w, ok := wantLetters[string(l.Key)]
		if !ok || l.Reason != w.reason || string(l.Value) != sent[string(l.Key)] || !strings.Contains(l.Detail, w.detail) {
			t.Errorf("dead letter %q: %s (%s) of %s, want %s (%s) with the message as sent (%s)", l.Key, l.Reason, l.Detail, l.Value, w.reason, w.detail, sent[string(l.Key)])
		}
		delete(wantLetters, string(l.Key))
	}
	if len(wantLetters) > 0 {
		t.Errorf("no dead letter of %v", wantLetters)
	}
	var rejected uint64
	for i := range svc.Counters().Rejected {
		rejected += svc.Counters().Rejected[i].Load()
	}
	if rejected != uint64(len(bad)) {
		t.Errorf("%d readings rejected, want the %d sent to be (no real reading refused)", rejected, len(bad))
	}
	checkHTTPByID(t, svc, ds)
	t.Logf("%d forecasts keyed by detector ID equal offline inference; MAE %.4f mph over %d readings", len(got), on.MAE, on.Count)
}

// forecastsByID reads forecasts of a model whose sensors names names until
// it holds want of them for slots first and later, checking that each is
// keyed and named by its sensor's ID, its inputs too, and that none is
// doubled; they are returned by (sensor index, slot).
func forecastsByID(ctx context.Context, t *testing.T, addr string, names *pems.SensorNames, want, first int, start time.Time, stepMs int64) map[[2]int64]Forecast {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "e2e-ids", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	got := map[[2]int64]Forecast{}
	for len(got) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d forecasts: %v", len(got), want, err)
		}
		f, err := DecodeForecastFor(m.Value, names)
		if err != nil {
			t.Fatal(err)
		}
		if f.ID == "" || f.ID != names.Name(f.Sensor) || string(m.Key) != f.ID || !strings.Contains(string(m.Value), `"sensor":"`+f.ID+`"`) {
			t.Fatalf("forecast keyed %q, named %q (sensor %d): %s", m.Key, f.ID, f.Sensor, m.Value)
		}
		for _, in := range f.Inputs {
			if in.ID != names.Name(in.Sensor) {
				t.Fatalf("input %d named %q: %s", in.Sensor, in.ID, m.Value)
			}
		}
		slot := (f.TS - start.UnixMilli()) / stepMs
		if slot < int64(first) {
			continue
		}
		key := [2]int64{int64(f.Sensor), slot}
		if _, dup := got[key]; dup {
			t.Fatalf("sensor %s slot %d forecast twice", f.ID, slot)
		}
		got[key] = f
	}
	return got
}

// deadLetters reads the first n dead letters of the broker at addr.
func deadLetters(ctx context.Context, t *testing.T, addr string, n int) []DeadLetter {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "dl-ids", Topic: "readings-dead-letter", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	var out []DeadLetter
	for len(out) < n {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d dead letters: %v", len(out), n, err)
		}
		l, err := DecodeDeadLetter(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// checkHTTPByID checks the HTTP API of a service whose model has ds's
// detector IDs: /forecast/{sensor} and /forecasts?sensors= take the IDs
// (not the indices), and /api/sensors gives each sensor's ID and
// location.
func checkHTTPByID(t *testing.T, svc *Service, ds *pems.Dataset) {
	t.Helper()
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(body)
	}
	id := ds.SensorIDs[5]
	if code, body := get("/forecast/" + id); code != http.StatusOK || !strings.Contains(body, `"sensor":"`+id+`"`) {
		t.Errorf("GET /forecast/%s: %d %s", id, code, body)
	}
	if code, body := get("/forecast/5"); code != http.StatusNotFound || !strings.Contains(body, "want one of the model's 207 sensor IDs") {
		t.Errorf("GET /forecast/5 (an index): %d %s", code, body)
	}
	if code, body := get("/forecasts?format=csv&sensors=" + id + "," + ds.SensorIDs[0]); code != http.StatusOK ||
		!strings.Contains(body, ","+id+",") || !strings.Contains(body, ","+ds.SensorIDs[0]+",") || strings.Count(body, "\n") != 3 {
		t.Errorf("GET /forecasts as CSV: %d %s", code, body)
	}
	code, body := get("/api/sensors")
	var sum LiveSummary
	if err := json.Unmarshal([]byte(body), &sum); code != http.StatusOK || err != nil {
		t.Fatalf("GET /api/sensors: %d %v", code, err)
	}
	s5 := sum.Sensors[5]
	if s5.Sensor != 5 || s5.ID != id || s5.Location == nil || *s5.Location != ds.Locations[5] {
		t.Errorf("/api/sensors' sensor 5: %+v, want ID %s at %v", s5, id, ds.Locations[5])
	}
	code, body = get("/api/sensors/" + id)
	var v LiveSensor
	if err := json.Unmarshal([]byte(body), &v); code != http.StatusOK || err != nil || v.ID != id || len(v.Inputs) == 0 || v.Inputs[0].ID != ds.SensorIDs[v.Inputs[0].Sensor] {
		t.Errorf("GET /api/sensors/%s: %d %s", id, code, body)
	}
}
