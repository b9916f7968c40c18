package stream

import (
	"context"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/internal/tlstest"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestCatchUpBacklog starts the service on a backlog of 300 slots of the
// real SZ-taxi series already in the topic, which kafka-go fetches from
// the four partitions unevenly, and checks that every reading is applied
// and every forecast slot of every sensor emitted, none stale or skipped:
// the Aligner and the history kept the windows exact.
// Written in transactions, one per slot, every batch of the backlog is
// also checked for aborted readings (Service.abortedIn), and none is
// found.
func TestCatchUpBacklog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	for _, tc := range []struct {
		name string
		mode backlogMode
	}{{"plaintext", plaintext}, {"transactional", transactional}} {
		t.Run(tc.name, func(t *testing.T) {
			r := replayBacklog(t, 300, tc.mode)
			c := r.counters
			if c.Emitted.Load() != r.want || c.Skipped.Load() != 0 || c.Stale.Load() != 0 || c.Applied.Load() != uint64(r.readings) {
				t.Fatalf("applied %d of %d readings; emitted %d of %d forecasts, %d stale, %d skipped",
					c.Applied.Load(), r.readings, c.Emitted.Load(), r.want, c.Stale.Load(), c.Skipped.Load())
			}
			// Every message of the backlog committed once, in batches
			// (markers too, when transactional).
			if m := c.BatchMessages.Load(); c.Batches.Load() == 0 || m < uint64(r.readings) ||
				tc.mode == plaintext && m != uint64(r.readings) {
				t.Errorf("%d batches committed %d messages, want all %d readings' (and the markers)", c.Batches.Load(), m, r.readings)
			}
			t.Logf("%d batches, %.0f messages each", c.Batches.Load(), float64(c.BatchMessages.Load())/float64(c.Batches.Load()))
			if c.TxnAborted.Load() != 0 || c.TxnUnchecked.Load() != 0 {
				t.Errorf("%d readings taken for aborted, %d applied unchecked", c.TxnAborted.Load(), c.TxnUnchecked.Load())
			}
			// A plain partition is checked once, at its first stretch; a
			// transactional one at every batch that holds its readings.
			const partitions = 4
			if checks := c.TxnChecks.Load(); tc.mode == transactional && (c.TxnCommits.Load() == 0 || checks <= partitions) {
				t.Errorf("%d commit markers counted, %d stretches checked; want some and more than %d", c.TxnCommits.Load(), checks, partitions)
			} else if tc.mode == plaintext && checks != partitions {
				t.Errorf("%d stretches checked, want %d (one per partition)", checks, partitions)
			}
			t.Logf("%d stretches checked", c.TxnChecks.Load())
		})
	}
}

type backlogRun struct {
	readings            int
	want                uint64
	published, consumed time.Duration
	startup             time.Duration // from the service's start to its first reading applied (joining the group, the first fetches)
	cpu                 time.Duration // user and system CPU time of the process while consuming
	shutdown            time.Duration // from the stop to Run's return: the batch in hand committed, the reader closed
	counters            *Counters
}

// backlogMode says how replayBacklog publishes and reaches the broker.
type backlogMode int

const (
	plaintext     backlogMode = iota // PLAINTEXT, published by Publish
	secured                          // TLS and SASL (SCRAM-SHA-512), published by Publish
	transactional                    // PLAINTEXT, published by franz-go in one transaction per slot
)

