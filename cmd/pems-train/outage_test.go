package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestEvalOutage runs eval -json -outage on a small GRU-GCN: the scenario
// is recorded, each length has a pass whose silenced forecasts are those
// the scenario marks, a second run gives the same figures to the bit (the
// simulation is seeded), the clean report's breakdown counts every scored
// forecast once, and a run without -outage has no outage passes.
func TestEvalOutage(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-batch", "16")
	const scenario = "share=0.3,len=2:12,seed=4"
	evalJSON := func(args ...string) evalResult {
		t.Helper()
		code, stdout, stderr := runCmd(t, append([]string{"eval", "-data", dir, "-model", model, "-json"}, args...)...)
		if code != 0 {
			t.Fatalf("eval %v exited %d:\n%s", args, code, stderr)
		}
		var res evalResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := evalJSON("-outage", scenario)
	if res.Outage != scenario || len(res.Outages) != 2 || res.Outages[0].Length != 2 || res.Outages[1].Length != 12 {
		t.Fatalf("outage %q with passes %+v", res.Outage, res.Outages)
	}
	o, err := snapshot.ParseOutage(scenario)
	if err != nil {
		t.Fatal(err)
	}
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SpecOf(saved.Meta.Split), &saved.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, m := range o.Marks(p.Split.Test.Snapshots(), p.Set.Nodes) {
		if m {
			marked++
		}
	}
	clean := res.Report.Completeness
	if clean == nil || clean.Silenced != nil || clean.Joint == nil {
		t.Fatalf("clean breakdown %+v: want classes by the receptive sensors and no outage", clean)
	}
	var n int
	for _, c := range clean.Own {
		n += c.Metrics.Count
	}
	if n != res.Report.Overall.Count {
		t.Errorf("classes count %d forecasts, the report %d", n, res.Report.Overall.Count)
	}
	for _, ps := range res.Outages {
		b := ps.Report.Completeness
		if b == nil || b.Silenced == nil || b.Unsilenced == nil {
			t.Fatalf("pass of %d: breakdown %+v", ps.Length, b)
		}
		// Three channels, one made-up reading missing: about 3 per silenced sensor.
		if got := b.Silenced.Count; got < 3*marked-3 || got > 3*marked {
			t.Errorf("pass of %d: %d silenced pairs, the scenario marks %d sensors of 3 channels", ps.Length, got, marked)
		}
		if ps.Length == 12 && b.Own[evaluation.OwnWhole].Metrics.Count < b.Silenced.Count {
			t.Errorf("whole-window pass: %d whole-window forecasts, %d silenced", b.Own[evaluation.OwnWhole].Metrics.Count, b.Silenced.Count)
		}
	}
	if s2, s12 := res.Outages[0].Report.Completeness.Silenced, res.Outages[1].Report.Completeness.Silenced; s2.Count != s12.Count || s2.MAE == s12.MAE {
		t.Errorf("silenced for 2 and 12 readings: %+v and %+v; want the same forecasts scored otherwise", s2, s12)
	}
	again := evalJSON("-outage", scenario)
	a, _ := json.Marshal(res.Outages)
	b, _ := json.Marshal(again.Outages)
	if string(a) != string(b) {
		t.Error("a second run under the same scenario scored otherwise")
	}
	if plain := evalJSON(); plain.Outage != "" || plain.Outages != nil || math.Float64bits(plain.Report.Overall.MAE) != math.Float64bits(res.Report.Overall.MAE) {
		t.Errorf("without -outage: outage %q, %d passes, MAE %v (with: %v)", plain.Outage, len(plain.Outages), plain.Report.Overall.MAE, res.Report.Overall.MAE)
	}
	code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", model, "-outage", "share=2,len=3")
	if code != 2 || !strings.Contains(stderr, "-outage") {
		t.Errorf("a bad -outage exited %d:\n%s", code, stderr)
	}
}

// TestAwareTeacherDistillEval runs the missing-aware path end to end: a
// GRU-GCN trained with missing marks, a gated skip and outages, a bundle
// distilled on outage targets with silent weights, both evaluated under
// outages; the files record the settings, and a distillation asking for
// silent weights of a teacher without marks is refused.
func TestAwareTeacherDistillEval(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-batch", "16", "-mask-input", "-gate", "-train-outage", "share=0.3,len=1-12,seed=2")
	c := saved.Meta.Config
	if c.MaskInputs != 3 || !c.Gate || !saved.Meta.Norm.Mask || saved.Meta.Train.Outage != "share=0.3,len=1:2:3:4:5:6:7:8:9:10:11:12,seed=2" {
		t.Fatalf("teacher config %+v, norm mask %v, training outages %q", c, saved.Meta.Norm.Mask, saved.Meta.Train.Outage)
	}
	bundle := filepath.Join(t.TempDir(), "aware.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-quick", "-epochs", "12", "-budget-every", "1", "-theta-every", "2", "-out", bundle, "-train-outage", "train", "-silent-weights"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	b, err := sdgnn.LoadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if b.Theta.Silent == nil || !b.Meta.Config.SilentWeights || b.Meta.Config.Outage == "" || !b.Meta.Norm.Mask {
		t.Fatalf("bundle: silent weights %v, config %+v", b.Theta.Silent != nil, b.Meta.Config)
	}
	for _, m := range []string{model, bundle} {
		code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", m, "-json", "-outage", "share=0.2,len=12")
		if code != 0 {
			t.Fatalf("eval %s exited %d:\n%s", m, code, stderr)
		}
		var res evalResult
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Outages) != 1 || res.Outages[0].Report.Completeness.Silenced.Count == 0 {
			t.Errorf("eval %s: outages %+v", m, res.Outages)
		}
		if sw := res.SelfWeight; (m == bundle) != (sw != nil) || sw != nil && (sw.Nodes != 170 || sw.SilentMean == nil || !(sw.Mean > 0 && sw.Mean <= 1)) {
			t.Errorf("eval %s: self weight %+v", m, sw)
		}
	}
	plain, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-batch", "16")
	code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", plain, "-quick", "-epochs", "6", "-out", filepath.Join(t.TempDir(), "x.sdgnn"), "-silent-weights")
	if code != 1 || !strings.Contains(stderr, "missing marks") {
		t.Errorf("silent weights of a teacher without marks: exit %d:\n%s", code, stderr)
	}
}
