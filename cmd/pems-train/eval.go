package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
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
}

func cmdEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dataDir   = fs.String("data", "", "data directory (default $PEMS_DATA, then ../shared/datasets)")
		model     = fs.String("model", "", "model file written by pems-train teacher, or bundle written by distill (required)")
		part      = fs.String("split-part", "test", "which part of the model's split: train, val or test")
		chunks    = fs.Int("chunks", 10, "chronological chunks for the staleness report")
		mapeFloor = fs.Float64("mape-floor", 0, "leave truths below this value out of MAPE (not out of MAE/RMSE); for data with near-zero readings such as SZ-taxi")
		asJSON    = fs.Bool("json", false, "print the full report as JSON")
		preds     = fs.String("predictions", "", "also write per-snapshot, per-node predictions to this Arrow IPC file")
	)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *model == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "eval: -model FILE is required and takes no other arguments")
		return errUsage
	}
	lm, err := loadAny(*model)
	if err != nil {
		return err
	}
	p, err := prepareSaved(*dataDir, lm.dataset, lm.window, lm.split, &lm.norm, *model)
	if err != nil {
		return err
	}
	r, err := partOf(p.Split, *part)
	if err != nil {
		return err
	}
	if lm.receptive == 0 {
		if lm.receptive, err = teacherReceptive(lm.kind, lm.layers, p); err != nil {
			return err
		}
	}
	pred, truth, err := lm.predict(p, r)
	if err != nil {
		return err
	}
	rep, err := evaluation.Build(pred, truth, r.Len(), p.Set.Nodes, p.Set.Channels, *chunks, *mapeFloor)
	if err != nil {
		return err
	}
	rep.ChannelNames = lm.channels
	s := p.Dataset.Series
	fit, fitNodes, steps := p.Split.FitData(s.Data, s.Nodes, s.Channels, p.Set.Window)
	lo, hi, err := snapshot.FitMinMax(fit, fitNodes, s.Channels, steps)
	if err != nil {
		return err
	}
	paper, err := evaluation.Paper(pred, truth, lo, hi)
	if err != nil {
		return err
	}
	if *preds != "" {
		if err := writePredictions(*preds, p, r, lm.channels, pred, truth); err != nil {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(evalResult{Model: *model, Kind: lm.kind, Dataset: lm.dataset, Split: *part, Range: r.Range, Deal: r.Deal, Nodes: r.Nodes, Prep: lm.norm.Prep(), Receptive: lm.receptive, Trained: lm.trained, Report: rep, Paper: paper})
	}
	scored := ""
	if r.Nodes != nil {
		scored = fmt.Sprintf(", %d of %d sensors scored", len(r.Nodes), p.Set.Nodes)
	}
	fmt.Fprintf(stdout, "%s %s on %s, %s split (%d snapshots%s), %s preprocessing, mean receptive field %.2f nodes:\n", lm.kind, *model, lm.dataset, *part, r.Len(), scored, lm.norm.Prep(), lm.receptive)
	fmt.Fprintf(stdout, "(%s)\n", lm.trained)
	if err := rep.Table(stdout); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\npaper-style (min-max scaled, unmasked, |p-y|/(|y|+1)): MAPE %.3f%%, RMSE %.5f over %d rows\n", paper.MAPE, paper.RMSE, paper.Rows)
	return err
}

func writePredictions(path string, p *snapshot.Prepared, r snapshot.Part, channels []string, pred, truth []float64) error {
	n := p.Set.Nodes
	t := &snapshot.PredictionTable{Channels: channels, Pred: pred, True: truth}
	for _, s := range r.Snapshots() {
		for i := 0; i < n; i++ {
			t.Snapshot = append(t.Snapshot, int64(s))
			t.Step = append(t.Step, int64(s+p.Set.Window))
			t.Node = append(t.Node, int32(i))
		}
	}
	return snapshot.WritePredictions(path, t)
}

