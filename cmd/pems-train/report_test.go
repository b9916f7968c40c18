package main

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/report"
)

// TestReportOnPeMSLayout trains small teachers (2-layer and 1-layer
// GRU-GCN, GRU) and a bundle on the PeMS08-layout directory, runs report
// with a budget sweep and the baselines, and checks that the report's
// numbers equal eval -json's for the same models and split, that every
// figure is drawn and non-empty, and that the predictions file round-trips.
func TestReportOnPeMSLayout(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three teachers, a bundle and a sweep")
	}
	dir := writePeMS08Layout(t, 120)
	tmp := t.TempDir()
	model, model1, gru := filepath.Join(tmp, "m.model"), filepath.Join(tmp, "m1.model"), filepath.Join(tmp, "g.model")
	for _, args := range [][]string{
		{"-epochs", "2", "-out", model},
		{"-epochs", "1", "-layers", "1", "-out", model1},
		{"-epochs", "1", "-model", "gru", "-out", gru},
	} {
		if code, _, stderr := runCmd(t, append([]string{"teacher", "-data", dir, "-dataset", "pems08"}, args...)...); code != 0 {
			t.Fatalf("teacher %v exited %d:\n%s", args, code, stderr)
		}
	}
	bundle := filepath.Join(tmp, "m.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "6", "-budget-start", "8",
		"-budget-every", "2", "-theta-every", "2", "-finetune", "1"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	out := filepath.Join(tmp, "report")
	code, stdout, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-dataset", "pems08", "-teacher1", model1, "-gru", gru,
		"-out", out, "-sweep", "2,4", "-baselines", "-sweep-scale", "1", "-chunks", "4", "-sensor", "7", "-outage", "share=0.2,len=3:12,seed=1")
	if code != 0 {
		t.Fatalf("report exited %d:\n%s\n%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "%") || strings.Contains(stderr, "█") {
		t.Errorf("progress bars when stderr is not a terminal:\n%s", stderr)
	}
	for _, stage := range []string{"replay SDGNN", "distil budget 4, 1-layer target", "train PPRGo"} {
		if strings.Count(stderr, "report: "+stage+": done in") != 1 {
			t.Errorf("stage %q not reported once when stderr is not a terminal:\n%s", stage, stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(out, report.FileMetrics))
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}

	// The report's numbers are eval's: SDGNN through the online replay,
	// the teachers through their batched path.
	for name, file := range map[string]string{report.SDGNN: bundle, report.GRUGCN: model, report.GRUGCN + " L1": model1, report.GRU: gru} {
		code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", file, "-json", "-chunks", "4", "-outage", "share=0.2,len=3:12,seed=1")
		if code != 0 {
			t.Fatalf("eval %s exited %d:\n%s", file, code, stderr)
		}
		var ev evalResult
		if err := json.Unmarshal([]byte(stdout), &ev); err != nil {
			t.Fatal(err)
		}
		m := doc.Model(name)
		if m == nil {
			t.Fatalf("report has no %s", name)
		}
		if math.Abs(m.Receptive-ev.Receptive) > 1e-12 {
			t.Errorf("%s: receptive field %g, eval %g", name, m.Receptive, ev.Receptive)
		}
		tol := 0.0
		if name == report.SDGNN {
			tol = 1e-9 // the per-node online path sums in another order than the batched one
		}
		reportsEqual(t, name, m.Report, ev.Report, tol)
		// Under the outages both forecast through the batched path.
		if len(m.Outages) != 2 || len(ev.Outages) != 2 {
			t.Fatalf("%s: %d outage passes in the report, %d in eval", name, len(m.Outages), len(ev.Outages))
		}
		for i, o := range m.Outages {
			e := ev.Outages[i]
			if o.Length != e.Length || o.Breakdown.Silenced.MAE != e.Report.Completeness.Silenced.MAE || o.Overall.MAE != e.Report.Overall.MAE {
				t.Errorf("%s, outage of %d: silenced MAE %v, all %v; eval %v, %v", name, o.Length, o.Breakdown.Silenced.MAE, o.Overall.MAE,
					e.Report.Completeness.Silenced.MAE, e.Report.Overall.MAE)
			}
		}
		if d := math.Abs(m.Paper.MAPE - ev.Paper.MAPE); d > tol*max(1, ev.Paper.MAPE) {
			t.Errorf("%s: paper MAPE %g, eval %g", name, m.Paper.MAPE, ev.Paper.MAPE)
		}
	}
	for _, name := range []string{report.GLNN, report.NOSMOG, report.PPRGo} {
		if m := doc.Model(name); m == nil || !(m.Report.Overall.MAE > 0) {
			t.Errorf("baseline %s missing or unscored: %+v", name, m)
		}
	}
	series := map[string]int{}
	for _, s := range doc.Sweep {
		series[s.Series]++
		if s.Model == report.SDGNN && s.Budget > 0 && s.Receptive > float64(s.Budget) {
			t.Errorf("sweep %s budget %d: mean receptive field %g", s.Series, s.Budget, s.Receptive)
		}
	}
	if series["SDGNN, 2-layer target"] != 2 || series["SDGNN, 1-layer target"] != 2 || series["GRU-GCN L1"] != 1 || series["GRU-GCN L2"] != 1 {
		t.Errorf("sweep series %v", series)
	}
	if doc.Field == nil || doc.Field.Sensor != 7 || len(doc.Field.Selected) == 0 || len(doc.Reductions) == 0 || len(doc.Checkpoints) == 0 {
		t.Fatalf("field %+v, %d reductions, %d checkpoints", doc.Field, len(doc.Reductions), len(doc.Checkpoints))
	}

	// Every figure drawn, PNG and SVG, non-empty; the PNG decodes.
	if len(doc.Figures) != 8 || doc.Outage != "share=0.2,len=3:12,seed=1" {
		t.Errorf("%d figures, want 8; outage %q", len(doc.Figures), doc.Outage)
	}
	html, err := os.ReadFile(filepath.Join(out, report.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Figures {
		if f.Skipped != "" || len(f.Files) != 2 {
			t.Errorf("figure %s: skipped %q, files %v", f.Name, f.Skipped, f.Files)
			continue
		}
		for _, file := range f.Files {
			b, err := os.ReadFile(filepath.Join(out, file))
			if err != nil || len(b) < 500 {
				t.Errorf("figure file %s: %d bytes, %v", file, len(b), err)
			}
			if strings.HasSuffix(file, ".png") {
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					t.Errorf("figure %s: %v", file, err)
				}
			} else if !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("figure %s is not SVG", file)
			}
		}
		if !bytes.Contains(md, []byte(f.Files[0])) {
			t.Errorf("report.md does not show %s", f.Files[0])
		}
	}
	if n := bytes.Count(html, []byte(`src="data:image/png;base64,`)); n != len(doc.Figures) {
		t.Errorf("report.html embeds %d figures, want %d", n, len(doc.Figures))
	}
	if bytes.Contains(html, []byte(`src="figures/`)) {
		t.Error("report.html links figure files instead of embedding them")
	}

	// The predictions round-trip: truth and each model's predictions as
	// scored.
	p, err := report.ReadPredictions(filepath.Join(out, report.FilePredictions))
	if err != nil {
		t.Fatal(err)
	}
	rows := doc.Snapshots * doc.Nodes
	if len(p.Node) != rows || p.Snapshot[0] != int64(doc.Range.Start) || p.Step[0] != int64(doc.Range.Start+12) {
		t.Fatalf("predictions: %d rows (want %d), first snapshot %d step %d", len(p.Node), rows, p.Snapshot[0], p.Step[0])
	}
	for _, m := range doc.Models {
		acc := evaluation.Accumulator{}
		for _, c := range doc.Channels {
			pred, truth, e := p.Columns["pred_"+report.Slug(m.Name)+"_"+c], p.Columns["true_"+c], p.Columns["err_"+report.Slug(m.Name)+"_"+c]
			if len(pred) != rows || len(e) != rows {
				t.Fatalf("%s %s: %d predictions, %d errors", m.Name, c, len(pred), len(e))
			}
			for i := range pred {
				acc.Add(pred[i], truth[i])
				if evaluation.Masked(truth[i]) != math.IsNaN(e[i]) || (!math.IsNaN(e[i]) && e[i] != pred[i]-truth[i]) {
					t.Fatalf("%s %s row %d: error %g for prediction %g, truth %g", m.Name, c, i, e[i], pred[i], truth[i])
				}
			}
		}
		if got := acc.Metrics(); math.Abs(got.MAE-m.Report.Overall.MAE) > 1e-12*m.Report.Overall.MAE || got.Count != m.Report.Overall.Count {
			t.Errorf("%s: MAE from the predictions file %g over %d, report %g over %d", m.Name, got.MAE, got.Count, m.Report.Overall.MAE, m.Report.Overall.Count)
		}
	}
	if fi, err := os.Stat(filepath.Join(out, report.FileParquet)); err != nil || fi.Size() < 1000 {
		t.Errorf("parquet file: %v", err)
	}

	// Bad invocations are usage errors naming what is wrong.
	for _, args := range [][]string{
		{"-model", bundle},
		{"-model", bundle, "-out", out, "-sweep", "2,x"},
		{"-model", bundle, "-out", out, "-sweep", "4", "-teacher", "none"},
		{"-model", bundle, "-out", out, "-progress", "sometimes"},
	} {
		if code, _, stderr := runCmd(t, append([]string{"report", "-data", dir}, args...)...); code != 2 || stderr == "" {
			t.Errorf("report %v: exit %d, %q", args, code, stderr)
		}
	}
	if code, _, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-out", out, "-dataset", "pems04"); code != 1 || !strings.Contains(stderr, "pems04") {
		t.Errorf("wrong dataset: exit %d, %q", code, stderr)
	}
	// Refused before the report is built, as a usage error.
	if code, _, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-out", out, "-sensor", "170"); code != 2 || !strings.Contains(stderr, "-sensor 170: the bundle has sensors 0 to 169") {
		t.Errorf("unknown sensor: exit %d, %q", code, stderr)
	}
}

