package sdgnn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// Config holds SDGNN's distillation settings.
type Config struct {
	Candidates CandidateConfig `json:"candidates"`
	PhiHidden  int             `json:"phi_hidden"` // hidden width of φ
	Lambda1    float64         `json:"lambda1"`    // L1 weight of Phase Θ (on the per-snapshot mean objective)
	Lambda2    float64         `json:"lambda2"`    // L2 weight decay of φ
	Refit      bool            `json:"refit"`      // refit θ on LARS's support by NNLS (see PhaseTheta)
	// KeepSelf keeps every node in its own receptive set, unpenalised
	// (see PhaseTheta); on by default, off for the paper's plain path.
	// Files written before it existed lack it and read as off, as they ran.
	KeepSelf bool    `json:"keep_self"`
	LR       float64 `json:"lr"`        // Adam learning rate of φ
	PhiBatch int     `json:"phi_batch"` // snapshots per Phase-φ batch

	Epochs      int `json:"epochs"`       // Phase-φ passes over the training snapshots
	ThetaEvery  int `json:"theta_every"`  // epochs between Phase-Θ solves
	BudgetStart int `json:"budget_start"` // receptive-field budget at epoch 0
	BudgetEnd   int `json:"budget_end"`   // final budget
	BudgetEvery int `json:"budget_every"` // epochs per budget decrement

	FineTuneEpochs int     `json:"finetune_epochs"` // decoder fine-tuning epochs on Ẑ
	FineTuneLR     float64 `json:"finetune_lr"`
	Select         string  `json:"select"`     // validation metric for the best checkpoint: "mape" or "mae"
	MAPEFloor      float64 `json:"mape_floor"` // truths below it are left out of validation MAPE (see evaluation.Accumulator)
	Seed           uint64  `json:"seed"`
	// Outage, when not "" or "off", is a scenario of simulated outages
	// (snapshot.ParseOutage) under which the training targets are
	// computed (TrainSet): the silenced sensors' H and the teacher's Z
	// with them silent, so that Θ and φ are fitted to forecasts of
	// sensors fallen silent too. Validation stays on the data as they are.
	// Kept in its text form, so that a Config compares with ==; bundles
	// written before it lack it, as they ran.
	Outage string `json:"outage,omitempty"`
	// SilentWeights fits, after distillation, a second set of weights
	// over every node's receptive nodes for when its own window is empty
	// (Theta.Silent, FitSilentWeights); off, a silent node is forecast
	// with its main weights. Bundles written before it lack it, as they
	// ran.
	SilentWeights bool `json:"silent_weights,omitempty"`
}

// TrainSet returns the set whose inputs the training targets are computed
// from: set silenced by c.Outage's draw of round 0 (one draw: the targets
// are computed once), or set itself without outages.
func (c Config) TrainSet(set *snapshot.Set) (*snapshot.Set, error) {
	o, err := snapshot.ParseOutage(c.Outage)
	if err != nil {
		return nil, fmt.Errorf("sdgnn config: %w", err)
	}
	if !o.Enabled() {
		return set, nil
	}
	return set.Silenced(o.Draw(0)), nil
}

// DefaultConfig returns the reference schedule of the SDGNN paper: Θ
// every 40 epochs; the budget starts at 46 and drops by one every 100
// epochs to 6; 100 more epochs at the final budget (4100 Phase-φ epochs in
// all); 30 epochs of decoder fine-tuning. Scaled shortens it for quick runs.
//
// Two defaults depart from the paper. Refit is on, because on SZ-taxi it
// lowered the validation MAE of the budget-6 student from 3.163 to 3.084;
// set Refit false for the paper's plain LARS weights. KeepSelf is on,
// because the plain path left up to 17 of SZ-taxi's 156 roads out of their
// own receptive sets, and those roads lost up to a third of their accuracy
// (test MAE 5.19 against the teacher's 3.83): over ten seeds, SDGNN's test
// MAE was 3.8721 ± 0.0470 on the plain path and 3.8432 ± 0.0052 keeping
// every node (RESULTS.md); set KeepSelf false for the paper's path.
func DefaultConfig() Config {
	return Config{
		Candidates: CandidateConfig{K1: 2, K2: 1, Sample: 5, Seed: 1},
		PhiHidden:  16, Lambda1: 1e-5, Lambda2: 1e-5, Refit: true, KeepSelf: true, LR: 1e-3, PhiBatch: 32,
		Epochs: 4100, ThetaEvery: 40, BudgetStart: 46, BudgetEnd: 6, BudgetEvery: 100,
		FineTuneEpochs: 30, FineTuneLR: 1e-3, Select: "mape", Seed: 1,
	}
}

