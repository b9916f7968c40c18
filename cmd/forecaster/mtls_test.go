package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestServeMutualTLS runs serve with -http-tls-client-ca: a client with
// a certificate of that authority is served; one without a certificate,
// or with one of another authority, is refused. POST /-/reload then adds
// the other authority, retires the first (its sessions not resumed) and
// keeps both a file that is cut short and the authorities in use.
func TestServeMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	_, _, _, b := szTaxiBundle(t, 12, 8)
	tmp := t.TempDir()
	model := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(model); err != nil {
		t.Fatal(err)
	}
	certs, stranger := tlstest.New(t), tlstest.New(t)
	read := func(path string) []byte {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	caFile, token := filepath.Join(tmp, "clients-ca.pem"), filepath.Join(tmp, "token")
	install := func(data ...[]byte) {
		t.Helper()
		if err := os.WriteFile(caFile, bytes.Join(data, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	install(read(certs.CAFile))
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var logs lockedBuffer
	go func() {
		done <- cmdServe(runCtx, []string{"-model", model, "-brokers", emb.Addr, "-http", addr, "-log-json",
			"-http-reload", "-http-reload-token-file", token, "-ready-max-lag", "100000",
			"-http-tls-cert", certs.ServerCert, "-http-tls-key", certs.ServerKey, "-http-tls-client-ca", caFile}, io.Discard, &logs)
	}()
	// client returns a client with the certificate of certFile and keyFile
	// (none if empty), a new connection for each request; with a session
	// cache, so that its second handshake may resume its first.
	client := func(certFile, keyFile string) *http.Client {
		c := &tls.Config{RootCAs: certs.Pool, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
		if certFile != "" {
			pair, err := tls.LoadX509KeyPair(certFile, keyFile)
			if err != nil {
				t.Fatal(err)
			}
			c.Certificates = []tls.Certificate{pair}
		}
		return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
	}
	ours, theirs := client(certs.ClientCert, certs.ClientKey), client(stranger.ClientCert, stranger.ClientKey)
	// served asks for /healthz: whether the handshake was taken, and
	// whether it resumed a session.
	served := func(name string, c *http.Client) (ok, resumed bool) {
		t.Helper()
		resp, err := c.Get("https://" + addr + "/healthz")
		if err != nil {
			// In TLS 1.3 the client's handshake ends before the server has
			// checked its certificate: the refusal may reach it as an
			// alert, or as the connection closed under its request (a
			// resumed session's most often).
			if !strings.Contains(err.Error(), "certificate") && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("%s: %v, want a refusal for the certificate", name, err)
			}
			return false, false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
			t.Fatalf("%s: GET /healthz: %d %q", name, resp.StatusCode, body)
		}
		return true, resp.TLS.DidResume
	}
	for {
		_, err := ours.Get("https://" + addr + "/healthz")
		if err == nil {
			break
		}
		if ctx.Err() != nil || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("GET /healthz with a client certificate: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	check := func(when string, wantOurs, wantTheirs bool) {
		t.Helper()
		for _, c := range []struct {
			name string
			c    *http.Client
			want bool
		}{
			{"no client certificate", client("", ""), false},
			{"the first authority's", ours, wantOurs},
			{"the second authority's", theirs, wantTheirs},
		} {
			if got, _ := served(c.name, c.c); got != c.want {
				t.Errorf("%s: %s served %v, want %v", when, c.name, got, c.want)
			}
		}
	}
	reload := func(c *http.Client) (int, string) {
		t.Helper()
		return postReloadURL(t, c, "https://"+addr+"/-/reload", "s3cret")
	}
	check("at start", true, false)
	if _, resumed := served("the first authority's again", ours); !resumed {
		t.Error("the first authority's client did not resume its session: the retirement below would not test resumption")
	}

	install(read(certs.CAFile), read(stranger.CAFile))
	if code, body := reload(ours); code != http.StatusOK {
		t.Fatalf("POST /-/reload adding an authority: %d %q", code, body)
	}
	check("both authorities", true, true)

	install(read(stranger.CAFile))
	if code, body := reload(theirs); code != http.StatusOK {
		t.Fatalf("POST /-/reload retiring the first authority: %d %q", code, body)
	}
	// ours holds a session of the first authority's certificate: its
	// resumption must be refused too.
	check("the first authority retired", false, true)

	cut := read(certs.CAFile)
	install(read(stranger.CAFile), cut[:len(cut)/2])
	code, body := reload(theirs)
	for _, want := range []string{"the HTTPS client authorities in use are kept", "-http-tls-client-ca " + caFile, "cut short", "the model was reloaded"} {
		if code != http.StatusConflict || !strings.Contains(body, want) {
			t.Errorf("POST /-/reload of a file cut short: %d %q, want 409 and %q", code, body, want)
		}
	}
	check("after a file cut short", false, true)
	stop()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	var took, refused int
	for _, line := range strings.Split(logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch m["message"] {
		case "HTTPS client authorities reloaded: new handshakes are checked against them":
			took++
		case "client authorities reload refused: the authorities in use are kept":
			refused++
			if u, _ := m["using"].([]any); len(u) != 1 || u[0] != "CN=sdgnn test CA" {
				t.Errorf("refusal logged %v, want the authority in use named", m)
			}
		}
	}
	if took != 2 || refused != 1 {
		t.Errorf("logged %d reloads and %d refusals of the client authorities, want 2 and 1", took, refused)
	}
}
