package snapshot

import (
	"fmt"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Prepared is a dataset cut into normalised snapshots, with its road graph's
// normalised adjacency: everything training and evaluation read.
type Prepared struct {
	Dataset *pems.Dataset
	Dir     string // data directory it was read from
	Split   Split
	Set     *Set
	Adj     *pems.CSR
}

// Prepare loads the named dataset from the data directory (resolved from
// dataFlag as pems.ResolveDataDir does), cuts its series to the first
// spec.Steps steps where that is fewer than it holds (the Prepared's
// Dataset then holds the cut series, and its Split records the cut), splits
// its snapshots as spec says, and normalises them with norm, or, when norm is nil, with a PrepStandard
// normaliser fitted on the training part (Split.FitData).
func Prepare(dataFlag, name string, window int, spec SplitSpec, norm *Normalizer) (*Prepared, error) {
	return prepare(dataFlag, name, window, spec, norm, PrepStandard, LinksDefault)
}

// PrepareFit is Prepare fitting a normaliser of preprocessing prep on the
// training part: what a new model is trained with. With PrepPaper on a
// graph whose links have distinct costs (PeMS's distance.csv), the links
// are weighed as Gao & Ribeiro's code weighs them, by their min-max scaled
// distance (Normalizer.Edges, pems.Graph.ScaledAdjacency); a weighted
// graph's links (Los-loop's) weigh as the dataset's Info.WeighLinks says
// (see LinksDefault); a saved model's normaliser brings its weights back.
func PrepareFit(dataFlag, name string, window int, spec SplitSpec, prep Prep) (*Prepared, error) {
	return prepare(dataFlag, name, window, spec, nil, prep, LinksDefault)
}

// PrepareFitLinks is PrepareFit with the road links weighed as links
// says rather than as the dataset's default: every link 1, or a weighted
// graph's weights (Los-loop's). The choice is recorded in the normaliser
// (Normalizer.Edges) and in GraphFingerprint.
func PrepareFitLinks(dataFlag, name string, window int, spec SplitSpec, prep Prep, links Links) (*Prepared, error) {
	return prepare(dataFlag, name, window, spec, nil, prep, links)
}

// PrepareSaved prepares the data a saved model was trained on: split as
// split was (remade from SpecOf(split), since a split file holds no data)
// and normalised with norm. A split that comes out otherwise means the data
// changed since the model was trained, and is an error: scores or a replay
// over it would not be over the parts the model was fitted and selected on.
// So is a road graph other than the one graph fingerprints (see
// CheckGraph): a GCN over another graph forecasts otherwise without
// failing, and node ids chosen on one graph name other roads on another.
// A nil graph (a file written before models recorded theirs) is not
// checked.
func PrepareSaved(dataFlag, name string, window int, split Split, norm *Normalizer, graph *pems.GraphFingerprint) (*Prepared, error) {
	p, err := Prepare(dataFlag, name, window, SpecOf(split), norm)
	if err != nil {
		return nil, err
	}
	if err := p.CheckGraph(graph); err != nil {
		return nil, err
	}
	if !p.Split.Equal(split) {
		return nil, fmt.Errorf("the data of %s now split as %s, the model was trained with %s", name, p.Split, split)
	}
	return p, nil
}

// GraphFingerprint identifies p's road graph as a model trained on p
// reads it: with its links' costs when p's normaliser weighs the links by
// them (Normalizer.Edges), else which pairs are linked. Model files record
// it (teacher.Meta.Graph, sdgnn.BundleMeta.Graph).
func (p *Prepared) GraphFingerprint() pems.GraphFingerprint {
	return p.Dataset.Graph.Fingerprint(p.Set.Norm.Edges != nil)
}

// CheckGraph reports whether p's road graph is the one want fingerprints,
// taken the way want was (with or without the links' costs); the error
// names the graph file and says what differs. A nil want is not checked.
func (p *Prepared) CheckGraph(want *pems.GraphFingerprint) error {
	if want == nil {
		return nil
	}
	if d := want.Diff(p.Dataset.Graph.Fingerprint(want.Costs)); d != "" {
		file := p.Dataset.Info.GraphFile
		if p.Dir != "" {
			file = filepath.Join(p.Dir, filepath.FromSlash(file))
		}
		return fmt.Errorf("the road graph of %s in %s is not the one the model was trained on: %s (use the data the model was trained on, or train a model on this graph)", p.Dataset.Info.Name, file, d)
	}
	return nil
}

func prepare(dataFlag, name string, window int, spec SplitSpec, norm *Normalizer, prep Prep, links Links) (*Prepared, error) {
	dir, err := pems.ResolveDataDir(dataFlag)
	if err != nil {
		return nil, err
	}
	ds, err := pems.Load(dir, name)
	if err != nil {
		return nil, err
	}
	cut := 0
	switch {
	case spec.Steps < 0:
		return nil, fmt.Errorf("dataset %s: first %d steps: want a positive number, or 0 for all", name, spec.Steps)
	case spec.Steps >= ds.Series.Steps:
		spec.Steps = 0 // nothing to cut
	case spec.Steps > 0:
		cut = spec.Steps
		c := *ds
		c.Series = &pems.Series{Steps: cut, Nodes: ds.Series.Nodes, Channels: ds.Series.Channels,
			Data: ds.Series.Data[:cut*ds.Series.Nodes*ds.Series.Channels]}
		ds = &c
	}
	s := ds.Series
	if s.Steps <= window {
		if cut > 0 {
			return nil, fmt.Errorf("dataset %s cut to its first %d steps: not more than the window %d", name, cut, window)
		}
		return nil, fmt.Errorf("dataset %s has %d steps, not more than the window %d", name, s.Steps, window)
	}
	degrees := make([]int, s.Nodes)
	for i, nb := range ds.Graph.Neighbors() {
		degrees[i] = len(nb)
	}
	split, err := spec.Make(s.Steps-window, degrees)
	if err != nil {
		return nil, fmt.Errorf("split %s: %w", name, err)
	}
	var n Normalizer
	if norm != nil {
		n = *norm
		if n.Edges != nil && n.Edges.Weights && ds.Info.GraphFormat != pems.FormatWeighted {
			return nil, fmt.Errorf("dataset %s: the model weighs links by a weighted graph's weights, but the graph of %s is not a weighted one (format %s)", name, name, ds.Info.GraphFormat)
		}
	} else {
		data, nodes, steps := split.FitData(s.Data, s.Nodes, s.Channels, window)
		origin, step := ds.Info.Start.UnixMilli(), int64(ds.Info.StepMinutes)*minuteMs
		if n, err = Fit(prep, data, nodes, s.Channels, steps, origin, step); err != nil {
			return nil, fmt.Errorf("normalise %s: %w", name, err)
		}
		if n.Edges, err = edgeScale(ds, prep, links); err != nil {
			return nil, fmt.Errorf("dataset %s: %w", name, err)
		}
		if at := split.FitSteps(); at != nil && n.Time != nil {
			// The calendar inputs too are scaled by the steps fitted on.
			ti, err := FitTimeInputsAt(origin, step, at)
			if err != nil {
				return nil, fmt.Errorf("normalise %s: %w", name, err)
			}
			n.Time = &ti
		}
	}
	set, err := NewSet(s.Data, s.Steps, s.Nodes, s.Channels, window, n)
	if err != nil {
		return nil, fmt.Errorf("snapshots of %s: %w", name, err)
	}
	adj := ds.Graph.NormalizedAdjacency()
	if e := n.Edges; e != nil {
		adj = ds.Graph.ScaledAdjacency(e.Min, e.Max)
	}
	return &Prepared{Dataset: ds, Dir: dir, Split: split, Set: set, Adj: adj}, nil
}
