package main

import (
	"context"
	"errors"
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
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
	"github.com/rs/zerolog"
)

func cmdTeacher(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("teacher", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addTeacherFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(stderr); err != nil {
		return err
	}
	log := newLogger(stderr, *f.jsonLogs)
	runlog.Use(ctx, log, *f.jsonLogs)
	var (
		r   teacherRun
		err error
	)
	if *f.resume != "" {
		r, err = f.resumed(log, stderr)
	} else {
		r, err = f.fresh(stderr)
	}
	if err != nil {
		return err
	}
	if err := f.defaultOut(r.meta); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*f.out), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	p, meta, tr := r.p, r.meta, r.tr
	log.Info().Str("dataset", meta.Dataset).Str("data", p.Dir).Str("model", meta.Config.Kind).
		Int("nodes", p.Set.Nodes).Int("channels", p.Set.Channels).Int("steps", p.Set.Steps).
		Str("split", p.Split.String()).
		Str("prep", string(meta.Norm.Prep())).Str("links", meta.Norm.Edges.String()).Int("gcn_layers", meta.Config.GCNLayers()).Float64("noise", meta.Config.NoiseStd).Int("max_epochs", tr.Config.MaxEpochs).Msg("training")
	start := time.Now()
	if err := f.train(ctx, log, r); err != nil {
		return err
	}
	return f.finish(ctx, log, &r, start, stdout)
}

// check refuses the flags that are wrong whatever the data, and names
// -out after -resume's state when it is not given.
func (f teacherFlags) check(stderr io.Writer) error {
	if f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "teacher: unexpected arguments %q\n", f.fs.Args())
		return errUsage
	}
	if *f.layers != 1 && *f.layers != 2 {
		fmt.Fprintf(stderr, "teacher: -layers %d: want 1 or 2\n", *f.layers)
		return errUsage
	}
	if err := checkReportFlags(*f.evalChunk, *f.mapeFloor); err != nil {
		return err
	}
	if err := checkNoise(*f.noise); err != nil {
		return err
	}
	if *f.resume != "" && *f.out == "" {
		// Where the interrupted run was writing: its state is OUT.state.
		*f.out = strings.TrimSuffix(*f.resume, ".state")
		if *f.out == *f.resume {
			return badFlags(fmt.Errorf("-resume %s: name the model file to write with -out (the state's name does not end in .state)", *f.resume))
		}
	}
	if *f.out != "" {
		if err := checkOut("out", *f.out, *f.resume); err != nil {
			return err
		}
	}
	return nil
}

// teacherRun is a training to run: its trainer, the model file's
// metadata, and the data.
type teacherRun struct {
	tr   *teacher.Trainer
	meta teacher.Meta
	p    *snapshot.Prepared
}

// resumed loads -resume's state and its data. A resumed run keeps its
// model and optimiser; only its length (-epochs, -patience) can change.
func (f teacherFlags) resumed(log zerolog.Logger, stderr io.Writer) (teacherRun, error) {
	tr, meta, err := teacher.LoadState(*f.resume)
	if err != nil {
		return teacherRun{}, fmt.Errorf("-resume: %w", err)
	}
	if *f.dataset != "" {
		name, err := checkDataset(*f.dataset)
		if err != nil {
			return teacherRun{}, err
		}
		if name != meta.Dataset {
			return teacherRun{}, badFlags(fmt.Errorf("-dataset %s, but %s was trained on %s", *f.dataset, *f.resume, meta.Dataset))
		}
	}
	p, err := prepareSaved(*f.dataDir, teacherData(*f.resume, &meta), stderr)
	if err != nil {
		return teacherRun{}, fmt.Errorf("-resume: %w", err)
	}
	if meta.Graph == nil && meta.Config.GCNLayers() > 0 { // a state written before they were kept: the model records the graph it goes on with
		g := p.GraphFingerprint()
		meta.Graph = &g
	}
	var fixed []string
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "epochs":
			tr.Config.MaxEpochs = f.tc.MaxEpochs
		case "patience":
			tr.Config.Patience = f.tc.Patience
		case "resume", "out", "data", "dataset", "log-json", "chunks", "mape-floor": // not in the state: the final report and the run's files
		default:
			fixed = append(fixed, "-"+fl.Name)
		}
	})
	if len(fixed) > 0 {
		return teacherRun{}, badFlags(fmt.Errorf("%v cannot change on -resume: the state fixes them (only -epochs and -patience can)", fixed))
	}
	if err := tr.Config.Validate(); err != nil {
		return teacherRun{}, badFlags(err)
	}
	log.Info().Str("state", *f.resume).Int("epoch", tr.Epoch).Int("best_epoch", tr.BestEpoch).Msg("resuming")
	return teacherRun{tr: tr, meta: meta, p: p}, nil
}

