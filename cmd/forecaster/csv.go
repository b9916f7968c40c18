package main

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/english"
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
	// fromTS leaves out the rows of an earlier ts (with fromTSSet), which
	// is how a sorted publish that stopped is taken up.
	fromTS    int64
	fromTSSet bool
	// sort reads every row first and publishes them in time order (ts,
	// then sensor, then line), as the service needs them.
	sort bool
	// history is the service's (serve -history): how many slots a row
	// may come after a later one before forecasts are skipped.
	history int
	retry   stream.Retry // how long a write not acknowledged is tried again
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
	fromLineSet          bool   // -from-line was given
	fromTS               string // -from-ts, as given ("" if not)
	sort                 bool
	history              int
}

// newCSVJob checks publish -csv's flags and resolves what it checks the
// rows against: the bundle's sensors, channels and slot when there is
// one, else the dataset's.
func newCSVJob(f csvFlags, dataset string, b *sdgnn.Bundle) (*csvJob, error) {
	j := &csvJob{path: f.path, topic: f.topic, dryRun: f.dryRun, speedup: f.speedup, fromLine: f.fromLine, sort: f.sort, history: f.history, dataset: dataset}
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
	case f.history < 1 || f.history > stream.MaxHistory:
		return nil, usagef("-history %d: want 1 to %d slots, as serve's", f.history, stream.MaxHistory)
	}
	if f.fromTS != "" {
		ts, err := stream.ParseTS(f.fromTS)
		if err != nil {
			return nil, usagef("-from-ts: %v", err)
		}
		// Every row's ts is in this range (the Validator refuses the
		// others): one outside it, a time in µs or ns say, would leave
		// out every row and publish nothing, exit 0.
		if ts < 0 || ts > stream.MaxTS {
			return nil, usagef("-from-ts %q is outside 1970 to 9999 (Unix ms, want 0..%d; µs or ns?)", f.fromTS, stream.MaxTS)
		}
		j.fromTS, j.fromTSSet = ts, true
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
		if b.Meta.Dataset != dataset {
			return nil, usagef("-dataset %s: the bundle is for %s (leave -dataset out to take the bundle's)", dataset, b.Meta.Dataset)
		}
		j.valid.Nodes, j.valid.Channels = b.Meta.Nodes, len(b.Meta.Norm.Mean)
		if j.valid.Channels != len(info.Channels) {
			return nil, fmt.Errorf("bundle has %s, %s names %d (%s)", english.Count(j.valid.Channels, "channel"), dataset, len(info.Channels), strings.Join(info.Channels, ", "))
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
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = &truncatedError{}
			}
			return nil, "", fmt.Errorf("-csv %s: %w", name, err)
		}
		return readCloser{gzipReader{zr}, in}, name, nil
	}
	if head, _ := br.Peek(6); len(head) > 0 {
		for _, c := range otherCompressions {
			if strings.HasPrefix(string(head), c.magic) {
				in.Close()
				how := fmt.Sprintf("%s %s | forecaster publish -csv - …", c.tool, j.path)
				if j.path == "-" {
					how = "pipe it through " + c.tool
				}
				return nil, "", fmt.Errorf("-csv %s: the input is %s, which publish does not read (plain or gzip-compressed CSV only): decompress it first (%s)", name, c.name, how)
			}
		}
	}
	return readCloser{br, in}, name, nil
}

// otherCompressions are the compressed formats that exports are often
// kept in, besides gzip, by their magic bytes: such an input is refused
// as what it is rather than as a CSV header of binary bytes.
var otherCompressions = []struct{ magic, name, tool string }{
	{"BZh", "bzip2-compressed", "bzip2 -dc"},
	{"\xfd7zXZ\x00", "xz-compressed", "xz -dc"},
	{"\x28\xb5\x2f\xfd", "zstd-compressed", "zstd -dc"},
	{"PK\x03\x04", "a zip archive", "unzip -p"},
}

// gzipReader reads a gzip stream, and a stream that ends before its end
// (a file cut short in a copy or a download) as a *truncatedError rather
// than a bare io.ErrUnexpectedEOF.
type gzipReader struct{ r *gzip.Reader }

func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = &truncatedError{}
	}
	return n, err
}

