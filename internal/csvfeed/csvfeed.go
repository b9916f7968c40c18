// Package csvfeed publishes a CSV file of readings into the readings
// topic, checked first: the engine of forecaster publish -csv, whose
// flags its messages name (-from-line, -from-ts, -sort, -bad-rows).
//
// A Job reads the rows (a file or standard input, plain or
// gzip-compressed), checks each against the model's sensors, channels
// and slot (a stream.Validator), watches their time order against the
// service's history and rows that give a slot other values than an
// earlier one, and publishes the good ones with stream.PublishReadings:
// as they come, or all read first and sorted by time. When it stops (a
// bad row, the brokers lost, an interrupt) its error names the flag to
// go on with.
package csvfeed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/stream"
)

// Job is publish -csv: a file of readings, checked against what the
// model (or the dataset) takes, then published or only checked.
type Job struct {
	Path    string // "-" is standard input
	Topic   string
	SkipBad bool // go on past bad rows rather than stop at the first
	DryRun  bool // check the rows, publish nothing
	// Speedup over real time: a row is sent when its ts comes, counted
	// from the first row's, this many times faster (0: at once).
	Speedup float64
	// FromLine is the first line read (0 and 2: the first row after the
	// header): a publish that stopped is taken up where it stopped.
	FromLine int
	// FromTS leaves out the rows of an earlier ts (with FromTSSet), which
	// is how a sorted publish that stopped is taken up.
	FromTS    int64
	FromTSSet bool
	// Sort reads every row first and publishes them in time order (ts,
	// then sensor, then line), as the service needs them.
	Sort bool
	// History is the service's (serve -history): how many slots a row
	// may come after a later one before forecasts are skipped.
	History int
	Retry   stream.Retry // how long a write not acknowledged is tried again
	// What the readings must fit: the dataset named in messages, its
	// channels' names (the CSV header's), and the check of each reading.
	Dataset  string
	Channels []string
	Valid    stream.Validator
	// Sensors names the sensors: where they have IDs (the model's, or the
	// dataset's), the sensor column holds them and the readings are keyed
	// by them; nil, or without IDs: by index.
	Sensors *pems.SensorNames
}

// Run reads the rows, checks each and, unless a dry run, publishes the
// good ones: as they come, or with Sort, once all are read, in time
// order. A bad row stops it (the rows before it are published, unless
// sorted) or, with SkipBad, is reported and passed over. stdin is read
// for Path "-"; what was published or checked is said on stdout, the
// rows passed over and the warnings on stderr.
func (j *Job) Run(ctx context.Context, stdin io.Reader, brokers []string, sec stream.Security, stdout, stderr io.Writer) error {
	in, name, err := j.source(stdin)
	if err != nil {
		return err
	}
	defer in.Close()
	cr, err := stream.NewCSVReader(in, j.Channels)
	if err != nil {
		return fmt.Errorf("%s: %w (for %s)", name, err, j.Dataset)
	}
	cr.SetSensors(j.Sensors)
	rs := newRows(j, name, cr, stderr)
	if j.DryRun {
		return rs.dryRun(stdout, stderr)
	}
	pace := &pacer{speedup: j.Speedup}
	ring := &posRing{}
	var (
		next func() (stream.Reading, error)
		// from names the flag that takes the publish up after its first
		// n readings.
		from func(n int) string
	)
	if j.Sort {
		if next, from, err = rs.sorted(ctx, pace, ring); err != nil {
			return err
		}
	} else {
		next, from = rs.inOrder(ctx, pace, ring)
	}
	if err := sec.EnsureTopics(ctx, brokers, 4, j.Topic); err != nil {
		return err
	}
	n, err := stream.PublishReadings(ctx, next, stream.FeedConfig{Brokers: brokers, Security: sec, Topic: j.Topic, Retry: j.Retry, Sensors: j.Sensors})
	if err != nil {
		return rs.stopped(err, n, ring, from, stdout)
	}
	if err := rs.pastEnd(); err != nil {
		return err
	}
	rs.published(n, stdout)
	return nil
}

