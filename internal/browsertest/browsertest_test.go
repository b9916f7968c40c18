//go:build unix

package browsertest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestCSPViolations loads, under a policy that allows its one inline
// script by hash and no inline style, a page whose script adds an element
// with a style attribute and an inline event handler, and the same page
// without them: the first's console reports both violations (which its
// DOM does not show: the attributes serialise as if applied), the
// second's none, while the script's own console message comes through.
func TestCSPViolations(t *testing.T) {
	browser := Find(t)
	for _, tc := range []struct {
		name, markup string
		want         []string // directives the violations name
	}{
		{"violating", `<span style="color:red" onclick="alert(1)">x</span>`, []string{"style-src", "script-src"}},
		{"clean", `<span class="x">x</span>`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := `document.getElementById("x").innerHTML = '` + tc.markup + `'; console.log("script ran");`
			page := `<!DOCTYPE html><html><head><title>t</title></head><body><div id="x"></div><script>` + script + `</script></body></html>`
			sum := sha256.Sum256([]byte(script))
			csp := "default-src 'none'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; style-src 'none'"
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/" {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				w.Header().Set("Content-Security-Policy", csp)
				w.Write([]byte(page))
			}))
			defer srv.Close()
			p := Load(context.Background(), t, browser, srv.URL+"/", 500*time.Millisecond)
			if !strings.Contains(p.DOM, tc.markup) {
				t.Fatalf("the script did not run: DOM %s", p.DOM)
			}
			if !strings.Contains(strings.Join(p.Console, "\n"), `"script ran"`) {
				t.Errorf("console %q lacks the script's message", p.Console)
			}
			v := CSPViolations(p.Console)
			if len(v) != len(tc.want) {
				t.Fatalf("violations %q, want %d naming %v (console %q)", v, len(tc.want), tc.want, p.Console)
			}
			for _, d := range tc.want {
				if !strings.Contains(strings.Join(v, "\n"), d) {
					t.Errorf("violations %q name no %s", v, d)
				}
			}
		})
	}
}

func TestConsoleMessages(t *testing.T) {
	log := `[1:1:1205/165823.520816:WARNING:sandbox_linux.cc:405] InitializeSandbox() called
[2:2:1205/165824.498845:INFO:CONSOLE:1] "Applying inline style violates the following Content Security Policy directive 'style-src 'none''.", source: http://x/ (1)
not a log line :CONSOLE] "x"
[2:2:1205/165824.501161:INFO:CONSOLE:7] "hello", source: http://x/ (7)
`
	got := consoleMessages([]byte(log))
	want := []string{
		`"Applying inline style violates the following Content Security Policy directive 'style-src 'none''.", source: http://x/ (1)`,
		`"hello", source: http://x/ (7)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("consoleMessages = %q, want %q", got, want)
	}
	if v := CSPViolations(got); len(v) != 1 || v[0] != want[0] {
		t.Errorf("CSPViolations = %q, want the first only", v)
	}
}
