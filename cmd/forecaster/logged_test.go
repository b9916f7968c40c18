package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// processLog is the JSON log (-log-json) of a forecaster process, read
// line by line from its standard error as the process runs, however
// little of it the test reads: a process never blocks on its log.
type processLog struct {
	t   *testing.T
	ctx context.Context

	mu    sync.Mutex
	seen  []map[string]any
	next  int      // the first line of seen that wait has not looked at
	plain []string // the lines that are not JSON

	more chan struct{} // a token once lines were added
	done chan struct{} // closed once the log has ended and the process was waited for
	err  error         // cmd.Wait's, once done is closed
}

// startLogged starts cmd, which logs JSON to its standard error, and
// returns its log; lines that are not JSON go to t.Log, and with
// $SERVE_TEST_LOG set every line goes to the test's standard error as it
// comes. The process is killed, if it still runs, when the test ends. ctx
// bounds every wait for a line.
func startLogged(ctx context.Context, t *testing.T, cmd *exec.Cmd) *processLog {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	l := &processLog{t: t, ctx: ctx, more: make(chan struct{}, 1), done: make(chan struct{})}
	echo := os.Getenv("SERVE_TEST_LOG") != ""
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if echo {
				fmt.Fprintln(os.Stderr, sc.Text())
			}
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				t.Logf("%s: %s", cmd.Args[0], sc.Text())
				l.mu.Lock()
				l.plain = append(l.plain, sc.Text())
				l.mu.Unlock()
				continue
			}
			l.mu.Lock()
			l.seen = append(l.seen, m)
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
		// Wait only once the pipe is read to its end (os/exec's rule).
		l.err = cmd.Wait()
		close(l.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-l.done
	})
	return l
}

// wait returns the next line whose message is msg, failing the test if
// the process's log ends, or ctx, first.
func (l *processLog) wait(msg string) map[string]any {
	l.t.Helper()
	return l.waitAll(msg)[msg]
}

// waitAll waits for a line of each message, in any order, and returns the
// last of each seen.
func (l *processLog) waitAll(msgs ...string) map[string]map[string]any {
	l.t.Helper()
	got := map[string]map[string]any{}
	for {
		ended := false
		select {
		case <-l.done:
			ended = true // every line is in seen
		default:
		}
		l.mu.Lock()
		for ; l.next < len(l.seen) && len(got) < len(msgs); l.next++ {
			for _, msg := range msgs {
				if l.seen[l.next]["message"] == msg {
					got[msg] = l.seen[l.next]
				}
			}
		}
		l.mu.Unlock()
		switch {
		case len(got) == len(msgs):
			return got
		case ended:
			l.t.Fatalf("the process exited (%v) before logging %q; logged %d of them", l.err, msgs, len(got))
		}
		select {
		case <-l.more:
		case <-l.done:
		case <-l.ctx.Done():
			l.t.Fatalf("no log line %q in time; logged %d of them", msgs, len(got))
		}
	}
}

// plainLines returns the lines so far that are not JSON: none, where
// -log-json keeps its promise.
func (l *processLog) plainLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.plain...)
}

// exit waits for the process to end and returns how it ended.
func (l *processLog) exit() error {
	<-l.done
	return l.err
}
