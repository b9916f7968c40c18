package gru

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
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

func window(rng *rand.Rand, t, rows, in int) []*mat.Dense {
	xs := make([]*mat.Dense, t)
	for i := range xs {
		xs[i] = randDense(rng, rows, in)
	}
	return xs
}

func TestGradients(t *testing.T) {
	for _, tc := range []struct{ steps, rows, in, hidden int }{
		{1, 3, 2, 4},
		{5, 6, 3, 5},
		{12, 4, 1, 16},
		{3, 2*blockRows + 5, 2, 3}, // three blocks, the last one short
		{1, 1, 1, 1},               // one row, one step, one unit: only the kernels' tails
		{3, 1, 3, 2},               // one row
		{4, 7, 2, 1},               // one hidden unit
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.steps), 7))
		g := New(tc.in, tc.hidden, rng)
		xs := window(rng, tc.steps, tc.rows, tc.in)
		w := randDense(rng, tc.rows, tc.hidden)
		loss := func() float64 {
			h, err := g.Forward(xs)
			if err != nil {
				t.Fatal(err)
			}
			var m mat.Dense
			m.MulElem(h, w)
			return mat.Sum(&m)
		}
		grad := func() {
			nn.ZeroGrad(g.Params())
			loss()
			if err := g.Backward(w); err != nil {
				t.Fatal(err)
			}
		}
		if worst, err := nn.GradCheck(g.Params(), grad, loss, 1e-6, 1e-5, 0); err != nil {
			t.Errorf("steps=%d rows=%d in=%d hidden=%d: %v (worst %.3g)", tc.steps, tc.rows, tc.in, tc.hidden, err, worst)
		}
	}
}

// TestMatchesScalarCell checks the batched cell against a direct scalar
// transcription of the GRU equations.
func TestMatchesScalarCell(t *testing.T) {
	for _, rows := range []int{2, blockRows + 1} {
		testMatchesScalarCell(t, rows)
	}
}

func testMatchesScalarCell(t *testing.T, rows int) {
	rng := rand.New(rand.NewPCG(9, 9))
	in, H, steps := 2, 3, 4
	g := New(in, H, rng)
	xs := window(rng, steps, rows, in)
	got, err := g.Forward(xs)
	if err != nil {
		t.Fatal(err)
	}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	for i := 0; i < rows; i++ {
		h := make([]float64, H)
		for t := 0; t < steps; t++ {
			z, r, n := make([]float64, H), make([]float64, H), make([]float64, H)
			for j := 0; j < H; j++ {
				az, ar := g.B.W.At(0, j), g.B.W.At(0, H+j)
				for c := 0; c < in; c++ {
					az += xs[t].At(i, c) * g.Wx.W.At(c, j)
					ar += xs[t].At(i, c) * g.Wx.W.At(c, H+j)
				}
				for k := 0; k < H; k++ {
					az += h[k] * g.Uzr.W.At(k, j)
					ar += h[k] * g.Uzr.W.At(k, H+j)
				}
				z[j], r[j] = sig(az), sig(ar)
			}
			for j := 0; j < H; j++ {
				an := g.B.W.At(0, 2*H+j)
				for c := 0; c < in; c++ {
					an += xs[t].At(i, c) * g.Wx.W.At(c, 2*H+j)
				}
				for k := 0; k < H; k++ {
					an += r[k] * h[k] * g.Un.W.At(k, j)
				}
				n[j] = math.Tanh(an)
			}
			for j := 0; j < H; j++ {
				h[j] = (1-z[j])*h[j] + z[j]*n[j]
			}
		}
		for j := 0; j < H; j++ {
			if d := math.Abs(got.At(i, j) - h[j]); d > 1e-12 {
				t.Fatalf("row %d dim %d: batched %g, scalar %g", i, j, got.At(i, j), h[j])
			}
		}
	}
}

