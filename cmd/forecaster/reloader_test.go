package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/rs/zerolog"
)

// TestReloadModel checks the reloader's answers, log lines and counters in
// process: a missing file is refused naming it, so is a file whose
// metadata asks for more than it holds, and a model of another split is
// warned about only when the live view scores a part.
func TestReloadModel(t *testing.T) {
	const T = 12
	_, ds, split, first := szTaxiBundle(t, T, 8)
	tmp := t.TempDir()
	same := filepath.Join(tmp, "same.sdgnn")
	b := randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	b.Meta.Version = "same-split"
	if err := b.Save(same); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(tmp, "other.sdgnn")
	b = randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	b.Meta.Version, b.Meta.Split.Ratios = "other-split", [3]float64{7, 1, 2}
	if err := b.Save(other); err != nil {
		t.Fatal(err)
	}
	// A file whose checksum holds but whose metadata asks for a hidden
	// width of 2⁴⁰: decoding it once ended the process (out of memory).
	huge := filepath.Join(tmp, "huge.sdgnn")
	f, err := checkpoint.ReadFile(same)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	meta["hidden"] = 1 << 40
	if f.Meta, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteFile(huge, f); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		scored     bool
		want, not  string
		failures   uint64
		version    string
	}{
		{"missing file", filepath.Join(tmp, "gone.sdgnn"), false, "gone.sdgnn", "model reloaded", 1, "crash-test"},
		{"hidden width beyond the file", huge, false, "more parameters than the file's", "model reloaded", 1, "crash-test"},
		{"same split, scored", same, true, "model reloaded", "another split", 0, "same-split"},
		{"other split, not scored", other, false, "model reloaded", "another split", 0, "other-split"},
		{"other split, scored", other, true, "another split", "reload refused", 0, "other-split"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			log := zerolog.New(&logs)
			svc := unstartedService(t, first, log)
			version, err := (&reloader{svc: svc, path: tc.path, scored: tc.scored, log: log}).reload(context.Background(), "test")
			if (err != nil) != (tc.failures > 0) || version != tc.version || svc.Bundle().Meta.Version != tc.version {
				t.Errorf("reload: version %q, error %v; serving %q: want %q, error %v", version, err, svc.Bundle().Meta.Version, tc.version, tc.failures > 0)
			}
			if !strings.Contains(logs.String(), tc.want) || strings.Contains(logs.String(), tc.not) {
				t.Errorf("logs %s: want %q and not %q", logs.String(), tc.want, tc.not)
			}
			if got := svc.Counters().ReloadFailures.Load(); got != tc.failures {
				t.Errorf("%d failures counted, want %d", got, tc.failures)
			}
		})
	}
}

// A reload waits for one in progress (a SIGHUP's, waiting for a broker
// that is away) only until its own context ends, and then says the model
// is busy (ErrReloadBusy: POST /-/reload's 503) rather than blocking.
func TestReloadWaitsForAnotherOnlyUntilItsDeadline(t *testing.T) {
	_, _, _, first := szTaxiBundle(t, 4, 8)
	first.Meta.Version = "first"
	path := filepath.Join(t.TempDir(), "m.sdgnn")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	svc := unstartedService(t, first, zerolog.Nop())
	r := &reloader{svc: svc, path: path, log: zerolog.Nop()}
	r.once.Do(func() { r.turn = make(chan struct{}, 1) })
	r.turn <- struct{}{} // another reload in progress
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := r.reload(ctx, "POST /-/reload")
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, stream.ErrReloadBusy) || !errors.Is(err, context.DeadlineExceeded) || svc.Counters().ReloadFailures.Load() != 1 {
			t.Errorf("reload behind another: %v (failures %d), want ErrReloadBusy and the deadline", err, svc.Counters().ReloadFailures.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reload behind another did not give up at its deadline")
	}
	<-r.turn // the other ends: the next reload goes through
	if v, err := r.reload(context.Background(), "test"); err != nil || v != "first" {
		t.Errorf("reload after: %q, %v", v, err)
	}
}

// lockedBuffer is a strings.Builder safe for a logger written to by one
// goroutine while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// TestWatchModel checks -poll-model's watcher in process: an unchanged
// file is not reloaded, a truncated one is refused once and not tried
// again while it stays as it is, a file that disappears is reported once,
// and a new model written (atomically, as distill writes) is served.
func TestWatchModel(t *testing.T) {
	const T = 12
	_, ds, split, first := szTaxiBundle(t, T, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	log := zerolog.New(&logs)
	svc := unstartedService(t, first, log)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	loaded, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		(&reloader{svc: svc, path: path, log: log}).watch(ctx, 2*time.Millisecond, loaded)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	const looks = 50 * time.Millisecond // about 25 looks
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s; logs:\n%s", what, logs.String())
			}
		}
	}

	time.Sleep(looks)
	if n := logs.count("reloading the model"); n != 0 {
		t.Fatalf("%d reloads of an unchanged file", n)
	}
	// A truncated file, put in place at once (a rename), so that the
	// watcher can see only it: TestReloadsModel writes one in place.
	cut := path + ".cut"
	if err := os.WriteFile(cut, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(cut, path); err != nil {
		t.Fatal(err)
	}
	until("refusal of the truncated file", func() bool { return svc.Counters().ReloadFailures.Load() > 0 })
	time.Sleep(looks)
	const failures = 1
	if n := svc.Counters().ReloadFailures.Load(); n != failures {
		t.Errorf("the truncated file was tried %d times, want once", n)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	until("report of the missing file", func() bool { return logs.count("cannot look at the model file") > 0 })
	time.Sleep(looks)
	if n := logs.count("cannot look at the model file"); n != 1 {
		t.Errorf("the missing file was reported %d times, want once", n)
	}
	second := randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	second.Meta.Version = "polled"
	if err := second.Save(path); err != nil {
		t.Fatal(err)
	}
	until("reload of the new model", func() bool { return svc.Bundle().Meta.Version == "polled" })
	time.Sleep(looks)
	if n, f := svc.Counters().Reloads.Load(), svc.Counters().ReloadFailures.Load(); n != 1 || f != failures {
		t.Errorf("%d reloads and %d failures, want 1 and %d", n, f, failures)
	}
}

// TestWatchModelSeesEarlyChange checks that a model file replaced while
// serve was reading it (between the look taken before reading and the
// watcher's start) is reloaded at the watcher's first look.
func TestWatchModelSeesEarlyChange(t *testing.T) {
	const T = 12
	_, ds, split, first := szTaxiBundle(t, T, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	loaded, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	svc := unstartedService(t, first, zerolog.Nop())
	second := randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	second.Meta.Version = "early"
	if err := second.Save(path); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	go (&reloader{svc: svc, path: path, log: zerolog.Nop()}).watch(ctx, 2*time.Millisecond, loaded)
	for svc.Bundle().Meta.Version != "early" {
		if ctx.Err() != nil {
			t.Fatalf("serving %s: the change made while the model was read was not seen", svc.Bundle().Meta.Version)
		}
		time.Sleep(time.Millisecond)
	}
}

// unstartedService returns a service of SZ-taxi's 15-minute slots serving a
// copy of b, never run (no broker is reached): what the reloader needs.
func unstartedService(t *testing.T, b *sdgnn.Bundle, log zerolog.Logger) *stream.Service {
	t.Helper()
	served, err := b.Clone()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := stream.NewService(served, stream.Config{Brokers: []string{"127.0.0.1:1"}, StepMs: 15 * 60 * 1000, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}
