// Package reproduce runs the SDGNN paper's forecasting comparison on one
// dataset: for each seed it trains (or reuses) the GRU-GCN teacher and the GRU
// baseline, distils SDGNN, trains the distilled baselines (GLNN, NOSMOG,
// PPRGo, SDGNN-Equal) on the same teacher targets, and scores every model on
// the same test split with the same masked metrics. The result is a Table of
// means and standard deviations over seeds, with each model's mean receptive
// field (the nodes whose windows one forecast reads).
package reproduce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/baseline"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// Model names, in the table's column order.
const (
	GRUGCN     = "GRU-GCN"
	GRU        = "GRU"
	GLNN       = baseline.NameGLNN
	NOSMOG     = baseline.NameNOSMOG
	PPRGo      = baseline.NamePPRGo
	SDGNNEqual = baseline.NameSDGNNEqual
	SDGNN      = "SDGNN"
)

// SDGNNMainWeights names, in Run.Outages, an SDGNN bundle with silent
// weights (sdgnn.Theta.Silent) scored without them: how much of SDGNN's
// forecasts of silent sensors the silent weights make.
const SDGNNMainWeights = "SDGNN, main weights only"

// Models lists the table's columns.
var Models = []string{GRUGCN, GRU, GLNN, NOSMOG, PPRGo, SDGNNEqual, SDGNN}

// Config says what to run.
type Config struct {
	Dataset  string     `json:"dataset"`
	DataDir  string     `json:"-"`
	Seeds    []uint64   `json:"seeds"`
	Window   int        `json:"window"`
	Hidden   int        `json:"hidden"`
	NoiseStd float64    `json:"noise_std"`
	Ratios   [3]float64 `json:"split_ratios"`
	// SplitBy is snapshot.ByTime (when empty), snapshot.ByNodes or
	// snapshot.ByWindows, Gao & Ribeiro's transductive and inductive
	// splits, whose Ratios are whole numbers (7,1,2).
	SplitBy string `json:"split_by,omitempty"`
	// Prep is the input preprocessing of every model (PrepStandard when
	// empty; PrepPaper is Gao & Ribeiro's).
	Prep snapshot.Prep `json:"prep,omitempty"`
	// Steps, when positive, keeps only the first Steps steps of the series
	// (snapshot.SplitSpec.Steps). RunAll records what it used: 0 when the
	// series is no longer than that.
	Steps     int                 `json:"steps,omitempty"`
	Teacher   teacher.TrainConfig `json:"teacher"`
	SDGNN     sdgnn.Config        `json:"sdgnn"`
	Baseline  baseline.Config     `json:"baseline"`
	MAPEFloor float64             `json:"mape_floor"`
	// ModelDir, when set, is where teacher models are saved and looked for:
	// a model file already there for a seed is reused instead of trained.
	ModelDir string `json:"model_dir,omitempty"`
	// Outage is a scenario of simulated outages every model is also
	// scored under, one pass a silenced length (Run.Outages); the zero
	// Outage: none. It changes no model and no other score.
	Outage snapshot.Outage `json:"outage,omitzero"`
	// MaskInput gives every model's GRU a missing mark per channel beside
	// each reading (snapshot.Normalizer.Mask, teacher.Config.MaskInputs),
	// Gate the GRU-GCN's skip a gate (teacher.Config.Gate), and
	// TrainOutage, when not "" or "off", is a scenario of simulated
	// outages (snapshot.ParseOutage) the teachers are trained under, drawn
	// anew each epoch, and the students' training targets computed under,
	// drawn once; each seed draws them with its own seed (the scenario's
	// seed= is replaced by the run's). All three are off in the paper's
	// protocol, whose tables they leave unchanged.
	MaskInput   bool   `json:"mask_input,omitempty"`
	Gate        bool   `json:"gate,omitempty"`
	TrainOutage string `json:"train_outage,omitempty"`
}

// trainOutage returns the training outages of seed seed in text form, ""
// for none: TrainOutage with the run's seed.
func (c Config) trainOutage(seed uint64) (string, error) {
	o, err := snapshot.ParseOutage(c.TrainOutage)
	if err != nil || !o.Enabled() {
		return "", err
	}
	o.Seed = seed
	return o.String(), nil
}

// prep returns the input preprocessing, PrepStandard where Prep is empty.
func (c Config) prep() snapshot.Prep {
	if c.Prep == "" {
		return snapshot.PrepStandard
	}
	return c.Prep
}

// spec returns the split the configuration asks for.
func (c Config) spec() snapshot.SplitSpec {
	by := c.SplitBy
	if by == "" {
		by = snapshot.ByTime
	}
	return snapshot.SplitSpec{By: by, Ratios: c.Ratios, Steps: c.Steps}
}

// QuickSteps is the part of a series that Quick runs on: its first 4032
// steps, two weeks of PeMS's 5-minute readings. SZ-taxi (2976 steps) is
// used whole; PeMS04 (16992) is cut to a quarter, so that a quick run there
// also takes minutes rather than the better part of an hour.
const QuickSteps = 4032

