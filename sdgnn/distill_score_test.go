package sdgnn

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
	"gonum.org/v1/gonum/mat"
)

// TestDistillNoFiniteScoreError runs a schedule whose rounds do reach the
// final budget but whose validation MAPE is NaN in every round (every
// truth is below the MAPE floor). Distill must refuse, but say why: the
// rounds at the final budget had no finite score, not that the schedule
// never reached the final budget.
func TestDistillNoFiniteScoreError(t *testing.T) {
	const n, d, S, C = 6, 16, 12, 1
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 4, Channels: C, Hidden: d, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := quickConfig()
	cfg.Epochs, cfg.BudgetStart, cfg.BudgetEnd, cfg.FineTuneEpochs, cfg.PhiBatch = 4, 3, 2, 0, 4
	cfg.MAPEFloor = 1e9 // above every truth: validation MAPE is NaN
	rng := rand.New(rand.NewPCG(9, 9))
	targets := func() *Targets {
		h, z := mat.NewDense(S*n, d, nil), mat.NewDense(S*n, d, nil)
		for i := range h.RawMatrix().Data {
			h.RawMatrix().Data[i] = 0.3 * rng.NormFloat64()
			z.RawMatrix().Data[i] = 0.3 * rng.NormFloat64()
		}
		truth := make([]float64, S*n*C)
		for i := range truth {
			truth[i] = 10 + rng.Float64()
		}
		return &Targets{Range: snapshot.Range{End: S}, Nodes: n, Dim: d, H: h, Z: z, Truth: truth, Channels: C}
	}
	train, val := targets(), targets()
	cands := make([][]int, n)
	for z := range cands {
		cands[z] = []int{(z + n - 1) % n, z, (z + 1) % n}
	}
	norm := snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}
	atEnd := 0
	_, err = Distill(context.Background(), m, norm, cands, train, val, cfg, func(r Round) {
		if r.Budget == cfg.BudgetEnd {
			atEnd++
		}
	})
	if atEnd == 0 {
		t.Fatal("the set-up should reach the final budget")
	}
	if err == nil || strings.Contains(err.Error(), "too few for the schedule") || !strings.Contains(err.Error(), "mape") {
		t.Errorf("%d rounds at the final budget, all with NaN MAPE: got error %v, want one naming the non-finite validation mape", atEnd, err)
	}
}
