// Package nn holds the small neural-network pieces shared by the teacher and
// the student: trainable parameters, dense (linear) layers, activations, a
// two-layer MLP, the Adam optimiser with L2 weight decay (as PyTorch's
// Adam), gradient clipping and a finite-difference gradient checker.
//
// All layers work on a whole batch at once: a batch is a gonum *mat.Dense whose
// rows are independent samples (for traffic models, one row per node per
// snapshot), and every matrix product goes through Gemm or MulAdd and its
// kin (AVX2 and FMA kernels on amd64, the same results in Go elsewhere), as
// the GRU's gates go through SigmoidTo and TanhTo.
//
// The kernels and activations give the same bits on every machine: the Go
// paths round every product that the compiler could otherwise fuse into an
// addition (arm64 does, and amd64 at GOAMD64=v3), exp handles its whole
// range itself, and Softplus takes its logarithm from portable.Log (amd64's
// math.Log everywhere), not from math.Log, whose last bits differ between
// amd64 and other machines.
// TestGoldenBits holds them to hashes of their bits written on amd64; CI
// runs it on arm64 under qemu.
//
// Layers keep the activations of their last Forward call and accumulate
// parameter gradients in Backward; call ZeroGrad between optimiser steps.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// Param is a trainable tensor (stored as a matrix) with its gradient.
type Param struct {
	Name string
	W    *mat.Dense // value
	G    *mat.Dense // gradient, same shape as W, accumulated by Backward
}

// NewParam returns a zero parameter of shape r×c.
func NewParam(name string, r, c int) *Param {
	return &Param{Name: name, W: mat.NewDense(r, c, nil), G: mat.NewDense(r, c, nil)}
}

// CountParams returns the number of values in parameters of the given
// shapes, each shape a list of factors whose product is the parameter's
// size (the GRU's input projection is {in, 3, hidden}), and false if a
// factor is negative or the count does not fit in an int. Loaders use it to
// compare what a file's metadata asks for with what the file holds before
// allocating anything, so that a size in the metadata alone cannot make
// them allocate more than the file justifies.
func CountParams(shapes ...[]int) (int, bool) {
	n := 0
	for _, shape := range shapes {
		p := 1
		for _, f := range shape {
			if f < 0 || (f != 0 && p > math.MaxInt/f) {
				return 0, false
			}
			p *= f
		}
		if n > math.MaxInt-p {
			return 0, false
		}
		n += p
	}
	return n, true
}

// MLPParams returns the number of values in the parameters of
// NewMLP(name, in, hidden, out, rng), as CountParams does.
func MLPParams(in, hidden, out int) (int, bool) {
	return CountParams([]int{in, hidden}, []int{hidden}, []int{hidden, out}, []int{out})
}

// ZeroGrad sets the gradients of ps to zero.
func ZeroGrad(ps []*Param) {
	for _, p := range ps {
		p.G.Zero()
	}
}

// GlorotUniform fills p.W with U(-a, a), a = sqrt(6/(fanIn+fanOut)).
func GlorotUniform(p *Param, fanIn, fanOut int, rng *rand.Rand) {
	a := math.Sqrt(6 / float64(fanIn+fanOut))
	raw := p.W.RawMatrix()
	for i := 0; i < raw.Rows; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for j := range row {
			row[j] = (2*rng.Float64() - 1) * a
		}
	}
}

// Gemm computes c = alpha*op(a)*op(b) + beta*c on gonum matrices (views
// allowed). It exists so that gradients can be accumulated in place (beta =
// 1) without temporaries, so that the tall, narrow products of batched
// layers (thousands of rows, tens of columns), which gonum's Dgemm runs on
// one goroutine, use every core (see gemmRows), and so that the products of
// the layers (alpha 1, beta 0 or 1, at most one operand transposed) run
// through MulAdd and MulAddTA, several times faster than gonum's Dgemm on
// these shapes; the others go to gonum's Dgemm. It panics if the shapes
// do not match.
func Gemm(transA, transB bool, alpha float64, a, b mat.RawMatrixer, beta float64, c mat.RawMatrixer) {
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	am, bm, cm := a.RawMatrix(), b.RawMatrix(), c.RawMatrix()
	// Checked here, before gemmRows cuts the operands into row chunks:
	// a chunk past the rows of a view of c (or b) is still inside its
	// parent's array, and the products would run on it unchecked.
	m, k := am.Rows, am.Cols
	if transA {
		m, k = k, m
	}
	kb, n := bm.Rows, bm.Cols
	if transB {
		kb, n = n, kb
	}
	if k != kb || cm.Rows != m || cm.Cols != n {
		panic(fmt.Sprintf("nn: Gemm of %d×%d by %d×%d into %d×%d", m, k, kb, n, cm.Rows, cm.Cols))
	}
	if am.Rows >= 2*gemmChunk {
		gemmRows(ta, tb, alpha, am, bm, beta, cm)
		return
	}
	gemm(ta, tb, alpha, am, bm, beta, cm)
}