// Quick returns a configuration that runs in a few minutes on two cores:
// short teacher training and short schedules, one seed, the first
// QuickSteps steps of the series.
func Quick(dataset string) Config {
	c := Full(dataset)
	c.Steps = QuickSteps
	c.Seeds = []uint64{1}
	c.Teacher.MaxEpochs, c.Teacher.LR = 8, 5e-3
	s := &c.SDGNN
	s.Epochs, s.ThetaEvery, s.BudgetStart, s.BudgetEvery, s.FineTuneEpochs, s.LR = 60, 5, 16, 5, 5, 5e-3
	c.Baseline = baseline.FromSDGNN(c.SDGNN)
	c.Baseline.Epochs = 20
	return c
}

// Full returns the reference settings with ten seeds.
func Full(dataset string) Config {
	c := Config{Dataset: dataset, Window: 12, Hidden: 16, NoiseStd: 0.01, Ratios: [3]float64{6, 2, 2},
		Teacher: teacher.DefaultTrain(), SDGNN: sdgnn.DefaultConfig()}
	if dataset == "pems08" {
		c.NoiseStd = 0.05
	}
	for s := uint64(1); s <= 10; s++ {
		c.Seeds = append(c.Seeds, s)
	}
	c.Baseline = baseline.FromSDGNN(c.SDGNN)
	return c
}

// Run is one seed's scores.
type Run struct {
	Seed    uint64                        `json:"seed"`
	Metrics map[string]evaluation.Metrics `json:"metrics"`
	Seconds map[string]float64            `json:"seconds"`
	// MaxReceptive is the largest receptive set of any node, per model.
	MaxReceptive map[string]int `json:"max_receptive"`
	// Receptive is the mean receptive field per model (absent in tables
	// written before it was recorded per seed; see Merge).
	Receptive map[string]float64 `json:"receptive,omitempty"`
	// Paper holds the errors as the paper's table computes them (see
	// evaluation.PaperAccumulator).
	Paper map[string]evaluation.PaperMetrics `json:"paper"`
	// DM holds, per model but SDGNN, the Diebold–Mariano test of SDGNN's
	// per-snapshot MAE over the test snapshots against that model's (Stat
	// negative: SDGNN lower). Tables written before it have none.
	DM map[string]evaluation.DM `json:"dm,omitempty"`
	// Channels holds, per model, the metrics of each channel, in channel
	// order, where the series has more than one (PeMS: flow, occupancy,
	// speed, each in its units, which Metrics pools); absent otherwise,
	// and in tables written before it was recorded.
	Channels map[string][]evaluation.Metrics `json:"channels,omitempty"`
	// Completeness holds, per model, its test metrics by how complete the
	// forecasts' inputs were in the data as they are (their own gaps);
	// absent in tables written before it was recorded.
	Completeness map[string]evaluation.Breakdown `json:"completeness,omitempty"`
	// Outages holds, per model, its test scores under each length of the
	// outage scenario (Config.Outage); absent without one.
	Outages map[string][]OutageScore `json:"outages,omitempty"`
}

// Cell is one model's summary over seeds.
type Cell struct {
	MAPE, MAPEStd float64 // mean and standard deviation over seeds (NaN for one seed)
	// PaperMAPE is the paper-style MAPE (evaluation.PaperAccumulator).
	PaperMAPE, PaperMAPEStd float64
	MAE, MAEStd             float64
	RMSE, RMSEStd           float64
	Receptive               float64 // mean receptive field, averaged over seeds
}

// MarshalJSON writes NaN as null.
func (c Cell) MarshalJSON() ([]byte, error) {
	f := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	return json.Marshal(map[string]any{"mape": f(c.MAPE), "mape_std": f(c.MAPEStd), "mae": f(c.MAE), "mae_std": f(c.MAEStd),
		"rmse": f(c.RMSE), "rmse_std": f(c.RMSEStd), "mean_receptive_field": f(c.Receptive),
		"paper_mape": f(c.PaperMAPE), "paper_mape_std": f(c.PaperMAPEStd)})
}

// UnmarshalJSON reads what MarshalJSON writes, null as NaN.
func (c *Cell) UnmarshalJSON(b []byte) error {
	var m map[string]*float64
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("table cell: %w", err)
	}
	for k, dst := range map[string]*float64{"mape": &c.MAPE, "mape_std": &c.MAPEStd, "mae": &c.MAE, "mae_std": &c.MAEStd,
		"rmse": &c.RMSE, "rmse_std": &c.RMSEStd, "mean_receptive_field": &c.Receptive,
		"paper_mape": &c.PaperMAPE, "paper_mape_std": &c.PaperMAPEStd} {
		*dst = math.NaN()
		if v := m[k]; v != nil {
			*dst = *v
		}
	}
	return nil
}

// Table is the comparison on one dataset.
type Table struct {
	Dataset   string          `json:"dataset"`
	Config    Config          `json:"config"`
	Runs      []Run           `json:"runs"`
	Cells     map[string]Cell `json:"cells"`
	MAPEFloor float64         `json:"mape_floor"`
	Created   string          `json:"created"`

	// File says where the table was read from, such as the path of its
	// table file, for Merge to name it by in its errors; it is not
	// written. Empty: the table is named by its place among those merged.
	File string `json:"-"`
}

// Progress receives one line per finished step.
type Progress func(seed uint64, model string, m evaluation.Metrics, receptive, seconds float64)

