package stream

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
)

// TestLiveHandler checks the live routes of Service.Handler without a
// broker: the page, the JSON shapes and the 404s.
func TestLiveHandler(t *testing.T) {
	b := testBundle(t, 5, 4, 2, 3, 1)
	b.Meta.Channels = []string{"flow", "speed"}
	b.Meta.Config.MAPEFloor = 1
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	live := svc.Live()
	live.Forecast(3, 10*testStep, []float64{110, 45})
	live.Reading(3, 10*testStep, []float64{100, 0.5}) // 0.5 below the bundle's floor
	live.Forecast(3, 11*testStep, []float64{math.NaN(), 60})
	live.Reading(4, 9*testStep, []float64{80, 2}) // one of sensor 3's inputs
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	get := getFunc(func(path string, wantCode int, wantType string) []byte {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != wantCode || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) {
			t.Fatalf("GET %s: %d %s, want %d %s: %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), wantCode, wantType, body)
		}
		return body
	})

	checkLivePage(t, get)
	var sum liveSummaryJSON
	checkLiveSummary(t, get, &sum)
	var v liveSensorJSON
	checkLiveSensor(t, get, b, &v)
	checkSensorRoutes(t, srv, get)
	checkLiveMetrics(t, get)

	// After a reload the routes describe the new model: its version, its
	// receptive sets; the live figures carry on.
	next := testBundle6(t, 5, 4, 2, 3, 2)
	next.Meta.Version = "test-v2"
	if err := svc.Reload(next); err != nil {
		t.Fatal(err)
	}
	sum.Model = ""
	if err := json.Unmarshal(get("/api/sensors", 200, "application/json"), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Model != "test-v2" || sum.Overall.Count != 2 {
		t.Errorf("after the reload: model %q, %d values scored; want test-v2, 2", sum.Model, sum.Overall.Count)
	}
	v.Inputs = nil
	if err := json.Unmarshal(get("/api/sensors/3", 200, "application/json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Inputs) != len(next.Theta.Nodes[3]) || len(v.Inputs) == len(b.Theta.Nodes[3]) {
		t.Errorf("after the reload sensor 3 has %d inputs, want the new Θ's %d", len(v.Inputs), len(next.Theta.Nodes[3]))
	}
	metrics := string(get("/metrics", 200, "text/plain"))
	for _, line := range []string{`sdgnn_model_info{version="test-v2",dataset="test"} 1`, `sdgnn_stream_model_reloads_total 1`} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics after the reload lacks %q", line)
		}
	}
}

// getFunc gets path from a test server, failing the test unless the
// answer has wantCode and a Content-Type starting with wantType, and
// returns its body.
type getFunc func(path string, wantCode int, wantType string) []byte

// checkLivePage checks that /live is the page, with the elements its
// script fills, and refers to nothing outside it.
func checkLivePage(t *testing.T, get getFunc) {
	t.Helper()
	page := string(get("/live", 200, "text/html"))
	for _, id := range []string{`id="forecast-rows"`, `id="sensor-mape"`, `id="overall-mape"`, `id="worst-rows"`, `id="status"`, `id="chart"`} {
		if !strings.Contains(page, id) {
			t.Errorf("page lacks %s", id)
		}
	}
	// Offline: nothing but the page itself (the SVG namespace is a name,
	// not a resource).
	local := strings.ReplaceAll(page, `"http://www.w3.org/2000/svg"`, "")
	for _, ext := range []string{"http:", "https:", "//", "src=", "<link", "@import"} {
		if ext == "//" {
			local = strings.ReplaceAll(local, "// ", "") // comments
		}
		if strings.Contains(local, ext) {
			t.Errorf("page refers to an external resource (%q)", ext)
		}
	}
}

// liveSummaryJSON is what TestLiveHandler reads of /api/sensors.
type liveSummaryJSON struct {
	Model     string   `json:"model"`
	StepMs    int64    `json:"step_ms"`
	Channels  []string `json:"channels"`
	MAPEFloor float64  `json:"mape_floor"`
	Overall   struct {
		MAE       *float64 `json:"mae"`
		MAPE      *float64 `json:"mape"`
		Count     int      `json:"count"`
		MAPECount int      `json:"mape_count"`
	} `json:"overall"`
	Sensors []struct {
		Sensor  int `json:"sensor"`
		Metrics struct {
			MAPE  *float64 `json:"mape"`
			Count int      `json:"count"`
		} `json:"metrics"`
		LatestForecastTS *int64 `json:"latest_forecast_ts"`
	} `json:"sensors"`
}

