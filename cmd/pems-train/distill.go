package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
	"github.com/rs/zerolog"
)

func cmdDistill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("distill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addDistillFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(stderr); err != nil {
		return err
	}
	log := newLogger(stderr, *f.jsonLogs)
	runlog.Use(ctx, log, *f.jsonLogs)
	saved, err := teacher.LoadModel(*f.tpath)
	if err != nil {
		return fmt.Errorf("-teacher: %w", err)
	}
	m := saved.Meta
	if f.cfg.SilentWeights && !m.Norm.Mask {
		return fmt.Errorf("-silent-weights: the teacher %s reads no missing marks, by which a bundle tells a silent sensor (train it with -mask-input)", *f.tpath)
	}
	p, err := prepareSaved(*f.dataDir, teacherData(*f.tpath, &m), stderr)
	if err != nil {
		return err
	}
	if *f.out == "" {
		*f.out = strings.TrimSuffix(*f.tpath, filepath.Ext(*f.tpath)) + ".sdgnn"
		if err := checkOut("out", *f.out, *f.tpath); err != nil {
			return err
		}
	}
	start := time.Now()
	res, err := f.distil(ctx, log, saved, p, start)
	if err != nil {
		return err
	}
	b, err := f.save(saved, p, res)
	if err != nil {
		return err
	}
	return f.finish(ctx, log, b, m, p, res, start, stdout)
}

// distillFlags are distill's flags; cfg holds SDGNN's (-k1, -epochs...)
// over sdgnn.DefaultConfig.
type distillFlags struct {
	fs       *flag.FlagSet
	dataDir  *string
	tpath    *string
	out      *string
	quick    *bool
	jsonLogs *bool
	chunks   *int
	scale    *int
	version  *string
	trainOut *string
	cfg      *sdgnn.Config
}

// addDistillFlags defines distill's flags on fs.
func addDistillFlags(fs *flag.FlagSet) distillFlags {
	cfg := sdgnn.DefaultConfig()
	f := distillFlags{
		fs:       fs,
		dataDir:  fs.String("data", "", dataDirUsage),
		tpath:    fs.String("teacher", "", "GRU-GCN teacher model file (required)"),
		out:      fs.String("out", "", "bundle file to write (default: the teacher's path with .sdgnn)"),
		quick:    fs.Bool("quick", false, "a short schedule for demos and CI: 60 epochs at -lr 5e-3, budget 16→6 (one less every 5 epochs), Θ every 5, 5 fine-tuning epochs (flags given override each)"),
		jsonLogs: fs.Bool("log-json", false, "log JSON lines instead of text"),
		chunks:   fs.Int("chunks", 10, "chronological chunks of the test split in the final report (at most one a snapshot: more are cut to that)"),
		scale:    fs.Int("schedule-scale", 1, "shorten the schedule this many times before -epochs, -theta-every and -budget-every apply (10: 410 epochs, Θ every 4)"),
		version:  fs.String("version", "", "the bundle's version, which its forecasts carry (default sdgnn-DATASET- and 12 hex digits of its parameters' SHA-256: the same for the same model, another for any other)"),
	}
	f.cfg = &cfg
	fs.IntVar(&cfg.Candidates.K1, "k1", cfg.Candidates.K1, "hops whose nodes are all candidates")
	fs.IntVar(&cfg.Candidates.K2, "k2", cfg.Candidates.K2, "further hops explored by sampling")
	fs.IntVar(&cfg.Candidates.Sample, "sample", cfg.Candidates.Sample, "neighbours sampled per node and further hop")
	fs.IntVar(&cfg.PhiHidden, "phi-hidden", cfg.PhiHidden, fmt.Sprintf("hidden width of φ (at most %d)", maxWidth))
	fs.Float64Var(&cfg.Lambda1, "lambda1", cfg.Lambda1, "L1 weight of Phase Θ")
	fs.Float64Var(&cfg.Lambda2, "lambda2", cfg.Lambda2, "L2 weight decay of φ")
	fs.BoolVar(&cfg.KeepSelf, "keep-self", cfg.KeepSelf, "keep every node in its own receptive set, unpenalised, LARS choosing the other budget−1; -keep-self=false for the paper's plain path, which can leave a node out of its own set")
	fs.BoolVar(&cfg.Refit, "refit", cfg.Refit, "refit θ on the nodes LARS selects by non-negative least squares, removing the Lasso's shrinkage")
	fs.Float64Var(&cfg.LR, "lr", cfg.LR, "Adam learning rate of φ")
	fs.IntVar(&cfg.PhiBatch, "batch", cfg.PhiBatch, "snapshots per Phase-φ batch")
	fs.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "Phase-φ epochs")
	fs.IntVar(&cfg.ThetaEvery, "theta-every", cfg.ThetaEvery, "epochs between Phase-Θ solves")
	fs.IntVar(&cfg.BudgetStart, "budget-start", cfg.BudgetStart, "receptive-field budget at the start")
	fs.IntVar(&cfg.BudgetEnd, "budget", cfg.BudgetEnd, "final receptive-field budget")
	fs.IntVar(&cfg.BudgetEvery, "budget-every", cfg.BudgetEvery, "epochs per budget decrement")
	fs.IntVar(&cfg.FineTuneEpochs, "finetune", cfg.FineTuneEpochs, "decoder fine-tuning epochs on Ẑ")
	fs.Float64Var(&cfg.MAPEFloor, "mape-floor", 0, "leave truths below this value out of MAPE, in validation and the final report")
	fs.StringVar(&cfg.Select, "select", cfg.Select, "validation metric for the best checkpoint: mape or mae")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of φ's initialisation, sampling and shuffling")
	f.trainOut = fs.String("train-outage", snapshot.OutageOff, "compute the training targets under simulated outages (one draw): off, train (share=0.1,len=1-12) or share=S,len=L[:L…],seed=N")
	fs.BoolVar(&cfg.SilentWeights, "silent-weights", false, "fit a second set of weights over each sensor's receptive nodes for when its own window is empty (needs a teacher that reads missing marks)")
	return f
}

