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

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestSplitByNodes runs Gao & Ribeiro's transductive split end to end on
// the PeMS08 layout: a paper-preprocessed teacher trained on 7 of every 10
// sensors by degree, eval scoring only the test sensors (every snapshot),
// a distilled bundle keeping the split, and the paper-style metrics over
// the test sensors' rows alone.
func TestSplitByNodes(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-prep", "paper", "-split-by", "nodes")
	sp := saved.Meta.Split
	// 170 sensors dealt 7:1:2: 17 full rounds of ten.
	if !sp.ByNodes() || len(sp.Train.Nodes) != 119 || len(sp.Val.Nodes) != 17 || len(sp.Test.Nodes) != 34 || sp.Test.Range != (snapshot.Range{Start: 0, End: 108}) {
		t.Fatalf("saved split: by %q, %d/%d/%d nodes, test snapshots %v", sp.By, len(sp.Train.Nodes), len(sp.Val.Nodes), len(sp.Test.Nodes), sp.Test.Range)
	}
	for _, z := range sp.Test.Nodes {
		if slices.Contains(sp.Train.Nodes, z) || slices.Contains(sp.Val.Nodes, z) {
			t.Fatalf("test sensor %d is also in another part", z)
		}
	}

	res := evalJSON(t, dir, model)
	if !slices.Equal(res.Nodes, sp.Test.Nodes) || res.Range != sp.Test.Range {
		t.Fatalf("eval scored nodes %v over %v, want the split's test nodes over %v", res.Nodes, res.Range, sp.Test.Range)
	}
	for z, m := range res.Report.PerNode {
		if scored := slices.Contains(sp.Test.Nodes, z); scored != (m.Count > 0) {
			t.Fatalf("sensor %d: %d values scored, in the test part: %v", z, m.Count, scored)
		}
	}
	if res.Paper.Rows != 108*34 {
		t.Errorf("paper-style metrics over %d rows, want 108 snapshots × 34 test sensors", res.Paper.Rows)
	}
	want, _, _ := inProcess(t, dir, saved, res)

	out, bres := distillEval(t, dir, model)
	if !strings.Contains(out, "34 of 170 sensors") {
		t.Errorf("distill does not say it scored the test sensors:\n%s", out)
	}
	if bres.Kind != "sdgnn" || !slices.Equal(bres.Nodes, sp.Test.Nodes) || bres.Report.Overall.Count != want.Count {
		t.Fatalf("bundle eval: kind %q, nodes %v, count %d (teacher's %d)", bres.Kind, bres.Nodes, bres.Report.Overall.Count, want.Count)
	}
	// The report replays every sensor online and scores the test sensors,
	// as eval does.
	doc := checkReport(t, dir, bres.Model, model, "34 of the 170 are scored", want.Count, bres.Report.Overall.MAE)
	if !slices.Equal(doc.Scored, sp.Test.Nodes) {
		t.Fatalf("report scored %v", doc.Scored)
	}
}

