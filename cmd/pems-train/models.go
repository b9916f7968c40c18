package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// provenance is what a model file records of its training. A teacher has
// epochs and a noise level; an SDGNN bundle has its teacher, its rounds and
// its budget.
type provenance struct {
	Created string `json:"created,omitempty"`
	// Digest is the SHA-256 of the file's kind and tensors
	// (checkpoint.File.Digest): two files that hold the same parameters
	// have the same, whenever and wherever they were written.
	Digest string `json:"digest,omitempty"`
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
		s = fmt.Sprintf("distilled from %s in %s, budget %d", p.Teacher, english.Count(p.Rounds, "round"), p.Budget)
		if p.Version != "" {
			s += ", version " + p.Version
		}
	} else {
		s = fmt.Sprintf("trained %s, saved epoch %d (validation MAE %.4f)", english.Count(p.Epochs, "epoch"), p.BestEpoch, p.BestValMAE)
		if p.NoiseStd > 0 {
			s += fmt.Sprintf(", training noise σ %g", p.NoiseStd)
		}
	}
	if p.Created != "" {
		s += ", created " + p.Created
	}
	if len(p.Digest) >= 12 && !strings.HasSuffix(p.Version, "-"+p.Digest[:12]) { // a default version names them already
		s += ", parameters " + p.Digest[:12]
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
	data          modelData // for prepareSaved
	receptive     float64
	trained       provenance
	// predict forecasts part r of p's snapshots from the inputs of set
	// (p.Set, or a view of it with outages simulated).
	predict func(ctx context.Context, set *snapshot.Set, p *snapshot.Prepared, r snapshot.Part) (pred, truth []float64, err error)
	// receptiveSets returns the sensors whose windows each node's
	// forecast reads, nil for a model that reads only the node's own.
	receptiveSets func(p *snapshot.Prepared) ([][]int, error)
	selfWeight    *selfWeight // a bundle's; nil for a teacher
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
		return &loaded{kind: m.Config.Kind, dataset: m.Dataset, window: m.Config.Window, layers: m.Config.GCNLayers(), channels: m.Channels, norm: m.Norm, split: m.Split, data: teacherData(path, &m),
			trained: provenance{Created: m.Created, Digest: f.Digest(), Epochs: m.Epochs, BestEpoch: m.BestEpoch, BestValMAE: m.BestValMAE, NoiseStd: m.Config.NoiseStd},
			predict: func(ctx context.Context, set *snapshot.Set, p *snapshot.Prepared, r snapshot.Part) ([]float64, []float64, error) {
				return teacher.Predict(ctx, s.Model, set, r, p.Adj, 64)
			},
			receptiveSets: func(p *snapshot.Prepared) ([][]int, error) { return teacherSets(m.Config.GCNLayers(), p) }}, nil
	case sdgnn.FileKindBundle:
		b, err := sdgnn.LoadBundle(path)
		if err != nil {
			return nil, err
		}
		m := b.Meta
		return &loaded{kind: "sdgnn", dataset: m.Dataset, window: m.Window, channels: m.Channels, norm: m.Norm, split: m.Split, data: bundleData(path, &m), receptive: b.Theta.MeanReceptive(),
			trained: provenance{Created: m.Created, Digest: f.Digest(), Teacher: m.Teacher, Version: m.Version, Rounds: len(m.Rounds), Budget: m.Config.BudgetEnd},
			predict: func(ctx context.Context, set *snapshot.Set, p *snapshot.Prepared, r snapshot.Part) ([]float64, []float64, error) {
				return sdgnn.Predict(ctx, b, set, r, 64)
			},
			receptiveSets: func(*snapshot.Prepared) ([][]int, error) { return b.Theta.Nodes, nil },
			selfWeight:    selfWeightOf(b.Theta)}, nil
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
