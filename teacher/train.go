package teacher

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TrainConfig holds the optimisation settings. The defaults (DefaultTrain)
// are those of the reference GRU-GCN: Adam, lr 1e-3, weight decay 1e-5,
// early stopping with patience 30 on validation MAE.
type TrainConfig struct {
	MaxEpochs   int     `json:"max_epochs"`
	BatchSize   int     `json:"batch_size"` // snapshots per batch
	LR          float64 `json:"lr"`
	WeightDecay float64 `json:"weight_decay"`
	Patience    int     `json:"patience"`  // epochs without a better validation score (see Select) before stopping
	ClipNorm    float64 `json:"clip_norm"` // gradient norm cap; ≤ 0 disables
	Loss        string  `json:"loss"`      // LossMAE or LossMSE
	Seed        uint64  `json:"seed"`      // shuffling and noise
	// MaxBatches caps the training batches per epoch (0: all). For quick runs.
	MaxBatches int `json:"max_batches,omitempty"`
	// Select is the validation score that picks the best epoch and stops
	// early: "" for the validation MAE on the original scale, or
	// SelectScaled.
	Select string `json:"select,omitempty"`
	// Outage, when not "" or "off", is a scenario of simulated outages
	// (snapshot.ParseOutage) drawn anew every epoch over the training
	// snapshots (snapshot.Outage.Draw with the epoch's number): the
	// silenced sensors' windows enter as missing readings, their targets
	// kept, so that the model learns to forecast sensors that fell silent.
	// Validation is on the data as they are. Kept in its text form, so
	// that a TrainConfig compares with ==.
	Outage string `json:"outage,omitempty"`
}

// SelectScaled (TrainConfig.Select) picks the epoch with the lowest mean,
// over the channels, of each channel's validation MAE divided by its scale
// (the normaliser's Std: the standard deviation, or the range for min-max
// scaling). Every channel then counts alike, as in the paper-style metric;
// the MAE on the original scale is PeMS's flow's, whose readings are in the
// hundreds where occupancy's are below 1. With one channel both pick the
// same epoch.
const SelectScaled = "scaled"

// DefaultTrain returns the reference training settings.
func DefaultTrain() TrainConfig {
	return TrainConfig{MaxEpochs: 500, BatchSize: 32, LR: 1e-3, WeightDecay: 1e-5, Patience: 30, ClipNorm: 5, Loss: LossMAE, Seed: 1}
}

// Validate reports what is wrong with c, if anything.
func (c TrainConfig) Validate() error {
	switch {
	case c.MaxEpochs < 1:
		return fmt.Errorf("max epochs %d: must be at least 1", c.MaxEpochs)
	case c.BatchSize < 1:
		return fmt.Errorf("batch size %d: must be at least 1", c.BatchSize)
	case !(c.LR > 0) || math.IsInf(c.LR, 1):
		return fmt.Errorf("learning rate %g: must be finite and > 0", c.LR)
	case !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 1):
		return fmt.Errorf("weight decay %g: must be finite and ≥ 0", c.WeightDecay)
	case !(c.ClipNorm >= 0) || math.IsInf(c.ClipNorm, 1):
		return fmt.Errorf("gradient clip %g: must be finite and ≥ 0 (0: off)", c.ClipNorm)
	case c.Patience < 1:
		return fmt.Errorf("patience %d: must be at least 1", c.Patience)
	case c.Loss != LossMAE && c.Loss != LossMSE:
		return fmt.Errorf("loss %q: want %q or %q", c.Loss, LossMAE, LossMSE)
	case c.Select != "" && c.Select != SelectScaled:
		return fmt.Errorf("selection %q: want \"\" (validation MAE) or %q", c.Select, SelectScaled)
	}
	if _, err := snapshot.ParseOutage(c.Outage); err != nil {
		return fmt.Errorf("training outages: %w", err)
	}
	return nil
}

// outage returns the training outages of c (the zero Outage for none).
func (c TrainConfig) outage() snapshot.Outage {
	o, _ := snapshot.ParseOutage(c.Outage) // checked by Validate
	return o
}

