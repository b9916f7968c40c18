package stream

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// CSVReader reads readings from CSV text, as a data engineer exports them
// from a sensor database: a header row, then one reading per row. The
// header names a column "ts", a column "sensor" and one column per channel
// of the model, named as the dataset names its channels (pems.Info.Channels:
// flow, occupancy, speed for PeMS; speed for SZ-taxi), in any order; names
// are matched without regard to case or surrounding space, and the reader
// puts the values in the dataset's channel order, so that a file whose
// columns are swapped is read right rather than silently wrong.
//
// ts is the slot start, in Unix milliseconds or RFC 3339 with a zone
// ("2026-01-01T00:05:00Z"); sensor is the node index, or the sensor's ID
// for a model whose sensors have IDs (see SetSensors); a value is a decimal
// number, and an empty field is a missing reading (0, as in the PeMS
// release). Fields may be quoted; a UTF-8 byte order mark before the
// header, as spreadsheets write, is passed over; CRLF line ends are read
// as LF. The reader checks only the form of a row: whether the reading
// fits the model and the slot grid is for a Validator to say.
type CSVReader struct {
	r        *csv.Reader
	ts, node int      // column of ts and of sensor
	cols     []int    // column of each channel, in the dataset's order
	names    []string // the channels' names
	width    int      // fields a row must have
	row      []float64
	line     int // of the row the last Read returned
	in       *rowLimit
	sensors  *pems.SensorNames // with IDs: the sensor column's
}

// MaxCSVRow is the most bytes a row of a CSV input, or its header, may
// take. A row of readings takes tens; a quote left open made the reader
// hold the rest of the input as one field, gigabytes from a small
// gzip-compressed file.
const MaxCSVRow = 1 << 20

// rowLimit reads r, and fails once more than MaxCSVRow bytes were read
// since the last reset: the start of a row, give or take what the readers
// above it buffer.
type rowLimit struct {
	r    io.Reader
	n    int
	line int // the last line read whole, for the error
}

