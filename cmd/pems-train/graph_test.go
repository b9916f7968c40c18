package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/teacher"
)

// dropGraph writes to dst the model file or bundle src without the
// fingerprint of its road graph, as files written before they were kept
// are.
func dropGraph(t *testing.T, src, dst string) {
	t.Helper()
	f, err := checkpoint.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	if meta["graph"] == nil {
		t.Fatalf("%s records no graph to drop", src)
	}
	delete(meta, "graph")
	if f.Meta, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteFile(dst, f); err != nil {
		t.Fatal(err)
	}
}

// TestGraphFingerprintChecked trains a teacher and distils a bundle on a
// PeMS08-layout directory, then puts another road graph in its place (a
// ring with chords: as many nodes, other links): every command that loads
// either file with the graph (eval, eval -against, distill, export,
// report, teacher -resume) refuses it, naming the model file, the graph
// file and what differs, where before it forecast over the other graph
// without a word. Files that record no graph (written before they were
// kept) are taken with a warning, and a GRU, which reads none, as it is.
func TestGraphFingerprintChecked(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	tmp := t.TempDir()
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-max-batches", "1", "-hidden", "8")
	ds, err := pems.Load(dir, "pems08")
	if err != nil {
		t.Fatal(err)
	}
	want := ds.Graph.Fingerprint(false) // standard preprocessing: every link weighs 1
	if g := saved.Meta.Graph; g == nil || *g != want {
		t.Fatalf("teacher records graph %v, want %v", g, want)
	}
	gru, savedGRU := trainTeacher(t, dir, "-dataset", "pems08", "-model", "gru", "-epochs", "1", "-max-batches", "1", "-hidden", "8")
	if g := savedGRU.Meta.Graph; g != nil {
		t.Fatalf("a GRU, which reads no graph, records graph %v", g)
	}
	bundle := filepath.Join(tmp, "m.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	b, err := sdgnn.LoadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	if g := b.Meta.Graph; g == nil || *g != want {
		t.Fatalf("bundle records graph %v, want %v", g, want)
	}
	oldModel, oldBundle := filepath.Join(tmp, "old.model"), filepath.Join(tmp, "old.sdgnn")
	dropGraph(t, model, oldModel)
	dropGraph(t, bundle, oldBundle)
	for _, m := range []string{model, bundle} {
		if code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", m, "-chunks", "2"); code != 0 || strings.Contains(stderr, "warning") {
			t.Fatalf("eval %s on its own graph: exit %d:\n%s", m, code, stderr)
		}
	}
	state := filepath.Join(tmp, "m.model.state")
	tr, meta, err := teacher.LoadState(writeState(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	meta.Graph = &want
	if err := tr.SaveState(state, meta); err != nil {
		t.Fatal(err)
	}

	// Another graph of PeMS08's 170 nodes: a ring with chords.
	var g strings.Builder
	g.WriteString("from,to,cost\n")
	for i := range 170 {
		fmt.Fprintf(&g, "%d,%d,1.5\n", i, (i+1)%170)
		if i%10 == 0 {
			fmt.Fprintf(&g, "%d,%d,3\n", i, (i+85)%170)
		}
	}
	graphFile := filepath.Join(dir, "pems", "pems08", "distance.csv")
	if err := os.WriteFile(graphFile, []byte(g.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	for _, c := range []struct {
		name string
		file string // the model file the error names
		args []string
	}{
		{"eval teacher", model, []string{"eval", "-model", model}},
		{"eval bundle", bundle, []string{"eval", "-model", bundle}},
		{"eval against teacher", model, []string{"eval", "-model", oldBundle, "-against", model}},
		{"distill", model, []string{"distill", "-teacher", model, "-out", filepath.Join(out, "d.sdgnn"), "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0"}},
		{"export", model, []string{"export", "-model", model, "-what", "predictions", "-out", filepath.Join(out, "p.arrow")}},
		{"report bundle", bundle, []string{"report", "-model", bundle, "-out", filepath.Join(out, "r1"), "-teacher", "none", "-progress", "never"}},
		{"report teacher", model, []string{"report", "-model", oldBundle, "-teacher", model, "-out", filepath.Join(out, "r2"), "-progress", "never"}},
		{"teacher resume", state, []string{"teacher", "-resume", state, "-out", filepath.Join(out, "r.model")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, append([]string{c.args[0], "-data", dir}, c.args[1:]...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr)
			}
			for _, s := range []string{c.file + ": ", "the road graph of pems08 in " + graphFile + " is not the one the model was trained on", "links, want"} {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(out, "d.sdgnn")); err == nil {
		t.Error("distill wrote a bundle against another graph")
	}

	// A GRU reads no graph: its forecasts are the same on any.
	if code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", gru, "-chunks", "2"); code != 0 || stderr != "" {
		t.Errorf("eval of a GRU on another graph: exit %d:\n%s", code, stderr)
	}
	// Files written before fingerprints were kept: taken, with a warning.
	for _, m := range []string{oldModel, oldBundle} {
		code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", m, "-chunks", "2")
		if code != 0 || !strings.Contains(stderr, m+" records no fingerprint of its road graph") || !strings.Contains(stderr, graphFile) {
			t.Errorf("eval %s without a fingerprint: exit %d, want 0 and a warning:\n%s", m, code, stderr)
		}
	}
}
