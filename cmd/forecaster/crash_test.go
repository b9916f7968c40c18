package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestKill9LosesNothing runs the real forecaster binary against a broker in
// this process, SIGKILLs it halfway through a replay of real SZ-taxi data,
// restarts it, and checks that every forecast slot of every sensor arrives
// and equals the offline inference (so that every reading was applied
// exactly once in effect), duplicates being identical: restarted on the
// same state file, and restarted without one, its windows rebuilt from
// the log.
func TestKill9LosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a process")
	}
	const T = 12
	_, ds, split, b := szTaxiBundle(t, T, 8)
	tmp := t.TempDir()
	bundlePath := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(bundlePath); err != nil {
		t.Fatal(err)
	}
	bin := buildForecaster(t, tmp)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"state file", []string{"-state", filepath.Join(tmp, "state.bin")}},
		{"no state file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testKill9LosesNothing(t, bin, bundlePath, ds, split, b, tc.args)
		})
	}
}

func testKill9LosesNothing(t *testing.T, bin forecasterBin, bundlePath string, ds *pems.Dataset, split snapshot.Split, b *sdgnn.Bundle, args []string) {
	const T = 12
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)
	// start runs the service until it consumes ($SERVE_TEST_LOG shows its
	// log).
	start := func() (*exec.Cmd, *processLog) {
		cmd := bin.command(append([]string{"serve", "-model", bundlePath, "-brokers", emb.Addr, "-http", "", "-lateness", "1000h", "-log-json"}, args...)...)
		log := startLogged(ctx, t, cmd)
		log.wait("consuming")
		return cmd, log
	}
	proc, log := start()

	const stepMs = 15 * 60 * 1000
	from, to := split.Test.Start+T, split.Test.Start+T+36
	// Slot times around now, so that the service's wall clock sees no
	// lateness deadline pass during the test.
	t0 := time.Now().UTC().Truncate(stepMs * time.Millisecond).Add(-time.Duration(from) * stepMs * time.Millisecond)
	s := ds.Series
	series := stream.Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data}
	// The publisher runs on while the service is killed and restarted.
	pubDone := make(chan error, 1)
	go func() {
		_, err := stream.Publish(ctx, series, stream.PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: to,
			Start: t0, StepMs: stepMs, SlotPause: 25 * time.Millisecond})
		pubDone <- err
	}()
	time.Sleep(400 * time.Millisecond) // mid-stream
	if err := proc.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-pubDone:
		t.Fatalf("the publisher finished (%v) before the kill: not mid-stream", err)
	default:
	}
	log.exit()
	// Restarted at once, as a supervisor would: the group hands the dead
	// member's partitions over when its session (10 s) expires.
	proc, log = start()
	defer func() { proc.Process.Signal(syscall.SIGTERM); log.exit() }()
	if err := <-pubDone; err != nil {
		t.Fatal(err)
	}

	want := (to - (from + T) + 1) * s.Nodes
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "crash-check", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	got := map[[2]int64][]float64{}
	dups := 0
	for len(got) < want {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			missing := map[int]int{}
			for slot := from + T; slot <= to; slot++ {
				for z := 0; z < s.Nodes; z++ {
					if _, ok := got[[2]int64{int64(z), int64(slot)}]; !ok {
						missing[slot-from]++
					}
				}
			}
			t.Fatalf("after %d of %d forecasts: %v; missing per slot (offset from the first published): %v", len(got), want, err, missing)
		}
		f, err := stream.DecodeForecast(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		slot := (f.TS - t0.UnixMilli()) / stepMs
		if slot < int64(from+T) {
			continue
		}
		key := [2]int64{int64(f.Sensor), slot}
		if prev, ok := got[key]; ok {
			dups++
			if fmt.Sprint(prev) != fmt.Sprint(f.Values) {
				t.Fatalf("sensor %d slot %d forecast twice with different values %v, %v", f.Sensor, slot, prev, f.Values)
			}
			continue
		}
		got[key] = f.Values
	}
	set, err := snapshot.NewSet(s.Data, s.Steps, s.Nodes, s.Channels, T, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	offline, _, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: snapshot.Range{Start: from, End: to - T + 1}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	for slot := from + T; slot <= to; slot++ {
		row := (slot - T - from) * s.Nodes * s.Channels
		for z := 0; z < s.Nodes; z++ {
			v, ok := got[[2]int64{int64(z), int64(slot)}]
			if !ok {
				t.Fatalf("sensor %d slot %d missing after the crash", z, slot)
			}
			if dd := math.Abs(v[0] - offline[row+z*s.Channels]); dd > 1e-9 {
				t.Fatalf("sensor %d slot %d: %.12g after the crash, offline %.12g", z, slot, v[0], offline[row+z*s.Channels])
			}
		}
	}
	t.Logf("%d forecast slots complete and equal to offline after kill -9; %d duplicates (at least once)", len(got), dups)
}

