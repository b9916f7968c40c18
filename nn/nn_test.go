package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	for i := range m.RawMatrix().Data {
		m.RawMatrix().Data[i] = rng.NormFloat64()
	}
	return m
}

// dot returns Σ a⊙b, the linear functional used as a test loss.
func dot(a, b *mat.Dense) float64 { return mat.Sum(mulElem(a, b)) }

func mulElem(a, b *mat.Dense) *mat.Dense {
	var m mat.Dense
	m.MulElem(a, b)
	return &m
}

func TestLinearGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	l := NewLinear("lin", 4, 3, rng)
	x := randDense(rng, 5, 4)
	w := randDense(rng, 5, 3)
	out := mat.NewDense(5, 3, nil)
	dx := mat.NewDense(5, 4, nil)
	loss := func() float64 { l.Forward(out, x); return dot(out, w) }
	grad := func() { ZeroGrad(l.Params()); loss(); l.Backward(dx, x, w) }
	if worst, err := GradCheck(l.Params(), grad, loss, 1e-6, 1e-6, 0); err != nil {
		t.Fatalf("%v (worst %.3g)", err, worst)
	}
	// Input gradient against finite differences too.
	grad()
	xp := &Param{Name: "x", W: x, G: mat.DenseCopyOf(dx)}
	if _, err := GradCheck([]*Param{xp}, func() {}, loss, 1e-6, 1e-6, 0); err != nil {
		t.Fatal(err)
	}
}

// TestMLPGradients checks an MLP's parameter and input gradients against
// finite differences, on a few rows, on one, and on enough rows that Gemm
// cuts the products into chunks (gemmRows) and Backward shares the
// softplus gradient out over the cores.
func TestMLPGradients(t *testing.T) {
	for _, tc := range []struct{ rows, in, hidden, out, maxPerParam int }{
		{7, 6, 8, 3, 0},
		{1, 1, 1, 1, 0},
		{2*gemmChunk + 100, 3, 5, 2, 60},
	} {
		rng := rand.New(rand.NewPCG(3, 4))
		m := NewMLP("mlp", tc.in, tc.hidden, tc.out, rng)
		x := randDense(rng, tc.rows, tc.in)
		w := randDense(rng, tc.rows, tc.out)
		var dx *mat.Dense
		loss := func() float64 { return dot(m.Forward(x), w) }
		grad := func() { ZeroGrad(m.Params()); m.Forward(x); dx = mat.DenseCopyOf(m.Backward(w)) }
		if worst, err := GradCheck(m.Params(), grad, loss, 1e-6, 1e-6, 0); err != nil {
			t.Errorf("%d rows: %v (worst %.3g)", tc.rows, err, worst)
		}
		grad()
		xp := &Param{Name: "x", W: x, G: dx}
		if _, err := GradCheck([]*Param{xp}, func() {}, loss, 1e-6, 1e-6, tc.maxPerParam); err != nil {
			t.Errorf("%d rows: %v", tc.rows, err)
		}
	}
}

func TestGradCheckCatchesWrongGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := NewLinear("lin", 3, 2, rng)
	x := randDense(rng, 4, 3)
	w := randDense(rng, 4, 2)
	out := mat.NewDense(4, 2, nil)
	loss := func() float64 { l.Forward(out, x); return dot(out, w) }
	grad := func() {
		ZeroGrad(l.Params())
		loss()
		l.Backward(nil, x, w)
		l.W.G.Scale(1.01, l.W.G) // a 1% error must be caught
	}
	if _, err := GradCheck(l.Params(), grad, loss, 1e-6, 1e-4, 0); err == nil {
		t.Fatal("a wrong gradient passed the check")
	}
}

// TestGradCheckCatchesNaN: a NaN or infinite gradient, analytic or
// numeric, is an error, not a pass (its relative error is NaN, which no
// comparison with tol fails).
func TestGradCheckCatchesNaN(t *testing.T) {
	for _, tc := range []struct {
		name     string
		analytic float64
		loss     func(w float64) float64
	}{
		{"NaN analytic", math.NaN(), func(w float64) float64 { return w }},
		{"infinite analytic", math.Inf(1), func(w float64) float64 { return w }},
		{"NaN loss", 1, func(float64) float64 { return math.NaN() }},
		{"infinite loss", 1, func(w float64) float64 { return w / 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewParam("p", 1, 3)
			grad := func() { p.G.Set(0, 0, 1); p.G.Set(0, 1, tc.analytic); p.G.Set(0, 2, 1) }
			// The loss is w0 + w2 + f(w1): only entry 1 is wrong.
			loss := func() float64 { return p.W.At(0, 0) + p.W.At(0, 2) + tc.loss(p.W.At(0, 1)) }
			worst, err := GradCheck([]*Param{p}, grad, loss, 1e-6, 1e-6, 0)
			if err == nil {
				t.Fatalf("passed, worst %v", worst)
			}
			if !math.IsNaN(worst) {
				t.Errorf("worst %v, want NaN", worst)
			}
		})
	}
}

