package stream

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

var pemsChannels = []string{"flow", "occupancy", "speed"}

// TestNewCSVReaderHeader checks which headers NewCSVReader takes, and that
// a refused one is named for what is wrong with it.
func TestNewCSVReaderHeader(t *testing.T) {
	for _, tc := range []struct {
		name, head string
		cols       []int // channel columns, when taken
		err        string
	}{
		{"in order", "ts,sensor,flow,occupancy,speed", []int{2, 3, 4}, ""},
		{"swapped", "speed,flow,sensor,occupancy,ts", []int{1, 3, 0}, ""},
		{"case and space", " TS , Sensor,Flow,OCCUPANCY , speed", []int{2, 3, 4}, ""},
		{"byte order mark", "\ufeffts,sensor,flow,occupancy,speed", []int{2, 3, 4}, ""},
		{"quoted", `"ts","sensor","flow","occupancy","speed"`, []int{2, 3, 4}, ""},
		{"byte order mark, quoted", "\ufeff\"ts\",\"sensor\",flow,occupancy,speed", []int{2, 3, 4}, ""}, // R's write.csv, pandas' utf-8-sig
		{"byte order mark alone", "\ufeff", nil, "empty input"},
		{"empty", "", nil, "empty input, want a header row (ts,sensor,flow,occupancy,speed)"},
		{"no ts", "sensor,flow,occupancy,speed", nil, "no column ts (want"},
		{"no channel", "ts,sensor,flow", nil, "no column occupancy, speed"},
		{"named twice", "ts,sensor,flow,occupancy,speed,Flow", nil, `column "Flow" is named twice (columns 3 and 6)`},
		{"unknown", "ts,sensor,flow,occupancy,speed,lane", nil, `column 6 "lane" is neither ts, sensor nor a channel (flow, occupancy, speed)`},
		{"bare quote", "ts,sen\"sor,flow", nil, "csv header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCSVReader(strings.NewReader(tc.head+"\n"), pemsChannels)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.cols, tc.cols) {
				t.Errorf("channel columns %v, want %v", c.cols, tc.cols)
			}
		})
	}
	if _, err := NewCSVReader(strings.NewReader("ts,sensor\n"), nil); err == nil {
		t.Errorf("no channels accepted")
	}
}

