package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestPublishCSVBrokerLost stops the broker while forecaster publish
// -csv - -retry-for 0 is fed through a pipe: once kafka-go's own attempts
// have failed, the error says how many readings were
// published and the line to publish again from, and taking the file up
// there once the broker is back leaves every reading on the topic once.
func TestPublishCSVBrokerLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ds := datatest.SZTaxi(t)
	s := ds.Series
	slot := func(step int) string { return csvSlot(ds, step) }
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := readingsBroker(ctx, t, data)
	_, port, _ := net.SplitHostPort(emb.Addr)
	pw := pipeStdin(t)
	done := make(chan error, 1)
	go func() {
		done <- cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", "-", "-dataset", "sz-taxi", "-retry-for", "0"}, io.Discard, io.Discard)
	}()
	io.WriteString(pw, "ts,sensor,speed\n"+slot(0))
	for n := 0; n < s.Nodes; n = len(topicMessages(ctx, t, emb.Addr, "readings")) {
		time.Sleep(20 * time.Millisecond)
	}
	emb.Close()
	io.WriteString(pw, slot(1))
	pw.Close()
	err := <-done
	// Slot 0 is lines 2 to 157 of the input, slot 1 from line 158.
	want := fmt.Sprintf("the %d readings of the rows before line 158 are published to readings: publish again with -from-line 158", s.Nodes)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("publish with the broker gone: %v, want %q", err, want)
	}
	if n := strings.Count(err.Error(), "connection refused"); n > 1 {
		t.Errorf("the error names the refused connection %d times: %v", n, err)
	}

	p, _ := strconv.Atoi(port)
	if emb, err = stream.StartEmbedded(p, data); err != nil {
		t.Fatalf("restart the broker on port %s: %v", port, err)
	}
	defer emb.Close()
	path := filepath.Join(t.TempDir(), "readings.csv")
	if err := os.WriteFile(path, []byte("ts,sensor,speed\n"+slot(0)+slot(1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-dataset", "sz-taxi", "-from-line", "158"}, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	checkOnce(ctx, t, emb.Addr, "readings", 2*s.Nodes)
}

// TestPublishCSVRetry stops the broker while forecaster publish -csv -
// has a slot to write, and starts it again on the same port and data once
// the publish has said it is trying again (-retry-for): the publish
// finishes, and both slots are on the topic, every reading once.
func TestPublishCSVRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ds := datatest.SZTaxi(t)
	nodes := ds.Series.Nodes
	data := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := readingsBroker(ctx, t, data)
	_, port, _ := net.SplitHostPort(emb.Addr)
	pw := pipeStdin(t)
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", "-", "-dataset", "sz-taxi", "-retry-for", "45s"}, io.Discard, &stderr)
	}()
	io.WriteString(pw, "ts,sensor,speed\n"+csvSlot(ds, 0))
	for n := 0; n < nodes; n = len(topicMessages(ctx, t, emb.Addr, "readings")) {
		time.Sleep(20 * time.Millisecond)
	}
	emb.Close()
	io.WriteString(pw, csvSlot(ds, 1))
	pw.Close()
	want := fmt.Sprintf("trying again (%d readings waiting, ", nodes)
	for !strings.Contains(stderr.String(), want) {
		select {
		case err := <-done:
			t.Fatalf("publish ended with the broker gone: %v\nstderr: %s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	p, _ := strconv.Atoi(port)
	emb, err := stream.StartEmbedded(p, data)
	if err != nil {
		t.Fatalf("restart the broker on port %s: %v", port, err)
	}
	defer emb.Close()
	if err := <-done; err != nil {
		t.Fatalf("publish across the restart: %v\nstderr: %s", err, stderr.String())
	}
	checkOnce(ctx, t, emb.Addr, "readings", 2*nodes)
}

// checkOnce checks that topic at addr holds want readings, none twice.
func checkOnce(ctx context.Context, t *testing.T, addr, topic string, want int) {
	t.Helper()
	seen := map[[2]int64]bool{}
	for _, m := range topicMessages(ctx, t, addr, topic) {
		r, err := stream.DecodeReading(m.Key, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		k := [2]int64{int64(r.Sensor), r.TS}
		if seen[k] {
			t.Errorf("sensor %d at %d published twice", r.Sensor, r.TS)
		}
		seen[k] = true
	}
	if len(seen) != want {
		t.Errorf("%d readings on the topic, want %d", len(seen), want)
	}
}

// TestPublishCSVInterrupted stops forecaster publish -csv - (as Ctrl-C
// does) while its pipe is open: it says how many readings it published
// and the line to go on from.
func TestPublishCSVInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ds := datatest.SZTaxi(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := readingsBroker(ctx, t, "")
	pw := pipeStdin(t)
	defer pw.Close()
	run, stop := context.WithCancel(ctx)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- cmdPublish(run, []string{"-brokers", emb.Addr, "-csv", "-", "-dataset", "sz-taxi"}, &out, io.Discard)
	}()
	nodes := ds.Series.Nodes
	io.WriteString(pw, "ts,sensor,speed\n"+csvSlot(ds, 0))
	for n := 0; n < nodes; n = len(topicMessages(ctx, t, emb.Addr, "readings")) {
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted publish: %v", err)
	}
	if want := fmt.Sprintf("interrupted: published %d readings from standard input to readings; go on with -from-line %d\n", nodes, nodes+2); out.String() != want {
		t.Errorf("interrupted publish said %q, want %q", out.String(), want)
	}
}

// TestPublishCSVFromPastTheEnd checks that a -from-ts or -from-line that
// leaves out every row of the file is an error naming the flag, not a
// publish of nothing that exits 0 (a typo in a resume would otherwise
// look like a finished publish).
func TestPublishCSVFromPastTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := os.WriteFile(path, []byte("ts,sensor,speed\n1420070400000,0,8.5\n1420070400000,1,18.4\n1420071300000,0,9.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-from-ts", "2030-01-01T00:00:00Z"}, "-from-ts"},
		{[]string{"-sort", "-from-ts", "1420071300001"}, "-from-ts"},
		{[]string{"-from-line", "5"}, "-from-line"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, tc.args...)
		err := cmdPublish(ctx, args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("publish %s: %v (stdout %q), want an error naming %s", strings.Join(args, " "), err, out.String(), tc.want)
		}
	}
	// Those that leave a row are fine.
	for _, from := range [][]string{{"-from-ts", "1420071300000"}, {"-from-line", "4"}} {
		args := append([]string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, from...)
		if err := cmdPublish(ctx, args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Errorf("publish %s: %v", strings.Join(args, " "), err)
		}
	}
}

// TestPublishCSVTruncated cuts a .csv.gz short, as a copy or a download
// stopped midway leaves it: every way of reading it says the file is
// truncated and after which line, a publish says how many readings it
// published and the -from-line that takes it up, and taking it up with the
// whole file publishes the rest, every row once.
func TestPublishCSVTruncated(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const nodes, steps = 156, 40
	var text strings.Builder
	text.WriteString("ts,sensor,speed\n")
	for step := range steps {
		for i := range nodes {
			fmt.Fprintf(&text, "%d,%d,%.6f\n", 1420070400000+int64(step)*900000, i, float64((step*nodes+i)*7919%10007)/100)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text.String()))
	zw.Close()
	tmp := t.TempDir()
	whole := filepath.Join(tmp, "whole.csv.gz")
	cut := filepath.Join(tmp, "cut.csv.gz")
	if err := os.WriteFile(whole, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, gz.Bytes()[:gz.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	// The lines whole before the cut, the header included.
	zr, err := gzip.NewReader(bytes.NewReader(gz.Bytes()[:gz.Len()/2]))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading the cut file: %v, want unexpected EOF", err)
	}
	lines := bytes.Count(got, []byte("\n"))
	if lines < 100 || lines > steps*nodes/2+50 {
		t.Fatalf("%d lines before the cut", lines)
	}
	truncated := fmt.Sprintf("truncated: the gzip stream ends after line %d (unexpected EOF)", lines)

	emb := readingsBroker(context.Background(), t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		name      string
		data      []byte // the file, if not cut
		args      []string
		want      []string // in the error
		published int      // readings on the topic
	}{
		{name: "dry run", args: []string{"-dry-run"},
			want: []string{cut + ": " + truncated, fmt.Sprintf("before it %d readings fit, 0 bad rows", lines-1)}},
		{name: "publish", args: []string{"-topic", "publish"},
			want:      []string{cut + ": " + truncated, fmt.Sprintf("the %d readings of the rows before line %d are published to publish: with the whole file, go on with -from-line %d", lines-1, lines+1, lines+1)},
			published: lines - 1},
		{name: "sort", args: []string{"-topic", "sort", "-sort"},
			want: []string{truncated, "nothing is published"}},
		{name: "cut in the header", data: gz.Bytes()[:30], args: []string{"-topic", "header"},
			want: []string{"csv header: truncated: the gzip stream ends before its end"}},
		{name: "cut in gzip's header", data: gz.Bytes()[:5], args: []string{"-topic", "gzip"},
			want: []string{"truncated: the gzip stream ends before its end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := cut
			if tc.data != nil {
				path = filepath.Join(t.TempDir(), "cut.csv.gz")
				if err := os.WriteFile(path, tc.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"-brokers", emb.Addr, "-csv", path, "-dataset", "sz-taxi"}, tc.args...)
			err := cmdPublish(ctx, args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("publish %s: %v, want an unexpected EOF", strings.Join(tc.args, " "), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("publish %s: %v\nwant it to say %q", strings.Join(tc.args, " "), err, w)
				}
			}
			if tc.published > 0 {
				if n := len(topicMessages(ctx, t, emb.Addr, tc.args[1])); n != tc.published {
					t.Errorf("%d readings on the topic, want the %d before the cut", n, tc.published)
				}
			}
		})
	}
	// Taken up from the line named, the whole file publishes the rest.
	var out bytes.Buffer
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", whole, "-dataset", "sz-taxi", "-topic", "publish", "-from-line", strconv.Itoa(lines + 1)}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	checkOnce(ctx, t, emb.Addr, "publish", steps*nodes)
}