// checkLiveSummary checks /api/sensors of TestLiveHandler's service,
// read into sum.
func checkLiveSummary(t *testing.T, get getFunc, sum *liveSummaryJSON) {
	t.Helper()
	if err := json.Unmarshal(get("/api/sensors", 200, "application/json"), sum); err != nil {
		t.Fatal(err)
	}
	if sum.Model != "test-v1" || sum.StepMs != testStep || strings.Join(sum.Channels, ",") != "flow,speed" || sum.MAPEFloor != 1 || len(sum.Sensors) != 5 {
		t.Errorf("summary %+v", sum)
	}
	if o := sum.Overall; o.Count != 2 || o.MAPECount != 1 || o.MAPE == nil || *o.MAPE != 10 || o.MAE == nil || *o.MAE != 27.25 {
		t.Errorf("overall %+v: want MAE (10+44.5)/2, MAPE 10 over 1", o)
	}
	s3 := sum.Sensors[3]
	if s3.Sensor != 3 || s3.Metrics.Count != 2 || s3.Metrics.MAPE == nil || *s3.Metrics.MAPE != 10 ||
		s3.LatestForecastTS == nil || *s3.LatestForecastTS != 11*testStep {
		t.Errorf("sensor 3 summary %+v", s3)
	}
	if s := sum.Sensors[0]; s.Metrics.MAPE != nil || s.LatestForecastTS != nil || s.Metrics.Count != 0 {
		t.Errorf("sensor 0 without data: %+v", s)
	}
}

// liveSensorJSON is what TestLiveHandler reads of /api/sensors/{sensor}.
type liveSensorJSON struct {
	Sensor   int      `json:"sensor"`
	Channels []string `json:"channels"`
	Metrics  struct {
		MAPE *float64 `json:"mape"`
	} `json:"metrics"`
	Overall struct {
		Count int `json:"count"`
	} `json:"overall"`
	Slots []struct {
		TS       int64      `json:"ts"`
		Reading  []*float64 `json:"reading"`
		Forecast []*float64 `json:"forecast"`
	} `json:"slots"`
	Inputs []struct {
		Sensor          int     `json:"sensor"`
		Weight          float64 `json:"weight"`
		LatestReadingTS *int64  `json:"latest_reading_ts"`
	} `json:"inputs"`
}

// checkLiveSensor checks /api/sensors/3 of TestLiveHandler's service,
// whose bundle is b, read into v, and /api/sensors/0 without data.
func checkLiveSensor(t *testing.T, get getFunc, b *sdgnn.Bundle, v *liveSensorJSON) {
	t.Helper()
	body := get("/api/sensors/3", 200, "application/json")
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	// Sensor 3 reads sensors 1, 3 and 4 (testBundle's Θ): 3 and 4 have
	// readings, 1 none yet.
	wantTS := map[int]int64{3: 10 * testStep, 4: 9 * testStep}
	if len(v.Inputs) != len(b.Theta.Nodes[3]) {
		t.Fatalf("sensor 3 inputs %+v, want Θ's %v", v.Inputs, b.Theta.Nodes[3])
	}
	for i, in := range v.Inputs {
		ts, has := wantTS[in.Sensor]
		if in.Sensor != b.Theta.Nodes[3][i] || in.Weight != b.Theta.Weights[3][i] ||
			(in.LatestReadingTS == nil) == has || (has && *in.LatestReadingTS != ts) {
			t.Errorf("sensor 3 input %d: %+v, want sensor %d weight %g, newest reading %d (0: none)", i, in, b.Theta.Nodes[3][i], b.Theta.Weights[3][i], ts)
		}
	}
	if v.Sensor != 3 || len(v.Channels) != 2 || v.Metrics.MAPE == nil || *v.Metrics.MAPE != 10 || v.Overall.Count != 2 || len(v.Slots) != 2 {
		t.Fatalf("sensor 3: %s", body)
	}
	if s := v.Slots[0]; s.TS != 10*testStep || len(s.Reading) != 2 || *s.Reading[0] != 100 || *s.Forecast[1] != 45 {
		t.Errorf("slot 10: %s", body)
	}
	if s := v.Slots[1]; s.TS != 11*testStep || s.Reading != nil || len(s.Forecast) != 2 || s.Forecast[0] != nil || *s.Forecast[1] != 60 {
		t.Errorf("slot 11 (reading pending, NaN forecast as null): %s", body)
	}
	if !strings.Contains(string(get("/api/sensors/0", 200, "application/json")), `"slots":[]`) {
		t.Error("sensor 0 without data: want an empty slot list")
	}
}

