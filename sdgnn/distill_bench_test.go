package sdgnn

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/nn"
)

// BenchmarkDistillPhases times SDGNN's two phases on PeMS04's shape: the
// real road graph (307 sensors, the default candidates K1 = 2, K2 = 1,
// sample 5), d = 16, and 500 snapshots of random embeddings whose targets
// mix them over the graph. A Phase-φ epoch and a Phase-Θ solve cost a
// snapshot's share times the number of training snapshots (16,980 for
// PeMS04 split by nodes).
func BenchmarkDistillPhases(b *testing.B) {
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		b.Skipf("no data directory: %v", err)
	}
	g, err := pems.ReadDistanceCSV(filepath.Join(dir, "pems/pems04/distance.csv"), 307)
	if err != nil {
		b.Skipf("graph: %v", err)
	}
	cfg := DefaultConfig()
	cands, err := Candidates(g.Neighbors(), cfg.Candidates)
	if err != nil {
		b.Fatal(err)
	}
	const snaps, d = 500, 16
	n := g.Nodes
	rng := rand.New(rand.NewPCG(1, 2))
	h := mat.NewDense(snaps*n, d, nil)
	for i := range h.RawMatrix().Data {
		h.RawMatrix().Data[i] = rng.NormFloat64()
	}
	z := mat.NewDense(snaps*n, d, nil)
	g.NormalizedAdjacency().MulBlocks(z, h)
	t := &Targets{Nodes: n, Dim: d, H: h, Z: z}
	st := NewStudent(n, d, cfg.PhiHidden, rng)
	solve := func(budget int) {
		th, _, err := PhaseTheta(st.PhiAll(h), z, n, cands, cfg.Lambda1, budget, cfg.Refit, cfg.KeepSelf)
		if err != nil {
			b.Fatal(err)
		}
		if err := st.SetTheta(th); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("theta/budget=46", func(b *testing.B) {
		for b.Loop() {
			solve(46)
		}
	})
	solve(6)
	opt := nn.NewAdam(cfg.LR, cfg.Lambda2)
	b.Run("phi-epoch/budget=6", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.PhasePhi(t, opt, cfg.PhiBatch, rng); err != nil {
				b.Fatal(err)
			}
		}
	})
}
