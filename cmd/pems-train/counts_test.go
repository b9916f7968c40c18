package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/snapshot"
)

func TestDescribePart(t *testing.T) {
	for _, tc := range []struct {
		part  snapshot.Part
		nodes int
		want  string
	}{
		{snapshot.Part{Range: snapshot.Range{Start: 5, End: 6}}, 10, "1 snapshot"},
		{snapshot.Part{Range: snapshot.Range{Start: 5, End: 8}}, 10, "3 snapshots"},
		{snapshot.Part{Range: snapshot.Range{Start: 5, End: 6}, Nodes: []int{2, 4}}, 10, "1 snapshot, 2 of 10 sensors"},
	} {
		if got := describePart(tc.part, tc.nodes); got != tc.want {
			t.Errorf("describePart(%+v, %d) = %q, want %q", tc.part, tc.nodes, got, tc.want)
		}
	}
}

func TestDescribeHost(t *testing.T) {
	for _, tc := range []struct {
		cores int
		want  string
	}{
		{1, "box (amd64, 1 core)"},
		{16, "box (amd64, 16 cores)"},
	} {
		if got := describeHost("box", "amd64", tc.cores); got != tc.want {
			t.Errorf("describeHost(%d cores) = %q, want %q", tc.cores, got, tc.want)
		}
	}
}

// TestOneSnapshotSplit checks that the commands say "1 snapshot" and "1
// epoch" of a test split of one snapshot and a teacher of one epoch.
func TestOneSnapshotSplit(t *testing.T) {
	dir := writePeMS08Layout(t, 60)
	tmp := t.TempDir()
	model, bundle := filepath.Join(tmp, "m.model"), filepath.Join(tmp, "m.sdgnn")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"teacher", []string{"teacher", "-dataset", "pems08", "-epochs", "1", "-split", "60,6,1", "-out", model}, "test split (1 snapshot), best epoch 1 of 1:"},
		{"eval", []string{"eval", "-model", model}, "test split (1 snapshot), standard preprocessing"},
		{"eval provenance", []string{"eval", "-model", model}, "(trained 1 epoch, saved epoch 1 "},
		{"export", []string{"export", "-model", model, "-what", "predictions", "-out", filepath.Join(tmp, "p.arrow")}, "(test split, 1 snapshot) to "},
		{"distill", []string{"distill", "-teacher", model, "-out", bundle, "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0"}, "test split (1 snapshot):"},
		{"report", []string{"report", "-model", bundle, "-out", filepath.Join(tmp, "r"), "-chunks", "1", "-progress", "never"}, "test split (1 snapshot) in "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, append(tc.args[:1:1], append([]string{"-data", dir}, tc.args[1:]...)...)...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, tc.want) {
				t.Errorf("stdout:\n%s\nwant it to contain %q", stdout, tc.want)
			}
		})
	}
}
