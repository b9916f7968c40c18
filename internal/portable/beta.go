package portable

import "math"

// Lgamma returns log Γ(x) for x > 0 as math.Lgamma computes it where the
// compiler fuses no product (amd64 at its default level): math.Lgamma's
// Go (lgamma.go, FreeBSD's e_lgamma_r.c) with every product rounded and
// this package's Log. A product that is returned is rounded too: once
// inlined, the compiler may fuse it into the caller's addition. Γ is positive there, so no sign is returned.
// Lgamma(0) and Lgamma(+Inf) are +Inf; a negative x or NaN gives NaN
// (math.Lgamma's reflection for negative x is not written out: nothing
// here needs it).
func Lgamma(x float64) float64 {
	const (
		ymin  = 1.461632144968362245
		two58 = 1 << 58
		tiny  = 1.0 / (1 << 70)
		tc    = 1.46163214496836224576e+00
		tf    = -1.21486290535849611461e-01
		tt    = -3.63867699703950536541e-18 // -(tail of tf)
	)
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0 || math.IsInf(x, 1):
		return math.Inf(1)
	case x < tiny:
		return -Log(x)
	case x == 1 || x == 2:
		return 0
	case x < 2: // lgamma(x) = lgamma(x+1) − log(x)
		var lgamma, y float64
		var i int
		if x <= 0.9 {
			lgamma = -Log(x)
			switch {
			case x >= ymin-1+0.27:
				y, i = 1-x, 0
			case x >= ymin-1-0.27:
				y, i = x-(tc-1), 1
			default:
				y, i = x, 2
			}
		} else {
			switch {
			case x >= ymin+0.27:
				y, i = 2-x, 0
			case x >= ymin-0.27:
				y, i = x-tc, 1
			default:
				y, i = x-1, 2
			}
		}
		switch i {
		case 0:
			z := y * y
			p1 := horner(z, lgamA[0], lgamA[2], lgamA[4], lgamA[6], lgamA[8], lgamA[10])
			p2 := float64(z * horner(z, lgamA[1], lgamA[3], lgamA[5], lgamA[7], lgamA[9], lgamA[11]))
			p := float64(y*p1) + p2
			lgamma += p - float64(0.5*y)
		case 1:
			z := y * y
			w := z * y
			p1 := horner(w, lgamT[0], lgamT[3], lgamT[6], lgamT[9], lgamT[12])
			p2 := horner(w, lgamT[1], lgamT[4], lgamT[7], lgamT[10], lgamT[13])
			p3 := horner(w, lgamT[2], lgamT[5], lgamT[8], lgamT[11], lgamT[14])
			p := float64(z*p1) - (tt - float64(w*(p2+float64(y*p3))))
			lgamma += tf + p
		case 2:
			p1 := y * horner(y, lgamU[:]...)
			p2 := horner(y, lgamV[:]...)
			lgamma += float64(-0.5*y) + p1/p2
		}
		return lgamma
	case x < 8: // lgamma(1+s) = log(s) + lgamma(s)
		i := int(x)
		y := x - float64(i)
		p := y * horner(y, lgamS[:]...)
		q := horner(y, lgamR[:]...)
		lgamma := float64(0.5*y) + p/q
		z := 1.0
		switch i {
		case 7:
			z *= y + 6
			fallthrough
		case 6:
			z *= y + 5
			fallthrough
		case 5:
			z *= y + 4
			fallthrough
		case 4:
			z *= y + 3
			fallthrough
		case 3:
			z *= y + 2
			lgamma += Log(z)
		}
		return lgamma
	case x < two58:
		t := Log(x)
		z := 1 / x
		y := z * z
		w := lgamW[0] + float64(z*horner(y, lgamW[1:]...))
		return float64((x-0.5)*(t-1)) + w
	default:
		return float64(x * (Log(x) - 1)) // rounded: lbeta adds it
	}
}

// horner returns c₀ + x(c₁ + x(c₂ + … + x·cₙ)), every product rounded:
// the nesting of math.Lgamma's and math.Cos's polynomials.
func horner(x float64, c ...float64) float64 {
	p := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		p = c[i] + float64(x*p)
	}
	return p
}

