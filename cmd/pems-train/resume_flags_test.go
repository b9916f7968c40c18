package main

import (
	"path/filepath"
	"testing"

	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// writeState writes the training state of a GRU-GCN on the PeMS08-layout
// directory dir before its first epoch, as an interrupted teacher run
// leaves one, and returns its path (OUT.model.state).
func writeState(t *testing.T, dir string) string {
	t.Helper()
	p, err := snapshot.PrepareFit(dir, "pems08", 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, snapshot.PrepStandard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := teacher.Config{Kind: teacher.KindGRUGCN, Window: 12, Channels: p.Set.Channels, Hidden: 4, NoiseStd: 0.05, Seed: 1, Layers: 2}
	m, err := teacher.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc := teacher.DefaultTrain()
	tc.MaxBatches = 1
	tr, err := teacher.NewTrainer(m, tc)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "m.model.state")
	meta := teacher.Meta{Config: cfg, Norm: p.Set.Norm, Dataset: "pems08", Nodes: p.Set.Nodes, Channels: p.Dataset.Info.Channels, Split: p.Split, Train: tc}
	if err := tr.SaveState(state, meta); err != nil {
		t.Fatal(err)
	}
	return state
}

// TestResumeTakesReportFlags checks that -mape-floor, which only the final
// test report reads (the state holds no floor), may be given on -resume, as
// -chunks may: the command that was interrupted had it, and the resumed
// run's report should leave the same truths out of MAPE.
func TestResumeTakesReportFlags(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	state := writeState(t, dir)
	code, _, stderr := runCmd(t, "teacher", "-data", dir, "-resume", state, "-epochs", "1", "-mape-floor", "1", "-chunks", "2")
	if code != 0 {
		t.Fatalf("resume with -mape-floor 1 -chunks 2: exit %d, stderr:\n%s", code, stderr)
	}
}