// gemm is blas64.Gemm, through MulAdd or MulAddTA where alpha is 1, beta 0
// or 1 and no more than one operand is transposed (b transposed: MulAdd on
// a copy of bᵀ).
//
// Off amd64, the products with neither operand transposed but another
// alpha or beta go through gemmNN, which gives the bits gonum's Dgemm has
// on amd64 (its axpy is assembly there, Go that arm64 fuses elsewhere);
// the other cases that reach gonum (both operands transposed, or one
// transposed with another alpha or beta) are not held to the same bits on
// every machine. No layer makes such a product.
func gemm(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	if alpha != 1 || (beta != 0 && beta != 1) || (ta == blas.Trans && tb == blas.Trans) {
		if ta == blas.NoTrans && tb == blas.NoTrans && !gonumAsm {
			gemmNN(alpha, a, b, beta, c)
			return
		}
		blas64.Gemm(ta, tb, alpha, a, b, beta, c)
		return
	}
	if beta == 0 {
		for i := 0; i < c.Rows; i++ {
			clear(c.Data[i*c.Stride : i*c.Stride+c.Cols])
		}
	}
	switch {
	case ta == blas.Trans:
		MulAddTA(c, a, b)
	case tb == blas.Trans:
		// A layer's b is its weights, tens by tens: MulAdd on bᵀ runs
		// 4×8 tiles where MulAddTB, whose dot products are as short as
		// a layer is wide, would spend more on adding up its chains.
		bt := blas64.General{Rows: b.Cols, Cols: b.Rows, Stride: b.Rows, Data: make([]float64, b.Rows*b.Cols)}
		for i := 0; i < b.Rows; i++ {
			for j, v := range b.Data[i*b.Stride : i*b.Stride+b.Cols] {
				bt.Data[j*bt.Stride+i] = v
			}
		}
		MulAdd(c, a, bt)
	default:
		MulAdd(c, a, b)
	}
}

// gonumAsm reports whether gonum's axpy, which its Dgemm runs on, is its
// amd64 assembly, whose products are rounded before their additions.
var gonumAsm = runtime.GOARCH == "amd64"

// gemmNN sets c = alpha·a·b + beta·c (neither operand transposed) as
// gonum's Dgemm does on amd64, bit for bit (TestGemmNNMatchesGonum): c
// scaled by beta (zeroed for 0), then for every row i and every l in
// order, c_i += (alpha·a_il)·b_l, products rounded, skipping the terms
// whose alpha·a_il is 0.
func gemmNN(alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	for i := 0; i < c.Rows; i++ {
		ci := c.Data[i*c.Stride : i*c.Stride+c.Cols]
		switch beta {
		case 0:
			clear(ci)
		case 1:
		default:
			for j := range ci {
				ci[j] *= beta
			}
		}
		if alpha == 0 {
			continue
		}
		for l, v := range a.Data[i*a.Stride : i*a.Stride+a.Cols] {
			tmp := alpha * v
			if tmp == 0 {
				continue
			}
			portable.Axpy(tmp, b.Data[l*b.Stride:l*b.Stride+b.Cols], ci)
		}
	}
}

// gemmChunk is the number of rows of the long operand per task of gemmRows.
// It is fixed (not derived from the core count) so that results are the same
// bit for bit on every machine.
const gemmChunk = 1024

