package stream

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// The HTTP server's limits on slow and idle clients, so that connections
// that stall cannot pile up: the request headers must come within
// httpReadHeaderTimeout and the whole request within httpReadTimeout, the
// answer must be taken within httpWriteTimeout (well above ReloadWait, which
// POST /-/reload may wait), and a keep-alive connection idle for
// httpIdleTimeout is closed. Variables for tests.
var (
	httpReadHeaderTimeout = 5 * time.Second
	httpReadTimeout       = 30 * time.Second
	httpWriteTimeout      = ReloadWait + 100*time.Second
	httpIdleTimeout       = 2 * time.Minute
)

// Handler serves /metrics (Prometheus text), /healthz (200 while Run
// runs, waiting for the brokers included: liveness), /readyz (200 when every readiness check passes, else
// 503, with one line per check: see Readiness), /forecast/{sensor}
// (the latest forecast message of the sensor), and the live view: /live
// (an HTML page for operators), /api/sensors (every sensor's running error,
// a LiveSummary) and /api/sensors/{sensor} (the sensor's recent readings
// and forecasts, a LiveSensor). With Config.ReloadModel, POST /-/reload
// calls it: 200 and the version now served, 409 Conflict and why the
// model served was kept, or 503 with Retry-After when the batch in hand
// was not committed within ReloadWait (ErrReloadBusy: the broker away);
// 401 without Config.ReloadToken when one is set.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	if reload := s.cfg.ReloadModel; reload != nil {
		mux.HandleFunc("POST /-/reload", s.reloadHandler(reload, s.cfg.ReloadToken))
	}
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	mux.HandleFunc("GET /healthz", s.serveHealthz)
	mux.HandleFunc("GET /readyz", s.serveReadyz)
	mux.HandleFunc("GET /forecast/{sensor}", s.serveForecast)
	mux.HandleFunc("GET /forecasts", s.serveForecasts)
	mux.HandleFunc("GET /live", s.serveLive)
	mux.HandleFunc("GET /api/sensors", s.serveSensors)
	mux.HandleFunc("GET /api/sensors/{sensor}", s.serveSensor)
	return mux
}