// checkSensorRoutes checks that sensor ids are read as the readings'
// keys write them, and the answers of /forecast and /forecasts before
// any forecast and to bad queries.
func checkSensorRoutes(t *testing.T, srv *httptest.Server, get getFunc) {
	t.Helper()
	// Ids as the readings' keys write them, and no other way: "+1", "01"
	// and "-0" are not sensors 1 and 0.
	for _, bad := range []string{"5", "-1", "abc", "1.5", "99999999999999999999", "+1", "01", "-0", "00"} {
		for _, path := range []string{"/api/sensors/", "/forecast/"} {
			msg := string(get(path+url.PathEscape(bad), 404, "text/plain"))
			if !strings.Contains(msg, bad) || !strings.Contains(msg, "0..4") {
				t.Errorf("GET %s%s: %q should name the sensor and 0..4", path, bad, msg)
			}
		}
	}
	// The existing routes are unchanged.
	get("/forecast/abc", 404, "text/plain")
	get("/forecast/3", 404, "text/plain") // nothing written to Kafka
	if body := string(get("/forecasts", 200, "application/json")); body != "[]\n" {
		t.Errorf("GET /forecasts before any forecast: %q, want an empty list", body)
	}
	// JSON or CSV by Accept: caches must keep them apart, and keep
	// neither.
	if resp, err := http.Get(srv.URL + "/forecasts"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.Header.Get("Vary") != "Accept" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET /forecasts: Vary %q, Cache-Control %q", resp.Header.Get("Vary"), resp.Header.Get("Cache-Control"))
		}
	}
	for _, bad := range []string{"5", "1,abc", "-1", "2,,3"} {
		if msg := string(get("/forecasts?sensors="+bad, 400, "text/plain")); !strings.Contains(msg, "0..4") {
			t.Errorf("GET /forecasts?sensors=%s: %q should name the valid ids", bad, msg)
		}
	}
	if msg := string(get("/forecasts?since=yesterday", 400, "text/plain")); !strings.Contains(msg, `since: "yesterday" is neither Unix milliseconds nor RFC 3339`) {
		t.Errorf("GET /forecasts?since=yesterday: %q", msg)
	}
	// A query that does not parse is refused, not read in part (which
	// answered for every sensor).
	for _, bad := range []string{"sensors=1;3", "sensors=%zz", "since=%zz", "format=csv;", "sensors=1,3;format=csv"} {
		if msg := string(get("/forecasts?"+bad, 400, "text/plain")); !strings.Contains(msg, "query") {
			t.Errorf("GET /forecasts?%s: %q should name the query", bad, msg)
		}
	}
}