func rowsOf(g blas64.General, lo, hi int) blas64.General {
	return blas64.General{Rows: hi - lo, Cols: g.Cols, Stride: g.Stride, Data: g.Data[lo*g.Stride : (hi-1)*g.Stride+g.Cols]}
}

// gemmRows splits a product whose operand a has many rows into row chunks
// run concurrently. Without transposing a, each chunk of rows of a gives the
// same rows of c. With aᵀ (c = alpha·aᵀ·op(b) + beta·c, a sum over the rows of
// a and b, as in weight gradients), each chunk's partial product goes to its
// own buffer and the partials are added in chunk order, so the sum does not
// depend on scheduling.
func gemmRows(ta, tb blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) {
	n := a.Rows
	chunks := (n + gemmChunk - 1) / gemmChunk
	if ta == blas.NoTrans {
		ParallelChunks(chunks, func(i int) {
			lo, hi := i*gemmChunk, min((i+1)*gemmChunk, n)
			gemm(ta, tb, alpha, rowsOf(a, lo, hi), b, beta, rowsOf(c, lo, hi))
		})
		return
	}
	if tb != blas.NoTrans {
		gemm(ta, tb, alpha, a, b, beta, c)
		return
	}
	parts := make([]blas64.General, chunks)
	ParallelChunks(chunks, func(i int) {
		lo, hi := i*gemmChunk, min((i+1)*gemmChunk, n)
		parts[i] = blas64.General{Rows: c.Rows, Cols: c.Cols, Stride: c.Cols, Data: make([]float64, c.Rows*c.Cols)}
		gemm(ta, tb, 1, rowsOf(a, lo, hi), rowsOf(b, lo, hi), 0, parts[i])
	})
	for i := 0; i < c.Rows; i++ {
		row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
		for j := range row {
			var sum float64
			for _, p := range parts {
				sum += p.Data[i*c.Cols+j]
			}
			if beta == 0 { // c is not read, as BLAS promises: 0·NaN is NaN
				row[j] = alpha * sum
			} else {
				row[j] = float64(beta*row[j]) + float64(alpha*sum) // rounded: no machine fuses them
			}
		}
	}
}

// Resize returns m reshaped to r×c: m itself if it already has that shape,
// otherwise m zeroed and reshaped in place when its backing array is large
// enough, otherwise a new zero r×c matrix. Layers use it to keep their
// buffers across batches, also of varying sizes, without allocating. m must
// not be a view of another matrix.
func Resize(m *mat.Dense, r, c int) *mat.Dense {
	if m != nil {
		mr, mc := m.Dims()
		if mr == r && mc == c {
			return m
		}
		if cap(m.RawMatrix().Data) >= r*c {
			m.Reset()
			m.ReuseAs(r, c)
			return m
		}
	}
	return mat.NewDense(r, c, nil)
}

// Cols returns the view of columns [from, to) of m.
func Cols(m *mat.Dense, from, to int) *mat.Dense {
	r, _ := m.Dims()
	return m.Slice(0, r, from, to).(*mat.Dense)
}

// ApplyTo is Apply for a function of slices (SoftplusTo, SigmoidTo,
// TanhTo: f(d, x) sets d[j] from x[j]), given many rows at once where dst
// and src are contiguous, so that its vector kernels run long.
func ApplyTo(dst, src *mat.Dense, f func(dst, x []float64)) {
	d, s := dst.RawMatrix(), src.RawMatrix()
	checkSameShape("ApplyTo", d, s)
	if rowWorkers(s.Rows) <= 1 {
		applyRowsTo(d, s, f, 0, s.Rows) // no closure: nothing allocated
		return
	}
	ParallelRows(s.Rows, func(lo, hi int) { applyRowsTo(d, s, f, lo, hi) })
}

// checkSameShape panics unless d and s have the same shape: Apply and
// ApplyTo index dst by src's shape, and a narrower or shorter view of a
// larger matrix would have its parent's elements written.
func checkSameShape(op string, d, s blas64.General) {
	if d.Rows != s.Rows || d.Cols != s.Cols {
		panic(fmt.Sprintf("nn: %s of %d×%d into %d×%d", op, s.Rows, s.Cols, d.Rows, d.Cols))
	}
}