// TestGradCheckRefusesViews: a parameter whose values or gradients are a
// view (row stride above the width) or of two shapes is refused, naming
// it, rather than perturbed by raw index out of step with its gradients.
func TestGradCheckRefusesViews(t *testing.T) {
	view := func() *Param {
		p := NewParam("view", 2, 2)
		p.W = mat.NewDense(2, 3, nil).Slice(0, 2, 0, 2).(*mat.Dense)
		return p
	}
	shapes := func() *Param {
		p := NewParam("shapes", 2, 2)
		p.G = mat.NewDense(1, 4, nil)
		return p
	}
	for _, p := range []*Param{view(), shapes()} {
		ran := false
		_, err := GradCheck([]*Param{p}, func() { ran = true }, func() float64 { return 0 }, 1e-6, 1e-6, 0)
		if err == nil || !strings.Contains(err.Error(), p.Name) || ran {
			t.Errorf("%s: err %v (grad run: %v), want an error naming it before anything runs", p.Name, err, ran)
		}
	}
}

// TestGradCheckSubset: with maxPerParam > 0, GradCheck checks at most
// maxPerParam entries of each parameter, spread over all of it, and every
// entry of a smaller one.
func TestGradCheckSubset(t *testing.T) {
	for _, tc := range []struct{ size, max, want int }{
		{10, 0, 10},
		{10, 10, 10},
		{10, 20, 10},
		{10, 3, 3},
		{101, 100, 100},
		{199, 100, 100},
		{1000, 7, 7},
	} {
		p := NewParam("p", 1, tc.size)
		seen := map[int]bool{}
		loss := func() float64 {
			for j, v := range p.W.RawMatrix().Data {
				if v != 0 {
					seen[j] = true
				}
			}
			return 0
		}
		if _, err := GradCheck([]*Param{p}, func() {}, loss, 1e-6, 1e-6, tc.max); err != nil {
			t.Fatal(err)
		}
		last := -1
		for j := range seen {
			last = max(last, j)
		}
		if len(seen) != tc.want || last < tc.size-(tc.size+tc.want-1)/tc.want {
			t.Errorf("%d entries, maxPerParam %d: checked %d up to entry %d, want %d spread over all", tc.size, tc.max, len(seen), last, tc.want)
		}
	}
}

func TestSoftplusSigmoid(t *testing.T) {
	for _, tc := range []struct{ x, sp, sg float64 }{
		{0, math.Ln2, 0.5},
		{100, 100, 1},
		{-100, math.Exp(-100), math.Exp(-100)},
		{1, math.Log1p(math.E), 1 / (1 + math.Exp(-1))},
	} {
		if got := Softplus(tc.x); math.Abs(got-tc.sp) > 1e-12*math.Max(1, math.Abs(tc.sp)) {
			t.Errorf("Softplus(%g) = %g, want %g", tc.x, got, tc.sp)
		}
		if got := Sigmoid(tc.x); math.Abs(got-tc.sg) > 1e-12 {
			t.Errorf("Sigmoid(%g) = %g, want %g", tc.x, got, tc.sg)
		}
	}
}

// softplusLog1p is softplus by math.Log1p: the reference Softplus is held
// to and the speed it is measured against.
func softplusLog1p(x float64) float64 {
	return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}