// TestCSVReaderRows reads rows of every form, good and bad: each good row
// gives its reading (values in the channels' order, whatever the columns'
// order; an empty value missing, 0), each bad one a *CSVError with its
// line and column, after which the rows that follow still read.
func TestCSVReaderRows(t *testing.T) {
	const head = "speed,ts,sensor,flow,occupancy\r\n" // columns out of order, CRLF
	type row struct {
		r      Reading
		line   int
		column string // of the error; "" and err "" for a reading
		err    string
	}
	for _, tc := range []struct {
		name, body string
		want       []row
	}{
		{"ms and RFC 3339", "61.5,1767225600000,3,210,0.05\r\n62,2026-01-01T00:05:00Z,3,211,0.06\n",
			[]row{{r: Reading{3, 1767225600000, []float64{210, 0.05, 61.5}}, line: 2}, {r: Reading{3, 1767225900000, []float64{211, 0.06, 62}}, line: 3}}},
		{"zone offset", "1,2026-01-01T01:05:00+01:00,0,2,3\n", []row{{r: Reading{0, 1767225900000, []float64{2, 3, 1}}, line: 2}}},
		{"missing value", "1,1767225600000,7,,3\n", []row{{r: Reading{7, 1767225600000, []float64{0, 3, 1}}, line: 2}}},
		{"quoted and spaced", `" 1.5 ", 1767225600000 ,"7",2,3` + "\n", []row{{r: Reading{7, 1767225600000, []float64{2, 3, 1.5}}, line: 2}}},
		{"exponent", "1e1,1767225600000,7,2.5E2,-0\n", []row{{r: Reading{7, 1767225600000, []float64{250, 0, 10}}, line: 2}}},
		{"bad ts then good", "1,yesterday,7,2,3\n1,1767225600000,8,2,3\n",
			[]row{{line: 2, column: "ts", err: `"yesterday" is neither Unix milliseconds nor RFC 3339`}, {r: Reading{8, 1767225600000, []float64{2, 3, 1}}, line: 3}}},
		{"empty ts", "1,,7,2,3\n", []row{{line: 2, column: "ts", err: "empty"}}},
		{"huge ts", "1,99999999999999999999,7,2,3\n", []row{{line: 2, column: "ts", err: `"99999999999999999999" is out of range of Unix milliseconds`}}},
		{"sub-millisecond", "1,2026-01-01T00:00:00.0005Z,7,2,3\n", []row{{line: 2, column: "ts", err: "not a whole millisecond"}}},
		{"fractional sensor", "1,1767225600000,7.5,2,3\n", []row{{line: 2, column: "sensor", err: `"7.5" is not a whole number`}}},
		{"huge sensor", "1,1767225600000,99999999999999999999,2,3\n", []row{{line: 2, column: "sensor", err: `"99999999999999999999" is out of range`}}},
		{"bad value", "1,1767225600000,7,lots,3\n", []row{{line: 2, column: "flow", err: `"lots" is not a number`}}},
		{"overflow", "1,1767225600000,7,1e999,3\n", []row{{line: 2, column: "flow", err: `"1e999" overflows float64`}}},
		{"short row then good", "1,1767225600000,7\n\n1,1767225600000,9,2,3\n",
			[]row{{line: 2, err: "3 fields, the header has 5"}, {r: Reading{9, 1767225600000, []float64{2, 3, 1}}, line: 4}}},
		{"bare quote then good", "1,17672\"25600000,7,2,3\n1,1767225600000,9,2,3\n",
			[]row{{line: 2, err: "bare \""}, {r: Reading{9, 1767225600000, []float64{2, 3, 1}}, line: 3}}},
		// In the first field the CSV reader keeps no field positions: Line
		// must not ask it for them.
		{"bare quote first then good", "1\"5,1767225600000,7,2,3\n\"1\"x,1767225600000,7,2,3\n1,1767225600000,9,2,3\n",
			[]row{{line: 2, err: "bare \""}, {line: 3, err: "extraneous"}, {r: Reading{9, 1767225600000, []float64{2, 3, 1}}, line: 4}}},
		{"unclosed quote", "1,1767225600000,9,2,3\n\"1,1767225600000,7,2,3\n",
			[]row{{r: Reading{9, 1767225600000, []float64{2, 3, 1}}, line: 2}, {line: 3, err: "extraneous or missing \" in quoted-field"}}},
		// Go's float syntax is not the CSV's: 1_000 and 0x1p4 are not
		// decimal numbers, whatever strconv.ParseFloat makes of them.
		{"underscore", "1,1767225600000,7,1_5,3\n", []row{{line: 2, column: "flow", err: `"1_5" is not a number`}}},
		{"hexadecimal", "0x1p4,1767225600000,7,2,3\n", []row{{line: 2, column: "speed", err: `"0x1p4" is not a number`}}},
		// NaN parses: whether it may pass is the Validator's to say.
		{"NaN", "NaN,1767225600000,7,2,3\n", []row{{r: Reading{7, 1767225600000, []float64{2, 3, 0}}, line: 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCSVReader(strings.NewReader(head+tc.body), pemsChannels)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				r, err := c.Read()
				if w.err != "" {
					var ce *CSVError
					if !errors.As(err, &ce) || ce.Line != w.line || ce.Column != w.column || !strings.Contains(err.Error(), w.err) || c.Line() != w.line {
						t.Fatalf("row %d: error %#v (%v) at line %d, want a CSVError at line %d, column %q, containing %q", i, err, err, c.Line(), w.line, w.column, w.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("row %d: %v", i, err)
				}
				if tc.name == "NaN" { // NaN ≠ NaN: check it, then compare the rest
					if r.Values[2] == r.Values[2] {
						t.Fatalf("speed %v, want NaN", r.Values[2])
					}
					r.Values[2] = 0
				}
				if r.Sensor != w.r.Sensor || r.TS != w.r.TS || !slices.Equal(r.Values, w.r.Values) || c.Line() != w.line {
					t.Errorf("row %d: %+v at line %d, want %+v at line %d", i, r, c.Line(), w.r, w.line)
				}
			}
			if _, err := c.Read(); err != io.EOF {
				t.Errorf("after the rows: %v, want io.EOF", err)
			}
		})
	}
}

// errReader fails after its text, as a broken pipe or disk would.
type errReader struct{ r io.Reader }

var errDisk = errors.New("disk on fire")

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		return n, errDisk
	}
	return n, err
}

