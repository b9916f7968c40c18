package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// dataDirUsage is the help of every subcommand's -data flag, which all
// look for the data directory the same way (pems.ResolveDataDir).
const dataDirUsage = "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)"

// defaultNoise is the training noise σ between GCN and decoder per dataset
// (the reference values for PeMS; SZ-taxi uses PeMS04's).
var defaultNoise = map[string]float64{"pems04": 0.01, "pems08": 0.05, "sz-taxi": 0.01}

// noiseFor returns the -noise σ for dataset name: flagValue, or the
// dataset's default for -1 (checkNoise refuses other negatives).
func noiseFor(name string, flagValue float64) float64 {
	if flagValue >= 0 {
		return flagValue
	}
	if v, ok := defaultNoise[name]; ok {
		return v
	}
	return 0.01
}

// checkNoise refuses a -noise that is neither -1 (the dataset's default)
// nor a finite σ ≥ 0.
func checkNoise(v float64) error {
	if v != -1 && (!(v >= 0) || math.IsInf(v, 1)) {
		return badFlags(fmt.Errorf("-noise %g: want a finite σ ≥ 0, or -1 for the dataset's default", v))
	}
	return nil
}

// checkDataset refuses a -dataset value that names no known dataset as a
// usage error (exit 2), before anything is read, and returns the dataset's
// own name: the value is matched without regard to case or surrounding
// space, and what is recorded (model files, default paths, the dataset's
// default noise) must not depend on how it was typed.
func checkDataset(name string) (string, error) {
	in, err := pems.Lookup(name)
	if err != nil {
		return "", badFlags(fmt.Errorf("-dataset: %w", err))
	}
	return in.Name, nil
}

// parseSplit reads -split-by and -split: the kind of split and its ratios.
// An empty ratios string means the kind's default: 6,2,2 by time, Gao &
// Ribeiro's 7,1,2 by nodes or windows.
func parseSplit(by, ratios string) (snapshot.SplitSpec, error) {
	kind, err := snapshot.ParseSplitBy(by)
	if err != nil {
		return snapshot.SplitSpec{}, fmt.Errorf("-split-by: %w", err)
	}
	if ratios == "" {
		ratios = "6,2,2"
		if snapshot.Dealt(kind) {
			ratios = "7,1,2"
		}
	}
	r, err := parseRatios(ratios)
	if err != nil {
		return snapshot.SplitSpec{}, err
	}
	if snapshot.Dealt(kind) {
		for _, v := range r {
			if v != float64(int(v)) {
				return snapshot.SplitSpec{}, fmt.Errorf("-split %q: a split by %s deals them round-robin and needs whole-number ratios such as 7,1,2", ratios, kind)
			}
		}
	}
	return snapshot.SplitSpec{By: kind, Ratios: r}, nil
}

// parseRatios reads a split such as "6,2,2".
func parseRatios(s string) ([3]float64, error) {
	var r [3]float64
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return r, fmt.Errorf("-split %q: want three ratios train,val,test such as 6,2,2", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || !(v > 0) || math.IsInf(v, 1) {
			return r, fmt.Errorf("-split %q: ratio %q is not a positive number", s, p)
		}
		r[i] = v
	}
	return r, nil
}

// checkPart refuses a -split-part that names no part, before any data are
// read.
func checkPart(name string) error {
	if _, err := (snapshot.Split{}).Part(name); err != nil {
		return badFlags(fmt.Errorf("-split-part %q: want train, val or test", name))
	}
	return nil
}

// partOf returns the named part of a split.
func partOf(sp snapshot.Split, name string) (snapshot.Part, error) {
	p, err := sp.Part(name)
	if err != nil {
		return p, fmt.Errorf("-split-part: %w", err)
	}
	return p, nil
}

// modelData is what a model file records of the data it was trained on,
// as prepareSaved needs it.
type modelData struct {
	path    string // the model file, for messages
	dataset string
	window  int
	split   snapshot.Split
	norm    *snapshot.Normalizer
	// graph fingerprints the road graph the model was trained on; nil for
	// a model that reads none (a GRU) and in files written before they
	// were kept.
	graph *pems.GraphFingerprint
	// readsGraph is set for a model that reads the road graph: a GRU-GCN,
	// and a bundle, whose Θ names nodes of its teacher's graph.
	readsGraph bool
	// sensors are the sensor IDs the model records; nil where it records
	// none.
	sensors []string
}

// teacherData is what the teacher model file path records of its data.
func teacherData(path string, m *teacher.Meta) modelData {
	return modelData{path: path, dataset: m.Dataset, window: m.Config.Window, split: m.Split, norm: &m.Norm, graph: m.Graph, readsGraph: m.Config.GCNLayers() > 0, sensors: m.SensorIDs}
}

// bundleData is what the bundle file path records of its data.
func bundleData(path string, m *sdgnn.BundleMeta) modelData {
	return modelData{path: path, dataset: m.Dataset, window: m.Window, split: m.Split, norm: &m.Norm, graph: m.Graph, readsGraph: true, sensors: m.SensorIDs}
}

// prepareSaved is snapshot.PrepareSaved for the model file d describes,
// naming it in errors. A model that reads the road graph but records no
// fingerprint of it (a file written before they were kept) is taken on
// the data directory's graph unchecked, with a warning on stderr. A
// model that records its sensors' IDs must be used on data of the same
// IDs (pems.CompareSensorIDs).
func prepareSaved(dataDir string, d modelData, stderr io.Writer) (*snapshot.Prepared, error) {
	p, err := snapshot.PrepareSaved(dataDir, d.dataset, d.window, d.split, d.norm, d.graph)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.path, err)
	}
	if err := pems.CompareSensorIDs(d.sensors, p.Dataset.SensorIDs); err != nil {
		return nil, fmt.Errorf("%s: the sensors of %s in %s are not the ones the model was trained on: %w", d.path, d.dataset, p.Dir, err)
	}
	if d.readsGraph && d.graph == nil {
		warnNoGraph(stderr, d.path, p)
	}
	return p, nil
}

// warnNoGraph warns on w that the model file path records no fingerprint
// of its road graph, so that p's graph is used without a check that it is
// the one the model was trained on.
func warnNoGraph(w io.Writer, path string, p *snapshot.Prepared) {
	fmt.Fprintf(w, "pems-train: warning: %s records no fingerprint of its road graph (written before model files kept one): not checked that %s is the graph it was trained on\n",
		path, filepath.Join(p.Dir, filepath.FromSlash(p.Dataset.Info.GraphFile)))
}

// describePart says which snapshots and sensors a part scores.
func describePart(p snapshot.Part, nodes int) string {
	if p.Nodes == nil {
		return english.Count(p.Len(), "snapshot")
	}
	return fmt.Sprintf("%s, %d of %d sensors", english.Count(p.Len(), "snapshot"), len(p.Nodes), nodes)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
