//go:build unix

package stream

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/browsertest"
)

// mapBundleService returns a service of five Los-loop detectors, by their
// IDs at their coordinates, whose sensors 1 to 4 have each one scored
// forecast with MAPE 10 %, 20 %, 30 % and 40 %; sensor 0 has none.
func mapBundleService(t *testing.T) (*Service, []string, []pems.Location) {
	t.Helper()
	b := testBundle(t, 5, 4, 1, 3, 1)
	ids := []string{"773869", "767541", "767542", "717447", "717446"}
	locs := []pems.Location{{Lat: 34.15497, Lon: -118.31829}, {Lat: 34.11621, Lon: -118.23799}, {Lat: 34.11641, Lon: -118.23819}, {Lat: 34.07248, Lon: -118.26772}, {Lat: 34.07142, Lon: -118.26572}}
	b.Meta.SensorIDs, b.Meta.Locations = ids, locs
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	for z := 1; z <= 4; z++ {
		svc.Live().Forecast(z, 10*testStep, []float64{100 + 10*float64(z)})
		svc.Live().Reading(z, 10*testStep, []float64{100})
	}
	return svc, ids, locs
}

// mapCircle is a sensor's circle on the live page's map.
type mapCircle struct {
	class, fill string
	cx, cy      float64
}

// mapCircles returns the map's circles of dom by sensor name.
func mapCircles(t *testing.T, dom string) map[string]mapCircle {
	t.Helper()
	out := map[string]mapCircle{}
	for _, m := range regexp.MustCompile(`<circle ([^>]*)>`).FindAllStringSubmatch(dom, -1) {
		attr := map[string]string{}
		for _, a := range regexp.MustCompile(`([a-z-]+)="([^"]*)"`).FindAllStringSubmatch(m[1], -1) {
			attr[a[1]] = a[2]
		}
		if !strings.Contains(attr["class"], "map-sensor") {
			continue
		}
		cx, err1 := strconv.ParseFloat(attr["cx"], 64)
		cy, err2 := strconv.ParseFloat(attr["cy"], 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("circle %s: cx %q, cy %q", m[0], attr["cx"], attr["cy"])
		}
		out[attr["data-sensor"]] = mapCircle{class: attr["class"], fill: attr["fill"], cx: cx, cy: cy}
	}
	return out
}

// TestLivePageMap loads the live page of a model whose sensors have IDs
// and coordinates in headless Chromium: the map shows every sensor at its
// coordinates (east to the right, north up), coloured by its running
// MAPE (the worst at the top of the scale, the best at its foot, one
// without a score grey), the sensor shown marked, with a line to each
// other sensor its forecast reads, wider for a larger θ; the tables and
// the picker name the sensors by ID.
func TestLivePageMap(t *testing.T) {
	svc, ids, locs := mapBundleService(t)
	dom := liveDOM(t, svc, "/live?sensor=767541")
	if !regexp.MustCompile(`<div id="map-box">`).MatchString(dom) {
		t.Fatalf("the map is hidden:\n%s", dom)
	}
	cs := mapCircles(t, dom)
	if len(cs) != len(ids) {
		t.Fatalf("%d sensors on the map, want %d: %v", len(cs), len(ids), cs)
	}
	for i, id := range ids {
		for j, other := range ids {
			a, b := cs[id], cs[other]
			if locs[i].Lon < locs[j].Lon && !(a.cx < b.cx) || locs[i].Lat > locs[j].Lat && !(a.cy < b.cy) {
				t.Errorf("%s at (%g, %g) drawn at (%g, %g), %s at (%g, %g) at (%g, %g)", id, locs[i].Lat, locs[i].Lon, a.cx, a.cy, other, locs[j].Lat, locs[j].Lon, b.cx, b.cy)
			}
		}
	}
	// Equirectangular, longitudes scaled by cos(mean latitude): the
	// drawn distances keep the ground's proportions.
	a, b, c := cs[ids[0]], cs[ids[1]], cs[ids[3]]
	var lat0 float64
	for _, l := range locs {
		lat0 += l.Lat / float64(len(locs))
	}
	k := math.Cos(lat0 * math.Pi / 180)
	ground := func(p, q pems.Location) float64 {
		return (p.Lat-q.Lat)*(p.Lat-q.Lat) + k*k*(p.Lon-q.Lon)*(p.Lon-q.Lon)
	}
	drawn := func(p, q mapCircle) float64 { return (p.cx-q.cx)*(p.cx-q.cx) + (p.cy-q.cy)*(p.cy-q.cy) }
	if r, want := drawn(a, b)/drawn(a, c), ground(locs[0], locs[1])/ground(locs[0], locs[3]); r < 0.98*want || r > 1.02*want {
		t.Errorf("drawn distances' ratio %g, on the ground %g", r, want)
	}
	if cs["717446"].fill != "rgb(253,231,37)" || cs["767541"].fill != "rgb(68,1,84)" || cs["773869"].fill != "#bbb" {
		t.Errorf("fills: worst %s, best %s, unscored %s; want the scale's top, its foot and grey", cs["717446"].fill, cs["767541"].fill, cs["773869"].fill)
	}
	if f2, f3 := cs["767542"].fill, cs["717447"].fill; f2 == f3 || f2 == cs["767541"].fill {
		t.Errorf("MAPE 20 %% and 30 %% drawn %s and %s", f2, f3)
	}
	for id, c := range cs {
		if sel := strings.Contains(c.class, "selected"); sel != (id == "767541") {
			t.Errorf("sensor %s class %q", id, c.class)
		}
	}
	th := svc.Bundle().Theta
	lines := regexp.MustCompile(`<line class="map-input" data-sensor="([^"]*)"[^>]* stroke-width="([0-9.]+)"`).FindAllStringSubmatch(dom, -1)
	var want []string
	width := map[string]float64{}
	for i, k := range th.Nodes[1] {
		if k != 1 {
			want = append(want, ids[k])
			width[ids[k]] = th.Weights[1][i]
		}
	}
	if len(lines) != len(want) {
		t.Fatalf("input lines %v, want to %v", lines, want)
	}
	for _, l := range lines {
		for _, m := range lines {
			wl, _ := strconv.ParseFloat(l[2], 64)
			wm, _ := strconv.ParseFloat(m[2], 64)
			if width[l[1]] > width[m[1]] && !(wl > wm) {
				t.Errorf("line to %s (θ %g) width %g, to %s (θ %g) %g", l[1], width[l[1]], wl, m[1], width[m[1]], wm)
			}
		}
	}
	if m := regexp.MustCompile(`id="sensor-id"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != "767541" {
		t.Errorf("#sensor-id shows %v, want 767541", m)
	}
	if !strings.Contains(dom, `<tr class="worst-row" data-sensor="717446">`) || !strings.Contains(dom, `<option value="773869">773869</option>`) {
		t.Errorf("the worst sensors' table or the picker do not name the sensors by ID:\n%s", dom)
	}
}

// TestLivePageMapClick clicks a sensor on the map: the page shows that
// sensor (its ID, its map mark) and puts it in the URL.
func TestLivePageMapClick(t *testing.T) {
	svc, _, _ := mapBundleService(t)
	page := strings.Replace(string(livePage), "</body>", `<script>
setTimeout(function () {
  document.querySelector('#map circle[data-sensor="717447"]').dispatchEvent(new MouseEvent("click", { bubbles: true }));
}, 400);
setTimeout(function () { document.body.dataset.url = window.location.search; }, 900);
</script>
</body>`, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /harness", serveHarness(page))
	mux.Handle("/", svc.Handler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dom := browsertest.DumpDOM(context.Background(), t, browsertest.Find(t), srv.URL+"/harness?sensor=767541", time.Second)
	if m := regexp.MustCompile(`id="sensor-id"[^>]*>([^<]*)<`).FindStringSubmatch(dom); m == nil || m[1] != "717447" {
		t.Errorf("#sensor-id shows %v after the click, want 717447", m)
	}
	if c := mapCircles(t, dom)["717447"]; !strings.Contains(c.class, "selected") {
		t.Errorf("the sensor clicked is drawn %+v, not selected", c)
	}
	if m := regexp.MustCompile(`data-url="([^"]*)"`).FindStringSubmatch(dom); m == nil || m[1] != "?sensor=717447" {
		t.Errorf("the page's query is %v, want ?sensor=717447", m)
	}
}

