package evaluation

import (
	"math/rand/v2"
	"testing"

	"github.com/pemsforecast/sdgnn/internal/golden"
)

// TestGoldenBits holds the analyst's figures to the bits they have on
// amd64, so that a report or a comparison computed on another machine
// (arm64, checked under qemu in CI) prints the same: the masked metrics,
// the report's per-node, per-chunk and spread figures, the paper's metric,
// and the Diebold–Mariano test's mean, statistic and p-value with the
// default number of cosine terms.
func TestGoldenBits(t *testing.T) {
	const snaps, nodes, C = 300, 7, 3
	rng := rand.New(rand.NewPCG(2026, 21))
	truth, a, b := make([]float64, snaps*nodes*C), make([]float64, snaps*nodes*C), make([]float64, snaps*nodes*C)
	for i := range truth {
		truth[i] = (golden.Uniform(rng) + 4.5) * 40
		if i%37 == 0 {
			truth[i] = 0 // a missing reading
		}
		a[i] = truth[i] + float64(golden.Uniform(rng)*3) // rounded, as on amd64
		b[i] = truth[i] + float64(golden.Uniform(rng)*3.5)
	}
	got := map[string]string{}
	m, err := Compute(a, truth)
	if err != nil {
		t.Fatal(err)
	}
	got["Compute"] = golden.Hash([]float64{m.MAE, m.RMSE, m.MAPE})
	r, err := Build(a, truth, snaps, nodes, C, 7, 20)
	if err != nil {
		t.Fatal(err)
	}
	var rep []float64
	for _, ms := range [][]Metrics{{r.Overall}, r.PerChannel, r.PerNode, r.Chunks} {
		for _, m := range ms {
			rep = append(rep, m.MAE, m.RMSE, m.MAPE)
		}
	}
	got["Build"] = golden.Hash(append(rep, r.ChunkMAEStd...))
	lo, hi := make([]float64, len(truth)), make([]float64, len(truth))
	for i := range lo {
		lo[i], hi[i] = 0, 400
	}
	pm, err := Paper(a, truth, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	got["Paper"] = golden.Hash([]float64{pm.MAPE, pm.RMSE})
	la, err := SnapshotMAE(a, truth, snaps, nodes*C)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := SnapshotMAE(b, truth, snaps, nodes*C)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := DieboldMariano(la, lb, 0)
	if err != nil {
		t.Fatal(err)
	}
	got["DieboldMariano"] = golden.Hash(append(append([]float64{float64(dm.N), float64(dm.DF), dm.Mean, dm.Stat}, la...), lb...))
	var ps []float64
	for _, terms := range []int{0, 1, 3, 7, 30} { // p-values from small to tiny
		dm, err := DieboldMariano(la, lb, terms)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, dm.Stat, dm.P)
	}
	got["DieboldMarianoP"] = golden.Hash(ps)
	var terms []float64
	for n := 1; n <= 20000; n++ {
		terms = append(terms, float64(DMTerms(n)))
	}
	got["DMTerms"] = golden.Hash(terms)
	golden.Check(t, got)
}
