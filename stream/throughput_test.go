package stream

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/internal/tlstest"
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
	r := replayBacklog(t, 300, false)
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
// With secure, the broker speaks TLS and SASL, publisher and service
// authenticate with SCRAM-SHA-512.
func replayBacklog(tb testing.TB, slots int, secure bool) backlogRun {
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
	var (
		addr string
		sec  Security
	)
	if secure {
		certs := tlstest.New(tb)
		addr = tlstest.Broker(tb, certs, tlstest.User{Mechanism: "SCRAM-SHA-512", Name: "bench", Password: "pw"})
		c, err := NewTLS(certs.CAFile, "", "", "")
		if err != nil {
			tb.Fatal(err)
		}
		m, err := NewSASL("SCRAM-SHA-512", "bench", "pw")
		if err != nil {
			tb.Fatal(err)
		}
		sec = Security{TLS: c, SASL: m}
	} else {
		emb, err := StartEmbedded(0, "")
		if err != nil {
			tb.Fatal(err)
		}
		defer emb.Close()
		addr = emb.Addr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sec.EnsureTopics(ctx, []string{addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		tb.Fatal(err)
	}
	var r backlogRun
	t0 := time.Now()
	r.readings, err = Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		PublishConfig{Brokers: []string{addr}, Security: sec, Topic: "readings", From: 0, To: slots, Start: start, StepMs: stepMs})
	if err != nil {
		tb.Fatal(err)
	}
	r.published = time.Since(t0)
	svc, err := NewService(bd, Config{Brokers: []string{addr}, Security: sec, StepMs: stepMs, Lateness: time.Hour,
		StateFile: filepath.Join(tb.TempDir(), "state"), Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	r.counters = svc.state.Counters
	r.want = uint64(slots * s.Nodes) // targets 1 … slots of every sensor
	t0 = time.Now()
	stop, done := runService(ctx, svc)
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
// the last forecast and committed. PLAINTEXT runs against the embedded
// broker; SASL_SSL against kfake over TLS with SCRAM-SHA-512, so that the
// ratio of the two is the cost of a secured cluster on this machine.
func BenchmarkServiceThroughput(b *testing.B) {
	for _, bc := range []struct {
		name   string
		secure bool
	}{{"PLAINTEXT", false}, {"SASL_SSL", true}} {
		b.Run(bc.name, func(b *testing.B) {
			var consumed, published time.Duration
			readings := 0
			for b.Loop() {
				r := replayBacklog(b, 600, bc.secure)
				if c := r.counters; c.Emitted.Load() != r.want {
					b.Fatalf("emitted %d of %d forecasts (%d skipped)", c.Emitted.Load(), r.want, c.Skipped.Load())
				}
				consumed += r.consumed
				published += r.published
				readings += r.readings
			}
			b.ReportMetric(float64(readings)/consumed.Seconds(), "readings/s")
			b.ReportMetric(float64(readings)/published.Seconds(), "publish-readings/s")
		})
	}
}
