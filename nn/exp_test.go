package nn

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// expRef returns e^x rounded to float64 (see expBig).
func expRef(x float64) float64 {
	f, _ := expBig(x).Float64()
	return f
}

// expBig returns e^x from its Taylor series at 200 bits: e^x =
// (e^(x/2^12))^(2^12), the series of the small argument summed to 60 terms
// and squared twelve times. Slow, but exact to far below an ulp of float64.
func expBig(x float64) *big.Float {
	const prec, halvings = 200, 12
	r := new(big.Float).SetPrec(prec).SetFloat64(x)
	r.SetMantExp(r, -halvings)
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	n := new(big.Float).SetPrec(prec)
	for i := int64(1); i < 60; i++ {
		term.Mul(term, r)
		term.Quo(term, n.SetInt64(i))
		sum.Add(sum, term)
	}
	for range halvings {
		sum.Mul(sum, sum)
	}
	return sum
}

// ulpsApart returns how many representable float64 values lie between a and
// b (0 when equal), for finite positive a and b.
func ulpsApart(a, b float64) uint64 {
	ia, ib := math.Float64bits(a), math.Float64bits(b)
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

func TestExpAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	xs := []float64{-707.99, -700, -1, -0x1p-30, 0x1p-30, 1, 700, 708.99,
		math.Ln2 / 128, -math.Ln2 / 128, 3 * math.Ln2 / 128, 44.3614195558365} // the last: k at a table boundary
	for range 20000 {
		xs = append(xs, 1416*rng.Float64()-708, 80*rng.Float64()-40, 0.01*rng.NormFloat64())
	}
	var worst uint64 // (outside (−708, 709): TestExpSpecial)
	for _, x := range xs {
		want := expRef(x)
		d := ulpsApart(exp(x), want)
		if d > 1 {
			t.Fatalf("exp(%v) = %v, want %v: %d ulps apart", x, exp(x), want, d)
		}
		worst = max(worst, d)
	}
	t.Logf("%d arguments, at most %d ulp from the correctly rounded e^x", len(xs), worst)
}