// Hooks are what RunAll reports as it goes; nil ones are not called.
type Hooks struct {
	// Scored receives each model's test metrics as it is scored.
	Scored Progress
	// Epoch receives every epoch of a teacher being trained (model GRUGCN
	// or GRU), and Round every Θ round of SDGNN's distillation: the
	// progress of the long steps of a seed.
	Epoch func(seed uint64, model string, e teacher.Epoch)
	Round func(seed uint64, r sdgnn.Round)
	// Resumed says what a run takes up from an interrupted one: file is
	// the training state or the scores found in the model directory, what
	// says what they hold ("GRU-GCN after epoch 37", "the scores of
	// GRU-GCN, GRU, SDGNN"). The restored scores are then reported to
	// Scored as usual.
	Resumed func(seed uint64, file, what string)
	// SeedDone receives the table of the seeds so far after each seed, so
	// that a long run interrupted or failing at a later seed keeps what it
	// finished; its error stops the run.
	SeedDone func(*Table) error
}

// RunAll trains and scores every model for every seed, reporting to h.
func RunAll(ctx context.Context, cfg Config, h Hooks) (*Table, error) {
	if len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("reproduce: no seeds")
	}
	// A seed run twice gives the same figures twice: counted as two seeds,
	// they would shrink the deviations and the paired tests' p-values.
	seen := map[uint64]bool{}
	for _, seed := range cfg.Seeds {
		if seen[seed] {
			return nil, fmt.Errorf("reproduce: seed %d twice", seed)
		}
		seen[seed] = true
	}
	p, err := snapshot.PrepareFit(cfg.DataDir, cfg.Dataset, cfg.Window, cfg.spec(), cfg.prep())
	if err != nil {
		return nil, err
	}
	if _, err := cfg.trainOutage(1); err != nil {
		return nil, fmt.Errorf("reproduce: training outages: %w", err)
	}
	if cfg.MaskInput {
		masked := *p
		masked.Set = p.Set.Masked(true)
		p = &masked
	}
	cfg.Steps = p.Split.Steps // what was cut, if anything
	t := &Table{Dataset: cfg.Dataset, Config: cfg, MAPEFloor: cfg.MAPEFloor, Created: time.Now().UTC().Format(time.RFC3339)}
	for _, seed := range cfg.Seeds {
		run, keep, err := runSeed(ctx, cfg, p, seed, h)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		t.Runs = append(t.Runs, *run)
		t.Cells = summarise(t.Runs)
		if h.SeedDone != nil {
			if err := h.SeedDone(t); err != nil {
				return nil, fmt.Errorf("after seed %d: %w", seed, err)
			}
		}
		if keep != "" {
			if err := os.Remove(keep); err != nil {
				return nil, fmt.Errorf("after seed %d: %w", seed, err)
			}
		}
	}
	return t, nil
}

// summarise returns each model's means and standard deviations over runs.
func summarise(runs []Run) map[string]Cell {
	cells := map[string]Cell{}
	for _, name := range Models {
		var mape, mae, rmse, rec, pmape []float64
		for _, r := range runs {
			m := metricsOf(r, name)
			mape, mae, rmse = append(mape, m.MAPE), append(mae, m.MAE), append(rmse, m.RMSE)
			pmape = append(pmape, paperMAPEOf(r, name))
			rec = append(rec, valueOf(r.Receptive, name))
		}
		c := Cell{Receptive: mean(rec)}
		c.MAPE, c.MAPEStd = meanStd(mape)
		c.MAE, c.MAEStd = meanStd(mae)
		c.RMSE, c.RMSEStd = meanStd(rmse)
		c.PaperMAPE, c.PaperMAPEStd = meanStd(pmape)
		cells[name] = c
	}
	return cells
}

// metricsOf returns the metrics of model name in run r, NaN where the run
// has none (a table written before the model was in the comparison): a
// zero would be averaged in as a perfect score.
func metricsOf(r Run, name string) evaluation.Metrics {
	if m, ok := r.Metrics[name]; ok {
		return m
	}
	nan := math.NaN()
	return evaluation.Metrics{MAE: nan, RMSE: nan, MAPE: nan}
}

// paperMAPEOf returns the paper-style MAPE of model name in run r, NaN
// where the run has none (a table written before it was computed).
func paperMAPEOf(r Run, name string) float64 {
	if m, ok := r.Paper[name]; ok {
		return m.MAPE
	}
	return math.NaN()
}

// valueOf returns m[name], NaN where m has no such key.
func valueOf(m map[string]float64, name string) float64 {
	if v, ok := m[name]; ok {
		return v
	}
	return math.NaN()
}

