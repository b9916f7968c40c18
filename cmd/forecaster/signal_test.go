package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/interrupt"
)

// TestServeSIGHUPWhileStarting sends serve SIGHUP while it is still
// reading its model (a FIFO, so that the test knows when): a SIGHUP then,
// as an operator or a file watcher sends right after replacing the model,
// must not kill it (the default action of SIGHUP), but read the model
// again once the service runs; SIGTERM then stops it with exit status 0.
func TestServeSIGHUPWhileStarting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	_, _, _, b := szTaxiBundle(t, 12, 8)
	tmp := t.TempDir()
	saved := filepath.Join(tmp, "saved.sdgnn")
	if err := b.Save(saved); err != nil {
		t.Fatal(err)
	}
	model, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(tmp, "b.sdgnn")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)
	bin := buildForecaster(t, t.TempDir())
	cmd := bin.command("serve", "-model", fifo, "-brokers", emb.Addr, "-log-json", "-http", "")
	log := startLogged(ctx, t, cmd)
	// feed writes the model into the FIFO once serve opens it to read.
	// The open returns once serve has opened it: serve is then loading
	// its model.
	feed := func(between func()) error {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if between != nil {
			between()
		}
		if _, err := f.Write(model); err != nil {
			return fmt.Errorf("write the model: %w", err)
		}
		return f.Close()
	}
	if err := feed(func() {
		cmd.Process.Signal(syscall.SIGHUP)
		time.Sleep(100 * time.Millisecond) // delivered before the load ends
	}); err != nil {
		t.Fatalf("%v; serve: %v", err, log.exit())
	}
	// The reload waits for the FIFO while the service starts.
	if m := log.wait("reloading the model"); m["by"] != "SIGHUP" {
		t.Errorf("reload logged %v, want by SIGHUP", m)
	}
	if err := feed(nil); err != nil {
		t.Fatal(err)
	}
	log.waitAll("model reloaded", "consuming")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := log.exit(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
	// The stop is told in the log, as JSON like every other line.
	log.wait(interrupt.Notice)
	if plain := log.plainLines(); len(plain) > 0 {
		t.Errorf("serve -log-json wrote lines that are not JSON: %q", plain)
	}
}

// TestSecondSignalStopsAtOnce stops serve while it is stuck (reading its
// model from a FIFO that gives nothing): the first SIGTERM asks for a
// clean stop, which waits for the read; a second must end the process at
// once, as an operator pressing Ctrl-C again expects, where it was caught
// and ignored.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	fifo := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	bin := buildForecaster(t, t.TempDir())
	cmd := bin.command("serve", "-model", fifo, "-brokers", "127.0.0.1:1", "-http", "")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGKILL) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The open returns once serve has opened the FIFO to read its model.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		t.Fatalf("serve ended on the first SIGTERM while reading its model (%v); the test needs it stuck", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("after the second SIGTERM serve ended with %v, want killed by SIGTERM", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10 s after a second SIGTERM")
	}
}

// TestNoStopMessageWithoutSignal checks that a command ending by itself
// does not say it is stopping: the signal watcher must end with run, not
// see the context run cancels on its way out as a signal (it did, about
// one run in two, writing to stderr after run returned).
func TestNoStopMessageWithoutSignal(t *testing.T) {
	for range 200 {
		var stdout, stderr strings.Builder
		if code := run([]string{"serve", "-no-such-flag"}, &stdout, &stderr); code != 2 {
			t.Fatalf("exit %d, want 2", code)
		}
		time.Sleep(time.Millisecond) // a watcher left running would write now
		if strings.Contains(stderr.String(), "stopping") {
			t.Fatalf("a run that ended by itself said: %s", stderr.String())
		}
	}
}
