package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/stream"
)

// maxBadRowsShown is how many bad rows -bad-rows skip and -dry-run name
// one by one; the rest are counted.
const maxBadRowsShown = 20

// csvJob is publish -csv: a file of readings, checked against what the
// model (or the dataset) takes, then published or only checked.
type csvJob struct {
	path    string // "-" is standard input
	topic   string
	skipBad bool // go on past bad rows rather than stop at the first
	dryRun  bool // check the rows, publish nothing
	// speedup over real time: a row is sent when its ts comes, counted
	// from the first row's, this many times faster (0: at once).
	speedup float64
	// fromLine is the first line read (0 and 2: the first row after the
	// header): a publish that stopped is taken up where it stopped.
	fromLine int
	// what the readings must fit
	dataset  string
	channels []string
	valid    stream.Validator
}

// csvFlags are publish -csv's flags, as given.
type csvFlags struct {
	path, topic, badRows string
	dryRun               bool
	speedup              float64
	fromLine             int
	fromLineSet          bool // -from-line was given
}

// newCSVJob checks publish -csv's flags and resolves what it checks the
// rows against: the bundle's sensors, channels and slot when there is
// one, else the dataset's.
func newCSVJob(f csvFlags, dataset string, b *sdgnn.Bundle) (*csvJob, error) {
	j := &csvJob{path: f.path, topic: f.topic, dryRun: f.dryRun, speedup: f.speedup, fromLine: f.fromLine, dataset: dataset}
	switch f.badRows {
	case "stop":
	case "skip":
		j.skipBad = true
	default:
		return nil, usagef("-bad-rows %q: want stop or skip", f.badRows)
	}
	switch {
	case f.speedup < 0:
		return nil, usagef("-speedup %g: want 0 (as fast as possible) or more", f.speedup)
	case f.dryRun && f.speedup > 0:
		return nil, usagef("-speedup with -dry-run: a dry run sends nothing to pace")
	case f.fromLineSet && f.fromLine < 2:
		return nil, usagef("-from-line %d: want 2 (the first row after the header) or more", f.fromLine)
	}
	info, err := pems.Lookup(dataset)
	if err != nil {
		return nil, usagef("-dataset: %v", err)
	}
	step, err := stepMs(dataset)
	if err != nil {
		return nil, err
	}
	j.channels = info.Channels
	j.valid = stream.Validator{Nodes: info.Nodes, Channels: len(info.Channels), StepMs: step}
	if b != nil {
		j.valid.Nodes, j.valid.Channels = b.Meta.Nodes, len(b.Meta.Norm.Mean)
		if j.valid.Channels != len(info.Channels) {
			return nil, fmt.Errorf("bundle has %d channels, %s names %d (%s)", j.valid.Channels, dataset, len(info.Channels), strings.Join(info.Channels, ", "))
		}
	}
	return j, nil
}

// source opens the job's input, gzip-compressed or not: a file or
// standard input that starts with gzip's magic bytes is read through
// gzip, as exports are often kept.
func (j *csvJob) source(stdin io.Reader) (io.ReadCloser, string, error) {
	var (
		in   io.ReadCloser
		name string
	)
	if j.path == "-" {
		in, name = io.NopCloser(stdin), "standard input"
	} else {
		f, err := os.Open(j.path)
		if err != nil {
			return nil, "", fmt.Errorf("-csv: %w", err)
		}
		in, name = f, j.path
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			in.Close()
			return nil, "", fmt.Errorf("-csv %s: %w", name, err)
		}
		return readCloser{zr, in}, name, nil
	}
	return readCloser{br, in}, name, nil
}

// readCloser reads from one reader and closes another beneath it.
type readCloser struct {
	io.Reader
	io.Closer
}

// badRows counts the rows skipped and names the first maxBadRowsShown.
type badRows struct {
	name string // the input, as errors name it
	n    int
	w    io.Writer
}

func (b *badRows) add(err error) {
	b.n++
	if b.n <= maxBadRowsShown {
		fmt.Fprintf(b.w, "%s: %v\n", b.name, err)
	} else if b.n == maxBadRowsShown+1 {
		fmt.Fprintf(b.w, "%s: more bad rows; only their number is given below\n", b.name)
	}
}

// badRowError is a row that stopped publish -csv -bad-rows stop, and its
// line.
type badRowError struct {
	line int
	err  error
}

func (e *badRowError) Error() string { return e.err.Error() }

// lineRing remembers the lines of the last readings given to
// stream.PublishReadings, so that when it stops, the line of the first
// reading not published can be named. It holds more readings than
// PublishReadings has in hand at a time (a write's and its queue's), and
// is shared between its source goroutine and the caller.
type lineRing struct {
	mu    sync.Mutex
	given int            // readings given
	lines [1 << 14]int32 // lines[i%len] is the line of reading i
}