// TestSoftplusAccuracy holds Softplus to softplus by math.Log1p of the
// correctly rounded e^-|x| (expRef), so that the reference does not carry
// math.Exp's error of up to two ulps. The bound is Goldberg's form's (4e-16
// relative, measured against the same e^-|x|) plus exp's one ulp.
func TestSoftplusAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	xs := []float64{0, 1e-300, -1e-300, 1e-17, -1e-17, 36.7, -36.7, 40, -40, 41, -41, 700, -700, -745, -800}
	for range 20000 {
		xs = append(xs, 60*(2*rng.Float64()-1), 3*rng.NormFloat64())
	}
	var worst float64
	for _, x := range xs {
		got, want := Softplus(x), max(x, 0)+math.Log1p(expRef(-math.Abs(x)))
		d := math.Abs(got - want)
		if d > (4e-16+0x1p-52)*want {
			t.Fatalf("Softplus(%g) = %.17g, want %.17g (relative error %.2g)", x, got, want, d/want)
		}
		if want > 0 {
			worst = max(worst, d/want)
		}
	}
	t.Logf("%d arguments, relative error at most %.2g", len(xs), worst)
	for _, tc := range []struct{ x, want float64 }{{math.Inf(1), math.Inf(1)}, {math.Inf(-1), 0}} {
		if got := Softplus(tc.x); got != tc.want {
			t.Errorf("Softplus(%g) = %g, want %g", tc.x, got, tc.want)
		}
	}
	if got := Softplus(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Softplus(NaN) = %g, want NaN", got)
	}
}

// BenchmarkSoftplus compares Softplus with softplusLog1p on inputs like
// pre-activations.
func BenchmarkSoftplus(b *testing.B) {
	benchElementwise(b, []namedFunc{{"log", Softplus}, {"log1p", softplusLog1p}})
}

// namedFunc is a scalar function under a benchmark's name.
type namedFunc struct {
	name string
	f    func(float64) float64
}

// benchElementwise runs each function over 4096 arguments drawn from
// N(0, 2²), like pre-activations, as a sub-benchmark of its name.
func benchElementwise(b *testing.B, fs []namedFunc) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := make([]float64, 4096)
	for i := range xs {
		xs[i] = 2 * rng.NormFloat64()
	}
	out := make([]float64, len(xs))
	for _, c := range fs {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				for i, x := range xs {
					out[i] = c.f(x)
				}
			}
		})
	}
}

func TestAdamMinimisesQuadratic(t *testing.T) {
	p := NewParam("p", 1, 2)
	p.W.Set(0, 0, 3)
	p.W.Set(0, 1, -2)
	opt := NewAdam(0.05, 0)
	for i := 0; i < 2000; i++ {
		// loss = (w0-1)^2 + (w1+0.5)^2
		p.G.Set(0, 0, 2*(p.W.At(0, 0)-1))
		p.G.Set(0, 1, 2*(p.W.At(0, 1)+0.5))
		if err := opt.Step([]*Param{p}); err != nil {
			t.Fatal(err)
		}
	}
	if math.Abs(p.W.At(0, 0)-1) > 1e-3 || math.Abs(p.W.At(0, 1)+0.5) > 1e-3 {
		t.Fatalf("adam ended at %v, want (1, -0.5)", mat.Formatted(p.W))
	}
}

func TestAdamFirstStepIsLR(t *testing.T) {
	// With bias correction, Adam's first step moves each weight by lr·sign(g).
	p := NewParam("p", 1, 3)
	p.G.Set(0, 0, 5)
	p.G.Set(0, 1, -0.001)
	p.G.Set(0, 2, 0)
	opt := NewAdam(0.1, 0)
	if err := opt.Step([]*Param{p}); err != nil {
		t.Fatal(err)
	}
	want := []float64{-0.1, 0.1, 0}
	for j, w := range want {
		if got := p.W.At(0, j); math.Abs(got-w) > 1e-6 {
			t.Errorf("w[%d] = %g, want %g", j, got, w)
		}
	}
}

// TestAdamStateMismatch: a state that does not match the parameters is an
// error, and Step then changes nothing, whichever parameter the mismatch
// is in: no parameter updated, no moment moved, T not counted.
func TestAdamStateMismatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(a *Adam)
	}{
		{"M short", func(a *Adam) { a.M[1] = mat.NewDense(1, 2, nil) }},
		{"V short", func(a *Adam) { a.V[1] = mat.NewDense(1, 2, nil) }},
		{"V missing", func(a *Adam) { a.V = a.V[:1] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := []*Param{NewParam("p", 2, 2), NewParam("q", 1, 3)}
			for _, p := range ps {
				p.G.Apply(func(i, j int, _ float64) float64 { return float64(i + j + 1) }, p.G)
			}
			opt := NewAdam(0.1, 0.01)
			if err := opt.Step(ps); err != nil {
				t.Fatal(err)
			}
			tc.spoil(opt)
			w0, m0, v0 := mat.DenseCopyOf(ps[0].W), mat.DenseCopyOf(opt.M[0]), mat.DenseCopyOf(opt.V[0])
			if err := opt.Step(ps); err == nil {
				t.Fatal("no error")
			}
			if opt.T != 1 || !mat.Equal(ps[0].W, w0) || !mat.Equal(opt.M[0], m0) || !mat.Equal(opt.V[0], v0) {
				t.Errorf("the failed step changed the state: T %d, p %v, m %v, v %v", opt.T, ps[0].W.RawMatrix().Data, opt.M[0].RawMatrix().Data, opt.V[0].RawMatrix().Data)
			}
		})
	}
}

