package nn

import "math"

// The exponential below is the method of Tang (ACM TOMS 15(2), 1989) in the
// form of ARM's optimized-routines exp: x = (k + i/64)·ln2 + r with |r| ≤
// ln2/128, e^x = 2^k · 2^(i/64) · e^r, 2^(i/64) from a table of 64 entries
// and e^r − 1 from its Taylor polynomial of degree 5, whose truncation error
// (r⁶/720 < 4e-17) is below a third of an ulp.
const (
	expTableBits = 6
	expTableLen  = 1 << expTableBits
	expInvLn2N   = expTableLen / math.Ln2
	// ln2/64 split in two: the high part has 17 trailing zero bits, so that
	// k·expLn2HiN is exact for every |k| < 2^17 (|x| < 1419), which covers
	// expSpecial's arguments down to −745.2 (|k| up to 68806) too.
	expLn2HiN = 0x1.62e42fefa0000p-7
	expLn2LoN = 0x1.cf79abc9e3b3ap-46
	// expShift rounds x·64/ln2 to the nearest integer k when added to it,
	// and leaves k in the low bits of the sum's mantissa.
	expShift = 0x1.8p52
)

// expTable holds the bits of 2^(i/64), less i in the exponent field's
// position shifted by expTableBits, so that adding k's bits shifted there
// yields 2^(k/64) in one integer addition (see exp).
var expTable [expTableLen]uint64

func init() {
	for i := range expTable {
		expTable[i] = math.Float64bits(math.Exp2(float64(i)/expTableLen)) - uint64(i)<<(52-expTableBits)
	}
}

// exp returns e^x for the activations (Sigmoid and Softplus), which the
// GRU's gates and φ's hidden layer evaluate for every row of every batch.
// It is within one ulp of the correctly rounded e^x (TestExpAccuracy;
// math.Exp is within two) and about twice as fast as math.Exp on amd64
// (BenchmarkExp), where math.Exp is assembly behind an ABI wrapper that
// evaluates a polynomial of degree 8 and squares its result four times, one
// dependent operation after another. Outside (−708, 709), where e^x is
// subnormal or overflows, expSpecial takes over.
func exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return expSpecial(x)
	}
	sbits, p := expReduce(x)
	s := math.Float64frombits(sbits)
	return s + float64(s*p)
}

// expReduce returns, for x = (k + i/64)·ln2 + r, the bits of 2^(k/64)
// (built in the exponent field: valid as a float64 only inside (−708, 709))
// and p = e^r − 1, so that e^x = s + s·p with s that float64. The
// conversions round every product, so that no compiler fuses one into an
// addition: act_amd64.s computes the same, operation for operation, four
// at a time.
func expReduce(x float64) (sbits uint64, p float64) {
	kd := float64(x*expInvLn2N) + expShift
	ki := math.Float64bits(kd)
	kd -= expShift
	r := x - float64(kd*expLn2HiN) - float64(kd*expLn2LoN)
	r2 := r * r
	p = r + float64(r2*(0.5+float64(r*(1.0/6)))) + float64(float64(r2*r2)*(1.0/24+float64(r*(1.0/120))))
	// The low bits of ki hold k (two's complement): its low six bits pick
	// 2^(i/64), the rest, shifted to the exponent field, multiply by 2^⌊k/64⌋.
	return expTable[ki&(expTableLen-1)] + ki<<(52-expTableBits), p
}

// expSpecial is exp outside (−708, 709), where 2^⌊k/64⌋ is not a normal
// float64 and cannot be built in the exponent field directly: the scale is
// built 2^1009 lower (or 2^1022 higher) and the result multiplied back, as
// ARM's optimized-routines exp does (its specialcase). A result in the
// subnormal range is first rounded to the precision it will have, so
// that the scaling does not round it a second time. Written here rather
// than left to math.Exp, whose last bits there differ between its amd64
// assembly and the Go that other machines compile (arm64 fuses its
// products), so that Softplus and Sigmoid give the same bits everywhere
// (TestGoldenBits).
func expSpecial(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 709.8: // e^x > MaxFloat64 from 709.79
		return math.Inf(1)
	case x < -745.2: // e^x < 2^-1075, rounds to 0, from −745.14
		return 0
	}
	sbits, p := expReduce(x)
	if x > 0 {
		scale := math.Float64frombits(sbits - 1009<<52)
		return 0x1p1009 * (scale + float64(scale*p))
	}
	scale := math.Float64frombits(sbits + 1022<<52)
	sp := float64(scale * p)
	y := scale + sp
	if y < 1 {
		// y·2^-1022 is subnormal: round y to a multiple of 2^-52 (the
		// ulp of 1 + y) with what the sum lost, then scale exactly.
		lo := scale - y + sp
		hi := 1 + y
		lo = 1 - hi + y + lo
		y = (hi + lo) - 1
	}
	return 0x1p-1022 * y
}
