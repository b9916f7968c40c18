package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
	"github.com/rs/zerolog"
)

func cmdReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addReproduceFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Both given: the -merge branch names -dataset as not applying.
	if fs.NArg() > 0 || *f.datasets == "" && *f.merge == "" {
		fmt.Fprintln(stderr, "reproduce: one of -dataset NAME[,NAME...] or -merge FILE,FILE[,...] is required, and no other arguments")
		return errUsage
	}
	if err := checkOutDir("out", *f.out); err != nil {
		return err
	}
	if *f.merge != "" {
		return f.mergeOnly(stdout)
	}
	r, err := f.check(stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, *f.jsonLogs)
	runlog.Use(ctx, log, *f.jsonLogs)
	base := tableBase(*f.out, r.prep, r.spec.By, r.suffix)
	var tables []*reproduce.Table
	for _, name := range r.names {
		cfg, err := f.config(name, r)
		if err != nil {
			return err
		}
		log.Info().Str("dataset", name).Int("seeds", len(cfg.Seeds)).Bool("quick", *f.quick).Int("steps", cfg.Steps).Str("prep", string(r.prep)).Str("split_by", r.spec.By).Str("models", cfg.ModelDir).Msg("reproducing")
		t, err := reproduce.RunAll(ctx, cfg, reproduceHooks(log, name, cfg, tables, base))
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tables = append(tables, t)
	}
	return printTables(tables, base, stdout)
}

// mergeOnly is reproduce -merge: the tables hold their settings, so any
// flag but -merge, -out and -log-json is refused.
func (f reproduceFlags) mergeOnly(stdout io.Writer) error {
	// The tables hold their settings: any other flag would be ignored.
	var ignored []string
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "merge", "out", "log-json":
		default:
			ignored = append(ignored, "-"+fl.Name)
		}
	})
	if len(ignored) > 0 {
		return badFlags(fmt.Errorf("%v do not apply to -merge, which takes only -out: the tables hold their settings and seeds", ignored))
	}
	paths := strings.Split(*f.merge, ",")
	if slices.ContainsFunc(paths, func(p string) bool { return strings.TrimSpace(p) == "" }) { // as mergeTables trims them
		// A comma too many would otherwise be an attempt to open "".
		return badFlags(fmt.Errorf("-merge %q: an empty file name (a comma too many?)", *f.merge))
	}
	return mergeTables(paths, *f.out, stdout)
}

// reproduceRun is what reproduce's flags resolve to, checked before any
// data are read.
type reproduceRun struct {
	seeds    []uint64
	prep     snapshot.Prep
	spec     snapshot.SplitSpec
	outage   snapshot.Outage // scored besides the data as they are
	train    snapshot.Outage // trained under (-train-outage, or -aware's)
	stepsSet bool            // -steps was given
	names    []string        // the datasets, by their own names
	suffix   string          // of the tables' and the models' names: -quick, -stepsN
}

// check refuses the flags that are wrong whatever the data, and resolves
// the seeds, preprocessing, split and datasets.
func (f reproduceFlags) check(stderr io.Writer) (reproduceRun, error) {
	var r reproduceRun
	var err error
	if r.seeds, err = parseSeeds(*f.seeds); err != nil {
		fmt.Fprintf(stderr, "reproduce: -seeds: %v\n", err)
		return r, errUsage
	}
	if r.prep, err = snapshot.ParsePrep(*f.prepName); err != nil {
		fmt.Fprintf(stderr, "reproduce: -prep: %v\n", err)
		return r, errUsage
	}
	if r.spec, err = parseSplit(*f.splitBy, *f.split); err != nil {
		fmt.Fprintf(stderr, "reproduce: %v\n", err)
		return r, errUsage
	}
	if err := checkNoise(*f.noise); err != nil {
		return r, err
	}
	if r.outage, err = snapshot.ParseOutage(*f.outage); err != nil {
		return r, badFlags(fmt.Errorf("-outage: %w", err))
	}
	if *f.aware {
		*f.maskIn, *f.gate, *f.silentW = true, true, true
		if !flagSet(f.fs, "train-outage") {
			*f.trainOut = snapshot.OutageTrain
		}
	}
	if r.train, err = snapshot.ParseOutage(*f.trainOut); err != nil {
		return r, badFlags(fmt.Errorf("-train-outage: %w", err))
	}
	if *f.silentW && !*f.maskIn {
		return r, badFlags(fmt.Errorf("-silent-weights needs -mask-input: a bundle tells a silent sensor by its missing marks"))
	}
	if err := checkReportFlags(1, *f.floor); err != nil {
		return r, err
	}
	if err := f.checkLengths(stderr); err != nil {
		return r, err
	}
	f.fs.Visit(func(fl *flag.Flag) { r.stepsSet = r.stepsSet || fl.Name == "steps" })
	for _, name := range strings.Split(*f.datasets, ",") {
		name, err := checkDataset(name)
		if err != nil {
			return r, err
		}
		if slices.Contains(r.names, name) {
			// Its seeds would be trained twice and its table written twice,
			// which -merge then refuses (each seed twice).
			return r, badFlags(fmt.Errorf("-dataset %s: %s twice", *f.datasets, name))
		}
		r.names = append(r.names, name)
	}
	if *f.quick {
		r.suffix = "-quick"
	}
	switch {
	case r.stepsSet && *f.steps > 0:
		r.suffix += fmt.Sprintf("-steps%d", *f.steps)
	case r.stepsSet && *f.quick:
		r.suffix += "-allsteps" // not the quick run's default part of the series
	}
	return r, nil
}

