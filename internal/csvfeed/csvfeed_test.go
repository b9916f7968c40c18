package csvfeed

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/stream"
)

// szTaxiRows writes SZ-taxi's readings of steps as CSV rows ts,sensor,
// speed, sensor by sensor, each step's in turn.
func szTaxiRows(ds *pems.Dataset, steps ...int) string {
	var b strings.Builder
	s := ds.Series
	for _, step := range steps {
		ts := ds.Info.Start.Add(time.Duration(step) * 15 * time.Minute).UnixMilli()
		for i := range s.Nodes {
			fmt.Fprintf(&b, "%d,%d,%v\n", ts, i, s.Data[step*s.Nodes+i])
		}
	}
	return b.String()
}

// TestDryRun checks a Job's dry run on SZ-taxi's rows: what fits is
// counted, and a bad row, a row that repeats a slot with other values, a
// row further out of time order than the history (unless sorted) and a
// resume past the end fail, naming what they found; a gzip-compressed
// input reads as the plain one.
func TestDryRun(t *testing.T) {
	ds := datatest.SZTaxi(t)
	n := ds.Series.Nodes
	start := ds.Info.Start.UnixMilli()
	header := "ts,sensor,speed\n"
	inOrder := header + szTaxiRows(ds, 0, 1, 2)
	// A row of the last slot again, with another value where the first
	// gave one (a value the slot lacked would complete it instead).
	z := 0
	for ds.Series.Data[2*n+z] == 0 {
		z++
	}
	repeated := inOrder + fmt.Sprintf("%d,%d,%v\n", start+2*15*60*1000, z, ds.Series.Data[2*n+z]+1)
	behind := header + szTaxiRows(ds, 2, 0)
	gzipped := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	for _, tc := range []struct {
		name     string
		in       string
		sort     bool
		skipBad  bool
		fromLine int
		err      string // "" none
		out      string // in stdout
	}{
		{name: "in order", in: inOrder, out: fmt.Sprintf("%d readings fit sz-taxi (sensors 0–%d; speed; 15-minute slots); 0 bad rows", 3*n, n-1)},
		{name: "gzip-compressed", in: gzipped(inOrder), out: fmt.Sprintf("%d readings fit sz-taxi", 3*n)},
		{name: "bad row", in: inOrder + fmt.Sprintf("%d,%d,30\n", start, n), err: "1 bad row", out: fmt.Sprintf("%d readings fit", 3*n)},
		{name: "repeated slot", in: repeated, err: "1 row repeats a slot with other values"},
		{name: "behind the history", in: behind, err: fmt.Sprintf("%d rows out of time order", n)},
		{name: "behind, sorted", in: behind, sort: true, out: fmt.Sprintf("%d readings fit", 2*n)},
		{name: "from past the end", in: inOrder, fromLine: 3*n + 2, err: fmt.Sprintf("-from-line %d leaves out every row (%d)", 3*n+2, 3*n)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Path: "-", Topic: "readings", DryRun: true, Sort: tc.sort, SkipBad: tc.skipBad, FromLine: tc.fromLine, History: 1,
				Dataset: "sz-taxi", Channels: ds.Info.Channels,
				Valid: stream.Validator{Nodes: n, Channels: len(ds.Info.Channels), StepMs: 15 * 60 * 1000}}
			var out, errOut bytes.Buffer
			err := j.Run(context.Background(), strings.NewReader(tc.in), nil, stream.Security{}, &out, &errOut)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%v\nstderr: %s", err, errOut.String())
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q\nstderr: %s", err, tc.err, errOut.String())
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q, want %q in it", out.String(), tc.out)
			}
		})
	}
}

// TestDryRunByID checks a dry run of Los-loop's rows keyed by detector
// ID: what fits is counted and the sensors described by their IDs; a row
// keyed by index, or of an ID the model lacks, is a bad row naming it;
// and a row that repeats a slot with other values is named by its ID.
func TestDryRunByID(t *testing.T) {
	ds := datatest.LosLoop(t)
	names, err := ds.Names()
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Series
	var rows strings.Builder
	rows.WriteString("ts,sensor,speed\n")
	for step := range 2 {
		ts := ds.Info.Start.Add(time.Duration(step) * 5 * time.Minute).UnixMilli()
		for i := range s.Nodes {
			fmt.Fprintf(&rows, "%d,%s,%v\n", ts, ds.SensorIDs[i], s.Data[step*s.Nodes+i])
		}
	}
	start := ds.Info.Start.UnixMilli()
	for _, tc := range []struct {
		name, in, err, stderr, out string
	}{
		{name: "by ID", in: rows.String(), out: fmt.Sprintf("%d readings fit los-loop (207 sensor IDs (773869, 767541, …); speed; 5-minute slots); 0 bad rows", 2*s.Nodes)},
		{name: "by index", in: rows.String() + fmt.Sprintf("%d,5,60\n", start), err: "1 bad row", stderr: `"5" is not one of the 207 sensor IDs`},
		{name: "unknown ID", in: rows.String() + fmt.Sprintf("%d,999999,60\n", start), err: "1 bad row", stderr: `"999999" is not one`},
		{name: "repeated slot", in: rows.String() + fmt.Sprintf("%d,%s,%v\n", start, ds.SensorIDs[1], s.Data[1]+1), err: "1 row repeats a slot", stderr: "gives sensor " + ds.SensorIDs[1] + " at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &Job{Path: "-", Topic: "readings", DryRun: true, SkipBad: true, History: 12, Dataset: "los-loop", Channels: ds.Info.Channels, Sensors: names,
				Valid: stream.Validator{Nodes: s.Nodes, Channels: 1, StepMs: 5 * 60 * 1000}}
			var out, errOut bytes.Buffer
			err := j.Run(context.Background(), strings.NewReader(tc.in), nil, stream.Security{}, &out, &errOut)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("%v\nstderr: %s", err, errOut.String())
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one with %q\nstderr: %s", err, tc.err, errOut.String())
			}
			if !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stdout %q, stderr %q; want %q and %q in them", out.String(), errOut.String(), tc.out, tc.stderr)
			}
		})
	}
}
