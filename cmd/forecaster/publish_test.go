package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestReplayPlan checks which steps publish and demo replay: the part of
// the model's split (its window too) when a bundle is given, a
// chronological 6:2:2 split of 12-step windows otherwise, and clear errors
// for a bundle that does not fit the data (another split, another road
// graph) or the request.
func TestReplayPlan(t *testing.T) {
	const T = 12
	dir, ds, chrono, b12 := szTaxiBundle(t, T, 8)
	n := ds.Series.Steps
	degrees := make([]int, ds.Series.Nodes)
	for i, nb := range ds.Graph.Neighbors() {
		degrees[i] = len(nb)
	}
	must := func(s snapshot.Split, err error) snapshot.Split {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	chrono8 := must(snapshot.ChronoSplit(n-8, [3]float64{6, 2, 2}))
	windows := must(snapshot.WindowSplit(n-T, [3]float64{7, 1, 2}))
	nodes := must(snapshot.NodeSplit(n-T, degrees, [3]float64{7, 1, 2}))
	with := func(window int, split snapshot.Split, edit func(*sdgnn.BundleMeta)) *sdgnn.Bundle {
		b := randomBundle(t, ds, split, b12.Meta.Norm, window, 8)
		if edit != nil {
			edit(&b.Meta)
		}
		return b
	}
	shifted := chrono
	shifted.Test.End--
	own := ds.Graph.Fingerprint(b12.Meta.Norm.Edges != nil)
	ring := &pems.Graph{Nodes: ds.Series.Nodes}
	for i := range ring.Nodes - 1 {
		ring.Edges = append(ring.Edges, pems.Edge{From: i, To: i + 1, Cost: 1})
	}
	other := ring.Fingerprint(own.Costs)
	for _, tc := range []struct {
		name     string
		bundle   *sdgnn.Bundle
		part     string
		limit    int
		from, to int
		what     string // in the account of the plan
		err      string // in the error, when one is expected
	}{
		{name: "no model: chronological test", part: "test", from: chrono.Test.Start, to: chrono.Test.End + T, what: "snapshots"},
		{name: "no model: validation, 5 steps", part: "val", limit: 5, from: chrono.Val.Start, to: chrono.Val.Start + 5},
		{name: "model's chronological split", bundle: b12, part: "test", from: chrono.Test.Start, to: chrono.Test.End + T},
		{name: "model's window of 8", bundle: with(8, chrono8, nil), part: "test", from: chrono8.Test.Start, to: chrono8.Test.End + 8},
		// 7,1,2: positions 8 and 9 of every ten are test snapshots.
		{name: "split by windows: test", bundle: with(T, windows, nil), part: "test", from: 8, to: windows.Test.Last() + 1 + T, what: "windows"},
		{name: "split by windows: validation", bundle: with(T, windows, nil), part: "val", from: 7, to: windows.Val.Last() + 1 + T},
		{name: "split by nodes: the whole series", bundle: with(T, nodes, nil), part: "test", from: 0, to: n, what: "nodes"},
		{name: "another dataset", bundle: with(T, chrono, func(m *sdgnn.BundleMeta) { m.Dataset = "pems08" }), part: "test", err: "is for pems08, not sz-taxi"},
		{name: "no split recorded", bundle: with(T, snapshot.Split{}, nil), part: "test", err: "records no split"},
		{name: "split the data no longer gives", bundle: with(T, shifted, nil), part: "test", err: "now split as"},
		{name: "the model's graph", bundle: with(T, chrono, func(m *sdgnn.BundleMeta) { m.Graph = &own }), part: "test", from: chrono.Test.Start, to: chrono.Test.End + T},
		{name: "another graph", bundle: with(T, chrono, func(m *sdgnn.BundleMeta) { m.Graph = &other }), part: "test", err: "bundle m.sdgnn: the road graph of sz-taxi in " + filepath.Join(dir, "sz-taxi", "SZ_taxi_adj.csv") + " is not the one the model was trained on"},
		{name: "unknown part", part: "tests", err: `-split-part "tests": want train, val or test`},
		{name: "negative steps", part: "test", limit: -1, err: "-steps -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl, err := replay{dataDir: dir, dataset: "sz-taxi", bundle: tc.bundle, model: "m.sdgnn", part: tc.part, topic: "readings", limit: tc.limit}.plan()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pl.from != tc.from || pl.to != tc.to {
				t.Errorf("steps %d–%d, want %d–%d", pl.from, pl.to, tc.from, tc.to)
			}
			if !strings.Contains(pl.what, tc.what) || !strings.Contains(pl.what, tc.part) {
				t.Errorf("account %q does not name %q and the %s part", pl.what, tc.what, tc.part)
			}
			if !pl.t0.Equal(ds.Info.Start) || pl.stepMs != 15*60*1000 {
				t.Errorf("first step at %v every %d ms, want %v every 15 min", pl.t0, pl.stepMs, ds.Info.Start)
			}
			// The live view's scope is the part replayed: its first
			// snapshot's forecast is the first in it, in the model's window.
			sc := pl.scope()
			if err := sc.Check(pl.stepMs); err != nil {
				t.Fatal(err)
			}
			node := 0 // a sensor of the part
			if sc.Part.Nodes != nil {
				node = sc.Part.Nodes[0]
			}
			first := pl.t0.UnixMilli() + int64(sc.Part.First()+sc.Window)*pl.stepMs
			if sc.Part.First() != tc.from || sc.Name != tc.part+" part" || sc.StartMs != pl.t0.UnixMilli() ||
				!sc.Holds(node, first, pl.stepMs) || sc.Holds(node, first-pl.stepMs, pl.stepMs) {
				t.Errorf("scope %q of snapshots from %d, window %d: want the %s part from %d, its first forecast at step %d the first in it",
					sc.Name, sc.Part.First(), sc.Window, tc.part, tc.from, sc.Part.First()+sc.Window)
			}
		})
	}
}

