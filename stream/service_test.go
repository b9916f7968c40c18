package stream

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestEndToEndMatchesOffline replays part of the real SZ-taxi test split
// through the embedded broker over TCP into the service, consumes the
// forecasts topic, and checks every forecast against the offline batched
// inference of the same bundle on the same windows (to 1e-9), that no slot
// is missing or doubled, and that the streamed MAPE equals the offline one.
// The live view scores a part (two snapshots of every five, of a third of
// the sensors) on its own, and its metrics equal the offline metrics of
// that part.
func TestEndToEndMatchesOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d = 12, 16
	ds, split, set := szTaxiSet(t, T)
	s := ds.Series
	b := testBundle(t, s.Nodes, T, s.Channels, d, 3)
	b.Meta.Norm = set.Norm

	emb, err := StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	const stepMs = 15 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	from := split.Test.Start + T // a test target's first input step
	to := from + 40
	// The part: snapshots whose targets were published, positions 3 and 4
	// of five, every third sensor.
	var third []int
	for z := 0; z < s.Nodes; z += 3 {
		third = append(third, z)
	}
	part := snapshot.Part{Range: snapshot.Range{Start: from, End: to - T}, Deal: snapshot.Deal{Every: 5, Lo: 3, Hi: 5}, Nodes: third}
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop(),
		LivePart: &PartScope{Name: "test", Part: part, Window: T, StartMs: start.UnixMilli()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stop, done := runService(ctx, svc)

	if err := EnsureTopics(ctx, []string{emb.Addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	n, err := Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: to, Start: start, StepMs: stepMs, SlotPause: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n != (to-from)*s.Nodes {
		t.Fatalf("published %d readings", n)
	}

	// Forecasts for slots from+T … to (full windows) of every sensor.
	want := (to - (from + T) + 1) * s.Nodes
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "e2e-check", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	got := collectForecasts(ctx, t, r, want, from+T, start, stepMs)
	// The part's offline metrics; the live view has them once it has
	// scored as many values (every reading of the part has arrived).
	partPred, partTruth, err := sdgnn.Predict(context.Background(), b, set, part, 64)
	if err != nil {
		t.Fatal(err)
	}
	var partAcc evaluation.Accumulator
	partAcc.MAPEFloor = b.Meta.Config.MAPEFloor
	for i := range partPred {
		partAcc.Add(partPred[i], partTruth[i])
	}
	wantPart := partAcc.Metrics()
	livePart, _ := svc.Live().PartOverall()
	for livePart.Count < wantPart.Count && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		livePart, _ = svc.Live().PartOverall()
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("service: %v", err)
	}

	// Offline: snapshot slot-T predicts slot.
	offline, truth, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: snapshot.Range{Start: from, End: to - T + 1}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	on, off := compareOffline(t, got, offline, truth, from, to, T, s.Nodes, s.Channels)
	if math.Abs(on.MAPE-off.MAPE) > 1e-9 || on.Count != off.Count {
		t.Fatalf("streamed MAPE %g (n=%d), offline %g (n=%d)", on.MAPE, on.Count, off.MAPE, off.Count)
	}
	if livePart.Count != wantPart.Count || livePart.MAPECount != wantPart.MAPECount || math.Abs(livePart.MAE-wantPart.MAE) > 1e-9 ||
		math.Abs(livePart.MAPE-wantPart.MAPE) > 1e-9 || math.Abs(livePart.RMSE-wantPart.RMSE) > 1e-9 {
		t.Fatalf("live part metrics %+v, offline %+v", livePart, wantPart)
	}
	if all := svc.Live().Overall(); wantPart.Count == 0 || all.Count <= wantPart.Count {
		t.Fatalf("the part scored %d values of %d: the test needs some, not all", wantPart.Count, all.Count)
	}
	t.Logf("%d forecasts equal offline inference; MAPE %.4f%% over %d readings; the part's %.4f%% over %d", len(got), on.MAPE, on.Count, livePart.MAPE, livePart.Count)
}

// collectForecasts reads forecasts from r until it holds want of them
// for slots first and later (of a replay from start, slots stepMs long),
// by (sensor, slot), failing the test on a slot forecast twice.
func collectForecasts(ctx context.Context, t *testing.T, r *kafka.Reader, want, first int, start time.Time, stepMs int64) map[[2]int64]Forecast {
	t.Helper()
	got := map[[2]int64]Forecast{}
	for len(got) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d forecasts: %v", len(got), want, err)
		}
		f, err := DecodeForecast(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		slot := (f.TS - start.UnixMilli()) / stepMs
		if slot < int64(first) {
			continue // window not yet full
		}
		key := [2]int64{int64(f.Sensor), slot}
		if _, dup := got[key]; dup {
			t.Fatalf("sensor %d slot %d forecast twice", f.Sensor, slot)
		}
		got[key] = f
	}
	return got
}

