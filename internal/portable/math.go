package portable

import (
	"math"
	"math/bits"
	"runtime"

	"golang.org/x/sys/cpu"
)

// amd64 reports whether the standard library's assembly gives the bits
// this package computes: math.Log and math.Hypot on any amd64, and
// math.Exp (and so math.Pow) where it takes its FMA path.
var (
	amd64    = runtime.GOARCH == "amd64"
	amd64FMA = amd64 && cpu.X86.HasAVX && cpu.X86.HasFMA
)

// Exp returns e^x as math.Exp computes it on amd64 machines with FMA
// (exp_amd64.s): k = round(x·log₂e), r = (x − k·ln2)/16 reduced in two
// fused steps, e^r by a Taylor polynomial of degree 8 and four squarings,
// then scaled by 2^k. Its error is within a few ulps, as math.Exp's.
func Exp(x float64) float64 {
	if amd64FMA {
		return math.Exp(x)
	}
	return exp(x)
}

// exp is Exp in Go, operation for operation as exp_amd64.s's FMA path.
func exp(x float64) float64 {
	const (
		log2e    = 1.4426950408889634073599246810018920
		ln2u     = 0.69314718055966295651160180568695068359375
		ln2l     = 0.28235290563031577122588448175013436025525412068e-12
		overflow = 7.09782712893384e+02
	)
	b := math.Float64bits(x)
	if b&^(1<<63) >= 0x7ff0000000000000 { // NaN or ±Inf
		if b == 0xfff0000000000000 {
			return 0
		}
		return x
	}
	if x > overflow {
		return math.Inf(1)
	}
	// CVTSD2SL rounds to the nearest integer, ties to even; below the
	// int32 range it gives −2³¹, whose result underflows to 0 below.
	kf := math.RoundToEven(float64(x * log2e))
	k := int32(math.MinInt32)
	if kf >= math.MinInt32 {
		k = int32(kf)
	}
	fk := float64(k)
	r := math.FMA(-fk, ln2u, x)
	r = math.FMA(-fk, ln2l, r)
	r = float64(r * 0.0625)
	p := math.FMA(2.4801587301587301587e-5, r, 1.9841269841269841270e-4)
	p = math.FMA(p, r, 1.3888888888888888889e-3)
	p = math.FMA(p, r, 8.3333333333333333333e-3)
	p = math.FMA(p, r, 4.1666666666666666667e-2)
	p = math.FMA(p, r, 1.6666666666666666667e-1)
	p = math.FMA(p, r, 0.5)
	p = math.FMA(p, r, 1.0)
	// Every product rounded: the next statement adds 2 to it.
	r = float64(r * p) // e^r − 1 of the reduced r
	for range 3 {
		r = float64(r * (r + 2)) // (e^r − 1)(e^r + 1) = e^2r − 1
	}
	r = math.FMA(r, r+2, 1)
	// Scale by 2^k, the exponent field built directly (32-bit arithmetic,
	// as the assembly's).
	e := k + 0x3ff
	switch {
	case e >= 0x7ff:
		return math.Inf(1)
	case e > 0:
		return r * math.Float64frombits(uint64(e)<<52)
	case e < -52:
		return 0
	}
	r *= math.Float64frombits(uint64(e+0x3fe) << 52)
	return r * math.Float64frombits(1<<52)
}

// The coefficients of math.Log (FreeBSD's e_log.c).
const (
	ln2Hi = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
	ln2Lo = 1.90821492927058770002e-10 // 0x3dea39ef35793c76
	logL1 = 6.666666666666735130e-01   // 0x3FE5555555555593
	logL2 = 3.999999999940941908e-01   // 0x3FD999999997FA04
	logL3 = 2.857142874366239149e-01   // 0x3FD2492494229359
	logL4 = 2.222219843214978396e-01   // 0x3FCC71C51D8E78AF
	logL5 = 1.818357216161805012e-01   // 0x3FC7466496CB03DE
	logL6 = 1.531383769920937332e-01   // 0x3FC39A09D078C69F
	logL7 = 1.479819860511658591e-01   // 0x3FC2F112DF3E5244
)