func (r *lineRing) add(line int) {
	r.mu.Lock()
	r.lines[r.given%len(r.lines)] = int32(line)
	r.given++
	r.mu.Unlock()
}

// resume returns the line to publish again from when the first n readings
// given are published: reading n's, or the line after the last reading
// given when all are.
func (r *lineRing) resume(n int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case n < r.given && r.given-n <= len(r.lines):
		return int(r.lines[n%len(r.lines)])
	case n >= r.given && r.given > 0:
		return int(r.lines[(r.given-1)%len(r.lines)]) + 1
	}
	return 2 // nothing given: from the first row
}

// badCount says how many bad rows there were.
func badCount(n int) string {
	if n == 1 {
		return "1 bad row"
	}
	return fmt.Sprintf("%d bad rows", n)
}

// rowError names where a reading that the Validator refused stands.
func rowError(line int, err error) error {
	reason := stream.ReasonOf(err)
	var re *stream.RejectError
	if errors.As(err, &re) {
		err = errors.New(re.Detail)
	}
	return fmt.Errorf("line %d: %w (%s)", line, err, reason)
}

// run reads the rows, checks each and, unless a dry run, publishes the
// good ones as they come. A bad row stops it (the rows before it are
// published) or, with skipBad, is reported and passed over.
func (j *csvJob) run(ctx context.Context, stdin io.Reader, brokers []string, sec stream.Security, stdout, stderr io.Writer) error {
	in, name, err := j.source(stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	cr, err := stream.NewCSVReader(in, j.channels)
	if err != nil {
		return fmt.Errorf("%s: %w (for %s)", name, err, j.dataset)
	}
	bad := &badRows{name: name, w: stderr}
	checked := 0
	pace := pacer{speedup: j.speedup}
	lines := &lineRing{}
	next := func() (stream.Reading, error) {
		for {
			r, err := cr.Read()
			line := cr.Line()
			var ce *stream.CSVError
			switch {
			case errors.As(err, &ce):
				line = ce.Line
			case err != nil:
				return r, err // io.EOF, or the input failed
			}
			if line < j.fromLine {
				continue
			}
			if err == nil {
				if err = j.valid.Check(r); err == nil {
					checked++
					lines.add(line)
					return r, pace.wait(ctx, r.TS)
				}
				err = rowError(line, err)
			}
			if !j.skipBad && !j.dryRun {
				return r, &badRowError{line: line, err: err}
			}
			bad.add(err)
		}
	}
	if j.dryRun {
		for {
			if _, err := next(); err == io.EOF {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		fmt.Fprintf(stdout, "%s: %d readings fit %s (sensors 0–%d; %s; %d-minute slots); %s\n",
			name, checked, j.dataset, j.valid.Nodes-1, strings.Join(j.channels, ", "), j.valid.StepMs/60000, badCount(bad.n))
		if bad.n > 0 {
			return fmt.Errorf("%s: %s", name, badCount(bad.n))
		}
		return nil
	}
	if err := sec.EnsureTopics(ctx, brokers, 4, j.topic); err != nil {
		return err
	}
	n, err := stream.PublishReadings(ctx, next, stream.FeedConfig{Brokers: brokers, Security: sec, Topic: j.topic})
	if err != nil {
		var bre *badRowError
		switch {
		case errors.As(err, &bre):
			return fmt.Errorf("%s: %w; the %d readings before it are published to %s; go on from it with -from-line %d", name, bre.err, n, j.topic, bre.line)
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(stdout, "interrupted: published %d readings from %s to %s; go on with -from-line %d\n", n, name, j.topic, lines.resume(n))
			return err
		}
		return fmt.Errorf("%s: %w; the %d readings of the rows before line %d are published to %s: publish again with -from-line %d (a reading sent twice is applied once)",
			name, err, n, lines.resume(n), j.topic, lines.resume(n))
	}
	fmt.Fprintf(stdout, "published %d readings from %s to %s", n, name, j.topic)
	if bad.n > 0 {
		fmt.Fprintf(stdout, " (%s skipped)", badCount(bad.n))
	}
	fmt.Fprintln(stdout)
	return nil
}

// pacer holds readings back until their time comes: ts − the first ts,
// divided by speedup, after the first reading was let through. A reading
// older than one already let through goes at once.
type pacer struct {
	speedup float64
	t0      int64     // the first reading's ts
	start   time.Time // when it was let through
}

// wait returns when the reading of ts may be sent, or with ctx's error.
func (p *pacer) wait(ctx context.Context, ts int64) error {
	if p.speedup <= 0 {
		return nil
	}
	if p.start.IsZero() {
		p.t0, p.start = ts, time.Now()
		return nil
	}
	d := time.Until(p.start.Add(time.Duration(float64(ts-p.t0) * float64(time.Millisecond) / p.speedup)))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
