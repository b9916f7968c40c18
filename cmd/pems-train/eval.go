package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// evalResult is what eval -json prints.
type evalResult struct {
	Model   string         `json:"model"`
	Kind    string         `json:"kind"`
	Dataset string         `json:"dataset"`
	Split   string         `json:"split"`
	Range   snapshot.Range `json:"range"`
	// Deal says which snapshots of Range were scored, for a split by
	// windows; absent: all.
	Deal snapshot.Deal `json:"deal,omitzero"`
	// Nodes are the sensors scored, for a split by nodes; absent: all.
	Nodes []int `json:"nodes,omitempty"`
	// Prep is the input preprocessing the model was trained with.
	Prep snapshot.Prep `json:"prep"`
	// Receptive is the mean number of nodes whose windows one node's
	// forecast reads: 1 for GRU, the k-hop neighbourhood for a k-layer GRU-GCN, |θ_z|
	// for SDGNN.
	Receptive float64 `json:"mean_receptive_field"`
	// Trained says how the model came to be, from its file's metadata, so
	// that a figure can be traced to a training run.
	Trained provenance        `json:"trained"`
	Report  evaluation.Report `json:"report"`
	// Paper holds the errors as the SDGNN paper's table computes them
	// (Gao & Ribeiro's code): min-max scaled by the training data, no
	// masking, |p−y|/(|y|+1). Not comparable with Report's MAPE.
	Paper evaluation.PaperMetrics `json:"paper"`
	// Against is the comparison with a second model (-against), absent
	// without one.
	Against *comparison `json:"against,omitempty"`
	// Outage is the scenario of simulated outages (-outage), absent
	// without one, and Outages the model's scores under it, one pass a
	// silenced length.
	Outage  string        `json:"outage,omitempty"`
	Outages []outageScore `json:"outages,omitempty"`
	// SelfWeight says, for an SDGNN bundle, how much of each sensor's
	// weight falls on the sensor itself; absent for a teacher.
	SelfWeight *selfWeight `json:"self_weight,omitempty"`
}

// selfWeight summarises θ_zz / Σ_k θ_zk over a bundle's sensors: for its
// main weights, and for its silent weights where it has them.
type selfWeight struct {
	Nodes int `json:"nodes"`
	// Mean is the mean share, Over80 the sensors whose share is above 0.8.
	Mean   float64 `json:"mean"`
	Over80 int     `json:"over_80"`
	// SilentMean and SilentOver80 are the same for the silent weights.
	SilentMean   *float64 `json:"silent_mean,omitempty"`
	SilentOver80 *int     `json:"silent_over_80,omitempty"`
}

// selfWeightOf returns the self-weight summary of theta.
func selfWeightOf(theta *sdgnn.Theta) *selfWeight {
	share := func(ws [][]float64) (mean float64, over int) {
		for z, w := range ws {
			var tot, self float64
			for i, k := range theta.Nodes[z] {
				tot += w[i]
				if k == z {
					self = w[i]
				}
			}
			if tot > 0 {
				mean += self / tot
				if self/tot > 0.8 {
					over++
				}
			}
		}
		return mean / float64(max(1, len(ws))), over
	}
	s := &selfWeight{Nodes: theta.N()}
	s.Mean, s.Over80 = share(theta.Weights)
	if theta.Silent != nil {
		m, o := share(theta.Silent)
		s.SilentMean, s.SilentOver80 = &m, &o
	}
	return s
}

// outageScore is a model's scores in one pass of an outage scenario: the
// sensors it silences silenced for Length steps.
type outageScore struct {
	Length int `json:"length"`
	// Report holds the metrics over every forecast, and, in its
	// completeness breakdown, those of the silenced sensors and of the
	// others.
	Report evaluation.Report `json:"report"`
}