// applyRowsTo is ApplyTo for rows [lo, hi).
func applyRowsTo(d, s blas64.General, f func(dst, x []float64), lo, hi int) {
	if d.Stride == s.Cols && s.Stride == s.Cols {
		f(d.Data[lo*s.Cols:hi*s.Cols], s.Data[lo*s.Cols:hi*s.Cols])
		return
	}
	for i := lo; i < hi; i++ {
		f(d.Data[i*d.Stride:i*d.Stride+s.Cols], s.Data[i*s.Stride:i*s.Stride+s.Cols])
	}
}

// MulSigmoid sets d[i] *= Sigmoid(a[i]) for every i of d (a at least as
// long): the gradient through a softplus, whose derivative is the sigmoid.
// The sigmoids go through SigmoidTo, a block at a time.
func MulSigmoid(d, a []float64) {
	var buf [512]float64
	for i := 0; i < len(d); i += len(buf) {
		n := min(len(buf), len(d)-i)
		SigmoidTo(buf[:n], a[i:i+n])
		for j, v := range buf[:n] {
			d[i+j] *= v
		}
	}
}

// Apply sets dst[i][j] = f(src[i][j]); dst and src must have equal shapes
// (Apply panics otherwise) and may be the same matrix. Rows are shared out
// over the cores (ParallelRows), so f is called concurrently: the
// activations it serves (Softplus) cost as much as the products around
// them.
func Apply(dst, src *mat.Dense, f func(float64) float64) {
	d, s := dst.RawMatrix(), src.RawMatrix()
	checkSameShape("Apply", d, s)
	ParallelRows(s.Rows, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			dr := d.Data[i*d.Stride : i*d.Stride+s.Cols]
			sr := s.Data[i*s.Stride : i*s.Stride+s.Cols]
			for j, v := range sr {
				dr[j] = f(v)
			}
		}
	})
}

// Softplus returns log(1+e^x), computed without overflow as
// max(x, 0) + log1p(e^-|x|).
//
// log1p(e) for e in (0, 1] is computed as log(u)·e/(u−1) with u = 1+e
// (Goldberg's correction of the rounding of 1+e; Higham, Accuracy and
// Stability of Numerical Algorithms, §1.14.1), because math.Log has an
// assembly implementation and math.Log1p has none: softplus over every row
// is what φ's epochs and Phase Θ spend most on. The logarithm is
// portable.Log: math.Log's amd64 assembly there, written out in Go
// elsewhere, so that other machines get its bits too. With exp for
// math.Exp, it is 1.3 times faster than max(x, 0) +
// math.Log1p(math.Exp(−|x|)) (BenchmarkSoftplus; 1.2 times with math.Exp)
// and within 4.7e-16 relative of that form of the correctly rounded e^−|x|
// (TestSoftplusAccuracy).
func Softplus(x float64) float64 {
	if x > 40 {
		return x // e^-40 is below half an ulp of x
	}
	e := exp(-math.Abs(x))
	l := e
	if u := 1 + e; u != 1 {
		l = float64(portable.Log(u)*e) / (u - 1)
	}
	return max(x, 0) + l
}

// Sigmoid returns 1/(1+e^-x), the derivative of Softplus, within four ulps
// (TestSigmoidAccuracy). The same form serves x < 0, where e^-x is large and
// 1/(1+e^-x) is as accurate as e^x/(1+e^x), without a branch that random
// signs mispredict; it is 0 below x = −709.78, where e^-x overflows and the
// sigmoid is below the smallest normal float64.
func Sigmoid(x float64) float64 {
	return 1 / (1 + exp(-x))
}

// Tanh returns tanh(x) as math.Tanh computes it on amd64, with exp for math.Exp:
// for 0.625 ≤ |x| ≤ 44, 1 − 2/(e^2|x| + 1) with x's sign; below, math.Tanh's
// rational approximation, written out here with every product rounded (as
// act_amd64.s computes it; the same bits as math.Tanh where no compiler
// fuses its products), ±0 kept; beyond, and for NaN, math.Tanh itself (±1,
// NaN). The GRU's candidate state evaluates it for every row and step.
func Tanh(x float64) float64 {
	z := math.Abs(x)
	switch {
	case z < 0.625:
		if x == 0 {
			return x
		}
		s := float64(x * x) // rounded: it is also added (s + tanhQ0)
		num := float64(float64(float64(tanhP0*s)+tanhP1)*s) + tanhP2
		den := float64(float64(float64(float64(s+tanhQ0)*s)+tanhQ1)*s) + tanhQ2
		return x + float64(float64(x*s)*num)/den
	case z <= 44:
		return math.Copysign(1-2/(exp(2*z)+1), x)
	}
	return math.Tanh(x)
}