// fresh checks the flags of a new training, then reads the data and
// makes the model and its trainer. The flags are checked before the
// data are read (seconds for PeMS04); the channels and time inputs come
// from the data.
func (f teacherFlags) fresh(stderr io.Writer) (teacherRun, error) {
	cfg, spec, prep, err := f.config(stderr)
	if err != nil {
		return teacherRun{}, err
	}
	links, err := snapshot.ParseLinks(*f.linksName)
	if err != nil {
		return teacherRun{}, badFlags(fmt.Errorf("-links: %w", err))
	}
	tc := *f.tc
	p, err := snapshot.PrepareFitLinks(*f.dataDir, *f.dataset, *f.window, spec, prep, links)
	if err != nil {
		return teacherRun{}, err
	}
	cfg.Channels, cfg.TimeInputs = p.Set.Channels, p.Set.Inputs()-p.Set.Channels
	if *f.maskIn {
		masked := *p
		masked.Set = p.Set.Masked(true)
		p = &masked
		cfg.MaskInputs = p.Set.Channels
	}
	m, err := teacher.New(cfg)
	if err != nil {
		return teacherRun{}, err
	}
	tr, err := teacher.NewTrainer(m, tc)
	if err != nil {
		return teacherRun{}, err
	}
	meta := teacher.Meta{Config: cfg, Norm: p.Set.Norm, Dataset: *f.dataset, Nodes: p.Set.Nodes, Channels: p.Dataset.Info.Channels, Split: p.Split, Train: tc,
		SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	if cfg.GCNLayers() > 0 { // a GRU reads no graph
		g := p.GraphFingerprint()
		meta.Graph = &g
	}
	return teacherRun{tr: tr, meta: meta, p: p}, nil
}

// config checks the flags of a new training and returns the model's
// configuration (its channels still to come from the data), the split
// and the preprocessing; it sets -dataset to the dataset's own name and
// the training's seed and selection.
func (f teacherFlags) config(stderr io.Writer) (teacher.Config, snapshot.SplitSpec, snapshot.Prep, error) {
	var (
		cfg  teacher.Config
		spec snapshot.SplitSpec
		prep snapshot.Prep
	)
	if *f.dataset == "" {
		fmt.Fprintln(stderr, "teacher: -dataset is required (pems04, pems08, sz-taxi or los-loop; see pems-train datasets)")
		return cfg, spec, prep, errUsage
	}
	name, err := checkDataset(*f.dataset)
	if err != nil {
		return cfg, spec, prep, err
	}
	*f.dataset = name
	if spec, err = parseSplit(*f.splitBy, *f.split); err != nil {
		return cfg, spec, prep, badFlags(err)
	}
	if *f.steps < 0 {
		return cfg, spec, prep, badFlags(fmt.Errorf("-steps %d: want a number of steps, or 0 for the whole series", *f.steps))
	}
	spec.Steps = *f.steps
	if prep, err = snapshot.ParsePrep(*f.prepName); err != nil {
		fmt.Fprintf(stderr, "teacher: -prep: %v\n", err)
		return cfg, spec, prep, errUsage
	}
	cfg = teacher.Config{Kind: *f.kind, Window: *f.window, Channels: 1, Hidden: *f.hidden, NoiseStd: noiseFor(*f.dataset, *f.noise), Seed: *f.seed, Layers: *f.layers, Gate: *f.gate}
	if cfg.Kind == teacher.KindGRU {
		cfg.NoiseStd, cfg.Layers = 0, 0
	}
	tc := f.tc
	tc.Seed = *f.seed
	o, err := snapshot.ParseOutage(*f.trainOut)
	if err != nil {
		return cfg, spec, prep, badFlags(fmt.Errorf("-train-outage: %w", err))
	}
	if o.Enabled() {
		tc.Outage = o.String()
	}
	if tc.Select, err = teacherSelect("select", *f.selectBy); err != nil {
		return cfg, spec, prep, err
	}
	if err := checkWidth("hidden", cfg.Hidden); err != nil {
		return cfg, spec, prep, err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, spec, prep, badFlags(err)
	}
	if err := tc.Validate(); err != nil {
		return cfg, spec, prep, badFlags(err)
	}
	if tc.MaxBatches < 0 {
		return cfg, spec, prep, badFlags(fmt.Errorf("-max-batches %d: want a number of batches per epoch, or 0 for all", tc.MaxBatches))
	}
	return cfg, spec, prep, nil
}

// defaultOut names -out when it is not given: runs/DATASET-MODEL.model,
// a one-layer teacher and a dealt split marked in the name so as not to
// replace the others; it is probed as an -out given is, before the
// training.
func (f teacherFlags) defaultOut(meta teacher.Meta) error {
	if *f.out != "" {
		return nil
	}
	// A one-layer teacher gets its own name so as not to replace the
	// two-layer one.
	suffix := ""
	if meta.Config.GCNLayers() == 1 {
		suffix = "-1layer"
	}
	if snapshot.Dealt(meta.Split.By) {
		suffix += "-" + meta.Split.By
	}
	*f.out = filepath.Join("runs", fmt.Sprintf("%s-%s%s.model", meta.Dataset, meta.Config.Kind, suffix))
	// Probed as an -out given is (above), before the training.
	return checkOut("out", *f.out)
}

// train runs the training, logging each epoch. Interrupted, it saves the
// state to OUT.state and logs how to resume it, and returns the
// interrupt.
func (f teacherFlags) train(ctx context.Context, log zerolog.Logger, r teacherRun) error {
	tr, p := r.tr, r.p
	tr.MAPEFloor = *f.mapeFloor // the epochs' validation MAPE, as the final report's
	err := tr.Run(ctx, p.Set, p.Split, p.Adj, func(e teacher.Epoch) {
		log.Info().Int("epoch", e.Epoch).Float64("loss", e.TrainLoss).Float64("val_mae", e.Val.MAE).
			Float64("val_rmse", e.Val.RMSE).Float64("val_mape", e.Val.MAPE).Bool("best", e.Best).
			Str("took", time.Duration(e.Seconds*float64(time.Second)).Round(time.Millisecond).String()).
			Float64("seconds", e.Seconds).Msg("epoch") // took for people, seconds for programs (bench/run)
	})
	if errors.Is(err, context.Canceled) {
		state := *f.out + ".state"
		if serr := tr.SaveState(state, r.meta); serr != nil {
			return fmt.Errorf("interrupted, and saving the state failed: %w", serr)
		}
		// The final report's flags are not in the state: the resume
		// repeats those given, or its report would differ.
		hint := fmt.Sprintf("pems-train teacher -resume %s -out %s", state, *f.out)
		f.fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "chunks" || fl.Name == "mape-floor" {
				hint += fmt.Sprintf(" -%s %s", fl.Name, fl.Value)
			}
		})
		log.Warn().Str("state", state).Int("epochs_done", tr.Epoch).Msgf("interrupted: resume with: %s", hint)
		return err
	}
	return err
}