func TestClipGradNorm(t *testing.T) {
	p := NewParam("p", 1, 2)
	p.G.Set(0, 0, 3)
	p.G.Set(0, 1, 4)
	if n := ClipGradNorm([]*Param{p}, 1); n != 5 {
		t.Fatalf("norm %g, want 5", n)
	}
	if got := math.Hypot(p.G.At(0, 0), p.G.At(0, 1)); math.Abs(got-1) > 1e-12 {
		t.Fatalf("clipped norm %g, want 1", got)
	}
	if n := ClipGradNorm([]*Param{p}, 10); math.Abs(n-1) > 1e-12 || math.Abs(p.G.At(0, 0)-0.6) > 1e-12 {
		t.Fatalf("clipping below the threshold changed the gradient")
	}
}

// TestClipGradNormHuge clips finite gradients whose sum of squares
// overflows (a component above 1.3e154): the norm is still finite, and
// clipping must scale them down to it rather than return +Inf and zero
// them, losing the step's direction.
func TestClipGradNormHuge(t *testing.T) {
	p := NewParam("p", 1, 2)
	p.G.Set(0, 0, 3e200)
	p.G.Set(0, 1, -4e200)
	if n := ClipGradNorm([]*Param{p}, 1); math.Abs(n-5e200) > 1e-12*5e200 {
		t.Fatalf("norm %g, want 5e200", n)
	}
	if g0, g1 := p.G.At(0, 0), p.G.At(0, 1); math.Abs(g0-0.6) > 1e-12 || math.Abs(g1+0.8) > 1e-12 {
		t.Fatalf("clipped gradient (%g, %g), want (0.6, -0.8)", g0, g1)
	}
	// An infinite gradient has an infinite norm.
	p.G.Set(0, 0, math.Inf(1))
	if n := ClipGradNorm([]*Param{p}, 1); !math.IsInf(n, 1) {
		t.Fatalf("norm %g with an infinite gradient, want +Inf", n)
	}
}

func BenchmarkMLPForwardBackward(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := NewMLP("mlp", 16, 16, 3, rng)
	x := randDense(rng, 32*307, 16)
	dy := randDense(rng, 32*307, 3)
	b.ReportAllocs()
	for b.Loop() {
		m.Forward(x)
		m.Backward(dy)
	}
}

// TestGemmRowsMatchesBLAS checks the chunked product against gonum's for
// every transpose combination and for beta 0 and 1.
func TestGemmRowsMatchesBLAS(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 5*gemmChunk + 17
	for _, tc := range []struct {
		ta, tb bool
		ar, ac int
		br, bc int
	}{
		{false, false, n, 7, 7, 5},
		{false, true, n, 7, 5, 7},
		{true, false, n, 7, n, 5},
		{true, true, n, 3, 4, n},
	} {
		a, b := randDense(rng, tc.ar, tc.ac), randDense(rng, tc.br, tc.bc)
		cr, cc := tc.ar, tc.bc
		if tc.ta {
			cr = tc.ac
		}
		if tc.tb {
			cc = tc.br
		}
		for _, beta := range []float64{0, 1} {
			c0 := randDense(rng, cr, cc)
			want := mat.DenseCopyOf(c0)
			var ab mat.Dense
			var A, B mat.Matrix = a, b
			if tc.ta {
				A = a.T()
			}
			if tc.tb {
				B = b.T()
			}
			ab.Mul(A, B)
			want.Scale(beta, want)
			ab.Scale(0.5, &ab)
			want.Add(want, &ab)
			got := mat.DenseCopyOf(c0)
			Gemm(tc.ta, tc.tb, 0.5, a, b, beta, got)
			if !mat.EqualApprox(got, want, 1e-9) {
				t.Errorf("transA=%v transB=%v beta=%g: chunked product differs", tc.ta, tc.tb, beta)
			}
		}
	}
}

