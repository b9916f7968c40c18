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
	// ln2/64 split in two: the high part has 16 trailing zero bits, so that
	// k·expLn2HiN is exact for every |k| < 2^16 (|x| < 709).
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
// subnormal or overflows, and for NaN, it returns math.Exp(x).
func exp(x float64) float64 {
	if !(x > -708 && x < 709) {
		return math.Exp(x)
	}
	// The conversions round every product, so that no compiler fuses one
	// into an addition: act_amd64.s computes the same, operation for
	// operation, four at a time.
	kd := float64(x*expInvLn2N) + expShift
	ki := math.Float64bits(kd)
	kd -= expShift
	r := x - float64(kd*expLn2HiN) - float64(kd*expLn2LoN)
	r2 := r * r
	p := r + float64(r2*(0.5+float64(r*(1.0/6)))) + float64(float64(r2*r2)*(1.0/24+float64(r*(1.0/120))))
	// The low bits of ki hold k (two's complement): its low six bits pick
	// 2^(i/64), the rest, shifted to the exponent field, multiply by 2^⌊k/64⌋.
	s := math.Float64frombits(expTable[ki&(expTableLen-1)] + ki<<(52-expTableBits))
	return s + float64(s*p)
}
