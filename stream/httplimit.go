package stream

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// DefaultHTTPMaxConcurrent is Config.HTTPMaxConcurrent's default: half the
// cores the process may use, at least one, so that however many clients
// poll the API the forecasts keep the other half.
func DefaultHTTPMaxConcurrent() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// httpQueueWait is how long a request waits for one of the API's places
// before it is answered 503 with Retry-After. A variable for tests.
var httpQueueWait = time.Second

// limitAPI serves h's requests at most n at a time, those beyond waiting
// up to httpQueueWait for a place, then answered 503 Service Unavailable
// with Retry-After (and counted in refused): the API's handlers share the
// cores with the forecasts, and a flood of requests slowed the forecasts
// from 10 ms after their last input to 50–500 ms. Probes and scrapes
// (/healthz, /readyz, /metrics) and POST /-/reload are not held: an
// orchestrator must not take a busy API for a dead service.
func limitAPI(h http.Handler, n int, refused func()) http.Handler {
	places := make(chan struct{}, max(n, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz", "/readyz", "/metrics", "/-/reload":
			h.ServeHTTP(w, r)
			return
		}
		select {
		case places <- struct{}{}: // a place free now, without a timer
		default:
			t := time.NewTimer(httpQueueWait)
			defer t.Stop()
			select {
			case places <- struct{}{}:
			case <-t.C:
				refused()
				w.Header().Set("Retry-After", "1")
				http.Error(w, "busy: more requests at once than the API serves (-http-max-concurrent); try again", http.StatusServiceUnavailable)
				return
			case <-r.Context().Done():
				return
			}
		}
		defer func() { <-places }()
		h.ServeHTTP(w, r)
	})
}

// liveCSP is the Content-Security-Policy of /live: the page runs its own
// inline script and style only (named by their SHA-256), asks nothing of
// another origin, and may not be framed. The page loads nothing external,
// so nothing more is allowed.
var liveCSP = pageCSP(livePage)

// inlineBlock finds the inline scripts and styles of a page.
var inlineBlock = regexp.MustCompile(`(?s)<(script|style)(?:\s[^>]*)?>(.*?)</(?:script|style)>`)

// pageCSP returns a Content-Security-Policy that allows page's own inline
// scripts and styles, by hash, and requests to the page's origin.
func pageCSP(page []byte) string {
	var scripts, styles []string
	for _, m := range inlineBlock.FindAllSubmatch(page, -1) {
		sum := sha256.Sum256(m[2])
		h := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
		if string(m[1]) == "script" {
			scripts = append(scripts, h)
		} else {
			styles = append(styles, h)
		}
	}
	list := func(hs []string) string {
		if len(hs) == 0 {
			return "'none'"
		}
		return strings.Join(hs, " ")
	}
	return "default-src 'none'; connect-src 'self'; img-src 'self' data:; script-src " + list(scripts) +
		"; style-src " + list(styles) + "; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}
