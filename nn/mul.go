package nn

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas/blas64"
)

// MulAdd adds the product a·b to c: c (m×n) += a (m×k) · b (k×n).
//
// Each element is summed in the order of k by fused multiply-adds,
//
//	c[i][j] = fma(a[i][k−1], b[k−1][j], … fma(a[i][0], b[0][j], c[i][j]))
//
// exactly as math.FMA rounds them, so that its result is the same bit for
// bit on every machine. On amd64 with AVX2 and FMA it runs tiles of 4×8
// elements in vector registers, and the last one to seven columns in
// masked tiles; the products of the GRU's steps (tens of rows of c, a
// block of 128 columns or a forecast's six windows, k of 3 to 32) are its
// purpose: there gonum's Dgemm loads and stores each row of c once for
// every k.
func MulAdd(c, a, b blas64.General) {
	if a.Rows != c.Rows || b.Cols != c.Cols || a.Cols != b.Rows {
		panic(fmt.Sprintf("nn: MulAdd of %d×%d by %d×%d into %d×%d", a.Rows, a.Cols, b.Rows, b.Cols, c.Rows, c.Cols))
	}
	mulAdd(c, a.Data, a.Stride, 1, a.Rows, a.Cols, b)
}

// MulAddTA adds aᵀ·b to c: c (m×n) += aᵀ · b with a k×m and b k×n, summed
// as MulAdd sums.
func MulAddTA(c, a, b blas64.General) {
	if a.Cols != c.Rows || b.Cols != c.Cols || a.Rows != b.Rows {
		panic(fmt.Sprintf("nn: MulAddTA of (%d×%d)ᵀ by %d×%d into %d×%d", a.Rows, a.Cols, b.Rows, b.Cols, c.Rows, c.Cols))
	}
	mulAdd(c, a.Data, 1, a.Stride, a.Cols, a.Rows, b)
}

// MulAddTB adds a·bᵀ to c: c (m×n) += a · bᵀ with a m×k and b n×k, each
// element a dot product of two rows. The products are summed in four
// chains by fused multiply-adds, chain q taking the terms l ≡ q (mod 4)
// below k4 = k − k mod 4, the chains added as (s0+s2) + (s1+s3), the last
// k mod 4 terms fused in after, in order, and the sum added to c[i][j]:
// the same bits on every machine. With AVX2 and FMA it runs tiles of 4×2
// elements, the four chains in the lanes of a vector register.
func MulAddTB(c, a, b blas64.General) {
	if a.Rows != c.Rows || b.Rows != c.Cols || a.Cols != b.Cols {
		panic(fmt.Sprintf("nn: MulAddTB of %d×%d by (%d×%d)ᵀ into %d×%d", a.Rows, a.Cols, b.Rows, b.Cols, c.Rows, c.Cols))
	}
	m, n, k := c.Rows, c.Cols, a.Cols
	if m == 0 || n == 0 || k == 0 { // as in mulAdd: no terms, and checkLen needs a last element
		return
	}
	checkLen("a", a.Data, m, k, a.Stride, 1)
	checkLen("b", b.Data, n, k, b.Stride, 1)
	checkLen("c", c.Data, m, n, c.Stride, 1)
	k4 := k &^ 3
	var lanes [32]float64
	i := 0
	if haveFMA && k4 > 0 {
		for ; i+4 <= m; i += 4 {
			j := 0
			for ; j+2 <= n; j += 2 {
				dot4x2(k4, &a.Data[i*a.Stride], a.Stride, &b.Data[j*b.Stride], b.Stride, &lanes)
				for r := 0; r < 4; r++ {
					for q := 0; q < 2; q++ {
						p := lanes[(r*2+q)*4:]
						s := (p[0] + p[2]) + (p[1] + p[3])
						c.Data[(i+r)*c.Stride+j+q] += dotTail(s, a.Data[(i+r)*a.Stride+k4:(i+r)*a.Stride+k], b.Data[(j+q)*b.Stride+k4:])
					}
				}
			}
			for ; j < n; j++ {
				// The last column of an odd n: its b row twice (stride 0).
				dot4x2(k4, &a.Data[i*a.Stride], a.Stride, &b.Data[j*b.Stride], 0, &lanes)
				for r := 0; r < 4; r++ {
					p := lanes[r*8:]
					s := (p[0] + p[2]) + (p[1] + p[3])
					c.Data[(i+r)*c.Stride+j] += dotTail(s, a.Data[(i+r)*a.Stride+k4:(i+r)*a.Stride+k], b.Data[j*b.Stride+k4:])
				}
			}
		}
	}
	for ; i < m; i++ {
		arow, crow := a.Data[i*a.Stride:i*a.Stride+k], c.Data[i*c.Stride:i*c.Stride+n]
		if k4 == 0 { // the tail alone, inline: a layer of one to three outputs
			for j := range crow {
				brow := b.Data[j*b.Stride : j*b.Stride+k]
				var s float64
				for l, v := range arow {
					s = math.FMA(v, brow[l], s)
				}
				crow[j] += s
			}
			continue
		}
		for j := range crow {
			crow[j] += dotFMA(arow, b.Data[j*b.Stride:], k4)
		}
	}
}

