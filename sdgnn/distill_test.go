package sdgnn

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/teachertest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
	"gonum.org/v1/gonum/mat"
)

// quickTargets computes the teacher's targets of the training and
// validation snapshots.
func quickTargets(t *testing.T, m *teacher.Model, set *snapshot.Set, split snapshot.Split, ds *pems.Dataset) (train, val *Targets) {
	t.Helper()
	adj := ds.Graph.NormalizedAdjacency()
	train, err := ComputeTargets(context.Background(), m, set, split.Train, adj)
	if err != nil {
		t.Fatal(err)
	}
	val, err = ComputeTargets(context.Background(), m, set, split.Val, adj)
	if err != nil {
		t.Fatal(err)
	}
	return train, val
}

func quickConfig() Config {
	c := DefaultConfig()
	c.Epochs, c.ThetaEvery, c.BudgetStart, c.BudgetEnd, c.BudgetEvery = 8, 2, 9, 6, 2
	c.FineTuneEpochs, c.LR = 3, 5e-3
	return c
}

// TestDistillOnRealData distils a briefly trained teacher on SZ-taxi and
// checks the schedule, the budget, that the approximation improves, and
// that the per-node inference path equals the batched one to 1e-9, before
// and after a save and load.
func TestDistillOnRealData(t *testing.T) {
	m, set, split, ds := teachertest.Quick(t)
	train, val := quickTargets(t, m, set, split, ds)
	ctx := context.Background()
	cfg := quickConfig()
	cands, err := Candidates(ds.Graph.Neighbors(), cfg.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Distill(ctx, m, set.Norm, cands, train, val, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	rounds := res.Rounds
	if len(rounds) != 5 || rounds[0].Budget != 9 || rounds[len(rounds)-1].Budget != 6 {
		t.Fatalf("rounds: %+v", rounds)
	}
	t.Logf("NR first %.4f last %.4f; val MAE %.3f; teacher val MAE %.3f", rounds[0].NR, rounds[len(rounds)-1].NR, res.Val.MAE, decodeMetrics(m.Dec, set.Norm, val.Z, val, 0).MAE)
	if !(rounds[len(rounds)-1].NR < rounds[0].NR) {
		t.Errorf("approximation error did not fall: %+v", rounds)
	}
	// MSE and NR share the numerator; their ratio is ‖Z‖²/entries of the
	// validation targets, the same in every round.
	var zz float64
	for _, v := range val.Z.RawMatrix().Data {
		zz += v * v
	}
	want := zz / float64(len(val.Z.RawMatrix().Data))
	for _, r := range rounds {
		if got := r.MSE / r.NR; !(r.MSE > 0) || math.Abs(got-want) > 1e-9*want {
			t.Errorf("round %d: MSE %g, NR %g: ratio %g, want ‖Z‖²/entries %g", r.Epoch, r.MSE, r.NR, got, want)
		}
	}
	for z := range res.Student.Theta.Nodes {
		if k := len(res.Student.Theta.Nodes[z]); k > 6 {
			t.Fatalf("node %d has %d receptive nodes, budget 6", z, k)
		}
	}

	meta := BundleMeta{Dataset: "sz-taxi", Nodes: set.Nodes, Channels: ds.Info.Channels, Window: set.Window, Hidden: 16, Norm: set.Norm, Split: split, Config: cfg}
	b, err := NewBundle(meta, m.GRU, res.Student.Phi, res.Student.Theta, res.Decoder)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bb := range []*Bundle{b, loaded} {
		checkPerNodeEqualsBatch(t, bb, set, split.Test.Start+5)
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(t.TempDir(), "t.sdgnn")
	if err := os.WriteFile(trunc, raw[:len(raw)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBundle(trunc); !errors.Is(err, checkpoint.ErrTruncated) && !errors.Is(err, checkpoint.ErrChecksum) {
		t.Errorf("truncated bundle: %v", err)
	}
}

// checkPerNodeEqualsBatch forecasts every node of one snapshot from only its
// receptive nodes' raw windows and compares with the batched path; then
// forecasts them all at once from the same embeddings (ForecastMany),
// which must give the per-node figures bit for bit.
func checkPerNodeEqualsBatch(t *testing.T, b *Bundle, set *snapshot.Set, s int) {
	t.Helper()
	var batch snapshot.Batch
	if err := set.Fill(&batch, []int{s}); err != nil {
		t.Fatal(err)
	}
	want, err := b.ForecastBatch(batch.X)
	if err != nil {
		t.Fatal(err)
	}
	C, T := set.Channels, set.Window
	window := make([]float64, T*C)
	emb := make([]float64, b.Meta.Hidden)
	cache := map[int][]float64{}
	got := make([]float64, C)
	var (
		perNode, allEmbs [][]float64
		zs               []int
	)
	for z := 0; z < set.Nodes; z++ {
		ks, _ := b.Receptive(z)
		embs := make([][]float64, len(ks))
		for i, k := range ks {
			if _, ok := cache[k]; !ok {
				for step := 0; step < T; step++ {
					for c := 0; c < C; c++ {
						window[step*C+c] = set.RawAt(s+step, k, c)
					}
				}
				if err := b.Embed(emb, window, 0); err != nil {
					t.Fatal(err)
				}
				cache[k] = append([]float64(nil), emb...)
			}
			embs[i] = cache[k]
		}
		if err := b.Forecast(got, z, embs); err != nil {
			t.Fatal(err)
		}
		perNode = append(perNode, append([]float64(nil), got...))
		allEmbs = append(allEmbs, embs...)
		zs = append(zs, z)
		for c := 0; c < C; c++ {
			if d := math.Abs(got[c] - want[z*C+c]); d > 1e-9 {
				t.Fatalf("node %d channel %d: per-node %.12g, batched %.12g", z, c, got[c], want[z*C+c])
			}
		}
	}
	// Backwards, so that a row's place in the batch differs from its node.
	offs := []int{0} // node z's embeddings: allEmbs[offs[z]:offs[z+1]]
	for _, z := range zs {
		ks, _ := b.Receptive(z)
		offs = append(offs, offs[len(offs)-1]+len(ks))
	}
	slices.Reverse(zs)
	var rev [][]float64
	for _, z := range zs {
		rev = append(rev, allEmbs[offs[z]:offs[z+1]]...)
	}
	many := make([]float64, len(zs)*C)
	if err := b.ForecastMany(many, zs, rev); err != nil {
		t.Fatal(err)
	}
	for i, z := range zs {
		for c := 0; c < C; c++ {
			if many[i*C+c] != perNode[z][c] {
				t.Fatalf("node %d channel %d: ForecastMany %.17g, Forecast %.17g", z, c, many[i*C+c], perNode[z][c])
			}
		}
	}
	if err := b.ForecastMany(many, zs, rev[1:]); err == nil {
		t.Error("ForecastMany with an embedding missing: no error")
	}
}

// TestDistillWarmStart gives Distill targets its fresh φ points away from,
// Z = −φ₀(H) with φ₀ the very φ Distill starts from, so that every
// correlation of the first Phase Θ is negative and the non-negative Lasso
// selects no node. Distill must warm φ up with every node reading itself
// and leave with a non-empty Θ; without that, Ẑ = 0 gives φ no gradient.
func TestDistillWarmStart(t *testing.T) {
	const n, d, S, C = 12, 16, 40, 1
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 4, Channels: C, Hidden: d, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := quickConfig()
	cfg.Epochs, cfg.BudgetStart, cfg.BudgetEnd, cfg.FineTuneEpochs, cfg.PhiBatch = 8, 4, 3, 0, 4
	phi0 := NewStudent(n, d, cfg.PhiHidden, rand.New(rand.NewPCG(cfg.Seed, 0x5d6e))) // Distill's first draw
	rng := rand.New(rand.NewPCG(9, 9))
	targets := func() *Targets {
		h := mat.NewDense(S*n, d, nil)
		for i := range h.RawMatrix().Data {
			h.RawMatrix().Data[i] = 0.3 * rng.NormFloat64()
		}
		z := phi0.PhiAll(h)
		z.Scale(-1, z)
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
	th, _, err := PhaseTheta(phi0.PhiAll(train.H), train.Z, n, cands, cfg.Lambda1, cfg.BudgetStart, cfg.Refit, cfg.KeepSelf)
	if err != nil {
		t.Fatal(err)
	}
	if th.MeanReceptive() != 0 {
		t.Fatalf("the set-up should leave the first Θ empty, it has %.2f nodes per node", th.MeanReceptive())
	}
	norm := snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}
	res, err := Distill(context.Background(), m, norm, cands, train, val, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := res.Rounds[0]
	if first.WarmEpochs == 0 || first.WarmEpochs%cfg.ThetaEvery != 0 || !(first.MeanReceptive > 0) {
		t.Fatalf("first round: %d warm-up epochs, %.2f receptive nodes; want whole periods of %d and some nodes", first.WarmEpochs, first.MeanReceptive, cfg.ThetaEvery)
	}
	t.Logf("warm-up: %d epochs, then %.2f nodes per node", first.WarmEpochs, first.MeanReceptive)
	if r := res.Student.Theta.MeanReceptive(); !(r > 0) || r > float64(cfg.BudgetEnd) {
		t.Errorf("final Θ has %.2f nodes per node, want some and at most %d", r, cfg.BudgetEnd)
	}
	for _, r := range res.Rounds[1:] {
		if r.WarmEpochs != 0 {
			t.Errorf("round %d warmed up again", r.Epoch)
		}
	}
}

// TestFineTuneDecoderKeepsBest fine-tunes the teacher's decoder on the Ẑ of
// an untrained student (far from the teacher's Z, so that fine-tuning has
// work to do) for 0 to 4 epochs. With no epoch it must return the starting
// decoder; with more, a validation score no worse than with one epoch fewer
// (the best epoch is kept, the starting decoder included), and after four a
// better one than the start. FineTuneDecoder must equal FineTuneDecoderZ on
// the student's Ẑ. Validated on the teacher's Z instead, the starting
// decoder is best and must come back.
func TestFineTuneDecoderKeepsBest(t *testing.T) {
	m, set, split, ds := teachertest.Quick(t)
	train, val := quickTargets(t, m, set, split, ds)
	ctx := context.Background()
	st := NewStudent(set.Nodes, 16, 16, rand.New(rand.NewPCG(7, 7)))
	if err := st.SetTheta(selfTheta(set.Nodes)); err != nil {
		t.Fatal(err)
	}
	zTrain, zVal := st.ZHatAll(train.H), st.ZHatAll(val.H)
	cfg := quickConfig()
	cfg.Select = "mae"
	cfg.FineTuneLR = 0.05 // large enough that some epochs are worse than the one before
	score := func(dec *nn.MLP) float64 {
		return selectScore(cfg.Select, decodeMetrics(dec, set.Norm, zVal, val, cfg.MAPEFloor))
	}
	fresh := func() *nn.MLP {
		d := nn.NewMLP("dec", m.Dec.L1.In(), m.Dec.L1.Out(), m.Dec.L2.Out(), rand.New(rand.NewPCG(1, 1)))
		if err := nn.Copy(d.Params(), m.Dec.Params()); err != nil {
			t.Fatal(err)
		}
		return d
	}
	start := score(m.Dec)
	prev := start
	for epochs := 0; epochs <= 4; epochs++ {
		cfg.FineTuneEpochs = epochs
		got, err := FineTuneDecoderZ(ctx, fresh(), zTrain, zVal, set.Norm, train, val, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := score(got)
		t.Logf("%d epochs: validation MAE %.4f (start %.4f)", epochs, s, start)
		switch {
		case epochs == 0 && !slices.Equal(flatParams(got), flatParams(m.Dec)):
			t.Error("0 epochs: the decoder changed")
		case s > prev:
			t.Errorf("%d epochs: validation MAE %.6f, worse than %.6f with one epoch fewer", epochs, s, prev)
		}
		prev = s
		if epochs == 4 {
			if !(s < start) {
				t.Errorf("4 epochs: validation MAE %.6f, not below the start's %.6f", s, start)
			}
			viaStudent, err := FineTuneDecoder(ctx, fresh(), st, set.Norm, train, val, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(flatParams(viaStudent), flatParams(got)) {
				t.Error("FineTuneDecoder and FineTuneDecoderZ on the student's Ẑ disagree")
			}
		}
	}

	// Validated on the teacher's own Z, which its decoder was trained on,
	// while trained on the untrained student's Ẑ: every epoch makes the
	// validation worse, so the starting decoder must come back unchanged.
	cfg.FineTuneEpochs = 2
	got, err := FineTuneDecoderZ(ctx, fresh(), zTrain, val.Z, set.Norm, train, val, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(flatParams(got), flatParams(m.Dec)) {
		t.Errorf("validated on the teacher's Z: got a decoder with validation MAE %.4f, not the starting one (%.4f)",
			selectScore(cfg.Select, decodeMetrics(got, set.Norm, val.Z, val, 0)), selectScore(cfg.Select, decodeMetrics(m.Dec, set.Norm, val.Z, val, 0)))
	}
}

func flatParams(m *nn.MLP) []float64 {
	var out []float64
	for _, p := range m.Params() {
		out = append(out, p.W.RawMatrix().Data...)
	}
	return out
}

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

// TestDistillNoScoredTruthError runs a schedule whose validation truths are
// all missing (0, masked), so that no round has a validation score: the
// metrics of no pair are zero, not a perfect score, and Distill must refuse
// as it does for a NaN score rather than keep the first round at the final
// budget as the best.
func TestDistillNoScoredTruthError(t *testing.T) {
	const n, d, S, C = 6, 16, 12, 1
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 4, Channels: C, Hidden: d, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	cfg := quickConfig()
	cfg.Epochs, cfg.BudgetStart, cfg.BudgetEnd, cfg.FineTuneEpochs, cfg.PhiBatch = 4, 3, 2, 0, 4
	rng := rand.New(rand.NewPCG(9, 9))
	targets := func(truth float64) *Targets {
		h, z := mat.NewDense(S*n, d, nil), mat.NewDense(S*n, d, nil)
		for i := range h.RawMatrix().Data {
			h.RawMatrix().Data[i] = 0.3 * rng.NormFloat64()
			z.RawMatrix().Data[i] = 0.3 * rng.NormFloat64()
		}
		tr := make([]float64, S*n*C)
		for i := range tr {
			tr[i] = truth + rng.Float64()*min(truth, 1)
		}
		return &Targets{Range: snapshot.Range{End: S}, Nodes: n, Dim: d, H: h, Z: z, Truth: tr, Channels: C}
	}
	train, val := targets(10), targets(0) // every validation truth missing
	cands := make([][]int, n)
	for z := range cands {
		cands[z] = []int{(z + n - 1) % n, z, (z + 1) % n}
	}
	norm := snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}
	for _, sel := range []string{"mape", "mae"} {
		cfg.Select = sel
		best := 0
		_, err = Distill(context.Background(), m, norm, cands, train, val, cfg, func(r Round) {
			if r.Best {
				best++
			}
		})
		if err == nil || best > 0 || !strings.Contains(err.Error(), "no unmasked truth") {
			t.Errorf("select %s: validation without an unmasked truth: %d round(s) marked best, error %v; want none and an error naming the missing truths", sel, best, err)
		}
	}
}
