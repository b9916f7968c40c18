package stream

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/snapshot"
)

func TestPartScopeHolds(t *testing.T) {
	// Window 3, step 0 at slot 90: the forecast of slot 90+3+s is snapshot
	// s's. The part: snapshots 10..19, positions 8 and 9 of ten, nodes 1, 2.
	sc := PartScope{Part: snapshot.Part{Range: snapshot.Range{Start: 10, End: 20}, Deal: snapshot.Deal{Every: 10, Lo: 8, Hi: 10}, Nodes: []int{1, 2}},
		Window: 3, StartMs: 90 * testStep}
	for _, tc := range []struct {
		sensor int
		ts     int64
		want   bool
	}{
		{1, (93 + 18) * testStep, true},
		{2, (93 + 19) * testStep, true},
		{1, (93 + 17) * testStep, false}, // another part's snapshot
		{0, (93 + 18) * testStep, false}, // another part's sensor
		{1, (93+18)*testStep + 1, false}, // off the grid
		{1, (93 + 28) * testStep, false}, // after the part
		{1, (93 - 2) * testStep, false},  // before the first target
		{1, 80 * testStep, false},        // before the series
		{2, (93 + 18) * testStep, true},
	} {
		if got := sc.Holds(tc.sensor, tc.ts, testStep); got != tc.want {
			t.Errorf("Holds(sensor %d, slot %g) = %v, want %v", tc.sensor, float64(tc.ts)/testStep, got, tc.want)
		}
	}
	for _, tc := range []struct {
		sc   PartScope
		step int64
		err  string
	}{
		{sc, testStep, ""},
		{PartScope{Name: "w", Part: sc.Part, Window: 0}, testStep, "window 0"},
		{PartScope{Name: "e", Part: snapshot.Part{Range: snapshot.Range{Start: 3, End: 3}}, Window: 3}, testStep, "empty"},
		{PartScope{Name: "g", Part: sc.Part, Window: 3, StartMs: 7}, testStep, "not on the"},
	} {
		err := tc.sc.Check(tc.step)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Check(%+v) = %v, want %q", tc.sc, err, tc.err)
		}
	}
	if _, err := NewLive(LiveConfig{Nodes: 3, Channels: 1, StepMs: testStep, Part: &PartScope{Name: "test part", Window: 2}}); err == nil ||
		!strings.Contains(err.Error(), `part scope "test part"`) {
		t.Errorf("NewLive with an empty part: %v", err)
	}
}

