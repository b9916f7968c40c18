package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/segmentio/kafka-go"
)

// TestPublishCSV runs forecaster publish -csv -model on SZ-taxi's first
// two slots written as CSV, with a row of an unknown sensor among them:
// -dry-run (no broker) names the row and fails; -bad-rows stop publishes
// the rows before it and fails naming its line; -bad-rows skip publishes
// every other row, names the bad one on stderr and counts it. Every
// reading on a topic is its row's, and none is there twice.
func TestPublishCSV(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const T, steps, bad = 12, 2, 100 // the bad row follows 100 good ones: line 102
	_, ds, _, b := szTaxiBundle(t, T, 8)
	tmp := t.TempDir()
	model := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(model); err != nil {
		t.Fatal(err)
	}
	s := ds.Series
	type key struct {
		sensor int
		ts     int64
	}
	var (
		text  strings.Builder
		want  = map[key]float64{}
		order []key
	)
	text.WriteString("ts,sensor,speed\n")
	for step := range steps {
		ts := ds.Info.Start.Add(time.Duration(step) * 15 * time.Minute)
		for i := range s.Nodes {
			if len(order) == bad {
				fmt.Fprintf(&text, "%s,%d,30\n", ts.Format(time.RFC3339), s.Nodes)
			}
			v := s.Data[step*s.Nodes+i]
			fmt.Fprintf(&text, "%s,%d,%v\n", ts.Format(time.RFC3339), i, v)
			k := key{i, ts.UnixMilli()}
			want[k] = v
			order = append(order, k)
		}
	}
	path := filepath.Join(tmp, "readings.csv")
	if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	badLine := fmt.Sprintf("%s: line 102: sensor %d outside [0,%d) (unknown_sensor)", path, s.Nodes, s.Nodes)

	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := cmdPublish(ctx, []string{"-csv", path, "-model", model, "-dry-run"}, &out, &errOut)
	if err == nil || !strings.Contains(errOut.String(), badLine) ||
		!strings.Contains(out.String(), fmt.Sprintf("%d readings fit sz-taxi (sensors 0–%d; speed; 15-minute slots); 1 bad row", len(order), s.Nodes-1)) {
		t.Errorf("dry run: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}

	// The same rows gzip-compressed read the same; cut short, they fail
	// naming the cut, after the rows before it.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text.String()))
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{{"readings.csv.gz", gz.Bytes(), "1 bad row"}, {"cut.csv.gz", gz.Bytes()[:gz.Len()/2], "unexpected EOF"}} {
		zpath := filepath.Join(tmp, tc.name)
		if err := os.WriteFile(zpath, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		out.Reset()
		errOut.Reset()
		err := cmdPublish(ctx, []string{"-csv", zpath, "-model", model, "-dry-run"}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("dry run of %s: %v, want an error containing %q", tc.name, err, tc.err)
		}
		if tc.name == "readings.csv.gz" && !strings.Contains(out.String(), fmt.Sprintf("%d readings fit sz-taxi", len(order))) {
			t.Errorf("dry run of %s: %s", tc.name, out.String())
		}
	}

	emb, err := stream.StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	for _, tc := range []struct {
		mode string
		want []key // published, in the file's order
	}{{"stop", order}, {"skip", order}} {
		out.Reset()
		errOut.Reset()
		err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-model", model, "-bad-rows", tc.mode, "-topic", tc.mode}, &out, &errOut)
		switch tc.mode {
		case "stop":
			if err == nil || !strings.Contains(err.Error(), strings.TrimPrefix(badLine, path+": ")) ||
				!strings.Contains(err.Error(), fmt.Sprintf("the %d readings before it are published to stop; mend the row and go on from it with -from-line 102, or leave it out with -from-line 103", bad)) {
				t.Fatalf("-bad-rows stop: %v, want the bad line, the count before it and where to go on", err)
			}
			if n := len(topicMessages(ctx, t, emb.Addr, "stop")); n != bad {
				t.Errorf("-bad-rows stop: %d readings on the topic, want the %d before the bad row", n, bad)
			}
			// Taken up past the bad row, the rest follows, nothing twice.
			out.Reset()
			if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", path, "-model", model, "-from-line", "103", "-topic", "stop"}, &out, &errOut); err != nil {
				t.Fatalf("-from-line 103: %v", err)
			}
			if want := fmt.Sprintf("published %d readings", len(order)-bad); !strings.Contains(out.String(), want) {
				t.Errorf("-from-line 103 said %q, want %q", out.String(), want)
			}
		case "skip":
			if err != nil || !strings.Contains(errOut.String(), badLine) ||
				!strings.Contains(out.String(), fmt.Sprintf("published %d readings from %s to skip (1 bad row skipped)", len(order), path)) {
				t.Errorf("-bad-rows skip: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
			}
		}
		got := map[key]bool{}
		for _, m := range topicMessages(ctx, t, emb.Addr, tc.mode) {
			r, err := stream.DecodeReading(m.Key, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			k := key{r.Sensor, r.TS}
			if v, ok := want[k]; !ok || got[k] || r.Values[0] != v {
				t.Fatalf("-bad-rows %s: reading %+v is not a row of the file, or came twice", tc.mode, r)
			}
			got[k] = true
		}
		for _, k := range tc.want {
			if !got[k] {
				t.Errorf("-bad-rows %s: sensor %d at %d not published", tc.mode, k.sensor, k.ts)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("-bad-rows %s: %d readings published, want %d", tc.mode, len(got), len(tc.want))
		}
	}
}

// topicMessages returns every message of topic, partition after
// partition, as far as each partition's last offset.
func topicMessages(ctx context.Context, t *testing.T, addr, topic string) []kafka.Message {
	t.Helper()
	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := conn.ReadPartitions(topic)
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ms []kafka.Message
	for _, p := range parts {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p.ID, MaxWait: 50 * time.Millisecond})
		c, err := kafka.DialLeader(ctx, "tcp", addr, topic, p.ID)
		if err != nil {
			t.Fatal(err)
		}
		end, err := c.ReadLastOffset()
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i := int64(0); i < end; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("%s partition %d, offset %d of %d: %v", topic, p.ID, i, end, err)
			}
			ms = append(ms, m)
		}
		r.Close()
	}
	return ms
}

// TestPublishCSVStdin feeds forecaster publish -csv - through a pipe, a
// slot of SZ-taxi's readings at a time, as a collector that writes what
// its sensors report would: the first slot is on the topic while the
// pipe is still open, and the second follows it when the pipe closes.
func TestPublishCSVStdin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ds := datatest.SZTaxi(t)
	s := ds.Series
	slot := func(step int) string { return csvSlot(ds, step) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := readingsBroker(ctx, t, "")
	pw := pipeStdin(t)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- cmdPublish(ctx, []string{"-brokers", emb.Addr, "-csv", "-", "-dataset", "sz-taxi"}, &out, io.Discard)
	}()
	if _, err := io.WriteString(pw, "ts,sensor,speed\n"+slot(0)); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < s.Nodes; {
		select {
		case err := <-done:
			t.Fatalf("publish ended with the pipe open: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		n = len(topicMessages(ctx, t, emb.Addr, "readings"))
	}
	if _, err := io.WriteString(pw, slot(1)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("published %d readings from standard input to readings\n", 2*s.Nodes); out.String() != want {
		t.Errorf("publish said %q, want %q", out.String(), want)
	}
	if n := len(topicMessages(ctx, t, emb.Addr, "readings")); n != 2*s.Nodes {
		t.Errorf("%d readings on the topic, want %d", n, 2*s.Nodes)
	}
}

// csvSlot returns the CSV rows of SZ-taxi's readings of one step, ts in
// Unix ms, without a header.
func csvSlot(ds *pems.Dataset, step int) string {
	var b strings.Builder
	s := ds.Series
	ts := ds.Info.Start.Add(time.Duration(step) * 15 * time.Minute).UnixMilli()
	for i := range s.Nodes {
		fmt.Fprintf(&b, "%d,%d,%v\n", ts, i, s.Data[step*s.Nodes+i])
	}
	return b.String()
}

// readingsBroker starts an embedded broker (persisting to dataDir unless
// empty), closed when the test ends, with a readings topic of four
// partitions. The topic is there before anything looks at it: kafka-go's
// metadata requests may create a missing topic, of the broker's default
// size.
func readingsBroker(ctx context.Context, t *testing.T, dataDir string) *stream.Embedded {
	t.Helper()
	emb, err := stream.StartEmbedded(0, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	t.Cleanup(func() { emb.Close() })
	if err := (stream.Security{}).EnsureTopics(ctx, []string{emb.Addr}, 4, "readings"); err != nil {
		t.Fatal(err)
	}
	return emb
}

// pipeStdin makes a pipe what publish -csv - reads until the test ends,
// and returns its writing end.
func pipeStdin(t *testing.T) *io.PipeWriter {
	pr, pw := io.Pipe()
	saved := stdin
	stdin = pr
	t.Cleanup(func() { stdin = saved })
	return pw
}

// publish -csv with a bundle and another dataset is refused, as a
// dataset replay's is: the readings are checked against the bundle.
func TestPublishCSVOtherDataset(t *testing.T) {
	_, _, _, b := szTaxiBundle(t, 4, 4)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run([]string{"publish", "-csv", "-", "-model", path, "-dataset", "pems08", "-dry-run"}, &out, &errb)
	if want := "-dataset pems08: the bundle is for sz-taxi"; code != 2 || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d (want 2), stderr %q, want it to contain %q", code, errb.String(), want)
	}
}