// comparison is eval's test of the model against a second one on the same
// snapshots and sensors.
type comparison struct {
	Model   string             `json:"model"`
	Kind    string             `json:"kind"`
	Overall evaluation.Metrics `json:"overall"`
	// DM tests the per-snapshot MAE of the evaluated model against the
	// second's (Stat negative: the evaluated model's is lower).
	DM evaluation.DM `json:"diebold_mariano"`
}

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addEvalFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	scenario, err := f.check(stderr)
	if err != nil {
		return err
	}
	lm, err := loadAny(*f.model)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	p, err := prepareSaved(*f.dataDir, lm.data, stderr)
	if err != nil {
		return err
	}
	r, err := partOf(p.Split, *f.part)
	if err != nil {
		return err
	}
	if lm.receptive == 0 {
		if lm.receptive, err = teacherReceptive(lm.kind, lm.layers, p); err != nil {
			return err
		}
	}
	pred, truth, err := lm.predict(ctx, p.Set, p, r)
	if err != nil {
		return err
	}
	res := evalResult{Model: *f.model, Kind: lm.kind, Dataset: lm.dataset, Split: *f.part, Range: r.Range, Deal: r.Deal, Nodes: r.Nodes, Prep: lm.norm.Prep(), Receptive: lm.receptive, Trained: lm.trained, SelfWeight: lm.selfWeight}
	receptive, err := lm.receptiveSets(p)
	if err != nil {
		return err
	}
	if res.Report, res.Paper, err = f.score(lm, p, r, pred, truth, receptive); err != nil {
		return err
	}
	if scenario.Enabled() {
		res.Outage = scenario.String()
		if res.Outages, err = scoreOutages(ctx, lm, p, r, scenario, receptive, *f.mapeFloor); err != nil {
			return err
		}
	}
	if *f.preds != "" {
		if err := writePredictions(*f.preds, p, *f.part, r, lm.channels, pred, truth); err != nil {
			return err
		}
	}
	if *f.against != "" {
		if res.Against, err = compareWith(ctx, *f.against, *f.dataDir, *f.part, lm, pred, truth, p.Set.Nodes*p.Set.Channels, *f.mapeFloor, stderr); err != nil {
			return err
		}
	}
	if *f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return printEval(stdout, res, r.Len(), p.Set.Nodes)
}

// evalFlags are eval's flags.
type evalFlags struct {
	fs        *flag.FlagSet
	dataDir   *string
	model     *string
	part      *string
	chunks    *int
	mapeFloor *float64
	asJSON    *bool
	preds     *string
	against   *string
	outage    *string
}

// addEvalFlags defines eval's flags on fs.
func addEvalFlags(fs *flag.FlagSet) evalFlags {
	return evalFlags{
		fs:        fs,
		dataDir:   fs.String("data", "", dataDirUsage),
		model:     fs.String("model", "", "model file written by pems-train teacher, or bundle written by distill (required)"),
		part:      fs.String("split-part", "test", "which part of the model's split: train, val or test"),
		chunks:    fs.Int("chunks", 10, "chronological chunks for the staleness report (at most one a snapshot: more are cut to that)"),
		mapeFloor: fs.Float64("mape-floor", 0, "leave truths below this value out of MAPE (not out of MAE/RMSE); for data with near-zero readings such as SZ-taxi"),
		asJSON:    fs.Bool("json", false, "print the full report as JSON"),
		preds:     fs.String("predictions", "", "also write per-snapshot, per-node predictions to this Arrow IPC file"),
		against:   fs.String("against", "", "a second model or bundle of the same data and window whose split has the same -split-part: compare the two on the same snapshots with a Diebold–Mariano test"),
		outage:    fs.String("outage", snapshot.OutageOff, "simulated outages to score the model under besides the data as they are: off, standard (share=0.1,len=1:3:6:12,seed=1) or share=S,len=L[:L…],seed=N (see docs/analysts.md): each length a pass, the same sensors of each snapshot silenced for their last L readings, truths kept"),
	}
}

// check refuses the flags that are wrong whatever the data, makes
// -predictions' directory and returns the -outage scenario.
func (f evalFlags) check(stderr io.Writer) (snapshot.Outage, error) {
	if *f.model == "" || f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "eval: -model FILE is required and takes no other arguments (got %q)\n", f.fs.Args())
		return snapshot.Outage{}, errUsage
	}
	if err := checkReportFlags(*f.chunks, *f.mapeFloor); err != nil {
		return snapshot.Outage{}, err
	}
	if err := checkPart(*f.part); err != nil {
		return snapshot.Outage{}, err
	}
	scenario, err := snapshot.ParseOutage(*f.outage)
	if err != nil {
		return scenario, badFlags(fmt.Errorf("-outage: %w", err))
	}
	if *f.preds != "" {
		if err := checkOut("predictions", *f.preds, *f.model, *f.against); err != nil {
			return scenario, err
		}
		// Made now, as distill and teacher make theirs: a folder missing
		// would fail the write only after the scoring.
		if err := os.MkdirAll(filepath.Dir(*f.preds), 0o755); err != nil {
			return scenario, fmt.Errorf("create output directory: %w", err)
		}
	}
	return scenario, nil
}