// Epoch is the record of one training epoch.
type Epoch struct {
	Epoch     int                `json:"epoch"` // 1-based
	TrainLoss float64            `json:"train_loss"`
	Val       evaluation.Metrics `json:"val"`
	Best      bool               `json:"best"` // the selection score improved
	Seconds   float64            `json:"seconds"`
}

// Trainer trains a model with Adam and early stopping, keeping the parameters
// of the best validation epoch. Its whole state (model, best parameters,
// optimiser moments, counters) can be saved and resumed: see SaveState.
type Trainer struct {
	Model  *Model
	Best   *Model // parameters at the best validation score so far (MAE, or the scaled score with Select "scaled")
	Opt    *nn.Adam
	Config TrainConfig

	Epoch      int     // epochs completed
	BestEpoch  int     // epoch of Best (0: none yet)
	BestValMAE float64 // validation MAE of Best
	// BestValScore is Best's selection score (Config.Select): BestValMAE
	// unless the selection is SelectScaled.
	BestValScore float64
	History      []Epoch
	// MAPEFloor leaves truths below it out of the validation MAPE of each
	// epoch's record (History, the epoch log), as evaluation.Build's floor
	// does. Epochs are picked by MAE (or the scaled score), never by MAPE,
	// so it changes no model. It is not saved with the state: the caller
	// sets it, as it sets the final report's.
	MAPEFloor float64

	batch snapshot.Batch
	dy    *mat.Dense

	// The parameters and Adam's state at the start of the epoch in
	// progress, put back when Run is cancelled in its middle.
	undoW, undoM, undoV []*mat.Dense
	undoT               int
}

// markEpoch records the parameters ps and Adam's state, for undoEpoch.
func (t *Trainer) markEpoch(ps []*nn.Param) {
	t.undoW = keepCopy(t.undoW, values(ps))
	t.undoM = keepCopy(t.undoM, t.Opt.M)
	t.undoV = keepCopy(t.undoV, t.Opt.V)
	t.undoT = t.Opt.T
}

// keepCopy returns copies of src, reusing dst's matrices when it holds as
// many (of the same shapes: those of one model's parameters).
func keepCopy(dst, src []*mat.Dense) []*mat.Dense {
	if len(dst) != len(src) {
		dst = make([]*mat.Dense, len(src))
	}
	for i, m := range src {
		if dst[i] == nil {
			dst[i] = mat.DenseCopyOf(m)
		} else {
			dst[i].Copy(m)
		}
	}
	return dst
}

// undoEpoch puts back what markEpoch recorded: the updates of an epoch
// that is not finished are dropped, so that the trainer's state is that of
// the end of its last whole epoch.
func (t *Trainer) undoEpoch(ps []*nn.Param) {
	for i, p := range ps {
		p.W.Copy(t.undoW[i])
	}
	if len(t.undoM) == 0 {
		t.Opt.M, t.Opt.V = nil, nil
	} else {
		for i := range t.Opt.M {
			t.Opt.M[i].Copy(t.undoM[i])
			t.Opt.V[i].Copy(t.undoV[i])
		}
	}
	t.Opt.T = t.undoT
}

// NewTrainer returns a trainer for m.
func NewTrainer(m *Model, cfg TrainConfig) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	best, err := New(m.Config)
	if err != nil {
		return nil, err
	}
	if err := nn.Copy(best.Params(), m.Params()); err != nil {
		return nil, err
	}
	return &Trainer{Model: m, Best: best, Opt: nn.NewAdam(cfg.LR, cfg.WeightDecay), Config: cfg, BestValMAE: math.Inf(1), BestValScore: math.Inf(1)}, nil
}

// Stopped reports whether early stopping or the epoch cap has ended training.
func (t *Trainer) Stopped() bool {
	return t.Epoch >= t.Config.MaxEpochs || (t.BestEpoch > 0 && t.Epoch-t.BestEpoch >= t.Config.Patience)
}