// TestServeScorePart checks serve's -score-part flags: they are refused
// before any broker is started when they do not fit.
func TestServeScorePart(t *testing.T) {
	dir, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string // in the error or on stderr
	}{
		{[]string{"-data", dir}, "-data and -start only serve -score-part"},
		{[]string{"-start", "2015-01-01T00:00:00Z"}, "-data and -start only serve -score-part"},
		{[]string{"-score-part", "tests", "-data", dir}, `-score-part "tests": want train, val or test`},
		{[]string{"-score-part", "test", "-data", dir, "-start", "yesterday"}, `-start "yesterday"`},
		{[]string{"-score-part", "test", "-data", filepath.Join(dir, "nowhere")}, "-score-part"},
	} {
		var errOut bytes.Buffer
		err := cmdServe(context.Background(), append([]string{"-model", path, "-http", ""}, tc.args...), io.Discard, &errOut)
		if err == nil || !strings.Contains(err.Error()+errOut.String(), tc.err) {
			t.Errorf("serve %v: %v (%s), want %q", tc.args, err, errOut.String(), tc.err)
		}
	}
}

// TestServeHistoryMemory checks that a -history whose slots would not fit
// in memory (the largest allowed, 1048576 slots: 16.5 GiB for SZ-taxi's 156
// sensors and hidden size 8) is a usage error, given before any broker
// is started, where the state's allocation ended the process.
func TestServeHistoryMemory(t *testing.T) {
	_, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	code := run([]string{"serve", "-model", path, "-http", "", "-history", "1048576"}, io.Discard, &stderr)
	if want := "-history 1048576: " + path + "'s 156 sensors would keep 16.5 GiB"; code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
}

// TestReplayStartChecked checks that a -start off the slot grid, or one
// that would stamp the readings before 1970 or after 9999 (which the
// service refuses, every one), is a usage error naming -start, given
// before the brokers are asked, in publish and in serve -score-part.
func TestReplayStartChecked(t *testing.T) {
	dir, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ start, err string }{
		{"2015-01-01T00:07:00Z", "-start 2015-01-01T00:07:00Z: not on sz-taxi's 15-minute slot grid"},
		{"1960-01-01T00:00:00Z", "-start 1960-01-01T00:00:00Z: the readings would be stamped 1960-"},
		{"9999-12-31T00:00:00Z", "outside 1970–9999"},
	} {
		var errOut bytes.Buffer
		// No broker listens on 127.0.0.1:1: the flag must be refused first.
		code := run([]string{"publish", "-brokers", "127.0.0.1:1", "-wait-brokers", "0", "-data", dir, "-dataset", "sz-taxi", "-steps", "3", "-start", tc.start}, io.Discard, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("publish -start %s: exit %d, %q; want 2 and %q", tc.start, code, errOut.String(), tc.err)
		}
		// Bounded: a serve that took the flag would run until stopped.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := cmdServe(ctx, []string{"-model", path, "-http", "", "-score-part", "test", "-data", dir, "-start", tc.start}, io.Discard, io.Discard)
		cancel()
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("serve -score-part test -start %s: %v, want a usage error containing %q", tc.start, err, tc.err)
		}
	}
	// On the grid and in range: planned as asked.
	pl, err := replay{dataDir: dir, dataset: "sz-taxi", part: "test", limit: 3, start: "1970-01-01T00:00:00Z"}.plan()
	if err != nil || pl.t0.UnixMilli() != 0 {
		t.Fatalf("-start 1970-01-01T00:00:00Z: %v, first step at %v", err, pl.t0)
	}
}

