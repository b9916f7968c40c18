package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
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