// dryRun checks every row and publishes nothing: it says on stdout how
// many readings fit, names on stderr the first row out of order and the
// first that repeats a slot with other values, and returns an error
// counting the problems found, if any.
func (rs *rows) dryRun(stdout, stderr io.Writer) error {
	j, name := rs.j, rs.name
	for {
		if _, _, err := rs.next(); err == io.EOF {
			break
		} else if te := (*truncatedError)(nil); errors.As(err, &te) {
			return fmt.Errorf("%s: %w; before it %d readings fit, %s", name, err, rs.checked, badCount(rs.bad.n))
		} else if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := rs.pastEnd(); err != nil {
		return err
	}
	sensors := fmt.Sprintf("sensors 0–%d", j.Valid.Nodes-1)
	if j.Sensors.HasIDs() {
		sensors = j.Sensors.Describe()
	}
	fmt.Fprintf(stdout, "%s: %d readings fit %s (%s; %s; %d-minute slots); %s\n",
		name, rs.checked, j.Dataset, sensors, strings.Join(j.Channels, ", "), j.Valid.StepMs/60000, badCount(rs.bad.n))
	var problems []string
	if rs.bad.n > 0 {
		problems = append(problems, badCount(rs.bad.n))
	}
	if rs.order.n > 0 && !j.Sort {
		fmt.Fprintf(stderr, "%s: %s, the first: %s; sort the rows by ts, or publish with -sort\n", name, rs.order.count(), rs.order.first())
		problems = append(problems, rs.order.count())
	}
	if rs.repeated.n > 0 {
		fmt.Fprintf(stderr, "%s: %s, the first: %s\n", name, rs.repeated.count(), rs.repeated.first)
		problems = append(problems, rs.repeated.count())
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", name, strings.Join(problems, ", "))
	}
	return nil
}

// stopped returns the error of a publish that stopped after n readings
// with err, naming where to take it up (from) and, for a bad row, how to
// mend it or leave it out; an interrupt is also said on stdout.
func (rs *rows) stopped(err error, n int, ring *posRing, from func(int) string, stdout io.Writer) error {
	j, name := rs.j, rs.name
	var bre *badRowError
	switch {
	case errors.As(err, &bre):
		// From its own line the row stops the publish again: it is
		// taken up there once mended, or past it if left out.
		return fmt.Errorf("%s: %w; the %d readings before it are published to %s; mend the row and go on from it with -from-line %d, or leave it out with -from-line %d",
			name, bre.err, n, j.Topic, bre.line, bre.line+1)
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stdout, "interrupted: published %d readings from %s to %s; go on with %s\n", n, name, j.Topic, from(n))
		return err
	case j.Sort:
		return fmt.Errorf("%s: %w; %d readings are published to %s, every one of a ts before the one to go on from: publish again with %s (a reading sent twice is applied once)",
			name, err, n, j.Topic, from(n))
	}
	line, ok := ring.resume(n, 1)
	if !ok {
		line = 2
	}
	var te *truncatedError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: %w; the %d readings of the rows before line %d are published to %s: with the whole file, go on with %s (a reading sent twice is applied once)",
			name, err, n, line, j.Topic, from(n))
	}
	return fmt.Errorf("%s: %w; the %d readings of the rows before line %d are published to %s: publish again with %s (a reading sent twice is applied once)",
		name, err, n, line, j.Topic, from(n))
}

// published says on stdout that n readings were published, with the rows
// skipped, out of order or repeating a slot, if any.
func (rs *rows) published(n int, stdout io.Writer) {
	j := rs.j
	fmt.Fprintf(stdout, "published %d readings from %s to %s", n, rs.name, j.Topic)
	var notes []string
	if rs.bad.n > 0 {
		notes = append(notes, badCount(rs.bad.n)+" skipped")
	}
	if rs.order.n > 0 && !j.Sort {
		notes = append(notes, rs.order.count())
	}
	if rs.repeated.n > 0 {
		notes = append(notes, rs.repeated.count()+", which the service drops")
	}
	if len(notes) > 0 {
		fmt.Fprintf(stdout, " (%s)", strings.Join(notes, "; "))
	}
	fmt.Fprintln(stdout)
}
