package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestPaperPrepOnPeMSLayout runs the paper's preprocessing through the
// commands on a PeMS08-layout directory longer than a day: the teacher
// records min-max scaling and calendar inputs fitted on its training
// steps, eval scores it, distil carries the preprocessing into the bundle,
// whose online replay equals its batched forecasts, and reproduce writes
// its table under its own name.
func TestPaperPrepOnPeMSLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a teacher, a bundle and the quick comparison")
	}
	const steps = 600 // the training part covers more than a day
	dir := writePeMS08Layout(t, steps)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-prep", "paper", "-epochs", "2", "-batch", "16")
	norm := saved.Meta.Norm
	if norm.Prep() != snapshot.PrepPaper || saved.Meta.Config.TimeInputs != snapshot.TimeInputCount || saved.Model.GRU.In != 3+snapshot.TimeInputCount {
		t.Fatalf("saved teacher: prep %q, %d time inputs, GRU reads %d", norm.Prep(), saved.Meta.Config.TimeInputs, saved.Model.GRU.In)
	}
	// Fitted on the training steps: the PeMS08 calendar, min-max per channel.
	info, err := pems.Lookup("pems08")
	if err != nil {
		t.Fatal(err)
	}
	train := saved.Meta.Split.TrainSteps(12)
	if train <= 288 {
		t.Fatalf("%d training steps: the test wants more than a day", train)
	}
	if norm.Time.OriginMs != info.Start.UnixMilli() || norm.Time.StepMs != 300_000 || norm.Time.MinuteMax != 1435 || norm.Time.WeekdayMax != float64((train-1)/288) {
		t.Fatalf("calendar inputs %+v for %d training steps from %v", *norm.Time, train, info.Start)
	}
	ds, err := pems.Load(dir, "pems08")
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, err := snapshot.FitMinMax(ds.Series.Data, ds.Series.Nodes, 3, train)
	if err != nil {
		t.Fatal(err)
	}
	for c := range lo {
		if norm.Mean[c] != lo[c] || norm.Std[c] != hi[c]-lo[c] {
			t.Fatalf("channel %d: min %v range %v, want %v %v", c, norm.Mean[c], norm.Std[c], lo[c], hi[c]-lo[c])
		}
	}
	// The road links weighed as in Gao & Ribeiro's code: by distance,
	// min-max scaled over PeMS08's links, in the model file and in the
	// propagation matrix the saved model is prepared with.
	clo, chi, ok := ds.Graph.CostRange()
	if !ok || norm.Edges == nil || norm.Edges.Min != clo || norm.Edges.Max != chi {
		t.Fatalf("link costs range %v–%v; the model's scale %+v", clo, chi, norm.Edges)
	}
	ps, err := snapshot.PrepareSaved(dir, "pems08", 12, saved.Meta.Split, &saved.Meta.Norm, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := ds.Graph.ScaledAdjacency(clo, chi); !slices.Equal(ps.Adj.Val, want.Val) || !slices.Equal(ps.Adj.Col, want.Col) {
		t.Fatal("the saved model is prepared with another propagation matrix than its scaled distances'")
	}
	if std, err := snapshot.PrepareFit(dir, "pems08", 12, snapshot.SpecOf(saved.Meta.Split), snapshot.PrepStandard); err != nil || std.Set.Norm.Edges != nil || !slices.Equal(std.Adj.Val, ds.Graph.NormalizedAdjacency().Val) {
		t.Fatalf("standard preprocessing: %v, links scaled %+v", err, std.Set.Norm.Edges)
	}

	code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || !(res.Report.Overall.MAE > 0) || res.Prep != snapshot.PrepPaper {
		t.Fatalf("eval -json: %v, prep %q, %+v", err, res.Prep, res.Report.Overall)
	}

	bundle := filepath.Join(t.TempDir(), "paper.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "4", "-budget-start", "8", "-budget-every", "2", "-theta-every", "2", "-finetune", "1"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	b, err := sdgnn.LoadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if b.Meta.Norm.Prep() != snapshot.PrepPaper || *b.Meta.Norm.Time != *norm.Time {
		t.Fatalf("bundle preprocessing %q, calendar %+v; the teacher's %+v", b.Meta.Norm.Prep(), b.Meta.Norm.Time, *norm.Time)
	}
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SpecOf(b.Meta.Split), &b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	r := snapshot.Range{Start: p.Split.Test.Start, End: p.Split.Test.Start + 6}
	want, _, err := sdgnn.Predict(context.Background(), b, p.Set, snapshot.Part{Range: r}, 4)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stream.Replay(b, p.Set, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9*max(1, math.Abs(want[i])) {
			t.Fatalf("value %d: online %v, batched %v", i, got[i], want[i])
		}
	}

	out := t.TempDir()
	code, stdout, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-prep", "paper", "-quick", "-seeds", "1", "-out", out)
	if code != 0 {
		t.Fatalf("reproduce exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "paper preprocessing") {
		t.Errorf("table does not name the preprocessing:\n%s", stdout)
	}
	for _, f := range []string{"table-paper-quick.md", "table-paper-quick.json", "models-quick/pems08-gru-gcn-paper-seed1.model"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("reproduce -prep paper: %v", err)
		}
	}
}