// valuesOf returns the number of values in ps.
func valuesOf(ps []*Param) int {
	n := 0
	for _, p := range ps {
		r, c := p.W.Dims()
		n += r * c
	}
	return n
}

func TestCountParams(t *testing.T) {
	for _, c := range []struct {
		shapes [][]int
		want   int
		ok     bool
	}{
		{nil, 0, true},
		{[][]int{{}}, 1, true}, // a scalar
		{[][]int{{3, 4}, {4}}, 16, true},
		{[][]int{{2, 3, 5}, {0, 7}}, 30, true},
		{[][]int{{-1, 4}}, 0, false},
		{[][]int{{1 << 40, 1 << 30}}, 0, false},                        // one product overflows
		{[][]int{{math.MaxInt / 2}, {math.MaxInt / 2}, {2}}, 0, false}, // the sum overflows
		{[][]int{{1 << 62}, {1 << 61}, {1 << 61}}, 0, false},
	} {
		got, ok := CountParams(c.shapes...)
		if got != c.want || ok != c.ok {
			t.Errorf("CountParams(%v) = %d, %v; want %d, %v", c.shapes, got, ok, c.want, c.ok)
		}
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range [][3]int{{1, 1, 1}, {16, 16, 3}, {5, 2, 7}} {
		got, ok := MLPParams(s[0], s[1], s[2])
		if want := valuesOf(NewMLP("m", s[0], s[1], s[2], rng).Params()); got != want || !ok {
			t.Errorf("MLPParams%v = %d, %v; NewMLP has %d", s, got, ok, want)
		}
	}
}

// TestMLPForwardAllocatesNothing: once its buffers are sized, a forward pass
// of a few rows (a forecast's decoder) allocates nothing, on any number of
// cores.
func TestMLPForwardAllocatesNothing(t *testing.T) {
	m := NewMLP("m", 16, 16, 3, rand.New(rand.NewPCG(1, 1)))
	x := mat.NewDense(1, 16, nil)
	m.Forward(x)
	if n := testing.AllocsPerRun(100, func() { m.Forward(x) }); n != 0 {
		t.Errorf("%v allocations per forward pass of one row, want 0", n)
	}
}

// TestRowVectorShapes: AddRowVector and AddColSums panic on a vector that
// is not 1×(m's columns), rather than read or write a wider one in part.
func TestRowVectorShapes(t *testing.T) {
	m := mat.NewDense(2, 3, []float64{1, 2, 3, 4, 5, 6})
	for _, tc := range []struct {
		name string
		r, c int
	}{
		{"wider", 1, 4},
		{"narrower", 1, 2},
		{"two rows", 2, 3},
	} {
		for _, f := range []struct {
			name string
			add  func(v *mat.Dense)
		}{
			{"AddRowVector", func(v *mat.Dense) { AddRowVector(mat.DenseCopyOf(m), v) }},
			{"AddColSums", func(v *mat.Dense) { AddColSums(v, m) }},
		} {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), f.name) {
						t.Errorf("recovered %v, want a panic naming %s", r, f.name)
					}
				}()
				f.add(mat.NewDense(tc.r, tc.c, nil))
			})
		}
	}
	// 1×3 is right for both.
	v := mat.NewDense(1, 3, []float64{1, 1, 1})
	AddColSums(v, m)
	if want := []float64{6, 8, 10}; !slices.Equal(v.RawRowView(0), want) {
		t.Errorf("AddColSums gave %v, want %v", v.RawRowView(0), want)
	}
}

// TestMLPBackwardMisuse: Backward without a Forward, or with a gradient
// of another shape than the last output, panics saying so, not on a nil
// pointer or an index deep in a kernel.
func TestMLPBackwardMisuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		name    string
		forward bool
		r, c    int
		want    string
	}{
		{"no forward", false, 3, 2, "before any Forward"},
		{"rows", true, 4, 2, "4×2 gradient after a Forward of 3 rows"},
		{"columns", true, 3, 5, "3×5 gradient"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMLP("m", 4, 5, 2, rng)
			if tc.forward {
				m.Forward(mat.NewDense(3, 4, nil))
			}
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), tc.want) {
					t.Errorf("recovered %v, want a panic with %q", r, tc.want)
				}
			}()
			m.Backward(mat.NewDense(tc.r, tc.c, nil))
		})
	}
}
