package csvfeed

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/stream"
)

// maxBadRowsShown is how many bad rows -bad-rows skip and -dry-run name
// one by one; the rest are counted.
const maxBadRowsShown = 20

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
	names    *pems.SensorNames // the sensors' names, for the message
	rings    [][]repeatRow     // by sensor, nil before its first row
	n        int               // rows that repeat a slot with other values
	first    string            // the first of them, described
}

// repeatRow is a row remembered by repeats; line 0: none.
type repeatRow struct {
	ts     int64
	line   int
	values []float64
}

func newRepeats(stepMs int64, history int, channels []string, names *pems.SensorNames) repeats {
	return repeats{slots: int64(max(history, 1)), stepMs: stepMs, channels: channels, names: names}
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
		p.first = fmt.Sprintf("line %d gives sensor %s at %s other values (%s) than line %d did (%s); the service keeps the first and drops this one",
			line, p.names.Name(r.Sensor), tsString(r.TS), p.values(r.Values), e.line, p.values(e.values))
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
