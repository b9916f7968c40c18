package sdgnn_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/distilltest"
	"github.com/pemsforecast/sdgnn/internal/golden"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestGoldenBits holds the online path of a bundle, the one the
// forecaster serves (EmbedBatch, then ForecastMany), to the bits it has on
// amd64, for both preprocessings (z-scores; min-max with calendar inputs),
// so that a forecaster on another machine (arm64, checked under qemu in
// CI) emits the same forecasts bit for bit. The bundle has PeMS's shape
// (3 channels, window 12, hidden 16, up to 6 receptive nodes) on 20 nodes;
// everything in it is drawn the same on every machine (golden.Uniform).
// The offline path (ForecastBatch: Θ by gonum's axpy) is not part of the
// claim; distillation is (goldenDistill).
func TestGoldenBits(t *testing.T) {
	const nodes, C, T, d, rows = 20, 3, 12, 16, 37
	got := map[string]string{}
	for _, prep := range []string{"standard", "paper"} {
		rng := rand.New(rand.NewPCG(2026, 14))
		norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{210, 0.0625, 61.5}, Std: []float64{96, 0.03125, 7.25}}
		if prep == "paper" {
			norm = snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 0, 3}, Std: []float64{900, 0.75, 80},
				Time: &snapshot.TimeInputs{OriginMs: 1514764800000, StepMs: 300000, MinuteMax: 1435, WeekdayMax: 6}}
		}
		theta := &sdgnn.Theta{Nodes: make([][]int, nodes), Weights: make([][]float64, nodes)}
		for z := range nodes {
			for k := z; k < nodes && len(theta.Nodes[z]) < 1+z%6; k += 1 + z%3 {
				theta.Nodes[z] = append(theta.Nodes[z], k)
				theta.Weights[z] = append(theta.Weights[z], math.Abs(golden.Uniform(rng))/4)
			}
		}
		cfg := sdgnn.DefaultConfig()
		meta := sdgnn.BundleMeta{Dataset: "golden", Nodes: nodes, Channels: []string{"flow", "occupancy", "speed"}, Window: T, Hidden: d, Norm: norm, Config: cfg}
		b, err := sdgnn.NewBundle(meta, gru.New(norm.Inputs(), d, rng), nn.NewMLP("phi", d, cfg.PhiHidden, d, rng), theta, nn.NewMLP("dec", d, d, C, rng))
		if err != nil {
			t.Fatal(err)
		}
		// Windows of readings on their own scale, a few missing (0).
		windows := make([]float64, rows*T*C)
		for i := range windows {
			if u := golden.Uniform(rng); u > 3.5 {
				windows[i] = 0
			} else {
				windows[i] = (u + 4) * 64 // [0, 512)
			}
		}
		ends := make([]int64, rows)
		for i := range ends {
			ends[i] = 1514764800000 + int64(i*37+T)*300000
		}
		emb := make([]float64, rows*d)
		if err := b.EmbedBatch(emb, windows, ends); err != nil {
			t.Fatal(err)
		}
		got[prep+"/EmbedBatch"] = golden.Hash(emb)
		// Every node, its receptive nodes' embeddings taken from the rows.
		var zs []int
		var es [][]float64
		for z := range nodes {
			zs = append(zs, z)
			ks, _ := b.Receptive(z)
			for i := range ks {
				r := (z*7 + i*3) % rows
				es = append(es, emb[r*d:(r+1)*d])
			}
		}
		out := make([]float64, nodes*C)
		if err := b.ForecastMany(out, zs, es); err != nil {
			t.Fatal(err)
		}
		got[prep+"/ForecastMany"] = golden.Hash(out)
	}
	goldenDistill(t, got)
	golden.Check(t, got)
}