// truncatedError is a gzip-compressed input cut short: the rows read
// before the cut are whole, the rest of the file is not there. It wraps
// io.ErrUnexpectedEOF.
type truncatedError struct {
	after int // the last line read whole (1: the header; 0: not known)
}

func (e *truncatedError) Error() string {
	if e.after == 0 {
		return "truncated: the gzip stream ends before its end (unexpected EOF)"
	}
	return fmt.Sprintf("truncated: the gzip stream ends after line %d (unexpected EOF)", e.after)
}

func (e *truncatedError) Unwrap() error { return io.ErrUnexpectedEOF }

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

// posRing remembers where the last readings given to
// stream.PublishReadings stand (their lines, or their ts when sorted), so
// that when it stops, where to take it up can be named. It holds more
// readings than PublishReadings has in hand at a time (a write's and its
// queue's), and is shared between its source goroutine and the caller.
type posRing struct {
	mu    sync.Mutex
	given int            // readings given
	pos   [1 << 14]int64 // pos[i%len] is where reading i stands
}

func (r *posRing) add(pos int64) {
	r.mu.Lock()
	r.pos[r.given%len(r.pos)] = pos
	r.given++
	r.mu.Unlock()
}

// resume returns where to publish again from when the first n readings
// given are published: reading n's position, or the last reading's plus
// after when all are; ok is false when none was given.
func (r *posRing) resume(n int, after int64) (pos int64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case n < r.given && r.given-n <= len(r.pos):
		return r.pos[n%len(r.pos)], true
	case n >= r.given && r.given > 0:
		return r.pos[(r.given-1)%len(r.pos)] + after, true
	}
	return 0, false
}

// disorder watches the rows' time order. The service keeps a history of
// slots of each sensor beyond its window (serve -history): a reading
// that comes after one more than that many slots later (of any sensor)
// finds the windows it belongs with gone, and the forecasts that need it
// are skipped. A file sorted by sensor, then time, is the usual cause.
type disorder struct {
	slots    int64 // the history
	stepMs   int64
	seen     bool
	latest   int64 // the latest ts so far, and its line
	latestAt int
	n        int // rows behind by more than the history
	// the first of them
	line, after int
	ts, at      int64
}

func newDisorder(stepMs int64, history int) disorder {
	return disorder{slots: int64(history), stepMs: stepMs}
}

// add notes the row at line with ts and reports whether it is the first
// one behind by more than the history.
func (d *disorder) add(line int, ts int64) bool {
	if !d.seen || ts > d.latest {
		d.seen, d.latest, d.latestAt = true, ts, line
		return false
	}
	if d.latest-ts <= d.slots*d.stepMs {
		return false
	}
	d.n++
	if d.n == 1 {
		d.line, d.ts, d.after, d.at = line, ts, d.latestAt, d.latest
		return true
	}
	return false
}

// first describes the first row out of order.
func (d *disorder) first() string {
	return fmt.Sprintf("line %d (ts %s) comes after line %d (ts %s), %d slots later; the service keeps %d slots of each sensor, so the forecasts that need such a reading are skipped",
		d.line, tsString(d.ts), d.after, tsString(d.at), (d.at-d.ts)/d.stepMs, d.slots)
}

// count says how many rows came out of order.
func (d *disorder) count() string {
	if d.n == 1 {
		return "1 row out of time order"
	}
	return fmt.Sprintf("%d rows out of time order", d.n)
}

// repeats watches for rows that give a sensor's slot other values than
// an earlier row did. The service keeps a slot's first reading and counts
// a later one with other values as a conflict
// (sdgnn_stream_readings_conflict_total): such a row is published but
// never applied. A later row that only gives values the slot lacked (0,
// missing), agreeing on the rest, completes it instead (see
// stream.Complement), and is no conflict. Each sensor's rows of its last history slots are
// remembered in a ring, slot k at k mod history, so that memory stays
// bounded by sensors × history whatever the file's order and a row costs
// no allocation; an earlier row further back than that is not compared.
type repeats struct {
	slots    int64 // the history
	stepMs   int64
	channels []string
	rings    [][]repeatRow // by sensor, nil before its first row
	n        int           // rows that repeat a slot with other values
	first    string        // the first of them, described
}

// repeatRow is a row remembered by repeats; line 0: none.
type repeatRow struct {
	ts     int64
	line   int
	values []float64
}

