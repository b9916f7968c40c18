package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestReloadsModel runs the real forecaster binary, replaces its model file
// first by a truncated copy and then by another model, asking for a reload
// after each, by SIGHUP or by POST /-/reload (-http-reload), or leaving it
// to -poll-model to notice the change: the truncated file must be refused
// with a log line naming it (and, over HTTP, a 409 that names it), the
// service must keep running, and the forecasts of readings published after
// the second reload must carry the new model's version.
func TestReloadsModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	const T = 12
	_, ds, split, first := szTaxiBundle(t, T, 8)
	bin := buildForecaster(t, t.TempDir())
	for _, by := range []string{"SIGHUP", "POST /-/reload", "model file changed"} {
		t.Run(by, func(t *testing.T) { testReloadsModel(t, bin, by, ds, split, first) })
	}
}

func testReloadsModel(t *testing.T, bin forecasterBin, by string, ds *pems.Dataset, split snapshot.Split, first *sdgnn.Bundle) {
	const T = 12
	tmp := t.TempDir()
	path := filepath.Join(tmp, "b.sdgnn")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	second := randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	second.Meta.Version = "reloaded"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)

	args := []string{"serve", "-model", path, "-brokers", emb.Addr, "-lateness", "1000h", "-log-json", "-http", ""}
	switch by {
	case "POST /-/reload":
		args[len(args)-1] = "127.0.0.1:0"
		token := filepath.Join(tmp, "reload.token")
		if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-http-reload", "-http-reload-token-file", token, "-ready-max-lag", "100000")
	case "model file changed":
		args = append(args, "-poll-model", "20ms")
	}
	cmd := bin.command(args...)
	log := startLogged(ctx, t, cmd)
	var addr string
	if by == "POST /-/reload" {
		addr, _ = log.wait("serving metrics, health and forecasts")["http"].(string)
	}
	if m := log.wait("consuming"); m["model"] != first.Meta.Version {
		t.Errorf("consuming logged model %v, want %q", m["model"], first.Meta.Version)
	}
	if by == "POST /-/reload" {
		// Ready once a batch is committed and the broker answered.
		for {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !strings.Contains(string(body), "[+]lag ok: 0 readings behind, at most 100000") {
					t.Fatalf("/readyz:\n%s", body)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("/readyz never passed: %d\n%s", resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// reload asks for a reload and returns the HTTP status and answer
	// (none for SIGHUP; nothing to do when the service polls the file).
	reload := func() (int, string) {
		t.Helper()
		switch by {
		case "SIGHUP":
			cmd.Process.Signal(syscall.SIGHUP)
			return 0, ""
		case "model file changed":
			return 0, ""
		}
		return postReload(t, addr, "s3cret")
	}
	if by == "POST /-/reload" {
		if code, body := postReload(t, addr, "guess"); code != http.StatusUnauthorized {
			t.Fatalf("POST /-/reload with a wrong token: %d %s", code, body)
		}
	}

	// A truncated file (a copy cut short, as by a full disk) is refused.
	if err := os.WriteFile(path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := reload()
	if by == "POST /-/reload" && (code != http.StatusConflict || !strings.Contains(body, path) || !strings.Contains(body, "serving crash-test")) {
		t.Errorf("POST /-/reload of a truncated file: %d %q, want 409 naming %s and the model served crash-test", code, body, path)
	}
	if m := log.wait("reloading the model"); m["by"] != by {
		t.Errorf("reload logged %v, want by %q", m, by)
	}
	refused := log.wait("reload refused: the model served is kept")
	if e, _ := refused["error"].(string); !strings.Contains(e, path) || refused["serving"] != "crash-test" {
		t.Errorf("refusal %v: want the error to name %s and the model served crash-test", refused, path)
	}

	// The new model (Save writes atomically, as distill does) is taken.
	if err := second.Save(path); err != nil {
		t.Fatal(err)
	}
	if code, body := reload(); by == "POST /-/reload" && (code != http.StatusOK || body != "serving reloaded\n") {
		t.Errorf("POST /-/reload: %d %q, want 200 \"serving reloaded\"", code, body)
	}
	if m := log.wait("model reloaded"); m["model"] != "reloaded" || m["was"] != "crash-test" {
		t.Errorf("reload logged %v", m)
	}

	const stepMs = 15 * 60 * 1000
	from := split.Test.Start
	t0 := time.Now().UTC().Truncate(stepMs * time.Millisecond).Add(-time.Duration(from) * stepMs * time.Millisecond)
	s := ds.Series
	if _, err := stream.Publish(ctx, stream.Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		stream.PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: from + T + 2, Start: t0, StepMs: stepMs}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "reload-check", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	for i := 0; i < s.Nodes; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d forecasts: %v", i, err)
		}
		f, err := stream.DecodeForecast(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f.Model != "reloaded" {
			t.Fatalf("forecast of sensor %d by model %q after the reload, want %q", f.Sensor, f.Model, "reloaded")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := log.exit(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
}

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

// postReload asks the service at addr to reload over plain HTTP, with the
// bearer token, and returns the HTTP status and answer.
func postReload(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	return postReloadURL(t, http.DefaultClient, "http://"+addr+"/-/reload", token)
}

// postReloadURL is postReload at url through client (HTTPS, say).
func postReloadURL(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