// reloadHandler serves POST /-/reload: reload's answer, when the request
// brings token (if any) as a bearer token.
func (s *Service) reloadHandler(reload func(ctx context.Context) (string, error), token string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if token != "" && !bearer(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="reload"`)
			http.Error(w, "reload refused: missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), ReloadWait)
		defer cancel()
		version, err := reload(ctx)
		switch {
		case errors.Is(err, ErrReloadBusy):
			// Not the model's fault: the same request may succeed later.
			w.Header().Set("Retry-After", "5")
			http.Error(w, fmt.Sprintf("not reloaded: %v; serving %s", err, s.Bundle().Meta.Version), http.StatusServiceUnavailable)
			return
		case err != nil:
			http.Error(w, fmt.Sprintf("reload refused: %v; serving %s", err, s.Bundle().Meta.Version), http.StatusConflict)
			return
		}
		fmt.Fprintf(w, "serving %s\n", version)
	}
}

// serveMetrics serves GET /metrics: the counters, the live view's scores
// and the process's metrics (Prometheus text), then the consumer lag, the
// model served, the certificates' expiry and the readiness checks.
func (s *Service) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8") // as Prometheus's client libraries
	w.Header().Set("Cache-Control", "no-store")
	if err := s.counters.WritePrometheus(w); err != nil {
		s.cfg.Log.Debug().Err(err).Msg("/metrics")
		return
	}
	if err := s.live.WritePrometheus(w); err != nil {
		s.cfg.Log.Debug().Err(err).Msg("/metrics")
		return
	}
	if err := WriteProcessMetrics(w); err != nil {
		s.cfg.Log.Debug().Err(err).Msg("/metrics")
		return
	}
	s.mu.RLock()
	lag, lagAt, parts, meta := s.health.lag, s.health.lagAt, s.health.partLag, s.bundle.Meta
	s.mu.RUnlock()
	if !lagAt.IsZero() {
		fmt.Fprintf(w, "# HELP sdgnn_consumer_lag Offsets of the readings topic the group has yet to consume, summed over partitions: from its committed offset to the last stable offset.\n# TYPE sdgnn_consumer_lag gauge\nsdgnn_consumer_lag %d\n", lag)
		fmt.Fprintf(w, "# HELP sdgnn_partition_lag Offsets of a readings partition the group has yet to consume, as sdgnn_consumer_lag.\n# TYPE sdgnn_partition_lag gauge\n")
		for p, n := range parts {
			fmt.Fprintf(w, "sdgnn_partition_lag{partition=\"%d\"} %d\n", p, n)
		}
	}
	fmt.Fprintf(w, "# HELP sdgnn_model_info The model being served (1), by version and dataset.\n# TYPE sdgnn_model_info gauge\nsdgnn_model_info{version=\"%s\",dataset=\"%s\"} 1\n", promLabel(meta.Version), promLabel(meta.Dataset))
	if leaf := presentedCert(s.cfg.Security.TLS, true); leaf != nil {
		fmt.Fprintf(w, "# HELP sdgnn_kafka_tls_client_cert_expiry_timestamp_seconds When the client certificate presented to the brokers expires (its NotAfter, Unix seconds), by serial number.\n# TYPE sdgnn_kafka_tls_client_cert_expiry_timestamp_seconds gauge\nsdgnn_kafka_tls_client_cert_expiry_timestamp_seconds{serial=\"%s\"} %d\n",
			leaf.SerialNumber, leaf.NotAfter.Unix())
	}
	if leaf := presentedCert(s.cfg.HTTPTLS, false); leaf != nil {
		fmt.Fprintf(w, "# HELP sdgnn_http_tls_cert_expiry_timestamp_seconds When the certificate that -http serves HTTPS with expires (its NotAfter, Unix seconds), by serial number: alert well before it.\n# TYPE sdgnn_http_tls_cert_expiry_timestamp_seconds gauge\nsdgnn_http_tls_cert_expiry_timestamp_seconds{serial=\"%s\"} %d\n",
			leaf.SerialNumber, leaf.NotAfter.Unix())
	}
	fmt.Fprintf(w, "# HELP sdgnn_ready Whether the readiness check passes (1) or not (0), overall (check=\"all\") and by check, as /readyz.\n# TYPE sdgnn_ready gauge\n")
	rd := s.Readiness()
	fmt.Fprintf(w, "sdgnn_ready{check=\"all\"} %d\n", b2i(rd.Ready))
	for _, c := range rd.Checks {
		fmt.Fprintf(w, "sdgnn_ready{check=%q} %d\n", c.Name, b2i(c.OK))
	}
}

// serveHealthz serves GET /healthz: 200 while Run runs (liveness).
func (s *Service) serveHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store") // what a cache kept would not be the service's now
	s.mu.RLock()
	ok := s.health.running
	s.mu.RUnlock()
	if !ok {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}

// serveReadyz serves GET /readyz: 200 when every readiness check passes,
// else 503, one line per check.
func (s *Service) serveReadyz(w http.ResponseWriter, r *http.Request) {
	rd := s.Readiness()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	rd.Write(w)
}

// serveForecast serves GET /forecast/{sensor}: the sensor's latest
// forecast message, or its CSV row.
func (s *Service) serveForecast(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept") // JSON or CSV, as /forecasts
	id, ok := parseSensor(r.PathValue("sensor"), s.names)
	if !ok {
		http.Error(w, unknownSensorText(r.PathValue("sensor"), s.names), http.StatusNotFound)
		return
	}
	q, err := forecastsQuery(r.URL.RawQuery, s.names, "format")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	asCSV, err := wantsCSV(q, r.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.RLock()
	v, ok := s.latest[id]
	s.mu.RUnlock()
	if !ok {
		http.Error(w, fmt.Sprintf("no forecast for sensor %s yet", s.names.Name(id)), http.StatusNotFound)
		return
	}
	if asCSV {
		s.writeForecastsCSV(w, [][]byte{v}, math.MinInt64)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store") // the next slot replaces it
	w.Write(v)
}

// serveForecasts serves GET /forecasts: the latest forecast of every
// sensor asked (?sensors=), of a slot at or after ?since=, as a JSON array
// or CSV.
func (s *Service) serveForecasts(w http.ResponseWriter, r *http.Request) {
	// JSON or CSV by Accept too: a cache must not answer one with
	// the other.
	w.Header().Add("Vary", "Accept")
	q, err := forecastsQuery(r.URL.RawQuery, s.names, "sensors", "since", "format")
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ids, err := sensorList(q.Get("sensors"), s.names)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	since, err := sinceParam(q.Get("since"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	asCSV, err := wantsCSV(q, r.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	msgs := s.latestOf(ids)
	if asCSV {
		s.writeForecastsCSV(w, msgs, since)
		return
	}
	body := []byte{'['}
	for _, v := range msgs {
		if since != math.MinInt64 && tsOf(v) < since {
			continue
		}
		if len(body) > 1 {
			body = append(body, ',')
		}
		body = append(body, v...)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(body, ']', '\n'))
}

// latestOf returns the latest forecast messages of the sensors ids (nil:
// every sensor, by id), of those that have one. The messages are taken
// under the lock (they are not written to once stored); decoding their
// slots for since is left to the caller.
func (s *Service) latestOf(ids []int) [][]byte {
	var msgs [][]byte
	s.mu.RLock()
	if ids == nil {
		for id := range s.latest {
			ids = append(ids, id)
		}
		slices.Sort(ids)
	}
	for _, id := range ids {
		if v, ok := s.latest[id]; ok {
			msgs = append(msgs, v)
		}
	}
	s.mu.RUnlock()
	return msgs
}

// serveLive serves GET /live: the live view's page.
func (s *Service) serveLive(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", liveCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.Write(livePage)
}

// serveSensors serves GET /api/sensors: every sensor's running error (a
// LiveSummary), with its ID and location where the model has them.
func (s *Service) serveSensors(w http.ResponseWriter, r *http.Request) {
	sum := s.live.Summary()
	meta := s.Bundle().Meta
	sum.Model = meta.Version
	for z := range sum.Sensors {
		sum.Sensors[z].ID, sum.Sensors[z].Location = s.names.ID(z), locationOf(meta.Locations, z)
	}
	writeJSON(w, sum)
}

// locationOf returns sensor z's location of locs, nil where there is none.
func locationOf(locs []pems.Location, z int) *pems.Location {
	if z < 0 || z >= len(locs) {
		return nil
	}
	l := locs[z]
	return &l
}

// serveSensor serves GET /api/sensors/{sensor}: the sensor's recent
// readings, forecasts and inputs (a LiveSensor).
func (s *Service) serveSensor(w http.ResponseWriter, r *http.Request) {
	var (
		v  LiveSensor
		ok bool
	)
	if id, known := parseSensor(r.PathValue("sensor"), s.names); known {
		v, ok = s.live.Sensor(id)
	}
	if !ok {
		http.Error(w, unknownSensorText(r.PathValue("sensor"), s.names), http.StatusNotFound)
		return
	}
	b := s.Bundle()
	th := b.Theta
	in, err := s.live.Inputs(th.Nodes[v.Sensor], th.Weights[v.Sensor])
	if err != nil {
		http.Error(w, fmt.Sprintf("sensor %s: %v", s.names.Name(v.Sensor), err), http.StatusInternalServerError)
		return
	}
	for i := range in {
		in[i].ID, in[i].Location = s.names.ID(in[i].Sensor), locationOf(b.Meta.Locations, in[i].Sensor)
	}
	v.Inputs = in
	v.ID, v.Location = s.names.ID(v.Sensor), locationOf(b.Meta.Locations, v.Sensor)
	writeJSON(w, v)
}

// writeForecastsCSV answers GET /forecasts?format=csv: a header ts, sensor,
// the model's channel names, stale_slots, model and emitted_ms, then one
// row per forecast message of msgs of a slot at or after since, ts in
// Unix ms and the values written to round-trip (the header of a CSV that
// forecaster publish -csv reads, followed by what the forecasts add).
func (s *Service) writeForecastsCSV(w http.ResponseWriter, msgs [][]byte, since int64) {
	meta := s.Bundle().Meta
	channels := meta.Channels
	if len(channels) == 0 { // a bundle written before channel names were kept
		for c := range meta.Norm.Mean {
			channels = append(channels, "value_"+strconv.Itoa(c))
		}
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	cw.Write(append(append([]string{"ts", "sensor"}, channels...), "stale_slots", "model", "emitted_ms"))
	rec := make([]string, 0, len(channels)+5)
	for _, v := range msgs {
		f, err := DecodeForecast(v)
		if err != nil {
			http.Error(w, fmt.Sprintf("forecast message: %v", err), http.StatusInternalServerError)
			return
		}
		if f.TS < since {
			continue
		}
		rec = append(rec[:0], strconv.FormatInt(f.TS, 10), f.Name())
		for _, x := range f.Values {
			rec = append(rec, strconv.FormatFloat(x, 'g', -1, 64))
		}
		rec = append(rec, strconv.FormatInt(f.StaleSlots, 10), f.Model, strconv.FormatInt(f.EmittedMs, 10))
		cw.Write(rec)
	}
	if cw.Flush(); cw.Error() != nil {
		http.Error(w, fmt.Sprintf("write CSV: %v", cw.Error()), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// writeJSON writes v as a JSON response that is never cached.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encode response: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serveHTTP listens on Config.HTTPAddr and serves Handler there in the
// background, over HTTPS with Config.HTTPTLS; the caller closes the
// server it returns.
func (s *Service) serveHTTP() (*http.Server, error) {
	cfg := &s.cfg
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", cfg.HTTPAddr, err)
	}
	limit := cfg.HTTPMaxConcurrent
	if limit <= 0 {
		limit = DefaultHTTPMaxConcurrent()
	}
	api := limitAPI(s.Handler(), limit, func() { s.counters.HTTPBusy.Add(1) })
	srv := &http.Server{Handler: api, ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
		WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, ErrorLog: httpErrorLog(cfg.Log)}
	if cfg.HTTPTLS != nil {
		// ServeTLS, not Serve on a TLS listener: it also offers HTTP/2,
		// and answers a plain HTTP request with a 400 that says why.
		srv.TLSConfig = cfg.HTTPTLS
		go srv.ServeTLS(ln, "", "")
	} else {
		go srv.Serve(ln)
	}
	cfg.Log.Info().Str("http", ln.Addr().String()).Bool("tls", cfg.HTTPTLS != nil).Msg("serving metrics, health and forecasts")
	return srv, nil
}
