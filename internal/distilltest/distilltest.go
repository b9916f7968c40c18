// Package distilltest builds small distillation problems whose every value
// is the same on every machine, for the golden tests of sdgnn and
// baseline (see internal/golden).
package distilltest

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/golden"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Ring returns the adjacency lists of a ring of n nodes with a chord from
// every fourth node to the node nine further on.
func Ring(n int) [][]int {
	neighbors := make([][]int, n)
	link := func(a, b int) { neighbors[a], neighbors[b] = append(neighbors[a], b), append(neighbors[b], a) }
	for i := range n {
		link(i, (i+1)%n)
		if i%4 == 0 {
			link(i, (i+9)%n)
		}
	}
	return neighbors
}

// Targets returns S snapshots of n nodes of a known sparse decomposition,
// so that a student has something to find: H drawn in (−1, 1), Z_i =
// 0.75·φ*(H_i) + 0.25·φ*(H_{i+1}) + 0.125·φ*(H_{i−1}) around the ring plus
// noise below 1/64, and C channels of truths in (16, 144). Every value is
// drawn by golden.Uniform and every product rounded.
func Targets(rng *rand.Rand, phi *nn.MLP, n, S, C int) *sdgnn.Targets {
	d := phi.L1.In()
	h := mat.NewDense(S*n, d, nil)
	for i := range h.RawMatrix().Data {
		h.RawMatrix().Data[i] = golden.Uniform(rng) / 4
	}
	p := phi.Forward(h)
	z := mat.NewDense(S*n, d, nil)
	zr, pr := z.RawMatrix().Data, p.RawMatrix().Data
	for s := range S {
		for i := range n {
			for j, k := range []int{i, (i + 1) % n, (i + n - 1) % n} {
				w := []float64{0.75, 0.25, 0.125}[j]
				for c := range d {
					zr[(s*n+i)*d+c] += float64(w * pr[(s*n+k)*d+c])
				}
			}
			for c := range d {
				zr[(s*n+i)*d+c] += golden.Uniform(rng) / 256
			}
		}
	}
	truth := make([]float64, S*n*C)
	for i := range truth {
		truth[i] = (golden.Uniform(rng) + 5) * 16
	}
	return &sdgnn.Targets{Range: snapshot.Range{End: S}, Nodes: n, Dim: d, H: h, Z: z, Truth: truth, Channels: C}
}