// evalJSON runs eval -json on a model file.
func evalJSON(t *testing.T, dir, model string) evalResult {
	t.Helper()
	code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// inProcess computes in process the teacher's test metrics that eval
// reported as res, from the PeMS08-layout data prepared as the model says,
// checks that they agree and returns them with the forecasts and truths.
func inProcess(t *testing.T, dir string, saved *teacher.Saved, res evalResult) (want evaluation.Metrics, pred, truth []float64) {
	t.Helper()
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SpecOf(saved.Meta.Split), &saved.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	if pred, truth, err = teacher.Predict(context.Background(), saved.Model, p.Set, p.Split.Test, p.Adj, 64); err != nil {
		t.Fatal(err)
	}
	if want, err = evaluation.Compute(pred, truth); err != nil {
		t.Fatal(err)
	}
	if got := res.Report.Overall; got.Count != want.Count || math.Abs(got.MAE-want.MAE) > 1e-9*want.MAE {
		t.Errorf("eval overall %+v, in process %+v", got, want)
	}
	return want, pred, truth
}

// distillEval distils a quick bundle from the teacher model and evals it,
// returning distill's output and eval's result.
func distillEval(t *testing.T, dir, model string) (string, evalResult) {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "m.sdgnn")
	code, out, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "4", "-budget-start", "7", "-budget-every", "2", "-theta-every", "2", "-finetune", "1")
	if code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", bundle, "-json")
	if code != 0 {
		t.Fatalf("bundle eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	return out, res
}

// reportDoc is what the split tests read of a report's metrics.json.
type reportDoc struct {
	Scored    []int `json:"scored_nodes"`
	Snapshots int   `json:"snapshots"`
	Models    []struct {
		Name   string            `json:"name"`
		Report evaluation.Report `json:"report"`
	} `json:"models"`
}

// checkReport runs report on the bundle with its teacher and checks that
// report.md holds text, that every model (at least SDGNN and the teacher)
// scored count values, and that SDGNN's online replay has the MAE of its
// batched eval.
func checkReport(t *testing.T, dir, bundle, model, text string, count int, mae float64) reportDoc {
	t.Helper()
	out := filepath.Join(t.TempDir(), "report")
	code, _, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-teacher", model, "-out", out, "-chunks", "2", "-progress", "never")
	if code != 0 {
		t.Fatalf("report exited %d:\n%s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), text) {
		t.Errorf("report.md does not say %q:\n%.400s", text, md)
	}
	var doc reportDoc
	raw, err := os.ReadFile(filepath.Join(out, "metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Models) < 2 {
		t.Fatalf("report of %d models", len(doc.Models))
	}
	for _, m := range doc.Models {
		if got := m.Report.Overall; got.Count != count {
			t.Errorf("report %s: %d values scored, eval %d", m.Name, got.Count, count)
		}
		if m.Name == "SDGNN" && math.Abs(m.Report.Overall.MAE-mae) > 1e-9 {
			t.Errorf("report SDGNN MAE %v (online replay), eval %v (batched)", m.Report.Overall.MAE, mae)
		}
	}
	return doc
}

// TestSplitByWindows runs Gao & Ribeiro's inductive split end to end on
// the PeMS08 layout: a teacher trained on 7 of every 10 snapshots in time
// order, eval, export and a distilled bundle's report scoring every sensor
// over the test snapshots alone, the report's online replay equal to the
// bundle's batched eval.
func TestSplitByWindows(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-split-by", "windows")
	sp := saved.Meta.Split
	// 108 snapshots dealt 7:1:2: ten full rounds, then 7 training and 1
	// validation snapshot.
	if !sp.ByWindows() || sp.Train.Len() != 77 || sp.Val.Len() != 11 || sp.Test.Len() != 20 || sp.Test.Nodes != nil {
		t.Fatalf("saved split: by %q, %d/%d/%d snapshots, test nodes %v", sp.By, sp.Train.Len(), sp.Val.Len(), sp.Test.Len(), sp.Test.Nodes)
	}
	test := sp.Test.Snapshots()
	if test[0] != 8 || test[1] != 9 || test[2] != 18 || test[19] != 99 {
		t.Fatalf("test snapshots %v, want positions 8 and 9 of every ten", test)
	}

	res := evalJSON(t, dir, model)
	channels := len(saved.Meta.Channels)
	if res.Nodes != nil || res.Deal != sp.Test.Deal || res.Report.Overall.Count > 20*170*channels || res.Paper.Rows != 20*170 {
		t.Fatalf("eval scored nodes %v, deal %+v, %d values, %d paper rows; want every sensor over the 20 test snapshots", res.Nodes, res.Deal, res.Report.Overall.Count, res.Paper.Rows)
	}
	want, pred, truth := inProcess(t, dir, saved, res)
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SpecOf(sp), &saved.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	// Predict's rows are the test snapshots' in order: check one against a
	// batch of that snapshot alone.
	one, oneTruth, err := teacher.Predict(context.Background(), saved.Model, p.Set, snapshot.Part{Range: snapshot.Range{Start: 18, End: 19}}, p.Adj, 64)
	if err != nil {
		t.Fatal(err)
	}
	block := 170 * channels
	if !slices.Equal(pred[2*block:3*block], one) || !slices.Equal(truth[2*block:3*block], oneTruth) {
		t.Fatal("the third test row block is not snapshot 18's")
	}

	snaps := filepath.Join(t.TempDir(), "test.arrow")
	if code, _, stderr := runCmd(t, "export", "-data", dir, "-model", model, "-what", "snapshots", "-out", snaps); code != 0 {
		t.Fatalf("export exited %d:\n%s", code, stderr)
	}
	tab, err := snapshot.ReadSnapshots(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Snapshot) != 20*170 || tab.Snapshot[0] != 8 || tab.Snapshot[2*170] != 18 {
		t.Fatalf("exported %d rows, first snapshots %d and %d", len(tab.Snapshot), tab.Snapshot[0], tab.Snapshot[2*170])
	}
	// The file says what its three channels are, in their units.
	if l := tab.Labels; l.Dataset != "pems08" || l.Part != "test" || !slices.Equal(l.Channels, []string{"flow", "occupancy", "speed"}) ||
		!slices.Equal(l.Units, []string{"veh/5 min", "fraction", "mph"}) {
		t.Errorf("exported snapshots labelled %+v", l)
	}

	_, bres := distillEval(t, dir, model)
	if bres.Deal != sp.Test.Deal || bres.Report.Overall.Count != want.Count {
		t.Fatalf("bundle eval: deal %+v, count %d (teacher's %d)", bres.Deal, bres.Report.Overall.Count, want.Count)
	}
	doc := checkReport(t, dir, bres.Model, model, "at positions 8–9 of every 10 (20)", want.Count, bres.Report.Overall.MAE)
	if doc.Snapshots != 20 || doc.Scored != nil {
		t.Fatalf("report of %d snapshots, scored sensors %v", doc.Snapshots, doc.Scored)
	}

	// reproduce trains and scores every model on the same split and names
	// its table for it.
	if testing.Short() {
		return
	}
	rout := t.TempDir()
	code, stdout, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-split-by", "windows", "-out", rout)
	if code != 0 {
		t.Fatalf("reproduce exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "test windows (snapshots dealt 7:1:2 round-robin in time order, every node)") || !fileExists(filepath.Join(rout, "table-windows-quick.json")) {
		t.Errorf("reproduce's table does not name the window split or was not written as table-windows-quick:\n%s", stdout)
	}
	// PeMS's three channels, each in its units, by channel too.
	for _, want := range []string{"By channel (each in its units), mean ± std over seeds:", "| flow (veh/5 min) | MAPE (%) |", "| occupancy (fraction) | MAPE (%) |", "| speed (mph) | MAPE (%) |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("reproduce's table lacks %q:\n%s", want, stdout)
		}
	}
	// It logs the progress of the long steps.
	for _, line := range []string{"teacher epoch", "model=GRU-GCN", "SDGNN round", "budget="} {
		if !strings.Contains(stderr, line) {
			t.Errorf("reproduce's log lacks %q:\n%s", line, stderr)
		}
	}
}

// TestSplitFlags checks the refusals of -split-by and -split: a wrong
// kind or ratios are usage errors (exit 2), a part the data leave empty a
// failure (exit 1).
func TestSplitFlags(t *testing.T) {
	dir := writePeMS08Layout(t, 60)
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown kind", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split-by", "space"}, 2, `split by "space": want "time", "nodes" or "windows"`},
		{"fractional node ratios", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split-by", "nodes", "-split", "0.7,0.1,0.2"}, 2, "whole-number ratios"},
		{"a node part left empty", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split-by", "nodes", "-split", "200,1,1"}, 1, "empty part"},
		{"fractional window ratios", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split-by", "windows", "-split", "6,2.5,2"}, 2, "split by windows deals them round-robin"},
		{"a window part left empty", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split-by", "windows", "-split", "47,1,1"}, 1, "empty part"},
		{"reproduce unknown kind", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-split-by", "sensors"}, 2, `split by "sensors"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, stderr, tc.want)
			}
		})
	}
}

func TestParseSeeds(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []uint64
		wantErr string
	}{
		{"", nil, ""},
		{"3", []uint64{1, 2, 3}, ""},
		{"4-6", []uint64{4, 5, 6}, ""},
		{"2-2", []uint64{2}, ""},
		{"7,3, 9", []uint64{7, 3, 9}, ""},
		{"0", nil, "positive whole numbers"},
		{"x", nil, "positive whole numbers"},
		{"5-3", nil, "ends before it starts"},
		{"1,1", nil, "seed 1 twice"},
		{"1-", nil, "positive whole numbers"},
		{"-3", nil, "positive whole numbers"},
	} {
		got, err := parseSeeds(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseSeeds(%q) error %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseSeeds(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// TestTeacherFirstSteps trains a teacher on the first 120 of 200 steps
// (-steps): its split covers the snapshots of those steps alone and records
// the cut, and eval, by the model's split, scores the test part of the same
// steps, as a model trained on a 120-step series would be scored.
func TestTeacherFirstSteps(t *testing.T) {
	dir := writePeMS08Layout(t, 200)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-steps", "120")
	sp := saved.Meta.Split
	want, err := snapshot.ChronoSplit(120-12, [3]float64{6, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	want.Steps = 120
	if !sp.Equal(want) || !strings.Contains(sp.String(), "first 120 steps") {
		t.Fatalf("saved split %s (%+v), want %s", sp, sp, want)
	}
	res := evalJSON(t, dir, model)
	if res.Range != sp.Test.Range {
		t.Fatalf("eval scored %v, want the cut series' test part %v", res.Range, sp.Test.Range)
	}
	inProcess(t, dir, saved, res)
}

// TestReproduceFirstSteps runs the quick comparison on the first 120 of
// 200 steps: the table and the models are written under names that say so
// (a run over the whole series would not reuse those teachers), the table
// records and states the cut, and its GRU-GCN is scored on the test part
// of those 120 steps.
func TestReproduceFirstSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("trains every model")
	}
	dir := writePeMS08Layout(t, 200)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-steps", "120", "-out", out)
	if code != 0 {
		t.Fatalf("reproduce exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "the series' first 120 steps only") {
		t.Errorf("the table does not state the cut:\n%s", stdout)
	}
	raw, err := os.ReadFile(filepath.Join(out, "table-quick-steps120.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []reproduce.Table
	if err := json.Unmarshal(raw, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].Config.Steps != 120 || len(tables[0].Runs) != 1 {
		t.Fatalf("table: %d tables, steps %d", len(tables), tables[0].Config.Steps)
	}
	saved, err := teacher.LoadModel(filepath.Join(out, "models-quick-steps120", "pems08-gru-gcn-seed1.model"))
	if err != nil {
		t.Fatal(err)
	}
	if sp := saved.Meta.Split; sp.Steps != 120 || sp.Test.End != 108 {
		t.Errorf("teacher's split %s: want the snapshots of the first 120 steps", sp)
	}
	want, _, _ := inProcess(t, dir, saved, evalJSON(t, dir, filepath.Join(out, "models-quick-steps120", "pems08-gru-gcn-seed1.model")))
	if got := tables[0].Runs[0].Metrics[reproduce.GRUGCN]; got.Count != want.Count || math.Abs(got.MAE-want.MAE) > 1e-9*want.MAE {
		t.Errorf("table's GRU-GCN %+v, eval of its model %+v", got, want)
	}
}