// check refuses the flags that are wrong whatever the data, and sets the
// schedule that -schedule-scale and -quick ask for where its flags are
// not given.
func (f distillFlags) check(stderr io.Writer) error {
	cfg := f.cfg
	if *f.tpath == "" || f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "distill: -teacher FILE is required and takes no other arguments (got %q)\n", f.fs.Args())
		return errUsage
	}
	if *f.scale < 1 {
		return badFlags(fmt.Errorf("-schedule-scale %d: want 1 (the paper's schedule) or more", *f.scale))
	}
	if err := checkWidth("phi-hidden", cfg.PhiHidden); err != nil {
		return err
	}
	if *f.quick && flagSet(f.fs, "schedule-scale") {
		// -quick sets the epochs, Θ and budget intervals that the scale shortens.
		return badFlags(fmt.Errorf("-schedule-scale is for the paper's schedule: -quick has its own (set -epochs, -theta-every, -budget-every)"))
	}
	if err := checkReportFlags(*f.chunks, cfg.MAPEFloor); err != nil {
		return err
	}
	if *f.out != "" {
		if err := checkOut("out", *f.out, *f.tpath); err != nil {
			return err
		}
	}
	f.schedule()
	cfg.Candidates.Seed = cfg.Seed
	o, err := snapshot.ParseOutage(*f.trainOut)
	if err != nil {
		return badFlags(fmt.Errorf("-train-outage: %w", err))
	}
	if o.Enabled() {
		cfg.Outage = o.String()
	}
	if err := cfg.Validate(); err != nil {
		return badFlags(err)
	}
	if cfg.Candidates.K1 < 0 || cfg.Candidates.K2 < 0 || cfg.Candidates.K2 > 0 && cfg.Candidates.Sample < 1 {
		return badFlags(fmt.Errorf("-k1 %d, -k2 %d, -sample %d: want hops ≥ 0, and at least one sample for further hops", cfg.Candidates.K1, cfg.Candidates.K2, cfg.Candidates.Sample))
	}
	return nil
}

// schedule sets the epochs, Θ and budget intervals (and, with -quick,
// the budget's start, the fine-tuning and the learning rate) that
// -schedule-scale or -quick ask for, where their own flags are not given.
func (f distillFlags) schedule() {
	cfg := f.cfg
	if *f.scale > 1 {
		set := map[string]bool{}
		f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		sc := sdgnn.DefaultConfig().Scaled(*f.scale)
		for name, v := range map[string]*int{"epochs": &cfg.Epochs, "theta-every": &cfg.ThetaEvery, "budget-every": &cfg.BudgetEvery} {
			if !set[name] {
				*v = map[string]int{"epochs": sc.Epochs, "theta-every": sc.ThetaEvery, "budget-every": sc.BudgetEvery}[name]
			}
		}
	}
	if *f.quick {
		set := map[string]bool{}
		f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		for name, v := range map[string]*int{"epochs": &cfg.Epochs, "theta-every": &cfg.ThetaEvery, "budget-start": &cfg.BudgetStart, "budget-every": &cfg.BudgetEvery, "finetune": &cfg.FineTuneEpochs} {
			if !set[name] {
				*v = map[string]int{"epochs": 60, "theta-every": 5, "budget-start": 16, "budget-every": 5, "finetune": 5}[name]
			}
		}
		if !set["lr"] {
			cfg.LR = 5e-3
		}
	}
}

