package stream

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestCatchUpBacklog starts the service on a backlog of 300 slots of the
// real SZ-taxi series already in the topic, which kafka-go fetches from
// the four partitions unevenly, and checks that every reading is applied
// and every forecast slot of every sensor emitted, none stale or skipped:
// the Aligner and the history kept the windows exact.
func TestCatchUpBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	r := replayBacklog(t, 300)
	c := r.counters
	if c.Emitted.Load() != r.want || c.Skipped.Load() != 0 || c.Stale.Load() != 0 || c.Applied.Load() != uint64(r.readings) {
		t.Fatalf("applied %d of %d readings; emitted %d of %d forecasts, %d stale, %d skipped",
			c.Applied.Load(), r.readings, c.Emitted.Load(), r.want, c.Stale.Load(), c.Skipped.Load())
	}
}

type backlogRun struct {
	readings            int
	want                uint64
	published, consumed time.Duration
	counters            *Counters
}

// replayBacklog publishes slots of the real SZ-taxi series as fast as
// possible into a fresh embedded broker, then runs the service (state file
// on, 6 receptive nodes, hidden 16) until it has emitted every forecast.
func replayBacklog(tb testing.TB, slots int) backlogRun {
	tb.Helper()
	ds := datatest.SZTaxi(tb)
	s := ds.Series
	const T, d = 12, 16
	norm, err := snapshot.FitNormalizer(s.Data, s.Nodes, s.Channels, s.Steps/2)
	if err != nil {
		tb.Fatal(err)
	}
	const stepMs = 15 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	bd := testBundle6(tb, s.Nodes, T, s.Channels, d, 3)
	bd.Meta.Norm = norm
	emb, err := StartEmbedded(0, "")
	if err != nil {
		tb.Fatal(err)
	}
	defer emb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := EnsureTopics(ctx, []string{emb.Addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		tb.Fatal(err)
	}
	var r backlogRun
	t0 := time.Now()
	r.readings, err = Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: 0, To: slots, Start: start, StepMs: stepMs})
	if err != nil {
		tb.Fatal(err)
	}
	r.published = time.Since(t0)
	svc, err := NewService(bd, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		StateFile: filepath.Join(tb.TempDir(), "state"), Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	r.counters = svc.state.Counters
	r.want = uint64(slots * s.Nodes) // targets 1 … slots of every sensor
	t0 = time.Now()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	for svc.state.Counters.Emitted.Load() < r.want && ctx.Err() == nil {
		select {
		case err := <-done:
			tb.Fatalf("service stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	r.consumed = time.Since(t0)
	return r
}

// BenchmarkServiceThroughput measures readings/s end to end through the
// embedded broker over TCP: 600 slots of the real SZ-taxi series (156
// sensors, 93,600 readings) are published first (their rate is reported
// as publish-readings/s), then the service, with its state file on,
// consumes them and emits every forecast (6 receptive nodes each, hidden
// 16). readings/s counts from the service's start until it has emitted
// the last forecast and committed.
func BenchmarkServiceThroughput(b *testing.B) {
	var consumed, published time.Duration
	readings := 0
	for b.Loop() {
		r := replayBacklog(b, 600)
		if c := r.counters; c.Emitted.Load() != r.want {
			b.Fatalf("emitted %d of %d forecasts (%d skipped)", c.Emitted.Load(), r.want, c.Skipped.Load())
		}
		consumed += r.consumed
		published += r.published
		readings += r.readings
	}
	b.ReportMetric(float64(readings)/consumed.Seconds(), "readings/s")
	b.ReportMetric(float64(readings)/published.Seconds(), "publish-readings/s")
}
