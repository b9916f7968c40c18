package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestServiceRefusesImplausibleReadings streams 40 slots of the real
// SZ-taxi series through the embedded broker, among them readings that
// are well formed but that no sensor makes, each followed by the real
// reading of its slot: a clock a year ahead (too_new, judged against the
// stream, with no machine-clock check set), values of 1e300, −5, 1e6 and
// 5e-324 (out_of_range, against the bundle's plausible ranges fitted on
// the training readings), and a reading of 1970 (too_old, older than
// its sensor's window). Each is dead-lettered with its reason; the real
// readings that follow are applied (none taken for a conflict); every
// sensor, those six and their dependants included, gets every forecast,
// equal to the offline inference; the live sums stay finite.
func TestServiceRefusesImplausibleReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d = 12, 16
	ds, split, set := szTaxiSet(t, T)
	s := ds.Series
	b := testBundle6(t, s.Nodes, T, s.Channels, d, 3)
	b.Meta.Norm = set.Norm
	fit, nodes, steps := split.FitData(s.Data, s.Nodes, s.Channels, T)
	bounds, err := snapshot.FitBounds(fit, nodes, s.Channels, steps)
	if err != nil {
		t.Fatal(err)
	}
	b.Meta.Bounds = bounds
	const stepMs = 15 * 60 * 1000
	start := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	from, to := split.Test.Start, split.Test.Start+40
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings", "forecasts", "readings-dead-letter")
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop := serveInTest(ctx, t, svc)

	message := func(z int, ts int64, vals []float64) kafka.Message {
		v, _ := json.Marshal(vals)
		return kafka.Message{Key: []byte(strconv.Itoa(z)), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":%s}`, z, ts, v))}
	}
	// Each bad reading comes just before the real one of its sensor and
	// slot: a value, or else a timestamp of its own.
	type bad struct {
		z, slot int
		value   string
		reason  string
	}
	bads := []bad{
		{50, from + 20, "", ReasonTooNew}, // a year ahead
		{51, from + 20, "1e300", ReasonOutOfRange},
		{52, from + 21, "-5", ReasonOutOfRange},
		{53, from + 22, "1e6", ReasonOutOfRange},
		{54, from + 23, "5e-324", ReasonOutOfRange},
		{55, from + 24, "", ReasonTooOld}, // 1970
	}
	var msgs []kafka.Message
	for slot := from; slot < to; slot++ {
		for z := 0; z < s.Nodes; z++ {
			ts := start.UnixMilli() + int64(slot)*stepMs
			vals := s.Data[(slot*s.Nodes+z)*s.Channels : (slot*s.Nodes+z+1)*s.Channels]
			for _, bd := range bads {
				if bd.z != z || bd.slot != slot {
					continue
				}
				var m kafka.Message
				switch bd.reason {
				case ReasonTooNew:
					m = message(z, start.AddDate(1, 0, 0).UnixMilli()+int64(slot)*stepMs, vals)
				case ReasonTooOld:
					m = message(z, 0, vals)
				default:
					m = kafka.Message{Key: []byte(strconv.Itoa(z)), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":[%s]}`, z, ts, bd.value))}
				}
				msgs = append(msgs, m)
			}
			msgs = append(msgs, message(z, ts, vals))
		}
	}
	// The first 20 slots first, applied before the rest comes: the bad
	// readings come to a service that has moved on.
	c := svc.Counters()
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	first := 20 * s.Nodes
	if err := w.WriteMessages(ctx, msgs[:first]...); err != nil {
		t.Fatal(err)
	}
	for c.Applied.Load() < uint64(first) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := w.WriteMessages(ctx, msgs[first:]...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	want := uint64((to - from) * s.Nodes)
	for (c.Emitted.Load()+c.Skipped.Load() < want || c.Applied.Load() < want) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	var prom bytes.Buffer
	if err := svc.Live().WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	overall := svc.Live().Overall()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var letters []DeadLetter
	for p := range 4 {
		for _, m := range readPartition(ctx, t, emb.Addr, "readings-dead-letter", p) {
			l, err := DecodeDeadLetter(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			letters = append(letters, l)
		}
	}
	var got, wantReasons []string
	for _, l := range letters {
		got = append(got, string(l.Key)+":"+l.Reason)
	}
	for _, bd := range bads {
		wantReasons = append(wantReasons, strconv.Itoa(bd.z)+":"+bd.reason)
	}
	slices.Sort(got)
	slices.Sort(wantReasons)
	for _, l := range letters {
		t.Logf("%s: %s", l.Reason, l.Detail)
	}
	if c.Applied.Load() != want || c.Conflicts.Load() != 0 || c.Skipped.Load() != 0 || c.Emitted.Load() != want {
		t.Fatalf("applied %d of %d readings, %d conflicts, %d duplicates, %d late; emitted %d of %d forecasts, %d skipped",
			c.Applied.Load(), want, c.Conflicts.Load(), c.Duplicates.Load(), c.Late.Load(), c.Emitted.Load(), want, c.Skipped.Load())
	}
	if !slices.Equal(got, wantReasons) {
		t.Fatalf("dead letters %v, want %v", got, wantReasons)
	}
	if math.IsNaN(overall.MAE) || math.IsInf(overall.MAE, 0) || math.IsInf(overall.RMSE, 0) || strings.Contains(prom.String(), "Inf") {
		t.Errorf("live MAE %g, RMSE %g; metrics:\n%s", overall.MAE, overall.RMSE, prom.String())
	}
	offline, _, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: snapshot.Range{Start: from, End: to - T}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	checkForecasts(ctx, t, emb.Addr, start.UnixMilli(), stepMs, from+T, to-1, s.Nodes, s.Channels, offline)
}