// TestBlocksAgree checks what cutting the batch into blocks must not change:
// the gradients are the same bit for bit on one core and on several (blocks
// are summed in block order), a row's output does not depend on the other
// rows of its batch, and Backward uses the window Forward saw even if the
// caller has since overwritten it.
func TestBlocksAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const in, H, steps, rows = 3, 5, 6, 3*blockRows + 17
	g := New(in, H, rng)
	xs := window(rng, steps, rows, in)
	dh := randDense(rng, rows, H)
	run := func(procs int, xs []*mat.Dense) (*mat.Dense, []*mat.Dense) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		nn.ZeroGrad(g.Params())
		h, err := g.Forward(xs)
		if err != nil {
			t.Fatal(err)
		}
		h = mat.DenseCopyOf(h)
		for _, x := range xs {
			x.Zero() // Backward must not read the window again
		}
		if err := g.Backward(dh); err != nil {
			t.Fatal(err)
		}
		var gs []*mat.Dense
		for _, p := range g.Params() {
			gs = append(gs, mat.DenseCopyOf(p.G))
		}
		return h, gs
	}
	clone := func(xs []*mat.Dense) []*mat.Dense {
		out := make([]*mat.Dense, len(xs))
		for i, x := range xs {
			out[i] = mat.DenseCopyOf(x)
		}
		return out
	}
	h1, g1 := run(1, clone(xs))
	h4, g4 := run(4, clone(xs))
	if !mat.Equal(h1, h4) {
		t.Error("outputs differ between 1 and 4 cores")
	}
	for i := range g1 {
		if !mat.Equal(g1[i], g4[i]) {
			t.Errorf("%s: gradients differ between 1 and 4 cores", g.Params()[i].Name)
		}
	}
	// The last 17 rows alone, a batch of one short block.
	tail := make([]*mat.Dense, steps)
	for i, x := range xs {
		tail[i] = mat.DenseCopyOf(x.Slice(rows-17, rows, 0, in))
	}
	ht, err := g.Forward(tail)
	if err != nil {
		t.Fatal(err)
	}
	if want := h1.Slice(rows-17, rows, 0, H); !mat.EqualApprox(ht, want, 1e-14) {
		t.Errorf("rows alone give\n%v\nwant\n%v", mat.Formatted(ht), mat.Formatted(want))
	}
}

// TestBatchSizesAlternate runs one GRU on batches of changing sizes, as
// training and validation do, and checks every output and gradient against
// a GRU that has only ever seen that batch, so that no block kept from an
// earlier batch leaks into a later one.
func TestBatchSizesAlternate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const in, H, steps = 2, 4, 5
	g := New(in, H, rng)
	// Smaller batches reuse a block's arrays, cut to their size; a larger
	// one gets new arrays.
	for _, rows := range []int{3*blockRows + 40, 45, 5 * blockRows, 3*blockRows + 40, blockRows, 6, 3, 6, 1, 7, 2*blockRows + 1} {
		xs := window(rng, steps, rows, in)
		dh := randDense(rng, rows, H)
		fresh := New(in, H, rng)
		if err := nn.Copy(fresh.Params(), g.Params()); err != nil {
			t.Fatal(err)
		}
		var outs [2]*mat.Dense
		var grads [2][]*mat.Dense
		for i, m := range []*GRU{g, fresh} {
			nn.ZeroGrad(m.Params())
			h, err := m.Forward(xs)
			if err != nil {
				t.Fatal(err)
			}
			outs[i] = mat.DenseCopyOf(h)
			if err := m.Backward(dh); err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params() {
				grads[i] = append(grads[i], mat.DenseCopyOf(p.G))
			}
		}
		if !mat.Equal(outs[0], outs[1]) {
			t.Errorf("rows %d: output differs from a fresh GRU's", rows)
		}
		for i := range grads[0] {
			if !mat.Equal(grads[0][i], grads[1][i]) {
				t.Errorf("rows %d: gradient of %s differs from a fresh GRU's", rows, g.Params()[i].Name)
			}
		}
	}
}

// TestEncodeMatchesForward checks that Encode, which cuts the batch by the
// number of cores, gives Forward's embeddings bit for bit for every batch
// size and core count, that Backward refuses to follow it, and that blocks
// Encode re-cut leave the next Forward and Backward exactly as a fresh
// GRU's.
func TestEncodeMatchesForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const in, H, steps = 3, 16, 12
	g := New(in, H, rng)
	fresh := New(in, H, rng)
	if err := nn.Copy(fresh.Params(), g.Params()); err != nil {
		t.Fatal(err)
	}
	for _, rows := range []int{1, 6, 31, 33, 64, 156, 170, 307, 3*blockRows + 17} {
		xs := window(rng, steps, rows, in)
		dh := randDense(rng, rows, H)
		want, err := fresh.Forward(xs)
		if err != nil {
			t.Fatal(err)
		}
		want = mat.DenseCopyOf(want)
		nn.ZeroGrad(fresh.Params())
		if err := fresh.Backward(dh); err != nil {
			t.Fatal(err)
		}
		for _, workers := range []int{1, 2, 3, 16} {
			h, err := g.encode(xs, workers)
			if err != nil {
				t.Fatal(err)
			}
			if !mat.Equal(h, want) {
				t.Errorf("rows %d, %d workers: Encode differs from Forward", rows, workers)
			}
			if err := g.Backward(dh); err == nil {
				t.Errorf("rows %d, %d workers: Backward after Encode accepted", rows, workers)
			}
		}
		nn.ZeroGrad(g.Params())
		if _, err := g.Forward(xs); err != nil {
			t.Fatal(err)
		}
		if err := g.Backward(dh); err != nil {
			t.Fatal(err)
		}
		for i, p := range g.Params() {
			if !mat.Equal(p.G, fresh.Params()[i].G) {
				t.Errorf("rows %d: after Encode, the gradient of %s differs from a fresh GRU's", rows, p.Name)
			}
		}
	}
}

