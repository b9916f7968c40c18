package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

func cmdReproduce(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dataDir  = fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		datasets = fs.String("dataset", "", "dataset, or comma-separated datasets (rows of the table); required")
		seeds    = fs.String("seeds", "", "seeds: N for 1..N, A-B for A..B, or a list A,B,… (default 10, or 1 with -quick); run seeds apart and -merge their tables")
		merge    = fs.String("merge", "", "comma-separated table JSON files of one comparison run over different seeds: write their merged table to -out as table*-merged instead of training")
		quick    = fs.Bool("quick", false, fmt.Sprintf("short training and schedules, one seed, the first %d steps of each series (see -steps): under a minute on SZ-taxi and about 4 at PeMS04's size on 2 cores", reproduce.QuickSteps))
		out      = fs.String("out", "runs/reproduce", "directory for the tables (Markdown and JSON) and, under models/, the teachers, their training states and the SDGNN bundles: a run stopped midway resumes from them")
		floor    = fs.Float64("mape-floor", 0, "leave truths below this value out of MAPE (not MAE/RMSE); 1 for SZ-taxi")
		sel      = fs.String("select", "", "validation metric for selecting checkpoints: mape or mae (default mape)")
		jsonLogs = fs.Bool("log-json", false, "log JSON lines instead of text")
		scale    = fs.Int("schedule-scale", 1, "shorten SDGNN's reference schedule (Θ every 40, budget −1 every 100 epochs, 4100 epochs) this many times")
		sEpochs  = fs.Int("sdgnn-epochs", 0, "SDGNN Phase-φ epochs (overrides the schedule's)")
		thEvery  = fs.Int("theta-every", 0, "epochs between Phase-Θ solves (overrides the schedule's)")
		bEvery   = fs.Int("budget-every", 0, "epochs per budget decrement (overrides the schedule's)")
		keepSelf = fs.Bool("keep-self", sdgnn.DefaultConfig().KeepSelf, "keep every node in its own SDGNN receptive set, unpenalised, LARS choosing the other budget−1; -keep-self=false for the paper's plain path, which can leave a node out of its own set")
		blEpochs = fs.Int("baseline-epochs", 0, "student epochs of the distilled baselines (default 100, 20 with -quick)")
		tEpochs  = fs.Int("teacher-epochs", 0, "teachers' (GRU-GCN and GRU) most epochs (default 500, 8 with -quick); a reused teacher must have been trained with the same")
		patience = fs.Int("patience", 0, "teachers' early-stopping patience in epochs without a better validation score (see -teacher-select; default 30)")
		tSelect  = fs.String("teacher-select", "mae", "validation score that picks the teachers' best epoch: mae or scaled (see teacher -select); a reused teacher must have been trained with the same")
		noise    = fs.Float64("noise", -1, "std of the GRU-GCN teacher's training noise between GCN and decoder (-1: dataset default, 0.01 PeMS04 and SZ-taxi, 0.05 PeMS08)")
		splitBy  = fs.String("split-by", snapshot.ByTime, "what the split divides: time (consecutive ranges) nodes (Gao & Ribeiro's transductive split: every snapshot, sensors dealt round-robin by degree, each model trained and scored on its part's sensors) or windows (their inductive split: snapshots dealt round-robin in time order, every sensor); tables are written as table*-nodes and table*-windows")
		split    = fs.String("split", "", "train,val,test ratios (default 6,2,2 by time, 7,1,2 by nodes or windows)")
		prepName = fs.String("prep", string(snapshot.PrepStandard), "input preprocessing of every model: standard or paper (Gao & Ribeiro's min-max inputs with minute-of-day and day-of-week inputs); paper tables are written as table-paper*")
		steps    = fs.Int("steps", 0, fmt.Sprintf("use only the first N steps of each series (0: all; default %d with -quick, two weeks of PeMS); tables and models of a run with -steps are written as table*-stepsN and models*-stepsN", reproduce.QuickSteps))
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// Both given: the -merge branch names -dataset as not applying.
	if fs.NArg() > 0 || *datasets == "" && *merge == "" {
		fmt.Fprintln(stderr, "reproduce: one of -dataset NAME[,NAME...] or -merge FILE,FILE[,...] is required, and no other arguments")
		return errUsage
	}
	if err := checkOutDir("out", *out); err != nil {
		return err
	}
	if *merge != "" {
		// The tables hold their settings: any other flag would be ignored.
		var ignored []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "merge", "out", "log-json":
			default:
				ignored = append(ignored, "-"+f.Name)
			}
		})
		if len(ignored) > 0 {
			return badFlags(fmt.Errorf("%v do not apply to -merge, which takes only -out: the tables hold their settings and seeds", ignored))
		}
		paths := strings.Split(*merge, ",")
		if slices.ContainsFunc(paths, func(p string) bool { return strings.TrimSpace(p) == "" }) { // as mergeTables trims them
			// A comma too many would otherwise be an attempt to open "".
			return badFlags(fmt.Errorf("-merge %q: an empty file name (a comma too many?)", *merge))
		}
		return mergeTables(paths, *out, stdout)
	}
	seedList, err := parseSeeds(*seeds)
	if err != nil {
		fmt.Fprintf(stderr, "reproduce: -seeds: %v\n", err)
		return errUsage
	}
	prep, err := snapshot.ParsePrep(*prepName)
	if err != nil {
		fmt.Fprintf(stderr, "reproduce: -prep: %v\n", err)
		return errUsage
	}
	spec, err := parseSplit(*splitBy, *split)
	if err != nil {
		fmt.Fprintf(stderr, "reproduce: %v\n", err)
		return errUsage
	}
	if err := checkNoise(*noise); err != nil {
		return err
	}
	if err := checkReportFlags(1, *floor); err != nil {
		return err
	}
	if *scale < 1 {
		return badFlags(fmt.Errorf("-schedule-scale %d: want 1 (the paper's schedule) or more", *scale))
	}
	if *quick && flagSet(fs, "schedule-scale") {
		return badFlags(fmt.Errorf("-schedule-scale is for the full schedule: -quick has its own (set -sdgnn-epochs, -theta-every, -budget-every)"))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"sdgnn-epochs", *sEpochs}, {"theta-every", *thEvery}, {"budget-every", *bEvery}, {"baseline-epochs", *blEpochs}} {
		if f.v < 0 || f.v == 0 && flagSet(fs, f.name) {
			return badFlags(fmt.Errorf("-%s %d: want at least 1 (leave it out for the schedule's)", f.name, f.v))
		}
	}
	if *steps < 0 {
		fmt.Fprintf(stderr, "reproduce: -steps %d: want a number of steps, or 0 for the whole series\n", *steps)
		return errUsage
	}
	stepsSet := false
	fs.Visit(func(f *flag.Flag) { stepsSet = stepsSet || f.Name == "steps" })
	for _, f := range []struct {
		name string
		v    int
	}{{"teacher-epochs", *tEpochs}, {"patience", *patience}} {
		// 0 is the flags' default, which stands for the mode's: given, it
		// would train the teachers longest (500 epochs) rather than least.
		if f.v < 0 || f.v == 0 && flagSet(fs, f.name) {
			return badFlags(fmt.Errorf("-%s %d: want at least 1 (leave it out for the default)", f.name, f.v))
		}
	}
	var names []string
	for _, name := range strings.Split(*datasets, ",") {
		name, err := checkDataset(name)
		if err != nil {
			return err
		}
		if slices.Contains(names, name) {
			// Its seeds would be trained twice and its table written twice,
			// which -merge then refuses (each seed twice).
			return badFlags(fmt.Errorf("-dataset %s: %s twice", *datasets, name))
		}
		names = append(names, name)
	}
	log := newLogger(stderr, *jsonLogs)
	runlog.Use(ctx, log, *jsonLogs)
	suffix := ""
	if *quick {
		suffix = "-quick"
	}
	switch {
	case stepsSet && *steps > 0:
		suffix += fmt.Sprintf("-steps%d", *steps)
	case stepsSet && *quick:
		suffix += "-allsteps" // not the quick run's default part of the series
	}
	base := tableBase(*out, prep, spec.By, suffix)
	var tables []*reproduce.Table
	for _, name := range names {
		cfg := reproduce.Full(name)
		if *quick {
			cfg = reproduce.Quick(name)
		}
		if seedList != nil {
			cfg.Seeds = seedList
		}
		if !*quick {
			cfg.SDGNN = cfg.SDGNN.Scaled(*scale)
		}
		for _, o := range []struct {
			v   int
			dst *int
		}{{*sEpochs, &cfg.SDGNN.Epochs}, {*thEvery, &cfg.SDGNN.ThetaEvery}, {*bEvery, &cfg.SDGNN.BudgetEvery}, {*blEpochs, &cfg.Baseline.Epochs},
			{*tEpochs, &cfg.Teacher.MaxEpochs}, {*patience, &cfg.Teacher.Patience}} {
			if o.v > 0 {
				*o.dst = o.v
			}
		}
		if cfg.Teacher.Select, err = teacherSelect("teacher-select", *tSelect); err != nil {
			return err
		}
		if *sel != "" {
			cfg.SDGNN.Select, cfg.Baseline.Select = *sel, *sel
		}
		cfg.SDGNN.KeepSelf = *keepSelf
		if err := cfg.SDGNN.Validate(); err != nil {
			return badFlags(err)
		}
		if err := cfg.Baseline.Validate(); err != nil {
			return badFlags(err)
		}
		cfg.DataDir, cfg.MAPEFloor, cfg.Prep = *dataDir, *floor, prep
		cfg.SplitBy, cfg.Ratios = spec.By, spec.Ratios
		cfg.NoiseStd = noiseFor(name, *noise)
		if stepsSet {
			cfg.Steps = *steps
		}
		cfg.ModelDir = filepath.Join(*out, "models"+suffix)
		log.Info().Str("dataset", name).Int("seeds", len(cfg.Seeds)).Bool("quick", *quick).Int("steps", cfg.Steps).Str("prep", string(prep)).Str("split_by", spec.By).Str("models", cfg.ModelDir).Msg("reproducing")
		maxEpochs := cfg.Teacher.MaxEpochs
		t, err := reproduce.RunAll(ctx, cfg, reproduce.Hooks{
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
		})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		tables = append(tables, t)
	}
	return printTables(tables, base, stdout)
}