// TestLivePageNoMap: a model without locations (PeMS, SZ-taxi) shows no
// map.
func TestLivePageNoMap(t *testing.T) {
	svc, err := NewService(testBundle(t, 5, 4, 1, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	svc.Live().Forecast(3, 10*testStep, []float64{30})
	dom := liveDOM(t, svc, "/live?sensor=3")
	if !strings.Contains(dom, `<div id="map-box" hidden="">`) || strings.Contains(dom, `class="map-sensor`) {
		t.Errorf("a model without locations shows a map:\n%s", dom)
	}
}

// TestLivePageMarksSilent loads the live page of a sensor whose latest
// forecast was made from an empty own window (Forecast.Silent): the page
// marks it silent on the map (a class that draws it hollow and dashed),
// in the sensor picker, beside its name and in its recent slots, and
// counts it; a sensor with an older silent forecast but a later one
// that is not is not marked.
func TestLivePageMarksSilent(t *testing.T) {
	svc, ids, _ := mapBundleService(t)
	live := svc.Live()
	if !live.RecordForecast(&Forecast{Sensor: 3, TS: 11 * testStep, Values: []float64{104}, Silent: true, class: liveClass(evaluation.OwnWhole, false)}) ||
		!live.RecordForecast(&Forecast{Sensor: 2, TS: 9 * testStep, Values: []float64{104}, Silent: true}) ||
		!live.Reading(3, 11*testStep, []float64{100}) {
		t.Fatal("forecasts not recorded")
	}
	dom := liveDOM(t, svc, "/live?sensor="+ids[3])
	for id, c := range mapCircles(t, dom) {
		if silent := strings.Contains(c.class, "silent"); silent != (id == ids[3]) {
			t.Errorf("sensor %s drawn with class %q", id, c.class)
		}
	}
	for _, want := range []string{
		`<option value="` + ids[3] + `" class="silent-mark">` + ids[3] + ` (silent)</option>`,
		`<option value="` + ids[2] + `">` + ids[2] + `</option>`,
		`<span id="silent-count" class="silent-mark">1</span>`,
		`<tr class="forecast-row silent-forecast" data-slot="` + strconv.FormatInt(11*testStep, 10) + `">`,
		`<tr class="forecast-row" data-slot="` + strconv.FormatInt(10*testStep, 10) + `">`,
		// The error by completeness: the silent forecast scored in its class.
		`<tr class="completeness-row"><td class="own">whole window missing</td><td class="receptive">complete</td><td class="mae">4.00</td>`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %s:\n%s", want, dom)
		}
	}
	for _, id := range []string{"silent-badge", "silent-count-box", "silent-note", "completeness-box"} {
		if m := regexp.MustCompile(`<[a-z]+ id="` + id + `"[^>]*>`).FindString(dom); m == "" || strings.Contains(m, " hidden") {
			t.Errorf("#%s is %q, want shown", id, m)
		}
	}
}
