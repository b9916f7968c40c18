package stream

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimitAPI holds one request of an API limited to one at a time:
// another waits, then is refused 503 with Retry-After and counted, while
// the probes and /metrics are served all the same; once the first ends,
// the next is served.
func TestLimitAPI(t *testing.T) {
	defer func(w time.Duration) { httpQueueWait = w }(httpQueueWait)
	httpQueueWait = 50 * time.Millisecond
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/forecasts" {
			entered <- struct{}{}
			<-release
		}
		w.Write([]byte("ok"))
	})
	var refused atomic.Int64
	srv := httptest.NewServer(limitAPI(h, 1, func() { refused.Add(1) }))
	defer srv.Close()
	get := func(path string) *http.Response {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if resp := get("/forecasts"); resp.StatusCode != http.StatusOK {
			t.Errorf("the request held: %s", resp.Status)
		}
	}()
	<-entered
	if resp := get("/api/sensors"); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a request while the place is taken: %s, Retry-After %q; want 503 and 1", resp.Status, resp.Header.Get("Retry-After"))
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if resp := get(p); resp.StatusCode != http.StatusOK {
			t.Errorf("%s while the API is busy: %s, want 200", p, resp.Status)
		}
	}
	close(release)
	wg.Wait()
	if resp := get("/api/sensors"); resp.StatusCode != http.StatusOK {
		t.Errorf("a request once the place is free: %s", resp.Status)
	}
	if n := refused.Load(); n != 1 {
		t.Errorf("%d refusals counted, want 1", n)
	}
}

// TestLiveSecurityHeaders checks that /live is sent with a
// Content-Security-Policy that allows its own inline script and style,
// by their SHA-256, and nothing else, and that it may not be framed.
func TestLiveSecurityHeaders(t *testing.T) {
	rec := httptest.NewRecorder()
	(&Service{}).serveLive(rec, httptest.NewRequest(http.MethodGet, "/live", nil))
	h := rec.Header()
	csp := h.Get("Content-Security-Policy")
	if h.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") || !strings.HasPrefix(csp, "default-src 'none';") {
		t.Fatalf("X-Frame-Options %q, CSP %q", h.Get("X-Frame-Options"), csp)
	}
	page := rec.Body.Bytes()
	for _, tag := range []string{"script", "style"} {
		open, end := []byte("<"+tag+">"), []byte("</"+tag+">")
		n := 0
		for rest := page; ; n++ {
			i := bytes.Index(rest, open)
			if i < 0 {
				break
			}
			rest = rest[i+len(open):]
			j := bytes.Index(rest, end)
			sum := sha256.Sum256(rest[:j])
			if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(csp, tag+"-src "+want) && !strings.Contains(csp, " "+want) {
				t.Errorf("CSP %q lacks the %s's hash %s", csp, tag, want)
			}
			rest = rest[j:]
		}
		if n == 0 {
			t.Errorf("no inline %s found in the page", tag)
		}
	}
	if strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q allows something unsafe", csp)
	}
}
