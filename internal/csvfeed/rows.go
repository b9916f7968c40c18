package csvfeed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/pemsforecast/sdgnn/stream"
)

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

// rows reads a Job's rows and checks each (see next), counting what it
// found for the Job's messages.
type rows struct {
	j        *Job
	name     string // the input, as messages name it
	cr       *stream.CSVReader
	stderr   io.Writer
	bad      badRows
	order    disorder
	repeated repeats
	checked  int // readings that fit
	// Rows left out by FromLine or FromTS, and rows after them: a flag
	// that leaves out every row (past the end: a typo in a resume) is an
	// error, not a publish of nothing (see pastEnd).
	leftOut, passed int
}

func newRows(j *Job, name string, cr *stream.CSVReader, stderr io.Writer) *rows {
	return &rows{j: j, name: name, cr: cr, stderr: stderr, bad: badRows{name: name, w: stderr},
		order: newDisorder(j.Valid.StepMs, j.History), repeated: newRepeats(j.Valid.StepMs, j.History, j.Channels, j.Sensors)}
}

// next returns the next reading that fits, and its line. A bad row is
// returned as a *badRowError, or named and passed over (with SkipBad, or
// in a dry run). A row out of order, or that repeats a slot with other
// values, is warned of on stderr (in a dry run, counted for the end).
func (rs *rows) next() (stream.Reading, int, error) {
	j := rs.j
	for {
		r, err := rs.cr.Read()
		line := rs.cr.Line()
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
		if line < j.FromLine || err == nil && j.FromTSSet && r.TS < j.FromTS {
			rs.leftOut++
			continue
		}
		rs.passed++
		if err == nil {
			if err = j.Valid.Check(r); err == nil {
				rs.checked++
				if rs.order.add(line, r.TS) && !j.Sort && !j.DryRun {
					fmt.Fprintf(rs.stderr, "%s: warning: %s: sort the rows by ts, or publish with -sort\n", rs.name, rs.order.first())
				}
				if rs.repeated.add(line, r) && !j.DryRun {
					fmt.Fprintf(rs.stderr, "%s: warning: %s: leave one of the two rows out\n", rs.name, rs.repeated.first)
				}
				return r, line, nil
			}
			err = rowError(line, r, j.Channels, err)
		}
		if !j.SkipBad && !j.DryRun {
			return r, line, &badRowError{line: line, err: err}
		}
		rs.bad.add(err)
	}
}

// pastEnd returns an error when FromLine or FromTS left out every row.
func (rs *rows) pastEnd() error {
	j := rs.j
	if rs.leftOut == 0 || rs.passed > 0 {
		return nil
	}
	flag := fmt.Sprintf("-from-line %d", j.FromLine)
	if j.FromTSSet {
		flag = fmt.Sprintf("-from-ts %s", tsString(j.FromTS))
		if j.FromLine > 0 {
			flag = fmt.Sprintf("-from-line %d with %s", j.FromLine, flag)
		}
	}
	return fmt.Errorf("%s: %s leaves out every row (%d): nothing to publish", rs.name, flag, rs.leftOut)
}

// inOrder returns the readings' source for PublishReadings in the file's
// order, paced, and how to take the publish up after its first n
// readings: -from-line of the first row not published.
func (rs *rows) inOrder(ctx context.Context, pace *pacer, ring *posRing) (next func() (stream.Reading, error), from func(n int) string) {
	next = func() (stream.Reading, error) {
		r, line, err := rs.next()
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
	return next, from
}

// sorted reads every row and returns the readings' source for
// PublishReadings in time order, paced, and how to take the publish up
// after its first n readings: -sort -from-ts of the slot not wholly
// published. A bad row stops it before anything is published.
func (rs *rows) sorted(ctx context.Context, pace *pacer, ring *posRing) (next func() (stream.Reading, error), from func(n int) string, err error) {
	all := sortedRows{channels: len(rs.j.Channels)}
	for {
		r, _, err := rs.next()
		if err == io.EOF {
			break
		}
		var bre *badRowError
		if errors.As(err, &bre) {
			return nil, nil, fmt.Errorf("%s: %w; nothing is published (-sort reads every row first)", rs.name, bre.err)
		} else if err != nil {
			return nil, nil, fmt.Errorf("%s: %w; nothing is published (-sort reads every row first)", rs.name, err)
		}
		all.add(r)
	}
	if err := rs.pastEnd(); err != nil {
		return nil, nil, err
	}
	all.sort()
	i := 0
	next = func() (stream.Reading, error) {
		if i == len(all.rows) {
			return stream.Reading{}, io.EOF
		}
		r := all.reading(i)
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
	return next, from, nil
}
