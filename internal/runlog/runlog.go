// Package runlog says a command's closing words, the notice of the first
// Ctrl-C or SIGTERM and the error the run ends with, as plain text on
// stderr until the command has its logger, then as lines of that log, so
// that the stderr of a run with JSON logs stays JSON lines to its end and
// a log pipeline parses the reason a run stopped.
package runlog

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// Notes is one run's closing words. Its methods are safe for concurrent
// use: the stop notice comes from the signal watcher's goroutine.
type Notes struct {
	prefix string
	stderr io.Writer
	log    atomic.Pointer[logger]
}

type logger struct {
	l    zerolog.Logger
	json bool
}

// New returns the notes of a run that writes to stderr, the stop notice
// in plain text prefixed by "prefix: ".
func New(prefix string, stderr io.Writer) *Notes {
	return &Notes{prefix: prefix, stderr: stderr}
}

// Use makes l the log of n's words from now on: the stop notice always
// (an Info line), the closing error only where json says l writes JSON
// (a console log's lines already read as text).
func (n *Notes) Use(l zerolog.Logger, json bool) {
	n.log.Store(&logger{l, json})
}

// Say tells of the first signal (interrupt.ContextFunc's notice).
func (n *Notes) Say(msg string) {
	if lg := n.log.Load(); lg != nil {
		lg.l.Info().Msg(msg)
		return
	}
	fmt.Fprintf(n.stderr, "%s: %s\n", n.prefix, msg)
}

// Fail writes line, the error the run ends with, as an Error line of a
// JSON log, or else as it is.
func (n *Notes) Fail(line string) {
	if lg := n.log.Load(); lg != nil && lg.json {
		lg.l.Error().Msg(line)
		return
	}
	fmt.Fprintln(n.stderr, line)
}

type key struct{}

// NewContext returns ctx carrying n, for the command that gets its logger
// (Use).
func NewContext(ctx context.Context, n *Notes) context.Context {
	return context.WithValue(ctx, key{}, n)
}

// Use makes l the log of the words of ctx's run (see Notes.Use); without
// notes in ctx it does nothing.
func Use(ctx context.Context, l zerolog.Logger, json bool) {
	if n, ok := ctx.Value(key{}).(*Notes); ok {
		n.Use(l, json)
	}
}
