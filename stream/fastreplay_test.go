package stream

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestUnpacedReplayIntoFreshService publishes the whole test part of the
// real SZ-taxi series (605 slots of 156 sensors) as fast as the publisher
// goes into a service already running on an empty topic, as
// `forecaster publish -speedup 0` does, and checks that no forecast slot
// is skipped and that every forecast from a whole window equals the
// offline inference to 1e-9. The publisher writes each chunk's shares to
// the four partitions one request each, and the service fetches them one
// partition at a time, a fetch sometimes seconds late (kafka-go
// reconnecting after a read timed out): a partition caught up when last
// fetched may yet get readings of the slots the others are at. Applied as
// fetched, the readings of one partition ran past the history that
// another's sensors still needed, and up to 15 % of the forecasts were
// lost (Aligner). It runs three times (once under the race detector).
func TestUnpacedReplayIntoFreshService(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d = 12, 16
	ds, split, set := szTaxiSet(t, T)
	s := ds.Series
	b := testBundle6(t, s.Nodes, T, s.Channels, d, 3)
	b.Meta.Norm = set.Norm
	const stepMs = 15 * 60 * 1000
	start := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	from, to := split.Test.Start, s.Steps // the test part's readings
	// Offline: the snapshot of window [slot−T, slot) predicts slot, for
	// the slots of the series (the forecasts of slot to have no truth).
	offline, _, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: snapshot.Range{Start: from, End: to - T}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	runs := 3
	if raceEnabled {
		runs = 1
	}
	for run := range runs {
		emb, err := StartEmbedded(0, "")
		if err != nil {
			t.Fatal(err)
		}
		forgetBrokers()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: 2 * time.Minute, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		stop := serveInTest(ctx, t, svc)
		// The service is ready: it has joined the group, found the topic
		// empty and finished a batch.
		for !svc.Readiness().Ready && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
		n, err := Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
			PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: to, Start: start, StepMs: stepMs})
		if err != nil || n != (to-from)*s.Nodes {
			t.Fatalf("run %d: published %d readings: %v", run, n, err)
		}
		// Every sensor's forecasts of slots from+1 … to, whole windows
		// from slot from+T on.
		c := svc.Counters()
		want := uint64((to - from) * s.Nodes)
		for c.Emitted.Load()+c.Skipped.Load() < want && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		if err := stop(); err != nil {
			t.Fatalf("run %d: service: %v", run, err)
		}
		if c.Skipped.Load() != 0 || c.Emitted.Load() != want || c.Stale.Load() != 0 || c.Late.Load() != 0 {
			var rejected []string
			for i, r := range Reasons {
				if n := c.Rejected[i].Load(); n > 0 {
					rejected = append(rejected, fmt.Sprintf("%s %d", r, n))
				}
			}
			t.Fatalf("run %d: emitted %d of %d forecasts, %d slots skipped, %d stale; %d readings applied, %d late, rejected %v",
				run, c.Emitted.Load(), want, c.Skipped.Load(), c.Stale.Load(), c.Applied.Load(), c.Late.Load(), rejected)
		}
		checkForecasts(ctx, t, emb.Addr, start.UnixMilli(), stepMs, from+T, to-1, s.Nodes, s.Channels, offline)
		cancel()
		emb.Close()
	}
}

// checkForecasts reads the forecasts topic and checks that every sensor
// of n has exactly one forecast of every slot in [lo, hi], equal to
// offline (rows of slots lo…hi, n sensors, C channels) to 1e-9.
func checkForecasts(ctx context.Context, t *testing.T, addr string, startMs, stepMs int64, lo, hi, n, C int, offline []float64) {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "forecasts", GroupID: "check", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	seen := make([]bool, (hi-lo+1)*n)
	for left := len(seen); left > 0; {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("%d forecasts not read: %v", left, err)
		}
		f, err := DecodeForecast(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		slot := int((f.TS - startMs) / stepMs)
		if slot < lo || slot > hi {
			continue // from a window not yet whole, or without offline
		}
		i := (slot-lo)*n + f.Sensor
		if seen[i] {
			t.Fatalf("sensor %d slot %d: forecast twice", f.Sensor, slot)
		}
		seen[i] = true
		left--
		for ch := range C {
			if off := offline[i*C+ch]; math.Abs(f.Values[ch]-off) > 1e-9 {
				t.Fatalf("sensor %d slot %d: streamed %.12g, offline %.12g", f.Sensor, slot, f.Values[ch], off)
			}
		}
	}
}