// TestEncodeWidth checks how Encode cuts batches: one block per core of
// nearly equal width, a multiple of 8, at most blockRows, and no split of
// batches too small to repay a goroutine.
func TestEncodeWidth(t *testing.T) {
	for _, tc := range []struct{ rows, workers, want int }{
		{1, 2, 8},
		{6, 2, 8},      // a cold forecast's six windows: one block
		{40, 2, 40},    // too small to split
		{64, 2, 32},    // two blocks of 32
		{156, 2, 80},   // SZ-taxi's slot: 80 + 76, not 128 + 28
		{170, 2, 88},   // PeMS08's: 88 + 82
		{307, 2, 80},   // PeMS04's: four blocks, two per core
		{307, 1, 104},  // one core: three blocks, as Forward, evened out
		{1000, 2, 128}, // eight blocks, none wider than blockRows
		{1000, 16, 64},
	} {
		w := encodeWidth(tc.rows, tc.workers)
		if w != tc.want {
			t.Errorf("encodeWidth(%d, %d) = %d, want %d", tc.rows, tc.workers, w, tc.want)
		}
		if w%8 != 0 || w > blockRows {
			t.Errorf("encodeWidth(%d, %d) = %d: not a multiple of 8 at most %d", tc.rows, tc.workers, w, blockRows)
		}
	}
}

// TestSmallBatchAllocatesNothing: batches of a few rows (the streaming
// service's embeddings, a forecast computed cold) reuse the arrays of the
// largest batch seen, whatever their size.
func TestSmallBatchAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const in, H, steps = 3, 16, 12
	g := New(in, H, rng)
	small, smaller := window(rng, steps, 6, in), window(rng, steps, 4, in)
	if _, err := g.Forward(small); err != nil {
		t.Fatal(err)
	}
	i := 0
	if n := testing.AllocsPerRun(100, func() {
		xs := small
		if i%2 == 1 {
			xs = smaller
		}
		i++
		if _, err := g.Forward(xs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per forward pass of 4 or 6 rows, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		xs := small
		if i%2 == 1 {
			xs = smaller
		}
		i++
		if _, err := g.Encode(xs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per Encode of 4 or 6 rows, want 0", n)
	}
}

func TestForwardErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	g := New(2, 4, rng)
	if _, err := g.Forward(nil); err == nil {
		t.Error("empty window accepted")
	}
	if _, err := g.Forward([]*mat.Dense{mat.NewDense(3, 2, nil), mat.NewDense(4, 2, nil)}); err == nil {
		t.Error("ragged window accepted")
	}
	if _, err := g.Forward([]*mat.Dense{mat.NewDense(3, 5, nil)}); err == nil {
		t.Error("wrong input width accepted")
	}
	if _, err := g.Forward([]*mat.Dense{{}}); err == nil {
		t.Error("window without rows accepted")
	}
	if err := New(2, 4, rng).Backward(mat.NewDense(3, 4, nil)); err == nil {
		t.Error("backward without forward accepted")
	}
}

func BenchmarkForwardBackward(b *testing.B) {
	// One PeMS04-sized batch: 32 snapshots × 307 nodes, T=12, 3 channels, d=16.
	rng := rand.New(rand.NewPCG(1, 1))
	g := New(3, 16, rng)
	xs := window(rng, 12, 32*307, 3)
	dh := randDense(rng, 32*307, 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Forward(xs); err != nil {
			b.Fatal(err)
		}
		if err := g.Backward(dh); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode compares Encode with Forward on the streaming service's
// batches: every sensor's window of one slot (SZ-taxi 156, PeMS08 170,
// PeMS04 307 rows; T=12, 3 channels, d=16), on all the cores given.
func BenchmarkEncode(b *testing.B) {
	for _, rows := range []int{156, 170, 307} {
		rng := rand.New(rand.NewPCG(1, 1))
		g := New(3, 16, rng)
		xs := window(rng, 12, rows, 3)
		for _, m := range []struct {
			name string
			f    func([]*mat.Dense) (*mat.Dense, error)
		}{{"Forward", g.Forward}, {"Encode", g.Encode}} {
			b.Run(fmt.Sprintf("rows=%d/%s", rows, m.name), func(b *testing.B) {
				for b.Loop() {
					if _, err := m.f(xs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
	}
}

func TestNumParams(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][2]int{{1, 1}, {3, 16}, {5, 16}, {7, 2}} {
		n := 0
		for _, p := range New(s[0], s[1], rng).Params() {
			r, c := p.W.Dims()
			n += r * c
		}
		if got, ok := NumParams(s[0], s[1]); got != n || !ok {
			t.Errorf("NumParams(%d, %d) = %d, %v; New has %d", s[0], s[1], got, ok, n)
		}
	}
	if _, ok := NumParams(3, 1<<32); ok {
		t.Errorf("NumParams(3, 2³²) fits in an int")
	}
}
