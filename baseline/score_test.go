package baseline

import (
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