// Log returns the natural logarithm of x as math.Log computes it on amd64
// (log_amd64.s, the algorithm of FreeBSD's e_log.c): within one ulp for
// normal x. A subnormal x gets the assembly's wrong result, not within
// an ulp: its exponent is read unnormalised, so that Log(2⁻¹⁰⁷⁴) is
// −709.09 (−1023·ln 2), not −744.44. It runs its Go on amd64 too, where the tests hold it to math.Log value by
// value: through the assembly's call, nn's scalar Softplus took 10–20 %
// longer (BenchmarkSoftplus).
func Log(x float64) float64 {
	return log(x)
}

// log is Log in Go, operation for operation as log_amd64.s, every product
// rounded on its own. Like the assembly it takes the exponent from x's
// bits without normalising a subnormal x first.
func log(x float64) float64 {
	b := math.Float64bits(x)
	switch {
	case b&^(1<<63) == 0:
		return math.Inf(-1)
	case b>>63 != 0:
		return math.NaN()
	case b >= 0x7ff0000000000000: // +Inf or NaN
		return x
	}
	f1 := math.Float64frombits(b&(1<<52-1) | 0x3fe0000000000000) // x = f1·2^k, f1 in [½, 1)
	k := float64(int64(b>>52&0x7ff) - 0x3fe)
	if f1 <= math.Sqrt2/2 { // the assembly's comparison: ≤, where log.go's is <
		f1 *= 2
		k--
	}
	f := f1 - 1
	s := f / (2 + f)
	s2 := s * s
	s4 := s2 * s2
	// Rounded too where a product is a value of its own: the compiler may
	// fuse it into an addition of a later statement.
	t1 := float64(s2 * (logL1 + float64(s4*(logL3+float64(s4*(logL5+float64(s4*logL7)))))))
	t2 := float64(s4 * (logL2 + float64(s4*(logL4+float64(s4*logL6)))))
	R := t1 + t2
	hfsq := float64(float64(0.5*f) * f)
	return float64(k*ln2Hi) - ((hfsq - (float64(s*(hfsq+R)) + float64(k*ln2Lo))) - f)
}

// Pow returns x**y as math.Pow computes it on amd64 machines with FMA:
// math.Pow's Go, with Exp and Log.
func Pow(x, y float64) float64 {
	if amd64FMA {
		return math.Pow(x, y)
	}
	return pow(x, y)
}

// pow is math.Pow's Go (pow.go) with this package's Exp and Log. Its
// products take no addition, so no compiler fuses them.
func pow(x, y float64) float64 {
	switch {
	case y == 0 || x == 1:
		return 1
	case y == 1:
		return x
	case math.IsNaN(x) || math.IsNaN(y):
		return math.NaN()
	case x == 0:
		switch {
		case y < 0:
			if math.Signbit(x) && isOddInt(y) {
				return math.Inf(-1)
			}
			return math.Inf(1)
		case y > 0:
			if math.Signbit(x) && isOddInt(y) {
				return x
			}
			return 0
		}
	case math.IsInf(y, 0):
		switch {
		case x == -1:
			return 1
		case (math.Abs(x) < 1) == math.IsInf(y, 1):
			return 0
		default:
			return math.Inf(1)
		}
	case math.IsInf(x, 0):
		if math.IsInf(x, -1) {
			return pow(1/x, -y) // Pow(-0, -y)
		}
		switch {
		case y < 0:
			return 0
		case y > 0:
			return math.Inf(1)
		}
	case y == 0.5:
		return math.Sqrt(x)
	case y == -0.5:
		return 1 / math.Sqrt(x)
	}
	yi, yf := math.Modf(math.Abs(y))
	if yf != 0 && x < 0 {
		return math.NaN()
	}
	if yi >= 1<<63 {
		switch {
		case x == -1:
			return 1
		case (math.Abs(x) < 1) == (y > 0):
			return 0
		default:
			return math.Inf(1)
		}
	}
	a1, ae := 1.0, 0
	if yf != 0 {
		if yf > 0.5 {
			yf--
			yi++
		}
		a1 = Exp(float64(yf * Log(x)))
	}
	x1, xe := math.Frexp(x)
	for i := int64(yi); i != 0; i >>= 1 {
		if xe < -1<<12 || 1<<12 < xe {
			ae += xe
			break
		}
		if i&1 == 1 {
			a1 *= x1
			ae += xe
		}
		x1 *= x1
		xe <<= 1
		if x1 < .5 {
			x1 += x1
			xe--
		}
	}
	if y < 0 {
		a1 = 1 / a1
		ae = -ae
	}
	return math.Ldexp(a1, ae)
}

