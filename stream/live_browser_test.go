//go:build unix

package stream

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/browsertest"
)

// liveDOM serves svc's handler, loads path in headless Chromium, lets the
// page's scripts run for three seconds of virtual time (the first refresh
// and the next) and returns the DOM as serialised then.
func liveDOM(t *testing.T, svc *Service, path string) string {
	t.Helper()
	browser := browsertest.Find(t)
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	return browsertest.DumpDOM(context.Background(), t, browser, srv.URL+path, 3*time.Second)
}

// serveHarness serves page, the live page with a test's script added, as
// serveLive serves the page: under a Content-Security-Policy built as
// liveCSP is, allowing the inline scripts and style of page (the test's
// too) by hash, so that the page runs as under its own policy
// (browsertest.DumpDOM fails the test on a violation).
func serveHarness(page string) http.HandlerFunc {
	csp := pageCSP([]byte(page))
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Frame-Options", "DENY")
		io.WriteString(w, page)
	}
}

// liveCells returns the cells (class → text) of the table row of dom
// whose opening tag matches rowTag.
func liveCells(t *testing.T, dom, rowTag string) map[string]string {
	t.Helper()
	row := regexp.MustCompile(rowTag + `(.*?)</tr>`).FindStringSubmatch(dom)
	if row == nil {
		t.Fatalf("no row %s in the page:\n%s", rowTag, dom)
	}
	cells := map[string]string{}
	for _, c := range regexp.MustCompile(`<td class="([a-z-]+)">([^<]*)</td>`).FindAllStringSubmatch(row[1], -1) {
		cells[c[1]] = c[2]
	}
	return cells
}

// TestLivePageNonFiniteForecast loads the page of a sensor whose forecast
// of a slot was not finite (null in the JSON) while its reading came: the
// row shows no forecast and no error, not the reading as the error (null
// taken as 0).
func TestLivePageNonFiniteForecast(t *testing.T) {
	svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	live.Forecast(3, 10*testStep, []float64{math.NaN()})
	live.Reading(3, 10*testStep, []float64{80})
	live.Forecast(3, 11*testStep, []float64{90})
	live.Reading(3, 11*testStep, []float64{100})
	dom := liveDOM(t, svc, "/live?sensor=3")
	if c := liveCells(t, dom, `<tr class="forecast-row" data-slot="`+strconv.FormatInt(11*testStep, 10)+`">`); c["forecast"] != "90.00" || c["abs-error"] != "10.00" {
		t.Errorf("slot 11 (forecast 90, reading 100): cells %v", c)
	}
	if c := liveCells(t, dom, `<tr class="forecast-row" data-slot="`+strconv.FormatInt(10*testStep, 10)+`">`); c["reading"] != "80.00" || c["forecast"] != "–" || c["abs-error"] != "–" {
		t.Errorf("slot 10 (forecast NaN, reading 80): cells %v, want reading 80.00, forecast and abs error –", c)
	}
}

