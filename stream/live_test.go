package stream

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
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
	// A view slot: the slot and its reading and forecast (nil: none).
	type slot struct {
		slot     int64
		reading  []float64
		forecast []float64
	}
	for _, tc := range []struct {
		name  string
		slots int     // ring length
		floor float64 // MAPE floor
		ops   []liveOp
		// Of sensor 1: the view and the metrics.
		view      []slot
		count     int     // values scored
		mapeCount int     // of those, in MAPE
		mae, mape float64 // NaN: undefined
		dropped   int     // records refused as invalid or too old
	}{{
		name: "reading then forecast",
		ops:  []liveOp{rd(1, 10, true, 100, 40), fc(1, 10, true, 90, 50)},
		view: []slot{{10, []float64{100, 40}, []float64{90, 50}}},
		// |90−100|/100 = 10 %, |50−40|/40 = 25 %.
		count: 2, mapeCount: 2, mae: 10, mape: 17.5,
	}, {
		name:  "forecast then reading",
		ops:   []liveOp{fc(1, 10, true, 90, 50), rd(1, 10, true, 100, 40)},
		view:  []slot{{10, []float64{100, 40}, []float64{90, 50}}},
		count: 2, mapeCount: 2, mae: 10, mape: 17.5,
	}, {
		name: "unpaired halves are not scored",
		ops:  []liveOp{fc(1, 11, true, 90, 50), rd(1, 10, true, 100, 40)},
		view: []slot{{10, []float64{100, 40}, nil}, {11, nil, []float64{90, 50}}},
		mae:  math.NaN(), mape: math.NaN(),
	}, {
		name: "first reading and forecast kept, pair scored once",
		ops: []liveOp{rd(1, 10, true, 100, 40), rd(1, 10, false, 1, 1), fc(1, 10, true, 90, 50),
			fc(1, 10, false, 2, 2), rd(1, 10, false, 100, 40)},
		view:  []slot{{10, []float64{100, 40}, []float64{90, 50}}},
		count: 2, mapeCount: 2, mae: 10, mape: 17.5,
	}, {
		name:  "a missing value completed after the pair was scored",
		ops:   []liveOp{rd(1, 10, true, 0, 40), fc(1, 10, true, 90, 50), rd(1, 10, true, 100, 0)},
		view:  []slot{{10, []float64{100, 40}, []float64{90, 50}}},
		count: 2, mapeCount: 2, mae: 10, mape: 17.5,
	}, {
		name:  "a missing value completed before the forecast",
		ops:   []liveOp{rd(1, 10, true, 0, 40), rd(1, 10, true, 100, 40), fc(1, 10, true, 90, 50)},
		view:  []slot{{10, []float64{100, 40}, []float64{90, 50}}},
		count: 2, mapeCount: 2, mae: 10, mape: 17.5,
	}, {
		name:  "a completion that conflicts is not kept",
		ops:   []liveOp{rd(1, 10, true, 0, 40), fc(1, 10, true, 90, 50), rd(1, 10, false, 100, 41)},
		view:  []slot{{10, []float64{0, 40}, []float64{90, 50}}},
		count: 1, mapeCount: 1, mae: 10, mape: 25,
	}, {
		name:  "joined by sensor",
		ops:   []liveOp{rd(1, 10, true, 100, 40), fc(2, 10, true, 90, 50), rd(2, 10, true, 50, 50)},
		view:  []slot{{10, []float64{100, 40}, nil}},
		count: 0, mae: math.NaN(), mape: math.NaN(),
	}, {
		name: "missing reading left out, low reading out of MAPE only",
		// 0 is a missing reading: out of every metric; 0.5 < floor 1:
		// in MAE, not in MAPE.
		floor: 1,
		ops:   []liveOp{rd(1, 10, true, 0, 0.5), fc(1, 10, true, 7, 1.5), fc(1, 11, true, 110, 30), rd(1, 11, true, 100, 40)},
		view:  []slot{{10, []float64{0, 0.5}, []float64{7, 1.5}}, {11, []float64{100, 40}, []float64{110, 30}}},
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
		view:  []slot{{7, []float64{20, 20}, []float64{22, 22}}, {8, []float64{10, 10}, nil}, {9, []float64{10, 10}, []float64{11, 11}}},
		count: 4, mapeCount: 4, mae: 1.5, mape: 10, dropped: 2,
	}, {
		name:  "read back from the log, older than the ring: not dropped",
		slots: 3,
		ops: []liveOp{back(rd(1, 9, true, 10, 10)), back(fc(1, 9, true, 11, 11)),
			back(fc(1, 6, false, 1, 1)), back(rd(1, 4, false, 1, 1)), back(rd(1, 8, true, 10, 10)),
			back(rd(-1, 8, false, 1, 1)), // unknown sensor: dropped
			rd(1, 5, false, 1, 1)},       // live: dropped
		view:  []slot{{8, []float64{10, 10}, nil}, {9, []float64{10, 10}, []float64{11, 11}}},
		count: 2, mapeCount: 2, mae: 1, mape: 10, dropped: 2,
	}, {
		name: "unknown sensor, wrong channels, off grid",
		ops: []liveOp{rd(-1, 10, false, 1, 1), fc(5, 10, false, 1, 1), rd(1, 10, false, 1), fc(1, 10, false, 1, 2, 3),
			{sensor: 1, slot: -1, values: []float64{1, 1}}},
		view: []slot{}, mae: math.NaN(), mape: math.NaN(), dropped: 5,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLive(LiveConfig{Nodes: 5, Channels: 2, StepMs: testStep, Slots: tc.slots, MAPEFloor: tc.floor})
			if err != nil {
				t.Fatal(err)
			}
			for i, op := range tc.ops {
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
			v, ok := l.Sensor(1)
			if !ok {
				t.Fatal("sensor 1 unknown")
			}
			var view []slot
			for _, s := range v.Slots {
				if s.TS%testStep != 0 {
					t.Fatalf("slot ts %d off the grid", s.TS)
				}
				view = append(view, slot{s.TS / testStep, s.Reading, s.Forecast})
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
		})
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

// TestLiveHandler checks the live routes of Service.Handler without a
// broker: the page, the JSON shapes and the 404s.
func TestLiveHandler(t *testing.T) {
	b := testBundle(t, 5, 4, 2, 3, 1)
	b.Meta.Channels = []string{"flow", "speed"}
	b.Meta.Config.MAPEFloor = 1
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	live.Forecast(3, 10*testStep, []float64{110, 45})
	live.Reading(3, 10*testStep, []float64{100, 0.5}) // 0.5 below the bundle's floor
	live.Forecast(3, 11*testStep, []float64{math.NaN(), 60})
	live.Reading(4, 9*testStep, []float64{80, 2}) // one of sensor 3's inputs
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	get := func(path string, wantCode int, wantType string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != wantCode || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) {
			t.Fatalf("GET %s: %d %s, want %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), wantCode, wantType, body)
		}
		return body
	}

	page := string(get("/live", 200, "text/html"))
	for _, id := range []string{`id="forecast-rows"`, `id="sensor-mape"`, `id="overall-mape"`, `id="worst-rows"`, `id="status"`, `id="chart"`} {
		if !strings.Contains(page, id) {
			t.Errorf("page lacks %s", id)
		}
	}
	// Offline: nothing but the page itself (the SVG namespace is a name,
	// not a resource).
	local := strings.ReplaceAll(page, `"http://www.w3.org/2000/svg"`, "")
	for _, ext := range []string{"http:", "https:", "//", "src=", "<link", "@import"} {
		if ext == "//" {
			local = strings.ReplaceAll(local, "// ", "") // comments
		}
		if strings.Contains(local, ext) {
			t.Errorf("page refers to an external resource (%q)", ext)
		}
	}

	var sum struct {
		Model     string   `json:"model"`
		StepMs    int64    `json:"step_ms"`
		Channels  []string `json:"channels"`
		MAPEFloor float64  `json:"mape_floor"`
		Overall   struct {
			MAE       *float64 `json:"mae"`
			MAPE      *float64 `json:"mape"`
			Count     int      `json:"count"`
			MAPECount int      `json:"mape_count"`
		} `json:"overall"`
		Sensors []struct {
			Sensor  int `json:"sensor"`
			Metrics struct {
				MAPE  *float64 `json:"mape"`
				Count int      `json:"count"`
			} `json:"metrics"`
			LatestForecastTS *int64 `json:"latest_forecast_ts"`
		} `json:"sensors"`
	}
	if err := json.Unmarshal(get("/api/sensors", 200, "application/json"), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Model != "test-v1" || sum.StepMs != testStep || strings.Join(sum.Channels, ",") != "flow,speed" || sum.MAPEFloor != 1 || len(sum.Sensors) != 5 {
		t.Errorf("summary %+v", sum)
	}
	if o := sum.Overall; o.Count != 2 || o.MAPECount != 1 || o.MAPE == nil || *o.MAPE != 10 || o.MAE == nil || *o.MAE != 27.25 {
		t.Errorf("overall %+v: want MAE (10+44.5)/2, MAPE 10 over 1", o)
	}
	s3 := sum.Sensors[3]
	if s3.Sensor != 3 || s3.Metrics.Count != 2 || s3.Metrics.MAPE == nil || *s3.Metrics.MAPE != 10 ||
		s3.LatestForecastTS == nil || *s3.LatestForecastTS != 11*testStep {
		t.Errorf("sensor 3 summary %+v", s3)
	}
	if s := sum.Sensors[0]; s.Metrics.MAPE != nil || s.LatestForecastTS != nil || s.Metrics.Count != 0 {
		t.Errorf("sensor 0 without data: %+v", s)
	}

	body := get("/api/sensors/3", 200, "application/json")
	var v struct {
		Sensor   int      `json:"sensor"`
		Channels []string `json:"channels"`
		Metrics  struct {
			MAPE *float64 `json:"mape"`
		} `json:"metrics"`
		Overall struct {
			Count int `json:"count"`
		} `json:"overall"`
		Slots []struct {
			TS       int64      `json:"ts"`
			Reading  []*float64 `json:"reading"`
			Forecast []*float64 `json:"forecast"`
		} `json:"slots"`
		Inputs []struct {
			Sensor          int     `json:"sensor"`
			Weight          float64 `json:"weight"`
			LatestReadingTS *int64  `json:"latest_reading_ts"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	// Sensor 3 reads sensors 1, 3 and 4 (testBundle's Θ): 3 and 4 have
	// readings, 1 none yet.
	wantTS := map[int]int64{3: 10 * testStep, 4: 9 * testStep}
	if len(v.Inputs) != len(b.Theta.Nodes[3]) {
		t.Fatalf("sensor 3 inputs %+v, want Θ's %v", v.Inputs, b.Theta.Nodes[3])
	}
	for i, in := range v.Inputs {
		ts, has := wantTS[in.Sensor]
		if in.Sensor != b.Theta.Nodes[3][i] || in.Weight != b.Theta.Weights[3][i] ||
			(in.LatestReadingTS == nil) == has || (has && *in.LatestReadingTS != ts) {
			t.Errorf("sensor 3 input %d: %+v, want sensor %d weight %g, newest reading %d (0: none)", i, in, b.Theta.Nodes[3][i], b.Theta.Weights[3][i], ts)
		}
	}
	if v.Sensor != 3 || len(v.Channels) != 2 || v.Metrics.MAPE == nil || *v.Metrics.MAPE != 10 || v.Overall.Count != 2 || len(v.Slots) != 2 {
		t.Fatalf("sensor 3: %s", body)
	}
	if s := v.Slots[0]; s.TS != 10*testStep || len(s.Reading) != 2 || *s.Reading[0] != 100 || *s.Forecast[1] != 45 {
		t.Errorf("slot 10: %s", body)
	}
	if s := v.Slots[1]; s.TS != 11*testStep || s.Reading != nil || len(s.Forecast) != 2 || s.Forecast[0] != nil || *s.Forecast[1] != 60 {
		t.Errorf("slot 11 (reading pending, NaN forecast as null): %s", body)
	}
	if !strings.Contains(string(get("/api/sensors/0", 200, "application/json")), `"slots":[]`) {
		t.Error("sensor 0 without data: want an empty slot list")
	}

	// Ids as the readings' keys write them, and no other way: "+1", "01"
	// and "-0" are not sensors 1 and 0.
	for _, bad := range []string{"5", "-1", "abc", "1.5", "99999999999999999999", "+1", "01", "-0", "00"} {
		for _, path := range []string{"/api/sensors/", "/forecast/"} {
			msg := string(get(path+url.PathEscape(bad), 404, "text/plain"))
			if !strings.Contains(msg, bad) || !strings.Contains(msg, "0..4") {
				t.Errorf("GET %s%s: %q should name the sensor and 0..4", path, bad, msg)
			}
		}
	}
	// The existing routes are unchanged.
	get("/forecast/abc", 404, "text/plain")
	get("/forecast/3", 404, "text/plain") // nothing written to Kafka
	if body := string(get("/forecasts", 200, "application/json")); body != "[]\n" {
		t.Errorf("GET /forecasts before any forecast: %q, want an empty list", body)
	}
	// JSON or CSV by Accept: caches must keep them apart, and keep
	// neither.
	if resp, err := http.Get(srv.URL + "/forecasts"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.Header.Get("Vary") != "Accept" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET /forecasts: Vary %q, Cache-Control %q", resp.Header.Get("Vary"), resp.Header.Get("Cache-Control"))
		}
	}
	for _, bad := range []string{"5", "1,abc", "-1", "2,,3"} {
		if msg := string(get("/forecasts?sensors="+bad, 400, "text/plain")); !strings.Contains(msg, "0..4") {
			t.Errorf("GET /forecasts?sensors=%s: %q should name the valid ids", bad, msg)
		}
	}
	if msg := string(get("/forecasts?since=yesterday", 400, "text/plain")); !strings.Contains(msg, `since: "yesterday" is neither Unix milliseconds nor RFC 3339`) {
		t.Errorf("GET /forecasts?since=yesterday: %q", msg)
	}
	// A query that does not parse is refused, not read in part (which
	// answered for every sensor).
	for _, bad := range []string{"sensors=1;3", "sensors=%zz", "since=%zz", "format=csv;", "sensors=1,3;format=csv"} {
		if msg := string(get("/forecasts?"+bad, 400, "text/plain")); !strings.Contains(msg, "query") {
			t.Errorf("GET /forecasts?%s: %q should name the query", bad, msg)
		}
	}
	metrics := string(get("/metrics", 200, "text/plain"))
	// Sensor 3's slot 10: errors 10 and 44.5; only 100 is at or above the
	// floor (relative error 0.1); the NaN forecast has no reading yet.
	for _, line := range []string{
		`sdgnn_stream_live_scored_values_total{scope="all"} 2`,
		`sdgnn_stream_live_abs_error_total{scope="all"} 54.5`,
		`sdgnn_stream_live_squared_error_total{scope="all"} 2080.25`,
		`sdgnn_stream_live_mape_values_total{scope="all"} 1`,
		`sdgnn_stream_live_rel_error_total{scope="all"} 0.1`,
		`sdgnn_stream_live_invalid_values_total{scope="all"} 0`,
		`# TYPE sdgnn_stream_live_abs_error_total counter`,
		`sdgnn_stream_forecasts_emitted_total 0`,
		`sdgnn_model_info{version="test-v1",dataset="test"} 1`,
		`sdgnn_stream_model_reloads_total 0`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(metrics, `scope="part"`) {
		t.Error(`/metrics has scope="part" without a part scope`)
	}
	// The process's own gauges, under the Go client's names.
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "go_gc_cycles_total",
		"process_start_time_seconds", "process_resident_memory_bytes", "process_open_fds"} {
		if !strings.Contains(metrics, "\n"+name+" ") || !strings.Contains(metrics, "# TYPE "+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}

	// After a reload the routes describe the new model: its version, its
	// receptive sets; the live figures carry on.
	next := testBundle6(t, 5, 4, 2, 3, 2)
	next.Meta.Version = "test-v2"
	if err := svc.Reload(next); err != nil {
		t.Fatal(err)
	}
	sum.Model = ""
	if err := json.Unmarshal(get("/api/sensors", 200, "application/json"), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Model != "test-v2" || sum.Overall.Count != 2 {
		t.Errorf("after the reload: model %q, %d values scored; want test-v2, 2", sum.Model, sum.Overall.Count)
	}
	v.Inputs = nil
	if err := json.Unmarshal(get("/api/sensors/3", 200, "application/json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Inputs) != len(next.Theta.Nodes[3]) || len(v.Inputs) == len(b.Theta.Nodes[3]) {
		t.Errorf("after the reload sensor 3 has %d inputs, want the new Θ's %d", len(v.Inputs), len(next.Theta.Nodes[3]))
	}
	metrics = string(get("/metrics", 200, "text/plain"))
	for _, line := range []string{`sdgnn_model_info{version="test-v2",dataset="test"} 1`, `sdgnn_stream_model_reloads_total 1`} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics after the reload lacks %q", line)
		}
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

// TestForecastsSinceRange checks that GET /forecasts refuses a since
// that no forecast can have, as a reading's ts is refused: before 1970,
// or after 9999 (a time in µs or ns by mistake), which would otherwise
// answer an empty list for good.
func TestForecastsSinceRange(t *testing.T) {
	_, h := forecastsService(t)
	for _, bad := range []string{"-1", "-9223372036854775808", strconv.FormatInt(MaxTS+1, 10), "1767225600000000", "1767225600000000000", "1969-12-31T23:59:59Z"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?since="+url.QueryEscape(bad), nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(string(body), "since") {
			t.Errorf("GET /forecasts?since=%s: %d %q, want 400 naming since", bad, rec.Code, body)
		}
	}
	for _, good := range []string{"0", strconv.FormatInt(MaxTS, 10), "2026-01-01T00:00:00Z"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?since="+url.QueryEscape(good), nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET /forecasts?since=%s: %d %q, want 200", good, rec.Code, rec.Body.String())
		}
	}
}

// TestForecastsSinceZonePlus checks that a since in RFC 3339 with a
// positive zone offset written into the URL as it is (?since=…+08:00,
// Shenzhen's time), whose + the query decodes as a space, is refused with
// a 400 that says so and how to write it (%2B), not as "neither Unix
// milliseconds nor RFC 3339", which sent a consumer looking for a wrong
// time; escaped, it is taken.
func TestForecastsSinceZonePlus(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"since=2026-01-01T08:00:00+08:00", http.StatusBadRequest, `"+08:00" as "%2B08:00"`},
		{"since=2026-01-01T08:00:00.5+05:30", http.StatusBadRequest, `"+05:30" as "%2B05:30"`},
		{"since=2026-01-01T08:00:00%2B08:00", http.StatusOK, ""},
		{"since=2026-01-01T00:00:00-03:00", http.StatusOK, ""},
		{"since=2026-01-01+08:00", http.StatusBadRequest, "neither Unix milliseconds nor RFC 3339"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET /forecasts?%s: %d %q, want %d with %q", tc.query, rec.Code, body, tc.code, tc.want)
		}
	}
}

// TestForecastsRepeatedParameter checks that a parameter given twice is
// refused naming it, not read from its first value alone (which answered
// ?sensors=1&sensors=2 with sensor 1 only).
func TestForecastsRepeatedParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct{ query, name string }{
		{"sensors=1&sensors=2", "sensors"},
		{"since=0&since=5", "since"},
		{"format=csv&format=json", "format"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		if body := rec.Body.String(); rec.Code != http.StatusBadRequest || !strings.Contains(body, tc.name) {
			t.Errorf("GET /forecasts?%s: %d %q, want 400 naming %s", tc.query, rec.Code, body, tc.name)
		}
	}
}

// TestForecastsUnknownParameter checks that GET /forecasts refuses a
// parameter it does not know, naming it and the ones it knows, rather
// than ignoring it: ?sensor=3 (for sensors) answered every sensor.
func TestForecastsUnknownParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query, name string
		code        int
	}{
		{"sensor=3", "sensor", http.StatusBadRequest},
		{"sensors=3&Since=0", "Since", http.StatusBadRequest},
		{"fmt=csv", "fmt", http.StatusBadRequest},
		{"sensors=3&since=0&format=json", "", http.StatusOK},
		{"", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code {
			t.Errorf("GET /forecasts?%s: %d %q, want %d", tc.query, rec.Code, body, tc.code)
			continue
		}
		if tc.code == http.StatusBadRequest && (!strings.Contains(body, strconv.Quote(tc.name)) || !strings.Contains(body, "sensors, since, format")) {
			t.Errorf("GET /forecasts?%s: %q, want the error to name %q and the known parameters", tc.query, body, tc.name)
		}
	}
}

// TestForecastsEmptyParameter checks that GET /forecasts refuses a
// parameter given without a value, naming it, rather than reading it as
// absent: ?sensors= (a dashboard's list left empty) answered every
// sensor, ?since= every slot and ?format= by the Accept header.
func TestForecastsEmptyParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query, name string
		code        int
	}{
		{"sensors=", "sensors", http.StatusBadRequest},
		{"sensors", "sensors", http.StatusBadRequest},
		{"sensors=%20", "sensors", http.StatusBadRequest},
		{"sensors=&since=0", "sensors", http.StatusBadRequest},
		{"since=", "since", http.StatusBadRequest},
		{"sensors=1&since=", "since", http.StatusBadRequest},
		{"format=", "format", http.StatusBadRequest},
		{"sensors=1&since=0&format=csv", "", http.StatusOK},
		{"", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code {
			t.Errorf("GET /forecasts?%s: %d %q, want %d", tc.query, rec.Code, body, tc.code)
			continue
		}
		if tc.code == http.StatusBadRequest && !strings.Contains(body, tc.name+": empty") {
			t.Errorf("GET /forecasts?%s: %q, want the error to name the empty %s", tc.query, body, tc.name)
		}
	}
}