// checkLiveMetrics checks /metrics of TestLiveHandler's service: the
// live view's scores, the model, and the process's gauges.
func checkLiveMetrics(t *testing.T, get getFunc) {
	t.Helper()
	metrics := string(get("/metrics", 200, "text/plain"))
	// Sensor 3's slot 10: errors 10 and 44.5; only 100 is at or above the
	// floor (relative error 0.1); the NaN forecast has no reading yet.
	for _, line := range []string{
		`sdgnn_stream_live_scored_values_total{scope="all"} 2`,
		`sdgnn_stream_live_abs_error_total{scope="all"} 54.5`,
		`sdgnn_stream_live_squared_error_total{scope="all"} 2080.25`,
		`sdgnn_stream_live_mape_values_total{scope="all"} 1`,
		`sdgnn_stream_live_rel_error_total{scope="all"} 0.1`,
		`sdgnn_stream_live_invalid_values_total{scope="all"} 0`,
		`# TYPE sdgnn_stream_live_abs_error_total counter`,
		`sdgnn_stream_forecasts_emitted_total 0`,
		`sdgnn_model_info{version="test-v1",dataset="test"} 1`,
		`sdgnn_stream_model_reloads_total 0`,
	} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if strings.Contains(metrics, `scope="part"`) {
		t.Error(`/metrics has scope="part" without a part scope`)
	}
	// The process's own gauges, under the Go client's names.
	for _, name := range []string{"go_goroutines", "go_threads", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "go_gc_cycles_total",
		"process_start_time_seconds", "process_resident_memory_bytes", "process_open_fds"} {
		if !strings.Contains(metrics, "\n"+name+" ") || !strings.Contains(metrics, "# TYPE "+name+" ") {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestForecastsSinceRange checks that GET /forecasts refuses a since
// that no forecast can have, as a reading's ts is refused: before 1970,
// or after 9999 (a time in µs or ns by mistake), which would otherwise
// answer an empty list for good.
func TestForecastsSinceRange(t *testing.T) {
	_, h := forecastsService(t)
	for _, bad := range []string{"-1", "-9223372036854775808", strconv.FormatInt(MaxTS+1, 10), "1767225600000000", "1767225600000000000", "1969-12-31T23:59:59Z"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?since="+url.QueryEscape(bad), nil))
		body, _ := io.ReadAll(rec.Body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(string(body), "since") {
			t.Errorf("GET /forecasts?since=%s: %d %q, want 400 naming since", bad, rec.Code, body)
		}
	}
	for _, good := range []string{"0", strconv.FormatInt(MaxTS, 10), "2026-01-01T00:00:00Z"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?since="+url.QueryEscape(good), nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET /forecasts?since=%s: %d %q, want 200", good, rec.Code, rec.Body.String())
		}
	}
}

// TestForecastsSinceZonePlus checks that a since in RFC 3339 with a
// positive zone offset written into the URL as it is (?since=…+08:00,
// Shenzhen's time), whose + the query decodes as a space, is refused with
// a 400 that says so and how to write it (%2B), not as "neither Unix
// milliseconds nor RFC 3339", which sent a consumer looking for a wrong
// time; escaped, it is taken.
func TestForecastsSinceZonePlus(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query string
		code  int
		want  string
	}{
		{"since=2026-01-01T08:00:00+08:00", http.StatusBadRequest, `"+08:00" as "%2B08:00"`},
		{"since=2026-01-01T08:00:00.5+05:30", http.StatusBadRequest, `"+05:30" as "%2B05:30"`},
		{"since=2026-01-01T08:00:00%2B08:00", http.StatusOK, ""},
		{"since=2026-01-01T00:00:00-03:00", http.StatusOK, ""},
		{"since=2026-01-01+08:00", http.StatusBadRequest, "neither Unix milliseconds nor RFC 3339"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("GET /forecasts?%s: %d %q, want %d with %q", tc.query, rec.Code, body, tc.code, tc.want)
		}
	}
}

// TestForecastsRepeatedParameter checks that a parameter given twice is
// refused naming it, not read from its first value alone (which answered
// ?sensors=1&sensors=2 with sensor 1 only).
func TestForecastsRepeatedParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct{ query, name string }{
		{"sensors=1&sensors=2", "sensors"},
		{"since=0&since=5", "since"},
		{"format=csv&format=json", "format"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		if body := rec.Body.String(); rec.Code != http.StatusBadRequest || !strings.Contains(body, tc.name) {
			t.Errorf("GET /forecasts?%s: %d %q, want 400 naming %s", tc.query, rec.Code, body, tc.name)
		}
	}
}

// TestForecastsUnknownParameter checks that GET /forecasts refuses a
// parameter it does not know, naming it and the ones it knows, rather
// than ignoring it: ?sensor=3 (for sensors) answered every sensor.
func TestForecastsUnknownParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query, name string
		code        int
	}{
		{"sensor=3", "sensor", http.StatusBadRequest},
		{"sensors=3&Since=0", "Since", http.StatusBadRequest},
		{"fmt=csv", "fmt", http.StatusBadRequest},
		{"sensors=3&since=0&format=json", "", http.StatusOK},
		{"", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code {
			t.Errorf("GET /forecasts?%s: %d %q, want %d", tc.query, rec.Code, body, tc.code)
			continue
		}
		if tc.code == http.StatusBadRequest && (!strings.Contains(body, strconv.Quote(tc.name)) || !strings.Contains(body, "sensors, since, format")) {
			t.Errorf("GET /forecasts?%s: %q, want the error to name %q and the known parameters", tc.query, body, tc.name)
		}
	}
}

