package stream

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	lim := readinessLimits{probeEvery: 5 * time.Second, stallAfter: 15 * time.Second, maxLag: 1000}
	good := health{started: true, probeAt: now.Add(-time.Second), probeOKAt: now.Add(-time.Second), loopAt: now.Add(-200 * time.Millisecond), lag: 10, lagAt: now.Add(-time.Second),
		assignAt: now.Add(-time.Second), assigned: true, assignDetail: "holds all 4 partitions of readings"}
	refused := errors.New("dial tcp 127.0.0.1:9092: connection refused")
	for _, tc := range []struct {
		name   string
		h      func(h health) health
		lim    func(l readinessLimits) readinessLimits
		failed string // the one failing check, "" if ready
		detail string
	}{
		{"ready", nil, nil, "", "answered 1s ago"},
		{"not started", func(h health) health { h.started = false; return h }, nil, "started", "not consuming yet"},
		{"never probed", func(h health) health { h.probeAt, h.probeOKAt = time.Time{}, time.Time{}; return h }, nil, "broker", "not asked yet"},
		{"broker never answered", func(h health) health { h.probeOKAt, h.probeErr = time.Time{}, refused; return h }, nil, "broker", "connection refused (never answered)"},
		{"every broker refused", func(h health) health {
			h.probeOKAt, h.probeErr = time.Time{}, errors.Join(refused, errors.New("dial tcp 127.0.0.2:9092: connection refused"))
			return h
		}, nil, "broker", "127.0.0.1:9092: connection refused; dial tcp 127.0.0.2:9092: connection refused (never answered)"},
		{"broker gone", func(h health) health { h.probeOKAt, h.probeErr = now.Add(-42*time.Second), refused; return h }, nil, "broker", "connection refused (last answered 42s ago)"},
		{"probe hangs", func(h health) health {
			h.probeAt, h.probeOKAt = now.Add(-16*time.Second), now.Add(-16*time.Second)
			return h
		}, nil, "broker", "no probe ended for 16s (every 5s expected)"},
		{"probe just within", func(h health) health {
			h.probeAt, h.probeOKAt = now.Add(-15*time.Second), now.Add(-15*time.Second)
			return h
		}, nil, "", "answered 15s ago"},
		{"assignment not checked", func(h health) health { h.assignAt = time.Time{}; return h }, nil, "assignment", "not checked yet"},
		{"standby", func(h health) health {
			h.assigned, h.assignDetail = false, "standby in group g: other holds 4"
			return h
		}, nil, "assignment", "standby in group g: other holds 4"},
		{"no batch yet", func(h health) health { h.loopAt = time.Time{}; return h }, nil, "consuming", "no batch finished yet"},
		{"fetch failing", func(h health) health {
			h.fetchErr, h.fetchErrAt, h.fetchOKAt = errors.New("fetch readings: failed to dial"), now.Add(-3*time.Second), now.Add(-time.Minute)
			return h
		}, nil, "consuming", "fetch readings: failed to dial (3s ago)"},
		{"fetching again", func(h health) health {
			h.fetchErr, h.fetchErrAt, h.fetchOKAt = errors.New("fetch readings: failed to dial"), now.Add(-3*time.Second), now.Add(-time.Second)
			return h
		}, nil, "", "last batch finished"},
		{"fetch failed long ago", func(h health) health {
			h.fetchErr, h.fetchErrAt, h.fetchOKAt = errors.New("fetch readings: failed to dial"), now.Add(-16*time.Second), now.Add(-time.Minute)
			return h
		}, nil, "", "last batch finished"},
		{"stalled", func(h health) health { h.loopAt = now.Add(-20 * time.Second); return h }, nil, "consuming", "no batch finished for 20s (more than 15s)"},
		{"behind", func(h health) health { h.lag = 1001; return h }, nil, "lag", "1001 readings behind, more than 1000"},
		{"at the limit", func(h health) health { h.lag = 1000; return h }, nil, "", "1000 readings behind, at most 1000"},
		{"no limit", func(h health) health { h.lag = 1 << 40; return h }, func(l readinessLimits) readinessLimits { l.maxLag = 0; return l }, "", "1099511627776 readings behind (no limit set)"},
		{"lag not measured", func(h health) health { h.lag, h.lagAt = 0, time.Time{}; return h }, nil, "lag", "not measured yet"},
		{"lag not measured, no limit", func(h health) health { h.lag, h.lagAt = 0, time.Time{}; return h }, func(l readinessLimits) readinessLimits { l.maxLag = 0; return l }, "", "not measured yet (no limit set)"},
		// The broker check fails while the lag cannot be measured; the
		// last measure stands, with its age.
		{"lag measured long ago", func(h health) health {
			h.lagAt, h.probeOKAt, h.probeErr = now.Add(-20*time.Second), now.Add(-20*time.Second), refused
			return h
		}, nil, "broker", "10 readings behind (measured 20s ago), at most 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, l := good, lim
			if tc.h != nil {
				h = tc.h(h)
			}
			if tc.lim != nil {
				l = tc.lim(l)
			}
			r := judge(h, now, l)
			if r.Ready != (tc.failed == "") || len(r.Checks) != 5 {
				t.Fatalf("ready %v with %d checks, want %v: %+v", r.Ready, len(r.Checks), tc.failed == "", r.Checks)
			}
			var text strings.Builder
			if err := r.Write(&text); err != nil {
				t.Fatal(err)
			}
			for _, c := range r.Checks {
				if c.OK != (c.Name != tc.failed) {
					t.Errorf("check %s ok=%v, want the failing one to be %q", c.Name, c.OK, tc.failed)
				}
			}
			if !strings.Contains(text.String(), tc.detail) {
				t.Errorf("/readyz text lacks %q:\n%s", tc.detail, text.String())
			}
			if tc.failed != "" && !strings.Contains(text.String(), "[-]"+tc.failed+" failed: ") {
				t.Errorf("/readyz text does not mark %s failed:\n%s", tc.failed, text.String())
			}
			if last := strings.TrimSpace(text.String()[strings.LastIndex(strings.TrimSpace(text.String()), "\n")+1:]); last != map[bool]string{true: "readyz check passed", false: "readyz check failed"}[r.Ready] {
				t.Errorf("verdict line %q with ready %v", last, r.Ready)
			}
		})
	}
}