// TestExpSpecial holds exp outside (−708, 709), where it scales as ARM's
// specialcase does (expSpecial), to the correctly rounded e^x within one
// ulp, subnormal results included (their ulp is 2^-1074), up to the
// overflow and down to the underflow thresholds and one ulp either side;
// and checks the edges and NaN.
func TestExpSpecial(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	maxExp := math.Log(math.MaxFloat64) // 709.78…, e^x ≤ MaxFloat64 below
	minExp := -745.1332191019411        // e^x rounds to 2^-1074 above, to 0 below
	xs := []float64{-708, -708.39, -708.4, -709, -720, -740, -744.44, -745, -745.13, -745.1332191019411, -745.14, -745.2,
		709, 709.5, 709.78, maxExp, math.Nextafter(maxExp, 0), math.Nextafter(maxExp, 800),
		math.Nextafter(minExp, 0), math.Nextafter(minExp, -800)}
	for range 5000 {
		xs = append(xs, -708-37.2*rng.Float64(), 709+0.8*rng.Float64())
	}
	var worst uint64
	for _, x := range xs {
		got, want := exp(x), expRef(x)
		if math.IsInf(want, 1) {
			if !math.IsInf(got, 1) {
				t.Fatalf("exp(%v) = %v, want +Inf", x, got)
			}
			continue
		}
		d := ulpsApart(got, want)
		if d > 1 {
			t.Fatalf("exp(%v) = %v, want %v: %d ulps apart", x, got, want, d)
		}
		worst = max(worst, d)
	}
	t.Logf("%d arguments outside (−708, 709), at most %d ulp from the correctly rounded e^x", len(xs), worst)
	for _, c := range []struct{ x, want float64 }{
		{0, 1}, {math.Copysign(0, -1), 1}, {math.Inf(1), math.Inf(1)}, {math.Inf(-1), 0}, {709.8, math.Inf(1)}, {710, math.Inf(1)},
		{1e300, math.Inf(1)}, {math.MaxFloat64, math.Inf(1)}, {-746, 0}, {-1e300, 0}, {-math.MaxFloat64, 0},
		{math.SmallestNonzeroFloat64, 1}, {-745.2, 0},
	} {
		if got := exp(c.x); got != c.want {
			t.Errorf("exp(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	if got := exp(math.NaN()); !math.IsNaN(got) {
		t.Errorf("exp(NaN) = %v, want NaN", got)
	}
	if got := exp(0); got != 1 {
		t.Errorf("exp(0) = %v, want exactly 1", got)
	}
}

// BenchmarkExp compares exp with math.Exp, Sigmoid by exp with the same form
// by math.Exp, and Tanh with math.Tanh, on arguments like the GRU's gate
// pre-activations.
func BenchmarkExp(b *testing.B) {
	benchElementwise(b, []namedFunc{
		{"exp", exp},
		{"math.Exp", math.Exp},
		{"Sigmoid", Sigmoid},
		{"sigmoid-math.Exp", func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }},
		{"Tanh", Tanh},
		{"math.Tanh", math.Tanh},
	})
}

// TestExpLn2HiExact checks what expReduce's range reduction rests on
// (see expLn2HiN): k·expLn2HiN is exact for every k that exp and
// expSpecial reach, from x = −745.2 to 709.8.
func TestExpLn2HiExact(t *testing.T) {
	lo, hi := math.Floor(-745.2*expInvLn2N)-1, math.Ceil(709.8*expInvLn2N)+1
	for k := lo; k <= hi; k++ {
		if p := k * expLn2HiN; math.FMA(k, expLn2HiN, -p) != 0 {
			t.Fatalf("k = %v: k·expLn2HiN is rounded", k)
		}
	}
}

// minNormal is the smallest positive normal float64.
const minNormal = 0x1p-1022

// TestSigmoidAccuracy holds Sigmoid to 1/(1+e^-x) of the correctly rounded
// e^-x, or e^x/(1+e^x) for x < 0, where that form is the more accurate.
func TestSigmoidAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	xs := []float64{0, 1e-300, -1e-300, 36.7, -36.7, 700, -700, -708.5, -745, 800, -800}
	for range 20000 {
		xs = append(xs, 80*rng.Float64()-40, 3*rng.NormFloat64())
	}
	var worst float64
	for _, x := range xs {
		want := 1 / (1 + expRef(-x))
		if x < 0 {
			e := expRef(x)
			want = e / (1 + e)
		}
		got := Sigmoid(x)
		d := math.Abs(got - want)
		if want < minNormal { // subnormal or 0: Sigmoid flushes to 0 below −709.78
			if d > minNormal {
				t.Fatalf("Sigmoid(%g) = %g, want %g", x, got, want)
			}
			continue
		}
		if d > 0x1p-50*want {
			t.Fatalf("Sigmoid(%g) = %.17g, want %.17g (relative error %.2g)", x, got, want, d/want)
		}
		worst = max(worst, d/want)
	}
	t.Logf("%d arguments, relative error at most %.2g", len(xs), worst)
}

// TestTanhAccuracy holds Tanh to (e^2x − 1)/(e^2x + 1) at 200 bits, rounded
// once, where Tanh uses exp (0.625 ≤ |x| ≤ 44), and to math.Tanh elsewhere,
// where it is math.Tanh.
func TestTanhAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	xs := []float64{0.625, -0.625, 0.6249999999999999, 44, -44, 44.000000000000001, 1, -1, 20, -20}
	for range 20000 {
		xs = append(xs, 8*rng.Float64()-4, 100*rng.Float64()-50)
	}
	var worst uint64
	for _, x := range xs {
		got, z := Tanh(x), math.Abs(x)
		if !(z >= 0.625 && z <= 44) {
			// Exact unless this build fuses math.Tanh's products
			// (compilerFuses), then within an ulp.
			if want := math.Tanh(x); got != want && (!compilerFuses() || ulpsApart(math.Abs(got), math.Abs(want)) > 1) {
				t.Fatalf("Tanh(%v) = %v, want %v (math.Tanh)", x, got, want)
			}
			continue
		}
		e := expBig(2 * z)
		one := big.NewFloat(1)
		num, den := new(big.Float).Sub(e, one), new(big.Float).Add(e, one)
		want, _ := num.Quo(num, den).Float64()
		want = math.Copysign(want, x)
		d := ulpsApart(math.Abs(got), math.Abs(want))
		if d > 2 || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("Tanh(%v) = %v, want %v: %d ulps apart", x, got, want, d)
		}
		worst = max(worst, d)
	}
	for _, x := range []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)} {
		if got, want := Tanh(x), math.Tanh(x); got != want || math.Signbit(got) != math.Signbit(want) {
			t.Errorf("Tanh(%v) = %v, want %v", x, got, want)
		}
	}
	if got := Tanh(math.NaN()); !math.IsNaN(got) {
		t.Errorf("Tanh(NaN) = %v, want NaN", got)
	}
	t.Logf("%d arguments, at most %d ulps from the correctly rounded tanh where exp is used", len(xs), worst)
}
