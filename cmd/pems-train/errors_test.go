package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorLine checks that an error already naming the command is not
// prefixed with it twice.
func TestErrorLine(t *testing.T) {
	for _, tc := range []struct {
		cmd, what string
		err       error
		want      string
	}{
		{"report", "", errors.New("report: the GRU baseline is a gru-gcn model, want gru"), "pems-train report: the GRU baseline is a gru-gcn model, want gru"},
		{"distill", "", errors.New("distill: no round reached the final budget 6"), "pems-train distill: no round reached the final budget 6"},
		{"report", "interrupted: ", errors.New("report: replay: context canceled"), "pems-train report: interrupted: replay: context canceled"},
		{"eval", "", errors.New("-model: load model: checkpoint: truncated"), "pems-train eval: -model: load model: checkpoint: truncated"},
		{"report", "", errors.New("reporter: x"), "pems-train report: reporter: x"},
		{"teacher", "", errors.New("report: x"), "pems-train teacher: report: x"},
	} {
		if got := errorLine(tc.cmd, tc.what, tc.err); got != tc.want {
			t.Errorf("errorLine(%q, %q, %q) = %q, want %q", tc.cmd, tc.what, tc.err, got, tc.want)
		}
	}
}

// TestModelFlagErrors checks that a model file that cannot be used is
// reported with the flag that named it, and that the report's own errors
// do not repeat "report:".
func TestModelFlagErrors(t *testing.T) {
	dir := writePeMS08Layout(t, 60)
	model, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1")
	bundle := filepath.Join(t.TempDir(), "m.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0"); code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	nope := filepath.Join(dir, "nope.model")
	out := filepath.Join(t.TempDir(), "r")
	for _, tc := range []struct {
		name   string
		before func() // run before the command
		args   []string
		want   []string // in stderr
	}{
		{"report model", nil, []string{"report", "-model", nope, "-out", out}, []string{"pems-train report: -model: load bundle: "}},
		{"report teacher", nil, []string{"report", "-model", bundle, "-teacher", nope, "-out", out}, []string{"pems-train report: -teacher: load model: "}},
		{"report bundle as teacher", nil, []string{"report", "-model", bundle, "-teacher", bundle, "-out", out}, []string{"pems-train report: -teacher: load model " + bundle + `: file holds a "sdgnn-bundle"`}},
		{"report teacher1", nil, []string{"report", "-model", bundle, "-teacher1", nope, "-out", out}, []string{"pems-train report: -teacher1: load model: "}},
		{"report gru", nil, []string{"report", "-model", bundle, "-gru", nope, "-out", out}, []string{"pems-train report: -gru: load model: "}},
		{"report GRU-GCN as gru", nil, []string{"report", "-model", bundle, "-gru", model, "-out", out}, []string{"pems-train report: the GRU baseline is a gru-gcn model, want gru"}},
		{"distill teacher", nil, []string{"distill", "-teacher", nope}, []string{"pems-train distill: -teacher: load model: "}},
		{"eval model", nil, []string{"eval", "-model", nope}, []string{"pems-train eval: -model: load model: "}},
		{"export model", nil, []string{"export", "-model", nope, "-out", filepath.Join(dir, "x.arrow")}, []string{"pems-train export: -model: load model: "}},
		{"teacher resume", nil, []string{"teacher", "-resume", filepath.Join(dir, "nope.state")}, []string{"pems-train teacher: -resume: load training state: "}},
		// Last: it spoils the teacher the bundle names.
		{"report the bundle's teacher", func() {
			if err := os.WriteFile(model, []byte("PEMSMODL\x01\x00"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"report", "-model", bundle, "-out", out}, []string{"pems-train report: the bundle's teacher: load model: " + model + ": ", "(give -teacher FILE, or -teacher none)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			code, _, stderr := runCmd(t, append(tc.args[:1:1], append([]string{"-data", dir}, tc.args[1:]...)...)...)
			if code != 1 || strings.Contains(stderr, "report: report:") {
				t.Errorf("exit %d (want 1), stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr:\n%s\nwant it to contain %q", stderr, w)
				}
			}
		})
	}
}