// finish saves the best model with what its training found, and writes
// its metrics on the test split to stdout.
func (f teacherFlags) finish(ctx context.Context, log zerolog.Logger, r *teacherRun, start time.Time, stdout io.Writer) error {
	tr, p, meta := r.tr, r.p, &r.meta
	meta.Epochs, meta.BestEpoch, meta.BestValMAE, meta.History = tr.Epoch, tr.BestEpoch, tr.BestValMAE, tr.History
	meta.Train = tr.Config
	meta.Created = time.Now().UTC().Format(time.RFC3339)
	if err := teacher.SaveModel(*f.out, tr.Best, *meta); err != nil {
		return err
	}
	pred, truth, err := teacher.Predict(ctx, tr.Best, p.Set, p.Split.Test, p.Adj, 64)
	if err != nil {
		return err
	}
	rep, err := evaluation.Build(pred, truth, p.Split.Test.Len(), p.Set.Nodes, p.Set.Channels, *f.evalChunk, *f.mapeFloor)
	if err != nil {
		return err
	}
	log.Info().Str("model", *f.out).Int("epochs", tr.Epoch).Int("best_epoch", tr.BestEpoch).
		Str("took", time.Since(start).Round(time.Second).String()).
		Float64("test_mae", rep.Overall.MAE).Float64("test_rmse", rep.Overall.RMSE).Float64("test_mape", rep.Overall.MAPE).Msg("done")
	rep.ChannelNames, rep.ChannelUnits = meta.Channels, pems.ChannelUnits(meta.Dataset, meta.Channels)
	fmt.Fprintf(stdout, "%s %s on %s, test split (%s), best epoch %d of %d:\n", meta.Config.Kind, *f.out, meta.Dataset, describePart(p.Split.Test, p.Set.Nodes), tr.BestEpoch, tr.Epoch)
	return rep.Table(stdout)
}

// teacherSelect returns TrainConfig.Select for the -select value of
// teacher (or -teacher-select of reproduce): "" for mae, the default.
func teacherSelect(flag, v string) (string, error) {
	switch v {
	case "mae":
		return "", nil
	case teacher.SelectScaled:
		return teacher.SelectScaled, nil
	}
	return "", badFlags(fmt.Errorf("-%s %q: want mae or %s", flag, v, teacher.SelectScaled))
}

// losLoopLinks says how Los-loop's links weigh by default, for -links's
// help.
func losLoopLinks() string {
	if in, err := pems.Lookup("los-loop"); err == nil && in.WeighLinks {
		return "weights"
	}
	return "links"
}
