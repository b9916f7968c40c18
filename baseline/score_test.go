package baseline

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestScoreZHat checks sdgnn.ScoreZHat, the one-pass validation of both kinds of student,
// over enough snapshots to need several blocks, against Ẑ computed whole:
// the squared error, ‖Z‖² and the decoded metrics, and zhatAll's rows.
func TestScoreZHat(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, S, d, C, p = 7, 3000, 3, 2, 4
	randDense := func(r, c int) *mat.Dense {
		m := mat.NewDense(r, c, nil)
		for i := range m.RawMatrix().Data {
			m.RawMatrix().Data[i] = rng.NormFloat64()
		}
		return m
	}
	tg := &sdgnn.Targets{Nodes: n, Dim: d, H: randDense(S*n, d), Z: randDense(S*n, d), Channels: C, Truth: make([]float64, S*n*C)}
	for i := range tg.Truth {
		tg.Truth[i] = 10 + rng.Float64()
	}
	tg.Truth[3] = math.NaN()
	dec := nn.NewMLP("dec", d, 4, C, rng)
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{10, 11}, Std: []float64{2, 3}}

	sp := sdgnn.NewStudent(n, d, 5, rng)
	th := &sdgnn.Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := range n {
		th.Nodes[z], th.Weights[z] = []int{z}, []float64{0.5 + rng.Float64()}
	}
	if err := sp.SetTheta(th); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		st   student
	}{
		{"graphless", &graphlessStudent{g: nn.NewMLP("g", d+p, 5, d, rng), pe: randDense(n, p), n: n}},
		{"sparse", sparseStudent{st: sp}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := 0
			tc.st.eachZHat(tg.H, func(lo, hi int, _ *mat.Dense) { blocks++ })
			if blocks < 2 {
				t.Fatalf("%d block(s): the test needs several", blocks)
			}
			var want *mat.Dense
			switch st := tc.st.(type) {
			case *graphlessStudent:
				want = graphlessZHat(st.g, st.pe, n, tg.H)
			case sparseStudent:
				want = st.st.ZHatAll(tg.H)
			}
			if got := zhatAll(tc.st, tg.H); !mat.EqualApprox(got, want, 1e-12) {
				t.Error("zhatAll differs from Ẑ computed whole")
			}
			var num, den float64
			for i, v := range want.RawMatrix().Data {
				z := tg.Z.RawMatrix().Data[i]
				num += (v - z) * (v - z)
				den += z * z
			}
			wm := decodeMetrics(dec, norm, want, tg, 1)
			gn, gd, m := sdgnn.ScoreZHat(tc.st.eachZHat, dec, norm, tg, 1)
			near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
			if !near(gn, num) || !near(gd, den) {
				t.Errorf("squared error %g, ‖Z‖² %g; want %g, %g", gn, gd, num, den)
			}
			if !near(m.MAE, wm.MAE) || !near(m.RMSE, wm.RMSE) || !near(m.MAPE, wm.MAPE) || m.Count != wm.Count || m.Count != S*n*C-1 {
				t.Errorf("metrics %+v, want %+v", m, wm)
			}
			if _, _, m := sdgnn.ScoreZHat(tc.st.eachZHat, nil, norm, tg, 1); m.Count != 0 {
				t.Errorf("metrics without a decoder: %+v", m)
			}
		})
	}
}

// TestTrainStudentNoScoredTruth trains a student against validation
// targets whose truths are all missing (0, masked): no epoch has a
// validation score, and trainStudent must refuse, as it does for NaN
// scores, rather than keep the untrained student as the best (the zero
// errors of no pair are not a perfect score).
func TestTrainStudentNoScoredTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, S, d, C = 4, 8, 3, 1
	targets := func(truth float64) *sdgnn.Targets {
		tg := &sdgnn.Targets{Nodes: n, Dim: d, H: randDense(rng, S*n, d), Z: randDense(rng, S*n, d), Channels: C, Truth: make([]float64, S*n*C)}
		for i := range tg.Truth {
			tg.Truth[i] = truth
		}
		return tg
	}
	train, val := targets(10), targets(0)
	dec := nn.NewMLP("dec", d, 4, C, rng)
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{10}, Std: []float64{2}}
	cfg := DefaultConfig()
	cfg.Epochs, cfg.Batch = 2, 4
	for _, sel := range []string{selectMAPE, selectMAE} {
		cfg.Select = sel
		st := &graphlessStudent{g: nn.NewMLP("g", d, 5, d, rng), n: n, batch: cfg.Batch}
		hist, err := trainStudent(context.Background(), st, dec, norm, train, val, cfg, rng)
		best := 0
		for _, ep := range hist {
			if ep.Best {
				best++
			}
		}
		if err == nil || best > 0 {
			t.Errorf("select %s: validation without an unmasked truth: %d epoch(s) marked best, error %v; want none and an error", sel, best, err)
		}
	}
}
