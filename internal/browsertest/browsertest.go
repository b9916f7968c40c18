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
	"strings"
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

// Page is what a headless browser left of a page: its DOM as serialised
// once the page's virtual time was spent, and the messages of its
// console (console.log and the like, and the browser's own reports, such
// as a Content-Security-Policy violation), in order.
type Page struct {
	DOM     string
	Console []string
}

// DumpDOM loads url in headless browser, lets its scripts run for budget
// of virtual time (timers fire as they would in that much time, without
// the wait), and returns the DOM as serialised then. A console message
// reporting a Content-Security-Policy violation (an inline style
// attribute or event handler the page's policy refuses, say) fails the
// test: a page so blocked may still serialise as if it worked. See Load.
func DumpDOM(ctx context.Context, t testing.TB, browser, url string, budget time.Duration) string {
	t.Helper()
	p := Load(ctx, t, browser, url, budget)
	for _, v := range CSPViolations(p.Console) {
		t.Errorf("%s: %s", url, v)
	}
	return p.DOM
}

// Load is DumpDOM without the check of the console: it returns the page's
// DOM and console messages. The browser and its helper processes (one
// process group) are killed when ctx ends, after 60 seconds, or once it
// returns. A browser that fails fails the test, with the tail of what it
// wrote to stderr.
func Load(ctx context.Context, t testing.TB, browser, url string, budget time.Duration) Page {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	profile := t.TempDir()
	// --enable-logging=stderr writes the console's messages to stderr,
	// one line each: [pid:tid:time:INFO:CONSOLE:line] "text", source: ...
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--user-data-dir="+profile, "--enable-logging=stderr", "--v=0",
		"--virtual-time-budget="+strconv.FormatInt(budget.Milliseconds(), 10), "--dump-dom", url)
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
	return Page{DOM: stdout.String(), Console: consoleMessages(stderr.Bytes())}
}

// consoleMarker starts a console message in Chromium's log.
var consoleMarker = []byte(":CONSOLE")

// consoleMessages returns the console messages of Chromium's log: the
// text after the "[...:INFO:CONSOLE:line] " prefix of each line that has
// one.
func consoleMessages(log []byte) []string {
	var out []string
	for line := range bytes.Lines(log) {
		i := bytes.Index(line, consoleMarker)
		if i < 0 || line[0] != '[' {
			continue
		}
		j := bytes.IndexByte(line[i:], ']')
		if j < 0 {
			continue
		}
		out = append(out, string(bytes.TrimSpace(line[i+j+1:])))
	}
	return out
}

// CSPViolations returns the messages of console that report a
// Content-Security-Policy violation ("... violates the following Content
// Security Policy directive ...", or "Refused to ..." of older versions).
func CSPViolations(console []string) []string {
	var out []string
	for _, m := range console {
		if strings.Contains(m, "Content Security Policy") || strings.Contains(m, "Refused to") {
			out = append(out, m)
		}
	}
	return out
}