func (l *rowLimit) Read(p []byte) (int, error) {
	if l.n > MaxCSVRow {
		if l.line == 0 {
			// NewCSVReader says it is the header's.
			return 0, fmt.Errorf("more than %d bytes (is a quote left open?)", MaxCSVRow)
		}
		return 0, fmt.Errorf("csv: after line %d: a row of more than %d bytes (is a quote left open?)", l.line, MaxCSVRow)
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// CSVError is a row that is not a reading: its line (1 is the header) and
// what is wrong. A CSVReader reads on after it, so that a caller may skip
// such rows; every other error of Read ends the input.
type CSVError struct {
	Line   int
	Column string // "" when the row as a whole is wrong
	Err    error
}

// Error says the line, the column when one is at fault, and what is wrong.
func (e *CSVError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d, column %s: %v", e.Line, e.Column, e.Err)
}

// Unwrap returns what is wrong with the row, for errors.Is and errors.As.
func (e *CSVError) Unwrap() error { return e.Err }

// NewCSVReader reads the header of r and returns a reader of its rows, for
// a model whose channels are named channels. It fails, naming what is
// wrong, when the header lacks ts, sensor or a channel, names a column
// twice or names a column that is none of these.
func NewCSVReader(r io.Reader, channels []string) (*CSVReader, error) {
	if len(channels) == 0 {
		return nil, fmt.Errorf("csv: no channels to read")
	}
	// A byte order mark, as spreadsheets write, is passed over before the
	// CSV reader sees it: before a quoted first field it is a bare quote.
	in := &rowLimit{r: r}
	br := bufio.NewReader(in)
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3) // peeked: cannot fail
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // checked by Read, which says which line is short
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("csv: empty input, want a header row (ts,sensor,%s)", strings.Join(channels, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("csv header: %w", err)
	}
	c := &CSVReader{r: cr, in: in, ts: -1, node: -1, cols: make([]int, len(channels)), names: slices.Clone(channels), width: len(head), row: make([]float64, len(channels))}
	for i := range c.cols {
		c.cols[i] = -1
	}
	seen := map[string]int{}
	for i, name := range head {
		key := strings.ToLower(strings.TrimSpace(name))
		if j, ok := seen[key]; ok {
			return nil, fmt.Errorf("csv header: column %q is named twice (columns %d and %d)", name, j+1, i+1)
		}
		seen[key] = i
		switch k := channelIndex(channels, key); {
		case key == "ts":
			c.ts = i
		case key == "sensor":
			c.node = i
		case k >= 0:
			c.cols[k] = i
		default:
			return nil, fmt.Errorf("csv header: column %d %q is neither ts, sensor nor a channel (%s)", i+1, name, strings.Join(channels, ", "))
		}
	}
	var missing []string
	if c.ts < 0 {
		missing = append(missing, "ts")
	}
	if c.node < 0 {
		missing = append(missing, "sensor")
	}
	for k, col := range c.cols {
		if col < 0 {
			missing = append(missing, channels[k])
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("csv header: no column %s (want ts, sensor and %s)", strings.Join(missing, ", "), strings.Join(channels, ", "))
	}
	return c, nil
}

func channelIndex(channels []string, key string) int {
	for k, name := range channels {
		if strings.ToLower(name) == key {
			return k
		}
	}
	return -1
}

// SetSensors has the reader take the sensor column as names names the
// sensors: where they have IDs, a sensor is one of the IDs (an ID that is
// none of them is a CSVError naming it), its Reading.Sensor the index;
// without IDs, the node index, as by default.
func (c *CSVReader) SetSensors(names *pems.SensorNames) {
	c.sensors = names
}

// Line returns the line of the row that the last Read returned (1 is the
// header): where a rejected reading stands in the file.
func (c *CSVReader) Line() int {
	return c.line
}

// Read returns the next row's reading. Its Values are c's own, overwritten
// by the next Read: copy them to keep them. At the end of the input it
// returns io.EOF; a row that is not a reading gives a *CSVError, and Read
// may be called again for the rows after it. A row of more than MaxCSVRow
// bytes ends the input with an error that says so.
func (c *CSVReader) Read() (Reading, error) {
	c.in.n, c.in.line = 0, max(c.line, 1)
	rec, err := c.r.Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			c.line = pe.Line
			return Reading{}, &CSVError{Line: pe.Line, Err: pe.Err}
		}
		return Reading{}, err
	}
	line, _ := c.r.FieldPos(0)
	c.line = line
	if len(rec) != c.width {
		return Reading{}, &CSVError{Line: line, Err: fmt.Errorf("%d fields, the header has %d", len(rec), c.width)}
	}
	r := Reading{Values: c.row}
	if r.TS, err = ParseTS(strings.TrimSpace(rec[c.ts])); err != nil {
		return Reading{}, &CSVError{Line: line, Column: "ts", Err: err}
	}
	if r.Sensor, err = c.sensor(strings.TrimSpace(rec[c.node])); err != nil {
		return Reading{}, &CSVError{Line: line, Column: "sensor", Err: err}
	}
	for k, col := range c.cols {
		s := strings.TrimSpace(rec[col])
		if s == "" {
			c.row[k] = 0 // missing
			continue
		}
		// ParseFloat reads Go's float syntax: digits separated by '_'
		// and hexadecimal mantissas are not decimal numbers here.
		if strings.ContainsAny(s, "_xX") {
			return Reading{}, &CSVError{Line: line, Column: c.names[k], Err: fmt.Errorf("%q is not a number", s)}
		}
		if c.row[k], err = strconv.ParseFloat(s, 64); err != nil {
			var ne *strconv.NumError
			if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
				err = fmt.Errorf("%q overflows float64", s)
			} else {
				err = fmt.Errorf("%q is not a number", s)
			}
			return Reading{}, &CSVError{Line: line, Column: c.names[k], Err: err}
		}
	}
	return r, nil
}

// sensor returns the index of the sensor a row's sensor field s names.
func (c *CSVReader) sensor(s string) (int, error) {
	if c.sensors.HasIDs() {
		z, ok := c.sensors.Index(s)
		if !ok {
			return 0, fmt.Errorf("%q is not one of the %s", s, c.sensors.Describe())
		}
		return z, nil
	}
	n, err := strconv.ParseInt(s, 10, 0)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		return 0, fmt.Errorf("%q is not a whole number", s)
	}
	return int(n), nil
}

// ParseTS reads a time as the readings' ts is written, in CSV files and
// requests: Unix milliseconds, or RFC 3339 with a zone, to the millisecond.
func ParseTS(s string) (int64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err == nil:
		return ms, nil
	case errors.Is(err, strconv.ErrRange):
		return 0, fmt.Errorf("%q is out of range of Unix milliseconds", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither Unix milliseconds nor RFC 3339 (2006-01-02T15:04:05Z)", s)
	}
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		return 0, fmt.Errorf("%q is not a whole millisecond", s)
	}
	return t.UnixMilli(), nil
}
