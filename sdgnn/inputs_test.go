package sdgnn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestPredictStopsWhenCancelled checks that Predict returns the context's
// error between batches instead of forecasting the whole part first.
func TestPredictStopsWhenCancelled(t *testing.T) {
	b := tinyBundle(t)
	const steps = 40
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]float64, steps*b.Meta.Nodes*len(b.Meta.Channels))
	for i := range data {
		data[i] = 1 + rng.Float64()
	}
	set, err := snapshot.NewSet(data, steps, b.Meta.Nodes, len(b.Meta.Channels), b.Meta.Window, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	whole := snapshot.Part{Range: snapshot.Range{Start: 0, End: set.Len()}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Predict(ctx, b, set, whole, 4); !errors.Is(err, context.Canceled) {
		t.Errorf("Predict with a cancelled context: %v, want %v", err, context.Canceled)
	}
	pred, _, err := Predict(context.Background(), b, set, whole, 4)
	if err != nil || len(pred) != set.Len()*b.Meta.Nodes*len(b.Meta.Channels) {
		t.Errorf("Predict: %d forecasts, %v", len(pred), err)
	}
}

// TestPhaseThetaRefusesBadCandidates checks that a candidate set with a
// node outside the graph or a node twice is refused: a repeated node had
// its correlation counted twice, and Θ came out another problem's, with
// no error.
func TestPhaseThetaRefusesBadCandidates(t *testing.T) {
	const n, S, d = 4, 30, 3
	rng := rand.New(rand.NewPCG(1, 2))
	phi, z := mat.NewDense(S*n, d, nil), mat.NewDense(S*n, d, nil)
	for i := range S * n {
		for j := range d {
			phi.Set(i, j, rng.NormFloat64())
			z.Set(i, j, rng.NormFloat64())
		}
	}
	good := [][]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
	if _, _, err := PhaseTheta(phi, z, n, good, 0, 2, true, false); err != nil {
		t.Fatalf("good candidates: %v", err)
	}
	for _, tc := range []struct {
		cands [][]int
		want  string
	}{
		{[][]int{{0, 1, 1}, {1}, {2}, {3}}, "node 0's candidates give node 1 twice"},
		{[][]int{{0}, {1}, {2}, {3, 4}}, "node 3's candidate 4 outside [0, 4)"},
		{[][]int{{0}, {-1}, {2}, {3}}, "node 1's candidate -1 outside [0, 4)"},
	} {
		if _, _, err := PhaseTheta(phi, z, n, tc.cands, 0, 2, true, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("candidates %v: %v, want an error containing %q", tc.cands, err, tc.want)
		}
	}
}

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

// TestSolveNodeKeepSelfNegativeOwnWeight: with keepSelf, the other
// candidates' weights are solved with the node's own weight left free; a
// node whose own least-squares weight comes out negative (its own
// embedding, strongly like a neighbour's, is anti-correlated with what
// that neighbour leaves) must not keep those weights with its own
// clipped to zero, which solve no problem: without refit its column is
// solved on the plain path, whose answer meets the non-negative Lasso's
// optimality conditions.
func TestSolveNodeKeepSelfNegativeOwnWeight(t *testing.T) {
	const rho, lambda = 0.9, 0.01
	g := []float64{1, rho, rho, 1} // candidates: the node (0) and a neighbour (1)
	cv := []float64{0.1, 1}
	ids, ws, _, err := solveNode(g, cv, []int{0, 1}, 0, lambda, 6, false, true)
	if err != nil {
		t.Fatal(err)
	}
	theta := make([]float64, 2)
	for i, id := range ids {
		theta[id] = ws[i]
	}
	if v := KKTViolation(g, cv, lambda, theta); !(v < 1e-9) {
		t.Errorf("θ %v: KKT violation %g of the plain problem, want 0", theta, v)
	}
	if want := 1 - lambda; math.Abs(theta[1]-want) > 1e-9 || theta[0] != 0 {
		t.Errorf("θ %v, want [0 %g]", theta, want)
	}
	// A node whose own weight is positive keeps it unpenalised.
	cv = []float64{1, 0.5}
	ids, ws, _, err = solveNode(g, cv, []int{0, 1}, 0, lambda, 6, false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) == 0 || ids[0] != 0 || !(ws[0] > 0) {
		t.Errorf("own weight positive: receptive %v weights %v, want the node in", ids, ws)
	}
}