// checkLengths refuses the schedule, epoch and step flags out of range.
func (f reproduceFlags) checkLengths(stderr io.Writer) error {
	if *f.scale < 1 {
		return badFlags(fmt.Errorf("-schedule-scale %d: want 1 (the paper's schedule) or more", *f.scale))
	}
	if *f.quick && flagSet(f.fs, "schedule-scale") {
		return badFlags(fmt.Errorf("-schedule-scale is for the full schedule: -quick has its own (set -sdgnn-epochs, -theta-every, -budget-every)"))
	}
	for _, fl := range []struct {
		name string
		v    int
	}{{"sdgnn-epochs", *f.sEpochs}, {"theta-every", *f.thEvery}, {"budget-every", *f.bEvery}, {"baseline-epochs", *f.blEpochs}} {
		if fl.v < 0 || fl.v == 0 && flagSet(f.fs, fl.name) {
			return badFlags(fmt.Errorf("-%s %d: want at least 1 (leave it out for the schedule's)", fl.name, fl.v))
		}
	}
	if *f.steps < 0 {
		fmt.Fprintf(stderr, "reproduce: -steps %d: want a number of steps, or 0 for the whole series\n", *f.steps)
		return errUsage
	}
	for _, fl := range []struct {
		name string
		v    int
	}{{"teacher-epochs", *f.tEpochs}, {"patience", *f.patience}} {
		// 0 is the flags' default, which stands for the mode's: given, it
		// would train the teachers longest (500 epochs) rather than least.
		if fl.v < 0 || fl.v == 0 && flagSet(f.fs, fl.name) {
			return badFlags(fmt.Errorf("-%s %d: want at least 1 (leave it out for the default)", fl.name, fl.v))
		}
	}
	return nil
}

// config is the comparison's configuration for dataset name: the full
// or quick one, with what the flags override.
func (f reproduceFlags) config(name string, r reproduceRun) (reproduce.Config, error) {
	cfg := reproduce.Full(name)
	if *f.quick {
		cfg = reproduce.Quick(name)
	}
	if r.seeds != nil {
		cfg.Seeds = r.seeds
	}
	if !*f.quick {
		cfg.SDGNN = cfg.SDGNN.Scaled(*f.scale)
	}
	for _, o := range []struct {
		v   int
		dst *int
	}{{*f.sEpochs, &cfg.SDGNN.Epochs}, {*f.thEvery, &cfg.SDGNN.ThetaEvery}, {*f.bEvery, &cfg.SDGNN.BudgetEvery}, {*f.blEpochs, &cfg.Baseline.Epochs},
		{*f.tEpochs, &cfg.Teacher.MaxEpochs}, {*f.patience, &cfg.Teacher.Patience}} {
		if o.v > 0 {
			*o.dst = o.v
		}
	}
	var err error
	if cfg.Teacher.Select, err = teacherSelect("teacher-select", *f.tSelect); err != nil {
		return cfg, err
	}
	if *f.sel != "" {
		cfg.SDGNN.Select, cfg.Baseline.Select = *f.sel, *f.sel
	}
	cfg.SDGNN.KeepSelf = *f.keepSelf
	if err := cfg.SDGNN.Validate(); err != nil {
		return cfg, badFlags(err)
	}
	if err := cfg.Baseline.Validate(); err != nil {
		return cfg, badFlags(err)
	}
	cfg.DataDir, cfg.MAPEFloor, cfg.Prep, cfg.Outage = *f.dataDir, *f.floor, r.prep, r.outage
	cfg.MaskInput, cfg.Gate, cfg.SDGNN.SilentWeights = *f.maskIn, *f.gate, *f.silentW
	if r.train.Enabled() {
		cfg.TrainOutage = r.train.String()
	}
	cfg.SplitBy, cfg.Ratios = r.spec.By, r.spec.Ratios
	cfg.NoiseStd = noiseFor(name, *f.noise)
	if r.stepsSet {
		cfg.Steps = *f.steps
	}
	cfg.ModelDir = filepath.Join(*f.out, "models"+r.suffix)
	return cfg, nil
}