// distil computes the teacher's targets (the training ones under
// -train-outage's outages) and the candidates, distils the teacher into
// a student, logging every round, and with -silent-weights fits the
// student's silent weights.
func (f distillFlags) distil(ctx context.Context, log zerolog.Logger, saved *teacher.Saved, p *snapshot.Prepared, start time.Time) (*sdgnn.Result, error) {
	cfg, m := *f.cfg, saved.Meta
	tg, err := sdgnn.PartTargets(ctx, saved.Model, p.Set, p.Adj, p.Split.Train, p.Split.Val)
	if err != nil {
		return nil, err
	}
	train, val := tg[0], tg[1]
	if cfg.Outage != "" {
		ts, err := cfg.TrainSet(p.Set)
		if err != nil {
			return nil, err
		}
		if train, err = sdgnn.ComputeTargets(ctx, saved.Model, ts, p.Split.Train, p.Adj); err != nil {
			return nil, err
		}
		if train, err = train.Only(p.Split.Train); err != nil {
			return nil, err
		}
	}
	cands, err := sdgnn.Candidates(p.Dataset.Graph.Neighbors(), cfg.Candidates)
	if err != nil {
		return nil, err
	}
	var mc float64
	for _, c := range cands {
		mc += float64(len(c))
	}
	log.Info().Str("teacher", *f.tpath).Str("dataset", m.Dataset).Int("train", train.Snapshots()).Int("val", val.Snapshots()).
		Float64("mean_candidates", mc/float64(len(cands))).Int("epochs", cfg.Epochs).Int("budget_start", cfg.BudgetStart).
		Int("budget", cfg.BudgetEnd).Str("targets_took", time.Since(start).Round(time.Millisecond).String()).Msg("distilling")
	res, err := sdgnn.Distill(ctx, saved.Model, m.Norm, cands, train, val, cfg, func(r sdgnn.Round) {
		log.Info().Int("epoch", r.Epoch).Int("budget", r.Budget).Float64("receptive", r.MeanReceptive).
			Float64("phi_loss", r.PhiLoss).Float64("nr", r.NR).Float64("val_mae", r.Val.MAE).Float64("val_mape", r.Val.MAPE).
			Float64("kkt", r.KKT).Bool("best", r.Best).Msg("round")
	})
	if err != nil || !cfg.SilentWeights {
		return res, err
	}
	n, mae, err := sdgnn.FitSilentWeights(ctx, res.Student, res.Decoder, saved.Model, p.Set, p.Split.Train, p.Split.Val, p.Adj, cfg)
	if err != nil {
		return nil, err
	}
	log.Info().Int("nodes", n).Float64("val_mae_silent", mae).Msg("silent weights fitted")
	return res, nil
}

// save makes the bundle of the distilled student and writes it to -out.
func (f distillFlags) save(saved *teacher.Saved, p *snapshot.Prepared, res *sdgnn.Result) (*sdgnn.Bundle, error) {
	m := saved.Meta
	// The graph distilled on: the teacher's where it records one (checked
	// above), else the data directory's, which the candidates and targets
	// came from.
	graph := p.GraphFingerprint()
	bounds, err := p.Bounds()
	if err != nil {
		return nil, err
	}
	meta := sdgnn.BundleMeta{Dataset: m.Dataset, Nodes: p.Set.Nodes, Channels: m.Channels, Window: m.Config.Window,
		Hidden: m.Config.Hidden, Norm: m.Norm, Split: m.Split, Teacher: *f.tpath, Graph: &graph, Bounds: bounds, Config: *f.cfg, Rounds: res.Rounds,
		Version: *f.version, Created: time.Now().UTC().Format(time.RFC3339),
		// The data's sensors (the teacher's where it records them: checked
		// against the data's by prepareSaved).
		SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	b, err := sdgnn.NewBundle(meta, saved.Model.GRU, res.Student.Phi, res.Student.Theta, res.Decoder)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(*f.out), 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	if err := b.Save(*f.out); err != nil {
		return nil, err
	}
	return b, nil
}

// finish writes the metrics on the test split of b, distilled from the
// teacher of m, to stdout.
func (f distillFlags) finish(ctx context.Context, log zerolog.Logger, b *sdgnn.Bundle, m teacher.Meta, p *snapshot.Prepared, res *sdgnn.Result, start time.Time, stdout io.Writer) error {
	pred, truth, err := sdgnn.Predict(ctx, b, p.Set, p.Split.Test, 64)
	if err != nil {
		return err
	}
	rep, err := evaluation.Build(pred, truth, p.Split.Test.Len(), p.Set.Nodes, p.Set.Channels, *f.chunks, f.cfg.MAPEFloor)
	if err != nil {
		return err
	}
	rep.ChannelNames, rep.ChannelUnits = m.Channels, pems.ChannelUnits(m.Dataset, m.Channels)
	log.Info().Str("bundle", *f.out).Str("version", b.Meta.Version).Float64("receptive", res.Student.Theta.MeanReceptive()).Int("without_self", len(res.Student.Theta.WithoutSelf())).Float64("test_mae", rep.Overall.MAE).
		Float64("test_mape", rep.Overall.MAPE).Str("took", time.Since(start).Round(time.Second).String()).Msg("done")
	fmt.Fprintf(stdout, "SDGNN %s (version %s) on %s (mean receptive field %.2f nodes), test split (%s):\n", *f.out, b.Meta.Version, m.Dataset, res.Student.Theta.MeanReceptive(), describePart(p.Split.Test, p.Set.Nodes))
	return rep.Table(stdout)
}
