package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// randView returns an r×c matrix of normal values whose rows are padded to
// stride c+pad, the padding NaN so that a kernel reading past a row shows.
func randView(rng *rand.Rand, r, c, pad int) blas64.General {
	g := blas64.General{Rows: r, Cols: c, Stride: c + pad, Data: make([]float64, max(r*(c+pad)-pad, 0))}
	for i := range g.Data {
		g.Data[i] = math.NaN()
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			g.Data[i*g.Stride+j] = rng.NormFloat64()
		}
	}
	return g
}

func at(g blas64.General, i, j int) float64 { return g.Data[i*g.Stride+j] }

func clone(g blas64.General) blas64.General {
	g.Data = append([]float64(nil), g.Data...)
	return g
}

// TestMulAddExact checks MulAdd, MulAddTA and MulAddTB against the sums
// their docs define, written out in scalar Go, bit for bit, on shapes that
// take the vector kernels, their edges and the plain loops, with padded
// rows; and against gonum's Dgemm within rounding.
func TestMulAddExact(t *testing.T) { checkMulAddExact(t) }

func checkMulAddExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []int{1, 3, 4, 5, 8, 13} {
		for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 14, 17, 130} {
			for _, k := range []int{1, 3, 4, 5, 16, 17, 35} {
				pad := (m + n + k) % 3
				c0 := randView(rng, m, n, pad)
				t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
					// c += a·b and c += aᵀ·b: c[i][j] fused over l in order.
					a, b := randView(rng, m, k, pad), randView(rng, k, n, 1)
					at_ := randView(rng, k, m, pad)
					c, ct := clone(c0), clone(c0)
					MulAdd(c, a, b)
					MulAddTA(ct, at_, b)
					// c += a·bᵀ: four chains, then the tail.
					bt := randView(rng, n, k, 2)
					cb := clone(c0)
					MulAddTB(cb, a, bt)
					k4 := k &^ 3
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							s, st := at(c0, i, j), at(c0, i, j)
							for l := 0; l < k; l++ {
								s = math.FMA(at(a, i, l), at(b, l, j), s)
								st = math.FMA(at(at_, l, i), at(b, l, j), st)
							}
							var p [4]float64
							for l := 0; l < k4; l++ {
								p[l%4] = math.FMA(at(a, i, l), at(bt, j, l), p[l%4])
							}
							d := (p[0] + p[2]) + (p[1] + p[3])
							for l := k4; l < k; l++ {
								d = math.FMA(at(a, i, l), at(bt, j, l), d)
							}
							if got := at(c, i, j); math.Float64bits(got) != math.Float64bits(s) {
								t.Fatalf("MulAdd c[%d][%d] = %v, want %v", i, j, got, s)
							}
							if got := at(ct, i, j); math.Float64bits(got) != math.Float64bits(st) {
								t.Fatalf("MulAddTA c[%d][%d] = %v, want %v", i, j, got, st)
							}
							if got, want := at(cb, i, j), at(c0, i, j)+d; math.Float64bits(got) != math.Float64bits(want) {
								t.Fatalf("MulAddTB c[%d][%d] = %v, want %v", i, j, got, want)
							}
						}
					}
					// The padding is untouched, and gonum agrees.
					for _, tc := range []struct {
						name   string
						got    blas64.General
						ta, tb blas.Transpose
						a, b   blas64.General
					}{
						{"MulAdd", c, blas.NoTrans, blas.NoTrans, a, b},
						{"MulAddTA", ct, blas.Trans, blas.NoTrans, at_, b},
						{"MulAddTB", cb, blas.NoTrans, blas.Trans, a, bt},
					} {
						want := clone(c0)
						blas64.Gemm(tc.ta, tc.tb, 1, tc.a, tc.b, 1, want)
						for i, v := range tc.got.Data {
							w := want.Data[i]
							if math.IsNaN(w) != math.IsNaN(v) || math.Abs(v-w) > 1e-12*(1+math.Abs(w)) {
								t.Fatalf("%s: element %d = %v, gonum %v", tc.name, i, v, w)
							}
						}
					}
				})
			}
		}
	}
}

func TestMulAddShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"MulAdd inner", func() {
			MulAdd(blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float64, 4)}, randView(rand.New(rand.NewPCG(1, 1)), 2, 3, 0), randView(rand.New(rand.NewPCG(1, 1)), 2, 2, 0))
		}},
		{"MulAddTB short data", func() {
			MulAddTB(blas64.General{Rows: 2, Cols: 2, Stride: 2, Data: make([]float64, 3)}, randView(rand.New(rand.NewPCG(1, 1)), 2, 3, 0), randView(rand.New(rand.NewPCG(1, 1)), 2, 3, 0))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

// TestMulAddEmptySum: with k = 0 (no terms) MulAdd, MulAddTA and MulAddTB
// leave c as it is, rather than panic on operands that hold no elements.
func TestMulAddEmptySum(t *testing.T) {
	empty := func(r int) blas64.General { return blas64.General{Rows: r, Cols: 0, Stride: 1} }
	for _, tc := range []struct {
		name string
		f    func(c blas64.General)
	}{
		{"MulAdd", func(c blas64.General) { MulAdd(c, empty(3), blas64.General{Rows: 0, Cols: 2, Stride: 2}) }},
		{"MulAddTA", func(c blas64.General) {
			MulAddTA(c, blas64.General{Rows: 0, Cols: 3, Stride: 3}, blas64.General{Rows: 0, Cols: 2, Stride: 2})
		}},
		{"MulAddTB", func(c blas64.General) { MulAddTB(c, empty(3), empty(2)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: []float64{1, 2, 3, 4, 5, 6}}
			tc.f(c)
			for i, v := range c.Data {
				if v != float64(i+1) {
					t.Fatalf("c = %v, want it unchanged", c.Data)
				}
			}
		})
	}
}

// TestGemmShapes: Gemm panics on operands whose shapes do not match, also
// where a product is long enough for gemmRows and c or b is a view whose
// parent holds the rows the view lacks, which must stay untouched.
func TestGemmShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const long = 2*gemmChunk + 500
	view := func(parent *mat.Dense, rows int) *mat.Dense {
		_, c := parent.Dims()
		return parent.Slice(0, rows, 0, c).(*mat.Dense)
	}
	for _, tc := range []struct {
		name   string
		ta, tb bool
		a, b   *mat.Dense
		c      *mat.Dense // a view of parent
		parent *mat.Dense
	}{
		{name: "c short", a: randDense(rng, long, 4), b: randDense(rng, 4, 2), parent: mat.NewDense(long, 2, nil)},
		{name: "b short", ta: true, a: randDense(rng, long, 4), b: view(randDense(rng, long, 2), long-500), parent: mat.NewDense(4, 2, nil)},
		{name: "c short, b transposed", tb: true, a: randDense(rng, long, 4), b: randDense(rng, 2, 4), parent: mat.NewDense(long, 2, nil)},
		{name: "inner", a: randDense(rng, 5, 3), b: randDense(rng, 4, 2), parent: mat.NewDense(5, 2, nil)},
		{name: "c narrow", a: randDense(rng, 5, 3), b: randDense(rng, 3, 2), parent: mat.NewDense(5, 1, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := tc.parent.Dims()
			c := tc.parent
			if r == long {
				c = view(tc.parent, long-500)
			}
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
				if mat.Norm(tc.parent, 1) != 0 {
					t.Error("c's parent written")
				}
			}()
			Gemm(tc.ta, tc.tb, 1, tc.a, tc.b, 0, c)
		})
	}
}

// BenchmarkMulAdd compares the kernels with gonum's Dgemm on the products
// of one step of the GRU's block (hidden 16, 128 columns), of a cold
// forecast (6 columns) and of a block whose width is not a multiple of 8.
func BenchmarkMulAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct {
		name    string
		m, n, k int
		tb      bool
	}{
		{"gates 48x128x3", 48, 128, 3, false},
		{"recurrent 32x128x16", 32, 128, 16, false},
		{"weight-grad 32x16x128", 32, 16, 128, true},
		// A forecast's six windows, and the edge of a block of 76 columns.
		{"gates 48x6x3", 48, 6, 3, false},
		{"recurrent 32x6x16", 32, 6, 16, false},
		{"recurrent 32x76x16", 32, 76, 16, false},
	} {
		a := randView(rng, s.m, s.k, 0)
		bm := randView(rng, s.k, s.n, 0)
		tb := blas.NoTrans
		if s.tb {
			bm = randView(rng, s.n, s.k, 0)
			tb = blas.Trans
		}
		c := randView(rng, s.m, s.n, 0)
		b.Run(s.name+"/gonum", func(b *testing.B) {
			for b.Loop() {
				blas64.Gemm(blas.NoTrans, tb, 1, a, bm, 1, c)
			}
		})
		b.Run(s.name+"/fma", func(b *testing.B) {
			for b.Loop() {
				if s.tb {
					MulAddTB(c, a, bm)
				} else {
					MulAdd(c, a, bm)
				}
			}
		})
	}
}

