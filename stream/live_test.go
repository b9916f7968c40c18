package stream

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// liveOp is one record of a Live test: a reading or a forecast of a sensor
// for a slot, and whether Live should take it.
type liveOp struct {
	forecast bool
	sensor   int
	slot     int64
	values   []float64
	want     bool
	backfill bool // read back from the log (Live.backfill)
}

func rd(z int, slot int64, want bool, v ...float64) liveOp {
	return liveOp{sensor: z, slot: slot, values: v, want: want}
}

func fc(z int, slot int64, want bool, v ...float64) liveOp {
	return liveOp{forecast: true, sensor: z, slot: slot, values: v, want: want}
}

// back marks op as read back from the log.
func back(op liveOp) liveOp { op.backfill = true; return op }

func TestLiveJoin(t *testing.T) {
	for _, tc := range liveJoinCases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLive(LiveConfig{Nodes: 5, Channels: 2, StepMs: testStep, Slots: tc.slots, MAPEFloor: tc.floor})
			if err != nil {
				t.Fatal(err)
			}
			recordOps(t, l, tc.ops)
			checkLiveJoin(t, l, tc)
		})
	}
}

// liveSlot is a view slot: the slot and its reading and forecast (nil:
// none).
type liveSlot struct {
	slot     int64
	reading  []float64
	forecast []float64
}

// liveJoinCase is a case of TestLiveJoin: records made in a Live view,
// and what it then shows and scores of sensor 1.
type liveJoinCase struct {
	name  string
	slots int     // ring length
	floor float64 // MAPE floor
	ops   []liveOp
	// Of sensor 1: the view and the metrics.
	view      []liveSlot
	count     int     // values scored
	mapeCount int     // of those, in MAPE
	mae, mape float64 // NaN: undefined
	dropped   int     // records refused as invalid or too old
}