// TestLivePartScope records readings and forecasts of many sensors and
// slots in random order under a part scope (dealt snapshots of some
// sensors) and checks the part's metrics, per sensor, per channel and
// overall, against evaluation of the pairs the part holds, worked out here
// by hand; the metrics of every pair are unchanged.
func TestLivePartScope(t *testing.T) {
	const n, C, slots, floor = 7, 2, 30, 1.0
	// Window 3, step 0 at slot 90: slot 100+s is the target of snapshot
	// 7+s. The part: snapshots 5..29 at positions 3 and 4 of five, of
	// sensors 1, 4 and 6.
	sc := &PartScope{Name: "test part", Part: snapshot.Part{Range: snapshot.Range{Start: 5, End: 30}, Deal: snapshot.Deal{Every: 5, Lo: 3, Hi: 5}, Nodes: []int{1, 4, 6}},
		Window: 3, StartMs: 90 * testStep}
	inPart := func(z int, s int64) bool {
		snap := 7 + s
		return (z == 1 || z == 4 || z == 6) && snap >= 5 && snap < 30 && (snap-5)%5 >= 3
	}
	rng := rand.New(rand.NewPCG(7, 11))
	l, err := NewLive(LiveConfig{Nodes: n, Channels: C, StepMs: testStep, Slots: slots, MAPEFloor: floor, Part: sc})
	if err != nil {
		t.Fatal(err)
	}
	var ops []liveOp
	var all, part evaluation.Accumulator
	var perSensor [n]evaluation.Accumulator
	var perChannel [C]evaluation.Accumulator
	all.MAPEFloor, part.MAPEFloor = floor, floor
	for z := range n {
		perSensor[z].MAPEFloor = floor
		for s := range int64(slots) {
			y, f := make([]float64, C), make([]float64, C)
			for c := range C {
				if rng.IntN(6) > 0 { // else missing
					y[c] = 5 + 100*rng.Float64()
				}
				f[c] = y[c] + 10*rng.NormFloat64()
			}
			ops = append(ops, rd(z, 100+s, true, y...), fc(z, 100+s, true, f...))
			for c := range C {
				all.Add(f[c], y[c])
				if inPart(z, s) {
					part.Add(f[c], y[c])
					perSensor[z].Add(f[c], y[c])
					perChannel[c].MAPEFloor = floor
					perChannel[c].Add(f[c], y[c])
				}
			}
		}
	}
	recordShuffled(t, l, ops, rng)
	same := func(what string, got, want evaluation.Metrics) {
		t.Helper()
		if got.Count != want.Count || got.MAPECount != want.MAPECount || !sameFloat(got.MAE, want.MAE) ||
			!sameFloat(got.RMSE, want.RMSE) || !sameFloat(got.MAPE, want.MAPE) {
			t.Errorf("%s: %+v, evaluation %+v", what, got, want)
		}
	}
	sum := l.Summary()
	if sum.Part == nil || sum.Part.Name != "test part" {
		t.Fatalf("summary part %+v", sum.Part)
	}
	if part.Metrics().Count == 0 || part.Metrics().Count == all.Metrics().Count {
		t.Fatalf("the part holds %d of %d values: the test needs some of them", part.Metrics().Count, all.Metrics().Count)
	}
	same("overall", sum.Overall, all.Metrics())
	same("part", sum.Part.Overall, part.Metrics())
	if po, ok := l.PartOverall(); !ok {
		t.Error("PartOverall: no part")
	} else {
		same("PartOverall", po, part.Metrics())
	}
	for c := range C {
		same(fmt.Sprint("part channel ", c), sum.Part.PerChannel[c], perChannel[c].Metrics())
	}
	for z := range n {
		pm := sum.Sensors[z].PartMetrics
		if pm == nil {
			t.Fatalf("sensor %d: no part metrics", z)
		}
		if z == 1 || z == 4 || z == 6 {
			same(fmt.Sprint("part sensor ", z), *pm, perSensor[z].Metrics())
		} else if pm.Count != 0 {
			t.Errorf("sensor %d is outside the part, part metrics %+v", z, *pm)
		}
		v, _ := l.Sensor(z)
		if v.PartMetrics == nil || v.PartOverall == nil || v.PartMetrics.Count != pm.Count {
			t.Errorf("sensor %d view: part metrics %v, overall %v", z, v.PartMetrics, v.PartOverall)
		}
		for _, s := range v.Slots {
			if want := inPart(z, s.TS/testStep-100); s.InPart != want {
				t.Errorf("sensor %d slot %d: in part %v, want %v", z, s.TS/testStep, s.InPart, want)
			}
		}
	}
	// The Prometheus sums of the part are its totals.
	checkPartPrometheus(t, l, part, perChannel[:], sum.Channels)
	// Without a scope there is no part.
	plain, err := NewLive(LiveConfig{Nodes: 1, Channels: 1, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	plain.Forecast(0, testStep, []float64{1})
	if s := plain.Summary(); s.Part != nil || s.Sensors[0].PartMetrics != nil {
		t.Errorf("no scope, yet part %+v and sensor part metrics %+v", s.Part, s.Sensors[0].PartMetrics)
	}
	if _, ok := plain.PartOverall(); ok {
		t.Error("no scope, yet PartOverall reports one")
	}
}

// checkPartPrometheus checks that l's Prometheus sums of the part are
// its totals, part's, and by channel (named channels) perChannel's.
func checkPartPrometheus(t *testing.T, l *Live, part evaluation.Accumulator, perChannel []evaluation.Accumulator, channels []string) {
	t.Helper()
	var prom strings.Builder
	if err := l.WritePrometheus(&prom); err != nil {
		t.Fatal(err)
	}
	// sums checks the five sums of tot in the series name(metric){labels}.
	sums := func(name func(metric string) string, tot evaluation.Totals) {
		t.Helper()
		for metric, want := range map[string]float64{
			"scored_values": float64(tot.Count), "abs_error": tot.AbsError, "squared_error": tot.SquaredError,
			"mape_values": float64(tot.MAPECount), "rel_error": tot.RelError,
		} {
			var got float64
			line := name(metric) + " "
			i := strings.Index(prom.String(), line)
			if i < 0 {
				t.Errorf("no %s in\n%s", line, prom.String())
				continue
			}
			if _, err := fmt.Sscan(prom.String()[i+len(line):], &got); err != nil || !sameFloat(got, want) {
				t.Errorf("%s%g (%v), want %g", line, got, err, want)
			}
		}
	}
	sums(func(m string) string { return fmt.Sprintf("sdgnn_stream_live_%s_total{scope=\"part\"}", m) }, part.Totals())
	// And by channel: the part's of each, named as the view names them.
	for c := range perChannel {
		sums(func(m string) string {
			return fmt.Sprintf("sdgnn_stream_live_channel_%s_total{scope=\"part\",channel=%q}", m, channels[c])
		}, perChannel[c].Totals())
	}
}