// printTables writes the tables and prints them with where they went.
func printTables(tables []*reproduce.Table, base string, stdout io.Writer) error {
	md, err := writeTables(tables, base)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%swrote %s.md and %s.json\n", md, base, base)
	return err
}

// tableBase is the path, without extension, of the table files of a
// comparison: table, then -paper for Gao & Ribeiro's preprocessing, -nodes
// or -windows for their splits, then suffix.
func tableBase(out string, prep snapshot.Prep, splitBy, suffix string) string {
	base := filepath.Join(out, "table")
	if prep != snapshot.PrepStandard && prep != "" {
		base += "-" + string(prep)
	}
	if snapshot.Dealt(splitBy) {
		base += "-" + splitBy
	}
	return base + suffix
}

// writeTables writes the tables as base.md and base.json and returns the
// Markdown.
func writeTables(tables []*reproduce.Table, base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(base), err)
	}
	var md strings.Builder
	for _, t := range tables {
		if err := t.Markdown(&md); err != nil {
			return "", err
		}
		md.WriteString("\n")
	}
	raw, err := json.MarshalIndent(tables, "", "  ")
	if err != nil {
		return "", fmt.Errorf("table JSON: %w", err)
	}
	// Atomic writes: the table is rewritten after every seed of a long run,
	// and an interruption must not leave half a file.
	for path, data := range map[string][]byte{base + ".md": []byte(md.String()), base + ".json": raw} {
		if err := checkpoint.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return "", fmt.Errorf("table: %w", err)
		}
	}
	return md.String(), nil
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

