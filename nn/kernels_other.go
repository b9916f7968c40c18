//go:build !amd64

package nn

// haveFMA and haveAVX2 are false where no assembly kernel is written:
// MulAdd, SigmoidTo and their kin run in Go, with the same results.
const haveFMA = false

func mulAdd4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int) {
	panic("nn: no assembly kernel")
}

func mulAdd4x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[8]int64) {
	panic("nn: no assembly kernel")
}

func mulAdd4x4m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[4]int64) {
	panic("nn: no assembly kernel")
}

func dot4x2(k4 int, a *float64, lda int, b *float64, ldb int, lanes *[32]float64) {
	panic("nn: no assembly kernel")
}

const haveAVX2 = false

func sigmoid4(dst, x *float64, n int) int { panic("nn: no assembly kernel") }

func tanh4(dst, x *float64, n int) int { panic("nn: no assembly kernel") }

func softplus4(dst, x *float64, n int) int { panic("nn: no assembly kernel") }