// The coefficients of math.Tanh's rational approximation below 0.625
// (Cephes).
const (
	tanhP0 = -9.64399179425052238628e-1
	tanhP1 = -9.92877231001918586564e1
	tanhP2 = -1.61468768441708447952e3
	tanhQ0 = 1.12811678491632931402e2
	tanhQ1 = 2.23548839060100448583e3
	tanhQ2 = 4.84406305325125486048e3
)

// SigmoidTo sets dst[i] = Sigmoid(x[i]) for every i of x (dst at least as
// long): the same bits, four at a time in AVX2 registers where the machine
// has them.
func SigmoidTo(dst, x []float64) { applyKernel(dst, x, sigmoid4, Sigmoid) }

// SoftplusTo sets dst[i] = Softplus(x[i]) for every i of x (dst at least as
// long): the same bits, four at a time in AVX2 registers where the machine
// has them.
func SoftplusTo(dst, x []float64) { applyKernel(dst, x, softplus4, Softplus) }

// TanhTo sets dst[i] = Tanh(x[i]) for every i of x (dst at least as long):
// the same bits, four at a time in AVX2 registers where the machine has
// them.
func TanhTo(dst, x []float64) { applyKernel(dst, x, tanh4, Tanh) }

// applyKernel sets dst[i] = f(x[i]) by the assembly kernel k (sigmoid4 and
// its kin: fours, until one with an argument off its main path) where the
// machine can run it, and by f for the fours k stops at and the tail.
func applyKernel(dst, x []float64, k func(dst, x *float64, n int) int, f func(float64) float64) {
	dst = dst[:len(x)]
	i := 0
	if haveAVX2 {
		for n := len(x) &^ 3; i < n; {
			i += k(&dst[i], &x[i], n-i)
			for end := min(i+4, n); i < end; i++ {
				dst[i] = f(x[i])
			}
		}
	}
	for ; i < len(x); i++ {
		dst[i] = f(x[i])
	}
}

// AddRowVector adds the 1×c row vector b to every row of m.
func AddRowVector(m, b *mat.Dense) {
	raw := m.RawMatrix()
	checkRowVector("AddRowVector", b, raw.Cols)
	bv := b.RawRowView(0)
	for i := 0; i < raw.Rows; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for j := range row {
			row[j] += bv[j]
		}
	}
}

// AddColSums adds the column sums of m to the 1×c row vector g: the bias
// gradient of a layer whose output gradient is m.
func AddColSums(g, m *mat.Dense) {
	raw := m.RawMatrix()
	checkRowVector("AddColSums", g, raw.Cols)
	gv := g.RawRowView(0)
	for i := 0; i < raw.Rows; i++ {
		row := raw.Data[i*raw.Stride : i*raw.Stride+raw.Cols]
		for j, v := range row {
			gv[j] += v
		}
	}
}

// checkRowVector panics unless v is 1×cols: a wider v would be read or
// written in part without a word, a narrower one panic on an index.
func checkRowVector(op string, v *mat.Dense, cols int) {
	if r, c := v.Dims(); r != 1 || c != cols {
		panic(fmt.Sprintf("nn: %s with a %d×%d vector for %d columns", op, r, c, cols))
	}
}

// Linear is a dense layer y = x·W + b with W of shape in×out.
type Linear struct {
	W, B *Param
}

// NewLinear returns a Glorot-initialised in→out layer with zero bias.
func NewLinear(name string, in, out int, rng *rand.Rand) *Linear {
	l := &Linear{W: NewParam(name+".W", in, out), B: NewParam(name+".b", 1, out)}
	GlorotUniform(l.W, in, out, rng)
	return l
}

// In returns the layer's input width.
func (l *Linear) In() int { r, _ := l.W.W.Dims(); return r }

