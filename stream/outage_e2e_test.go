package stream

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestEndToEndUnderOutage streams the real Los-loop test split through
// the embedded broker into the service while a seeded set of detectors
// (one whose forecast does not read its own window among them) publishes
// missing readings (0) for longer than a window, then recovers, with a
// bundle that reads missing marks and has silent weights. Every forecast
// equals the offline inference on the same series (those readings 0, and
// the slots before the first published missing too, as the service never
// received them) to 1e-9; the forecasts of detectors silent for their
// whole window are marked silent and used the silent weights (they differ
// from the same bundle's without them, the others do not); and
// /metrics's forecasts_by_completeness_total equals the count of the
// offline windows' classes (snapshot.Set.Gaps, evaluation.OwnClass and
// OthersIncompleteOf), which pass through every own class.
func TestEndToEndUnderOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d, stepMs = 12, 8, 5 * 60 * 1000
	ds := datatest.LosLoop(t)
	split, set := datatest.Chrono(t, ds, 0, T)
	s := ds.Series
	n, C := s.Nodes, s.Channels
	b := silentBundle(t, n, T, d, set.Norm, 52)
	b.Meta.SensorIDs = ds.SensorIDs
	names, err := b.SensorNames()
	if err != nil {
		t.Fatal(err)
	}
	from := split.Test.Start + T
	to := from + 36
	// The outage: slots [out, out+outLen), longer than a window, so that
	// forecasts pass from complete own windows through every count of
	// missing slots to whole silent windows and back.
	out, outLen := from+12, 16
	rng := rand.New(rand.NewPCG(52, 4))
	silenced := append(rng.Perm(n - 1)[:10], n-1) // n−1 does not read its own window
	data := slices.Clone(s.Data)
	for sl := out; sl < out+outLen; sl++ {
		for _, z := range silenced {
			clear(data[(sl*n+z)*C : (sl*n+z+1)*C])
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings", "forecasts", "readings-dead-letter")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour, History: 64,
		Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop := serveInTest(ctx, t, svc)
	if k, err := Publish(ctx, Series{Steps: s.Steps, Nodes: n, Channels: C, Data: data},
		PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: to, Start: start, StepMs: stepMs, Sensors: names}); err != nil || k != (to-from)*n {
		t.Fatalf("published %d readings: %v", k, err)
	}
	// The forecasts of slots from+1 (the first after the first reading)
	// to `to`.
	got := forecastsByID(ctx, t, emb.Addr, names, (to-from)*n, from+1, start, stepMs)
	metrics := scrape(t, svc)
	if err := stop(); err != nil {
		t.Fatalf("service: %v", err)
	}
	liveByClass := svc.live.Summary().ByCompleteness

	// Offline: the same series, the slots before `from` missing as the
	// service never received them; snapshot sn forecasts slot sn+T.
	off := slices.Clone(data)
	clear(off[:from*n*C])
	offSet, err := snapshot.NewSet(off, s.Steps, n, C, T, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	part := snapshot.Part{Range: snapshot.Range{Start: from + 1 - T, End: to - T + 1}}
	want, _, err := sdgnn.Predict(ctx, b, offSet, part, 64)
	if err != nil {
		t.Fatal(err)
	}
	mainOnly, _, err := sdgnn.Predict(ctx, withWeights(t, b, false), offSet, part, 64)
	if err != nil {
		t.Fatal(err)
	}
	snaps := part.Snapshots()
	missing, _, err := offSet.Gaps(snaps)
	if err != nil {
		t.Fatal(err)
	}
	others, err := evaluation.OthersIncompleteOf(missing, len(snaps), n, b.Theta.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	var count [evaluation.OwnClasses][2]uint64
	var scored [evaluation.OwnClasses][2]evaluation.Accumulator // what the live view scores: slots whose reading came
	silent := 0
	for i := range snaps {
		slot := int64(from + 1 + i)
		for z := range n {
			r := i*n + z
			f, ok := got[[2]int64{int64(z), slot}]
			if !ok {
				t.Fatalf("no forecast of sensor %d slot %d", z, slot)
			}
			whole := missing[r] == T
			if f.StaleSlots != 0 || f.Silent != whole {
				t.Fatalf("sensor %d slot %d: stale %d, silent %v; its own window misses %d of %d slots", z, slot, f.StaleSlots, f.Silent, missing[r], T)
			}
			differ := false
			for c, v := range f.Values {
				if w := want[r*C+c]; math.Abs(v-w) > 1e-9 {
					t.Fatalf("sensor %d slot %d: streamed %.12g, offline %.12g (own window %d missing)", z, slot, v, w, missing[r])
				}
				differ = differ || v != mainOnly[r*C+c]
			}
			if differ != whole {
				t.Fatalf("sensor %d slot %d: own window %d of %d missing, the forecast differs from the main weights' %v", z, slot, missing[r], T, differ)
			}
			if whole {
				silent++
			}
			j := 0
			if others[r] {
				j = 1
			}
			count[evaluation.OwnClass(missing[r], T)][j]++
			if slot < int64(to) {
				for c, v := range f.Values {
					scored[evaluation.OwnClass(missing[r], T)][j].Add(v, data[(int(slot)*n+z)*C+c])
				}
			}
		}
	}
	checkLiveByClass(t, liveByClass, metrics, &scored, T)
	for own := range count {
		if count[own][0]+count[own][1] == 0 {
			t.Errorf("no forecast of own class %s", evaluation.OwnClassLabel(own, T))
		}
		for j, r := range []string{evaluation.OthersComplete, evaluation.OthersIncomplete} {
			line := `sdgnn_stream_forecasts_by_completeness_total{own="` + evaluation.OwnClassLabel(own, T) + `",receptive="` + r + `"} ` + strconv.FormatUint(count[own][j], 10)
			if !strings.Contains(metrics, line+"\n") {
				t.Errorf("/metrics lacks %s", line)
			}
		}
	}
	t.Logf("%d forecasts equal the offline inference under an outage of %d detectors; %d made from an empty own window; by class %v", len(got), len(silenced), silent, count)
}

// scrape returns svc's /metrics.
func scrape(t *testing.T, svc *Service) string {
	t.Helper()
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// checkLiveByClass checks the live view's error by completeness class
// (LiveSummary.ByCompleteness and /metrics' live_completeness_… sums)
// against the pairs scored directly, class by class.
func checkLiveByClass(t *testing.T, got []LiveClass, metrics string, want *[evaluation.OwnClasses][2]evaluation.Accumulator, window int) {
	t.Helper()
	if len(got) != 2*evaluation.OwnClasses {
		t.Fatalf("live view: %d completeness classes, want %d", len(got), 2*evaluation.OwnClasses)
	}
	i := 0
	for own := range want {
		for j, r := range []string{evaluation.OthersComplete, evaluation.OthersIncomplete} {
			g, w := got[i], want[own][j].Metrics()
			i++
			if g.Own != evaluation.OwnClassLabel(own, window) || g.Receptive != r {
				t.Fatalf("live class %d is %s/%s, want %s/%s", i-1, g.Own, g.Receptive, evaluation.OwnClassLabel(own, window), r)
			}
			if g.Metrics.Count != w.Count || (w.Count > 0 && math.Abs(g.Metrics.MAE-w.MAE) > 1e-9*w.MAE) {
				t.Errorf("live class %s/%s: %d values MAE %g, scored directly %d values MAE %g", g.Own, g.Receptive, g.Metrics.Count, g.Metrics.MAE, w.Count, w.MAE)
			}
			line := `sdgnn_stream_live_completeness_scored_values_total{own="` + g.Own + `",receptive="` + r + `"} ` + strconv.Itoa(w.Count) + "\n"
			if !strings.Contains(metrics, line) {
				t.Errorf("/metrics lacks %s", strings.TrimSpace(line))
			}
		}
	}
}
