package snapshot

import (
	"encoding/json"
	"math"
	"testing"
)

func TestFitNormalizer(t *testing.T) {
	// 3 steps × 2 nodes × 2 channels. Channel 0 has a missing zero and a
	// NaN; channel 1 is constant. Step 2 must be ignored when steps = 2.
	data := []float64{
		1, 5, 3, 5, // step 0
		0, 5, math.NaN(), 5, // step 1
		1000, 1000, 1000, 1000, // step 2
	}
	for _, tc := range []struct {
		name     string
		steps    int
		wantMean []float64
		wantStd  []float64
	}{
		{"train steps only", 2, []float64{2, 5}, []float64{1, minStd}},
		{"one step", 1, []float64{2, 5}, []float64{1, minStd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := FitNormalizer(data, 2, 2, tc.steps)
			if err != nil {
				t.Fatal(err)
			}
			for c := range tc.wantMean {
				if math.Abs(n.Mean[c]-tc.wantMean[c]) > 1e-12 || math.Abs(n.Std[c]-tc.wantStd[c]) > 1e-12 {
					t.Errorf("channel %d: mean %v std %v, want %v %v", c, n.Mean[c], n.Std[c], tc.wantMean[c], tc.wantStd[c])
				}
			}
		})
	}
}

func TestFitNormalizerErrors(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		data                   []float64
		nodes, channels, steps int
	}{
		{"short data", make([]float64, 3), 1, 2, 2},
		{"zero nodes", make([]float64, 4), 0, 2, 2},
		{"zero steps", make([]float64, 4), 1, 2, 0},
		{"all missing channel", []float64{1, 0, 2, 0}, 1, 2, 2},
		{"overflow", nil, math.MaxInt, 2, 2},
	} {
		if _, err := FitNormalizer(tc.data, tc.nodes, tc.channels, tc.steps); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func TestNormalizerRoundTrip(t *testing.T) {
	n := Normalizer{Mean: []float64{10, -2}, Std: []float64{2, 0.5}}
	for _, tc := range []struct {
		v    float64
		c    int
		want float64
	}{
		{14, 0, 2},
		{-2, 1, 0},
		{-3, 1, -2},
	} {
		got := n.Normalize(tc.v, tc.c)
		if got != tc.want {
			t.Errorf("Normalize(%v, %d) = %v, want %v", tc.v, tc.c, got, tc.want)
		}
		if back := n.Denormalize(got, tc.c); math.Abs(back-tc.v) > 1e-12 {
			t.Errorf("Denormalize(Normalize(%v, %d)) = %v", tc.v, tc.c, back)
		}
	}
	for _, c := range []int{-1, 2} {
		if !math.IsNaN(n.Normalize(1, c)) || !math.IsNaN(n.Denormalize(1, c)) {
			t.Errorf("channel %d out of range: want NaN", c)
		}
	}
	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"mean":[10,-2],"std":[2,0.5]}`; got != want {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func TestNormalizerValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    Normalizer
		ch   int
		ok   bool
	}{
		{"ok", Normalizer{Mean: []float64{0, 1}, Std: []float64{1, 2}}, 2, true},
		{"wrong channels", Normalizer{Mean: []float64{0}, Std: []float64{1}}, 2, false},
		{"zero std", Normalizer{Mean: []float64{0}, Std: []float64{0}}, 1, false},
		{"nan mean", Normalizer{Mean: []float64{math.NaN()}, Std: []float64{1}}, 1, false},
		{"inf std", Normalizer{Mean: []float64{0}, Std: []float64{math.Inf(1)}}, 1, false},
		{"min-max", Normalizer{Kind: KindMinMax, Mean: []float64{0}, Std: []float64{3}}, 1, true},
		{"unknown kind", Normalizer{Kind: "robust", Mean: []float64{0}, Std: []float64{3}}, 1, false},
		{"time inputs", Normalizer{Kind: KindMinMax, Mean: []float64{0}, Std: []float64{3}, Time: &TimeInputs{StepMs: 300_000, MinuteMax: 1435, WeekdayMax: 6}}, 1, true},
		{"time inputs without step", Normalizer{Kind: KindMinMax, Mean: []float64{0}, Std: []float64{3}, Time: &TimeInputs{MinuteMax: 1435, WeekdayMax: 6}}, 1, false},
		{"weekday scale above 6", Normalizer{Kind: KindMinMax, Mean: []float64{0}, Std: []float64{3}, Time: &TimeInputs{StepMs: 300_000, MinuteMax: 1435, WeekdayMax: 7}}, 1, false},
	} {
		if err := tc.n.Validate(tc.ch); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestSameEdges(t *testing.T) {
	a, b := &EdgeScale{Min: 1, Max: 9}, &EdgeScale{Min: 1, Max: 9}
	for _, tc := range []struct {
		x, y *EdgeScale
		want bool
	}{
		{nil, nil, true},
		{a, b, true},
		{a, nil, false},
		{nil, b, false},
		{a, &EdgeScale{Min: 1, Max: 8}, false},
	} {
		if got := SameEdges(tc.x, tc.y); got != tc.want {
			t.Errorf("SameEdges(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}