var liveJoinCases = []liveJoinCase{{
	name: "reading then forecast",
	ops:  []liveOp{rd(1, 10, true, 100, 40), fc(1, 10, true, 90, 50)},
	view: []liveSlot{{10, []float64{100, 40}, []float64{90, 50}}},
	// |90−100|/100 = 10 %, |50−40|/40 = 25 %.
	count: 2, mapeCount: 2, mae: 10, mape: 17.5,
}, {
	name:  "forecast then reading",
	ops:   []liveOp{fc(1, 10, true, 90, 50), rd(1, 10, true, 100, 40)},
	view:  []liveSlot{{10, []float64{100, 40}, []float64{90, 50}}},
	count: 2, mapeCount: 2, mae: 10, mape: 17.5,
}, {
	name: "unpaired halves are not scored",
	ops:  []liveOp{fc(1, 11, true, 90, 50), rd(1, 10, true, 100, 40)},
	view: []liveSlot{{10, []float64{100, 40}, nil}, {11, nil, []float64{90, 50}}},
	mae:  math.NaN(), mape: math.NaN(),
}, {
	name: "first reading and forecast kept, pair scored once",
	ops: []liveOp{rd(1, 10, true, 100, 40), rd(1, 10, false, 1, 1), fc(1, 10, true, 90, 50),
		fc(1, 10, false, 2, 2), rd(1, 10, false, 100, 40)},
	view:  []liveSlot{{10, []float64{100, 40}, []float64{90, 50}}},
	count: 2, mapeCount: 2, mae: 10, mape: 17.5,
}, {
	name:  "a missing value completed after the pair was scored",
	ops:   []liveOp{rd(1, 10, true, 0, 40), fc(1, 10, true, 90, 50), rd(1, 10, true, 100, 0)},
	view:  []liveSlot{{10, []float64{100, 40}, []float64{90, 50}}},
	count: 2, mapeCount: 2, mae: 10, mape: 17.5,
}, {
	name:  "a missing value completed before the forecast",
	ops:   []liveOp{rd(1, 10, true, 0, 40), rd(1, 10, true, 100, 40), fc(1, 10, true, 90, 50)},
	view:  []liveSlot{{10, []float64{100, 40}, []float64{90, 50}}},
	count: 2, mapeCount: 2, mae: 10, mape: 17.5,
}, {
	name:  "a completion that conflicts is not kept",
	ops:   []liveOp{rd(1, 10, true, 0, 40), fc(1, 10, true, 90, 50), rd(1, 10, false, 100, 41)},
	view:  []liveSlot{{10, []float64{0, 40}, []float64{90, 50}}},
	count: 1, mapeCount: 1, mae: 10, mape: 25,
}, {
	name:  "joined by sensor",
	ops:   []liveOp{rd(1, 10, true, 100, 40), fc(2, 10, true, 90, 50), rd(2, 10, true, 50, 50)},
	view:  []liveSlot{{10, []float64{100, 40}, nil}},
	count: 0, mae: math.NaN(), mape: math.NaN(),
}, {
	name: "missing reading left out, low reading out of MAPE only",
	// 0 is a missing reading: out of every metric; 0.5 < floor 1:
	// in MAE, not in MAPE.
	floor: 1,
	ops:   []liveOp{rd(1, 10, true, 0, 0.5), fc(1, 10, true, 7, 1.5), fc(1, 11, true, 110, 30), rd(1, 11, true, 100, 40)},
	view:  []liveSlot{{10, []float64{0, 0.5}, []float64{7, 1.5}}, {11, []float64{100, 40}, []float64{110, 30}}},
	// MAE over |1.5−0.5|, 10, 10; MAPE over 10 %, 25 %.
	count: 3, mapeCount: 2, mae: 7, mape: 17.5,
}, {
	name:  "ring wrap-around",
	slots: 3,
	// Slots 4 and 7 share a ring position: the forecast of 4 is
	// evicted by the reading of 7, never scored against it.
	ops: []liveOp{fc(1, 4, true, 1, 1), rd(1, 5, true, 10, 10), rd(1, 6, true, 10, 10), rd(1, 8, true, 10, 10),
		rd(1, 9, true, 10, 10), fc(1, 9, true, 11, 11),
		fc(1, 6, false, 1, 1), rd(1, 4, false, 1, 1), // older than the ring
		rd(1, 7, true, 20, 20), fc(1, 7, true, 22, 22)},
	view:  []liveSlot{{7, []float64{20, 20}, []float64{22, 22}}, {8, []float64{10, 10}, nil}, {9, []float64{10, 10}, []float64{11, 11}}},
	count: 4, mapeCount: 4, mae: 1.5, mape: 10, dropped: 2,
}, {
	name:  "read back from the log, older than the ring: not dropped",
	slots: 3,
	ops: []liveOp{back(rd(1, 9, true, 10, 10)), back(fc(1, 9, true, 11, 11)),
		back(fc(1, 6, false, 1, 1)), back(rd(1, 4, false, 1, 1)), back(rd(1, 8, true, 10, 10)),
		back(rd(-1, 8, false, 1, 1)), // unknown sensor: dropped
		rd(1, 5, false, 1, 1)},       // live: dropped
	view:  []liveSlot{{8, []float64{10, 10}, nil}, {9, []float64{10, 10}, []float64{11, 11}}},
	count: 2, mapeCount: 2, mae: 1, mape: 10, dropped: 2,
}, {
	name: "unknown sensor, wrong channels, off grid",
	ops: []liveOp{rd(-1, 10, false, 1, 1), fc(5, 10, false, 1, 1), rd(1, 10, false, 1), fc(1, 10, false, 1, 2, 3),
		{sensor: 1, slot: -1, values: []float64{1, 1}}},
	view: []liveSlot{}, mae: math.NaN(), mape: math.NaN(), dropped: 5,
}}

// recordOps records ops in l in order, each as a reading or a forecast,
// live or read back from the log, checking whether it was taken.
func recordOps(t *testing.T, l *Live, ops []liveOp) {
	t.Helper()
	for i, op := range ops {
		ts := op.slot * testStep
		if op.slot < 0 {
			ts = testStep / 2 // off the grid
		}
		var got bool
		switch {
		case op.backfill && op.forecast:
			got = l.backfill(op.sensor, ts, op.values, liveForecast)
		case op.backfill:
			got = l.backfill(op.sensor, ts, op.values, liveReading)
		case op.forecast:
			got = l.Forecast(op.sensor, ts, op.values)
		default:
			got = l.Reading(op.sensor, ts, op.values)
		}
		if got != op.want {
			t.Errorf("op %d %+v: recorded %v, want %v", i, op, got, op.want)
		}
	}
}

