package gcn

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	d := m.RawMatrix().Data
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return m
}

// pathAdjacency returns D^-1/2 (A+I) D^-1/2 of a path graph on n nodes.
func pathAdjacency(n int) *mat.Dense {
	a := mat.NewDense(n, n, nil)
	deg := make([]float64, n)
	for i := 0; i < n; i++ {
		a.Set(i, i, 1)
		if i+1 < n {
			a.Set(i, i+1, 1)
			a.Set(i+1, i, 1)
		}
	}
	for i := 0; i < n; i++ {
		deg[i] = mat.Sum(a.RowView(i))
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a.Set(i, j, a.At(i, j)/sqrt(deg[i]*deg[j]))
		}
	}
	return a
}

func sqrt(x float64) float64 {
	z := x
	for i := 0; i < 60; i++ {
		z = (z + x/z) / 2
	}
	return z
}

// TestGradients checks the parameter and input gradients of one- and
// two-layer GCNs, with and without a gate on the skip, against central
// finite differences.
func TestGradients(t *testing.T) {
	const n, blocks, in, hidden, out = 5, 3, 4, 6, 4
	for _, tc := range []struct {
		layers int
		gated  bool
	}{{1, false}, {2, false}, {1, true}, {2, true}} {
		layers := tc.layers
		rng := rand.New(rand.NewPCG(11, 12))
		prop := Dense{A: pathAdjacency(n)}
		g := NewLayers(layers, in, hidden, out, rng)
		if tc.gated {
			g.EnableGate(rng)
			g.Gate.B.W.Set(0, 0, 0.3) // a gate well inside (0, 1), where its gradient is large
		}
		if got := g.Layers(); got != layers {
			t.Fatalf("NewLayers(%d): Layers() = %d", layers, got)
		}
		h := randDense(rng, n*blocks, in)
		w := randDense(rng, n*blocks, out)
		var dh *mat.Dense
		loss := func() float64 {
			var m mat.Dense
			m.MulElem(g.Forward(h, prop), w)
			return mat.Sum(&m)
		}
		grad := func() {
			nn.ZeroGrad(g.Params())
			g.Forward(h, prop)
			d, err := g.Backward(w, prop)
			if err != nil {
				t.Fatal(err)
			}
			dh = mat.DenseCopyOf(d)
		}
		if worst, err := nn.GradCheck(g.Params(), grad, loss, 1e-6, 1e-6, 0); err != nil {
			t.Errorf("%d layers, gated %v: %v (worst %.3g)", layers, tc.gated, err, worst)
		}
		grad()
		hp := &nn.Param{Name: "H", W: h, G: dh}
		if worst, err := nn.GradCheck([]*nn.Param{hp}, func() {}, loss, 1e-6, 1e-6, 0); err != nil {
			t.Errorf("%d layers, gated %v: input gradient: %v (worst %.3g)", layers, tc.gated, err, worst)
		}
	}
}

func TestLayers(t *testing.T) {
	const in, hidden, out = 3, 5, 2
	for _, tc := range []struct {
		layers int
		params []string
	}{
		{1, []string{"gcn.l1.W", "gcn.l1.b", "gcn.skip.W", "gcn.skip.b"}},
		{2, []string{"gcn.l1.W", "gcn.l1.b", "gcn.l2.W", "gcn.l2.b", "gcn.skip.W", "gcn.skip.b"}},
	} {
		g := NewLayers(tc.layers, in, hidden, out, rand.New(rand.NewPCG(1, 2)))
		if g.Layers() != tc.layers || (g.L2 == nil) != (tc.layers == 1) {
			t.Errorf("NewLayers(%d): Layers() = %d, L2 nil %t", tc.layers, g.Layers(), g.L2 == nil)
		}
		ps := g.Params()
		if len(ps) != len(tc.params) {
			t.Fatalf("%d layers: %d params, want %d", tc.layers, len(ps), len(tc.params))
		}
		for i, p := range ps {
			if p.Name != tc.params[i] {
				t.Errorf("%d layers: param %d is %s, want %s", tc.layers, i, p.Name, tc.params[i])
			}
		}
		if _, c := g.Forward(randDense(rand.New(rand.NewPCG(3, 4)), 4, in), Dense{A: pathAdjacency(4)}).Dims(); c != out {
			t.Errorf("%d layers: output width %d, want %d", tc.layers, c, out)
		}
	}
	// New is the two-layer GCN, drawn from rng as before NewLayers existed.
	a, b := New(in, hidden, out, rand.New(rand.NewPCG(5, 6))), NewLayers(2, in, hidden, out, rand.New(rand.NewPCG(5, 6)))
	for i, p := range a.Params() {
		if !mat.Equal(p.W, b.Params()[i].W) {
			t.Errorf("New and NewLayers(2) differ in %s", p.Name)
		}
	}
	for _, layers := range []int{-1, 0, 3} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewLayers(%d) did not panic", layers)
				}
			}()
			NewLayers(layers, in, hidden, out, rand.New(rand.NewPCG(1, 1)))
		}()
	}
}