func newRepeats(stepMs int64, history int, channels []string) repeats {
	return repeats{slots: int64(max(history, 1)), stepMs: stepMs, channels: channels}
}

// add notes r, read at line, and reports whether it is the first row to
// repeat a slot with other values. r must have passed the Validator (a
// sensor id ≥ 0, a ts on the slot grid). Values equal to the bit are a
// duplicate, which the service applies once, and values the slot lacked
// complete it.
func (p *repeats) add(line int, r stream.Reading) bool {
	if r.Sensor >= len(p.rings) {
		p.rings = append(p.rings, make([][]repeatRow, r.Sensor+1-len(p.rings))...)
	}
	ring := p.rings[r.Sensor]
	if ring == nil {
		ring = make([]repeatRow, p.slots)
		p.rings[r.Sensor] = ring
	}
	e := &ring[((r.TS/p.stepMs)%p.slots+p.slots)%p.slots]
	switch {
	case e.line != 0 && e.ts == r.TS:
		adds, conflicts := stream.Complement(e.values, r.Values)
		if !conflicts {
			if adds { // the service completes the slot: so does the check
				stream.FillMissing(e.values, r.Values)
				e.line = line
			}
			return false
		}
		p.n++
		if p.n > 1 {
			return false
		}
		p.first = fmt.Sprintf("line %d gives sensor %d at %s other values (%s) than line %d did (%s); the service keeps the first and drops this one",
			line, r.Sensor, tsString(r.TS), p.values(r.Values), e.line, p.values(e.values))
		return true
	case e.line == 0 || r.TS > e.ts: // the slot's place holds none, or one history slots older
		e.ts, e.line, e.values = r.TS, line, append(e.values[:0], r.Values...)
	}
	return false
}

// values writes a reading's values with their channels' names.
func (p *repeats) values(v []float64) string {
	parts := make([]string, len(v))
	for k, x := range v {
		parts[k] = fmt.Sprintf("%s %g", p.channels[k], x)
	}
	return strings.Join(parts, ", ")
}

// count says how many rows repeat a slot with other values.
func (p *repeats) count() string {
	if p.n == 1 {
		return "1 row repeats a slot with other values"
	}
	return fmt.Sprintf("%d rows repeat a slot with other values", p.n)
}

// tsString writes a reading's ts as RFC 3339, in UTC.
func tsString(ts int64) string { return time.UnixMilli(ts).UTC().Format(time.RFC3339) }

// sortedRows holds a file's readings in time order (ts, then sensor; a
// sensor's readings of one slot in the file's order), their values in one
// slice: about 50 bytes a reading of three channels.
type sortedRows struct {
	rows     []sortedRow
	vals     []float64
	channels int
}

type sortedRow struct {
	ts          int64
	sensor, off int
}

// add appends r, whose values are copied.
func (s *sortedRows) add(r stream.Reading) {
	s.rows = append(s.rows, sortedRow{ts: r.TS, sensor: r.Sensor, off: len(s.vals)})
	s.vals = append(s.vals, r.Values...)
}

// sort puts the rows in time order.
func (s *sortedRows) sort() {
	slices.SortStableFunc(s.rows, func(a, b sortedRow) int {
		return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.sensor, b.sensor))
	})
}

// reading returns row i; its values are the rows' own, not to be written.
func (s *sortedRows) reading(i int) stream.Reading {
	r := s.rows[i]
	return stream.Reading{Sensor: r.sensor, TS: r.ts, Values: s.vals[r.off : r.off+s.channels : r.off+s.channels]}
}

// badCount says how many bad rows there were.
func badCount(n int) string {
	if n == 1 {
		return "1 bad row"
	}
	return fmt.Sprintf("%d bad rows", n)
}

// rowError names where a reading r that the Validator refused stands: its
// line and, for a value that is not finite, its column, named as the
// header names channels (the Validator counts values from 0).
func rowError(line int, r stream.Reading, channels []string, err error) error {
	reason := stream.ReasonOf(err)
	if reason == stream.ReasonNonFinite {
		for k, x := range r.Values {
			if (math.IsNaN(x) || math.IsInf(x, 0)) && k < len(channels) {
				return fmt.Errorf("line %d, column %s: %g is not a finite number (%s)", line, channels[k], x, reason)
			}
		}
	}
	var re *stream.RejectError
	if errors.As(err, &re) {
		err = errors.New(re.Detail)
	}
	return fmt.Errorf("line %d: %w (%s)", line, err, reason)
}

