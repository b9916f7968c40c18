package sdgnn

import (
	"math/rand/v2"
	"testing"
)

// TestPhaseThetaRefusesBudgetBelowOne: no receptive set can have at most
// zero nodes and keep a node in its own set. Keeping self, a budget of 0
// used to give every node a set of one node, over the budget, without an
// error (without keepSelf the solver refused it); it must be refused
// either way.
func TestPhaseThetaRefusesBudgetBelowOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n, S, d = 4, 10, 3
	phi, z := randDense(rng, S*n, d), randDense(rng, S*n, d)
	z.Add(z, phi) // every node's own embedding explains its target
	cands := [][]int{{0, 1}, {0, 1, 2}, {1, 2, 3}, {2, 3}}
	for _, keepSelf := range []bool{false, true} {
		for _, budget := range []int{0, -1} {
			th, _, err := PhaseTheta(phi, z, n, cands, 1e-4, budget, false, keepSelf)
			if err == nil {
				t.Errorf("keepSelf %v, budget %d: no error; receptive sets %v", keepSelf, budget, th.Nodes)
			}
		}
	}
}