// TestOneLayerReach checks that a one-layer GCN mixes only direct neighbours
// and a two-layer one reaches two hops.
func TestOneLayerReach(t *testing.T) {
	const n, in = 5, 3
	prop := Dense{A: pathAdjacency(n)}
	for _, layers := range []int{1, 2} {
		g := NewLayers(layers, in, 4, 2, rand.New(rand.NewPCG(7, 8)))
		h := randDense(rand.New(rand.NewPCG(9, 10)), n, in)
		z0 := mat.DenseCopyOf(g.Forward(h, prop))
		h.Set(2, 0, h.At(2, 0)+1) // perturb the middle node of the path
		z1 := g.Forward(h, prop)
		for i := 0; i < n; i++ {
			hops := i - 2
			if hops < 0 {
				hops = -hops
			}
			changed := !mat.Equal(z0.RowView(i), z1.RowView(i))
			if want := hops <= layers; changed != want {
				t.Errorf("%d layers: node %d at %d hops changed %t, want %t", layers, i, hops, changed, want)
			}
		}
	}
}

// TestBlocksAreIndependent checks that a snapshot's output depends only on
// its own block of rows.
func TestBlocksAreIndependent(t *testing.T) {
	const n = 4
	for _, layers := range []int{1, 2} {
		rng := rand.New(rand.NewPCG(1, 2))
		prop := Dense{A: pathAdjacency(n)}
		g := NewLayers(layers, 3, 5, 2, rng)
		h := randDense(rng, 2*n, 3)
		z1 := mat.DenseCopyOf(g.Forward(h, prop))
		for i := n; i < 2*n; i++ {
			for j := 0; j < 3; j++ {
				h.Set(i, j, h.At(i, j)+1)
			}
		}
		z2 := g.Forward(h, prop)
		for i := 0; i < n; i++ {
			for j := 0; j < 2; j++ {
				if z1.At(i, j) != z2.At(i, j) {
					t.Fatalf("%d layers: changing block 1 changed block 0 at (%d,%d)", layers, i, j)
				}
			}
		}
		if mat.Equal(z1.Slice(n, 2*n, 0, 2), z2.Slice(n, 2*n, 0, 2)) {
			t.Fatalf("%d layers: changing block 1 did not change its output", layers)
		}
	}
}

// TestDenseShapes: Dense.MulBlocks panics with mat.ErrShape, as pems.CSR
// does, on a batch that is not whole blocks of N rows and on a dst of
// another shape, instead of leaving rows of dst unwritten.
func TestDenseShapes(t *testing.T) {
	prop := Dense{A: pathAdjacency(3)}
	for _, tc := range []struct {
		name       string
		br, dr, dc int
	}{
		{"partial block", 4, 4, 2},
		{"dst short", 6, 3, 2},
		{"dst long", 3, 6, 2},
		{"dst narrow", 6, 6, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != mat.ErrShape {
					t.Errorf("recovered %v, want mat.ErrShape", r)
				}
			}()
			prop.MulBlocks(mat.NewDense(tc.dr, tc.dc, nil), mat.NewDense(tc.br, 2, nil))
		})
	}
}

func TestBackwardWithoutForward(t *testing.T) {
	for _, layers := range []int{1, 2} {
		g := NewLayers(layers, 2, 2, 2, rand.New(rand.NewPCG(1, 1)))
		if _, err := g.Backward(mat.NewDense(2, 2, nil), Dense{A: pathAdjacency(2)}); err == nil {
			t.Fatalf("%d layers: backward without forward accepted", layers)
		}
	}
}

