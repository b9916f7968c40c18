package teacher

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	d := m.RawMatrix().Data
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return m
}

// ringAdjacency returns the normalised adjacency of a ring of n nodes: every
// node has degree 3 in A+I, so all nonzero entries are 1/3.
func ringAdjacency(n int) gcn.Dense {
	a := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		a.Set(i, i, 1.0/3)
		a.Set(i, (i+1)%n, 1.0/3)
		a.Set((i+1)%n, i, 1.0/3)
	}
	return gcn.Dense{A: a}
}

// TestWholeModelGradients checks the gradient of the masked loss through
// decoder, GCN and GRU against central finite differences, for both kinds,
// both GCN depths and both losses, with the training noise on (its draws are
// replayed exactly).
func TestWholeModelGradients(t *testing.T) {
	for _, tc := range []struct {
		kind, loss string
		noise      float64
		layers     int
		mask, gate bool // missing marks as inputs, a gate on the GCN's skip
	}{
		{KindGRUGCN, LossMSE, 0, 0, false, false},
		{KindGRUGCN, LossMSE, 0.05, 2, false, false},
		{KindGRUGCN, LossMAE, 0.01, 0, false, false},
		{KindGRUGCN, LossMSE, 0, 1, false, false},
		{KindGRUGCN, LossMAE, 0.05, 1, false, false},
		{KindGRU, LossMSE, 0, 0, false, false},
		{KindGRUGCN, LossMSE, 0.05, 2, true, true},
		{KindGRUGCN, LossMSE, 0, 1, true, true},
		{KindGRUGCN, LossMSE, 0, 2, false, true},
		{KindGRU, LossMSE, 0, 0, true, false},
	} {
		const nodes, blocks, window, channels = 5, 2, 4, 3
		rng := rand.New(rand.NewPCG(21, 22))
		cfg := Config{Kind: tc.kind, Window: window, Channels: channels, Hidden: 6, NoiseStd: tc.noise, Seed: 3, Layers: tc.layers, Gate: tc.gate}
		if tc.mask {
			cfg.MaskInputs = channels
		}
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if tc.gate {
			m.GCN.Gate.B.W.Set(0, 0, 0.2) // well inside (0, 1), where the gate's gradient is large
		}
		a := ringAdjacency(nodes)
		rows := nodes * blocks
		xs := make([]*mat.Dense, window)
		for i := range xs {
			xs[i] = randDense(rng, rows, cfg.Inputs())
			if tc.mask { // marks of 0 and 1, the last rows' last steps missing
				for r := 0; r < rows; r++ {
					for c := channels; c < cfg.Inputs(); c++ {
						v := 0.0
						if r >= rows-3 && i >= window-2 {
							v = 1
						}
						xs[i].Set(r, c, v)
					}
				}
			}
		}
		y := randDense(rng, rows, channels)
		raw := randDense(rng, rows, channels)
		raw.Set(0, 0, 0) // a missing target, masked out
		raw.Set(3, 2, 0)
		dy := mat.NewDense(rows, channels, nil)
		loss := func() float64 {
			pred, err := m.Forward(xs, a, rand.New(rand.NewPCG(7, 7)))
			if err != nil {
				t.Fatal(err)
			}
			l, err := Loss(tc.loss, dy, pred, y, raw)
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		grad := func() {
			nn.ZeroGrad(m.Params())
			loss()
			if err := m.Backward(dy, a); err != nil {
				t.Fatal(err)
			}
		}
		if worst, err := nn.GradCheck(m.Params(), grad, loss, 1e-5, 1e-5, 0); err != nil {
			t.Errorf("%s/%s/noise %g/layers %d/mask %v/gate %v: %v (worst %.3g)", tc.kind, tc.loss, tc.noise, tc.layers, tc.mask, tc.gate, err, worst)
		}
	}
}

func TestLossMasksMissingTargets(t *testing.T) {
	pred := mat.NewDense(2, 2, []float64{1, 2, 3, 4})
	y := mat.NewDense(2, 2, []float64{0, 0, 0, 1})
	raw := mat.NewDense(2, 2, []float64{5, 0, 7, 9}) // second entry missing
	dy := mat.NewDense(2, 2, nil)
	for _, tc := range []struct {
		kind string
		want float64
		grad []float64
	}{
		{LossMAE, (1 + 3 + 3) / 3.0, []float64{1.0 / 3, 0, 1.0 / 3, 1.0 / 3}},
		{LossMSE, (1 + 9 + 9) / 3.0, []float64{2.0 / 3, 0, 6.0 / 3, 6.0 / 3}},
	} {
		l, err := Loss(tc.kind, dy, pred, y, raw)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l-tc.want) > 1e-12 {
			t.Errorf("%s loss %g, want %g", tc.kind, l, tc.want)
		}
		if !mat.EqualApprox(dy, mat.NewDense(2, 2, tc.grad), 1e-15) {
			t.Errorf("%s gradient %v, want %v", tc.kind, dy.RawMatrix().Data, tc.grad)
		}
	}
	if _, err := Loss("huber", dy, pred, y, raw); err == nil {
		t.Error("unknown loss accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Kind: KindGRUGCN, Window: 12, Channels: 3, Hidden: 16}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"kind", func(c *Config) { c.Kind = "gat" }},
		{"window", func(c *Config) { c.Window = 0 }},
		{"window 2017", func(c *Config) { c.Window = snapshot.MaxWindow + 1 }},
		{"channels", func(c *Config) { c.Channels = 0 }},
		{"hidden", func(c *Config) { c.Hidden = -1 }},
		{"noise", func(c *Config) { c.NoiseStd = -0.1 }},
		{"layers 3", func(c *Config) { c.Layers = 3 }},
		{"layers -1", func(c *Config) { c.Layers = -1 }},
	} {
		c := good
		tc.mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("bad %s accepted", tc.name)
		}
	}
	if _, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: 3, Hidden: 16, Layers: 3}); err == nil || !strings.Contains(err.Error(), "layers 3") {
		t.Errorf("3 layers: error %v does not name the layers", err)
	}
	for _, tc := range []struct {
		kind         string
		layers, want int
	}{
		{KindGRUGCN, 0, 2},
		{KindGRUGCN, 1, 1},
		{KindGRUGCN, 2, 2},
		{KindGRU, 0, 0},
		{KindGRU, 7, 0}, // ignored for the GRU baseline
	} {
		c := good
		c.Kind, c.Layers = tc.kind, tc.layers
		m, err := New(c)
		if err != nil {
			t.Fatalf("%s with layers %d: %v", tc.kind, tc.layers, err)
		}
		if got := c.GCNLayers(); got != tc.want {
			t.Errorf("%s with layers %d: GCNLayers() = %d, want %d", tc.kind, tc.layers, got, tc.want)
		}
		if (m.GCN == nil) != (tc.want == 0) || (m.GCN != nil && m.GCN.Layers() != tc.want) {
			t.Errorf("%s with layers %d: model GCN %v, want %d layers", tc.kind, tc.layers, m.GCN, tc.want)
		}
	}
}
