package gru

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/golden"
	"github.com/pemsforecast/sdgnn/nn"
)

// TestGoldenBits holds a GRU's forward pass (Forward and Encode) and its
// gradients to the bits they have on amd64, where the products, the
// activations and the cell's steps run in assembly: run elsewhere (arm64
// under qemu in CI) it checks that the Go paths give every machine the
// same bits, training included. The batch, 157 rows, takes the kernels
// and their tails; its weights (New: U(−¼, ¼) for 16 hidden units) and
// inputs (golden.Uniform) are drawn the same on every machine.
func TestGoldenBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 13))
	const in, H, steps, rows = 3, 16, 12, 157
	g := New(in, H, rng)
	uniform := func(r, c int) *mat.Dense {
		m := mat.NewDense(r, c, nil)
		for i := range m.RawMatrix().Data {
			m.RawMatrix().Data[i] = golden.Uniform(rng)
		}
		return m
	}
	xs := make([]*mat.Dense, steps)
	for i := range xs {
		xs[i] = uniform(rows, in)
	}
	dh := uniform(rows, H)
	got := map[string]string{}
	h, err := g.Encode(xs)
	if err != nil {
		t.Fatal(err)
	}
	got["Encode"] = golden.Hash(h.RawMatrix().Data)
	if h, err = g.Forward(xs); err != nil {
		t.Fatal(err)
	}
	got["Forward"] = golden.Hash(h.RawMatrix().Data)
	nn.ZeroGrad(g.Params())
	if err := g.Backward(dh); err != nil {
		t.Fatal(err)
	}
	for _, p := range g.Params() {
		got["Backward/"+p.Name] = golden.Hash(p.G.RawMatrix().Data)
	}
	golden.Check(t, got)
}