func TestNumParams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][4]int{{1, 16, 16, 16}, {2, 16, 16, 16}, {2, 3, 5, 7}, {1, 3, 5, 7}} {
		n := 0
		for _, p := range NewLayers(s[0], s[1], s[2], s[3], rng).Params() {
			r, c := p.W.Dims()
			n += r * c
		}
		if got, ok := NumParams(s[0], s[1], s[2], s[3]); got != n || !ok {
			t.Errorf("NumParams%v = %d, %v; NewLayers has %d", s, got, ok, n)
		}
	}
	for _, s := range [][4]int{{0, 1, 1, 1}, {3, 1, 1, 1}, {2, 1 << 32, 1 << 32, 1}} {
		if _, ok := NumParams(s[0], s[1], s[2], s[3]); ok {
			t.Errorf("NumParams%v: ok", s)
		}
	}
}

// TestGate checks what a gate does: the skip reads g·H + (1−g)·Â·H row by
// row, g = σ(H·wg + bg), so that a gate open (a large bias) gives the
// GCN without a gate and a gate shut the neighbourhood's embedding alone;
// and that the gate's parameters follow the others and count in
// NumParamsGated.
func TestGate(t *testing.T) {
	const n, in, hidden, out = 4, 3, 5, 2
	rng := rand.New(rand.NewPCG(7, 8))
	prop := Dense{A: pathAdjacency(n)}
	h := randDense(rng, n, in)
	plain := NewLayers(2, in, hidden, out, rand.New(rand.NewPCG(1, 2)))
	gated := NewLayers(2, in, hidden, out, rand.New(rand.NewPCG(1, 2)))
	gated.EnableGate(rand.New(rand.NewPCG(3, 4)))
	zp := mat.DenseCopyOf(plain.Forward(h, prop))
	sk := mat.NewDense(n, out, nil)
	plain.Skip.Forward(sk, h)
	var ah mat.Dense
	ah.Mul(prop.A, h)
	for _, bias := range []float64{GateBias, -1e3, 1e3} {
		gated.Gate.B.W.Set(0, 0, bias)
		zg := gated.Forward(h, prop)
		for i := 0; i < n; i++ {
			pre := gated.Gate.B.W.At(0, 0)
			for k := 0; k < in; k++ {
				pre += h.At(i, k) * gated.Gate.W.W.At(k, 0)
			}
			g := nn.Sigmoid(pre)
			if got := gated.GateValues().At(i, 0); math.Abs(got-g) > 1e-12 {
				t.Fatalf("bias %v row %d: gate %v, want %v", bias, i, got, g)
			}
			for j := 0; j < out; j++ {
				mixed := plain.Skip.B.W.At(0, j)
				for k := 0; k < in; k++ {
					mixed += (g*h.At(i, k) + (1-g)*ah.At(i, k)) * plain.Skip.W.W.At(k, j)
				}
				want := zp.At(i, j) - sk.At(i, j) + mixed
				if math.Abs(zg.At(i, j)-want) > 1e-12 {
					t.Fatalf("bias %v row %d col %d: Z %v, want %v", bias, i, j, zg.At(i, j), want)
				}
				if bias == 1e3 && math.Abs(zg.At(i, j)-zp.At(i, j)) > 1e-12 {
					t.Fatalf("gate open, row %d col %d: Z %v, the GCN without a gate %v", i, j, zg.At(i, j), zp.At(i, j))
				}
			}
		}
	}
	if plain.GateValues() != nil {
		t.Error("a GCN without a gate reports gate values")
	}
	ps := gated.Params()
	if len(ps) != 8 || ps[6].Name != "gcn.gate.W" || ps[7].Name != "gcn.gate.b" {
		t.Errorf("gated params: %d, last %s", len(ps), ps[len(ps)-1].Name)
	}
	var count int
	for _, p := range ps {
		r, c := p.W.Dims()
		count += r * c
	}
	if want, ok := NumParamsGated(2, in, hidden, out, true); !ok || want != count {
		t.Errorf("NumParamsGated = %d, the GCN has %d", want, count)
	}
}
