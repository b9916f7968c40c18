package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/golden"
)

// TestGoldenBits holds the kernels to the bits they give on amd64, where
// they run in assembly: the activations over activationInputs, the three
// products on shapes that take the vector kernels, their edges and the
// plain loops, Gemm and an MLP's forward pass. On amd64 this repeats what
// TestActivationsTo and TestMulAddExact check; run elsewhere (arm64 under
// qemu in CI) it checks that the Go paths give every machine the same
// bits, as the package claims.
func TestGoldenBits(t *testing.T) {
	got := map[string]string{}
	rng := rand.New(rand.NewPCG(2026, 11))
	xs := activationInputsWith(rng, func() float64 { return golden.Uniform(rng) })
	for _, tc := range sliceActivations {
		dst := make([]float64, len(xs))
		tc.to(dst, xs)
		got[tc.name] = golden.Hash(dst)
	}
	for _, s := range [][3]int{{48, 16, 80}, {48, 3, 76}, {32, 16, 28}, {16, 16, 6}, {7, 5, 13}, {4, 32, 8}} {
		m, k, n := s[0], s[1], s[2]
		a, b, c := uniformView(rng, m, k, 1), uniformView(rng, k, n, 2), uniformView(rng, m, n, 3)
		at, bt := uniformView(rng, k, m, 0), uniformView(rng, n, k, 1)
		for _, p := range []struct {
			name string
			f    func(c, a, b blas64.General)
			a, b blas64.General
		}{{"MulAdd", MulAdd, a, b}, {"MulAddTA", MulAddTA, at, b}, {"MulAddTB", MulAddTB, a, bt}} {
			cc := clone(c)
			p.f(cc, p.a, p.b)
			var vals []float64
			for i := 0; i < m; i++ {
				vals = append(vals, cc.Data[i*cc.Stride:i*cc.Stride+n]...)
			}
			got[fmt.Sprintf("%s/%dx%dx%d", p.name, m, k, n)] = golden.Hash(vals)
		}
	}
	x := mat.NewDense(157, 16, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = golden.Uniform(rng)
	}
	mlp := NewMLP("golden", 16, 16, 3, rng)
	got["MLP.Forward/157x16x16x3"] = golden.Hash(mlp.Forward(x).RawMatrix().Data)
	c := mat.NewDense(16, 16, nil)
	Gemm(true, false, 1, x, x, 0, c)
	got["Gemm/xTx"] = golden.Hash(c.RawMatrix().Data)
	// A scaled product into a scaled c (gonum's Dgemm on amd64, gemmNN
	// elsewhere), as NOSMOG's similarity loss takes it.
	sq := mat.NewDense(157, 157, nil)
	for i := range sq.RawMatrix().Data {
		sq.RawMatrix().Data[i] = golden.Uniform(rng)
	}
	out := mat.NewDense(157, 16, nil)
	for i := range out.RawMatrix().Data {
		out.RawMatrix().Data[i] = golden.Uniform(rng)
	}
	Gemm(false, false, 0.375/157, sq, x, 0.625, out)
	got["Gemm/alpha-beta"] = golden.Hash(out.RawMatrix().Data)
	golden.Check(t, got)
}

// uniformView is randView with golden.Uniform's values, the same on every
// machine.
func uniformView(rng *rand.Rand, r, c, pad int) blas64.General {
	g := randView(rng, r, c, pad)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			g.Data[i*g.Stride+j] = golden.Uniform(rng)
		}
	}
	return g
}