// provenance is what a model file records of its training. A teacher has
// epochs and a noise level; an SDGNN bundle has its teacher, its rounds and
// its budget.
type provenance struct {
	Created string `json:"created,omitempty"`
	// Teacher: epochs run, the epoch whose parameters were saved and its
	// validation MAE, and the training noise between GCN and decoder.
	Epochs     int     `json:"epochs,omitempty"`
	BestEpoch  int     `json:"best_epoch,omitempty"`
	BestValMAE float64 `json:"best_val_mae,omitempty"`
	NoiseStd   float64 `json:"noise_std,omitempty"`
	// Bundle: the teacher file it was distilled from, its version, the
	// Phase-Θ rounds logged and the final receptive-field budget.
	Teacher string `json:"teacher,omitempty"`
	Version string `json:"version,omitempty"`
	Rounds  int    `json:"rounds,omitempty"`
	Budget  int    `json:"budget,omitempty"`
}

// String is one line for eval's text output.
func (p provenance) String() string {
	var s string
	if p.Teacher != "" {
		s = fmt.Sprintf("distilled from %s in %d rounds, budget %d", p.Teacher, p.Rounds, p.Budget)
		if p.Version != "" {
			s += ", version " + p.Version
		}
	} else {
		s = fmt.Sprintf("trained %d epochs, saved epoch %d (validation MAE %.4f)", p.Epochs, p.BestEpoch, p.BestValMAE)
		if p.NoiseStd > 0 {
			s += fmt.Sprintf(", training noise σ %g", p.NoiseStd)
		}
	}
	if p.Created != "" {
		s += ", created " + p.Created
	}
	return s
}

// loaded is a saved model of any kind, reduced to what evaluation needs.
type loaded struct {
	kind, dataset string
	window        int
	layers        int // GCN layers of a GRU-GCN teacher
	channels      []string
	norm          snapshot.Normalizer
	split         snapshot.Split
	receptive     float64
	trained       provenance
	predict       func(p *snapshot.Prepared, r snapshot.Part) (pred, truth []float64, err error)
}

// loadAny loads a teacher model or an SDGNN bundle.
func loadAny(path string) (*loaded, error) {
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	switch f.Kind {
	case teacher.FileKindModel:
		s, err := teacher.LoadModel(path)
		if err != nil {
			return nil, err
		}
		m := s.Meta
		return &loaded{kind: m.Config.Kind, dataset: m.Dataset, window: m.Config.Window, layers: m.Config.GCNLayers(), channels: m.Channels, norm: m.Norm, split: m.Split,
			trained: provenance{Created: m.Created, Epochs: m.Epochs, BestEpoch: m.BestEpoch, BestValMAE: m.BestValMAE, NoiseStd: m.Config.NoiseStd},
			predict: func(p *snapshot.Prepared, r snapshot.Part) ([]float64, []float64, error) {
				return teacher.Predict(s.Model, p.Set, r, p.Adj, 64)
			}}, nil
	case sdgnn.FileKindBundle:
		b, err := sdgnn.LoadBundle(path)
		if err != nil {
			return nil, err
		}
		m := b.Meta
		return &loaded{kind: "sdgnn", dataset: m.Dataset, window: m.Window, channels: m.Channels, norm: m.Norm, split: m.Split, receptive: b.Theta.MeanReceptive(),
			trained: provenance{Created: m.Created, Teacher: m.Teacher, Version: m.Version, Rounds: len(m.Rounds), Budget: m.Config.BudgetEnd},
			predict: func(p *snapshot.Prepared, r snapshot.Part) ([]float64, []float64, error) {
				return sdgnn.Predict(b, p.Set, r, 64)
			}}, nil
	}
	return nil, fmt.Errorf("load model %s: file holds a %q, which eval does not know", path, f.Kind)
}

// teacherReceptive is the mean number of nodes a teacher's forecast of one
// node reads: the node itself for GRU, and for a GRU-GCN whose GCN has the
// given number of layers, its neighbourhood of that many hops.
func teacherReceptive(kind string, layers int, p *snapshot.Prepared) (float64, error) {
	if kind != teacher.KindGRUGCN {
		return 1, nil
	}
	if layers < 1 {
		return 0, fmt.Errorf("receptive field of a %s teacher with %d GCN layers: want at least 1", kind, layers)
	}
	hood, err := sdgnn.Candidates(p.Dataset.Graph.Neighbors(), sdgnn.CandidateConfig{K1: layers})
	if err != nil {
		return 0, fmt.Errorf("receptive field of a %d-layer %s teacher: %w", layers, kind, err)
	}
	var s int
	for _, h := range hood {
		s += len(h)
	}
	return float64(s) / float64(len(hood)), nil
}