// Out returns the layer's output width.
func (l *Linear) Out() int { _, c := l.W.W.Dims(); return c }

// Params returns the layer's parameters.
func (l *Linear) Params() []*Param { return []*Param{l.W, l.B} }

// Forward sets dst = x·W + b.
func (l *Linear) Forward(dst, x *mat.Dense) {
	Gemm(false, false, 1, x, l.W.W, 0, dst)
	AddRowVector(dst, l.B.W)
}

// Backward accumulates dW += xᵀ·dy and db += colsum(dy), and, when dx is not
// nil, sets dx = dy·Wᵀ.
func (l *Linear) Backward(dx, x, dy *mat.Dense) {
	Gemm(true, false, 1, x, dy, 1, l.W.G)
	AddColSums(l.B.G, dy)
	if dx != nil {
		Gemm(false, true, 1, dy, l.W.W, 0, dx)
	}
}

// MLP is a two-layer perceptron y = softplus(x·W1 + b1)·W2 + b2, the decoder
// of the teacher and the student's φ.
type MLP struct {
	L1, L2 *Linear

	x, a, h, dh *mat.Dense // cached input, pre-activation, hidden; hidden gradient
	out, dx     *mat.Dense
}

// NewMLP returns an in→hidden→out MLP.
func NewMLP(name string, in, hidden, out int, rng *rand.Rand) *MLP {
	return &MLP{L1: NewLinear(name+".l1", in, hidden, rng), L2: NewLinear(name+".l2", hidden, out, rng)}
}

// Params returns the MLP's parameters.
func (m *MLP) Params() []*Param { return append(m.L1.Params(), m.L2.Params()...) }

// Forward returns the output for x. The returned matrix is owned by m and is
// overwritten by the next call; x must stay unchanged until Backward.
func (m *MLP) Forward(x *mat.Dense) *mat.Dense {
	r, _ := x.Dims()
	m.x = x
	m.a = Resize(m.a, r, m.L1.Out())
	m.h = Resize(m.h, r, m.L1.Out())
	m.out = Resize(m.out, r, m.L2.Out())
	m.L1.Forward(m.a, x)
	ApplyTo(m.h, m.a, SoftplusTo)
	m.L2.Forward(m.out, m.h)
	return m.out
}

// Backward accumulates parameter gradients for the output gradient dy of the
// last Forward and returns the input gradient (owned by m). It panics,
// saying why, without a Forward before it or with dy not of the last
// output's shape.
func (m *MLP) Backward(dy *mat.Dense) *mat.Dense {
	if m.x == nil {
		panic("nn: MLP.Backward before any Forward")
	}
	r, c := m.x.Dims()
	if dr, dc := dy.Dims(); dr != r || dc != m.L2.Out() {
		panic(fmt.Sprintf("nn: MLP.Backward of a %d×%d gradient after a Forward of %d rows to %d outputs", dr, dc, r, m.L2.Out()))
	}
	m.dh = Resize(m.dh, r, m.L1.Out())
	m.dx = Resize(m.dx, r, c)
	m.L2.Backward(m.dh, m.h, dy)
	ad, dd, w := m.a.RawMatrix().Data, m.dh.RawMatrix().Data, m.L1.Out()
	if rowWorkers(r) <= 1 {
		MulSigmoid(dd[:r*w], ad[:r*w])
	} else {
		ParallelRows(r, func(lo, hi int) { MulSigmoid(dd[lo*w:hi*w], ad[lo*w:hi*w]) })
	}
	m.L1.Backward(m.dx, m.x, m.dh)
	return m.dx
}

// Copy copies the values of src into dst; the two lists must match in order
// and shapes (as returned by Params of two models of one configuration).
func Copy(dst, src []*Param) error {
	if len(dst) != len(src) {
		return fmt.Errorf("copy params: %d destinations for %d sources", len(dst), len(src))
	}
	for i := range dst {
		dr, dc := dst[i].W.Dims()
		sr, sc := src[i].W.Dims()
		if dr != sr || dc != sc {
			return fmt.Errorf("copy param %s: shape %dx%d, source %s is %dx%d", dst[i].Name, dr, dc, src[i].Name, sr, sc)
		}
		dst[i].W.Copy(src[i].W)
	}
	return nil
}
