package nn

import (
	"math"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas64"
)

// TestMulAddPageEnd runs the masked kernels on matrices whose last
// element is the last float64 before a page that cannot be read or
// written: a kernel that touched a column its mask leaves out would fault.
// Each product is also checked against the scalar sum.
func TestMulAddPageEnd(t *testing.T) {
	if !haveFMA {
		t.Skip("no AVX2 or FMA: the masked kernels do not run")
	}
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 4*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	// Pages 1 and 3 are guards; b ends where page 1 begins, c where page 3 does.
	for _, p := range []int{1, 3} {
		if err := syscall.Mprotect(mem[p*page:(p+1)*page], syscall.PROT_NONE); err != nil {
			t.Skipf("mprotect: %v", err)
		}
	}
	floats := func(from, to int) []float64 { // the bytes [from, to) of mem
		return unsafe.Slice((*float64)(unsafe.Pointer(&mem[from])), (to-from)/8)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	const m, k = 8, 5
	for n := 1; n <= 15; n++ {
		bData := floats(page-8*k*n, page)
		cData := floats(3*page-8*m*n, 3*page)
		a := randView(rng, m, k, 0)
		b := blas64.General{Rows: k, Cols: n, Stride: n, Data: bData}
		c := blas64.General{Rows: m, Cols: n, Stride: n, Data: cData}
		for i := range bData {
			bData[i] = rng.NormFloat64()
		}
		for i := range cData {
			cData[i] = rng.NormFloat64()
		}
		want := clone(c)
		MulAdd(c, a, b)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				s := at(want, i, j)
				for l := 0; l < k; l++ {
					s = math.FMA(at(a, i, l), at(b, l, j), s)
				}
				if got := at(c, i, j); math.Float64bits(got) != math.Float64bits(s) {
					t.Fatalf("n=%d: c[%d][%d] = %v, want %v", n, i, j, got, s)
				}
			}
		}
	}
}