// BenchmarkGemmNarrow compares Gemm (through MulAdd and its kin) with
// gonum's Dgemm on a layer of 16 inputs and one output over 1024 rows: the
// shapes where the vector kernels have no tile to run.
func BenchmarkGemmNarrow(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, w, y := randView(rng, 1024, 16, 0), randView(rng, 16, 1, 0), randView(rng, 1024, 1, 0)
	dx, dw := randView(rng, 1024, 16, 0), randView(rng, 16, 1, 0)
	for _, s := range []struct {
		name   string
		ta, tb blas.Transpose
		a, b   blas64.General
		beta   float64
		c      blas64.General
	}{
		{"forward", blas.NoTrans, blas.NoTrans, x, w, 0, y},
		{"weight-grad", blas.Trans, blas.NoTrans, x, y, 1, dw},
		{"input-grad", blas.NoTrans, blas.Trans, y, w, 0, dx},
	} {
		b.Run(s.name+"/gonum", func(b *testing.B) {
			for b.Loop() {
				blas64.Gemm(s.ta, s.tb, 1, s.a, s.b, s.beta, s.c)
			}
		})
		b.Run(s.name+"/gemm", func(b *testing.B) {
			for b.Loop() {
				gemm(s.ta, s.tb, 1, s.a, s.b, s.beta, s.c)
			}
		})
	}
}

// TestGemmAgreesWithGonum checks Gemm against gonum's Dgemm for every
// transposition, alpha and beta, including a product long enough for
// gemmRows and beta 0 over a c of NaN (which must not be read).
func TestGemmAgreesWithGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range []int{5, 2100} {
		for _, ta := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			for _, tb := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				for _, ab := range [][2]float64{{1, 0}, {1, 1}, {0.5, 1}, {1, 0.25}} {
					// With a transposed, m is the length of the sums (the
					// weight gradient of a layer over m rows).
					mc, k, n := m, 13, 17
					if ta == blas.Trans {
						mc, k = k, m
					}
					a, b := randView(rng, mc, k, 1), randView(rng, k, n, 2)
					if ta == blas.Trans {
						a = randView(rng, k, mc, 1)
					}
					if tb == blas.Trans {
						b = randView(rng, n, k, 0)
					}
					m := mc
					c := randView(rng, m, n, 3)
					if ab[1] == 0 {
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								c.Data[i*c.Stride+j] = math.NaN()
							}
						}
					}
					want, got := clone(c), clone(c)
					blas64.Gemm(ta, tb, ab[0], a, b, ab[1], want)
					Gemm(ta == blas.Trans, tb == blas.Trans, ab[0], rawer(a), rawer(b), ab[1], rawer(got))
					for i, w := range want.Data {
						if v := got.Data[i]; math.IsNaN(w) != math.IsNaN(v) || math.Abs(v-w) > 1e-12*(1+math.Abs(w)) {
							t.Fatalf("m %d, %v×%v, alpha %v, beta %v: element %d = %v, gonum %v", m, ta, tb, ab[0], ab[1], i, v, w)
						}
					}
				}
			}
		}
	}
}

type rawer blas64.General

func (r rawer) RawMatrix() blas64.General { return blas64.General(r) }

// TestGemmNNMatchesGonum holds gemmNN, which other machines use for the
// products that Gemm leaves to gonum, to gonum's Dgemm on amd64, bit for
// bit: small and large shapes (gonum works in parallel blocks of 64 above
// a few blocks), views with padded strides, zeros in a (skipped terms),
// and alpha and beta of every kind.
func TestGemmNNMatchesGonum(t *testing.T) {
	if !gonumAsm {
		t.Skip("gonum's axpy is assembly on amd64 only; TestGoldenBits checks gemmNN's bits")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 16, 16}, {157, 157, 16}, {300, 70, 130}} {
		m, k, n := sz[0], sz[1], sz[2]
		for _, ab := range [][2]float64{{0.375, 0}, {-1.7, 1}, {2, 0.3}, {0, 0.5}, {1, 2}} {
			a, b := randView(rng, m, k, 3), randView(rng, k, n, 1)
			for i := 0; i < m; i++ {
				a.Data[i*a.Stride+rng.IntN(k)] = 0
			}
			c := randView(rng, m, n, 2)
			want := blas64.General{Rows: m, Cols: n, Stride: c.Stride, Data: append([]float64(nil), c.Data...)}
			gemmNN(ab[0], a, b, ab[1], c)
			blas64.Gemm(blas.NoTrans, blas.NoTrans, ab[0], a, b, ab[1], want)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					if g, w := c.Data[i*c.Stride+j], want.Data[i*c.Stride+j]; math.Float64bits(g) != math.Float64bits(w) {
						t.Fatalf("%dx%dx%d, alpha %g, beta %g: c[%d,%d] = %v, gonum %v", m, k, n, ab[0], ab[1], i, j, g, w)
					}
				}
			}
		}
	}
}