// TestGroupLag measures a group's lag against the embedded broker, per
// partition of a topic of three:
//
//	0: 100 plain records, the group committed 30: 70 behind
//	1: 20 plain records, nothing committed: 20
//	2: a committed transaction of 10 records and its marker, then an open
//	   one of 5: 11, the open transaction not counted (it cannot be read
//	   before it ends); 17 once it is committed (5 more and their marker)
//
// and a group that never joined, which has everything behind.
func TestGroupLag(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 3, "lag")
	recs := func(p, n int) []*kgo.Record {
		out := make([]*kgo.Record, n)
		for i := range out {
			out[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte("x"), Partition: int32(p)}
		}
		return out
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(emb.Addr), kgo.DefaultProduceTopic("lag"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, append(recs(0, 100), recs(1, 20)...)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(emb.Addr), kgo.TransactionalID("lag-2"), kgo.DefaultProduceTopic("lag"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	inTxn(ctx, t, txn, recs(2, 10), true, true)
	inTxn(ctx, t, txn, recs(2, 5), false, false)

	// The group has consumed partition 0 to offset 29: kafka-go's reader
	// commits the offset after the last message handled.
	client := &kafka.Client{Addr: kafka.TCP(emb.Addr)}
	resp, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "lag-check", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"lag": {{Partition: 0, Offset: 30}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Topics["lag"][0].Error; err != nil {
		t.Fatal(err)
	}
	check := func(want map[int]int64) {
		t.Helper()
		got, err := groupLag(ctx, client, "lag-check", "lag", []int{0, 1, 2})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Fatalf("lag %v, want %v", got, want)
		}
	}
	check(map[int]int64{0: 70, 1: 20, 2: 11})
	// A group that never joined has committed nothing: everything is
	// behind (kfake answers its offset fetch with "group ID not found").
	if got, err := groupLag(ctx, client, "never-joined", "lag", []int{0, 1, 2}); err != nil || !maps.Equal(got, map[int]int64{0: 100, 1: 20, 2: 11}) {
		t.Fatalf("lag of a group that never joined: %v, %v; want everything behind", got, err)
	}
	endTxn(ctx, t, txn, true)
	check(map[int]int64{0: 70, 1: 20, 2: 17})
	if _, err := groupLag(ctx, client, "lag-check", "no-such-topic", []int{0}); err == nil {
		t.Fatal("lag of a topic that does not exist: no error")
	}
}

// TestServiceReadinessThroughBrokerRestart runs a service against the
// embedded broker: /readyz passes once it consumes a backlog, with lag 0;
// when the broker goes away /readyz fails on the broker check (503) while
// /healthz still answers and the service keeps running; when the broker
// comes back (same port, same data directory) the service is ready again
// and consumes what is published then, every reading applied once.
func TestServiceReadinessThroughBrokerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	b.Meta.Channels = []string{"flow", "speed"}
	dataDir := t.TempDir()
	emb, err := StartEmbedded(0, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer func() { emb.Close() }()
	_, port, err := net.SplitHostPort(emb.Addr)
	if err != nil {
		t.Fatal(err)
	}
	// Forecasts wait 100 ms for inputs missing from the series.
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: 100 * time.Millisecond,
		ProbeEvery: 100 * time.Millisecond, ReadyMaxLag: 1, BatchSize: 7, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler()
	get := handlerGet(func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	})
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]started failed") {
		t.Fatalf("/readyz before Run: %d\n%s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, []string{emb.Addr}, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	// 50 slots of readings: the first 30 published as a backlog before the
	// service starts (taken 7 at a time), the rest after the broker's restart.
	const steps, before = 50, 30
	readings := streamOf(testSeries(steps, n, C, 3), steps, n, C, 1000)
	publish := func(rs []Reading) {
		t.Helper()
		var msgs []kafka.Message
		for _, r := range rs {
			msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
		}
		w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
		defer w.Close()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	split := slices.IndexFunc(readings, func(r Reading) bool { return r.TS >= (1000+before)*testStep })
	publish(readings[:split])

	stop, done := runService(ctx, svc)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(20 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("service stopped while waiting for %s: %v", what, err)
			default:
			}
			if time.Now().After(deadline) {
				_, body := get("/readyz")
				t.Fatalf("no %s after 30s; /readyz:\n%s", what, body)
			}
		}
	}
	waitFor("backlog consumed", func() bool { return svc.Counters().Applied.Load() == uint64(split) })
	waitFor("ready", func() bool { return svc.Readiness().Ready })
	checkReady(t, get)

	emb.Close()
	waitFor("broker check failing", func() bool {
		r := svc.Readiness()
		return !r.Ready && !r.Checks[1].OK
	})
	checkBrokerGone(t, get, done)

	p, _ := strconv.Atoi(port)
	if emb, err = StartEmbedded(p, dataDir); err != nil {
		t.Fatalf("restart the broker on port %d: %v", p, err)
	}
	waitFor("ready after the broker's restart", func() bool { return svc.Readiness().Ready })
	publish(readings[split:])
	waitFor("readings after the restart consumed", func() bool { return svc.Counters().Applied.Load() >= uint64(len(readings)) })
	if got := svc.Counters().Applied.Load(); got != uint64(len(readings)) {
		t.Fatalf("applied %d readings, want %d", got, len(readings))
	}
	// Every sensor's latest forecast is for the slot after the last one.
	last := readings[len(readings)-1].TS
	for z := 0; z < n; z++ {
		waitFor("the last forecast of sensor "+strconv.Itoa(z), func() bool {
			code, body := get("/forecast/" + strconv.Itoa(z))
			f, err := DecodeForecast([]byte(body))
			return code == http.StatusOK && err == nil && f.TS == last+testStep
		})
	}
	next := last + testStep
	checkForecastsJSON(t, get, n, next)
	checkForecastsCSV(t, h, get, next)
	if code, body := get("/forecasts?format=xml"); code != http.StatusBadRequest || !strings.Contains(body, `format "xml": want json or csv`) {
		t.Errorf("GET /forecasts?format=xml: %d %q", code, body)
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after the broker's restart: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("service did not stop")
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]started failed") {
		t.Fatalf("/readyz after Run: %d\n%s", code, body)
	}
}