// mergeTables reads the table files written by reproduce runs of one
// comparison over different seeds, merges them per dataset (in the order
// datasets first appear) and writes the result into out as
// table*-merged (mergedName).
func mergeTables(paths []string, out string, stdout io.Writer) error {
	byDataset := map[string][]*reproduce.Table{}
	var order []string
	for _, p := range paths {
		p = strings.TrimSpace(p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		var tables []*reproduce.Table
		if err := json.Unmarshal(raw, &tables); err != nil {
			return fmt.Errorf("merge %s: not a reproduce table file: %w", p, err)
		}
		if len(tables) == 0 {
			return fmt.Errorf("merge %s: no tables in the file", p)
		}
		for i, t := range tables {
			if t == nil || t.Dataset == "" || len(t.Runs) == 0 {
				return fmt.Errorf("merge %s: table %d is not a reproduce table (no dataset or no seeds)", p, i+1)
			}
			// The preprocessing names the merged table's files
			// (tableBase): one the file makes up could name any path.
			if t.Config.Prep != "" {
				if _, err := snapshot.ParsePrep(string(t.Config.Prep)); err != nil {
					return fmt.Errorf("merge %s: table %d: %w", p, i+1, err)
				}
			}
			if t.Config.SplitBy != "" {
				if _, err := snapshot.ParseSplitBy(t.Config.SplitBy); err != nil {
					return fmt.Errorf("merge %s: table %d: %w", p, i+1, err)
				}
			}
			// Merge names the tables by their files in its errors.
			t.File = p
			if len(tables) > 1 {
				t.File = fmt.Sprintf("%s (table %d)", p, i+1)
			}
			if _, ok := byDataset[t.Dataset]; !ok {
				order = append(order, t.Dataset)
			}
			byDataset[t.Dataset] = append(byDataset[t.Dataset], t)
		}
	}
	var merged []*reproduce.Table
	for _, name := range order {
		t, err := reproduce.Merge(byDataset[name])
		if err != nil {
			return err
		}
		merged = append(merged, t)
	}
	c := merged[0].Config
	base := tableBase(out, c.Prep, c.SplitBy, "-merged")
	if name := mergedName(paths); name != "" {
		base = filepath.Join(out, name)
	}
	return printTables(merged, base, stdout)
}

// mergedName names the merged table after the table files merged: the
// name they share, such as table-quick or table-paper-nodes-steps4032
// (a merged file's own -merged left out), with -merged added, so that
// quick or shortened runs merged into the directory of a full one do not
// overwrite its merged table. It is "" when the files that reproduce
// named (table*.json) disagree or there is none; files renamed otherwise
// do not count.
func mergedName(paths []string) string {
	name := ""
	for _, p := range paths {
		b := filepath.Base(strings.TrimSpace(p))
		if !strings.HasPrefix(b, "table") || !strings.HasSuffix(b, ".json") {
			continue
		}
		b = strings.TrimSuffix(strings.TrimSuffix(b, ".json"), "-merged")
		if name != "" && b != name {
			return ""
		}
		name = b
	}
	if name == "" {
		return ""
	}
	return name + "-merged"
}
