package portable

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mathext"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pemsforecast/sdgnn/internal/golden"
)

//go:noinline
func mulAddCompiled(a, b, c float64) float64 { return a*b + c }

// compilerFuses reports whether this build fuses a product into the
// addition that takes it (arm64, GOAMD64=v3): (1+2^-30)(1−2^-30) − 1 is 0
// with the product rounded and −2^-60 fused.
func compilerFuses() bool { return mulAddCompiled(1+0x1p-30, 1-0x1p-30, -1) != 0 }

// same reports whether a and b have the same bits, every NaN alike.
func same(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b))
}

// expInputs returns arguments of e^x over its whole range: the edges of
// overflow and of the subnormal results, special values, and uniform
// draws at every scale.
func expInputs(rng *rand.Rand) []float64 {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0x1p-1074, -0x1p-1074, 1e-300, 0.5, 0.3465735902799726,
		709.782712893384, 709.7827128933841, 709.78, 710, 1000, -708.39, -708.4, -745.13, -745.1332191019411,
		-745.14, -746, -1e4, -1e10, -3e9, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), math.MaxFloat64, -math.MaxFloat64}
	for range 200000 {
		xs = append(xs, (rng.Float64()*2-1)*746)
	}
	for e := -60; e <= 10; e++ {
		for range 500 {
			xs = append(xs, (rng.Float64()*2-1)*math.Ldexp(1, e))
		}
	}
	return xs
}