// Run trains until Stopped, calling onEpoch after each epoch. When ctx is
// cancelled it returns ctx.Err() between batches; the epoch in progress is
// discarded (its updates of Model and of the optimiser are undone, and
// Epoch is not advanced), so that a saved state resumes at the start of
// that epoch exactly as an uninterrupted run would go on.
//
// The shuffling and the training noise of epoch e are drawn from generators
// seeded by (Seed, e), so a resumed run sees the same batches as an
// uninterrupted one.
func (t *Trainer) Run(ctx context.Context, set *snapshot.Set, split snapshot.Split, a gcn.Propagator, onEpoch func(Epoch)) error {
	if err := checkSet(t.Model, set); err != nil {
		return err
	}
	ps := t.Model.Params()
	outage := t.Config.outage()
	for !t.Stopped() {
		start := time.Now()
		e := t.Epoch + 1
		shuffle := rand.New(rand.NewPCG(t.Config.Seed, uint64(e)))
		noise := rand.New(rand.NewPCG(t.Config.Seed^0xdeadbeef, uint64(e)))
		train := set
		if outage.Enabled() {
			train = set.Silenced(outage.Draw(uint64(e)))
		}
		batches := snapshot.BatchesOf(split.Train.Snapshots(), t.Config.BatchSize, shuffle)
		if t.Config.MaxBatches > 0 && len(batches) > t.Config.MaxBatches {
			batches = batches[:t.Config.MaxBatches]
		}
		var lossSum float64
		t.markEpoch(ps)
		for i, idx := range batches {
			if err := ctx.Err(); err != nil {
				if i > 0 {
					t.undoEpoch(ps)
				}
				return err
			}
			l, err := t.step(train, split.Train, idx, a, noise, ps)
			if err != nil {
				return fmt.Errorf("epoch %d: %w", e, err)
			}
			lossSum += l
		}
		// Not cancelled with ctx: the epoch's updates are made, and a
		// state saved now must record the epoch as done.
		val, err := evaluate(context.WithoutCancel(ctx), t.Model, set, split.Val, a, 1, 64, t.MAPEFloor)
		if err != nil {
			return fmt.Errorf("epoch %d validation: %w", e, err)
		}
		if val.Overall.Count == 0 {
			// Its errors are 0: every epoch would look perfect, the first kept.
			return fmt.Errorf("epoch %d validation: no reading of the validation part to score (every one missing), so no epoch can be chosen: give a split whose validation part has readings", e)
		}
		t.Epoch = e
		rec := Epoch{Epoch: e, TrainLoss: lossSum / float64(len(batches)), Val: val.Overall, Seconds: time.Since(start).Seconds()}
		if score := selectionScore(t.Config.Select, val, set.Norm); score < t.BestValScore {
			t.BestValScore, t.BestValMAE, t.BestEpoch, rec.Best = score, val.Overall.MAE, e, true
			if err := nn.Copy(t.Best.Params(), ps); err != nil {
				return err
			}
		}
		if math.IsNaN(rec.TrainLoss) {
			return fmt.Errorf("epoch %d: training loss is NaN (learning rate %g too high?)", e, t.Config.LR)
		}
		t.History = append(t.History, rec)
		if onEpoch != nil {
			onEpoch(rec)
		}
	}
	return nil
}

func (t *Trainer) step(set *snapshot.Set, part snapshot.Part, idx []int, a gcn.Propagator, noise *rand.Rand, ps []*nn.Param) (float64, error) {
	if err := set.Fill(&t.batch, idx); err != nil {
		return 0, err
	}
	part.Hide(t.batch.Raw.RawMatrix().Data, set.Nodes, set.Channels) // a node split learns from its training nodes only
	pred, err := t.Model.Forward(t.batch.X, a, noise)
	if err != nil {
		return 0, err
	}
	r, c := pred.Dims()
	t.dy = nn.Resize(t.dy, r, c)
	l, err := Loss(t.Config.Loss, t.dy, pred, t.batch.Y, t.batch.Raw)
	if err != nil {
		return 0, err
	}
	nn.ZeroGrad(ps)
	if err := t.Model.Backward(t.dy, a); err != nil {
		return 0, err
	}
	nn.ClipGradNorm(ps, t.Config.ClipNorm)
	return l, t.Opt.Step(ps)
}

