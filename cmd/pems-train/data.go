package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/snapshot"
)

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

// prepareSaved is snapshot.PrepareSaved naming the model file in errors.
func prepareSaved(dataDir, dataset string, window int, split snapshot.Split, norm *snapshot.Normalizer, what string) (*snapshot.Prepared, error) {
	p, err := snapshot.PrepareSaved(dataDir, dataset, window, split, norm, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return p, nil
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