// TestForecastsEmptyParameter checks that GET /forecasts refuses a
// parameter given without a value, naming it, rather than reading it as
// absent: ?sensors= (a dashboard's list left empty) answered every
// sensor, ?since= every slot and ?format= by the Accept header.
func TestForecastsEmptyParameter(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct {
		query, name string
		code        int
	}{
		{"sensors=", "sensors", http.StatusBadRequest},
		{"sensors", "sensors", http.StatusBadRequest},
		{"sensors=%20", "sensors", http.StatusBadRequest},
		{"sensors=&since=0", "sensors", http.StatusBadRequest},
		{"since=", "since", http.StatusBadRequest},
		{"sensors=1&since=", "since", http.StatusBadRequest},
		{"format=", "format", http.StatusBadRequest},
		{"sensors=1&since=0&format=csv", "", http.StatusOK},
		{"", "", http.StatusOK},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?"+tc.query, nil))
		body := rec.Body.String()
		if rec.Code != tc.code {
			t.Errorf("GET /forecasts?%s: %d %q, want %d", tc.query, rec.Code, body, tc.code)
			continue
		}
		if tc.code == http.StatusBadRequest && !strings.Contains(body, tc.name+": empty") {
			t.Errorf("GET /forecasts?%s: %q, want the error to name the empty %s", tc.query, body, tc.name)
		}
	}
}

