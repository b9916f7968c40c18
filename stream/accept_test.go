package stream

import (
	"net/http"
	"net/url"
	"testing"
)

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