// compareOffline checks the streamed forecasts got of the slots from+T …
// to, of nodes sensors and C channels, against the offline ones (with
// their truths), and returns the metrics of both.
func compareOffline(t *testing.T, got map[[2]int64]Forecast, offline, truth []float64, from, to, T, nodes, C int) (evaluation.Metrics, evaluation.Metrics) {
	t.Helper()
	var onAcc, offAcc evaluation.Accumulator
	for slot := from + T; slot <= to; slot++ {
		row := (slot - T - from) * nodes * C
		for z := 0; z < nodes; z++ {
			f, ok := got[[2]int64{int64(z), int64(slot)}]
			if !ok {
				t.Fatalf("no forecast for sensor %d slot %d", z, slot)
			}
			if f.StaleSlots != 0 {
				t.Fatalf("sensor %d slot %d: stale %d with every input published", z, slot, f.StaleSlots)
			}
			for c := 0; c < C; c++ {
				off := offline[row+z*C+c]
				if d := math.Abs(f.Values[c] - off); d > 1e-9 {
					t.Fatalf("sensor %d slot %d: streamed %.12g, offline %.12g", z, slot, f.Values[c], off)
				}
				tr := truth[row+z*C+c]
				onAcc.Add(f.Values[c], tr)
				offAcc.Add(off, tr)
			}
		}
	}
	return onAcc.Metrics(), offAcc.Metrics()
}

func TestHistogramQuantile(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 || h.Mean() != 0 {
		t.Fatal("empty histogram")
	}
	for i := 0; i < 99; i++ {
		h.Observe(3 * time.Microsecond) // bucket ≤ 5 µs
	}
	h.Observe(150 * time.Microsecond) // bucket ≤ 200 µs
	if q := h.Quantile(0.99); q != 5*time.Microsecond {
		t.Errorf("p99 %v, want 5µs", q)
	}
	if q := h.Quantile(1); q != 200*time.Microsecond {
		t.Errorf("p100 %v, want 200µs", q)
	}
	if m := h.Mean(); m != (99*3+150)*time.Microsecond/100 {
		t.Errorf("mean %v", m)
	}
}

// TestServiceDeadLettersBadInput sends one message of every bad kind
// between valid readings through the broker: each bad one reaches the
// dead-letter topic with its reason and is counted; every valid one is
// applied; the service keeps running.
func TestServiceDeadLettersBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings", "forecasts", "readings-dead-letter")
	const stepMs = 5 * 60 * 1000
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := now.UnixMilli()
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour, MaxAgeSlots: 100, MaxFutureSlots: 2,
		ValueRanges: map[string]snapshot.Bounds{"*": {Lo: 0, Hi: 1000}}, Now: func() time.Time { return now }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)

	valid := func(sensor int, ts int64) kafka.Message {
		r := Reading{Sensor: sensor, TS: ts, Values: []float64{50, 60}}
		return kafka.Message{Key: []byte(strconv.Itoa(sensor)), Value: EncodeReading(nil, &r)}
	}
	bad := []struct {
		reason string
		msg    kafka.Message
	}{
		{ReasonMalformed, kafka.Message{Key: []byte("1"), Value: []byte(`{"v":1,"sensor":1,"ts":`)}},
		{ReasonVersion, kafka.Message{Key: []byte("1"), Value: []byte(`{"v":9,"sensor":1,"ts":0,"values":[1,2]}`)}},
		{ReasonUnknownSensor, valid(99, slot)},
		{ReasonChannels, kafka.Message{Key: []byte("1"), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":1,"ts":%d,"values":[1,2,3]}`, slot))}},
		{ReasonNonFinite, kafka.Message{Key: []byte("1"), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":1,"ts":%d,"values":[1,NaN]}`, slot))}},
		{ReasonOffGrid, valid(1, slot+1234)},
		{ReasonTooOld, valid(1, slot-1000*stepMs)},
		{ReasonTooNew, valid(1, slot+10*stepMs)},
		{ReasonKeyMismatch, kafka.Message{Key: []byte("2"), Value: valid(1, slot).Value}},
		{ReasonOutOfRange, kafka.Message{Key: []byte("1"), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":1,"ts":%d,"values":[1e6,2]}`, slot))}},
	}
	var msgs []kafka.Message
	var want int
	for i, bm := range bad {
		msgs = append(msgs, valid(i%n, slot-int64(len(bad)-i)*stepMs), bm.msg)
		want++
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "dl-check", Topic: "readings-dead-letter", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	seen := map[string]bool{}
	for len(seen) < len(bad) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("dead letters seen %v: %v", seen, err)
		}
		dl, err := DecodeDeadLetter(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if dl.Detail == "" || dl.Topic != "readings" {
			t.Errorf("dead letter without detail or topic: %+v", dl)
		}
		seen[dl.Reason] = true
	}
	for _, bm := range bad {
		if !seen[bm.reason] {
			t.Errorf("no dead letter with reason %s", bm.reason)
		}
	}
	// The valid readings were applied, and the service is still running.
	deadline := time.Now().Add(10 * time.Second)
	for svc.Counters().Applied.Load() < uint64(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := svc.Counters().Applied.Load(); got != uint64(want) {
		t.Errorf("applied %d valid readings, want %d", got, want)
	}
	select {
	case err := <-done:
		t.Fatalf("service stopped: %v", err)
	default:
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for i, reason := range Reasons {
		if got := svc.Counters().Rejected[i].Load(); got != 1 {
			t.Errorf("rejected %s counted %d times, want 1", reason, got)
		}
	}
	// The latency from arrival to forecast counts applied readings only.
	if got := svc.Counters().ForecastLatency.Count(); got > uint64(want) {
		t.Errorf("forecast latency observed for %d readings, more than the %d applied", got, want)
	}
}
