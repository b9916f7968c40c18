package gru

import (
	"math/rand/v2"
	"testing"
)

// TestCellGo runs TestCellExact's checks with the assembly kernels off, as
// on a machine without AVX: the same bits.
func TestCellGo(t *testing.T) {
	defer func(v bool) { haveAVX = v }(haveAVX)
	haveAVX = false
	checkCellExact(t)
}

// BenchmarkCell times one step's elementwise work of a block of 128 rows
// with hidden width 16, forward and back, with the kernels (avx) and in Go.
func BenchmarkCell(b *testing.B) {
	defer func(v bool) { haveAVX = v }(haveAVX)
	for _, avx := range []bool{true, false} {
		name := "go"
		if avx {
			if !haveAVX {
				continue
			}
			name = "avx"
		}
		haveAVX = avx
		b.Run(name, func(b *testing.B) { benchCell(b) })
	}
}

func benchCell(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 16 * blockRows
	v := make([][]float64, 9)
	for i := range v {
		v[i] = make([]float64, n)
		for k := range v[i] {
			v[i][k] = rng.Float64()
		}
	}
	for b.Loop() {
		mulTo(v[0], v[1], v[2])
		blend(v[3], v[1], v[2], v[4])
		cellBack(v[5], v[6], v[7], v[1], v[2], v[4])
		gateBack(v[7], v[8], v[0], v[1], v[4])
	}
}