// TestCSVReaderInputFails checks that a failing input ends the rows with
// its own error, not a *CSVError that a caller would skip.
func TestCSVReaderInputFails(t *testing.T) {
	c, err := NewCSVReader(errReader{strings.NewReader("ts,sensor,speed\n1767225600000,1,5\n")}, []string{"speed"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read()
	var ce *CSVError
	if !errors.Is(err, errDisk) || errors.As(err, &ce) {
		t.Errorf("read past the text: %v, want the input's error", err)
	}
}

// ExampleCSVReader reads readings from CSV, checks each with a Validator
// and names the rows that do not fit.
func ExampleCSVReader() {
	in := `ts,sensor,speed,flow,occupancy
2026-01-01T00:00:00Z,12,64.2,310,0.061
2026-01-01T00:00:00Z,400,64.2,310,0.061
2026-01-01T00:05:00Z,12,63.9,,0.058
2026-01-01T00:07:00Z,12,63.9,305,0.058
`
	c, err := NewCSVReader(strings.NewReader(in), []string{"flow", "occupancy", "speed"})
	if err != nil {
		fmt.Println(err)
		return
	}
	v := Validator{Nodes: 307, Channels: 3, StepMs: 5 * 60 * 1000}
	for {
		r, err := c.Read()
		if err == io.EOF {
			break
		}
		if err == nil {
			err = v.Check(r)
		}
		if err != nil {
			fmt.Printf("line %d: %v\n", c.Line(), err)
			continue
		}
		fmt.Printf("line %d: sensor %d at %d: %v\n", c.Line(), r.Sensor, r.TS, r.Values)
	}
	// Output:
	// line 2: sensor 12 at 1767225600000: [310 0.061 64.2]
	// line 3: reading rejected (unknown_sensor): sensor 400 outside [0,307)
	// line 4: sensor 12 at 1767225900000: [0 0.058 63.9]
	// line 5: reading rejected (off_grid): ts 1767226020000 is not a multiple of the 300000 ms slot
}

// BenchmarkCSVReader reads PeMS-shaped rows (RFC 3339 ts, three channels)
// and, for comparison in the same run, decodes the same readings from
// their JSON messages (DecodeReadingInto), the service's side of the
// topic; rows/s is what publish -csv can read on one core.
func BenchmarkCSVReader(b *testing.B) {
	const rows = 10_000
	var text strings.Builder
	text.WriteString("ts,sensor,flow,occupancy,speed\n")
	var msgs [][]byte
	for i := range rows {
		ts := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i/307) * 5 * time.Minute)
		r := Reading{Sensor: i % 307, TS: ts.UnixMilli(), Values: []float64{float64(100 + i%250), 0.0123 + float64(i%50)/1000, 60.5 + float64(i%10)/10}}
		fmt.Fprintf(&text, "%s,%d,%v,%v,%v\n", ts.Format(time.RFC3339), r.Sensor, r.Values[0], r.Values[1], r.Values[2])
		msgs = append(msgs, EncodeReading(nil, &r))
	}
	in := text.String()
	b.Run("csv", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := NewCSVReader(strings.NewReader(in), pemsChannels)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := c.Read(); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	})
	b.Run("json", func(b *testing.B) {
		var r Reading
		b.ReportAllocs()
		for b.Loop() {
			for _, m := range msgs {
				if err := DecodeReadingInto(&r, nil, m); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
	})
}

// countingAs is an input of n bytes of b, counting what is read of it.
type countingAs struct {
	b    byte
	n    int
	read int
}

func (c *countingAs) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	k := min(len(p), c.n-c.read)
	for i := range p[:k] {
		p[i] = c.b
	}
	c.read += k
	return k, nil
}

// TestCSVReaderLongRow checks that a row, or a header, of more than
// MaxCSVRow bytes ends the input with an error that names where, having
// read little more than that: a quote left open made the reader hold the
// rest of the input as one field (256 MiB of input took 1.9 GiB).
func TestCSVReaderLongRow(t *testing.T) {
	const size = 16 << 20
	rest := &countingAs{b: 'a', n: size}
	c, err := NewCSVReader(io.MultiReader(strings.NewReader("ts,sensor,speed\n1767225600000,1,5\n1767225600000,2,\""), rest), []string{"speed"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read()
	var ce *CSVError
	if err == nil || errors.As(err, &ce) || !strings.Contains(err.Error(), "after line 2: a row of more than 1048576 bytes (is a quote left open?)") {
		t.Errorf("open quote before %d bytes: %v, want an error that ends the input", size, err)
	}
	if rest.read > 2<<20 {
		t.Errorf("read %d bytes of the row, want at most %d", rest.read, 2<<20)
	}

	rest = &countingAs{b: 'a', n: size}
	_, err = NewCSVReader(io.MultiReader(strings.NewReader("ts,sensor,"), rest), []string{"speed"})
	if err == nil || !strings.Contains(err.Error(), "csv header: more than 1048576 bytes") {
		t.Errorf("header of %d bytes: %v, want it refused", size, err)
	}
	if rest.read > 2<<20 {
		t.Errorf("read %d bytes of the header, want at most %d", rest.read, 2<<20)
	}
}

// TestCSVReaderLongHeaderMessage checks that a header of more than
// MaxCSVRow bytes is said once as the header's: NewCSVReader wraps the
// limit's error in "csv header: ", which the limit's error said already
// ("csv header: csv header: more than ...").
func TestCSVReaderLongHeaderMessage(t *testing.T) {
	_, err := NewCSVReader(io.MultiReader(strings.NewReader("ts,sensor,"), &countingAs{b: 'a', n: 4 << 20}), []string{"speed"})
	if want := fmt.Sprintf("csv header: more than %d bytes (is a quote left open?)", MaxCSVRow); err == nil || err.Error() != want {
		t.Errorf("header of 4 MiB: %v, want %q", err, want)
	}
}
