package nn

import "testing"

// TestMulAddGo runs TestMulAddExact's checks with the assembly kernels
// off, as on a machine without AVX2 or FMA: the same bits.
func TestMulAddGo(t *testing.T) {
	if !haveFMA {
		t.Log("this machine has no AVX2 or FMA: TestMulAddExact ran in Go already")
	}
	defer func(v bool) { haveFMA = v }(haveFMA)
	haveFMA = false
	checkMulAddExact(t)
}