// Scaled returns c with its schedule shortened k times: Θ and the budget
// steps come k times as often, and the Phase-φ epochs are cut to match.
// Scaled(10) of the default runs 410 epochs with Θ every 4 epochs.
func (c Config) Scaled(k int) Config {
	if k <= 1 {
		return c
	}
	c.ThetaEvery = max(1, c.ThetaEvery/k)
	c.BudgetEvery = max(1, c.BudgetEvery/k)
	c.Epochs = max(1, c.Epochs/k)
	return c
}

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.PhiHidden < 1 || c.PhiBatch < 1 || c.Epochs < 0 || c.ThetaEvery < 1 || c.BudgetEvery < 1:
		return fmt.Errorf("sdgnn config: phi hidden %d, batch %d, epochs %d, theta every %d, budget every %d: sizes must be positive",
			c.PhiHidden, c.PhiBatch, c.Epochs, c.ThetaEvery, c.BudgetEvery)
	case c.BudgetEnd < 1 || c.BudgetStart < c.BudgetEnd:
		return fmt.Errorf("sdgnn config: budget %d → %d: need start ≥ end ≥ 1", c.BudgetStart, c.BudgetEnd)
	case c.FineTuneEpochs < 0:
		return fmt.Errorf("sdgnn config: fine-tune epochs %d: must be ≥ 0", c.FineTuneEpochs)
	case !finiteAtLeast(c.Lambda1, 0) || !finiteAtLeast(c.Lambda2, 0) || !finiteAtLeast(c.LR, 0) || c.LR == 0 ||
		(c.FineTuneEpochs > 0 && (!finiteAtLeast(c.FineTuneLR, 0) || c.FineTuneLR == 0)):
		return fmt.Errorf("sdgnn config: λ1 %g, λ2 %g, lr %g, fine-tune lr %g: need finite λ ≥ 0 and finite positive learning rates", c.Lambda1, c.Lambda2, c.LR, c.FineTuneLR)
	case !finiteAtLeast(c.MAPEFloor, 0):
		return fmt.Errorf("sdgnn config: MAPE floor %g: must be finite and ≥ 0", c.MAPEFloor)
	case c.Select != "mape" && c.Select != "mae":
		return fmt.Errorf("sdgnn config: select %q: want mape or mae", c.Select)
	}
	if _, err := snapshot.ParseOutage(c.Outage); err != nil {
		return fmt.Errorf("sdgnn config: %w", err)
	}
	return nil
}

// finiteAtLeast reports whether x is finite and at least lo.
func finiteAtLeast(x, lo float64) bool { return x >= lo && !math.IsInf(x, 1) }

// Budget returns the receptive-field budget in force at epoch e.
func (c Config) Budget(e int) int { return max(c.BudgetEnd, c.BudgetStart-e/c.BudgetEvery) }

// Round records one Phase-Θ solve and the validation of the student after it.
type Round struct {
	Epoch         int     `json:"epoch"`
	Budget        int     `json:"budget"`
	MeanReceptive float64 `json:"mean_receptive"`
	KKT           float64 `json:"kkt"`      // mean relative KKT violation of the Lasso solutions
	PhiLoss       float64 `json:"phi_loss"` // mean training MSE of the last Phase-φ epoch
	NR            float64 `json:"nr"`       // validation ‖Ẑ−Z‖² / ‖Z‖²
	// MSE is the validation mean squared error between Ẑ and Z over all
	// entries: the embedding approximation error (absent in bundles
	// written before it was recorded).
	MSE float64 `json:"mse,omitempty"`
	// WarmEpochs are the Phase-φ epochs run with every node reading only
	// itself (θ_zz = 1) before this round's Θ, because the first Θ came out
	// empty (see Distill); 0 unless the start was degenerate.
	WarmEpochs int                `json:"warm_epochs,omitempty"`
	Val        evaluation.Metrics `json:"val"`
	Best       bool               `json:"best"`
	Seconds    float64            `json:"seconds"`
}