// score returns the report of the forecasts pred against truth on the
// part r of p, broken down by the completeness of the windows of each
// node and of the receptive sets it reads, and their errors as the paper
// computes them (min-max scaled by the data the normaliser was fitted on).
func (f evalFlags) score(lm *loaded, p *snapshot.Prepared, r snapshot.Part, pred, truth []float64, receptive [][]int) (evaluation.Report, evaluation.PaperMetrics, error) {
	rep, err := evaluation.Build(pred, truth, r.Len(), p.Set.Nodes, p.Set.Channels, *f.chunks, *f.mapeFloor)
	if err != nil {
		return rep, evaluation.PaperMetrics{}, err
	}
	rep.ChannelNames, rep.ChannelUnits = lm.channels, pems.ChannelUnits(lm.dataset, lm.channels)
	if rep.Completeness, err = breakdown(p.Set, r, snapshot.Outage{}, pred, truth, receptive, *f.mapeFloor); err != nil {
		return rep, evaluation.PaperMetrics{}, err
	}
	s := p.Dataset.Series
	fit, fitNodes, steps := p.Split.FitData(s.Data, s.Nodes, s.Channels, p.Set.Window)
	lo, hi, err := snapshot.FitMinMax(fit, fitNodes, s.Channels, steps)
	if err != nil {
		return rep, evaluation.PaperMetrics{}, err
	}
	paper, err := evaluation.Paper(pred, truth, lo, hi)
	return rep, paper, err
}

// printEval writes eval's result as text: the model and part scored
// (snapshots of a series of nodes sensors), its metrics, the paper's,
// and the comparison with -against.
func printEval(stdout io.Writer, res evalResult, snapshots, nodes int) error {
	scored := ""
	if res.Nodes != nil {
		scored = fmt.Sprintf(", %d of %d sensors scored", len(res.Nodes), nodes)
	}
	fmt.Fprintf(stdout, "%s %s on %s, %s split (%s%s), %s preprocessing, mean receptive field %.2f nodes:\n", res.Kind, res.Model, res.Dataset, res.Split, english.Count(snapshots, "snapshot"), scored, res.Prep, res.Receptive)
	fmt.Fprintf(stdout, "(%s)\n", res.Trained)
	rep, paper, cmp := res.Report, res.Paper, res.Against
	if err := rep.Table(stdout); err != nil {
		return err
	}
	_, err := fmt.Fprintf(stdout, "\npaper-style (min-max scaled, unmasked, |p-y|/(|y|+1)): MAPE %.3f%%, RMSE %.5f over %s\n", paper.MAPE, paper.RMSE, english.Count(paper.Rows, "row"))
	if err != nil {
		return err
	}
	if err := outageTable(stdout, res.Outage, res.Outages, rep.Unit()); err != nil {
		return err
	}
	if sw := res.SelfWeight; sw != nil {
		fmt.Fprintf(stdout, "\nweight on the sensor itself (θ_zz / Σθ_z): mean %.3f, above 0.8 for %d of %d sensors", sw.Mean, sw.Over80, sw.Nodes)
		if sw.SilentMean != nil {
			fmt.Fprintf(stdout, "; silent weights: mean %.3f, above 0.8 for %d", *sw.SilentMean, *sw.SilentOver80)
		}
		fmt.Fprintln(stdout)
	}
	if cmp != nil {
		d := cmp.DM
		verdict := "no significant difference at 5 %"
		if d.P < 0.05 {
			verdict = "this model's is lower (better) at 5 %"
			if d.Stat > 0 {
				verdict = "this model's is higher (worse) at 5 %"
			}
		}
		_, err = fmt.Fprintf(stdout, "\nagainst %s %s: MAE %.4f (this model %.4f), MAPE %.2f%% (%.2f%%)\n"+
			"Diebold–Mariano over %d snapshots' MAE: mean difference %+.4f, statistic %.3f (t, %d df), p %.3g: %s\n",
			cmp.Kind, cmp.Model, cmp.Overall.MAE, rep.Overall.MAE, cmp.Overall.MAPE, rep.Overall.MAPE, d.N, d.Mean, d.Stat, d.DF, d.P, verdict)
	}
	return err
}