// handlerGet answers GET path from a service's handler: the status and
// the body.
type handlerGet func(path string) (int, string)

// checkReady checks /readyz and /metrics of a service that consumed its
// backlog: every check passes, lag 0.
func checkReady(t *testing.T, get handlerGet) {
	t.Helper()
	code, body := get("/readyz")
	for _, want := range []string{"[+]started ok", "[+]broker ok: answered", "[+]consuming ok", "[+]lag ok: 0 readings behind, at most 1", "readyz check passed"} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("/readyz: %d, want 200 with %q:\n%s", code, want, body)
		}
	}
	if _, metrics := get("/metrics"); !strings.Contains(metrics, `sdgnn_ready{check="all"} 1`) || !strings.Contains(metrics, "sdgnn_consumer_lag 0\n") ||
		!strings.Contains(metrics, `sdgnn_partition_lag{partition="3"} 0`+"\n") {
		t.Fatalf("/metrics when ready:\n%s", metrics)
	}
}

// checkBrokerGone checks /readyz, /metrics and /healthz of a service
// whose broker went away, and that the service keeps running (done, its
// Run's end, stays open).
func checkBrokerGone(t *testing.T, get handlerGet, done <-chan error) {
	t.Helper()
	code, body := get("/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]broker failed: ") || !strings.Contains(body, "readyz check failed") {
		t.Fatalf("/readyz without a broker: %d\n%s", code, body)
	}
	if _, metrics := get("/metrics"); !strings.Contains(metrics, `sdgnn_ready{check="broker"} 0`) || !strings.Contains(metrics, `sdgnn_ready{check="all"} 0`) {
		t.Fatalf("/metrics without a broker:\n%s", metrics)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz without a broker: %d, want 200 (alive, not ready)", code)
	}
	select {
	case err := <-done:
		t.Fatalf("service stopped when the broker went away: %v", err)
	case <-time.After(2 * time.Second): // kafka-go's reader reports its dial errors meanwhile
	}
}

