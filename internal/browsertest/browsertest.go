//go:build unix

// Package browsertest finds Debian's Chromium and loads a page in it
// headless, returning the DOM its scripts leave, for tests of the live
// view. Without Chromium a test skips, unless SDGNN_REQUIRE_BROWSER=1
// (as CI sets), where it fails.
package browsertest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Find returns Debian's chromium (or chromium-browser) from PATH. Without
// one it skips the test, or fails it when SDGNN_REQUIRE_BROWSER=1; with
// -short it skips too, as a browser takes seconds to start.
func Find(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs a headless browser")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium or chromium-browser on PATH (Debian: apt-get install chromium)"
	if os.Getenv("SDGNN_REQUIRE_BROWSER") == "1" {
		t.Fatal(msg + "; SDGNN_REQUIRE_BROWSER=1 requires it")
	}
	t.Skip(msg)
	return ""
}

// DumpDOM loads url in headless browser, lets its scripts run for budget
// of virtual time (timers fire as they would in that much time, without
// the wait), and returns the DOM as serialised then. The browser and its
// helper processes (one process group) are killed when ctx ends, after
// 60 seconds, or once it returns. A browser that fails fails the test,
// with the tail of what it wrote to stderr.
func DumpDOM(ctx context.Context, t testing.TB, browser, url string, budget time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10), "--dump-dom", url)
	cmd.Env = append(os.Environ(), "HOME="+profile)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	if cmd.Process != nil {
		// Helpers the browser left behind, if any (ESRCH when none).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		tail := stderr.String()
		if len(tail) > 3000 {
			tail = "…" + tail[len(tail)-3000:]
		}
		t.Fatalf("%s --dump-dom %s: %v (after %v)\nstderr (tail): %s", browser, url, err, time.Since(began), tail)
	}
	t.Logf("%s: DOM of %s dumped in %v", filepath.Base(browser), url, time.Since(began).Round(time.Millisecond))
	return stdout.String()
}
