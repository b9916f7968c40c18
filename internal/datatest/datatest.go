// Package datatest gives tests the real stand-in data: SZ-taxi and
// Los-loop read from the shared data directory, cut to their first steps
// when a test wants it fast, split chronologically and normalised as
// training normalises it.
//
// Without the data directory a test is skipped, except under CI (the
// environment variable CI set), where the data must be there and its
// absence fails the test rather than hiding it. The package imports no
// model, so that the tests of every package, the models' included, can use
// it.
package datatest

import (
	"os"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// SkipUnlessCI skips the test with the formatted reason, or fails it under
// CI, where the shared data must be present.
func SkipUnlessCI(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf(format, args...)
	}
	tb.Skipf(format, args...)
}

// Dir returns the shared data directory (pems.ResolveDataDir: $PEMS_DATA,
// then ../shared/datasets).
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		SkipUnlessCI(tb, "no data directory: %v", err)
	}
	return dir
}

// SZTaxi loads the whole SZ-taxi dataset from Dir.
func SZTaxi(tb testing.TB) *pems.Dataset {
	tb.Helper()
	ds, err := pems.Load(Dir(tb), "sz-taxi")
	if err != nil {
		SkipUnlessCI(tb, "sz-taxi: %v", err)
	}
	return ds
}

// LosLoop loads the whole Los-loop dataset from Dir: its speeds, its road
// graph, and its detectors' IDs and locations.
func LosLoop(tb testing.TB) *pems.Dataset {
	tb.Helper()
	ds, err := pems.Load(Dir(tb), "los-loop")
	if err != nil {
		SkipUnlessCI(tb, "los-loop: %v", err)
	}
	return ds
}

// Chrono returns the windows of window steps of ds's first steps (all of
// them when steps is 0 or more than the series holds): their chronological
// 6:2:2 split and the snapshot set normalised (snapshot.PrepStandard) on
// the training steps. ds itself is left whole.
func Chrono(tb testing.TB, ds *pems.Dataset, steps, window int) (snapshot.Split, *snapshot.Set) {
	tb.Helper()
	s := ds.Series
	if steps <= 0 || steps > s.Steps {
		steps = s.Steps
	}
	split, err := snapshot.ChronoSplit(steps-window, [3]float64{6, 2, 2})
	if err != nil {
		tb.Fatal(err)
	}
	data := s.Data[:steps*s.Nodes*s.Channels]
	norm, err := snapshot.FitNormalizer(data, s.Nodes, s.Channels, split.TrainSteps(window))
	if err != nil {
		tb.Fatal(err)
	}
	set, err := snapshot.NewSet(data, steps, s.Nodes, s.Channels, window, norm)
	if err != nil {
		tb.Fatal(err)
	}
	return split, set
}
