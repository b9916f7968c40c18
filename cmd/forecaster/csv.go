package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/csvfeed"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/stream"
)

// csvFlags are publish -csv's flags, as given.
type csvFlags struct {
	path, topic, badRows string
	dataDir              string // -data: the dataset's sensor IDs, without a bundle
	dryRun               bool
	speedup              float64
	fromLine             int
	fromLineSet          bool   // -from-line was given
	fromTS               string // -from-ts, as given ("" if not)
	sort                 bool
	history              int
}

// newCSVJob checks publish -csv's flags and resolves what it checks the
// rows against: the bundle's sensors, channels and slot when there is
// one, else the dataset's.
func newCSVJob(f csvFlags, dataset string, b *sdgnn.Bundle) (*csvfeed.Job, error) {
	j := &csvfeed.Job{Path: f.path, Topic: f.topic, DryRun: f.dryRun, Speedup: f.speedup, FromLine: f.fromLine, Sort: f.sort, History: f.history, Dataset: dataset}
	switch f.badRows {
	case "stop":
	case "skip":
		j.SkipBad = true
	default:
		return nil, usagef("-bad-rows %q: want stop or skip", f.badRows)
	}
	switch {
	case f.speedup < 0:
		return nil, usagef("-speedup %g: want 0 (as fast as possible) or more", f.speedup)
	case f.dryRun && f.speedup > 0:
		return nil, usagef("-speedup with -dry-run: a dry run sends nothing to pace")
	case f.fromLineSet && f.fromLine < 2:
		return nil, usagef("-from-line %d: want 2 (the first row after the header) or more", f.fromLine)
	case f.history < 1 || f.history > stream.MaxHistory:
		return nil, usagef("-history %d: want 1 to %d slots, as serve's", f.history, stream.MaxHistory)
	}
	if f.fromTS != "" {
		ts, err := stream.ParseTS(f.fromTS)
		if err != nil {
			return nil, usagef("-from-ts: %v", err)
		}
		// Every row's ts is in this range (the Validator refuses the
		// others): one outside it, a time in µs or ns say, would leave
		// out every row and publish nothing, exit 0.
		if ts < 0 || ts > stream.MaxTS {
			return nil, usagef("-from-ts %q is outside 1970 to 9999 (Unix ms, want 0..%d; µs or ns?)", f.fromTS, stream.MaxTS)
		}
		j.FromTS, j.FromTSSet = ts, true
	}
	info, err := pems.Lookup(dataset)
	if err != nil {
		return nil, usagef("-dataset: %v", err)
	}
	step, err := stepMs(dataset)
	if err != nil {
		return nil, err
	}
	j.Channels = info.Channels
	j.Valid = stream.Validator{Nodes: info.Nodes, Channels: len(info.Channels), StepMs: step}
	if b != nil {
		if b.Meta.Dataset != dataset {
			return nil, usagef("-dataset %s: the bundle is for %s (leave -dataset out to take the bundle's)", dataset, b.Meta.Dataset)
		}
		j.Valid.Nodes, j.Valid.Channels = b.Meta.Nodes, len(b.Meta.Norm.Mean)
		if j.Valid.Channels != len(info.Channels) {
			return nil, fmt.Errorf("bundle has %s, %s names %d (%s)", english.Count(j.Valid.Channels, "channel"), dataset, len(info.Channels), strings.Join(info.Channels, ", "))
		}
	}
	if j.Sensors, err = csvSensors(info, f.dataDir, b); err != nil {
		return nil, err
	}
	return j, nil
}

// csvSensors returns the names of the sensors a CSV file's sensor column
// holds: the bundle's (its IDs, or indices where it records none);
// without one, the dataset's IDs where it has them, from its locations
// file in the data directory, else the indices.
func csvSensors(info pems.Info, dataDir string, b *sdgnn.Bundle) (*pems.SensorNames, error) {
	if b != nil {
		return b.SensorNames()
	}
	if info.LocationsFile == "" {
		return pems.NewSensorNames(info.Nodes, nil)
	}
	dir, err := pems.ResolveDataDir(dataDir)
	if err != nil {
		return nil, fmt.Errorf("%s names its sensors by ID, which its locations file lists: %w (or give -model, whose bundle records them)", info.Name, err)
	}
	ids, _, err := pems.ReadLocationsCSV(filepath.Join(dir, filepath.FromSlash(info.LocationsFile)))
	if err != nil {
		return nil, fmt.Errorf("%s's sensor IDs: %w (or give -model, whose bundle records them)", info.Name, err)
	}
	return pems.NewSensorNames(len(ids), ids)
}