// reproduceHooks logs the progress of dataset name's comparison, and
// writes its table (after the tables of the datasets done before it) at
// every seed done, so that a run stopped later keeps them.
func reproduceHooks(log zerolog.Logger, name string, cfg reproduce.Config, tables []*reproduce.Table, base string) reproduce.Hooks {
	maxEpochs := cfg.Teacher.MaxEpochs
	return reproduce.Hooks{
		Scored: func(seed uint64, model string, m evaluation.Metrics, rec, sec float64) {
			log.Info().Str("dataset", name).Uint64("seed", seed).Str("model", model).Float64("mape", m.MAPE).
				Float64("mae", m.MAE).Float64("rmse", m.RMSE).Float64("receptive", rec).Float64("seconds", sec).Msg("scored")
		},
		// Progress of the long steps: every tenth teacher epoch (every
		// one at debug level) and every SDGNN round.
		Epoch: func(seed uint64, model string, e teacher.Epoch) {
			ev := log.Debug()
			if e.Epoch%10 == 0 || e.Epoch == maxEpochs {
				ev = log.Info()
			}
			ev.Str("dataset", name).Uint64("seed", seed).Str("model", model).Int("epoch", e.Epoch).Int("of", maxEpochs).
				Float64("val_mae", e.Val.MAE).Bool("best", e.Best).Float64("seconds", e.Seconds).Msg("teacher epoch")
		},
		Round: func(seed uint64, r sdgnn.Round) {
			log.Info().Str("dataset", name).Uint64("seed", seed).Int("epoch", r.Epoch).Int("of", cfg.SDGNN.Epochs).Int("budget", r.Budget).
				Float64("receptive", r.MeanReceptive).Float64("nr", r.NR).Float64("val_mae", r.Val.MAE).Bool("best", r.Best).Msg("SDGNN round")
		},
		Resumed: func(seed uint64, file, what string) {
			log.Info().Str("dataset", name).Uint64("seed", seed).Str("from", file).Msg("resuming " + what)
		},
		SeedDone: func(t *reproduce.Table) error {
			// The seeds so far, on disk: a run stopped later keeps them.
			if _, err := writeTables(append(tables[:len(tables):len(tables)], t), base); err != nil {
				return err
			}
			log.Info().Str("dataset", name).Int("seeds_done", len(t.Runs)).Str("table", base+".md").Msg("table written")
			return nil
		},
	}
}

// parseSeeds reads -seeds: "" (nil: the mode's default), N (1..N), A-B
// (A..B) or a comma-separated list; seeds are positive and distinct.
func parseSeeds(v string) ([]uint64, error) {
	if v == "" {
		return nil, nil
	}
	num := func(f string) (uint64, error) {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || n == 0 {
			return 0, fmt.Errorf("%q: want N (seeds 1..N), A-B or A,B,… of positive whole numbers", v)
		}
		return n, nil
	}
	var seeds []uint64
	switch lo, hi, isRange := strings.Cut(v, "-"); {
	case isRange:
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b, err := num(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("%q: range ends before it starts", v)
		}
		if b-a >= maxSeeds {
			return nil, fmt.Errorf("%q: more than %d seeds in one run", v, maxSeeds)
		}
		for s := a; ; s++ {
			seeds = append(seeds, s)
			if s == b {
				break
			}
		}
	case strings.Contains(v, ","):
		seen := map[uint64]bool{}
		fields := strings.Split(v, ",")
		if len(fields) > maxSeeds {
			return nil, fmt.Errorf("%q: more than %d seeds in one run", v, maxSeeds)
		}
		for _, f := range fields {
			s, err := num(f)
			if err != nil {
				return nil, err
			}
			if seen[s] {
				return nil, fmt.Errorf("%q: seed %d twice", v, s)
			}
			seen[s] = true
			seeds = append(seeds, s)
		}
	default:
		n, err := num(v)
		if err != nil {
			return nil, err
		}
		if n > maxSeeds {
			return nil, fmt.Errorf("%q: more than %d seeds in one run", v, maxSeeds)
		}
		for s := uint64(1); s <= n; s++ {
			seeds = append(seeds, s)
		}
	}
	return seeds, nil
}

// maxSeeds is the most seeds one reproduce run takes (a PeMS seed is
// hours): a larger -seeds is a typo, refused before a list of it is made.
const maxSeeds = 10000