// compareWith forecasts the named part with the model in path, which must
// have been trained on lm's dataset and window with a split whose part of
// that name is lm's (the same snapshots and sensors), and tests lm's
// forecasts pred against it (truth and the layout, width values per
// snapshot, are lm's). The second model is prepared with its own
// normaliser; the truths must come out the same.
func compareWith(ctx context.Context, path, dataDir, part string, lm *loaded, pred, truth []float64, width int, mapeFloor float64, stderr io.Writer) (*comparison, error) {
	o, err := loadAny(path)
	if err != nil {
		return nil, fmt.Errorf("-against: %w", err)
	}
	// The part compared must be the same snapshots and sensors; the rest
	// of the splits may differ (a model trained on 7,1,2 against one on
	// 6,2,2: the same last fifth tested).
	lp, _ := lm.split.Part(part)
	op, _ := o.split.Part(part)
	if o.dataset != lm.dataset || o.window != lm.window || !op.Equal(lp) {
		return nil, fmt.Errorf("-against %s: trained on %s, window %d, split %s; the model on %s, window %d, split %s: its %s part is not the same snapshots and sensors",
			path, o.dataset, o.window, o.split, lm.dataset, lm.window, lm.split, part)
	}
	p, err := prepareSaved(dataDir, o.data, stderr)
	if err != nil {
		return nil, err
	}
	r, err := partOf(p.Split, part)
	if err != nil {
		return nil, err
	}
	opred, otruth, err := o.predict(ctx, p.Set, p, r)
	if err != nil {
		return nil, fmt.Errorf("-against %s: %w", path, err)
	}
	for k := range truth {
		if a, b := truth[k], otruth[k]; a != b && !(math.IsNaN(a) && math.IsNaN(b)) && math.Abs(a-b) > 1e-9*max(1, math.Abs(a)) {
			return nil, fmt.Errorf("-against %s: its truth %d is %g, the evaluated model's %g: not the same data", path, k, b, a)
		}
	}
	snaps := r.Len()
	mine, err := evaluation.SnapshotMAE(pred, truth, snaps, width)
	if err != nil {
		return nil, err
	}
	theirs, err := evaluation.SnapshotMAE(opred, truth, snaps, width)
	if err != nil {
		return nil, err
	}
	dm, err := evaluation.DieboldMariano(mine, theirs, 0)
	if err != nil {
		return nil, fmt.Errorf("-against %s: %w", path, err)
	}
	rep, err := evaluation.Build(opred, truth, snaps, width, 1, 1, mapeFloor)
	if err != nil {
		return nil, err
	}
	return &comparison{Model: path, Kind: o.kind, Overall: rep.Overall, DM: dm}, nil
}

// writePredictions writes the forecasts pred and truths of part (named
// partName) of p as an Arrow IPC file at path, a row a snapshot and sensor
// (named by its ID too, where the dataset has IDs), with the dataset, part
// and channels' units in its metadata.
func writePredictions(path string, p *snapshot.Prepared, partName string, r snapshot.Part, channels []string, pred, truth []float64) error {
	n := p.Set.Nodes
	name := p.Dataset.Info.Name
	t := &snapshot.PredictionTable{Channels: channels, Units: pems.ChannelUnits(name, channels), Dataset: name, Part: partName, Pred: pred, True: truth}
	ids := p.Dataset.SensorIDs
	for _, s := range r.Snapshots() {
		for i := 0; i < n; i++ {
			t.Snapshot = append(t.Snapshot, int64(s))
			t.Step = append(t.Step, int64(s+p.Set.Window))
			t.Node = append(t.Node, int32(i))
			if ids != nil {
				t.Sensor = append(t.Sensor, ids[i])
			}
		}
	}
	return snapshot.WritePredictions(path, t)
}
