package stream

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestForecastSlotsSensorNeverHeardApart checks that forecasts made in one
// batch that read the same sensor without readings at slots a ring apart
// (inputs of other partitions far ahead, while catching up) each get the
// window of missing readings of their own slot: its embedding differs by
// the calendar inputs, and both windows took the same ring position of the
// sensor, the later overwriting the earlier's embedding.
func TestForecastSlotsSensorNeverHeardApart(t *testing.T) {
	const n, T, C, d = 5, 3, 2, 4
	rng := rand.New(rand.NewPCG(5, 7))
	norm := snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 0}, Std: []float64{100, 80},
		Time: &snapshot.TimeInputs{StepMs: testStep, MinuteMax: 1435, WeekdayMax: 6}}
	// Nodes 1 and 3 read themselves and node 4, which never reports.
	theta := &sdgnn.Theta{Nodes: [][]int{{0}, {1, 4}, {2}, {3, 4}, {4}}, Weights: [][]float64{{1}, {0.6, 0.7}, {1}, {0.5, 0.9}, {1}}}
	meta := sdgnn.BundleMeta{Dataset: "test", Nodes: n, Window: T, Hidden: d, Norm: norm, Version: "test-v1"}
	meta.Config.PhiHidden = d + 1
	b, err := sdgnn.NewBundle(meta, gru.New(norm.Inputs(), d, rng), nn.NewMLP("phi", d, d+1, d, rng), theta, nn.NewMLP("dec", d, d+2, C, rng))
	if err != nil {
		t.Fatal(err)
	}
	// No history: a ring of T slots, so slots 10 and 13 share a position.
	readings := []Reading{{1, 10 * testStep, []float64{40, 30}}, {3, 13 * testStep, []float64{20, 50}}}
	want := make([]Forecast, 2)
	for i, z := range []int{1, 3} {
		st, err := NewStateHistory(b, testStep, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, st, readings)
		if err := st.ForecastSlot(z, readings[i].TS+testStep, &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := NewStateHistory(b, testStep, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, st, readings)
	got := make([]Forecast, 2)
	for i, err := range st.ForecastSlots([]int{1, 3}, []int64{11 * testStep, 14 * testStep}, got) {
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[i].Values, want[i].Values) || !slices.Equal(got[i].Inputs, want[i].Inputs) {
			t.Errorf("node %d in one batch: %v from %v; alone: %v from %v", got[i].Sensor, got[i].Values, got[i].Inputs, want[i].Values, want[i].Inputs)
		}
	}
	// So too through Prepare, as the Emitter computes them.
	st, err = NewStateHistory(b, testStep, 0)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, st, readings)
	if err := st.Prepare([]int{1, 3}, []int64{11, 14}); err != nil {
		t.Fatal(err)
	}
	for i, z := range []int{1, 3} {
		if err := st.ForecastSlot(z, readings[i].TS+testStep, &got[i]); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[i].Values, want[i].Values) {
			t.Errorf("node %d after Prepare: %v; alone: %v", z, got[i].Values, want[i].Values)
		}
	}
}