// goldenDistill adds to got the hashes of a whole small distillation
// (Distill: Phase Θ's products and LARS, the refit, Phase φ, validation,
// the final Θ and the decoder's fine-tuning) and of its parts on their
// own: a LARS path and an NNLS solve at Phase Θ's realistic size (46
// candidates), and Phase Θ on the paper's plain path. The targets are
// those of a known sparse decomposition, Z = Θ*·φ*(H) with a little
// noise, on a ring of 20 nodes with chords, so that LARS has something to
// find; everything is drawn the same on every machine (golden.Uniform).
func goldenDistill(t *testing.T, got map[string]string) {
	t.Helper()
	const n, d, C = 20, 16, 3
	rng := rand.New(rand.NewPCG(2026, 18))
	neighbors := distilltest.Ring(n)
	cands, err := sdgnn.Candidates(neighbors, sdgnn.CandidateConfig{K1: 1, K2: 1, Sample: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	phiTrue := nn.NewMLP("phi*", d, 16, d, rng)
	train, val := distilltest.Targets(rng, phiTrue, n, 48, C), distilltest.Targets(rng, phiTrue, n, 24, C)

	// LARS and NNLS on the Gram matrix of 46 random columns over 40 rows,
	// the target a combination of every third column with weights of both
	// signs, so that the positive path drops variables (Givens rotations).
	const p, rows = 46, 40
	x := make([]float64, rows*p)
	for i := range x {
		x[i] = golden.Uniform(rng)
	}
	y := make([]float64, rows)
	for r := range rows {
		for a := 0; a < p; a += 3 {
			y[r] += float64(x[r*p+a] * float64(a%5-1))
		}
		y[r] += golden.Uniform(rng)
	}
	g, c := make([]float64, p*p), make([]float64, p)
	for a := range p {
		for b := range p {
			for r := range rows {
				g[a*p+b] += float64(x[r*p+a] * x[r*p+b])
			}
		}
		for r := range rows {
			c[a] += float64(x[r*p+a] * y[r])
		}
	}
	path, err := sdgnn.LARSPositive(g, c, 0, 30, 0)
	if err != nil {
		t.Fatal(err)
	}
	if path.Steps <= len(path.Active) {
		t.Fatalf("LARS: %d steps, %d active: no variable left the path", path.Steps, len(path.Active))
	}
	got["distill/LARSPositive"] = golden.Hash(append(append([]float64{}, path.Coef...), path.Lambdas...))
	w, err := sdgnn.NNLS(g, c, 0)
	if err != nil {
		t.Fatal(err)
	}
	got["distill/NNLS"] = golden.Hash(w)

	thetaBits := func(th *sdgnn.Theta) []float64 {
		var out []float64
		for z := range th.Nodes {
			for i, k := range th.Nodes[z] {
				out = append(out, float64(z), float64(k), th.Weights[z][i])
			}
		}
		return out
	}
	st := sdgnn.NewStudent(n, d, 16, rand.New(rand.NewPCG(2026, 19)))
	plain, stats, err := st.PhaseTheta(train, cands, 1e-5, 4, false, false)
	if err != nil {
		t.Fatal(err)
	}
	got["distill/PhaseTheta-plain"] = golden.Hash(append(thetaBits(plain), stats.MeanKKT))

	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 4, Channels: C, Hidden: d, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sdgnn.DefaultConfig()
	cfg.Epochs, cfg.ThetaEvery, cfg.BudgetStart, cfg.BudgetEnd, cfg.BudgetEvery = 12, 3, 6, 3, 3
	cfg.FineTuneEpochs, cfg.PhiBatch, cfg.LR = 3, 8, 5e-3
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{80, 80, 80}, Std: []float64{40, 40, 40}}
	res, err := sdgnn.Distill(context.Background(), m, norm, cands, train, val, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rounds []float64
	for _, r := range res.Rounds {
		rounds = append(rounds, r.MeanReceptive, r.KKT, r.PhiLoss, r.NR, r.MSE, r.Val.MAE, r.Val.RMSE, r.Val.MAPE)
	}
	got["distill/Distill/rounds"] = golden.Hash(rounds)
	got["distill/Distill/theta"] = golden.Hash(thetaBits(res.Student.Theta))
	var phi, dec []float64
	for _, q := range res.Student.Phi.Params() {
		phi = append(phi, q.W.RawMatrix().Data...)
	}
	for _, q := range res.Decoder.Params() {
		dec = append(dec, q.W.RawMatrix().Data...)
	}
	got["distill/Distill/phi"] = golden.Hash(phi)
	got["distill/Distill/decoder"] = golden.Hash(dec)
	got["distill/Distill/val"] = golden.Hash([]float64{res.Val.MAE, res.Val.RMSE, res.Val.MAPE})
}