// runSeed trains and scores every model of one seed. With a ModelDir it
// keeps, besides the teachers, the seed's SDGNN bundle, and the scores of
// the models done so far until the seed is finished: a run interrupted in
// the middle of a seed resumes after the last model it scored, with the
// same figures as an uninterrupted one. It returns the path of those scores
// ("" without a ModelDir), which the caller removes once the seed's figures
// are in the table: a later run scores the seed afresh rather than
// reprinting them.
func runSeed(ctx context.Context, cfg Config, p *snapshot.Prepared, seed uint64, h Hooks) (*Run, string, error) {
	run := &Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Seconds: map[string]float64{}, MaxReceptive: map[string]int{},
		Receptive: map[string]float64{}, Paper: map[string]evaluation.PaperMetrics{}, DM: map[string]evaluation.DM{}}
	s := p.Dataset.Series
	fit, fitNodes, steps := p.Split.FitData(s.Data, s.Nodes, s.Channels, p.Set.Window)
	lo, hi, err := snapshot.FitMinMax(fit, fitNodes, s.Channels, steps)
	if err != nil {
		return nil, "", err
	}
	set, split := p.Set, p.Split
	kept := &scores{Run: *run, Losses: map[string]losses{}} // the run and each model's per-snapshot MAE, for the DM tests
	run = &kept.Run
	var keep string
	if cfg.ModelDir != "" {
		keep = scoresPath(cfg.ModelDir, cfg.Dataset, p, seed)
		prev, err := loadScores(keep, cfg, p.Set.Norm, seed)
		if err != nil {
			return nil, "", err
		}
		if prev != nil {
			kept = prev
			run = &kept.Run
			if h.Resumed != nil {
				var names []string
				for _, name := range Models {
					if _, ok := run.Metrics[name]; ok {
						names = append(names, name)
					}
				}
				h.Resumed(seed, keep, "the scores of "+strings.Join(names, ", "))
			}
		} else if kept.Config, err = fingerprint(cfg); err != nil {
			return nil, "", err
		} else {
			norm := p.Set.Norm
			kept.Scaling = &norm
		}
	}
	done := func(name string) bool { _, ok := run.Metrics[name]; return ok }
	for _, name := range Models { // what an interrupted run scored
		if done(name) && h.Scored != nil {
			h.Scored(seed, name, run.Metrics[name], run.Receptive[name], run.Seconds[name])
		}
	}
	// score records a model's test scores: pred and truth from the data as
	// they are, sets the sensors each forecast reads (nil: its own only),
	// and predict, for the outage scenario, its forecasts from a set
	// silenced for a length.
	score := func(name string, pred, truth []float64, receptive float64, maxRec int, sets [][]int, start time.Time,
		predict func(set *snapshot.Set, length int) ([]float64, []float64, error)) error {
		run.MaxReceptive[name] = maxRec
		b, err := completeness(set, split.Test, cfg.Outage, pred, truth, sets, cfg.MAPEFloor)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if run.Completeness == nil { // a fresh run, or one resumed from before it was kept
			run.Completeness = map[string]evaluation.Breakdown{}
		}
		run.Completeness[name] = b
		if cfg.Outage.Enabled() {
			outs, err := outageScores(set, split.Test, cfg.Outage, sets, cfg.MAPEFloor, predict)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if run.Outages == nil {
				run.Outages = map[string][]OutageScore{}
			}
			run.Outages[name] = outs
		}
		pm, err := evaluation.Paper(pred, truth, lo, hi)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		run.Paper[name] = pm
		if kept.Losses[name], err = evaluation.SnapshotMAE(pred, truth, split.Test.Len(), set.Nodes*set.Channels); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rep, err := evaluation.Build(pred, truth, split.Test.Len(), set.Nodes, set.Channels, 1, cfg.MAPEFloor)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		run.Metrics[name], run.Seconds[name], run.Receptive[name] = rep.Overall, time.Since(start).Seconds(), receptive
		if set.Channels > 1 {
			if run.Channels == nil { // a fresh run, or one resumed from before it was kept
				run.Channels = map[string][]evaluation.Metrics{}
			}
			run.Channels[name] = rep.PerChannel
		}
		if keep != "" {
			if err := kept.save(keep); err != nil {
				return fmt.Errorf("%s: keep scores: %w", name, err)
			}
		}
		if h.Scored != nil {
			h.Scored(seed, name, rep.Overall, receptive, run.Seconds[name])
		}
		return nil
	}

	// Teachers.
	var gruGCN *teacher.Model
	for _, tm := range []struct{ kind, name string }{{teacher.KindGRUGCN, GRUGCN}, {teacher.KindGRU, GRU}} {
		kind, name := tm.kind, tm.name
		if kind == teacher.KindGRU && done(name) {
			continue
		}
		start := time.Now()
		var onEpoch func(teacher.Epoch)
		if h.Epoch != nil {
			onEpoch = func(e teacher.Epoch) { h.Epoch(seed, name, e) }
		}
		var resumed func(file string, epoch int)
		if h.Resumed != nil {
			resumed = func(file string, epoch int) { h.Resumed(seed, file, fmt.Sprintf("%s after epoch %d", name, epoch)) }
		}
		m, err := trainOrLoad(ctx, cfg, p, kind, seed, onEpoch, resumed)
		if err != nil {
			return nil, "", err
		}
		if kind == teacher.KindGRUGCN {
			gruGCN = m // the students' teacher, needed even when scored
			if done(name) {
				continue
			}
		}
		pred, truth, err := teacher.Predict(ctx, m, set, split.Test, p.Adj, 64)
		if err != nil {
			return nil, "", err
		}
		r, mr := 1.0, 1
		var hood [][]int
		if kind == teacher.KindGRUGCN {
			if hood, err = sdgnn.Candidates(p.Dataset.Graph.Neighbors(), sdgnn.CandidateConfig{K1: m.Config.GCNLayers()}); err != nil {
				return nil, "", err
			}
			r, mr = meanLen(hood), maxLen(hood)
		}
		predict := func(s *snapshot.Set, _ int) ([]float64, []float64, error) {
			return teacher.Predict(ctx, m, s, split.Test, p.Adj, 64)
		}
		if err := score(name, pred, truth, r, mr, hood, start, predict); err != nil {
			return nil, "", err
		}
	}

	// Targets of the frozen teacher: the training ones under the training
	// outages, if any.
	sc := cfg.SDGNN
	sc.Seed, sc.Candidates.Seed, sc.MAPEFloor = seed, seed, cfg.MAPEFloor
	if sc.Outage, err = cfg.trainOutage(seed); err != nil {
		return nil, "", err
	}
	tg, err := sdgnn.PartTargets(ctx, gruGCN, set, p.Adj, split.Train, split.Val, split.Test)
	if err != nil {
		return nil, "", err
	}
	train, val, test := tg[0], tg[1], tg[2]
	if sc.Outage != "" {
		ts, err := sc.TrainSet(set)
		if err != nil {
			return nil, "", err
		}
		if train, err = sdgnn.ComputeTargets(ctx, gruGCN, ts, split.Train, p.Adj); err != nil {
			return nil, "", err
		}
		if train, err = train.Only(split.Train); err != nil {
			return nil, "", err
		}
	}
	nb := p.Dataset.Graph.Neighbors()

	// SDGNN, distilled, or the bundle of an interrupted run when SDGNN-Equal
	// still needs its Θ.
	start := time.Now()
	var theta *sdgnn.Theta
	if !done(SDGNN) || !done(SDGNNEqual) {
		var b *sdgnn.Bundle
		if kept.Bundle != "" { // distilled by the interrupted run
			if b, err = resumeBundle(kept.Bundle, gruGCN, sc, p); err != nil {
				return nil, "", err
			}
		}
		if b == nil {
			if b, err = distil(ctx, cfg, p, gruGCN, sc, nb, train, val, seed, h); err != nil {
				return nil, "", err
			}
			if cfg.ModelDir != "" {
				kept.Bundle = BundlePath(cfg.ModelDir, cfg.Dataset, p, seed)
			}
		}
		theta = b.Theta
		if !done(SDGNN) {
			pred, truth, err := sdgnn.Predict(ctx, b, set, split.Test, 64)
			if err != nil {
				return nil, "", err
			}
			predict := func(s *snapshot.Set, _ int) ([]float64, []float64, error) {
				return sdgnn.Predict(ctx, b, s, split.Test, 64)
			}
			if err := score(SDGNN, pred, truth, b.Theta.MeanReceptive(), maxLen(b.Theta.Nodes), b.Theta.Nodes, start, predict); err != nil {
				return nil, "", err
			}
			if b.Theta.Silent != nil && cfg.Outage.Enabled() {
				// The remedy's share: the same bundle without its silent weights.
				main, err := b.Clone()
				if err != nil {
					return nil, "", err
				}
				main.Theta.Silent = nil
				outs, err := outageScores(set, split.Test, cfg.Outage, b.Theta.Nodes, cfg.MAPEFloor, func(s *snapshot.Set, _ int) ([]float64, []float64, error) {
					return sdgnn.Predict(ctx, main, s, split.Test, 64)
				})
				if err != nil {
					return nil, "", fmt.Errorf("%s: %w", SDGNNMainWeights, err)
				}
				run.Outages[SDGNNMainWeights] = outs
				if keep != "" {
					if err := kept.save(keep); err != nil {
						return nil, "", err
					}
				}
			}
		}
	}

	// Distilled baselines on the same targets, and on the test targets of
	// the outage scenario's passes, computed once for them all.
	outTargets := map[int]*sdgnn.Targets{}
	baselineTest := func(s *snapshot.Set, length int) (*sdgnn.Targets, error) {
		if t, ok := outTargets[length]; ok {
			return t, nil
		}
		tg, err := sdgnn.PartTargets(ctx, gruGCN, s, p.Adj, split.Test)
		if err != nil {
			return nil, err
		}
		outTargets[length] = tg[0]
		return tg[0], nil
	}
	bc := cfg.Baseline
	bc.Seed, bc.Walk.Seed, bc.MAPEFloor = seed, seed, cfg.MAPEFloor // NOSMOG's walks too: each seed its own encodings
	for _, name := range []string{GLNN, NOSMOG, PPRGo, SDGNNEqual} {
		if done(name) {
			continue
		}
		start := time.Now()
		var m baseline.Model
		switch name {
		case GLNN:
			m, err = baseline.TrainGLNN(ctx, gruGCN.Dec, set.Norm, train, val, bc)
		case NOSMOG:
			m, err = baseline.TrainNOSMOG(ctx, gruGCN.Dec, set.Norm, nb, train, val, bc)
		case PPRGo:
			m, err = baseline.TrainPPRGo(ctx, gruGCN.Dec, set.Norm, nb, train, val, bc)
		case SDGNNEqual:
			m, err = baseline.TrainSDGNNEqual(ctx, gruGCN.Dec, set.Norm, theta, train, val, bc)
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		pred, err := m.Forecast(test)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
		mr := 0
		sets := make([][]int, set.Nodes)
		for z := range sets {
			sets[z] = m.Receptive(z)
			mr = max(mr, len(sets[z]))
		}
		predict := func(s *snapshot.Set, length int) ([]float64, []float64, error) {
			t, err := baselineTest(s, length)
			if err != nil {
				return nil, nil, err
			}
			pred, err := m.Forecast(t)
			return pred, t.Truth, err
		}
		if err := score(name, pred, test.Truth, m.MeanReceptive(), mr, sets, start, predict); err != nil {
			return nil, "", err
		}
	}
	for _, name := range Models {
		if name == SDGNN {
			continue
		}
		dm, err := evaluation.DieboldMariano(kept.Losses[SDGNN], kept.Losses[name], 0)
		if errors.Is(err, evaluation.ErrTooFewPairs) {
			run.DM = nil // a test part too short to test: the table shows none
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s against %s: %w", SDGNN, name, err)
		}
		run.DM[name] = dm
	}
	return run, keep, nil
}