// dotFMA is one element of MulAddTB in Go: x·y[:len(x)], summed as MulAddTB
// documents.
func dotFMA(x, y []float64, k4 int) float64 {
	y = y[:len(x)]
	var p [4]float64
	for l := 0; l < k4; l += 4 {
		p[0] = math.FMA(x[l], y[l], p[0])
		p[1] = math.FMA(x[l+1], y[l+1], p[1])
		p[2] = math.FMA(x[l+2], y[l+2], p[2])
		p[3] = math.FMA(x[l+3], y[l+3], p[3])
	}
	return dotTail((p[0]+p[2])+(p[1]+p[3]), x[k4:], y[k4:])
}

// dotTail fuses the terms x[l]·y[l] into s, in order.
func dotTail(s float64, x, y []float64) float64 {
	y = y[:len(x)]
	for l, v := range x {
		s = math.FMA(v, y[l], s)
	}
	return s
}

// mulAdd adds A·b to c, where A (m×k) has element (i, l) at
// a[i·ars + l·aks]: a row-major matrix (ars its stride, aks 1) or the
// transpose of one (ars 1, aks its stride).
func mulAdd(c blas64.General, a []float64, ars, aks, m, k int, b blas64.General) {
	n := c.Cols
	if m == 0 || n == 0 || k == 0 {
		return
	}
	checkLen("a", a, m, k, ars, aks)
	checkLen("b", b.Data, k, n, b.Stride, 1)
	checkLen("c", c.Data, m, n, c.Stride, 1)
	i := 0
	if haveFMA {
		for ; i+4 <= m; i += 4 {
			j := 0
			for ; j+8 <= n; j += 8 {
				mulAdd4x8(k, &a[i*ars], ars, aks, &b.Data[j], b.Stride, &c.Data[i*c.Stride+j], c.Stride)
			}
			// The last one to seven columns: a narrow product (a
			// forecast's six windows) or the edge of a block.
			switch r := n - j; {
			case r > 4:
				mulAdd4x8m(k, &a[i*ars], ars, aks, &b.Data[j], b.Stride, &c.Data[i*c.Stride+j], c.Stride, &columnMasks[r])
			case r > 0:
				mulAdd4x4m(k, &a[i*ars], ars, aks, &b.Data[j], b.Stride, &c.Data[i*c.Stride+j], c.Stride, (*[4]int64)(columnMasks[r][:4]))
			}
		}
	}
	mulAddGo(c, a, ars, aks, i, k, b)
}

// columnMasks[q] selects the first q of eight columns for mulAdd4x8m, and
// its first half the first q of four for mulAdd4x4m.
var columnMasks = [8][8]int64{{}, {-1}, {-1, -1}, {-1, -1, -1}, {-1, -1, -1, -1},
	{-1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1}, {-1, -1, -1, -1, -1, -1, -1}}

// mulAddGo is mulAdd in Go on the rows of c from i0.
// Four elements of a row are summed side by side, each in its own chain in
// the order of l, so that four fused multiply-adds are in flight rather
// than one (a chain waits out each one's latency). It runs every product
// where the kernels do not (off amd64, or without AVX2 and FMA), and on
// amd64 the last one to three rows of one.
func mulAddGo(c blas64.General, a []float64, ars, aks, i0, k int, b blas64.General) {
	for i := i0; i < c.Rows; i++ {
		row := c.Data[i*c.Stride : i*c.Stride+c.Cols]
		j := 0
		for ; j+4 <= len(row); j += 4 {
			s0, s1, s2, s3 := row[j], row[j+1], row[j+2], row[j+3]
			for l := 0; l < k; l++ {
				av := a[i*ars+l*aks]
				bl := b.Data[l*b.Stride+j : l*b.Stride+j+4]
				s0 = math.FMA(av, bl[0], s0)
				s1 = math.FMA(av, bl[1], s1)
				s2 = math.FMA(av, bl[2], s2)
				s3 = math.FMA(av, bl[3], s3)
			}
			row[j], row[j+1], row[j+2], row[j+3] = s0, s1, s2, s3
		}
		for ; j < len(row); j++ {
			s := row[j]
			for l := 0; l < k; l++ {
				s = math.FMA(a[i*ars+l*aks], b.Data[l*b.Stride+j], s)
			}
			row[j] = s
		}
	}
}

// checkLen panics unless data holds the last element of an r×c matrix
// whose element (i, j) is at data[i·rs + j·cs]: the assembly kernels do
// not check their bounds.
func checkLen(name string, data []float64, r, c, rs, cs int) {
	if rs < 0 || cs < 0 || (r-1)*rs+(c-1)*cs >= len(data) {
		panic(fmt.Sprintf("nn: %s of %d×%d (steps %d, %d) in %d elements", name, r, c, rs, cs, len(data)))
	}
}
