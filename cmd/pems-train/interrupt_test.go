package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestInterruptSavesResumableState runs the real binary, interrupts it with
// SIGINT after its first epoch, and checks that it exits 130 with a training
// state that a second run resumes to a finished model.
func TestInterruptSavesResumableState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "pems-train")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := writePeMS08Layout(t, 120)
	model := filepath.Join(t.TempDir(), "m.model")
	cmd := exec.Command(bin, "teacher", "-data", dir, "-dataset", "pems08", "-epochs", "400", "-patience", "400", "-batch", "8", "-out", model, "-log-json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log []string
	sent := false
	for sc.Scan() {
		log = append(log, sc.Text())
		if !sent && strings.Contains(sc.Text(), `"message":"epoch"`) {
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			sent = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("interrupted run ended with %v, want exit %d; log:\n%s", err, exitInterrupted, strings.Join(log, "\n"))
	}
	// -log-json keeps to JSON lines to the end: the stop notice and the
	// closing "interrupted" line too (plain text before).
	closing := false
	for _, l := range log {
		if !json.Valid([]byte(l)) {
			t.Errorf("-log-json run wrote a line that is not JSON: %q", l)
		}
		closing = closing || strings.Contains(l, `"level":"error"`) && strings.Contains(l, "pems-train teacher: interrupted: ")
	}
	if !closing {
		t.Errorf("no closing error line in the log:\n%s", strings.Join(log, "\n"))
	}
	state := model + ".state"
	tr, meta, err := teacher.LoadState(state)
	if err != nil {
		t.Fatalf("state after interrupt: %v", err)
	}
	if tr.Epoch < 1 || tr.Epoch >= 400 || meta.Dataset != "pems08" {
		t.Fatalf("state: epoch %d, dataset %q", tr.Epoch, meta.Dataset)
	}

	// A resume that contradicts the state is a usage error and leaves it.
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-dataset", "pems04"}, "-dataset pems04, but " + state + " was trained on pems08"},
		{[]string{"-hidden", "8", "-noise", "0.1"}, "[-hidden -noise] cannot change on -resume"},
		{[]string{"-epochs", "-1"}, "max epochs -1: must be at least 1"},
		{[]string{"-patience", "0"}, "patience 0: must be at least 1"},
	} {
		args := append([]string{"teacher", "-data", dir, "-resume", state, "-out", model}, bad.args...)
		if code, _, stderr := runCmd(t, args...); code != 2 || !strings.Contains(stderr, bad.want) {
			t.Fatalf("%v: exit %d (want 2), stderr:\n%s\nwant it to contain %q", bad.args, code, stderr, bad.want)
		}
	}
	if again, _, err := teacher.LoadState(state); err != nil || again.Epoch != tr.Epoch {
		t.Fatalf("state after refused resumes: %v", err)
	}

	// Resume with a short limit so that it finishes.
	done := make(chan error, 1)
	// Without -out, the model file whose state it is.
	resume := exec.Command(bin, "teacher", "-data", dir, "-resume", state, "-epochs", "3", "-dataset", "PeMS08") // the dataset named in any case
	go func() {
		out, err := resume.CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
	case <-time.After(2 * time.Minute):
		resume.Process.Kill()
		t.Fatal("resume did not finish")
	}
	saved, err := teacher.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	if want := max(3, tr.Epoch); saved.Meta.Epochs != want {
		t.Fatalf("resumed model ran %d epochs, want %d (state had %d, limit 3)", saved.Meta.Epochs, want, tr.Epoch)
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state file gone: %v", err)
	}
}

// writeState writes the training state of a GRU-GCN on the PeMS08-layout
// directory dir before its first epoch, as an interrupted teacher run
// leaves one, and returns its path (OUT.model.state).
func writeState(t *testing.T, dir string) string {
	t.Helper()
	p, err := snapshot.PrepareFit(dir, "pems08", 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, snapshot.PrepStandard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := teacher.Config{Kind: teacher.KindGRUGCN, Window: 12, Channels: p.Set.Channels, Hidden: 4, NoiseStd: 0.05, Seed: 1, Layers: 2}
	m, err := teacher.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc := teacher.DefaultTrain()
	tc.MaxBatches = 1
	tr, err := teacher.NewTrainer(m, tc)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "m.model.state")
	meta := teacher.Meta{Config: cfg, Norm: p.Set.Norm, Dataset: "pems08", Nodes: p.Set.Nodes, Channels: p.Dataset.Info.Channels, Split: p.Split, Train: tc}
	if err := tr.SaveState(state, meta); err != nil {
		t.Fatal(err)
	}
	return state
}

// TestResumeTakesReportFlags checks that -mape-floor, which only the final
// test report reads (the state holds no floor), may be given on -resume, as
// -chunks may: the command that was interrupted had it, and the resumed
// run's report should leave the same truths out of MAPE.
func TestResumeTakesReportFlags(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	state := writeState(t, dir)
	code, _, stderr := runCmd(t, "teacher", "-data", dir, "-resume", state, "-epochs", "1", "-mape-floor", "1", "-chunks", "2")
	if code != 0 {
		t.Fatalf("resume with -mape-floor 1 -chunks 2: exit %d, stderr:\n%s", code, stderr)
	}
}

// TestInterruptHintKeepsReportFlags checks that the command an interrupted
// teacher run names to resume it repeats the final report's flags given
// (-mape-floor, -chunks), which the state does not hold: the hint without
// them resumed into a report counting SZ-taxi's near-zero speeds in MAPE.
func TestInterruptHintKeepsReportFlags(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model := filepath.Join(t.TempDir(), "m.model")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // interrupted before its first batch
	var stdout, stderr bytes.Buffer
	err := cmdTeacher(ctx, []string{"-data", dir, "-dataset", "pems08", "-epochs", "2", "-out", model,
		"-mape-floor", "1", "-chunks", "2", "-log-json"}, &stdout, &stderr)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled; log:\n%s", err, stderr.String())
	}
	want := "resume with: pems-train teacher -resume " + model + ".state -out " + model + " -chunks 2 -mape-floor 1"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("log:\n%s\nwant the hint %q", stderr.String(), want)
	}
}