// run reads the rows, checks each and, unless a dry run, publishes the
// good ones: as they come, or with sort, once all are read, in time
// order. A bad row stops it (the rows before it are published, unless
// sorted) or, with skipBad, is reported and passed over.
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
	order := newDisorder(j.valid.StepMs, j.history)
	repeated := newRepeats(j.valid.StepMs, j.history, j.channels)
	checked := 0
	// Rows left out by -from-line or -from-ts, and rows after them: a
	// flag that leaves out every row (past the end: a typo in a resume)
	// is an error, not a publish of nothing.
	leftOut, passed := 0, 0
	pastEnd := func() error {
		if leftOut == 0 || passed > 0 {
			return nil
		}
		flag := fmt.Sprintf("-from-line %d", j.fromLine)
		if j.fromTSSet {
			flag = fmt.Sprintf("-from-ts %s", tsString(j.fromTS))
			if j.fromLine > 0 {
				flag = fmt.Sprintf("-from-line %d with %s", j.fromLine, flag)
			}
		}
		return fmt.Errorf("%s: %s leaves out every row (%d): nothing to publish", name, flag, leftOut)
	}
	// row returns the next reading that fits, and its line. A bad row is
	// returned as a *badRowError, or named and passed over.
	row := func() (stream.Reading, int, error) {
		for {
			r, err := cr.Read()
			line := cr.Line()
			var ce *stream.CSVError
			switch {
			case errors.As(err, &ce):
				line = ce.Line
			case err != nil:
				var te *truncatedError
				if errors.As(err, &te) {
					te.after = max(line, 1)
				}
				return r, line, err // io.EOF, or the input failed
			}
			if line < j.fromLine || err == nil && j.fromTSSet && r.TS < j.fromTS {
				leftOut++
				continue
			}
			passed++
			if err == nil {
				if err = j.valid.Check(r); err == nil {
					checked++
					if order.add(line, r.TS) && !j.sort && !j.dryRun {
						fmt.Fprintf(stderr, "%s: warning: %s: sort the rows by ts, or publish with -sort\n", name, order.first())
					}
					if repeated.add(line, r) && !j.dryRun {
						fmt.Fprintf(stderr, "%s: warning: %s: leave one of the two rows out\n", name, repeated.first)
					}
					return r, line, nil
				}
				err = rowError(line, r, j.channels, err)
			}
			if !j.skipBad && !j.dryRun {
				return r, line, &badRowError{line: line, err: err}
			}
			bad.add(err)
		}
	}
	if j.dryRun {
		for {
			if _, _, err := row(); err == io.EOF {
				break
			} else if te := (*truncatedError)(nil); errors.As(err, &te) {
				return fmt.Errorf("%s: %w; before it %d readings fit, %s", name, err, checked, badCount(bad.n))
			} else if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		if err := pastEnd(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d readings fit %s (sensors 0–%d; %s; %d-minute slots); %s\n",
			name, checked, j.dataset, j.valid.Nodes-1, strings.Join(j.channels, ", "), j.valid.StepMs/60000, badCount(bad.n))
		var problems []string
		if bad.n > 0 {
			problems = append(problems, badCount(bad.n))
		}
		if order.n > 0 && !j.sort {
			fmt.Fprintf(stderr, "%s: %s, the first: %s; sort the rows by ts, or publish with -sort\n", name, order.count(), order.first())
			problems = append(problems, order.count())
		}
		if repeated.n > 0 {
			fmt.Fprintf(stderr, "%s: %s, the first: %s\n", name, repeated.count(), repeated.first)
			problems = append(problems, repeated.count())
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s: %s", name, strings.Join(problems, ", "))
		}
		return nil
	}
	pace := pacer{speedup: j.speedup}
	ring := &posRing{}
	var (
		next func() (stream.Reading, error)
		// from names the flag that takes the publish up after its first
		// n readings.
		from func(n int) string
	)
	if j.sort {
		rows := sortedRows{channels: len(j.channels)}
		for {
			r, _, err := row()
			if err == io.EOF {
				break
			}
			var bre *badRowError
			if errors.As(err, &bre) {
				return fmt.Errorf("%s: %w; nothing is published (-sort reads every row first)", name, bre.err)
			} else if err != nil {
				return fmt.Errorf("%s: %w; nothing is published (-sort reads every row first)", name, err)
			}
			rows.add(r)
		}
		if err := pastEnd(); err != nil {
			return err
		}
		rows.sort()
		i := 0
		next = func() (stream.Reading, error) {
			if i == len(rows.rows) {
				return stream.Reading{}, io.EOF
			}
			r := rows.reading(i)
			i++
			ring.add(r.TS)
			return r, pace.wait(ctx, r.TS)
		}
		from = func(n int) string {
			ts, ok := ring.resume(n, 0) // the slot of the last reading again: sent twice, applied once
			if !ok {
				return "-sort"
			}
			return fmt.Sprintf("-sort -from-ts %d", ts)
		}
	} else {
		next = func() (stream.Reading, error) {
			r, line, err := row()
			if err != nil {
				return r, err
			}
			ring.add(int64(line))
			return r, pace.wait(ctx, r.TS)
		}
		from = func(n int) string {
			line, ok := ring.resume(n, 1)
			if !ok {
				line = 2 // from the first row
			}
			return fmt.Sprintf("-from-line %d", line)
		}
	}
	if err := sec.EnsureTopics(ctx, brokers, 4, j.topic); err != nil {
		return err
	}
	n, err := stream.PublishReadings(ctx, next, stream.FeedConfig{Brokers: brokers, Security: sec, Topic: j.topic, Retry: j.retry})
	if err != nil {
		var bre *badRowError
		switch {
		case errors.As(err, &bre):
			// From its own line the row stops the publish again: it is
			// taken up there once mended, or past it if left out.
			return fmt.Errorf("%s: %w; the %d readings before it are published to %s; mend the row and go on from it with -from-line %d, or leave it out with -from-line %d",
				name, bre.err, n, j.topic, bre.line, bre.line+1)
		case errors.Is(err, context.Canceled):
			fmt.Fprintf(stdout, "interrupted: published %d readings from %s to %s; go on with %s\n", n, name, j.topic, from(n))
			return err
		case j.sort:
			return fmt.Errorf("%s: %w; %d readings are published to %s, every one of a ts before the one to go on from: publish again with %s (a reading sent twice is applied once)",
				name, err, n, j.topic, from(n))
		}
		line, ok := ring.resume(n, 1)
		if !ok {
			line = 2
		}
		var te *truncatedError
		if errors.As(err, &te) {
			return fmt.Errorf("%s: %w; the %d readings of the rows before line %d are published to %s: with the whole file, go on with %s (a reading sent twice is applied once)",
				name, err, n, line, j.topic, from(n))
		}
		return fmt.Errorf("%s: %w; the %d readings of the rows before line %d are published to %s: publish again with %s (a reading sent twice is applied once)",
			name, err, n, line, j.topic, from(n))
	}
	if err := pastEnd(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "published %d readings from %s to %s", n, name, j.topic)
	var notes []string
	if bad.n > 0 {
		notes = append(notes, badCount(bad.n)+" skipped")
	}
	if order.n > 0 && !j.sort {
		notes = append(notes, order.count())
	}
	if repeated.n > 0 {
		notes = append(notes, repeated.count()+", which the service drops")
	}
	if len(notes) > 0 {
		fmt.Fprintf(stdout, " (%s)", strings.Join(notes, "; "))
	}
	fmt.Fprintln(stdout)
	return nil
}

// slowedDown returns ms milliseconds of data time as replay time at
// speedup (> 0), saturated at the longest Duration: a tiny speed-up such as
// 1e-300 gives a time beyond what a Duration holds, whose conversion gave a
// negative one, and so no wait at all rather than a very slow replay.
func slowedDown(ms int64, speedup float64) time.Duration {
	d := float64(ms) * float64(time.Millisecond) / speedup
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// spedUp returns d of real time as replay time at speedup (> 0),
// saturated at the longest Duration: a huge speed-up such as 1e9 gives,
// after some seconds, a time beyond what a Duration holds, whose
// conversion gave a negative one, and so a replay clock some 292 years
// behind, under which no deadline ever passed.
func spedUp(d time.Duration, speedup float64) time.Duration {
	x := float64(d) * speedup
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(x)
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
	d := time.Until(p.start.Add(slowedDown(ts-p.t0, p.speedup)))
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