// Predict returns the forecasts of m for the snapshots of part p on the
// original scale, row-major (snapshot, node, channel), together with the raw
// targets in the same layout, NaN (not scored) for nodes outside p. Every
// node is forecast: the GCN needs them all. When ctx is cancelled it stops
// between batches and returns ctx.Err(), so that an interrupted evaluation
// of a long part ends at once.
func Predict(ctx context.Context, m *Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator, batchSize int) (pred, truth []float64, err error) {
	if err := checkSet(m, set); err != nil {
		return nil, nil, err
	}
	if batchSize < 1 {
		batchSize = 64
	}
	nc := set.Nodes * set.Channels
	pred = make([]float64, 0, p.Len()*nc)
	truth = make([]float64, 0, p.Len()*nc)
	var b snapshot.Batch
	for _, idx := range snapshot.BatchesOf(p.Snapshots(), batchSize, nil) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := set.Fill(&b, idx); err != nil {
			return nil, nil, err
		}
		out, err := m.Forward(b.X, a, nil)
		if err != nil {
			return nil, nil, err
		}
		od, rd := out.RawMatrix().Data, b.Raw.RawMatrix().Data
		for i, v := range od {
			pred = append(pred, set.Norm.Denormalize(v, i%set.Channels))
		}
		truth = append(truth, rd...)
	}
	p.Hide(truth, set.Nodes, set.Channels)
	return pred, truth, nil
}

// PredictPart is Predict for scoring part p: it returns the forecasts of
// p's nodes, and NaN for the other nodes, whose truths are hidden.
//
// When p is a set of nodes (a node split) and a is a *pems.CSR, the model
// runs only on the subgraph that those forecasts depend on: p's nodes and
// the nodes within the GCN's depth of them (only p's nodes for the GRU
// baseline). The induced subgraph keeps the whole graph's weights and their
// order, so the forecasts are those of the whole graph, bit for bit, at a
// fraction of the cost: with PeMS04's road graph, the validation tenth of
// the sensors and their 2-hop neighbours are 139 of 307.
func PredictPart(ctx context.Context, m *Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator, batchSize int) (pred, truth []float64, err error) {
	csr, ok := a.(*pems.CSR)
	if p.Nodes == nil || (m.GCN != nil && !ok) {
		if pred, truth, err = Predict(ctx, m, set, p, a, batchSize); err != nil {
			return nil, nil, err
		}
		hidePred(pred, truth)
		return pred, truth, nil
	}
	if err := checkSet(m, set); err != nil {
		return nil, nil, err
	}
	for _, i := range p.Nodes {
		if i < 0 || i >= set.Nodes {
			return nil, nil, fmt.Errorf("teacher: predict: node %d of the part is outside [0, %d)", i, set.Nodes)
		}
	}
	keep := slices.Sorted(slices.Values(p.Nodes))
	keep = slices.Compact(keep)
	var sub gcn.Propagator
	if m.GCN != nil {
		if csr.N != set.Nodes {
			return nil, nil, fmt.Errorf("teacher: predict: graph of %d nodes, data of %d", csr.N, set.Nodes)
		}
		if keep, err = csr.Reach(keep, m.Config.GCNLayers()); err != nil {
			return nil, nil, fmt.Errorf("teacher: predict: %w", err)
		}
		if sub, err = csr.Induced(keep); err != nil {
			return nil, nil, fmt.Errorf("teacher: predict: %w", err)
		}
	}
	if batchSize < 1 {
		batchSize = 64
	}
	inPart := make([]bool, set.Nodes)
	for _, i := range p.Nodes {
		inPart[i] = true
	}
	nodes, nc, k, in := set.Nodes, set.Nodes*set.Channels, len(keep), set.Inputs()
	pred = make([]float64, p.Len()*nc)
	truth = make([]float64, 0, p.Len()*nc)
	nan := math.NaN()
	for i := range pred {
		pred[i] = nan
	}
	var b snapshot.Batch
	xs := make([]*mat.Dense, set.Window)
	done := 0 // snapshots written to pred
	for _, idx := range snapshot.BatchesOf(p.Snapshots(), batchSize, nil) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := set.Fill(&b, idx); err != nil {
			return nil, nil, err
		}
		for t, x := range b.X {
			xs[t] = nn.Resize(xs[t], len(idx)*k, in)
			src, dst := x.RawMatrix(), xs[t].RawMatrix()
			for s := range idx {
				for r, i := range keep {
					copy(dst.Data[(s*k+r)*dst.Stride:(s*k+r)*dst.Stride+in], src.Data[(s*nodes+i)*src.Stride:])
				}
			}
		}
		out, err := m.Forward(xs, sub, nil)
		if err != nil {
			return nil, nil, err
		}
		od := out.RawMatrix()
		for s := range idx {
			for r, i := range keep {
				if !inPart[i] {
					continue
				}
				at := ((done+s)*nodes + i) * set.Channels
				for c := range set.Channels {
					pred[at+c] = set.Norm.Denormalize(od.Data[(s*k+r)*od.Stride+c], c)
				}
			}
		}
		done += len(idx)
		truth = append(truth, b.Raw.RawMatrix().Data...)
	}
	p.Hide(truth, set.Nodes, set.Channels)
	return pred, truth, nil
}

