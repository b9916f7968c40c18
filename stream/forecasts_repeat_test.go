package stream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestForecastsRepeatedParameter checks that a parameter given twice is
// refused naming it, not read from its first value alone (which answered
// ?sensors=1&sensors=2 with sensor 1 only).
func TestForecastsRepeatedParameter(t *testing.T) {
	b := testBundle(t, 5, 4, 2, 3, 1)
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	h := svc.Handler()
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
