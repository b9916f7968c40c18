// Package interrupt gives the commands their handling of Ctrl-C and
// SIGTERM: the first asks for a clean stop, a second ends the process.
package interrupt

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Notice is what the first signal is told with.
const Notice = "stopping; a second Ctrl-C or SIGTERM stops at once"

// Context returns a context cancelled by the first Ctrl-C or SIGTERM, and
// the function that releases it, which the caller must call (defer) before
// returning. After the first signal the handlers are removed, so that a
// second takes the signal's default action and ends the process at once;
// name says so on stderr ("name: " Notice).
func Context(name string, stderr io.Writer) (ctx context.Context, release func()) {
	return ContextFunc(func(msg string) { fmt.Fprintf(stderr, "%s: %s\n", name, msg) })
}

// ContextFunc is Context telling of the first signal by calling notice
// with Notice, from another goroutine, instead of writing to stderr: a
// command whose log is JSON logs it as a JSON line. release waits for the
// watcher, so that notice is not called after it returns and a context
// cancelled on the way out is not taken for a signal.
func ContextFunc(notice func(msg string)) (ctx context.Context, release func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done, watched := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			stop()
			notice(Notice)
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		<-watched
		stop()
	}
}