// Result is a distilled student with its fine-tuned decoder.
type Result struct {
	Student *Student
	Decoder *nn.MLP
	Rounds  []Round
	Val     evaluation.Metrics // validation metrics of the final bundle
}

// Distill trains SDGNN against the frozen teacher on the training targets
// and selects by validation, following Algorithm 1 of the SDGNN paper:
// alternate Phase Θ (every ThetaEvery epochs, with the budget of the
// schedule) and Phase φ; keep the best checkpoint at the final budget; solve
// Θ once more with φ fixed; fine-tune the decoder on Ẑ.
//
// One departure guards a degenerate start. A freshly initialised φ maps
// every node's embedding to nearly the same vector, so when that vector
// points away from the teachers' Z every correlation is negative, the
// non-negative Lasso selects no node anywhere, Ẑ = 0 and φ gets no
// gradient: training never leaves the empty Θ. When the first Θ is empty,
// φ is first trained for ThetaEvery epochs with every node reading only
// itself (θ_zz = 1) and Θ solved again, until some node is selected (at
// most ten times; Round.WarmEpochs records the epochs).
func Distill(ctx context.Context, m *teacher.Model, norm snapshot.Normalizer, cands [][]int, train, val *Targets, cfg Config, onRound func(Round)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n, d := train.Nodes, train.Dim
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5d6e))
	st := NewStudent(n, d, cfg.PhiHidden, rng)
	opt := nn.NewAdam(cfg.LR, cfg.Lambda2)
	best := NewStudent(n, d, cfg.PhiHidden, rng)
	bestScore := math.Inf(1)
	reachedEnd := false // some round ran at the final budget
	var rounds []Round
	var phiLoss float64

	solve := func(e int) (ThetaStats, error) {
		th, stats, err := st.PhaseTheta(train, cands, cfg.Lambda1, cfg.Budget(e), cfg.Refit, cfg.KeepSelf)
		if err != nil {
			return stats, err
		}
		return stats, st.SetTheta(th)
	}
	for e := 0; e <= cfg.Epochs; e++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if e%cfg.ThetaEvery == 0 || e == cfg.Epochs {
			start := time.Now()
			stats, err := solve(e)
			if err != nil {
				return nil, fmt.Errorf("epoch %d: %w", e, err)
			}
			warm := 0
			for e == 0 && stats.MeanReceptive == 0 {
				if warm >= maxWarmPeriods*cfg.ThetaEvery {
					return nil, fmt.Errorf("distill: Θ still selects no node after %d warm-up epochs of φ: do the teacher's embeddings carry anything?", warm)
				}
				if err := st.SetTheta(selfTheta(n)); err != nil {
					return nil, err
				}
				for range cfg.ThetaEvery {
					warm++
					if phiLoss, err = st.PhasePhi(train, opt, cfg.PhiBatch, rng); err != nil {
						return nil, fmt.Errorf("warm-up epoch %d: %w", warm, err)
					}
				}
				if stats, err = solve(e); err != nil {
					return nil, fmt.Errorf("epoch %d after warm-up: %w", e, err)
				}
			}
			rd := Round{Epoch: e, Budget: stats.Budget, MeanReceptive: stats.MeanReceptive, KKT: stats.MeanKKT, PhiLoss: phiLoss, WarmEpochs: warm}
			rd.NR, rd.MSE, rd.Val = validate(st, m.Dec, norm, val, cfg.MAPEFloor)
			score := selectScore(cfg.Select, rd.Val)
			reachedEnd = reachedEnd || stats.Budget == cfg.BudgetEnd
			if stats.Budget == cfg.BudgetEnd && score < bestScore {
				bestScore, rd.Best = score, true
				if err := nn.Copy(best.Phi.Params(), st.Phi.Params()); err != nil {
					return nil, err
				}
			}
			rd.Seconds = time.Since(start).Seconds()
			rounds = append(rounds, rd)
			if onRound != nil {
				onRound(rd)
			}
		}
		if e == cfg.Epochs {
			break
		}
		var err error
		if phiLoss, err = st.PhasePhi(train, opt, cfg.PhiBatch, rng); err != nil {
			return nil, fmt.Errorf("epoch %d: %w", e, err)
		}
	}
	if math.IsInf(bestScore, 1) && reachedEnd {
		why := "a non-finite forecast, or no unmasked truth"
		if cfg.Select == "mape" {
			why += fmt.Sprintf(", or no truth at or above the MAPE floor %g", cfg.MAPEFloor)
		}
		return nil, fmt.Errorf("distill: no round at the final budget %d had a finite validation %s (%s)", cfg.BudgetEnd, cfg.Select, why)
	}
	if math.IsInf(bestScore, 1) {
		return nil, fmt.Errorf("distill: no round reached the final budget %d (epochs %d too few for the schedule)", cfg.BudgetEnd, cfg.Epochs)
	}
	// Final Θ with the best φ fixed (Algorithm 1, last loop).
	th, _, err := best.PhaseTheta(train, cands, cfg.Lambda1, cfg.BudgetEnd, cfg.Refit, cfg.KeepSelf)
	if err != nil {
		return nil, fmt.Errorf("final theta: %w", err)
	}
	if err := best.SetTheta(th); err != nil {
		return nil, err
	}
	dec := nn.NewMLP("dec", d, m.Dec.L1.Out(), m.Dec.L2.Out(), rng)
	if err := nn.Copy(dec.Params(), m.Dec.Params()); err != nil {
		return nil, err
	}
	if cfg.FineTuneEpochs > 0 {
		if dec, err = FineTuneDecoder(ctx, dec, best, norm, train, val, cfg); err != nil {
			return nil, err
		}
	}
	_, _, v := validate(best, dec, norm, val, cfg.MAPEFloor)
	return &Result{Student: best, Decoder: dec, Rounds: rounds, Val: v}, nil
}

