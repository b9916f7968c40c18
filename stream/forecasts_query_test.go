package stream

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestForecastsSinceRange checks that GET /forecasts refuses a since
// that no forecast can have, as a reading's ts is refused: before 1970,
// or after 9999 (a time in µs or ns by mistake), which would otherwise
// answer an empty list for good.
func TestForecastsSinceRange(t *testing.T) {
	b := testBundle(t, 5, 4, 2, 3, 1)
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler()
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
