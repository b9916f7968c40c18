package nn

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// activationInputs returns arguments for the activations: normal ones of
// several spreads, wide uniform ones, and the edges of every branch of
// Sigmoid, Tanh, Softplus and exp (where e^−|x| leaves 1+e at 1, where 1+e
// is √2, past 40), each exactly and one ulp either side, in a random
// order so that every position within a four meets them.
func activationInputs(rng *rand.Rand) []float64 {
	return activationInputsWith(rng, rng.NormFloat64)
}

// activationInputsWith is activationInputs with spreads of draws of
// standard, rather than of rng.NormFloat64: TestGoldenBits draws them
// uniformly, since NormFloat64 calls math.Log and math.Exp in its rare
// branches, whose last bits differ between machines, and would draw
// other inputs elsewhere.
func activationInputsWith(rng *rand.Rand, standard func() float64) []float64 {
	var xs []float64
	for _, sd := range []float64{0.3, 2, 10, 300} {
		for range 4000 {
			xs = append(xs, standard()*sd)
		}
	}
	for range 4000 {
		xs = append(xs, (2*rng.Float64()-1)*800)
	}
	for _, e := range []float64{0, 0.625, 36.7, 37.5, 40, 44, 44.01, 708, 709, 709.78, 745.2, 1e-300, 5e-324, 1e-8, math.Log(math.Sqrt2 - 1)} {
		for _, v := range []float64{e, math.Nextafter(e, math.Inf(1)), math.Nextafter(e, math.Inf(-1))} {
			xs = append(xs, v, -v)
		}
	}
	xs = append(xs, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.MaxFloat64)
	rng.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	return xs
}

// sliceActivations pairs each activation over slices with its scalar form.
var sliceActivations = []struct {
	name string
	to   func(dst, x []float64)
	f    func(float64) float64
}{
	{"Sigmoid", SigmoidTo, Sigmoid},
	{"Tanh", TanhTo, Tanh},
	{"Softplus", SoftplusTo, Softplus},
}

// TestActivationsTo checks SigmoidTo, TanhTo and SoftplusTo against
// Sigmoid, Tanh and Softplus
// bit for bit (signs of zero and NaN included) on activationInputs, over
// slices of every length modulo 4; where the machine has AVX2 this is the
// assembly against the Go. The inputs come shuffled, where most fours mix
// the branches, and sorted by magnitude, where most fours keep to one
// (tanh4 then takes one branch alone).
func TestActivationsTo(t *testing.T) {
	if !haveAVX2 {
		t.Log("no AVX2: SigmoidTo, TanhTo and SoftplusTo run in Go")
	}
	shuffled := activationInputs(rand.New(rand.NewPCG(5, 6)))
	sorted := slices.Clone(shuffled)
	slices.SortFunc(sorted, func(a, b float64) int { return cmp.Compare(math.Abs(a), math.Abs(b)) })
	for _, tc := range sliceActivations {
		for i := range 8 {
			xs, cut := shuffled, i%4
			if i >= 4 {
				xs = sorted
			}
			x := xs[cut:]
			dst := make([]float64, len(x)+1)
			dst[len(x)] = 42
			tc.to(dst, x)
			for i, v := range x {
				want := tc.f(v)
				if got := dst[i]; math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
					t.Fatalf("%sTo: element %d of %d, argument %v (%#x): %v (%#x), %s gives %v (%#x)",
						tc.name, i, len(x), v, math.Float64bits(v), got, math.Float64bits(got), tc.name, want, math.Float64bits(want))
				}
			}
			if dst[len(x)] != 42 {
				t.Fatalf("%sTo wrote past its input", tc.name)
			}
		}
	}
}