// reportsEqual fails t unless a and b agree to the relative tolerance tol
// in every overall, per-channel, per-node and per-chunk figure.
func reportsEqual(t *testing.T, name string, a, b evaluation.Report, tol float64) {
	t.Helper()
	same := func(x, y float64) bool {
		return x == y || (math.IsNaN(x) && math.IsNaN(y)) || math.Abs(x-y) <= tol*math.Max(1, math.Abs(y))
	}
	eq := func(what string, x, y evaluation.Metrics) {
		if x.Count != y.Count || x.MAPECount != y.MAPECount || !same(x.MAE, y.MAE) || !same(x.RMSE, y.RMSE) || !same(x.MAPE, y.MAPE) {
			t.Errorf("%s %s: report %+v, eval %+v", name, what, x, y)
		}
	}
	eq("overall", a.Overall, b.Overall)
	if len(a.PerChannel) != len(b.PerChannel) || len(a.PerNode) != len(b.PerNode) || len(a.Chunks) != len(b.Chunks) {
		t.Fatalf("%s: shapes differ", name)
	}
	for i := range a.PerChannel {
		eq("channel", a.PerChannel[i], b.PerChannel[i])
	}
	for i := range a.PerNode {
		eq("node", a.PerNode[i], b.PerNode[i])
	}
	for i := range a.Chunks {
		eq("chunk", a.Chunks[i], b.Chunks[i])
		if !same(a.ChunkMAEStd[i], b.ChunkMAEStd[i]) {
			t.Errorf("%s chunk %d std: %g, eval %g", name, i, a.ChunkMAEStd[i], b.ChunkMAEStd[i])
		}
	}
}