// maxWarmPeriods bounds the warm-up of a degenerate start, in periods of
// ThetaEvery epochs.
const maxWarmPeriods = 10

// selfTheta is the Θ in which every node reads only itself with weight 1.
func selfTheta(n int) *Theta {
	t := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := range n {
		t.Nodes[z], t.Weights[z] = []int{z}, []float64{1}
	}
	return t
}

// selectScore returns the validation score to minimise: m's MAPE or MAE.
// NaN counts as +Inf, and so do the metrics of no pair (every truth
// masked), whose zero errors would otherwise read as a perfect score.
func selectScore(kind string, m evaluation.Metrics) float64 {
	v := m.MAPE
	if kind == "mae" {
		v = m.MAE
	}
	if math.IsNaN(v) || m.Count == 0 {
		return math.Inf(1)
	}
	return v
}

// validate returns the relative approximation error ‖Ẑ−Z‖²/‖Z‖², the mean
// squared error between Ẑ and Z, and the forecast metrics of decoding Ẑ on
// the targets t.
func validate(st *Student, dec *nn.MLP, norm snapshot.Normalizer, t *Targets, floor float64) (nr, mse float64, m evaluation.Metrics) {
	sq, zsq, m := ScoreZHat(st.EachZHat, dec, norm, t, floor)
	return sq / zsq, sq / float64(len(t.Z.RawMatrix().Data)), m
}

// ScoreZHat passes once over a student's Ẑ of t's snapshots as each yields
// it, a block of rows at a time (see Student.EachZHat), so that scoring
// holds no Ẑ of every snapshot (0.67 GB at PeMS04's size). It returns
// ‖Ẑ − Z‖², ‖Z‖² and, when dec is not nil, the metrics of Ẑ decoded by dec
// against t's raw truths. SDGNN's validation and the distilled baselines'
// use it alike.
func ScoreZHat(each func(h *mat.Dense, f func(lo, hi int, zhat *mat.Dense)), dec *nn.MLP, norm snapshot.Normalizer, t *Targets, floor float64) (sq, zsq float64, m evaluation.Metrics) {
	acc := evaluation.Accumulator{MAPEFloor: floor}
	_, d := t.Z.Dims()
	zr := t.Z.RawMatrix().Data
	each(t.H, func(lo, hi int, zhat *mat.Dense) {
		for i, v := range zhat.RawMatrix().Data {
			z := zr[lo*d+i]
			e := v - z
			sq += float64(e * e) // rounded: the same sums on every machine (see internal/portable)
			zsq += float64(z * z)
		}
		if dec != nil {
			decodeRows(&acc, dec, norm, zhat, t, lo)
		}
	})
	return sq, zsq, acc.Metrics()
}

