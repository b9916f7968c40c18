package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/reproduce"
)

// TestReproduceQuick runs the comparison on the PeMS08-layout directory with
// two seeds and checks that every model of the table is scored, that the
// files are written, and that a second run reuses the saved teachers (same
// GRU-GCN and GRU figures).
func TestReproduceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("trains every model twice")
	}
	dir := writePeMS08Layout(t, 120)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2", "-out", out)
	if code != 0 {
		t.Fatalf("reproduce exited %d:\n%s", code, stderr)
	}
	for _, m := range reproduce.Models {
		if !strings.Contains(stdout, m) {
			t.Errorf("table lacks %s:\n%s", m, stdout)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "table-quick.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []struct {
		Runs []reproduce.Run `json:"runs"`
	}
	if err := json.Unmarshal(raw, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || len(tables[0].Runs) != 2 {
		t.Fatalf("JSON holds %d tables", len(tables))
	}
	first := tables[0].Runs
	for _, r := range first {
		for _, m := range reproduce.Models {
			if v := r.Metrics[m]; !(v.MAE > 0) || math.IsNaN(v.MAPE) {
				t.Errorf("seed %d %s: %+v", r.Seed, m, v)
			}
		}
	}
	if first[0].Metrics[reproduce.GRUGCN] == first[1].Metrics[reproduce.GRUGCN] {
		t.Error("two seeds gave the same teacher")
	}
	both := filepath.Join(t.TempDir(), "both.json")
	if err := os.WriteFile(both, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	// Seed 2 alone, as on a second machine: its teacher is reused.
	if code, _, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2-2", "-out", out); code != 0 {
		t.Fatalf("second reproduce exited %d:\n%s", code, stderr)
	}
	second := filepath.Join(out, "table-quick.json")
	raw, _ = os.ReadFile(second)
	var seed2 []struct {
		Runs []reproduce.Run `json:"runs"`
	} // a new variable: decoding into tables would overwrite first's runs
	if err := json.Unmarshal(raw, &seed2); err != nil {
		t.Fatal(err)
	}
	again := seed2[0].Runs[0]
	if again.Seed != 2 || len(seed2[0].Runs) != 1 {
		t.Fatalf("-seeds 2-2 ran seeds %v", seed2[0].Runs)
	}
	for _, m := range []string{reproduce.GRUGCN, reproduce.GRU} {
		if again.Metrics[m] != first[1].Metrics[m] {
			t.Errorf("%s: reused teacher scored %+v, first run %+v", m, again.Metrics[m], first[1].Metrics[m])
		}
	}
	// Merging: seed 2 twice is refused; seed 1 of the first run with seed
	// 2 of the second gives the table over both.
	if code, _, stderr := runCmd(t, "reproduce", "-merge", both+","+second, "-out", out); code != 1 || !strings.Contains(stderr, "seed 2 is in "+both+" and "+second) {
		t.Errorf("merge with a seed twice: exit %d, %s", code, stderr)
	}
	var full []*reproduce.Table
	raw, _ = os.ReadFile(both)
	if err := json.Unmarshal(raw, &full); err != nil {
		t.Fatal(err)
	}
	full[0].Runs = full[0].Runs[:1]
	one := filepath.Join(t.TempDir(), "seed1.json")
	if raw, err = json.Marshal(full); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(one, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCmd(t, "reproduce", "-merge", second+","+one, "-out", out)
	if code != 0 || !strings.Contains(stdout, "2 seed(s)") {
		t.Fatalf("merge exited %d:\n%s%s", code, stdout, stderr)
	}
	var merged []*reproduce.Table
	// Named after the quick table merged, not a full run's table-merged.
	raw, _ = os.ReadFile(filepath.Join(out, "table-quick-merged.json"))
	if err := json.Unmarshal(raw, &merged); err != nil {
		t.Fatal(err)
	}
	if len(merged) != 1 || len(merged[0].Runs) != 2 || merged[0].Runs[0].Seed != 1 || merged[0].Runs[1].Seed != 2 {
		t.Fatalf("merged table: %+v", merged)
	}
	for _, m := range reproduce.Models {
		a, b := first[0].Metrics[m].MAE, again.Metrics[m].MAE
		mean, std := (a+b)/2, math.Abs(a-b)/math.Sqrt2
		if c := merged[0].Cells[m]; math.Abs(c.MAE-mean) > 1e-12*mean || math.Abs(c.MAEStd-std) > 1e-9*mean {
			t.Errorf("%s: merged MAE %g ± %g, want %g ± %g", m, c.MAE, c.MAEStd, mean, std)
		}
	}
	// A saved teacher trained with other settings is not silently reused.
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "1", "-teacher-epochs", "3", "-out", out)
	if code != 1 || !strings.Contains(stderr, "reuse") || !strings.Contains(stderr, "remove the file") {
		t.Errorf("reuse with other teacher epochs: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "1", "-noise", "0.2", "-out", out)
	if code != 1 || !strings.Contains(stderr, "noise 0.05") || !strings.Contains(stderr, "noise 0.2") {
		t.Errorf("reuse with another teacher noise: exit %d, %s", code, stderr)
	}
	// A run that fails at a later seed (here seed 3's saved teacher is
	// truncated) keeps the table of the seeds it finished.
	good, err := os.ReadFile(filepath.Join(out, "models-quick", "pems08-gru-gcn-seed2.model"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(out, "models-quick", "pems08-gru-gcn-seed3.model")
	if err := os.WriteFile(bad, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2,3", "-out", out)
	if code != 1 || !strings.Contains(stderr, "seed3.model") || !strings.Contains(stderr, "table written") {
		t.Errorf("run with a truncated seed-3 teacher: exit %d, %s", code, stderr)
	}
	var kept []struct {
		Runs []reproduce.Run `json:"runs"`
	}
	raw, _ = os.ReadFile(filepath.Join(out, "table-quick.json"))
	if err := json.Unmarshal(raw, &kept); err != nil || len(kept) != 1 || len(kept[0].Runs) != 1 || kept[0].Runs[0].Seed != 2 {
		t.Errorf("table after the failed seed 3 (%v): %s", err, raw)
	}
}
