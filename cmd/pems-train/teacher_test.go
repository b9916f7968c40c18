package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTeacherDefaultOutWhereNothingIsWritten checks that teacher's default
// output (runs/DATASET-MODEL.model, beside the current directory) is
// probed before the training as an -out given is: runs leading where no
// file can be made (/proc, which even root cannot write) failed only when
// the model trained was saved.
func TestTeacherDefaultOutWhereNothingIsWritten(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	cwd := t.TempDir()
	if err := os.Symlink("/proc", filepath.Join(cwd, "runs")); err != nil {
		t.Skip(err)
	}
	t.Chdir(cwd)
	code, stdout, stderr := runCmd(t, "teacher", "-data", dir, "-dataset", "pems08", "-epochs", "1", "-batch", "16")
	want := "-out " + filepath.Join("runs", "pems08-gru-gcn.model") + ": cannot write in runs"
	if code != 2 || !strings.Contains(stderr, want) || strings.Contains(stdout, "overall") {
		t.Errorf("exit %d (want 2), stdout:\n%s\nstderr:\n%s\nwant it to contain %q, before any training", code, stdout, stderr, want)
	}
}
