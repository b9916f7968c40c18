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
	"github.com/pemsforecast/sdgnn/teacher"
)

func cmdDistill(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("distill", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := sdgnn.DefaultConfig()
	var (
		dataDir  = fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		tpath    = fs.String("teacher", "", "GRU-GCN teacher model file (required)")
		out      = fs.String("out", "", "bundle file to write (default: the teacher's path with .sdgnn)")
		quick    = fs.Bool("quick", false, "a short schedule for demos and CI: 60 epochs at -lr 5e-3, budget 16→6 (one less every 5 epochs), Θ every 5, 5 fine-tuning epochs (flags given override each)")
		jsonLogs = fs.Bool("log-json", false, "log JSON lines instead of text")
		chunks   = fs.Int("chunks", 10, "chronological chunks of the test split in the final report (at most one a snapshot: more are cut to that)")
		scale    = fs.Int("schedule-scale", 1, "shorten the schedule this many times before -epochs, -theta-every and -budget-every apply (10: 410 epochs, Θ every 4)")
		version  = fs.String("version", "", "the bundle's version, which its forecasts carry (default sdgnn-DATASET- and 12 hex digits of its parameters' SHA-256: the same for the same model, another for any other)")
	)
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
	mapeFloor := &cfg.MAPEFloor
	fs.StringVar(&cfg.Select, "select", cfg.Select, "validation metric for the best checkpoint: mape or mae")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of φ's initialisation, sampling and shuffling")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tpath == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "distill: -teacher FILE is required and takes no other arguments (got %q)\n", fs.Args())
		return errUsage
	}
	if *scale < 1 {
		return badFlags(fmt.Errorf("-schedule-scale %d: want 1 (the paper's schedule) or more", *scale))
	}
	if err := checkWidth("phi-hidden", cfg.PhiHidden); err != nil {
		return err
	}
	if *quick && flagSet(fs, "schedule-scale") {
		// -quick sets the epochs, Θ and budget intervals that the scale shortens.
		return badFlags(fmt.Errorf("-schedule-scale is for the paper's schedule: -quick has its own (set -epochs, -theta-every, -budget-every)"))
	}
	if err := checkReportFlags(*chunks, cfg.MAPEFloor); err != nil {
		return err
	}
	if *out != "" {
		if err := checkOut("out", *out, *tpath); err != nil {
			return err
		}
	}
	if *scale > 1 {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		sc := sdgnn.DefaultConfig().Scaled(*scale)
		for name, v := range map[string]*int{"epochs": &cfg.Epochs, "theta-every": &cfg.ThetaEvery, "budget-every": &cfg.BudgetEvery} {
			if !set[name] {
				*v = map[string]int{"epochs": sc.Epochs, "theta-every": sc.ThetaEvery, "budget-every": sc.BudgetEvery}[name]
			}
		}
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]*int{"epochs": &cfg.Epochs, "theta-every": &cfg.ThetaEvery, "budget-start": &cfg.BudgetStart, "budget-every": &cfg.BudgetEvery, "finetune": &cfg.FineTuneEpochs} {
			if !set[name] {
				*v = map[string]int{"epochs": 60, "theta-every": 5, "budget-start": 16, "budget-every": 5, "finetune": 5}[name]
			}
		}
		if !set["lr"] {
			cfg.LR = 5e-3
		}
	}
	cfg.Candidates.Seed = cfg.Seed
	if err := cfg.Validate(); err != nil {
		return badFlags(err)
	}
	if cfg.Candidates.K1 < 0 || cfg.Candidates.K2 < 0 || cfg.Candidates.K2 > 0 && cfg.Candidates.Sample < 1 {
		return badFlags(fmt.Errorf("-k1 %d, -k2 %d, -sample %d: want hops ≥ 0, and at least one sample for further hops", cfg.Candidates.K1, cfg.Candidates.K2, cfg.Candidates.Sample))
	}
	log := newLogger(stderr, *jsonLogs)
	runlog.Use(ctx, log, *jsonLogs)
	saved, err := teacher.LoadModel(*tpath)
	if err != nil {
		return fmt.Errorf("-teacher: %w", err)
	}
	m := saved.Meta
	p, err := prepareSaved(*dataDir, teacherData(*tpath, &m), stderr)
	if err != nil {
		return err
	}
	if *out == "" {
		*out = strings.TrimSuffix(*tpath, filepath.Ext(*tpath)) + ".sdgnn"
		if err := checkOut("out", *out, *tpath); err != nil {
			return err
		}
	}
	start := time.Now()
	tg, err := sdgnn.PartTargets(ctx, saved.Model, p.Set, p.Adj, p.Split.Train, p.Split.Val)
	if err != nil {
		return err
	}
	train, val := tg[0], tg[1]
	cands, err := sdgnn.Candidates(p.Dataset.Graph.Neighbors(), cfg.Candidates)
	if err != nil {
		return err
	}
	var mc float64
	for _, c := range cands {
		mc += float64(len(c))
	}
	log.Info().Str("teacher", *tpath).Str("dataset", m.Dataset).Int("train", train.Snapshots()).Int("val", val.Snapshots()).
		Float64("mean_candidates", mc/float64(len(cands))).Int("epochs", cfg.Epochs).Int("budget_start", cfg.BudgetStart).
		Int("budget", cfg.BudgetEnd).Str("targets_took", time.Since(start).Round(time.Millisecond).String()).Msg("distilling")
	res, err := sdgnn.Distill(ctx, saved.Model, m.Norm, cands, train, val, cfg, func(r sdgnn.Round) {
		log.Info().Int("epoch", r.Epoch).Int("budget", r.Budget).Float64("receptive", r.MeanReceptive).
			Float64("phi_loss", r.PhiLoss).Float64("nr", r.NR).Float64("val_mae", r.Val.MAE).Float64("val_mape", r.Val.MAPE).
			Float64("kkt", r.KKT).Bool("best", r.Best).Msg("round")
	})
	if err != nil {
		return err
	}
	// The graph distilled on: the teacher's where it records one (checked
	// above), else the data directory's, which the candidates and targets
	// came from.
	graph := p.GraphFingerprint()
	meta := sdgnn.BundleMeta{Dataset: m.Dataset, Nodes: p.Set.Nodes, Channels: m.Channels, Window: m.Config.Window,
		Hidden: m.Config.Hidden, Norm: m.Norm, Split: m.Split, Teacher: *tpath, Graph: &graph, Config: cfg, Rounds: res.Rounds,
		Version: *version, Created: time.Now().UTC().Format(time.RFC3339)}
	b, err := sdgnn.NewBundle(meta, saved.Model.GRU, res.Student.Phi, res.Student.Theta, res.Decoder)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	if err := b.Save(*out); err != nil {
		return err
	}
	pred, truth, err := sdgnn.Predict(ctx, b, p.Set, p.Split.Test, 64)
	if err != nil {
		return err
	}
	rep, err := evaluation.Build(pred, truth, p.Split.Test.Len(), p.Set.Nodes, p.Set.Channels, *chunks, *mapeFloor)
	if err != nil {
		return err
	}
	rep.ChannelNames, rep.ChannelUnits = m.Channels, pems.ChannelUnits(m.Dataset, m.Channels)
	log.Info().Str("bundle", *out).Str("version", b.Meta.Version).Float64("receptive", res.Student.Theta.MeanReceptive()).Int("without_self", len(res.Student.Theta.WithoutSelf())).Float64("test_mae", rep.Overall.MAE).
		Float64("test_mape", rep.Overall.MAPE).Str("took", time.Since(start).Round(time.Second).String()).Msg("done")
	fmt.Fprintf(stdout, "SDGNN %s (version %s) on %s (mean receptive field %.2f nodes), test split (%s):\n", *out, b.Meta.Version, m.Dataset, res.Student.Theta.MeanReceptive(), describePart(p.Split.Test, p.Set.Nodes))
	return rep.Table(stdout)
}
