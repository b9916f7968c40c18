// The declarations of the assembly kernels (mul_amd64.s: the matrix
// products; act_amd64.s: the activations) and whether this machine can run
// them; kernels_other.go stands in for them elsewhere.

package nn

import "golang.org/x/sys/cpu"

// haveFMA says whether the kernels of mul_amd64.s can run: they use AVX2's
// 256-bit registers and FMA3's fused multiply-add.
var haveFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// mulAdd4x8 adds to the 4×8 tile of c at c (row stride ldc) the product of
// the 4×k matrix at a (element (i, l) at a[i·ars + l·aks]) by the k×8 tile
// of b at b (row stride ldb), summed in the order of l by fused
// multiply-adds. k ≥ 1; strides in elements.
//
//go:noescape
func mulAdd4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int)

// mulAdd4x8m is mulAdd4x8 on a tile of which only the columns q with
// mask[q] < 0 are read from b and c and written to c: the last five to
// seven columns of a product, which would otherwise run in Go. The
// columns are summed as mulAdd4x8 sums them, so the bits are the same.
//
//go:noescape
func mulAdd4x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[8]int64)

// mulAdd4x4m is mulAdd4x8m on a 4×4 tile (mask[q] for its columns q):
// the last one to four columns, where half of mulAdd4x8m's loads and
// products would be wasted.
//
//go:noescape
func mulAdd4x4m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[4]int64)

// dot4x2 computes the dot products of the rows 0–3 of a (stride lda) with
// the rows 0–1 of b (stride ldb) over their first k4 elements (a multiple
// of 4, at least 4), each in four chains of fused multiply-adds, chain q
// taking the elements l ≡ q (mod 4): the chains of (a row r, b row q) go
// to lanes[(2r+q)·4 : (2r+q)·4+4].
//
//go:noescape
func dot4x2(k4 int, a *float64, lda int, b *float64, ldb int, lanes *[32]float64)

// haveAVX2 says whether the kernels of act_amd64.s can run: 256-bit
// registers, integer operations on them and gathers.
var haveAVX2 = cpu.X86.HasAVX2

// sigmoid4 sets dst[i] = Sigmoid(x[i]) for i < n (a multiple of 4), four at
// a time, up to the first four with an argument outside (−709, 708), and
// returns how many it set.
//
//go:noescape
func sigmoid4(dst, x *float64, n int) int

// tanh4 sets dst[i] = Tanh(x[i]) for i < n (a multiple of 4), four at a
// time, up to the first four with an argument beyond ±44 or NaN, and
// returns how many it set.
//
//go:noescape
func tanh4(dst, x *float64, n int) int

// softplus4 sets dst[i] = Softplus(x[i]) for i < n (a multiple of 4), four
// at a time, up to the first four with |x| ≥ 708 or NaN, and returns how
// many it set. It computes log as math.Log's assembly does, which Softplus
// calls on amd64 (through portable.Log).
//
//go:noescape
func softplus4(dst, x *float64, n int) int
