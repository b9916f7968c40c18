package gru

import (
	"math"
	"math/rand/v2"
	"testing"
)

// cellInputs returns n arguments: mostly gate-like values in (0, 1) and
// states in (−1, 1), with every so often a value off that range, a signed
// zero, a subnormal, an infinity or a NaN, so that the kernels' lanes meet
// what the Go loops meet.
func cellInputs(rng *rand.Rand, n int) []float64 {
	special := []float64{0, math.Copysign(0, -1), 1, -1, 5e-324, -5e-324, 1e300, -1e300, math.Inf(1), math.Inf(-1), math.NaN(), 0.5, 1 - 1.0/(1<<53)}
	x := make([]float64, n)
	for i := range x {
		switch rng.IntN(10) {
		case 0:
			x[i] = special[rng.IntN(len(special))]
		case 1:
			x[i] = rng.NormFloat64() * 1e3
		default:
			x[i] = 2*rng.Float64() - 1
		}
	}
	return x
}

func sameBits(a, b []float64) int {
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// checkCellExact compares mulTo, blend, cellBack and gateBack with the
// documented formulas, written out here with every product rounded before
// an addition takes it,
// bit for bit, for every length up to 19 and one of a block (16 × 128) and
// at offsets 0 to 3 into the arrays, so that the kernels' groups of four,
// their tails and unaligned loads are all met.
func checkCellExact(t *testing.T) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	lengths := []int{2048}
	for n := range 20 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for off := range 4 {
			in := make([][]float64, 6)
			for i := range in {
				in[i] = cellInputs(rng, off+n)[off:]
			}
			a, b, c, d, e, f := in[0], in[1], in[2], in[3], in[4], in[5]
			out := func() []float64 { return make([]float64, off+n)[off:] }

			got, want := out(), out()
			mulTo(got, a, b)
			for k := range want {
				want[k] = a[k] * b[k]
			}
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("mulTo n=%d off=%d: [%d] = %v, want %v", n, off, i, got[i], want[i])
			}

			blend(got, a, b, c)
			for k := range want {
				want[k] = float64((1-a[k])*c[k]) + float64(a[k]*b[k])
			}
			if i := sameBits(got, want); i >= 0 {
				t.Fatalf("blend n=%d off=%d: [%d] = %v, want %v", n, off, i, got[i], want[i])
			}

			// cellBack(dz, dan, dh, z, n, h) with dh = d.
			dz, dan, dh := out(), out(), append([]float64(nil), d...)
			wz, wan, wh := out(), out(), out()
			cellBack(dz, dan, dh, a, b, c)
			for k := range wz {
				x := d[k] * (b[k] - c[k])
				x *= a[k]
				wz[k] = x * (1 - a[k])
				wan[k] = d[k] * a[k] * (1 - float64(b[k]*b[k]))
				wh[k] = d[k] * (1 - a[k])
			}
			for name, p := range map[string][2][]float64{"dz": {dz, wz}, "dan": {dan, wan}, "dh": {dh, wh}} {
				if i := sameBits(p[0], p[1]); i >= 0 {
					t.Fatalf("cellBack n=%d off=%d: %s[%d] = %v, want %v", n, off, name, i, p[0][i], p[1][i])
				}
			}

			// gateBack(dh, dr, drh, r, h) with dh = e on entry, drh = f.
			dh, dr := append([]float64(nil), e...), out()
			wh, wr := out(), out()
			gateBack(dh, dr, f, a, c)
			for k := range wh {
				wh[k] = e[k] + float64(f[k]*a[k])
				x := f[k] * c[k]
				x *= a[k]
				wr[k] = x * (1 - a[k])
			}
			for name, p := range map[string][2][]float64{"dh": {dh, wh}, "dr": {dr, wr}} {
				if i := sameBits(p[0], p[1]); i >= 0 {
					t.Fatalf("gateBack n=%d off=%d: %s[%d] = %v, want %v", n, off, name, i, p[0][i], p[1][i])
				}
			}
		}
	}
}

func TestCellExact(t *testing.T) {
	if !haveAVX {
		t.Log("no AVX: the cell's loops run in Go")
	}
	checkCellExact(t)
}