// TestLivePageWorstNonFinite loads the page while one sensor's scored
// forecast was not finite, which makes its errors (and the overall ones)
// null with values counted: that sensor heads the worst-sensors table,
// marked so, rather than being left out of it as a sensor without data
// is, and the MAPE figures say the errors are not finite rather than
// showing "–" as before the first score.
func TestLivePageWorstNonFinite(t *testing.T) {
	svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	for _, r := range []struct{ z, f, y float64 }{{2, math.NaN(), 50}, {3, 90, 100}, {4, 100, 100}} {
		live.Forecast(int(r.z), 10*testStep, []float64{r.f})
		live.Reading(int(r.z), 10*testStep, []float64{r.y})
	}
	dom := liveDOM(t, svc, "/live?sensor=2")
	var order []string
	for _, m := range regexp.MustCompile(`<tr class="worst-row" data-sensor="(\d+)">`).FindAllStringSubmatch(dom, -1) {
		order = append(order, m[1])
	}
	if got := strings.Join(order, ","); got != "2,3,4" {
		t.Errorf("worst sensors %s, want 2 (non-finite forecast), 3 (MAPE 10), 4 (MAPE 0)", got)
	}
	if c := liveCells(t, dom, `<tr class="worst-row" data-sensor="2">`); c["mape"] != "not finite" || c["count"] != "1" {
		t.Errorf("worst row of sensor 2: cells %v, want MAPE not finite, count 1", c)
	}
	for _, id := range []string{"sensor-mape", "overall-mape"} {
		if m := regexp.MustCompile(`id="` + id + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != "not finite" {
			t.Errorf("#%s shows %v, want not finite", id, m)
		}
	}
}

// TestLivePageChartGaps checks that the chart's lines break where a slot
// has no reading (or no forecast), as the legend has it ("missing readings
// are gaps"), rather than join the slots on either side: here slot 12 has
// a forecast but its reading never came, and slot 15 has neither.
func TestLivePageChartGaps(t *testing.T) {
	svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	for s := int64(10); s <= 17; s++ {
		if s != 15 {
			live.Forecast(3, s*testStep, []float64{float64(40 + s)})
		}
		if s != 12 && s != 15 {
			live.Reading(3, s*testStep, []float64{float64(41 + s)})
		}
	}
	dom := liveDOM(t, svc, "/live?sensor=3")
	for _, tc := range []struct {
		id   string
		want int // pieces of the line
	}{{"chart-readings", 3}, {"chart-forecasts", 2}} {
		m := regexp.MustCompile(`id="` + tc.id + `" d="([^"]*)"`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no #%s in the page:\n%s", tc.id, dom)
		}
		if got := strings.Count(m[1], "M"); got != tc.want {
			t.Errorf("#%s is drawn in %d pieces (%q), want %d", tc.id, got, m[1], tc.want)
		}
	}
}

// TestLivePageKeepsLatestSensor switches the page from sensor 1 to sensor
// 2 while sensor 1's view is still on its way, and holds that view back
// until sensor 2's has been answered: the page must show sensor 2, the
// one chosen last, not the view that came last. The page is served with a
// script before its own that wraps fetch and makes the switch the moment
// sensor 1's view is asked for, as a click would.
func TestLivePageKeepsLatestSensor(t *testing.T) {
	svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	for z := 1; z <= 2; z++ {
		live.Forecast(z, 10*testStep, []float64{float64(10 * z)})
		live.Reading(z, 10*testStep, []float64{float64(10*z + 1)})
	}
	hook := `<script>
(function () {
  var realFetch = window.fetch, switched = false;
  window.fetch = function (url, opts) {
    var p = realFetch(url, opts);
    if (!switched && String(url) === "api/sensors/1") {
      switched = true;
      queueMicrotask(function () {
        var sp = document.getElementById("sensor-picker");
        sp.value = "2";
        sp.dispatchEvent(new Event("change"));
      });
    }
    return p;
  };
})();
</script>
<script>`
	page := strings.Replace(string(livePage), "<script>", hook, 1)
	if page == string(livePage) {
		t.Fatal("the live page has no <script>")
	}
	served2 := make(chan struct{})
	var once sync.Once
	h := svc.Handler()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /harness", serveHarness(page))
	mux.HandleFunc("GET /api/sensors/1", func(w http.ResponseWriter, r *http.Request) {
		select { // sensor 1's view comes after sensor 2's
		case <-served2:
			time.Sleep(300 * time.Millisecond)
		case <-time.After(10 * time.Second):
		}
		h.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /api/sensors/2", func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		once.Do(func() { close(served2) })
	})
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	// One second of virtual time: both views answered (virtual time stands
	// still while a fetch is pending), before the next refresh (2 s).
	dom := browsertest.DumpDOM(context.Background(), t, browsertest.Find(t), srv.URL+"/harness?sensor=1", time.Second)
	select {
	case <-served2:
	default:
		t.Fatalf("the page never asked for sensor 2's view:\n%s", dom)
	}
	if m := regexp.MustCompile(`id="sensor-id"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != "2" {
		t.Errorf("#sensor-id shows %v, want 2 (chosen last)", m)
	}
	if c := liveCells(t, dom, `<tr class="forecast-row" data-slot="`+strconv.FormatInt(10*testStep, 10)+`">`); c["forecast"] != "20.00" {
		t.Errorf("forecast row: cells %v, want sensor 2's forecast 20.00", c)
	}
}

// TestLivePageSensorPicker checks the sensor picker where no sensor is
// shown: before the first forecast it selects none (it showed sensor 0,
// so that picking 0 did nothing), and for a ?sensor= the model does not
// have it selects none and says the sensor is unknown, rather than retry
// the 404 for good; so for one that is no sensor id (empty, or "3x", which
// showed sensor 3). The picker's selection is a property, not in the
// DOM's markup, so a script copies it into an attribute of the body.
func TestLivePageSensorPicker(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		forecast    bool
		status      string
	}{
		{"before the first forecast", "", false, "waiting for the first forecast"},
		{"unknown sensor", "?sensor=999", true, "unknown sensor 999: the model has sensors 0 to 4"},
		{"empty sensor", "?sensor=", true, `unknown sensor "": the model has sensors 0 to 4`},
		{"malformed sensor", "?sensor=3x", true, `unknown sensor "3x": the model has sensors 0 to 4`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
			if err != nil {
				t.Fatal(err)
			}
			if tc.forecast {
				svc.Live().Forecast(3, 10*testStep, []float64{30})
			}
			page := strings.Replace(string(livePage), "</body>", `<script>
setTimeout(function () { document.body.dataset.picked = String(document.getElementById("sensor-picker").selectedIndex); }, 500);
</script>
</body>`, 1)
			h := svc.Handler()
			mux := http.NewServeMux()
			mux.HandleFunc("GET /harness", serveHarness(page))
			mux.Handle("/", h)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			dom := browsertest.DumpDOM(context.Background(), t, browsertest.Find(t), srv.URL+"/harness"+tc.query, time.Second)
			if m := regexp.MustCompile(`data-picked="([^"]*)"`).FindStringSubmatch(dom); m == nil || m[1] != "-1" {
				t.Errorf("the sensor picker selects option %v, want none (-1)", m)
			}
			st := regexp.MustCompile(`id="status"[^>]*>([^<]*)<`).FindStringSubmatch(dom)
			if st == nil || !strings.Contains(st[1], tc.status) || strings.Contains(st[1], "retrying") {
				t.Errorf("status %v, want %q, not retrying", st, tc.status)
			}
		})
	}
}