// replayBacklog publishes slots of the real SZ-taxi series as fast as
// possible into a fresh embedded broker, then runs the service (state file
// on, 6 receptive nodes, hidden 16) until it has emitted every forecast.
// Secured, the broker speaks TLS and SASL, publisher and service
// authenticate with SCRAM-SHA-512; transactional, a transactional
// producer writes every slot in a transaction of its own, as Kafka
// Streams or Flink with exactly-once delivery would.
func replayBacklog(tb testing.TB, slots int, mode backlogMode) backlogRun {
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
	if mode == secured {
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
		forgetBrokers()
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
	if mode == transactional {
		r.readings = publishInTxns(ctx, tb, addr, s.Data, slots, s.Nodes, s.Channels, start.UnixMilli(), stepMs)
	} else {
		r.readings, err = Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
			PublishConfig{Brokers: []string{addr}, Security: sec, Topic: "readings", From: 0, To: slots, Start: start, StepMs: stepMs})
		if err != nil {
			tb.Fatal(err)
		}
	}
	r.published = time.Since(t0)
	svc, err := NewService(bd, Config{Brokers: []string{addr}, Security: sec, StepMs: stepMs, Lateness: time.Hour,
		StateFile: filepath.Join(tb.TempDir(), "state"), Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		tb.Fatal(err)
	}
	r.counters = svc.Counters()      // not state.Counters, which a rebuild swaps while it replays
	r.want = uint64(slots * s.Nodes) // targets 1 … slots of every sensor
	t0 = time.Now()
	cpu0 := processCPU(tb)
	stop, done := runService(ctx, svc)
	for r.counters.Emitted.Load() < r.want && ctx.Err() == nil {
		if r.startup == 0 && r.counters.Applied.Load() > 0 {
			r.startup = time.Since(t0)
		}
		select {
		case err := <-done:
			tb.Fatalf("service stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	r.consumed = time.Since(t0)
	r.cpu = processCPU(tb) - cpu0
	t1 := time.Now()
	stop()
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	r.shutdown = time.Since(t1)
	return r
}

// publishInTxns writes the first slots of data (steps × nodes × channels)
// to the readings topic with franz-go's transactional producer, one
// transaction per slot, and returns the number of readings.
func publishInTxns(ctx context.Context, tb testing.TB, addr string, data []float64, slots, nodes, channels int, base, stepMs int64) int {
	tb.Helper()
	cl := txnProducer(tb, addr, "readings", "bench")
	var recs []*kgo.Record
	r := Reading{Values: make([]float64, channels)}
	n := 0
	for t := 0; t < slots; t++ {
		recs = recs[:0]
		for i := 0; i < nodes; i++ {
			off := (t*nodes + i) * channels
			r.Sensor, r.TS = i, base+int64(t)*stepMs
			copy(r.Values, data[off:off+channels])
			recs = append(recs, &kgo.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: EncodeReading(nil, &r)})
		}
		inTxn(ctx, tb, cl, recs, true, true)
		n += len(recs)
	}
	return n
}

// BenchmarkServiceThroughput measures readings/s end to end through the
// embedded broker over TCP: 600 slots of the real SZ-taxi series (156
// sensors, 93,600 readings) are published first (their rate is reported
// as publish-readings/s), then the service, with its state file on,
// consumes them and emits every forecast (6 receptive nodes each, hidden
// 16). readings/s counts from the service's start until it has emitted
// the last forecast (until 2026-11-25 it counted until the service had
// stopped, its reader closed); startup-ms is the time from the start to
// the first reading applied (joining the group, the first fetches, to
// within the 2 ms the benchmark polls at), and steady-readings/s counts
// from then, the rate of a service already running; shutdown-ms is the time from the stop to
// Run's return: the batch in hand written and committed, the reader
// closed, which waits for its fetches in flight (ReaderConfig.MaxWait,
// 500 ms since then); cores-busy is the process's CPU time (user and
// system: service, broker and its clients together) while consuming,
// divided by the wall time, so that below GOMAXPROCS it says how much
// the service left idle waiting. PLAINTEXT runs against the embedded
// broker; SASL_SSL against kfake over TLS with SCRAM-SHA-512, so that the
// ratio of the two is the cost of a secured cluster on this machine;
// transactional against the embedded broker, published in one transaction
// per slot, so that its ratio to PLAINTEXT is the cost of reading
// committed and checking every batch for aborted readings.
func BenchmarkServiceThroughput(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode backlogMode
	}{{"PLAINTEXT", plaintext}, {"SASL_SSL", secured}, {"transactional", transactional}} {
		b.Run(bc.name, func(b *testing.B) {
			var consumed, published, shutdown, cpu, startup time.Duration
			readings, runs := 0, 0
			for b.Loop() {
				r := replayBacklog(b, 600, bc.mode)
				if c := r.counters; c.Emitted.Load() != r.want {
					b.Fatalf("emitted %d of %d forecasts (%d skipped)", c.Emitted.Load(), r.want, c.Skipped.Load())
				}
				consumed += r.consumed
				startup += r.startup
				cpu += r.cpu
				shutdown += r.shutdown
				runs++
				published += r.published
				readings += r.readings
			}
			b.ReportMetric(float64(readings)/consumed.Seconds(), "readings/s")
			b.ReportMetric(float64(startup.Milliseconds())/float64(runs), "startup-ms")
			b.ReportMetric(float64(readings)/(consumed-startup).Seconds(), "steady-readings/s")
			b.ReportMetric(float64(readings)/published.Seconds(), "publish-readings/s")
			b.ReportMetric(float64(shutdown.Milliseconds())/float64(runs), "shutdown-ms")
			b.ReportMetric(cpu.Seconds()/consumed.Seconds(), "cores-busy")
		})
	}
}

// processCPU returns the user and system CPU time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReaderCeiling is BenchmarkServiceThroughput's PLAINTEXT backlog
// read by a kafka-go group Reader configured as the service's, decoding
// each reading and doing nothing else: the rate at which this machine's
// embedded broker and kafka-go can hand readings over at all, the ceiling
// of the service's readings/s, measured the same way (from the reader's
// start until the last reading is in hand).
func BenchmarkReaderCeiling(b *testing.B) {
	ds := datatest.SZTaxi(b)
	s := ds.Series
	const slots, stepMs = 600, 15 * 60 * 1000
	var (
		consumed time.Duration
		readings int
	)
	for b.Loop() {
		emb, err := StartEmbedded(0, "")
		if err != nil {
			b.Fatal(err)
		}
		forgetBrokers()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := (Security{}).EnsureTopics(ctx, []string{emb.Addr}, 4, "readings"); err != nil {
			b.Fatal(err)
		}
		n, err := Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
			PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", To: slots, Start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), StepMs: stepMs})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "ceiling", Topic: "readings",
			MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 500 * time.Millisecond, StartOffset: kafka.FirstOffset,
			IsolationLevel: kafka.ReadCommitted, QueueCapacity: 16384})
		var rd Reading
		for i := 0; i < n; i++ {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				b.Fatalf("after %d of %d readings: %v", i, n, err)
			}
			if err := DecodeReadingInto(&rd, m.Key, m.Value); err != nil {
				b.Fatal(err)
			}
		}
		consumed += time.Since(t0)
		readings += n
		r.Close()
		cancel()
		emb.Close()
	}
	b.ReportMetric(float64(readings)/consumed.Seconds(), "readings/s")
}
