package stream

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// silentBundle returns a random bundle of n nodes reading windows of T
// slots through norm with missing marks, with silent weights unlike its
// main ones: node z reads z, z+1 and z+3 (node 0 only itself), except
// node n−1, which reads nodes 0 and 1 and not itself.
func silentBundle(tb testing.TB, n, T, d int, norm snapshot.Normalizer, seed uint64) *sdgnn.Bundle {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 17))
	th := &sdgnn.Theta{Nodes: make([][]int, n), Weights: make([][]float64, n), Silent: make([][]float64, n)}
	for z := range n {
		ks := []int{z}
		switch {
		case z == n-1:
			ks = []int{0, 1}
		case z > 0:
			ks = append(ks, (z+1)%n, (z+3)%n)
		}
		slices.Sort(ks)
		th.Nodes[z] = slices.Compact(ks)
		for range th.Nodes[z] {
			th.Weights[z] = append(th.Weights[z], 0.1+rng.Float64())
			th.Silent[z] = append(th.Silent[z], 2*rng.Float64())
		}
	}
	norm.Mask = true
	C := len(norm.Mean)
	meta := sdgnn.BundleMeta{Dataset: "test", Nodes: n, Window: T, Hidden: d, Norm: norm, Version: "outage-v1"}
	meta.Config.PhiHidden = d + 1
	b, err := sdgnn.NewBundle(meta, gru.New(norm.Inputs(), d, rng), nn.NewMLP("phi", d, d+1, d, rng), th, nn.NewMLP("dec", d, d+2, C, rng))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// withWeights returns a clone of b without silent weights whose main
// weights are silent's (b's own with silent nil): ForecastMany of it is
// ForecastManySilent of b with every node silent, or with none.
func withWeights(tb testing.TB, b *sdgnn.Bundle, silent bool) *sdgnn.Bundle {
	tb.Helper()
	c, err := b.Clone()
	if err != nil {
		tb.Fatal(err)
	}
	if silent {
		c.Theta.Weights = c.Theta.Silent
	}
	c.Theta.Silent = nil
	return c
}