// TestPublishModelSplit runs forecaster publish -model against the embedded
// broker and reads the topic back: a bundle split by windows has its first
// test snapshot at step 8, so the readings start there, stamped with that
// step's real time.
func TestPublishModelSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const T, steps = 12, 3
	dir, ds, _, b := szTaxiBundle(t, T, 8)
	windows, err := snapshot.WindowSplit(ds.Series.Steps-T, [3]float64{7, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	b.Meta.Split = windows
	path := filepath.Join(t.TempDir(), "w.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	emb, err := stream.StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-data", dir, "-model", path, "-steps", fmt.Sprint(steps), "-topic", "w"}, &out, &errOut); err != nil {
		t.Fatalf("publish: %v\n%s", err, errOut.String())
	}
	// -dataset is the bundle's however it is typed (pems.Lookup ignores case).
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-data", dir, "-model", path, "-dataset", "SZ-Taxi", "-steps", "1", "-topic", "w3"}, io.Discard, io.Discard); err != nil {
		t.Errorf("publish -dataset SZ-Taxi of an sz-taxi bundle: %v", err)
	}
	// Without -dataset the bundle's is replayed; another one is refused.
	err = cmdPublish(ctx, []string{"-brokers", emb.Addr, "-data", dir, "-model", path, "-dataset", "pems08", "-topic", "w2"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is for sz-taxi, not pems08") {
		t.Errorf("publish -dataset pems08 of an sz-taxi bundle: %v", err)
	}
	nodes := ds.Series.Nodes
	if want := fmt.Sprintf("published %d readings of sz-taxi (steps 8–10, the test part of split windows", steps*nodes); !strings.Contains(out.String(), want) {
		t.Errorf("publish said %q, want %q", out.String(), want)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "check", Topic: "w", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	const stepMs = 15 * 60 * 1000
	first := ds.Info.Start.UnixMilli() + 8*stepMs
	seen := map[[2]int64]bool{}
	for len(seen) < steps*nodes {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d of %d readings: %v", len(seen), steps*nodes, err)
		}
		rd, err := stream.DecodeReading(m.Key, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		step := (rd.TS - first) / stepMs
		if rd.TS < first || step >= steps || (rd.TS-first)%stepMs != 0 {
			t.Fatalf("reading of sensor %d at %d: not one of the %d steps from step 8 (%d)", rd.Sensor, rd.TS, steps, first)
		}
		if want := ds.Series.Data[(8+int(step))*nodes+rd.Sensor]; rd.Values[0] != want {
			t.Errorf("sensor %d step %d: value %g, the series has %g", rd.Sensor, 8+step, rd.Values[0], want)
		}
		seen[[2]int64{int64(rd.Sensor), step}] = true
	}
}

// TestPublishWaitsForBroker runs forecaster publish before its broker:
// without -wait-brokers it fails at once on the refused connection; with
// it, it says on stderr that it waits, and publishes once the broker
// starts on the address given.
func TestPublishWaitsForBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	dir, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "m.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-brokers", addr, "-data", dir, "-model", path, "-steps", "2"}

	err = cmdPublish(ctx, append(args, "-wait-brokers", "0"), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("publish -wait-brokers 0 without a broker: %v, want the refusal", err)
	}

	var out bytes.Buffer
	var errOut lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdPublish(ctx, append(args, "-wait-brokers", "40s"), &out, &errOut) }()
	for errOut.count("no broker reached yet (waiting up to -wait-brokers 40s)") == 0 {
		select {
		case err := <-done:
			t.Fatalf("publish ended before the broker started: %v\n%s", err, errOut.String())
		case <-ctx.Done():
			t.Fatalf("publish said nothing of waiting:\n%s", errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	emb, err := stream.StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	if err := <-done; err != nil {
		t.Fatalf("publish after the broker started: %v\n%s", err, errOut.String())
	}
	if want := fmt.Sprintf("published %d readings", 2*b.Meta.Nodes); !strings.Contains(out.String(), want) {
		t.Errorf("publish said %q, want %q", out.String(), want)
	}
}

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

// TestSpedUp checks the demo's replay clock: real time times the speed-up,
// saturated where a huge speed-up goes beyond what a Duration holds
// (-speedup 1e9 passed it after 9.2 s, and the clock went 292 years back).
func TestSpedUp(t *testing.T) {
	for _, tc := range []struct {
		d       time.Duration
		speedup float64
		want    time.Duration
	}{
		{time.Second, 3600, time.Hour},
		{250 * time.Millisecond, 1, 250 * time.Millisecond},
		{10 * time.Second, 1e9, math.MaxInt64},
		{time.Second, math.MaxFloat64, math.MaxInt64},
		{0, 1e9, 0},
	} {
		if got := spedUp(tc.d, tc.speedup); got != tc.want {
			t.Errorf("spedUp(%v, %g) = %v, want %v", tc.d, tc.speedup, got, tc.want)
		}
	}
}

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