// checkLiveJoin checks what l shows and scores of sensor 1 against tc.
func checkLiveJoin(t *testing.T, l *Live, tc liveJoinCase) {
	t.Helper()
	v, ok := l.Sensor(1)
	if !ok {
		t.Fatal("sensor 1 unknown")
	}
	var view []liveSlot
	for _, s := range v.Slots {
		if s.TS%testStep != 0 {
			t.Fatalf("slot ts %d off the grid", s.TS)
		}
		view = append(view, liveSlot{s.TS / testStep, s.Reading, s.Forecast})
	}
	if fmt.Sprint(view) != fmt.Sprint(tc.view) || len(v.Slots) != len(tc.view) {
		t.Errorf("view %v, want %v", view, tc.view)
	}
	m, _ := l.Metrics(1)
	if fmt.Sprint(m) != fmt.Sprint(v.Metrics) {
		t.Errorf("Metrics %+v, Sensor(1).Metrics %+v", m, v.Metrics)
	}
	if m.Count != tc.count || m.MAPECount != tc.mapeCount || !sameFloat(m.MAE, tc.mae) || !sameFloat(m.MAPE, tc.mape) {
		t.Errorf("metrics %+v, want count %d, MAPE count %d, MAE %g, MAPE %g", m, tc.count, tc.mapeCount, tc.mae, tc.mape)
	}
	if d := l.Dropped(); d != uint64(tc.dropped) {
		t.Errorf("Dropped %d, want %d", d, tc.dropped)
	}
}

// sameFloat reports whether a and b agree to 1e-12 relative, or are both
// NaN.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

// recordShuffled records ops in l in an order shuffled by rng; every one
// must be taken.
func recordShuffled(t *testing.T, l *Live, ops []liveOp, rng *rand.Rand) {
	t.Helper()
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })
	for _, op := range ops {
		rec := l.Reading
		if op.forecast {
			rec = l.Forecast
		}
		if !rec(op.sensor, op.slot*testStep, op.values) {
			t.Fatalf("%+v refused", op)
		}
	}
}

// TestLiveMetricsMatchEvaluation records readings and forecasts of many
// sensors and slots, in random order, with missing and near-zero readings,
// and checks the running metrics per sensor, per channel and overall
// against evaluation.Compute of the same pairs.
func TestLiveMetricsMatchEvaluation(t *testing.T) {
	const n, C, slots, floor = 7, 3, 20, 1.0
	rng := rand.New(rand.NewPCG(3, 5))
	l, err := NewLive(LiveConfig{Nodes: n, Channels: C, StepMs: testStep, Slots: slots, MAPEFloor: floor,
		ChannelNames: []string{"flow", "occupancy"}})
	if err != nil {
		t.Fatal(err)
	}
	var ops []liveOp
	var pred, truth [n][]float64
	var predC, truthC [C][]float64
	for z := range n {
		for s := range int64(slots) {
			y, f := make([]float64, C), make([]float64, C)
			for c := range C {
				switch rng.IntN(8) {
				case 0: // missing
				case 1:
					y[c] = 0.3 * rng.Float64() // below the floor
				default:
					y[c] = 5 + 100*rng.Float64()
				}
				f[c] = y[c] + 10*rng.NormFloat64()
			}
			ops = append(ops, rd(z, 100+s, true, y...))
			if s%5 == 4 {
				continue // reading without forecast
			}
			ops = append(ops, fc(z, 100+s, true, f...))
			pred[z], truth[z] = append(pred[z], f...), append(truth[z], y...)
			for c := range C {
				predC[c], truthC[c] = append(predC[c], f[c]), append(truthC[c], y[c])
			}
		}
	}
	recordShuffled(t, l, ops, rng)
	want := func(p, y []float64) evaluation.Metrics {
		a := evaluation.Accumulator{MAPEFloor: floor}
		for i := range p {
			a.Add(p[i], y[i])
		}
		return a.Metrics()
	}
	same := func(what string, got, want evaluation.Metrics) {
		t.Helper()
		if got.Count != want.Count || got.MAPECount != want.MAPECount || !sameFloat(got.MAE, want.MAE) ||
			!sameFloat(got.RMSE, want.RMSE) || !sameFloat(got.MAPE, want.MAPE) {
			t.Errorf("%s: %+v, evaluation %+v", what, got, want)
		}
		if want.Count == want.MAPECount || want.MAPECount == 0 {
			t.Errorf("%s: %+v: the data should have masked and floored truths", what, want)
		}
	}
	sum := l.Summary()
	var allP, allY []float64
	for z := range n {
		got, ok := l.Metrics(z)
		if !ok {
			t.Fatalf("sensor %d unknown", z)
		}
		same(fmt.Sprint("sensor ", z), got, want(pred[z], truth[z]))
		same(fmt.Sprint("summary sensor ", z), sum.Sensors[z].Metrics, want(pred[z], truth[z]))
		if lf := sum.Sensors[z].LatestForecastTS; lf == nil || *lf != (100+slots-2)*testStep {
			t.Errorf("sensor %d latest forecast %v, want slot %d", z, lf, 100+slots-2)
		}
		allP, allY = append(allP, pred[z]...), append(allY, truth[z]...)
	}
	for c := range C {
		same(fmt.Sprint("channel ", c), sum.PerChannel[c], want(predC[c], truthC[c]))
	}
	same("overall", l.Overall(), want(allP, allY))
	same("summary overall", sum.Overall, want(allP, allY))
	if got := strings.Join(sum.Channels, ","); got != "flow,occupancy,channel 2" {
		t.Errorf("channels %s", got)
	}
}