// szTaxiBundle loads the real SZ-taxi dataset (skipping the test without
// it, failing under CI), splits it 6:2:2 chronologically for windows of T
// steps and returns its data directory, the dataset, the split and a
// randomBundle of hidden size d normalised on the training steps.
func szTaxiBundle(t *testing.T, T, d int) (string, *pems.Dataset, snapshot.Split, *sdgnn.Bundle) {
	t.Helper()
	ds := datatest.SZTaxi(t)
	split, set := datatest.Chrono(t, ds, 0, T)
	return datatest.Dir(t), ds, split, randomBundle(t, ds, split, set.Norm, T, d)
}

// randomBundle builds an untrained but complete SZ-taxi bundle recording
// split: the crash test checks delivery, not accuracy.
func randomBundle(t *testing.T, ds *pems.Dataset, split snapshot.Split, norm snapshot.Normalizer, T, d int) *sdgnn.Bundle {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	cands, err := sdgnn.Candidates(ds.Graph.Neighbors(), sdgnn.CandidateConfig{K1: 1})
	if err != nil {
		t.Fatal(err)
	}
	theta := &sdgnn.Theta{Nodes: make([][]int, len(cands)), Weights: make([][]float64, len(cands))}
	for z, c := range cands {
		if len(c) > 6 {
			c = c[:6]
		}
		theta.Nodes[z] = c
		for range c {
			theta.Weights[z] = append(theta.Weights[z], 0.1+rng.Float64())
		}
	}
	C := ds.Series.Channels
	meta := sdgnn.BundleMeta{Dataset: "sz-taxi", Nodes: ds.Series.Nodes, Channels: ds.Info.Channels, Window: T, Hidden: d, Norm: norm, Split: split, Version: "crash-test"}
	meta.Config.PhiHidden = d
	b, err := sdgnn.NewBundle(meta, gru.New(C, d, rng), nn.NewMLP("phi", d, d, d, rng), theta, nn.NewMLP("dec", d, d, C, rng))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forecasterBin is the forecaster binary a test built, and the emulator
// that runs it where this machine cannot (empty: none needed).
type forecasterBin struct {
	path     string
	emulator string
}

// command returns the command that runs the binary with args.
func (b forecasterBin) command(args ...string) *exec.Cmd {
	if b.emulator != "" {
		return exec.Command(b.emulator, append([]string{b.path}, args...)...)
	}
	return exec.Command(b.path, args...)
}

// buildForecaster builds this command into dir and returns the binary.
// Under `GOARCH=arm64 go test -exec qemu-aarch64` the go command builds
// for arm64 too, which this machine does not run itself (without
// binfmt_misc): the binary is then run by qemu-user's emulator for
// GOARCH, as the test binary is.
func buildForecaster(t *testing.T, dir string) forecasterBin {
	t.Helper()
	b := forecasterBin{path: filepath.Join(dir, "forecaster")}
	if out, err := exec.Command("go", "build", "-o", b.path, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	err := b.command("help").Run()
	if !errors.Is(err, syscall.ENOEXEC) {
		return b
	}
	name := "qemu-" + map[string]string{"arm64": "aarch64", "amd64": "x86_64", "386": "i386"}[runtime.GOARCH]
	emu, lerr := exec.LookPath(name)
	if lerr != nil {
		t.Fatalf("run %s built for %s: %v, and no emulator: %v", b.path, runtime.GOARCH, err, lerr)
	}
	b.emulator = emu
	t.Logf("running the %s binary under %s", runtime.GOARCH, emu)
	if out, err := b.command("help").CombinedOutput(); err != nil {
		t.Fatalf("run %s under %s: %v\n%s", b.path, emu, err, out)
	}
	return b
}

// startBroker starts the embedded broker with the service's topics; it is
// closed when the test ends.
func startBroker(ctx context.Context, t *testing.T) *stream.Embedded {
	t.Helper()
	emb, err := stream.StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	t.Cleanup(emb.Close)
	if err := stream.EnsureTopics(ctx, []string{emb.Addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	return emb
}

// forgetBrokers clears kafka-go's shared default transport of what it
// learnt of earlier tests' brokers: its pools outlive their brokers and
// remember a refused dial for a few seconds, which a broker started at a
// port an earlier test used would meet (stream's TestForgetBrokers).
// Tests call it as their broker starts.
func forgetBrokers() {
	if t, ok := kafka.DefaultTransport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}