// logInputs returns positive arguments at every exponent (subnormals
// included), values about √2/2 and 1, and the special ones.
func logInputs(rng *rand.Rand) []float64 {
	xs := []float64{0, math.Copysign(0, -1), -1, 1, 2, 0.5, math.Sqrt2 / 2, math.Nextafter(math.Sqrt2/2, 1), math.Nextafter(math.Sqrt2/2, 0),
		math.Nextafter(1, 2), math.Nextafter(1, 0), 0x1p-1074, 0x1p-1060, 0x1p-1023, math.SmallestNonzeroFloat64 * 3,
		math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	for range 200000 {
		xs = append(xs, math.Float64frombits(rng.Uint64()>>1)) // positive, any exponent; NaNs and +Inf among them
	}
	for range 100000 {
		xs = append(xs, rng.Float64()*2) // the range of the noise's base strip
	}
	return xs
}

// The Go functions against the assembly they write out, value by value,
// where that assembly runs: the exported functions call it there, so this
// is what makes their results on other machines the same.

func TestExpMatchesAMD64(t *testing.T) {
	if !amd64FMA {
		t.Skip("math.Exp takes its FMA path on amd64 with FMA only; TestGoldenBits checks Exp's bits")
	}
	for _, x := range expInputs(rand.New(rand.NewPCG(1, 2))) {
		if got, want := exp(x), math.Exp(x); !same(got, want) {
			t.Fatalf("exp(%v) = %v (%#x), math.Exp %v (%#x)", x, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
}

func TestLogMatchesAMD64(t *testing.T) {
	if !amd64 {
		t.Skip("math.Log is assembly on amd64 only; TestGoldenBits checks Log's bits")
	}
	for _, x := range logInputs(rand.New(rand.NewPCG(3, 4))) {
		if got, want := log(x), math.Log(x); !same(got, want) {
			t.Fatalf("log(%v) = %v, math.Log %v", x, got, want)
		}
	}
}

func TestPowMatchesAMD64(t *testing.T) {
	if !amd64FMA {
		t.Skip("math.Pow takes math.Exp's FMA path on amd64 with FMA only; TestGoldenBits checks Pow's bits")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	check := func(x, y float64) {
		if got, want := pow(x, y), math.Pow(x, y); !same(got, want) {
			t.Fatalf("pow(%v, %v) = %v, math.Pow %v", x, y, got, want)
		}
	}
	for f := 0.0; f <= 20000; f++ { // NOSMOG's unigram counts to the power 3/4
		check(f, 0.75)
	}
	special := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, -0.5, 2, -2, 3, 0.75, math.Inf(1), math.Inf(-1), math.NaN(), 1 << 63, 1e300}
	for _, x := range special {
		for _, y := range special {
			check(x, y)
		}
	}
	for range 100000 {
		check(rng.Float64()*1e4, (rng.Float64()*2-1)*8)
		check(-float64(rng.IntN(100)), float64(rng.IntN(40)-20))
	}
}

func TestHypotMatchesAMD64(t *testing.T) {
	if !amd64 {
		t.Skip("math.Hypot is assembly on amd64 only; TestGoldenBits checks Hypot's bits")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float64{0, math.Copysign(0, -1), 1, -1, 0x1p-1074, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()}
	for _, p := range special {
		for _, q := range special {
			if got, want := hypot(p, q), math.Hypot(p, q); !same(got, want) {
				t.Fatalf("hypot(%v, %v) = %v, math.Hypot %v", p, q, got, want)
			}
		}
	}
	for range 200000 {
		p, q := (rng.Float64()*2-1)*math.Ldexp(1, rng.IntN(40)-20), rng.NormFloat64()
		if got, want := hypot(p, q), math.Hypot(p, q); !same(got, want) {
			t.Fatalf("hypot(%v, %v) = %v, math.Hypot %v", p, q, got, want)
		}
	}
}

// TestCosMatchesMath holds Cos to math.Cos where this build fuses no
// product (math.Cos is Go on every machine).
func TestCosMatchesMath(t *testing.T) {
	if compilerFuses() {
		t.Skip("this build fuses math.Cos's products; TestGoldenBits checks Cos's bits")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	xs := []float64{0, math.Copysign(0, -1), math.Pi, math.Pi / 2, math.Pi / 4, 1 << 29, 1<<29 - 1, 1e10, math.Inf(1), math.NaN()}
	for range 200000 {
		xs = append(xs, (rng.Float64()*2-1)*math.Ldexp(1, rng.IntN(40)-10))
	}
	xs = append(xs, math.MaxFloat64, -math.MaxFloat64, math.Nextafter(1<<29, 0), math.Nextafter(1<<29, math.Inf(1)))
	xs = append(xs, cosLargeInputs(rand.New(rand.NewPCG(25, 26)))...)
	for _, x := range xs {
		if got, want := Cos(x), math.Cos(x); !same(got, want) {
			t.Fatalf("Cos(%v) = %v, math.Cos %v", x, got, want)
		}
	}
}

// cosLargeInputs returns arguments from 2²⁹, where math.Cos reduces by
// Payne–Hanek, to the largest float64.
func cosLargeInputs(rng *rand.Rand) []float64 {
	var xs []float64
	for range 100000 {
		xs = append(xs, math.Ldexp(1+rng.Float64(), 29+rng.IntN(995)))
	}
	return xs
}

func TestDotMatchesGonum(t *testing.T) {
	if !amd64 {
		t.Skip("gonum's Dot is assembly on amd64 only; TestGoldenBits checks Dot's bits")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for n := 0; n <= 70; n++ {
		for range 200 {
			x, y := make([]float64, n), make([]float64, n)
			for i := range x {
				x[i], y[i] = golden.Uniform(rng), golden.Uniform(rng)*math.Ldexp(1, rng.IntN(20)-10)
			}
			if got, want := dot(x, y), floats.Dot(x, y); !same(got, want) {
				t.Fatalf("n = %d: dot = %v, floats.Dot %v", n, got, want)
			}
		}
	}
}

// TestNormFloat64MatchesRand draws two million normals from two
// generators of one seed, by NormFloat64 and by rand's own, and requires
// the same values and the same generator state afterwards. Two million
// draws pass through the base strip (about 1 in 1,000 draws) and the
// wedges (about 1 in 100) many times.
func TestNormFloat64MatchesRand(t *testing.T) {
	if !amd64FMA || compilerFuses() {
		t.Skip("rand's NormFloat64 calls math.Exp, whose bits are those of NormFloat64 on amd64 with FMA only, and the compiler may fuse its products; TestGoldenBits checks NormFloat64's bits")
	}
	a, b := rand.New(rand.NewPCG(13, 14)), rand.New(rand.NewPCG(13, 14))
	var tail int
	for i := range 2000000 {
		got, want := NormFloat64(a), b.NormFloat64()
		if !same(got, want) {
			t.Fatalf("draw %d: %v, rand's %v", i, got, want)
		}
		if math.Abs(got) > 3.442619855899 {
			tail++
		}
	}
	if a.Uint64() != b.Uint64() {
		t.Fatal("the generators are out of step after the draws")
	}
	if tail < 500 {
		t.Fatalf("%d draws beyond the base strip's edge: the test did not reach that branch enough", tail)
	}
}

func TestAxpyMatchesGonum(t *testing.T) {
	if !amd64 {
		t.Skip("gonum's axpy is assembly on amd64 only; TestGoldenBits checks Axpy's bits")
	}
	rng := rand.New(rand.NewPCG(19, 20))
	for n := 0; n <= 70; n++ {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = golden.Uniform(rng), golden.Uniform(rng)
		}
		alpha := golden.Uniform(rng)
		want := append([]float64(nil), y...)
		floats.AddScaled(want, alpha, x)
		axpy(alpha, x, y)
		for i := range y {
			if !same(y[i], want[i]) {
				t.Fatalf("n = %d: axpy[%d] = %v, floats.AddScaled %v", n, i, y[i], want[i])
			}
		}
	}
}

func TestDotPanicsOnLengths(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for slices of lengths 3 and 2")
		}
	}()
	dot([]float64{1, 2, 3}, []float64{1, 2})
}

// TestGoldenBits holds every function, as it runs on this machine, to the
// hashes of the bits amd64 computes (testdata/golden-bits.json): on amd64
// that is the standard library's and gonum's assembly; on arm64 (under
// qemu in CI) and wherever else, this package's Go.
func TestGoldenBits(t *testing.T) {
	got := map[string]string{}
	hash := func(name string, xs []float64, f func(float64) float64) {
		out := make([]float64, len(xs))
		for i, x := range xs {
			out[i] = f(x)
		}
		got[name] = golden.Hash(out)
	}
	hash("Exp", expInputs(rand.New(rand.NewPCG(1, 2))), Exp)
	hash("Log", logInputs(rand.New(rand.NewPCG(3, 4))), Log)
	hash("Pow0.75", logInputs(rand.New(rand.NewPCG(5, 6))), func(x float64) float64 { return Pow(x, 0.75) })
	rng := rand.New(rand.NewPCG(15, 16))
	var ps, hs, cs []float64
	for range 100000 {
		x, y := golden.Uniform(rng)*1e3, golden.Uniform(rng)
		ps = append(ps, Pow(math.Abs(x), y))
		hs = append(hs, Hypot(x, y))
		cs = append(cs, Cos(x*y))
	}
	got["Pow"], got["Hypot"], got["Cos"] = golden.Hash(ps), golden.Hash(hs), golden.Hash(cs)
	hash("CosLarge", cosLargeInputs(rand.New(rand.NewPCG(25, 26))), Cos)
	var ds []float64
	for n := 0; n <= 70; n++ {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = golden.Uniform(rng), golden.Uniform(rng)
		}
		ds = append(ds, Dot(x, y))
	}
	got["Dot"] = golden.Hash(ds)
	var as []float64
	for n := 0; n <= 70; n++ {
		x, y := make([]float64, n), make([]float64, n)
		for i := range x {
			x[i], y[i] = golden.Uniform(rng), golden.Uniform(rng)
		}
		Axpy(golden.Uniform(rng), x, y)
		as = append(as, y...)
	}
	got["Axpy"] = golden.Hash(as)
	norm := rand.New(rand.NewPCG(17, 18))
	zs := make([]float64, 1000000)
	for i := range zs {
		zs[i] = NormFloat64(norm)
	}
	got["NormFloat64"] = golden.Hash(zs)
	hash("Lgamma", lgammaInputs(rand.New(rand.NewPCG(19, 20))), Lgamma)
	var bs []float64
	for _, c := range incBetaInputs(rand.New(rand.NewPCG(21, 22))) {
		bs = append(bs, RegIncBeta(c[0], c[1], c[2]))
	}
	got["RegIncBeta"] = golden.Hash(bs)
	var ss []float64
	for _, c := range studentsTInputs(rand.New(rand.NewPCG(23, 24))) {
		ss = append(ss, StudentsTSurvival(c[0], c[1]))
	}
	got["StudentsTSurvival"] = golden.Hash(ss)
	golden.Check(t, got)
}

// TestLgammaMatchesMath holds Lgamma to math.Lgamma, positive arguments
// at every scale, where this build fuses no product (math.Lgamma is Go on
// every machine).
func TestLgammaMatchesMath(t *testing.T) {
	if compilerFuses() {
		t.Skip("this build fuses math.Lgamma's products; TestGoldenBits checks Lgamma's bits")
	}
	xs := []float64{0, 0x1p-1074, 0x1p-71, 0x1p-70, 0.2316, 0.7316, 0.9, 1, 1.2316, 1.7316, 2, 3, 7.999999, 8, 0x1p58, math.MaxFloat64, math.Inf(1)}
	xs = append(xs, lgammaInputs(rand.New(rand.NewPCG(19, 20)))...)
	for _, x := range xs {
		want, _ := math.Lgamma(x)
		if got := Lgamma(x); !same(got, want) {
			t.Fatalf("Lgamma(%v) = %v, math.Lgamma %v", x, got, want)
		}
	}
	for _, x := range []float64{-1, -0.5, math.Inf(-1), math.NaN()} {
		if got := Lgamma(x); !math.IsNaN(got) {
			t.Errorf("Lgamma(%v) = %v, want NaN", x, got)
		}
	}
}

// lgammaInputs returns positive arguments: uniform draws below 10 (every
// polynomial of math.Lgamma) and at every scale up to 2⁶⁰, and the
// halves and integers the t-distribution takes.
func lgammaInputs(rng *rand.Rand) []float64 {
	var xs []float64
	for range 100000 {
		xs = append(xs, rng.Float64()*10)
	}
	for range 100000 {
		xs = append(xs, math.Ldexp(rng.Float64(), rng.IntN(130)-70))
	}
	for n := 1; n <= 20000; n++ {
		xs = append(xs, float64(n)/2, float64(n)/2+0.5)
	}
	return xs
}

// TestRegIncBetaMatchesGonum holds RegIncBeta and StudentsTSurvival to
// gonum's, whose Go they write out, where gonum's takes the same Exp and
// Pow and this build fuses no product.
func TestRegIncBetaMatchesGonum(t *testing.T) {
	if !amd64FMA || compilerFuses() {
		t.Skip("gonum's incomplete beta gives these bits on amd64 with FMA at the default level only; TestGoldenBits checks them")
	}
	for _, c := range incBetaInputs(rand.New(rand.NewPCG(21, 22))) {
		if got, want := RegIncBeta(c[0], c[1], c[2]), mathext.RegIncBeta(c[0], c[1], c[2]); !same(got, want) {
			t.Fatalf("RegIncBeta(%v, %v, %v) = %v, mathext %v", c[0], c[1], c[2], got, want)
		}
	}
	for _, c := range studentsTInputs(rand.New(rand.NewPCG(23, 24))) {
		want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: c[1]}.Survival(c[0])
		if got := StudentsTSurvival(c[0], c[1]); !same(got, want) {
			t.Fatalf("StudentsTSurvival(%v, %v) = %v, distuv %v", c[0], c[1], got, want)
		}
	}
}

// incBetaInputs returns (a, b, x) over both series and both continued
// fractions, the reversal of a and b, and the path by logarithms (a + b
// past Γ's range), x at 0 and 1 included.
func incBetaInputs(rng *rand.Rand) [][3]float64 {
	var cs [][3]float64
	for range 50000 {
		a := math.Ldexp(rng.Float64()+0.01, rng.IntN(12)-4)
		b := math.Ldexp(rng.Float64()+0.01, rng.IntN(12)-4)
		cs = append(cs, [3]float64{a, b, rng.Float64()})
	}
	for range 5000 {
		cs = append(cs, [3]float64{100 + float64(rng.Float64()*400), 50 + float64(rng.Float64()*200), rng.Float64()})
	}
	for _, x := range []float64{0, 1, 1e-300, 0.95, 1 - 0x1p-53} {
		cs = append(cs, [3]float64{0.5, 2.5, x}, [3]float64{3, 0.5, x})
	}
	return cs
}

// studentsTInputs returns (t, ν): the degrees of freedom the
// Diebold–Mariano test (its cosine terms) and the paired t-test (seeds − 1)
// take, and statistics of either sign out to the far tail.
func studentsTInputs(rng *rand.Rand) [][2]float64 {
	cs := [][2]float64{{0, 3}, {math.Copysign(0, -1), 3}, {math.Inf(1), 9}, {math.Inf(-1), 9}}
	for range 50000 {
		nu := float64(1 + rng.IntN(120))
		cs = append(cs, [2]float64{NormFloat64(rng) * math.Ldexp(1, rng.IntN(8)-2), nu})
	}
	return cs
}