// TestApplyShapes: Apply and ApplyTo panic when dst's shape is not src's,
// rather than write the neighbours of a view dst in its parent.
func TestApplyShapes(t *testing.T) {
	src := mat.NewDense(4, 3, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	for _, tc := range []struct {
		name   string
		parent *mat.Dense
		r, c   int // dst is the top left r×c of parent
	}{
		{"narrower view", mat.NewDense(4, 3, nil), 4, 2},
		{"shorter view", mat.NewDense(4, 3, nil), 3, 3},
		{"wider", mat.NewDense(4, 4, nil), 4, 4},
	} {
		for _, f := range []struct {
			name  string
			apply func(dst *mat.Dense)
		}{
			{"Apply", func(dst *mat.Dense) { Apply(dst, src, Softplus) }},
			{"ApplyTo", func(dst *mat.Dense) { ApplyTo(dst, src, SoftplusTo) }},
		} {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				tc.parent.Zero()
				dst := tc.parent.Slice(0, tc.r, 0, tc.c).(*mat.Dense)
				defer func() {
					if recover() == nil {
						t.Error("no panic")
					}
					if mat.Norm(tc.parent, 1) != 0 {
						t.Errorf("dst or its parent written:\n%v", mat.Formatted(tc.parent))
					}
				}()
				f.apply(dst)
			})
		}
	}
}

// mulAddCompiled returns a·b + c as this build compiles it: not inlined,
// so that its operands are not constants folded at compile time, and
// taken in registers, where amd64 fuses at GOAMD64=v3 (not when an operand
// is read from memory by the addition itself).
//
//go:noinline
func mulAddCompiled(a, b, c float64) float64 { return a*b + c }

// compilerFuses reports whether this build fuses a product into the
// addition that takes it, as the Go specification allows and arm64 and
// GOAMD64=v3 builds do: (1+2^-30)(1−2^-30) − 1 is 0 with the product
// rounded and −2^-60 fused. math's functions written in Go (math.Tanh's
// rational branch, math.Log off amd64) then round differently from
// amd64's default build, the reference of these tests' exact checks.
func compilerFuses() bool {
	return mulAddCompiled(1+0x1p-30, 1-0x1p-30, -1) != 0
}

// TestTanhMatchesMath holds Tanh, which writes math.Tanh's rational branch
// out with its products rounded, to math.Tanh below 0.625, bit for bit
// where the compiler fuses no product into an addition; where it does,
// math.Tanh's own products are fused, and TestGoldenBits holds Tanh to the
// bits of a build that does not.
func TestTanhMatchesMath(t *testing.T) {
	if compilerFuses() {
		t.Skip("this build fuses math.Tanh's products; TestGoldenBits checks Tanh's bits")
	}
	for _, x := range activationInputs(rand.New(rand.NewPCG(7, 8))) {
		if math.Abs(x) >= 0.625 && math.Abs(x) <= 44 {
			continue
		}
		got, want := Tanh(x), math.Tanh(x)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("Tanh(%v) = %v, math.Tanh %v", x, got, want)
		}
	}
}

// BenchmarkActivationsTo compares SigmoidTo and TanhTo with loops of
// Sigmoid and Tanh over one GRU block's gate (16 × 128 values), on
// arguments of two spreads: sd 2, like the pre-activations of a GRU of
// random weights (a quarter of them below 0.625, the bound of Tanh's
// branches), and sd 0.25, like a trained one's (the SZ-taxi teacher's
// candidate gates lie below 0.625 in 97% of their fours; here in 95%).
func BenchmarkActivationsTo(b *testing.B) {
	for _, sd := range []float64{2, 0.25} {
		rng := rand.New(rand.NewPCG(1, 2))
		x, dst := make([]float64, 2048), make([]float64, 2048)
		for i := range x {
			x[i] = rng.NormFloat64() * sd
		}
		for _, tc := range sliceActivations {
			b.Run(fmt.Sprintf("sd=%v/%s/loop", sd, tc.name), func(b *testing.B) {
				for b.Loop() {
					for i, v := range x {
						dst[i] = tc.f(v)
					}
				}
			})
			b.Run(fmt.Sprintf("sd=%v/%s/to", sd, tc.name), func(b *testing.B) {
				for b.Loop() {
					tc.to(dst, x)
				}
			})
		}
	}
}