// The coefficients of math.Lgamma's polynomials (lgamma.go); lgamR[0]
// and lgamV[0] are the leading 1 of their denominators.
var (
	lgamA = [...]float64{
		7.72156649015328655494e-02, 3.22467033424113591611e-01, 6.73523010531292681824e-02,
		2.05808084325167332806e-02, 7.38555086081402883957e-03, 2.89051383673415629091e-03,
		1.19270763183362067845e-03, 5.10069792153511336608e-04, 2.20862790713908385557e-04,
		1.08011567247583939954e-04, 2.52144565451257326939e-05, 4.48640949618915160150e-05,
	}
	lgamR = [...]float64{
		1.0, 1.39200533467621045958e+00, 7.21935547567138069525e-01, 1.71933865632803078993e-01,
		1.86459191715652901344e-02, 7.77942496381893596434e-04, 7.32668430744625636189e-06,
	}
	lgamS = [...]float64{
		-7.72156649015328655494e-02, 2.14982415960608852501e-01, 3.25778796408930981787e-01,
		1.46350472652464452805e-01, 2.66422703033638609560e-02, 1.84028451407337715652e-03,
		3.19475326584100867617e-05,
	}
	lgamT = [...]float64{
		4.83836122723810047042e-01, -1.47587722994593911752e-01, 6.46249402391333854778e-02,
		-3.27885410759859649565e-02, 1.79706750811820387126e-02, -1.03142241298341437450e-02,
		6.10053870246291332635e-03, -3.68452016781138256760e-03, 2.25964780900612472250e-03,
		-1.40346469989232843813e-03, 8.81081882437654011382e-04, -5.38595305356740546715e-04,
		3.15632070903625950361e-04, -3.12754168375120860518e-04, 3.35529192635519073543e-04,
	}
	lgamU = [...]float64{
		-7.72156649015328655494e-02, 6.32827064025093366517e-01, 1.45492250137234768737e+00,
		9.77717527963372745603e-01, 2.28963728064692451092e-01, 1.33810918536787660377e-02,
	}
	lgamV = [...]float64{
		1.0, 2.45597793713041134822e+00, 2.12848976379893395361e+00, 7.69285150456672783825e-01,
		1.04222645593369134254e-01, 3.21709242282423911810e-03,
	}
	lgamW = [...]float64{
		4.18938533204672725052e-01, 8.33333333333329678849e-02, -2.77777777728775536470e-03,
		7.93650558643019558500e-04, -5.95187557450339963135e-04, 8.36339918996282139126e-04,
		-1.63092934096575273989e-03,
	}
)

// lbeta returns log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a+b) for a, b
// > 0, as gonum's mathext computes it.
func lbeta(a, b float64) float64 {
	return Lgamma(a) + Lgamma(b) - Lgamma(a+b)
}

// Constants of gonum's Cephes port (mathext/internal/cephes).
const (
	machEp = 1.0 / (1 << 53)
	maxLog = 1024 * math.Ln2
	minLog = -1075 * math.Ln2
	maxGam = 171.624376956302725
	big    = 4.503599627370496e15
	biginv = 2.22044604925031308085e-16
)

// RegIncBeta returns the regularised incomplete beta function I_x(a, b)
// for a, b > 0 and 0 ≤ x ≤ 1 as gonum's mathext.RegIncBeta computes it
// on amd64 machines with FMA: its Go (Cephes' incbet) with every product
// rounded and this package's Exp, Log, Pow and Lgamma. It panics where
// mathext.RegIncBeta does: a or b not positive, x outside [0, 1].
func RegIncBeta(a, b, x float64) float64 {
	if a <= 0 || b <= 0 {
		panic("portable: RegIncBeta: a or b not positive")
	}
	if x <= 0 || x >= 1 {
		switch x {
		case 0:
			return 0
		case 1:
			return 1
		}
		panic("portable: RegIncBeta: x outside [0, 1]")
	}
	if b*x <= 1 && x <= 0.95 {
		return incbetFlip(incbetSeries(a, b, x), false)
	}
	w := 1 - x
	flip := false
	xc := w
	if x > a/(a+b) { // reverse a and b where x is above the mean
		flip = true
		a, b = b, a
		xc, x = x, w
	}
	if flip && b*x <= 1 && x <= 0.95 {
		return incbetFlip(incbetSeries(a, b, x), flip)
	}
	if float64(x*(a+b-2))-(a-1) < 0 { // the expansion that converges faster
		w = incbetFraction(a, b, x)
	} else {
		w = incbetFractionD(a, b, x) / xc
	}
	// w · x^a · (1−x)^b · Γ(a+b) / (a·Γ(a)·Γ(b))
	y := float64(a * Log(x))
	t := float64(b * Log(xc))
	if a+b < maxGam && math.Abs(y) < maxLog && math.Abs(t) < maxLog {
		t = Pow(xc, b)
		t *= Pow(x, a)
		t /= a
		t *= w
		t = float64(t * (1 / Exp(lbeta(a, b)))) // rounded: incbetFlip subtracts it from 1
		return incbetFlip(t, flip)
	}
	y += t - lbeta(a, b) // by logarithms
	y += Log(w / a)
	if y < minLog {
		return incbetFlip(0, flip)
	}
	return incbetFlip(Exp(y), flip)
}

