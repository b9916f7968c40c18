package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/sdgnn"
)

// TestDistillThenEvalBundle distils a two-epoch teacher on the PeMS08-layout
// directory with a tiny schedule and evaluates the bundle with eval -json.
func TestDistillThenEvalBundle(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "2")
	bundle := filepath.Join(t.TempDir(), "m.sdgnn")
	code, stdout, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "6", "-budget-start", "8", "-budget-every", "2", "-theta-every", "2", "-finetune", "1")
	if code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "mean receptive field") || !strings.Contains(stderr, "round") {
		t.Fatalf("distill output:\n%s\n%s", stdout, stderr)
	}
	distilled := stdout
	code, stdout, stderr = runCmd(t, "eval", "-data", dir, "-model", bundle, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "sdgnn" || res.Receptive <= 0 || res.Receptive > 6 || res.Report.Overall.Count == 0 {
		t.Fatalf("bundle eval: kind %q receptive %g count %d", res.Kind, res.Receptive, res.Report.Overall.Count)
	}
	if tr := res.Trained; tr.Teacher != model || tr.Rounds < 1 || tr.Budget != 6 || tr.Epochs != 0 ||
		!regexp.MustCompile(`^sdgnn-pems08-[0-9a-f]{12}$`).MatchString(tr.Version) {
		t.Fatalf("bundle eval trained = %+v, want teacher %s, rounds, budget 6 and a version from the parameters", tr, model)
	}
	if d := res.Trained.Digest; len(d) != 64 || !strings.HasSuffix(res.Trained.Version, "-"+d[:12]) {
		t.Errorf("bundle eval: digest %q, version %q: want the version to end in the digest's first 12 digits", d, res.Trained.Version)
	}
	if !strings.Contains(distilled, "(version "+res.Trained.Version+")") {
		t.Errorf("distill did not print the bundle's version %s:\n%s", res.Trained.Version, distilled)
	}
	named := filepath.Join(t.TempDir(), "named.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", named, "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0", "-version", "ops-2026-11"); code != 0 {
		t.Fatalf("distill -version exited %d:\n%s", code, stderr)
	}
	if b, err := sdgnn.LoadBundle(named); err != nil {
		t.Fatal(err)
	} else if b.Meta.Version != "ops-2026-11" {
		t.Fatalf("distill -version ops-2026-11: bundle version %q", b.Meta.Version)
	}
	code, stdout, _ = runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res.Receptive <= 1 || len(res.Trained.Digest) != 64 {
		t.Fatalf("teacher eval: code %d, err %v, receptive %g, digest %q", code, err, res.Receptive, res.Trained.Digest)
	}
	// export takes a teacher: given the bundle, it says where a bundle's
	// forecasts come from.
	if code, _, stderr := runCmd(t, "export", "-data", dir, "-what", "predictions", "-model", bundle, "-out", filepath.Join(t.TempDir(), "p.arrow")); code != 1 || !strings.Contains(stderr, "is an SDGNN bundle: export takes a teacher's .model; a bundle's forecasts are written by pems-train eval -model "+bundle+" -predictions F.arrow") {
		t.Fatalf("export of a bundle: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-budget", "0"); code != 2 || !strings.Contains(stderr, "budget") {
		t.Fatalf("bad budget: exit %d, %s", code, stderr)
	}

	// The bundle against its teacher: the teacher's figures are eval's own,
	// and the test covers every test snapshot.
	teacherMAE := res.Report.Overall.MAE
	code, stdout, stderr = runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", model, "-json")
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil {
		t.Fatalf("eval -against: code %d, err %v\n%s", code, err, stderr)
	}
	a := res.Against
	if a == nil || a.Kind != "gru-gcn" || a.Overall.MAE != teacherMAE || a.DM.N != res.Range.Len() || !(a.DM.P >= 0 && a.DM.P <= 1) || (a.DM.Stat < 0) != (a.DM.Mean < 0) {
		t.Fatalf("eval -against: %+v (teacher MAE %g)", a, teacherMAE)
	}
	code, stdout, _ = runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", model)
	if code != 0 || !strings.Contains(stdout, "Diebold–Mariano over") || !strings.Contains(stdout, "against gru-gcn") {
		t.Fatalf("eval -against, text: code %d\n%s", code, stdout)
	}
	other, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-window", "6")
	if code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", other); code != 1 || !strings.Contains(stderr, "not the same snapshots") {
		t.Fatalf("eval -against a model of another window: exit %d, %s", code, stderr)
	}
	// Another split with the same test part is compared on it; one whose
	// test part differs is not.
	for _, tc := range []struct {
		split string
		code  int
	}{{"7,1,2", 0}, {"5,2,3", 1}} {
		other, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-split", tc.split)
		code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", other)
		if code != tc.code || (code == 0) != strings.Contains(stdout, "Diebold–Mariano over") || (code != 0) != strings.Contains(stderr, "its test part is not the same snapshots") {
			t.Errorf("eval -against a model of split %s: exit %d (want %d)\n%s%s", tc.split, code, tc.code, stdout, stderr)
		}
	}
}
