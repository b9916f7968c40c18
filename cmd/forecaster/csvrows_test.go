package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestPublishCSVSorted writes 50 slots of SZ-taxi's readings sensor by
// sensor, as a database export may: each sensor's rows after the last
// sensor's whole series. A dry run names the rows that come more than the
// service's history after a later one (13 slots of each sensor after the
// first: those before slot 49 − 36) and fails; with -sort it passes, and
// the publish puts every partition in time order, every reading once.
// -from-ts leaves out the earlier slots, and a bad row stops a sorted
// publish before anything is sent.
func TestPublishCSVSorted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const steps = 50
	ds := datatest.SZTaxi(t)
	s := ds.Series
	var text strings.Builder
	text.WriteString("ts,sensor,speed\n")
	for i := range s.Nodes {
		for step := range steps {
			ts := ds.Info.Start.Add(time.Duration(step) * 15 * time.Minute).UnixMilli()
			fmt.Fprintf(&text, "%d,%d,%v\n", ts, i, s.Data[step*s.Nodes+i])
		}
	}
	tmp := t.TempDir()
	path := filepath.Join(tmp, "by-sensor.csv")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	behind := 13 * (s.Nodes - 1)
	first := fmt.Sprintf("line %d (ts 2015-01-01T00:00:00Z) comes after line %d (ts 2015-01-01T12:15:00Z), 49 slots later", steps+2, steps+1)
	err := cmdPublish(ctx, []string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, &out, &errOut)
	if want := fmt.Sprintf("%d rows out of time order", behind); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(errOut.String(), first) {
		t.Errorf("dry run: %v, want %q\nstderr: %s", err, want, errOut.String())
	}
	out.Reset()
	errOut.Reset()
	if err := cmdPublish(ctx, []string{"-csv", path, "-dataset", "sz-taxi", "-dry-run", "-sort"}, &out, &errOut); err != nil || errOut.Len() > 0 {
		t.Errorf("dry run with -sort: %v\nstderr: %s", err, errOut.String())
	}
	// A service that keeps 49 slots or more takes the file as it stands.
	for _, tc := range []struct {
		history string
		behind  int
	}{{"48", s.Nodes - 1}, {"49", 0}, {"1", (steps - 2) * (s.Nodes - 1)}} {
		err := cmdPublish(ctx, []string{"-csv", path, "-dataset", "sz-taxi", "-dry-run", "-history", tc.history}, io.Discard, io.Discard)
		if want := fmt.Sprintf(": %d rows out of time order", tc.behind); tc.behind > 0 && (err == nil || !strings.HasSuffix(err.Error(), want)) || tc.behind == 0 && err != nil {
			t.Errorf("dry run with -history %s: %v, want %d rows out of order", tc.history, err, tc.behind)
		}
	}

	emb := readingsBroker(ctx, t, "")
	// readings reads every partition of topic in order and checks each is
	// in time order, every reading of the file once; it returns how many
	// readings of each slot there are.
	readings := func(topic string) map[int64]int {
		t.Helper()
		perSlot := map[int64]int{}
		seen := map[[2]int64]bool{}
		last := map[int]int64{}
		for _, m := range topicMessages(ctx, t, emb.Addr, topic) {
			r, err := stream.DecodeReading(m.Key, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			step := int((r.TS - ds.Info.Start.UnixMilli()) / (15 * 60 * 1000))
			k := [2]int64{int64(r.Sensor), r.TS}
			if seen[k] || step < 0 || step >= steps || r.Values[0] != s.Data[step*s.Nodes+r.Sensor] {
				t.Fatalf("%s: reading %+v twice, or not the file's", topic, r)
			}
			seen[k] = true
			if r.TS < last[m.Partition] {
				t.Fatalf("%s: partition %d has ts %d after %d", topic, m.Partition, r.TS, last[m.Partition])
			}
			last[m.Partition] = r.TS
			perSlot[r.TS]++
		}
		return perSlot
	}
	out.Reset()
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-dataset", "sz-taxi", "-sort", "-topic", "sorted"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("published %d readings from %s to sorted\n", steps*s.Nodes, path); out.String() != want {
		t.Errorf("sorted publish said %q, want %q", out.String(), want)
	}
	if got := readings("sorted"); len(got) != steps {
		t.Errorf("%d slots published, want %d", len(got), steps)
	}

	// Unsorted, it is published as it stands, with a warning.
	out.Reset()
	errOut.Reset()
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-dataset", "sz-taxi", "-topic", "as-is"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "warning: "+first) || !strings.Contains(out.String(), fmt.Sprintf("(%d rows out of time order)", behind)) {
		t.Errorf("unsorted publish: stdout %q, stderr %q", out.String(), errOut.String())
	}

	// -from-ts: only the slots from the 25th.
	from := ds.Info.Start.Add(25 * 15 * time.Minute)
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-dataset", "sz-taxi", "-sort", "-from-ts", from.Format(time.RFC3339), "-topic", "from"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := readings("from")
	for ts, n := range got {
		if ts < from.UnixMilli() || n != s.Nodes {
			t.Errorf("-from-ts %s: %d readings of ts %d", from.Format(time.RFC3339), n, ts)
		}
	}
	if len(got) != steps-25 {
		t.Errorf("-from-ts: %d slots published, want %d", len(got), steps-25)
	}

	// A bad row: nothing published.
	badPath := filepath.Join(tmp, "bad.csv")
	if err := os.WriteFile(badPath, []byte(text.String()+"0,9999,1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", badPath, "-dataset", "sz-taxi", "-sort", "-topic", "bad"}, io.Discard, io.Discard)
	if want := fmt.Sprintf("line %d: sensor 9999 outside [0,%d) (unknown_sensor); nothing is published", steps*s.Nodes+2, s.Nodes); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("sorted publish of a bad row: %v, want %q", err, want)
	}
	if n := len(topicMessages(ctx, t, emb.Addr, "bad")); n != 0 {
		t.Errorf("%d readings published before the bad row was found", n)
	}
}