// TestReportBundleTeacherReplaced checks that report's default teacher, the
// file at the path the bundle records, is used only while it is still the
// teacher the bundle was distilled from: a teacher trained again to the
// same path (same dataset and split, other weights) is left out with a
// warning naming it, rather than scored as the bundle's GRU-GCN.
func TestReportBundleTeacherReplaced(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1")
	bundle := filepath.Join(t.TempDir(), "m.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "2", "-budget-start", "6",
		"-budget-every", "2", "-theta-every", "2", "-finetune", "1"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	for _, tc := range []struct {
		name     string
		retrain  bool
		teacher  bool   // the report scores a GRU-GCN
		inStderr string // "" for none
	}{
		{"the bundle's teacher", false, true, ""},
		{"trained again to its path", true, false, "not the teacher " + bundle + " was distilled from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.retrain {
				args := []string{"teacher", "-data", dir, "-dataset", "pems08", "-epochs", "1", "-seed", "7", "-out", model}
				if code, _, stderr := runCmd(t, args...); code != 0 {
					t.Fatalf("%v exited %d:\n%s", args, code, stderr)
				}
			}
			out := filepath.Join(t.TempDir(), "report")
			code, stdout, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-out", out, "-progress", "never")
			if code != 0 {
				t.Fatalf("report exited %d:\n%s\n%s", code, stdout, stderr)
			}
			b, err := os.ReadFile(filepath.Join(out, report.FileMetrics))
			if err != nil {
				t.Fatal(err)
			}
			var doc report.Document
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if got := doc.Model(report.GRUGCN) != nil; got != tc.teacher {
				t.Errorf("report scores a GRU-GCN: %v, want %v\n%s", got, tc.teacher, stderr)
			}
			if tc.inStderr != "" && !strings.Contains(stderr, tc.inStderr) {
				t.Errorf("stderr does not say %q:\n%s", tc.inStderr, stderr)
			}
		})
	}
}