// TestForecastOneSensorQuery checks that GET /forecast/{sensor} reads its
// query as GET /forecasts does: ?format=csv (or Accept: text/csv) answers
// the forecast as CSV, and a parameter it does not know, given twice or
// empty is a 400 naming it. Before, every query was ignored:
// ?format=csv answered JSON.
func TestForecastOneSensorQuery(t *testing.T) {
	svc, h := forecastsService(t)
	f := Forecast{Sensor: 2, TS: 7 * testStep, Values: []float64{41.5, 0.125}, Model: "v1", Inputs: []Input{{Sensor: 2, TS: 6 * testStep}}, EmittedMs: 1234}
	svc.latest = map[int][]byte{2: EncodeForecast(nil, &f)}
	wantCSV := "ts,sensor,value_0,value_1,stale_slots,model,emitted_ms\n2100000,2,41.5,0.125,0,v1,1234\n"
	for _, tc := range []struct {
		query, accept string
		code          int
		want          string // the body, or a part of an error
	}{
		{"", "", http.StatusOK, string(EncodeForecast(nil, &f))},
		{"?format=json", "text/csv", http.StatusOK, string(EncodeForecast(nil, &f))},
		{"?format=csv", "", http.StatusOK, wantCSV},
		{"", "text/csv", http.StatusOK, wantCSV},
		{"?fmt=csv", "", http.StatusBadRequest, `unknown parameter "fmt": want format`},
		{"?sensors=2", "", http.StatusBadRequest, `unknown parameter "sensors"`},
		{"?format=", "", http.StatusBadRequest, "format: empty"},
		{"?format=csv&format=json", "", http.StatusBadRequest, "format: given 2 times"},
		{"?format=xml", "", http.StatusBadRequest, `format "xml": want json or csv`},
	} {
		req := httptest.NewRequest(http.MethodGet, "/forecast/2"+tc.query, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != tc.code || tc.code == http.StatusOK && body != tc.want || tc.code != http.StatusOK && !strings.Contains(body, tc.want) {
			t.Errorf("GET /forecast/2%s (Accept %q): %d %q, want %d %q", tc.query, tc.accept, rec.Code, body, tc.code, tc.want)
		}
	}
}

// forecastsService returns a service of five sensors that reaches no
// broker, and its HTTP handler, for the tests of the forecasts' queries.
func forecastsService(t testing.TB) (*Service, http.Handler) {
	t.Helper()
	svc, err := NewService(testBundle(t, 5, 4, 2, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	return svc, svc.Handler()
}

// TestSensorList checks the ids GET /forecasts?sensors= takes: decimal ids
// as the readings' keys write them, spaces around them allowed, in range.
func TestSensorList(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []int
		ok   bool
	}{
		{"3,1, 4 ,1", []int{3, 1, 4}, true},
		{"0", []int{0}, true},
		{"+1", nil, false},
		{"01", nil, false},
		{"-0", nil, false},
		{"5", nil, false},
		{"1,,2", nil, false},
	} {
		got, err := sensorList(tc.list, 5)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("sensorList(%q) = %v, %v; want %v (ok %v)", tc.list, got, err, tc.want, tc.ok)
		}
	}
}

// TestProbeHeaders checks that /metrics and /healthz, which a proxy in
// front of the service might otherwise cache, are no-store like /readyz,
// and that /metrics is the text exposition format in UTF-8, as
// Prometheus's client libraries write it.
func TestProbeHeaders(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct{ path, ctype string }{
		{"/metrics", "text/plain; version=0.0.4; charset=utf-8"},
		{"/healthz", "text/plain; charset=utf-8"},
		{"/readyz", "text/plain; charset=utf-8"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got := rec.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", tc.path, got)
		}
		if got := rec.Header().Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
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
