package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestServiceReloadWarnsOtherGraph checks that a reload to a model
// distilled on another road graph is done, with a warning naming both
// graphs, and that the same graph, or a model that cannot tell, is
// reloaded without one.
func TestServiceReloadWarnsOtherGraph(t *testing.T) {
	fp := func(edges int, sha byte, costs bool) *pems.GraphFingerprint {
		return &pems.GraphFingerprint{Nodes: 5, Edges: edges, Costs: costs, SHA256: strings.Repeat(string(sha), 64)}
	}
	for _, tc := range []struct {
		name     string
		old, new *pems.GraphFingerprint
		want     string // in the warning; "" for none
	}{
		{"same graph", fp(4, 'a', false), fp(4, 'a', false), ""},
		{"other links", fp(4, 'a', false), fp(6, 'b', false), `"graph":"5 nodes, 6 links, sha256 bbbbbbbbbbbb","was_graph":"5 nodes, 4 links, sha256 aaaaaaaaaaaa","differs":"6 links, want 4"`},
		{"other costs", fp(4, 'a', true), fp(4, 'c', true), `"differs":"`},
		{"old model without", nil, fp(4, 'a', false), ""},
		{"new model without", fp(4, 'a', false), nil, ""},
		{"one with costs", fp(4, 'a', false), fp(4, 'd', true), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, next := testBundle(t, 5, 4, 1, 3, 1), testBundle(t, 5, 4, 1, 3, 2)
			old.Meta.Graph, next.Meta.Graph = tc.old, tc.new
			var logs strings.Builder
			svc, err := NewService(old, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, Log: zerolog.New(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Reload(next); err != nil {
				t.Fatal(err)
			}
			warned := strings.Contains(logs.String(), "another road graph")
			if warned != (tc.want != "") || !strings.Contains(logs.String(), tc.want) {
				t.Errorf("logs %s\nwant a warning with %q (none: %v)", logs.String(), tc.want, tc.want == "")
			}
		})
	}
}

// TestServiceReloadRefuses checks that Reload refuses, naming what
// differs, a bundle the running state cannot take over, and then keeps the
// model; and that a compatible bundle takes over the readings held and the
// last emitted slots (the state snapshot is the same to the byte) and
// forecasts as a fresh state of it fed the same readings.
func TestServiceReloadRefuses(t *testing.T) {
	const n, T, C, d = 10, 4, 2, 5
	served := testBundle(t, n, T, C, d, 1)
	svc, err := NewService(served, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	rs := streamOf(testSeries(3*T, n, C, 2), 3*T, n, C, 100)
	mustApply(t, svc.State(), rs)
	// Emit what is due, so that the state records last emitted slots.
	em, now := NewEmitter(svc.State(), 0), time.UnixMilli(200*testStep)
	var f Forecast
	emitted := 0
	for _, z := range em.Due(now) {
		if ok, err := em.Emit(z, now, &f); err != nil {
			t.Fatal(err)
		} else if ok {
			emitted++
		}
	}
	if emitted == 0 {
		t.Fatal("nothing emitted before the reload")
	}
	before := svc.State().Snapshot()

	other := func(edit func(b *sdgnn.Bundle)) *sdgnn.Bundle {
		b := testBundle(t, n, T, C, d, 9)
		edit(b)
		return b
	}
	for _, tc := range []struct {
		name, want string
		b          *sdgnn.Bundle
	}{
		{"no bundle", "incomplete bundle", nil},
		{"no Θ", "incomplete bundle", other(func(b *sdgnn.Bundle) { b.Theta = nil })},
		{"other dataset", `dataset "pems08", the service serves "test"`, other(func(b *sdgnn.Bundle) { b.Meta.Dataset = "pems08" })},
		{"other sensors", "has 11 sensors, the service 10", testBundle(t, n+1, T, C, d, 9)},
		{"other window", "windows of 5 slots, the service keeps 4", testBundle(t, n, T+1, C, d, 9)},
		{"other channels", "has 3 channels, the service 2", testBundle(t, n, T, C+1, d, 9)},
		{"one channel", "has 1 channel, the service 2", testBundle(t, n, T, C-1, d, 9)},
	} {
		err := svc.Reload(tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if svc.Bundle() != served {
			t.Fatalf("%s: the model changed after a refused reload", tc.name)
		}
	}
	if got := svc.Counters().ReloadFailures.Load(); got != 7 {
		t.Errorf("%d reload failures counted, want 7", got)
	}

	next := testBundle6(t, n, T, C, d+2, 5) // other receptive sets and hidden size
	next.Meta.Version = "test-v2"
	if err := svc.Reload(next); err != nil {
		t.Fatal(err)
	}
	if svc.Bundle() != next || svc.Counters().Reloads.Load() != 1 {
		t.Fatalf("after a reload: bundle %s, %d reloads", svc.Bundle().Meta.Version, svc.Counters().Reloads.Load())
	}
	if !bytes.Equal(svc.State().Snapshot(), before) {
		t.Error("the reloaded state does not hold the readings and emitted slots of the old one")
	}
	fresh, err := NewState(testBundle6(t, n, T, C, d+2, 5), testStep)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, fresh, rs)
	for z := range n {
		var got, want Forecast
		if err := svc.State().Forecast(z, &got); err != nil {
			t.Fatal(err)
		}
		if err := fresh.Forecast(z, &want); err != nil {
			t.Fatal(err)
		}
		if got.Model != "test-v2" || got.TS != want.TS {
			t.Fatalf("sensor %d: forecast of %s for %d, want test-v2 for %d", z, got.Model, got.TS, want.TS)
		}
		for c := range want.Values {
			if math.Abs(got.Values[c]-want.Values[c]) > 1e-12 {
				t.Fatalf("sensor %d: reloaded %v, fresh state %v", z, got.Values, want.Values)
			}
		}
	}
}

// TestServiceReloadMidStream replays real SZ-taxi readings through the
// embedded broker into the service, reloads another model (other Θ, other
// preprocessing) between two halves of the replay, and checks every
// forecast: those of slots whose
// inputs all came before the reload equal the first model's offline
// inference and carry its version, all later ones the second model's; no
// slot is missing or doubled.
func TestServiceReloadMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const T, d = 12, 16
	ds, split, set := szTaxiSet(t, T)
	s, norm := ds.Series, set.Norm
	const stepMs = 15 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// The second model has the paper's preprocessing (per-node min-max
	// scaling and calendar inputs, from the replay's clock), so that the
	// reload also changes how the readings held become model inputs.
	paper, err := snapshot.FitPaper(s.Data, s.Nodes, s.Channels, split.TrainSteps(T), start.UnixMilli(), stepMs)
	if err != nil {
		t.Fatal(err)
	}
	paperSet, err := snapshot.NewSet(s.Data, s.Steps, s.Nodes, s.Channels, T, paper)
	if err != nil {
		t.Fatal(err)
	}
	bundle := func(six bool, seed uint64, version string) *sdgnn.Bundle {
		b := testBundle(t, s.Nodes, T, s.Channels, d, seed)
		b.Meta.Norm = norm
		if six {
			b = testBundle6(t, s.Nodes, T, s.Channels, d, seed)
			b.Meta.Norm, b.GRU = paper, gru.New(paper.Inputs(), d, rand.New(rand.NewPCG(seed, 9)))
		}
		b.Meta.Version = version
		return b
	}
	if paper.Inputs() == norm.Inputs() || paper.Prep() == norm.Prep() {
		t.Fatalf("preprocessings %s (%d inputs) and %s (%d inputs): want them to differ", norm.Prep(), norm.Inputs(), paper.Prep(), paper.Inputs())
	}

	emb, err := StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	from := split.Test.Start + T
	mid, to := from+T+8, from+T+16
	svc, err := NewService(bundle(false, 3, "first"), Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	stop, done := runService(ctx, svc)
	if err := EnsureTopics(ctx, []string{emb.Addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	series := Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data}
	publish := func(lo, hi int) {
		t.Helper()
		if _, err := Publish(ctx, series, PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: lo, To: hi,
			Start: start, StepMs: stepMs, SlotPause: 10 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "reload-check", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	got := map[[2]int64]Forecast{}
	// collect reads forecasts until every sensor has one for every slot of
	// from+T … upTo.
	collect := func(upTo int) {
		t.Helper()
		for want := (upTo - (from + T) + 1) * s.Nodes; len(got) < want; {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("after %d of %d forecasts: %v", len(got), want, err)
			}
			f, err := DecodeForecast(m.Value)
			if err != nil {
				t.Fatal(err)
			}
			slot := (f.TS - start.UnixMilli()) / stepMs
			if slot < int64(from+T) {
				continue
			}
			key := [2]int64{int64(f.Sensor), slot}
			if _, dup := got[key]; dup {
				t.Fatalf("sensor %d slot %d forecast twice", f.Sensor, slot)
			}
			got[key] = f
		}
	}
	publish(from, mid)
	collect(mid)
	wrong := bundle(false, 3, "wrong")
	wrong.Meta.Dataset = "pems04"
	if err := svc.Reload(wrong); err == nil {
		t.Fatal("a bundle of another dataset was taken")
	}
	if err := svc.Reload(bundle(true, 4, "second")); err != nil {
		t.Fatal(err)
	}
	publish(mid, to)
	collect(to)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("service: %v", err)
	}

	whole := snapshot.Part{Range: snapshot.Range{Start: from, End: to - T + 1}}
	first, _, err := sdgnn.Predict(context.Background(), bundle(false, 3, "first"), set, whole, 64)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := sdgnn.Predict(context.Background(), bundle(true, 4, "second"), paperSet, whole, 64)
	if err != nil {
		t.Fatal(err)
	}
	checkReloadedForecasts(t, got, first, second, from, mid, to, T, s.Nodes, s.Channels)
	if svc.Counters().Reloads.Load() != 1 || svc.Counters().ReloadFailures.Load() != 1 {
		t.Errorf("reloads %d, failures %d; want 1 and 1", svc.Counters().Reloads.Load(), svc.Counters().ReloadFailures.Load())
	}
	t.Logf("%d forecasts: slots up to %d of the first model, after it of the second", len(got), mid)
}

// checkReloadedForecasts checks the forecasts got by (sensor, slot), of
// nodes sensors and C channels, that TestServiceReloadMidStream streamed
// for the slots from+T … to: those up to mid the first model's, equal to
// its offline forecasts first, the later ones the second's; and that the
// two models' forecasts differ somewhere.
func checkReloadedForecasts(t *testing.T, got map[[2]int64]Forecast, first, second []float64, from, mid, to, T, nodes, C int) {
	t.Helper()
	differ := 0
	for slot := from + T; slot <= to; slot++ {
		want, version := first, "first"
		if slot > mid {
			want, version = second, "second"
		}
		row := (slot - T - from) * nodes * C
		for z := 0; z < nodes; z++ {
			f := got[[2]int64{int64(z), int64(slot)}]
			if f.Model != version {
				t.Fatalf("sensor %d slot %d: forecast of model %q, want %q", z, slot, f.Model, version)
			}
			for c := 0; c < C; c++ {
				if dv := math.Abs(f.Values[c] - want[row+z*C+c]); dv > 1e-9 {
					t.Fatalf("sensor %d slot %d: streamed %.12g, offline (%s) %.12g", z, slot, f.Values[c], version, want[row+z*C+c])
				}
				if math.Abs(first[row+z*C+c]-second[row+z*C+c]) > 1e-6 {
					differ++
				}
			}
		}
	}
	if differ == 0 {
		t.Fatal("the two models forecast alike: the test cannot tell them apart")
	}
}

// TestReloadEndpoint checks POST /-/reload: absent without
// Config.ReloadModel, and with it 200 and the version served, or 409 and
// why the model served was kept; other methods are refused.
func TestReloadEndpoint(t *testing.T) {
	const n, T, C, d = 4, 3, 2, 5
	taken := func() (string, error) { return "v2", nil }
	for _, tc := range []struct {
		name, method string
		hook         func() (string, error)
		token, auth  string // Config.ReloadToken, the request's Authorization
		code         int
		body         string
	}{
		{"no hook", http.MethodPost, nil, "", "", http.StatusNotFound, "404 page not found\n"},
		{"taken", http.MethodPost, taken, "", "", http.StatusOK, "serving v2\n"},
		{"refused", http.MethodPost, func() (string, error) { return "test-v1", errors.New("bundle b.sdgnn truncated") }, "", "", http.StatusConflict,
			"reload refused: bundle b.sdgnn truncated; serving test-v1\n"},
		{"GET", http.MethodGet, taken, "", "", http.StatusMethodNotAllowed, "Method Not Allowed\n"},
		{"busy", http.MethodPost, func() (string, error) { return "", fmt.Errorf("reload model: %w", ErrReloadBusy) }, "", "", http.StatusServiceUnavailable,
			"not reloaded: reload model: the batch in hand is not committed yet; serving test-v1\n"},
		{"token given", http.MethodPost, taken, "s3cret", "Bearer s3cret", http.StatusOK, "serving v2\n"},
		{"no token", http.MethodPost, taken, "s3cret", "", http.StatusUnauthorized, "reload refused: missing or wrong bearer token\n"},
		{"wrong token", http.MethodPost, taken, "s3cret", "Bearer s3cre", http.StatusUnauthorized, "reload refused: missing or wrong bearer token\n"},
		{"not bearer", http.MethodPost, taken, "s3cret", "Basic s3cret", http.StatusUnauthorized, "reload refused: missing or wrong bearer token\n"},
		{"scheme in lower case", http.MethodPost, taken, "s3cret", "bearer s3cret", http.StatusOK, "serving v2\n"},
		{"no space", http.MethodPost, taken, "s3cret", "Bearers3cret", http.StatusUnauthorized, "reload refused: missing or wrong bearer token\n"},
		{"token not asked", http.MethodPost, taken, "", "Bearer anything", http.StatusOK, "serving v2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			cfg := Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, ReloadToken: tc.token, Log: zerolog.Nop()}
			if tc.hook != nil {
				cfg.ReloadModel = func(context.Context) (string, error) { calls++; return tc.hook() }
			}
			svc, err := NewService(testBundle(t, n, T, C, d, 1), cfg)
			if err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			req := httptest.NewRequest(tc.method, "/-/reload", nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			svc.Handler().ServeHTTP(w, req)
			if w.Code != tc.code || w.Body.String() != tc.body {
				t.Errorf("%s /-/reload: %d %q, want %d %q", tc.method, w.Code, w.Body.String(), tc.code, tc.body)
			}
			want := 0
			if tc.code == http.StatusServiceUnavailable && w.Header().Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			if tc.code == http.StatusOK || tc.code == http.StatusConflict || tc.code == http.StatusServiceUnavailable {
				want = 1
			}
			if tc.code == http.StatusUnauthorized && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if calls != want {
				t.Errorf("hook called %d times, want %d", calls, want)
			}
		})
	}
}

// TestReloadContextWaits holds the batch lock as Run does while a batch
// cannot be committed (the broker away), and checks that ReloadContext and
// POST /-/reload give up when their context ends, changing nothing, and
// that the reload goes through once the batch is done.
func TestReloadContextWaits(t *testing.T) {
	const n, T, C, d = 4, 3, 2, 5
	next := testBundle(t, n, T, C, d, 2)
	next.Meta.Version = "test-v2"
	var svc *Service
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, Log: zerolog.Nop(),
		ReloadModel: func(ctx context.Context) (string, error) {
			if err := svc.ReloadContext(ctx, next); err != nil {
				return "", err
			}
			return next.Meta.Version, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	svc.loop <- struct{}{} // a batch in hand
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err = svc.ReloadContext(ctx, next)
	cancel()
	if !errors.Is(err, ErrReloadBusy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ReloadContext with the batch in hand: %v, want ErrReloadBusy and the deadline", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w := httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/-/reload", nil).WithContext(ctx))
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "not committed yet") {
		t.Errorf("POST /-/reload with the batch in hand: %d %q, want 503", w.Code, w.Body.String())
	}
	if v := svc.Bundle().Meta.Version; v != "test-v1" || svc.Counters().ReloadFailures.Load() != 2 || svc.Counters().Reloads.Load() != 0 {
		t.Errorf("serving %s after two reloads given up, failures %d, reloads %d", v, svc.Counters().ReloadFailures.Load(), svc.Counters().Reloads.Load())
	}
	<-svc.loop // the batch handed to its flush
	// Its flush still writing: the reload waits for it as well.
	svc.pending = &flushJob{done: make(chan struct{})}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := svc.ReloadContext(ctx, next); !errors.Is(err, ErrReloadBusy) {
		t.Errorf("ReloadContext with the batch being flushed: %v, want ErrReloadBusy", err)
	}
	close(svc.pending.done) // the batch committed
	w = httptest.NewRecorder()
	svc.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/-/reload", nil))
	if w.Code != http.StatusOK || svc.Bundle().Meta.Version != "test-v2" {
		t.Errorf("POST /-/reload after the batch: %d %q, serving %s", w.Code, w.Body.String(), svc.Bundle().Meta.Version)
	}
}

// TestReloadWhileStarting reloads the model over and over while Run
// starts (a SIGHUP or POST /-/reload as the service comes up): Run reads
// the state as it checks the topics' retention and sizes its aligner,
// which a reload replaces; under the race detector (CI's race run) a read
// outside s.loop is reported. The service must come up and consume with
// the last model reloaded.
func TestReloadWhileStarting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 5
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "readings")
	models := []*sdgnn.Bundle{testBundle(t, n, T, C, d, 1), testBundle(t, n, T, C, d, 2)}
	models[1].Meta.Version = "test-v2"
	var log lockedLog
	svc, err := NewService(models[0], Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	reloads := make(chan int)
	stopReloads := make(chan struct{})
	go func() {
		i := 0
		for {
			select {
			case <-stopReloads:
				reloads <- i
				return
			default:
			}
			i++
			if err := svc.Reload(models[i%2]); err != nil {
				t.Errorf("reload %d: %v", i, err)
			}
		}
	}()
	stop := serveInTest(ctx, t, svc)
	for !strings.Contains(log.String(), `"message":"consuming"`) {
		if ctx.Err() != nil {
			t.Fatalf("the service never consumed:\n%s", log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stopReloads)
	i := <-reloads
	if want := models[i%2].Meta.Version; svc.Bundle().Meta.Version != want || i < 2 {
		t.Errorf("after %d reloads serving %s, want %s", i, svc.Bundle().Meta.Version, want)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