// distil runs SDGNN's distillation for one seed and returns its bundle,
// saved in the model directory when there is one.
func distil(ctx context.Context, cfg Config, p *snapshot.Prepared, gruGCN *teacher.Model, sc sdgnn.Config, nb [][]int, train, val *sdgnn.Targets, seed uint64, h Hooks) (*sdgnn.Bundle, error) {
	set := p.Set
	cands, err := sdgnn.Candidates(nb, sc.Candidates)
	if err != nil {
		return nil, err
	}
	var onRound func(sdgnn.Round)
	if h.Round != nil {
		onRound = func(r sdgnn.Round) { h.Round(seed, r) }
	}
	res, err := sdgnn.Distill(ctx, gruGCN, set.Norm, cands, train, val, sc, onRound)
	if err != nil {
		return nil, fmt.Errorf("sdgnn: %w", err)
	}
	if sc.SilentWeights {
		if _, _, err := sdgnn.FitSilentWeights(ctx, res.Student, res.Decoder, gruGCN, set, p.Split.Train, p.Split.Val, p.Adj, sc); err != nil {
			return nil, fmt.Errorf("sdgnn: %w", err)
		}
	}
	graph := p.GraphFingerprint()
	bounds, err := p.Bounds()
	if err != nil {
		return nil, err
	}
	meta := sdgnn.BundleMeta{Dataset: cfg.Dataset, Nodes: set.Nodes, Channels: p.Dataset.Info.Channels, Window: set.Window,
		Hidden: cfg.Hidden, Norm: set.Norm, Split: p.Split, Graph: &graph, Bounds: bounds, Config: sc, SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	var path string
	if cfg.ModelDir != "" {
		path = BundlePath(cfg.ModelDir, cfg.Dataset, p, seed)
		meta.Teacher = TeacherPath(cfg.ModelDir, cfg.Dataset, teacher.KindGRUGCN, p, seed)
		meta.Rounds = res.Rounds
		meta.Created = time.Now().UTC().Format(time.RFC3339)
	}
	b, err := sdgnn.NewBundle(meta, gruGCN.GRU, res.Student.Phi, res.Student.Theta, res.Decoder)
	if err != nil {
		return nil, err
	}
	if path != "" {
		if err := b.Save(path); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// trainOrLoad returns the teacher of the given kind and seed: loaded from
// ModelDir when a file for it is there, else trained (and saved there).
//
// With a ModelDir, training is resumable: the trainer's whole state is
// written beside the model file (same name, ".state") after every epoch,
// and a run that finds a state but no model continues from it, bit for bit
// as if it had not stopped (teacher.Trainer's epochs are seeded by their
// number). So a run cut short by Ctrl-C, a time limit or a lost machine
// loses at most the epoch in progress: a PeMS teacher runs for hours, longer
// than some machines are lent for. The state is removed once the model is
// saved.
//
// resumed, when not nil, is told of a training state taken up.
func trainOrLoad(ctx context.Context, cfg Config, p *snapshot.Prepared, kind string, seed uint64, onEpoch func(teacher.Epoch), resumed func(file string, epoch int)) (*teacher.Model, error) {
	tc := cfg.Teacher
	tc.Seed = seed
	var err error
	if tc.Outage, err = cfg.trainOutage(seed); err != nil {
		return nil, err
	}
	noise := cfg.NoiseStd
	if kind == teacher.KindGRU {
		noise = 0
	}
	mc := teacher.Config{Kind: kind, Window: cfg.Window, Channels: p.Set.Channels, Hidden: cfg.Hidden, NoiseStd: noise, Seed: seed,
		Gate: cfg.Gate && kind == teacher.KindGRUGCN}
	if p.Set.Norm.Time != nil {
		mc.TimeInputs = snapshot.TimeInputCount
	}
	if p.Set.Norm.Mask {
		mc.MaskInputs = p.Set.Channels
	}
	var path, statePath string
	var tr *teacher.Trainer
	if cfg.ModelDir != "" {
		path = TeacherPath(cfg.ModelDir, cfg.Dataset, kind, p, seed)
		statePath = strings.TrimSuffix(path, ".model") + ".state"
		if s, err := teacher.LoadModel(path); err == nil {
			if err := checkReuse(path, s.Meta, cfg, p, tc, mc, false); err != nil {
				return nil, err
			}
			return s.Model, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if t, meta, err := teacher.LoadState(statePath); err == nil {
			if err := checkReuse(statePath, meta, cfg, p, tc, mc, true); err != nil {
				return nil, err
			}
			tr = t
			tr.Config.MaxEpochs = tc.MaxEpochs // a cap raised since (checkReuse)
			if resumed != nil {
				resumed(statePath, tr.Epoch)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w (remove it to train %s from the start)", err, kind)
		}
	}
	if tr == nil {
		m, err := teacher.New(mc)
		if err != nil {
			return nil, err
		}
		if tr, err = teacher.NewTrainer(m, tc); err != nil {
			return nil, err
		}
	}
	meta := teacher.Meta{Norm: p.Set.Norm, Dataset: cfg.Dataset, Nodes: p.Set.Nodes, Channels: p.Dataset.Info.Channels, Split: p.Split, Train: tc,
		SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	if mc.GCNLayers() > 0 { // a GRU reads no graph
		g := p.GraphFingerprint()
		meta.Graph = &g
	}
	if path != "" {
		if err := os.MkdirAll(cfg.ModelDir, 0o755); err != nil {
			return nil, err
		}
	}
	each := func(e teacher.Epoch) {
		if onEpoch != nil {
			onEpoch(e)
		}
	}
	var saveErr error
	if statePath != "" {
		each = func(e teacher.Epoch) {
			// Written at the end of an epoch, before the hook: Model then
			// holds exactly that epoch's parameters.
			if err := tr.SaveState(statePath, meta); err != nil && saveErr == nil {
				saveErr = err
			}
			if onEpoch != nil {
				onEpoch(e)
			}
		}
	}
	tr.MAPEFloor = cfg.MAPEFloor // the epochs' validation MAPE, as the table's
	err = tr.Run(ctx, p.Set, p.Split, p.Adj, each)
	if saveErr != nil {
		return nil, fmt.Errorf("train %s: %w", kind, saveErr)
	}
	if err != nil {
		if statePath != "" && tr.Epoch > 0 && ctx.Err() != nil {
			return nil, fmt.Errorf("train %s: %w (%d epochs kept in %s: the same command resumes)", kind, err, tr.Epoch, statePath)
		}
		return nil, fmt.Errorf("train %s: %w", kind, err)
	}
	if path != "" {
		meta.Epochs, meta.BestEpoch, meta.BestValMAE, meta.History = tr.Epoch, tr.BestEpoch, tr.BestValMAE, tr.History
		meta.Created = time.Now().UTC().Format(time.RFC3339)
		if err := teacher.SaveModel(path, tr.Best, meta); err != nil {
			return nil, err
		}
		if err := os.Remove(statePath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("train %s: %w", kind, err)
		}
	}
	return tr.Best, nil
}

func meanLen(sets [][]int) float64 {
	var s int
	for _, x := range sets {
		s += len(x)
	}
	return float64(s) / float64(max(1, len(sets)))
}

func maxLen(sets [][]int) int {
	m := 0
	for _, x := range sets {
		m = max(m, len(x))
	}
	return m
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(max(1, len(v)))
}

// meanStd returns the mean and the sample standard deviation. With one
// value the deviation is undefined: NaN, which the Markdown table leaves out
// and the JSON writes as null, so that one seed does not read as "± 0".
// Values all equal (and finite) have that value as their mean and no
// spread, exactly: their sum divided by their number may miss it by an
// ulp, which would read as a tiny spread (and a paired t-test's p of
// 1e-32 where there is no test to make).
func meanStd(v []float64) (float64, float64) {
	m := mean(v)
	if len(v) < 2 {
		return m, math.NaN()
	}
	if allEqual(v) {
		return v[0], 0
	}
	var ss float64
	for _, x := range v {
		ss += float64((x - m) * (x - m)) // rounded: the same on every machine
	}
	return m, math.Sqrt(ss / float64(len(v)-1))
}

// allEqual reports whether the values of v are all the same finite number.
func allEqual(v []float64) bool {
	for _, x := range v {
		if x != v[0] || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// cell formats, as pm does, the mean ± std over the runs of the figure f
// gives of each run that has it (ok); "–" where none has.
func (t *Table) cell(prec int, f func(Run) (float64, bool)) string {
	var v []float64
	for _, r := range t.Runs {
		if x, ok := f(r); ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return pm(prec, math.NaN(), math.NaN())
	}
	mean, std := meanStd(v)
	return pm(prec, mean, std)
}

// pm formats a mean and its standard deviation with prec decimals; an
// undefined deviation (one seed) is left out, an undefined mean is "–".
func pm(prec int, mean, std float64) string {
	if math.IsNaN(mean) { // a seed without the figure
		return "–"
	}
	if math.IsNaN(std) {
		return strconv.FormatFloat(mean, 'f', prec, 64)
	}
	return fmt.Sprintf("%.*f ± %.*f", prec, mean, prec, std)
}

// pooledNote says, for a dataset whose channels are in different units
// (PeMS: flow, occupancy, speed), that the table's MAE and RMSE pool them,
// as eval's and report's tables say; "" for one channel or units unknown.
func pooledNote(dataset string) string {
	in, err := pems.Lookup(dataset)
	if err != nil || len(in.Units) != len(in.Channels) || (evaluation.Report{ChannelUnits: in.Units}).Unit() != "" {
		return ""
	}
	parts := make([]string, len(in.Channels))
	for c, name := range in.Channels {
		parts[c] = name + ": " + in.Units[c]
	}
	return "MAE and RMSE pool the channels' units (" + strings.Join(parts, ", ") + "), the paired and Diebold–Mariano tables' per-snapshot MAE too; the table by channel gives each channel's.\n\n"
}

// channelMarkdown writes, where the runs recorded more than one channel
// (Run.Channels), each channel's MAE, RMSE and MAPE per model, mean ± std
// over the seeds that have them, the channels named and their units given
// where the dataset is known.
func (t *Table) channelMarkdown(w io.Writer) error {
	c := 0
	for _, r := range t.Runs {
		for _, ms := range r.Channels {
			c = max(c, len(ms))
		}
	}
	if c < 2 {
		return nil
	}
	names, units := make([]string, c), make([]string, c)
	for ch := range names {
		names[ch] = fmt.Sprintf("channel %d", ch)
	}
	if in, err := pems.Lookup(t.Dataset); err == nil && len(in.Channels) == c {
		copy(names, in.Channels)
		if len(in.Units) == c {
			copy(units, in.Units)
		}
	}
	fmt.Fprintf(w, "\nBy channel (each in its units), %s:\n\n| channel | metric |", t.overSeeds(func(r Run) bool { return len(r.Channels) > 0 }))
	for _, m := range Models {
		fmt.Fprintf(w, " %s |", m)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range Models {
		fmt.Fprint(w, "---:|")
	}
	for ch := range c {
		label := names[ch]
		if units[ch] != "" {
			label += " (" + units[ch] + ")"
		}
		for _, row := range []struct {
			name string
			prec int
			f    func(evaluation.Metrics) float64
		}{
			{"MAPE (%)", 2, func(m evaluation.Metrics) float64 { return m.MAPE }},
			{"MAE", 4, func(m evaluation.Metrics) float64 { return m.MAE }},
			{"RMSE", 4, func(m evaluation.Metrics) float64 { return m.RMSE }},
		} {
			fmt.Fprintf(w, "\n| %s | %s |", label, row.name)
			label = ""
			for _, m := range Models {
				fmt.Fprintf(w, " %s |", t.cell(row.prec, func(r Run) (float64, bool) {
					if ms := r.Channels[m]; ch < len(ms) {
						return row.f(ms[ch]), true
					}
					return 0, false
				}))
			}
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// Markdown writes the table: one row for the dataset, one column per model,
// MAPE mean ± std, then MAE, RMSE and the mean receptive field; for a
// series of several channels, each channel's MAPE, MAE and RMSE; over two
// seeds or more, SDGNN's paired comparison with every other model follows
// (Paired), then the Diebold–Mariano tests of each seed (Run.DM).
func (t *Table) Markdown(w io.Writer) error {
	floor := ""
	if t.MAPEFloor > 0 {
		floor = fmt.Sprintf(", truths below %g left out of MAPE", t.MAPEFloor)
	}
	part := "test split (chronological)"
	switch sp := t.Config.spec(); sp.By {
	case snapshot.ByNodes:
		part = fmt.Sprintf("test nodes (nodes split %g:%g:%g by degree, every snapshot)", sp.Ratios[0], sp.Ratios[1], sp.Ratios[2])
	case snapshot.ByWindows:
		part = fmt.Sprintf("test windows (snapshots dealt %g:%g:%g round-robin in time order, every node)", sp.Ratios[0], sp.Ratios[1], sp.Ratios[2])
	}
	if t.Config.Steps > 0 {
		part += fmt.Sprintf(", the series' first %d steps only", t.Config.Steps)
	}
	if _, err := fmt.Fprintf(w, "%s, %s, %d seed(s), %s preprocessing%s%s\n\n%s| metric |", t.Dataset, part, len(t.Runs), t.Config.prep(), t.Config.awareNote(), floor, pooledNote(t.Dataset)); err != nil {
		return err
	}
	for _, m := range Models {
		fmt.Fprintf(w, " %s |", m)
	}
	fmt.Fprint(w, "\n|---|")
	for range Models {
		fmt.Fprint(w, "---:|")
	}
	rows := []struct {
		name string
		f    func(Cell) string
	}{
		{"MAPE (%)", func(c Cell) string { return pm(2, c.MAPE, c.MAPEStd) }},
		{"MAE", func(c Cell) string { return pm(4, c.MAE, c.MAEStd) }},
		{"RMSE", func(c Cell) string { return pm(4, c.RMSE, c.RMSEStd) }},
		{"paper-style MAPE (%)", func(c Cell) string { return pm(3, c.PaperMAPE, c.PaperMAPEStd) }},
		{"receptive field", func(c Cell) string { return fmt.Sprintf("%.2f", c.Receptive) }},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "\n| %s |", r.name)
		for _, m := range Models {
			fmt.Fprintf(w, " %s |", r.f(t.Cells[m]))
		}
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if err := t.channelMarkdown(w); err != nil {
		return err
	}
	if err := t.outageMarkdown(w); err != nil {
		return err
	}
	if err := t.completenessMarkdown(w); err != nil {
		return err
	}
	if err := t.pairedMarkdown(w); err != nil {
		return err
	}
	return t.dmMarkdown(w)
}
