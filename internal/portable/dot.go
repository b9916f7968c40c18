package portable

import "gonum.org/v1/gonum/floats"

// Dot returns Σ x[i]·y[i] as gonum's floats.Dot computes it on amd64
// (DotUnitary in internal/asm/f64/dot_amd64.s): four partial sums, of
// the products of indices 0, 1, 2 and 3 mod 4 over the whole groups of
// four, the remaining one to three products added to the first, then
// (s1 + s3) + (s0 + s2). Elsewhere gonum sums in one pass, and arm64
// fuses its products into the sum. Like floats.Dot it panics when x and y
// differ in length.
func Dot(x, y []float64) float64 {
	if amd64 {
		return floats.Dot(x, y)
	}
	return dot(x, y)
}

// dot is Dot in Go, every product rounded.
func dot(x, y []float64) float64 {
	if len(x) != len(y) {
		panic("portable: Dot of slices of different lengths")
	}
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float64(x[i] * y[i])
		s1 += float64(x[i+1] * y[i+1])
		s2 += float64(x[i+2] * y[i+2])
		s3 += float64(x[i+3] * y[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float64(x[i] * y[i])
	}
	return (s1 + s3) + (s0 + s2)
}

// Axpy sets y += alpha·x as gonum's axpy does on amd64 (floats.AddScaled,
// AxpyUnitary's assembly), where every product is rounded before it is
// added; elsewhere gonum's axpy is Go that arm64 fuses, and Axpy runs its
// own loop with the products rounded. Like floats.AddScaled it panics
// when x and y differ in length.
func Axpy(alpha float64, x, y []float64) {
	if amd64 {
		floats.AddScaled(y, alpha, x)
		return
	}
	axpy(alpha, x, y)
}

// axpy is Axpy in Go.
func axpy(alpha float64, x, y []float64) {
	if len(x) != len(y) {
		panic("portable: Axpy of slices of different lengths")
	}
	for i, v := range x {
		y[i] += float64(alpha * v)
	}
}