// isOddInt reports whether x is an odd integer (math's isOddInt).
func isOddInt(x float64) bool {
	if math.Abs(x) >= 1<<53 {
		return false
	}
	xi, xf := math.Modf(x)
	return xf == 0 && int64(xi)&1 == 1
}

// Hypot returns √(p² + q²) as math.Hypot computes it on amd64
// (hypot_amd64.s): max·√(1 + (min/max)²), the square rounded before the
// addition.
func Hypot(p, q float64) float64 {
	if amd64 {
		return math.Hypot(p, q)
	}
	return hypot(p, q)
}

// hypot is Hypot in Go, as hypot_amd64.s computes it.
func hypot(p, q float64) float64 {
	p, q = math.Abs(p), math.Abs(q)
	switch {
	case math.IsInf(p, 1) || math.IsInf(q, 1):
		return math.Inf(1)
	case math.IsNaN(p) || math.IsNaN(q):
		return math.NaN()
	case p == 0 && q == 0:
		return 0
	}
	if p < q {
		p, q = q, p
	}
	q /= p
	return p * math.Sqrt(1+float64(q*q))
}

// Cos returns the cosine of x as math.Cos computes it where no compiler
// fuses its products (amd64 at its default level): math.Cos's Go (sin.go,
// the Cephes algorithm) with every product rounded, its argument reduced
// as math.Cos reduces it: by π/4 in three parts below 2²⁹, by Payne–Hanek
// (trigReduce) from there on.
func Cos(x float64) float64 {
	const (
		pi4A = 7.85398125648498535156e-1  // 0x3fe921fb40000000, Pi/4 split into three parts
		pi4B = 3.77489470793079817668e-8  // 0x3e64442d00000000,
		pi4C = 2.69515142907905952645e-15 // 0x3ce8469898cc5170,
	)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return math.NaN()
	}
	x = math.Abs(x)
	sign := false
	var j uint64
	var y, z float64
	if x >= 1<<29 {
		// math.Cos's polynomial after its Payne–Hanek reduction: returning
		// math.Cos(x) here gave the fused polynomial's bits on arm64.
		j, z = trigReduce(x)
	} else {
		j = uint64(x * (4 / math.Pi))
		y = float64(j)
		if j&1 == 1 {
			j++
			y++
		}
		j &= 7
		z = ((x - float64(y*pi4A)) - float64(y*pi4B)) - float64(y*pi4C)
	}
	if j > 3 {
		j -= 4
		sign = !sign
	}
	if j > 1 {
		sign = !sign
	}
	zz := z * z
	if j == 1 || j == 2 {
		y = z + float64(float64(z*zz)*horner(zz, sinCoef[:]...))
	} else {
		y = (1.0 - float64(0.5*zz)) + float64(float64(zz*zz)*horner(zz, cosCoef[:]...))
	}
	if sign {
		y = -y
	}
	return y
}