// checkForecastsJSON checks that GET /forecasts gives what
// /forecast/{sensor} gives, for every one of n sensors or those asked
// for, in the order asked, or those of a slot at or after since (next,
// the slot of the last forecasts, in Unix ms or RFC 3339).
func checkForecastsJSON(t *testing.T, get handlerGet, n int, next int64) {
	t.Helper()
	// GET /forecasts gives the same forecasts at once: every sensor's,
	// or those asked for, in the order asked, or those of a slot at or
	// after since (Unix ms or RFC 3339).
	for _, tc := range []struct {
		query string
		want  []int
	}{
		{"", nil}, {"?sensors=2,0,2", []int{2, 0}}, {"?sensors=" + strconv.Itoa(n-1), []int{n - 1}},
		{"?since=" + strconv.FormatInt(next, 10), nil},
		{"?sensors=1&since=" + time.UnixMilli(next).UTC().Format(time.RFC3339), []int{1}},
		{"?since=" + strconv.FormatInt(next+1, 10), []int{}},
	} {
		if tc.want == nil {
			for z := 0; z < n; z++ {
				tc.want = append(tc.want, z)
			}
		}
		var each []string
		for _, z := range tc.want {
			_, body := get("/forecast/" + strconv.Itoa(z))
			each = append(each, strings.TrimSpace(body))
		}
		code, body := get("/forecasts" + tc.query)
		var all []json.RawMessage
		if err := json.Unmarshal([]byte(body), &all); code != http.StatusOK || err != nil || len(all) != len(each) {
			t.Fatalf("GET /forecasts%s: %d, %d forecasts (%v), want %d", tc.query, code, len(all), err, len(each))
		}
		for i, f := range all {
			if string(f) != each[i] {
				t.Errorf("GET /forecasts%s: forecast %d is %s, /forecast/%d says %s", tc.query, i, f, tc.want[i], each[i])
			}
		}
	}
}