// incbetFlip returns 1 − t where RegIncBeta reversed a and b, t otherwise.
func incbetFlip(t float64, flip bool) float64 {
	if !flip {
		return t
	}
	if t <= machEp {
		return 1 - machEp
	}
	return 1 - t
}

// incbetFraction is Cephes' incbcf: the first continued fraction
// expansion of the incomplete beta integral.
func incbetFraction(a, b, x float64) float64 {
	return continuedFraction(x, [8]float64{a, a + b, a, a + 1, 1, b - 1, a + 1, a + 2}, 1, -1)
}

// incbetFractionD is Cephes' incbd: the second continued fraction
// expansion, in x/(1−x).
func incbetFractionD(a, b, x float64) float64 {
	return continuedFraction(x/(1-x), [8]float64{a, b - 1, a, a + 1, 1, a + b, a + 1, a + 2}, -1, 1)
}

// continuedFraction evaluates incbcf's and incbd's continued fraction in z
// from the coefficients k, k₂ and k₆ moving by d2 and d6 a term, the rest
// as both do, to within 3 ulps or 300 terms.
func continuedFraction(z float64, k [8]float64, d2, d6 float64) float64 {
	k1, k2, k3, k4, k5, k6, k7, k8 := k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7]
	pkm2, qkm2, pkm1, qkm1 := 0.0, 1.0, 1.0, 1.0
	ans, r := 1.0, 1.0
	const thresh = 3 * machEp
	for n := 0; n <= 300; n++ {
		xk := -(z * k1 * k2) / (k3 * k4)
		pk := pkm1 + float64(pkm2*xk)
		qk := qkm1 + float64(qkm2*xk)
		pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk

		xk = (z * k5 * k6) / (k7 * k8)
		pk = pkm1 + float64(pkm2*xk)
		qk = qkm1 + float64(qkm2*xk)
		pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk

		if qk != 0 {
			r = pk / qk
		}
		t := 1.0
		if r != 0 {
			t = math.Abs((ans - r) / r)
			ans = r
		}
		if t < thresh {
			return ans
		}
		k1++
		k2 += d2
		k3 += 2
		k4 += 2
		k5++
		k6 += d6
		k7 += 2
		k8 += 2
		pkm2, pkm1, qkm2, qkm1 = rescale(pk, qk, pkm2, pkm1, qkm2, qkm1)
	}
	return ans
}

// rescale keeps a continued fraction's convergents pk/qk in range, as
// Cephes does: down by 2⁻⁵² when they grow past 2⁵², up when one falls
// below 2⁻⁵².
func rescale(pk, qk, pkm2, pkm1, qkm2, qkm1 float64) (float64, float64, float64, float64) {
	if math.Abs(qk)+math.Abs(pk) > big {
		pkm2 *= biginv
		pkm1 *= biginv
		qkm2 *= biginv
		qkm1 *= biginv
	}
	if math.Abs(qk) < biginv || math.Abs(pk) < biginv {
		pkm2 *= big
		pkm1 *= big
		qkm2 *= big
		qkm1 *= big
	}
	return pkm2, pkm1, qkm2, qkm1
}

// incbetSeries is Cephes' pseries: the power series of the incomplete
// beta integral, for b·x small and x not too close to 1.
func incbetSeries(a, b, x float64) float64 {
	ai := 1 / a
	u := (1 - b) * x
	v := u / (a + 1)
	t1 := v
	t := u
	n := 2.0
	s := 0.0
	z := machEp * ai
	for math.Abs(v) > z {
		u = (n - b) * x / n
		t *= u
		v = t / (a + n)
		s += v
		n++
	}
	s += t1
	s += ai
	u = float64(a * Log(x))
	if a+b < maxGam && math.Abs(u) < maxLog {
		t = 1 / Exp(lbeta(a, b))
		return float64(s * t * Pow(x, a)) // rounded: incbetFlip may subtract it from 1
	}
	t = -lbeta(a, b) + u + Log(s)
	if t < minLog {
		return 0
	}
	return Exp(t)
}

// StudentsTSurvival returns P(T > t) for Student's t with nu degrees of
// freedom, as gonum's distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}.Survival
// computes it on amd64 machines with FMA: ½·I_{ν/(ν+t²)}(ν/2, ½) for t >
// 0, one minus that below. The p-values of the Diebold–Mariano and paired
// t-tests take it, so that a report prints the same on every machine.
func StudentsTSurvival(t, nu float64) float64 {
	if t == 0 {
		return 0.5
	}
	x := nu / (float64(t*t) + nu)
	if t > 0 {
		return float64(0.5 * RegIncBeta(nu/2, 0.5, x))
	}
	return 1 - float64(0.5*RegIncBeta(nu/2, 0.5, x))
}