// TestForecastSilentOwnWindow streams six sensors, one in each state of
// its own window at the forecast slot, and checks each forecast's Silent
// mark, the completeness recorded for the counters (against
// snapshot.WindowGaps of the windows as the offline path sees them, a
// slot not received a missing one) and its weights: a sensor whose own
// window holds no reading is forecast as a bundle weighing its receptive
// sensors by the silent weights does, whether it reads its own window
// (sensors 1, 3, 4) or not (sensor 5), whether its readings came as
// missing (0), stopped (3: its last window held, stale) or never came
// (4); the others by the main weights.
func TestForecastSilentOwnWindow(t *testing.T) {
	const n, T, C, d, steps = 6, 4, 2, 5, 12
	norm := snapshot.Normalizer{Mean: []float64{50, 60}, Std: []float64{5, 6}}
	b := silentBundle(t, n, T, d, norm, 3)
	data := testSeries(steps, n, C, 4)
	for s := range steps {
		for z := range n {
			row := data[(s*n+z)*C : (s*n+z+1)*C]
			switch {
			case z == 0 || row[0] == 0: // complete, as the offline data have it
				row[0], row[1] = 50, 60
			}
			switch {
			case (z == 1 || z == 5) && s >= steps-T, z == 2 && s >= steps-T+1, z == 4:
				clear(row) // published as missing; sensor 4 never heard
			}
		}
	}
	const base = 1000
	var rs []Reading
	for s := range steps {
		for z := range n {
			if z == 4 || z == 3 && s >= steps-T {
				continue // never sends; stops sending
			}
			rs = append(rs, Reading{Sensor: z, TS: (base + int64(s)) * testStep, Values: slices.Clone(data[(s*n+z)*C : (s*n+z+1)*C])})
		}
	}
	offline := slices.Clone(data) // what the offline path reads: a slot not received is missing
	for s := steps - T; s < steps; s++ {
		clear(offline[(s*n+3)*C : (s*n+4)*C])
	}
	own := func(z int) int {
		win := make([]float64, 0, T*C)
		for s := steps - T; s < steps; s++ {
			win = append(win, offline[(s*n+z)*C:(s*n+z+1)*C]...)
		}
		m, _ := snapshot.WindowGaps(win, C, 0)
		return m
	}
	states := map[string]*State{}
	for name, bb := range map[string]*sdgnn.Bundle{"silent": b, "main only": withWeights(t, b, false), "silent only": withWeights(t, b, true)} {
		st, err := NewState(bb, testStep)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, st, rs)
		states[name] = st
	}
	wantSilent := []bool{false, true, false, true, true, true}
	target := int64(base + steps)
	for z := range n {
		var f, main, sil Forecast
		for _, c := range []struct {
			st  *State
			dst *Forecast
		}{{states["silent"], &f}, {states["main only"], &main}, {states["silent only"], &sil}} {
			if err := c.st.ForecastSlot(z, target*testStep, c.dst); err != nil {
				t.Fatalf("sensor %d: %v", z, err)
			}
		}
		if f.Silent != wantSilent[z] || main.Silent != wantSilent[z] {
			t.Errorf("sensor %d: silent %v (%v without silent weights), want %v", z, f.Silent, main.Silent, wantSilent[z])
		}
		want := main.Values
		if wantSilent[z] {
			want = sil.Values
		}
		if !slices.Equal(f.Values, want) || slices.Equal(main.Values, sil.Values) {
			t.Errorf("sensor %d: forecast %v; main weights give %v, silent ones %v; want the %v", z, f.Values, main.Values, sil.Values, map[bool]string{true: "silent", false: "main"}[wantSilent[z]])
		}
		ks, _ := b.Receptive(z)
		others := evaluation.OthersIncompleteFor(z, ks, func(i int) int { return own(ks[i]) })
		nd := &states["silent"].nodes[z]
		if int(nd.fcOwn) != own(z) || nd.fcOthers != others {
			t.Errorf("sensor %d: own window %d slots missing, others incomplete %v; want %d, %v", z, nd.fcOwn, nd.fcOthers, own(z), others)
		}
		msg := EncodeForecast(nil, &f)
		if bytes.Contains(msg, []byte(`,"silent":true,"emitted_ms":`)) != wantSilent[z] || bytes.Count(msg, []byte("silent")) > 1 {
			t.Errorf("sensor %d: message %s", z, msg)
		}
		if back, err := DecodeForecast(msg); err != nil || back.Silent != f.Silent {
			t.Errorf("sensor %d: decoded silent %v (%v), sent %v", z, back.Silent, err, f.Silent)
		}
	}
}

// TestWriteCompleteness checks the completeness counters' exposition: a
// series for every class a window of the model's length can fall in,
// labelled as evaluation names the classes.
func TestWriteCompleteness(t *testing.T) {
	for _, tc := range []struct {
		window int
		own    []string
	}{
		{12, []string{"complete", "1-3", "4-11", "whole"}},
		{4, []string{"complete", "1-3", "whole"}},
	} {
		c := &Counters{window: tc.window}
		c.countCompleteness(0, false)
		c.countCompleteness(tc.window, true)
		c.countCompleteness(tc.window+5, true)
		c.countCompleteness(2, false)
		var buf bytes.Buffer
		if err := c.WritePrometheus(&buf); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.HasPrefix(l, "sdgnn_stream_forecasts_by_completeness_total{") {
				got = append(got, l)
			}
		}
		var want []string
		for _, o := range tc.own {
			for _, r := range []string{"complete", "incomplete"} {
				v := map[string]int{"complete/complete": 1, "whole/incomplete": 2, "1-3/complete": 1}[o+"/"+r]
				want = append(want, `sdgnn_stream_forecasts_by_completeness_total{own="`+o+`",receptive="`+r+`"} `+string(rune('0'+v)))
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("window %d:\n%s\nwant\n%s", tc.window, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	var buf bytes.Buffer
	if err := new(Counters).WritePrometheus(&buf); err != nil || strings.Contains(buf.String(), "by_completeness") {
		t.Errorf("counters of no model: %v\n%s", err, buf.String())
	}
}