// TestForecastOneSensorQuery checks that GET /forecast/{sensor} reads its
// query as GET /forecasts does: ?format=csv (or Accept: text/csv) answers
// the forecast as CSV, and a parameter it does not know, given twice or
// empty is a 400 naming it. Before, every query was ignored:
// ?format=csv answered JSON.
func TestForecastOneSensorQuery(t *testing.T) {
	svc, h := forecastsService(t)
	f := Forecast{Sensor: 2, TS: 7 * testStep, Values: []float64{41.5, 0.125}, Model: "v1", Inputs: []Input{{Sensor: 2, TS: 6 * testStep}}, EmittedMs: 1234}
	svc.latest = map[int][]byte{2: EncodeForecast(nil, &f)}
	wantCSV := "ts,sensor,value_0,value_1,stale_slots,model,emitted_ms\n2100000,2,41.5,0.125,0,v1,1234\n"
	for _, tc := range []struct {
		query, accept string
		code          int
		want          string // the body, or a part of an error
	}{
		{"", "", http.StatusOK, string(EncodeForecast(nil, &f))},
		{"?format=json", "text/csv", http.StatusOK, string(EncodeForecast(nil, &f))},
		{"?format=csv", "", http.StatusOK, wantCSV},
		{"", "text/csv", http.StatusOK, wantCSV},
		{"?fmt=csv", "", http.StatusBadRequest, `unknown parameter "fmt": want format`},
		{"?sensors=2", "", http.StatusBadRequest, `unknown parameter "sensors"`},
		{"?format=", "", http.StatusBadRequest, "format: empty"},
		{"?format=csv&format=json", "", http.StatusBadRequest, "format: given 2 times"},
		{"?format=xml", "", http.StatusBadRequest, `format "xml": want json or csv`},
	} {
		req := httptest.NewRequest(http.MethodGet, "/forecast/2"+tc.query, nil)
		if tc.accept != "" {
			req.Header.Set("Accept", tc.accept)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != tc.code || tc.code == http.StatusOK && body != tc.want || tc.code != http.StatusOK && !strings.Contains(body, tc.want) {
			t.Errorf("GET /forecast/2%s (Accept %q): %d %q, want %d %q", tc.query, tc.accept, rec.Code, body, tc.code, tc.want)
		}
	}
}

// forecastsService returns a service of five sensors that reaches no
// broker, and its HTTP handler, for the tests of the forecasts' queries.
func forecastsService(t testing.TB) (*Service, http.Handler) {
	t.Helper()
	svc, err := NewService(testBundle(t, 5, 4, 2, 3, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	return svc, svc.Handler()
}

// TestSensorList checks the ids GET /forecasts?sensors= takes: decimal ids
// as the readings' keys write them, spaces around them allowed, in range;
// for a model with IDs, the IDs.
func TestSensorList(t *testing.T) {
	five, err := pems.NewSensorNames(5, nil)
	if err != nil {
		t.Fatal(err)
	}
	named, err := pems.NewSensorNames(3, []string{"773869", "767541", "7a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		list string
		want []int
		ok   bool
	}{
		{"7a, 773869,7a", []int{2, 0}, true},
		{"767541", []int{1}, true},
		{"1", nil, false},
		{"773869,999", nil, false},
	} {
		got, err := sensorList(tc.list, named)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("sensorList(%q) of IDs = %v, %v; want %v (ok %v)", tc.list, got, err, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		list string
		want []int
		ok   bool
	}{
		{"3,1, 4 ,1", []int{3, 1, 4}, true},
		{"0", []int{0}, true},
		{"+1", nil, false},
		{"01", nil, false},
		{"-0", nil, false},
		{"5", nil, false},
		{"1,,2", nil, false},
	} {
		got, err := sensorList(tc.list, five)
		if (err == nil) != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("sensorList(%q) = %v, %v; want %v (ok %v)", tc.list, got, err, tc.want, tc.ok)
		}
	}
}

// TestProbeHeaders checks that /metrics and /healthz, which a proxy in
// front of the service might otherwise cache, are no-store like /readyz,
// and that /metrics is the text exposition format in UTF-8, as
// Prometheus's client libraries write it.
func TestProbeHeaders(t *testing.T) {
	_, h := forecastsService(t)
	for _, tc := range []struct{ path, ctype string }{
		{"/metrics", "text/plain; version=0.0.4; charset=utf-8"},
		{"/healthz", "text/plain; charset=utf-8"},
		{"/readyz", "text/plain; charset=utf-8"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if got := rec.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", tc.path, got)
		}
		if got := rec.Header().Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
	}
}

func TestWantsCSV(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"text/csv", true},
		{"TEXT/CSV", true},
		{"text/csv;q=0", false},
		{"text/csv, application/json", false},
		{"application/json;q=0.1, text/csv", true},
		{"text/csv;q=0.5, application/json;q=0.9", false},
		{"text/csv, */*;q=0.1", true},
		{"text/html, application/xhtml+xml", false},
		{"text/csv; charset=utf-8; q=0.8", true},
	} {
		h := http.Header{}
		if tc.accept != "" {
			h.Set("Accept", tc.accept)
		}
		if got, err := wantsCSV(url.Values{}, h); err != nil || got != tc.want {
			t.Errorf("Accept %q: CSV %v (%v), want %v", tc.accept, got, err, tc.want)
		}
	}
}

// TestWantsCSVMediaRanges checks the Accept negotiation of GET /forecasts
// with media ranges (RFC 9110 §12.5.1): text/* and */* match text/csv and
// application/json, the most specific range that matches a type gives its
// quality, and q=0 makes a type not acceptable.
func TestWantsCSVMediaRanges(t *testing.T) {
	for _, tc := range []struct {
		accept string
		want   bool
	}{
		{"text/*", true},
		{"TEXT/*;q=0.9, application/json;q=0.5", true},
		{"application/json;q=0, */*", true},
		{"application/json;q=0, text/*;q=0.2", true},
		{"*/*", false},
		{"*/*;q=0.8, application/json", false},
		{"text/csv;q=0, text/*", false},
		{"text/csv;q=0, */*", false},
		{"text/*;q=0.5, application/*", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"text/csv, */*;q=0.1", true},
	} {
		h := http.Header{}
		h.Set("Accept", tc.accept)
		if got, err := wantsCSV(url.Values{}, h); err != nil || got != tc.want {
			t.Errorf("Accept %q: CSV %v (%v), want %v", tc.accept, got, err, tc.want)
		}
	}
}