// checkForecastsCSV checks GET /forecasts as CSV (?format=csv, or
// Accept: text/csv) from h: the forecasts of sensors 2 and 0 that
// /forecast/{sensor} gives, a row each, the values to the bit.
func checkForecastsCSV(t *testing.T, h http.Handler, get handlerGet, next int64) {
	t.Helper()
	// As CSV (?format=csv, or Accept: text/csv): the same forecasts, a
	// row each, the values to the bit.
	for _, tc := range []struct{ query, accept string }{
		{"?format=csv&sensors=2,0", ""}, {"?sensors=2,0", "text/csv"}, {"?sensors=2,0&since=" + strconv.FormatInt(next, 10), "text/csv, */*;q=0.1"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/forecasts"+tc.query, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		rows, err := csv.NewReader(rec.Body).ReadAll()
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/csv; charset=utf-8" || err != nil || len(rows) != 3 {
			t.Fatalf("GET /forecasts%s (Accept %q): %d %s, %d rows (%v)", tc.query, tc.accept, rec.Code, rec.Header().Get("Content-Type"), len(rows), err)
		}
		if got := strings.Join(rows[0], ","); got != "ts,sensor,flow,speed,stale_slots,model,emitted_ms" {
			t.Errorf("CSV header %q", got)
		}
		for i, z := range []int{2, 0} {
			_, body := get("/forecast/" + strconv.Itoa(z))
			f, err := DecodeForecast([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{strconv.FormatInt(f.TS, 10), strconv.Itoa(z)}
			for _, v := range f.Values {
				want = append(want, strconv.FormatFloat(v, 'g', -1, 64))
			}
			want = append(want, strconv.FormatInt(f.StaleSlots, 10), f.Model, strconv.FormatInt(f.EmittedMs, 10))
			if !slices.Equal(rows[i+1], want) {
				t.Errorf("GET /forecasts%s as CSV, row %d: %q, want %q", tc.query, i+1, rows[i+1], want)
			}
			for c, v := range f.Values {
				if x, err := strconv.ParseFloat(rows[i+1][2+c], 64); err != nil || x != v {
					t.Errorf("sensor %d, channel %d: %q does not read back as %v", z, c, rows[i+1][2+c], v)
				}
			}
		}
	}
}

func TestProbeWait(t *testing.T) {
	const every = 5 * time.Second
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name             string
		err              error
		assigned, stable bool
		want             time.Duration
	}{
		{"holder", nil, true, true, every},
		{"settled standby", nil, false, true, every},
		{"joining", nil, false, false, 500 * time.Millisecond},
		{"holder in a rebalance", nil, true, false, every},
		{"broker away", down, false, false, 500 * time.Millisecond},
		{"broker away from a holder", down, true, true, 500 * time.Millisecond},
	} {
		if got := probeWait(every, tc.err, tc.assigned, tc.stable); got != tc.want {
			t.Errorf("%s: wait %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := probeWait(100*time.Millisecond, nil, false, false); got != 100*time.Millisecond {
		t.Errorf("a probe interval under half a second: wait %v", got)
	}
}