// selectionScore is the score of validation report val under selection
// sel (TrainConfig.Select), lower better: the overall MAE, or for
// SelectScaled the mean over channels of MAE divided by norm's scale.
func selectionScore(sel string, val evaluation.Report, norm snapshot.Normalizer) float64 {
	if sel != SelectScaled || len(val.PerChannel) == 0 {
		return val.Overall.MAE
	}
	var s float64
	for c, m := range val.PerChannel {
		s += m.MAE / norm.Std[c]
	}
	return s / float64(len(val.PerChannel))
}

// hidePred sets pred to NaN wherever truth is NaN (hidden).
func hidePred(pred, truth []float64) {
	for i, v := range truth {
		if math.IsNaN(v) {
			pred[i] = v
		}
	}
}

// Evaluate returns the masked metrics of m on part p, overall, per channel,
// per node and per chronological chunk. It forecasts with PredictPart, so a
// node part costs only the subgraph its forecasts need.
func Evaluate(ctx context.Context, m *Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator, chunks, batchSize int) (evaluation.Report, error) {
	return evaluate(ctx, m, set, p, a, chunks, batchSize, 0)
}

// evaluate is Evaluate with truths below floor left out of MAPE.
func evaluate(ctx context.Context, m *Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator, chunks, batchSize int, floor float64) (evaluation.Report, error) {
	pred, truth, err := PredictPart(ctx, m, set, p, a, batchSize)
	if err != nil {
		return evaluation.Report{}, err
	}
	return evaluation.Build(pred, truth, p.Len(), set.Nodes, set.Channels, min(chunks, p.Len()), floor)
}

// checkSet reports whether set's snapshots fit m: the same channels and
// the same inputs per step (the preprocessing's calendar inputs included).
func checkSet(m *Model, set *snapshot.Set) error {
	if set.Norm.Mask != (m.Config.MaskInputs > 0) {
		return fmt.Errorf("data with missing marks %v, a model that reads %d of them (use snapshot.Set.Masked)", set.Norm.Mask, m.Config.MaskInputs)
	}
	if set.Channels != m.Config.Channels || set.Inputs() != m.Config.Inputs() {
		return fmt.Errorf("data have %s and %s per step (%s preprocessing), the model %d and %d",
			english.Count(set.Channels, "channel"), english.Count(set.Inputs(), "input"), set.Norm.Prep(), m.Config.Channels, m.Config.Inputs())
	}
	return nil
}
