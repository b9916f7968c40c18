//go:build unix

package stream

import (
	"context"
	"math"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
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