// decodeMetrics decodes z (rows of t's snapshots) and scores the forecasts
// against t's raw truth.
func decodeMetrics(dec *nn.MLP, norm snapshot.Normalizer, z *mat.Dense, t *Targets, floor float64) evaluation.Metrics {
	acc := evaluation.Accumulator{MAPEFloor: floor}
	decodeRows(&acc, dec, norm, z, t, 0)
	return acc.Metrics()
}

// decodeRows decodes z, rows from from on of t's snapshots, and adds the
// forecasts and t's raw truths to acc.
func decodeRows(acc *evaluation.Accumulator, dec *nn.MLP, norm snapshot.Normalizer, z *mat.Dense, t *Targets, from int) {
	r, d := z.Dims()
	const rows = 1 << 14
	for lo := 0; lo < r; lo += rows {
		hi := min(lo+rows, r)
		out := dec.Forward(z.Slice(lo, hi, 0, d).(*mat.Dense))
		od := out.RawMatrix().Data
		for i, v := range od {
			c := i % t.Channels
			acc.Add(norm.Denormalize(v, c), t.Truth[(from+lo)*t.Channels+i])
		}
	}
}

// FineTuneDecoder trains dec to forecast the ground truth from the student's
// Ẑ (masked MAE on the normalised scale, Adam), for cfg.FineTuneEpochs epochs,
// and returns the epoch's decoder with the best validation score (the
// starting decoder included).
func FineTuneDecoder(ctx context.Context, dec *nn.MLP, st *Student, norm snapshot.Normalizer, train, val *Targets, cfg Config) (*nn.MLP, error) {
	zTrain := st.ZHatAll(train.H)
	zVal := zTrain // a node split's parts share their snapshots
	if val.H != train.H {
		zVal = st.ZHatAll(val.H)
	}
	return FineTuneDecoderZ(ctx, dec, zTrain, zVal, norm, train, val, cfg)
}

// FineTuneDecoderZ is FineTuneDecoder on precomputed embeddings: zTrain and
// zVal hold a student's Ẑ of train's and val's snapshots (rows snapshot by
// snapshot, node by node, as Student.ZHatAll returns them). It serves
// students that are not a Student (the graphless baselines), with the same
// batches (cfg.PhiBatch snapshots), random stream (cfg.Seed), validation
// score (cfg.Select, cfg.MAPEFloor) and epochs, so that every model's decoder
// is fine-tuned alike.
func FineTuneDecoderZ(ctx context.Context, dec *nn.MLP, zTrain, zVal *mat.Dense, norm snapshot.Normalizer, train, val *Targets, cfg Config) (*nn.MLP, error) {
	n, C := train.Nodes, train.Channels
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xdec))
	best := nn.NewMLP("dec", dec.L1.In(), dec.L1.Out(), dec.L2.Out(), rng)
	if err := nn.Copy(best.Params(), dec.Params()); err != nil {
		return nil, err
	}
	bestScore := selectScore(cfg.Select, decodeMetrics(dec, norm, zVal, val, cfg.MAPEFloor))
	opt := nn.NewAdam(cfg.FineTuneLR, 0)
	ps := dec.Params()
	var zb, y, raw, dy *mat.Dense
	for e := 0; e < cfg.FineTuneEpochs; e++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, idx := range snapshot.Batches(snapshot.Range{End: train.Snapshots()}, cfg.PhiBatch, rng) {
			rows := len(idx) * n
			zb = GatherSnapshots(zb, zTrain, n, idx)
			y, raw, dy = nn.Resize(y, rows, C), nn.Resize(raw, rows, C), nn.Resize(dy, rows, C)
			for b, si := range idx {
				for i := 0; i < n*C; i++ {
					v := train.Truth[si*n*C+i]
					raw.RawMatrix().Data[b*n*C+i] = v
					y.RawMatrix().Data[b*n*C+i] = norm.Normalize(v, i%C)
				}
			}
			pred := dec.Forward(zb)
			if _, err := teacher.Loss(teacher.LossMAE, dy, pred, y, raw); err != nil {
				return nil, err
			}
			nn.ZeroGrad(ps)
			dec.Backward(dy)
			if err := opt.Step(ps); err != nil {
				return nil, err
			}
		}
		if s := selectScore(cfg.Select, decodeMetrics(dec, norm, zVal, val, cfg.MAPEFloor)); s < bestScore {
			bestScore = s
			if err := nn.Copy(best.Params(), ps); err != nil {
				return nil, err
			}
		}
	}
	return best, nil
}
