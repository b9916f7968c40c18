//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/browsertest"
	"github.com/rs/zerolog"
)

// TestLiveViewInBrowser runs the demo (embedded broker, paced replay of the
// real SZ-taxi test split, forecaster) in this process, waits until a
// sensor has a scored forecast, loads its /live page in a real headless
// Chromium, and checks the DOM after the page's JavaScript ran: rows of
// recent slots with numeric forecasts that agree with /api/sensors/{sensor},
// the slots of the test part marked as the API marks them, and the MAPE
// figures filled in, the test part's among them.
//
// Without chromium on PATH the test is skipped, unless
// SDGNN_REQUIRE_BROWSER=1 (as in CI), when it fails.
func TestLiveViewInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and a headless browser")
	}
	browser := browsertest.Find(t)
	dir, _, _, b := szTaxiBundle(t, 12, 8)
	b.Meta.Config.MAPEFloor = 1 // the live view's floor: SZ-taxi has near-zero speeds
	tmp := t.TempDir()
	bundlePath := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(bundlePath); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	logs := &logWatch{addr: make(chan string, 1)}
	demoDone := make(chan error, 1)
	go func() {
		// The whole test split (about 150 s at this pace) outlasts the test.
		demoDone <- cmdDemo(ctx, []string{"-model", bundlePath, "-data", dir, "-http", "127.0.0.1:0",
			"-steps", "0", "-speedup", "3600", "-log-json"}, io.Discard, logs)
	}()
	defer func() {
		cancel()
		select {
		case err := <-demoDone:
			if err != nil {
				t.Errorf("demo: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("demo still running 20 s after cancel")
		}
		if t.Failed() {
			t.Logf("demo log (tail):\n%s", logs.tail(4000))
		}
	}()

	var base string
	select {
	case addr := <-logs.addr:
		base = "http://" + addr
	case err := <-demoDone:
		demoDone <- err
		t.Fatalf("demo ended before serving HTTP: %v", err)
	case <-ctx.Done():
		t.Fatal("demo did not start serving HTTP")
	}
	liveWaitFor(ctx, t, "/healthz", func() (bool, error) {
		code, _, err := liveGet(ctx, base+"/healthz")
		return code == http.StatusOK, err
	})
	// A sensor whose forecasts in the test part have met their readings:
	// its page must show scored slots, some of them in the part, and MAPEs.
	sensor := -1
	liveWaitFor(ctx, t, "a scored forecast in /api/sensors", func() (bool, error) {
		var sum struct {
			Sensors []struct {
				Sensor  int `json:"sensor"`
				Metrics struct {
					MAPECount int `json:"mape_count"`
				} `json:"metrics"`
				PartMetrics *struct {
					MAPECount int `json:"mape_count"`
				} `json:"part_metrics"`
				LatestForecastTS *int64 `json:"latest_forecast_ts"`
			} `json:"sensors"`
		}
		if err := liveGetJSON(ctx, base+"/api/sensors", &sum); err != nil {
			return false, err
		}
		for _, s := range sum.Sensors {
			if s.LatestForecastTS != nil && s.Metrics.MAPECount >= 2 && s.PartMetrics != nil && s.PartMetrics.MAPECount >= 2 {
				sensor = s.Sensor
				return true, nil
			}
		}
		return false, nil
	})

	// Ready (holding the group's partitions), so that the page shows no
	// readiness box.
	liveWaitFor(ctx, t, "/readyz", func() (bool, error) {
		code, _, err := liveGet(ctx, base+"/readyz")
		return code == http.StatusOK, err
	})
	dom := browsertest.DumpDOM(ctx, t, browser, fmt.Sprintf("%s/live?sensor=%d", base, sensor), 8*time.Second) // four refreshes

	// What the page showed against what the service holds: forecasts are
	// recorded once, so every slot the page showed that is still in the
	// view has the same forecast now.
	var view struct {
		Slots []struct {
			TS       int64      `json:"ts"`
			Forecast []*float64 `json:"forecast"`
			InPart   bool       `json:"in_part"`
		} `json:"slots"`
		Inputs []struct {
			Sensor          int     `json:"sensor"`
			Weight          float64 `json:"weight"`
			LatestReadingTS *int64  `json:"latest_reading_ts"`
		} `json:"inputs"`
	}
	if err := liveGetJSON(ctx, fmt.Sprintf("%s/api/sensors/%d", base, sensor), &view); err != nil {
		t.Fatal(err)
	}
	forecastAt, inPart := map[int64]float64{}, map[int64]bool{}
	for _, s := range view.Slots {
		if len(s.Forecast) > 0 && s.Forecast[0] != nil {
			forecastAt[s.TS] = *s.Forecast[0]
		}
		inPart[s.TS] = s.InPart
	}
	rows := liveRowRE.FindAllStringSubmatch(dom, -1)
	if len(rows) == 0 {
		t.Fatalf("no forecast rows in the page of sensor %d:\n%s", sensor, dom)
	}
	forecasts, scored, checked, marked := 0, 0, 0, 0
	for _, row := range rows {
		ts, err := strconv.ParseInt(row[2], 10, 64)
		if err != nil {
			t.Fatalf("row data-slot %q: %v", row[2], err)
		}
		if rowInPart := row[1] != ""; rowInPart {
			marked++
			if !inPart[ts] {
				t.Errorf("slot %d: the page marks it in the part, /api/sensors/%d does not", ts, sensor)
			}
		} else if inPart[ts] {
			t.Errorf("slot %d: /api/sensors/%d has it in the part, the page does not mark it", ts, sensor)
		}
		cells := map[string]string{}
		for _, c := range liveCellRE.FindAllStringSubmatch(row[3], -1) {
			cells[c[1]] = c[2]
		}
		if len(cells) != 4 {
			t.Fatalf("row of slot %d has cells %v, want slot-time, reading, forecast, abs-error", ts, cells)
		}
		if want := time.UnixMilli(ts).UTC().Format("2006-01-02 15:04"); cells["slot-time"] != want {
			t.Errorf("row of slot %d shows time %q, want %q", ts, cells["slot-time"], want)
		}
		f, err := strconv.ParseFloat(cells["forecast"], 64)
		if err != nil {
			continue // no forecast for the slot (yet)
		}
		forecasts++
		if _, err := strconv.ParseFloat(cells["abs-error"], 64); err == nil {
			scored++
		}
		if api, ok := forecastAt[ts]; ok {
			checked++
			if math.Abs(api-f) > 0.005+1e-9 {
				t.Errorf("slot %d: the page shows forecast %s, /api/sensors/%d has %g", ts, cells["forecast"], sensor, api)
			}
		}
	}
	if forecasts == 0 || scored == 0 || checked == 0 || marked == 0 {
		t.Errorf("%d rows: %d with a numeric forecast, %d scored, %d checked against the API, %d in the part; want some of each", len(rows), forecasts, scored, checked, marked)
	}
	if regexp.MustCompile(`id="part-box"[^>]*hidden`).MatchString(dom) || !strings.Contains(dom, `id="part-label">test part<`) {
		t.Error("the test part's figures are hidden or unnamed")
	}
	for _, id := range []string{"sensor-mape", "overall-mape", "part-mape", "sensor-part-mape"} {
		m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom)
		if m == nil {
			t.Errorf("no #%s in the page", id)
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSuffix(m[1], " %"), 64)
		if err != nil || v < 0 {
			t.Errorf("#%s shows %q, want a MAPE in percent", id, m[1])
		}
	}
	if m := regexp.MustCompile(`id="sensor-id"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != strconv.Itoa(sensor) {
		t.Errorf("#sensor-id shows %v, want %d", m, sensor)
	}
	if m := regexp.MustCompile(`id="model"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != b.Meta.Version {
		t.Errorf("#model shows %v, want the bundle's version %q", m, b.Meta.Version)
	}
	// The sensors the forecast reads: the bundle's Θ, as the API gives it.
	inputs := liveInputRE.FindAllStringSubmatch(dom, -1)
	if len(inputs) != len(view.Inputs) || len(inputs) != len(b.Theta.Nodes[sensor]) {
		t.Errorf("the page lists %d inputs, the API %d, Θ %d", len(inputs), len(view.Inputs), len(b.Theta.Nodes[sensor]))
	}
	weightOf := map[int]float64{}
	for i, k := range b.Theta.Nodes[sensor] {
		weightOf[k] = b.Theta.Weights[sensor][i]
	}
	for _, row := range inputs {
		k, _ := strconv.Atoi(row[1])
		w, ok := weightOf[k]
		cells := map[string]string{}
		for _, c := range liveCellRE.FindAllStringSubmatch(row[2], -1) {
			cells[c[1]] = c[2]
		}
		got, err := strconv.ParseFloat(cells["weight"], 64)
		if !ok || err != nil || math.Abs(got-w) > 0.005*w {
			t.Errorf("input row of sensor %d shows weight %q; Θ has %g (present %v)", k, cells["weight"], w, ok)
		}
		if cells["newest"] == "" {
			t.Errorf("input row of sensor %d shows no newest reading", k)
		}
	}
	_, readsItself := weightOf[sensor]
	if noted := !regexp.MustCompile(`id="no-self-note"[^>]*hidden`).MatchString(dom); noted == readsItself {
		t.Errorf("the page notes that sensor %d does not read itself: %v; Θ has it read itself: %v", sensor, noted, readsItself)
	}
	if !regexp.MustCompile(`id="chart-forecasts" d="M[-0-9. ML]+"`).MatchString(dom) {
		t.Error("the chart has no forecast line")
	}
	if !strings.Contains(dom, `class="worst-row"`) {
		t.Error("no rows in the worst-sensors table")
	}
	if strings.Contains(dom, `id="status" class="error"`) {
		t.Errorf("the page reports an error: %s", regexp.MustCompile(`id="status"[^>]*>([^<]*)<`).FindString(dom))
	}
	if !regexp.MustCompile(`id="readiness"[^>]*hidden`).MatchString(dom) {
		t.Errorf("the page says the running demo is not ready: %s", liveReadinessRE.FindAllString(dom, -1))
	}
	t.Logf("sensor %d: %d rows, %d with forecasts, %d scored, %d checked against /api/sensors, %d in the test part", sensor, len(rows), forecasts, scored, checked, marked)
}

// TestLiveViewShowsNotReady loads the live view of a service that is not
// consuming (Run not called: no broker) in headless Chromium: the page
// shows the failing readiness checks as /readyz gives them.
func TestLiveViewShowsNotReady(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a headless browser")
	}
	browser := browsertest.Find(t)
	_, _, _, b := szTaxiBundle(t, 12, 8)
	srv := httptest.NewServer(unstartedService(t, b, zerolog.Nop()).Handler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	dom := browsertest.DumpDOM(ctx, t, browser, srv.URL+"/live", 8*time.Second)
	if regexp.MustCompile(`id="readiness"[^>]*hidden`).MatchString(dom) {
		t.Fatalf("the page hides the readiness box of a service that is not consuming:\n%s", dom)
	}
	var failed []string
	for _, m := range liveReadinessRE.FindAllStringSubmatch(dom, -1) {
		failed = append(failed, m[1])
	}
	want := []string{"started failed: not consuming yet, or stopped", "broker failed: not asked yet", "assignment failed: not checked yet", "consuming failed: no batch finished yet"}
	if !slices.Equal(failed, want) {
		t.Errorf("the page lists failing checks %q, want %q", failed, want)
	}
}

var (
	liveReadinessRE = regexp.MustCompile(`<li class="readiness-check">([^<]*)</li>`)
	liveRowRE       = regexp.MustCompile(`<tr class="forecast-row( in-part)?" data-slot="(-?\d+)">(.*?)</tr>`)
	liveCellRE      = regexp.MustCompile(`<td class="([a-z-]+)">([^<]*)</td>`)
	// liveInputRE matches a row of the sensors a forecast reads; the first
	// cell holds a link, which liveCellRE skips.
	liveInputRE = regexp.MustCompile(`<tr class="input-row" data-sensor="(\d+)">(.*?)</tr>`)
)

// liveWaitFor polls cond every 200 ms until it holds, failing the test when
// ctx ends first.
func liveWaitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v (last error: %v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func liveGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

func liveGetJSON(ctx context.Context, url string, v any) error {
	code, body, err := liveGet(ctx, url)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// logWatch collects the demo's JSON log lines and sends the address of
// its HTTP server, once logged, on addr.
type logWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

// Write implements io.Writer; zerolog writes one line per call.
func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	var line struct {
		HTTP string `json:"http"`
	}
	if !w.sent && json.Unmarshal(p, &line) == nil && line.HTTP != "" {
		w.addr <- line.HTTP
		w.sent = true
	}
	return len(p), nil
}

func (w *logWatch) tail(n int) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return liveTail(w.buf.String(), n)
}

func liveTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