// trigReduce is math's trigReduce (trig_reduce.go): for x ≥ π/4 the
// octant j of x and x − jπ/4 (j made even), by Payne–Hanek, the product of
// x's mantissa with the bits of 4/π in integer arithmetic. Its one float
// product is rounded: Cos adds it.
//
// trigReduce and mPi4 are those of Go's math (trig_reduce.go), Copyright
// 2018 The Go Authors, under the BSD licence of the Go distribution.
func trigReduce(x float64) (j uint64, z float64) {
	const (
		pi4   = math.Pi / 4
		shift = 52
		mask  = 0x7ff
		bias  = 1023
	)
	if x < pi4 {
		return 0, x
	}
	ix := math.Float64bits(x)
	exp := int(ix>>shift&mask) - bias - shift
	ix &^= mask << shift
	ix |= 1 << shift
	digit, bitshift := uint(exp+61)/64, uint(exp+61)%64
	z0 := (mPi4[digit] << bitshift) | (mPi4[digit+1] >> (64 - bitshift))
	z1 := (mPi4[digit+1] << bitshift) | (mPi4[digit+2] >> (64 - bitshift))
	z2 := (mPi4[digit+2] << bitshift) | (mPi4[digit+3] >> (64 - bitshift))
	z2hi, _ := bits.Mul64(z2, ix)
	z1hi, z1lo := bits.Mul64(z1, ix)
	z0lo := z0 * ix
	lo, c := bits.Add64(z1lo, z2hi, 0)
	hi, _ := bits.Add64(z0lo, z1hi, c)
	j = hi >> 61
	hi = hi<<3 | lo>>61
	lz := uint(bits.LeadingZeros64(hi))
	e := uint64(bias - (lz + 1))
	hi = (hi << (lz + 1)) | (lo >> (64 - (lz + 1)))
	hi >>= 64 - shift
	hi |= e << shift
	z = math.Float64frombits(hi)
	if j&1 == 1 {
		j++
		j &= 7
		z--
	}
	return j, float64(z * pi4)
}

// mPi4 is math's: the binary digits of 4/π, for trigReduce.
var mPi4 = [...]uint64{
	0x0000000000000001,
	0x45f306dc9c882a53,
	0xf84eafa3ea69bb81,
	0xb6c52b3278872083,
	0xfca2c757bd778ac3,
	0x6e48dc74849ba5c0,
	0x0c925dd413a32439,
	0xfc3bd63962534e7d,
	0xd1046bea5d768909,
	0xd338e04d68befc82,
	0x7323ac7306a673e9,
	0x3908bf177bf25076,
	0x3ff12fffbc0b301f,
	0xde5e2316b414da3e,
	0xda6cfd9e4f96136e,
	0x9e8c7ecd3cbfd45a,
	0xea4f758fd7cbe2f6,
	0x7a0e73ef14a525d4,
	0xd7f6bf623f1aba10,
	0xac06608df8f6d757,
}

// The coefficients of math.Cos's polynomials (sin.go), lowest degree
// first, as horner takes them.
var (
	sinCoef = [6]float64{
		-1.66666666666666307295e-1, // 0xbfc5555555555548
		8.33333333332211858878e-3,  // 0x3f8111111110f7d0
		-1.98412698295895385996e-4, // 0xbf2a01a019bfdf03
		2.75573136213857245213e-6,  // 0x3ec71de3567d48a1
		-2.50507477628578072866e-8, // 0xbe5ae5e5a9291f5d
		1.58962301576546568060e-10, // 0x3de5d8fd1fd19ccd
	}
	cosCoef = [6]float64{
		4.16666666666665929218e-2,   // 0x3fa555555555554b
		-1.38888888888730564116e-3,  // 0xbf56c16c16c14f91
		2.48015872888517045348e-5,   // 0x3efa01a019c844f5
		-2.75573141792967388112e-7,  // 0xbe927e4f7eac4bc6
		2.08757008419747316778e-9,   // 0x3e21ee9d7b4e3f05
		-1.13585365213876817300e-11, // 0xbda8fa49a0861a9b
	}
)