func TestLiveUnknownSensor(t *testing.T) {
	l, err := NewLive(LiveConfig{Nodes: 3, Channels: 1, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range []int{-1, 3, math.MaxInt} {
		if _, ok := l.Sensor(z); ok {
			t.Errorf("Sensor(%d) known", z)
		}
		if _, ok := l.Metrics(z); ok {
			t.Errorf("Metrics(%d) known", z)
		}
	}
	v, ok := l.Sensor(2)
	if !ok || v.Slots == nil || len(v.Slots) != 0 || v.Metrics.Count != 0 || !math.IsNaN(v.Metrics.MAPE) || !math.IsNaN(v.Metrics.MAE) {
		t.Errorf("empty sensor 2: %+v, %v", v, ok)
	}
	s := l.Summary()
	if len(s.Sensors) != 3 || s.Sensors[2].LatestForecastTS != nil || s.Sensors[2].LatestReadingTS != nil {
		t.Errorf("summary of an empty Live: %+v", s)
	}
	for _, cfg := range []LiveConfig{{Nodes: 0, Channels: 1, StepMs: 1}, {Nodes: 1, Channels: 0, StepMs: 1},
		{Nodes: 1, Channels: 1, StepMs: 0}, {Nodes: 1, Channels: 1, StepMs: 1, Slots: -1},
		{Nodes: 1, Channels: 1, StepMs: 1, MAPEFloor: -1}, {Nodes: 1, Channels: 1, StepMs: 1, MAPEFloor: math.NaN()}} {
		if _, err := NewLive(cfg); err == nil {
			t.Errorf("NewLive(%+v) accepted", cfg)
		}
	}
}

// TestLiveRecordAllocs checks that recording allocates nothing, also when
// pairs are scored and ring entries evicted.
func TestLiveRecordAllocs(t *testing.T) {
	l, err := NewLive(LiveConfig{Nodes: 10, Channels: 3, StepMs: testStep, Slots: 8, MAPEFloor: 1})
	if err != nil {
		t.Fatal(err)
	}
	v := []float64{10, 20, 30}
	slot := int64(0)
	if a := testing.AllocsPerRun(1000, func() {
		slot++
		for z := range 10 {
			l.Reading(z, slot*testStep, v)
			l.Forecast(z, slot*testStep, v)
			l.Forecast(z, (slot+1)*testStep, v)
		}
	}); a != 0 {
		t.Errorf("%g allocations per 30 records", a)
	}
	if m := l.Overall(); m.Count == 0 {
		t.Errorf("nothing scored: %+v", m)
	}
}

// TestLiveConcurrent records while other goroutines read (run with -race).
func TestLiveConcurrent(t *testing.T) {
	l, err := NewLive(LiveConfig{Nodes: 4, Channels: 1, StepMs: testStep, Slots: 6})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if v, _ := l.Sensor(1); len(v.Slots) > 6 {
					t.Errorf("%d slots in a ring of 6", len(v.Slots))
				}
				if _, err := json.Marshal(l.Summary()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for s := int64(1); s <= 2000; s++ {
		for z := range 4 {
			l.Forecast(z, s*testStep, []float64{float64(s)})
			l.Reading(z, s*testStep, []float64{float64(s) + 1})
		}
	}
	close(stop)
	wg.Wait()
	if m := l.Overall(); m.Count != 8000 || !sameFloat(m.MAE, 1) {
		t.Errorf("overall %+v, want 8000 values with MAE 1", m)
	}
}

func BenchmarkLiveRecord(b *testing.B) {
	const n = 156
	l, err := NewLive(LiveConfig{Nodes: n, Channels: 1, StepMs: testStep, MAPEFloor: 1})
	if err != nil {
		b.Fatal(err)
	}
	v := []float64{42}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		z, slot := i%n, int64(i/n)
		l.Forecast(z, (slot+1)*testStep, v)
		l.Reading(z, slot*testStep, v)
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/record")
}

// TestServiceWarnsWithoutSelf checks that a bundle in which some sensors do
// not read their own windows is served, with a warning naming them.
func TestServiceWarnsWithoutSelf(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop []int // sensors whose own term is removed from Θ
		want string
	}{
		{"every sensor reads itself", nil, ""},
		{"two do not", []int{2, 4}, `"sensors":2,"first":[2,4]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBundle(t, 5, 4, 1, 3, 1)
			for _, z := range tc.drop {
				i := slices.Index(b.Theta.Nodes[z], z)
				b.Theta.Nodes[z] = slices.Delete(b.Theta.Nodes[z], i, i+1)
				b.Theta.Weights[z] = slices.Delete(b.Theta.Weights[z], i, i+1)
			}
			var logs strings.Builder
			if _, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, Log: zerolog.New(&logs)}); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), "do not read their own readings")
			if warned != (tc.want != "") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("logs %q, want a warning with %q (none: %v)", logs.String(), tc.want, tc.want == "")
			}
		})
	}
}

// TestServiceLiveMAPEFloor checks the live view's floor: the bundle's
// unless the service is given one, 0 included (a 0 given meant the
// bundle's before, so that a demo asked for -mape-floor 0 scored its line
// with 0 and its live view with the bundle's 1).
func TestServiceLiveMAPEFloor(t *testing.T) {
	b := testBundle(t, 4, 3, 1, 4, 5)
	b.Meta.Config.MAPEFloor = 1
	zero, two := 0.0, 2.0
	for _, tc := range []struct {
		given *float64
		want  float64
	}{{nil, 1}, {&zero, 0}, {&two, 2}} {
		svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, Log: zerolog.Nop(), NoRebuild: true, LiveMAPEFloor: tc.given})
		if err != nil {
			t.Fatal(err)
		}
		if got := svc.Live().Summary().MAPEFloor; got != tc.want {
			t.Errorf("floor given %v: live view's %g, want %g", tc.given, got, tc.want)
		}
	}
}

// TestLiveSilent checks the live view's silent marks: a sensor is silent
// while its latest forecast was made from an empty own window, each slot
// says whether its forecast was, and a silent forecast is scored against
// its reading as any other.
func TestLiveSilent(t *testing.T) {
	l, err := NewLive(LiveConfig{Nodes: 3, Channels: 1, StepMs: testStep, Slots: 4})
	if err != nil {
		t.Fatal(err)
	}
	rec := func(z int, slot int64, v float64, silent bool) {
		t.Helper()
		if !l.RecordForecast(&Forecast{Sensor: z, TS: slot * testStep, Values: []float64{v}, Silent: silent}) {
			t.Fatalf("forecast of sensor %d slot %d not recorded", z, slot)
		}
	}
	rec(0, 5, 10, true)
	rec(1, 5, 10, true)
	rec(1, 6, 12, false)
	if l.RecordForecast(&Forecast{Sensor: 1, TS: 6 * testStep, Values: []float64{99}, Silent: true}) {
		t.Error("a second forecast of a slot recorded") // the first kept, its mark too
	}
	l.Reading(0, 5*testStep, []float64{8})
	sum := l.Summary()
	if got := []bool{sum.Sensors[0].Silent, sum.Sensors[1].Silent, sum.Sensors[2].Silent}; !slices.Equal(got, []bool{true, false, false}) {
		t.Errorf("silent sensors %v, want [true false false]", got)
	}
	if m := sum.Sensors[0].Metrics; m.Count != 1 || m.MAE != 2 {
		t.Errorf("the silent forecast scored %+v, want MAE 2 over 1", m)
	}
	v, _ := l.Sensor(1)
	if len(v.Slots) != 2 || !v.Slots[0].Silent || v.Slots[1].Silent || v.Slots[1].Forecast[0] != 12 {
		t.Errorf("sensor 1's slots %+v, want slot 5 silent and slot 6 not (12)", v.Slots)
	}
	b, err := json.Marshal(sum.Sensors[:2])
	if err != nil || strings.Count(string(b), `"silent":true`) != 1 {
		t.Errorf("summary JSON %s (%v): want one silent sensor, the other without the field", b, err)
	}
	// A later forecast from a window with readings ends the mark.
	rec(0, 10, 10, false)
	if l.Summary().Sensors[0].Silent {
		t.Error("sensor 0 still silent after a forecast from a window with readings")
	}
}