// TestPublishCSVNonFinite checks that a value that is not a finite number
// is named by its line and its column, as the header names it, whatever
// the order of the columns, rather than by its index among the values.
func TestPublishCSVNonFinite(t *testing.T) {
	for _, tc := range []struct {
		name, dataset, text, want string
	}{
		{"NaN", "sz-taxi", "ts,sensor,speed\n1420070400000,0,8.5\n1420070400000,1,NaN\n",
			"line 3, column speed: NaN is not a finite number (non_finite)"},
		{"infinity", "sz-taxi", "ts,sensor,speed\n1420070400000,0,-Inf\n",
			"line 2, column speed: -Inf is not a finite number (non_finite)"},
		{"columns swapped", "pems04", "speed,ts,occupancy,sensor,flow\n60,1514764800000,0.1,0,120\n61,1514764800000,nan,1,121\n",
			"line 3, column occupancy: NaN is not a finite number (non_finite)"},
		{"last channel", "pems04", "ts,sensor,flow,occupancy,speed\n1514764800000,0,120,0.1,+Inf\n",
			"line 2, column speed: +Inf is not a finite number (non_finite)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.csv")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			err := cmdPublish(context.Background(), []string{"-csv", path, "-dataset", tc.dataset, "-dry-run"}, &out, &errOut)
			if err == nil || !strings.Contains(errOut.String(), path+": "+tc.want) {
				t.Errorf("dry run: %v\nstderr: %s\nwant it to say %q", err, errOut.String(), tc.want)
			}
		})
	}
}

// TestPublishCSVOtherCompression checks that a file compressed otherwise
// than with gzip is refused as what it is, with the command that
// decompresses it, rather than read as a CSV header of binary bytes.
func TestPublishCSVOtherCompression(t *testing.T) {
	for _, tc := range []struct {
		name, head, want string
	}{
		{"r.csv.bz2", "BZh91AY&SY\x00\x01", "the input is bzip2-compressed"},
		{"r.csv.xz", "\xfd7zXZ\x00\x00\x04", "the input is xz-compressed"},
		{"r.csv.zst", "\x28\xb5\x2f\xfd\x04\x58", "the input is zstd-compressed"},
		{"r.zip", "PK\x03\x04\x14\x00", "the input is a zip archive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), tc.name)
			if err := os.WriteFile(path, []byte(tc.head+"\x9c\x7f\"binary\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := cmdPublish(context.Background(), []string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), "-csv "+path+": "+tc.want) || !strings.Contains(err.Error(), "decompress it first") {
				t.Errorf("publish -csv %s: %v, want it to say %q and how to decompress it", tc.name, err, tc.want)
			}
		})
	}
	// A plain CSV is read as before.
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := os.WriteFile(path, []byte("ts,sensor,speed\n1420070400000,0,8.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmdPublish(context.Background(), []string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("plain CSV: %v", err)
	}
}

// TestPublishCSVRepeatedSlot checks that a row giving a sensor's slot
// other values than an earlier row did is named, as the service keeps the
// first reading of a slot and drops the other; a row repeated as it was
// is applied once and is no problem, and so is one that gives a value
// missing before (the service completes the slot).
func TestPublishCSVRepeatedSlot(t *testing.T) {
	const head = "ts,sensor,speed\n1420070400000,0,8.5\n1420070400000,1,18.4\n1420071300000,0,9.1\n"
	for _, tc := range []struct {
		name, rows string
		args       []string
		want       string // in the error and on stderr; "" for none
	}{
		{"other value", "1420070400000,1,18.5\n", nil,
			"line 5 gives sensor 1 at 2015-01-01T00:00:00Z other values (speed 18.5) than line 3 did (speed 18.4)"},
		// 0 is a missing value: the service completes a slot that lacks
		// it, and keeps a value over a later missing one.
		{"a missing value, then the reading", "1420071300000,1,0\n1420071300000,1,19.2\n", nil, ""},
		{"a reading, then a missing value", "1420070400000,1,0\n", nil, ""},
		{"other value after a completion", "1420071300000,1,0\n1420071300000,1,19.2\n1420071300000,1,19.3\n", nil,
			"line 7 gives sensor 1 at 2015-01-01T00:15:00Z other values (speed 19.3) than line 6 did (speed 19.2)"},
		{"other value, sorted", "1420070400000,0,8.6\n", []string{"-sort"},
			"line 5 gives sensor 0 at 2015-01-01T00:00:00Z other values (speed 8.6) than line 2 did (speed 8.5)"},
		{"the same value", "1420070400000,1,18.4\n", nil, ""},
		{"the same value written otherwise", "2015-01-01T00:00:00Z,1,18.40\n", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.csv")
			if err := os.WriteFile(path, []byte(head+tc.rows), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errOut bytes.Buffer
			args := append([]string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, tc.args...)
			err := cmdPublish(context.Background(), args, &out, &errOut)
			if tc.want == "" {
				if err != nil {
					t.Errorf("dry run: %v\nstderr: %s", err, errOut.String())
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "1 row repeats a slot with other values") || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("dry run: %v\nstderr: %s\nwant the count and %q", err, errOut.String(), tc.want)
			}
		})
	}
}
