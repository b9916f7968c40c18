package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestHTTPServerDropsSlowAndIdleClients checks that the HTTP server does
// not hold a connection for ever: a keep-alive connection left idle after
// its answer, and a request whose body never comes, are closed once the
// server's idle and read timeouts pass (lowered here), so that clients
// that stall cannot pile up connections until the process runs out of
// file descriptors.
func TestHTTPServerDropsSlowAndIdleClients(t *testing.T) {
	defer func(idle, read time.Duration) { httpIdleTimeout, httpReadTimeout = idle, read }(httpIdleTimeout, httpReadTimeout)
	httpIdleTimeout, httpReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := testBundle(t, 4, 3, 2, 4, 1)
	httpAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// No broker: the HTTP endpoints serve while the service waits for one.
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:" + strconv.Itoa(freePort(t))}, StepMs: testStep,
		WaitBrokers: time.Minute, HTTPAddr: httpAddr, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	dial := func() net.Conn {
		for {
			c, err := net.Dial("tcp", httpAddr)
			if err == nil {
				return c
			}
			select {
			case <-ctx.Done():
				t.Fatal(err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for _, tc := range []struct{ name, request string }{
		{"idle keep-alive connection", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
		// The server reads a small body the handler left before it
		// answers, to keep the connection.
		{"request body never sent", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"},
	} {
		c := dial()
		if _, err := io.WriteString(c, tc.request); err != nil {
			t.Fatal(err)
		}
		// Whatever the server answers, then its end of the connection.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Errorf("%s: still open 5 s after the request (%v); read %q", tc.name, err, got)
		}
		c.Close()
	}
}

// TestHTTPServerTLS checks that with Config.HTTPTLS the endpoints are
// served over TLS only: a client trusting the authority gets /healthz,
// with the certificate GetCertificate returns at the time of each
// handshake (a rotation takes effect without a restart), and a plain
// HTTP request is answered 400 without reaching an endpoint.
func TestHTTPServerTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	certs := tlstest.New(t)
	first := certs.Server.Certificates[0]
	rotatedCert, rotatedKey := certs.ServerPair(t, 7)
	rotated, err := tls.LoadX509KeyPair(rotatedCert, rotatedKey)
	if err != nil {
		t.Fatal(err)
	}
	var served atomic.Pointer[tls.Certificate]
	served.Store(&first)
	b := testBundle(t, 4, 3, 2, 4, 1)
	httpAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var logs lockedLog
	// No broker: the HTTP endpoints serve while the service waits for one.
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:" + strconv.Itoa(freePort(t))}, StepMs: testStep,
		WaitBrokers: time.Minute, HTTPAddr: httpAddr, Log: zerolog.New(&logs),
		HTTPTLS: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return served.Load(), nil }}})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	// get asks for /healthz over HTTPS on a new connection, retrying
	// while the server is not listening yet, and returns the serial of
	// the certificate served.
	get := func() int64 {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool}, DisableKeepAlives: true}}
		for {
			resp, err := client.Get("https://" + httpAddr + "/healthz")
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
					t.Fatalf("GET /healthz over HTTPS: %d %q", resp.StatusCode, body)
				}
				return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
			}
			if ctx.Err() != nil || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("GET /healthz over HTTPS: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := get(); got != 2 {
		t.Errorf("serial %d served, want 2", got)
	}
	served.Store(&rotated)
	if got := get(); got != 7 {
		t.Errorf("serial %d served after the rotation, want 7", got)
	}
	// /metrics tells when the certificate served now expires.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool}}}
	resp, err := client.Get("https://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	leaf, err := x509.ParseCertificate(rotated.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("\nsdgnn_http_tls_cert_expiry_timestamp_seconds{serial=\"7\"} %d\n", leaf.NotAfter.Unix()); !strings.Contains(string(metrics), want) {
		t.Errorf("/metrics lacks %q:\n%s", want, metrics)
	}
	resp, err = http.Get("http://" + httpAddr + "/healthz")
	if err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "ok") {
			t.Errorf("plain HTTP to the HTTPS server: %d %q, want 400 and no endpoint", resp.StatusCode, body)
		}
	}
	// A client that does not trust the certificate ends the handshake; the
	// server's line about it goes to the service's log, as JSON.
	if _, err := http.Get("https://" + httpAddr + "/healthz"); err == nil {
		t.Error("GET over HTTPS without trusting the authority succeeded")
	}
	for !strings.Contains(logs.String(), `"component":"http"`) {
		if ctx.Err() != nil {
			t.Fatalf("no HTTP server line in the service's log: %s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, `"component":"http"`) && (!strings.Contains(line, `"level":"warn"`) || !strings.Contains(line, "TLS handshake error from 127.0.0.1:")) {
			t.Errorf("HTTP server line %s, want a warning about the handshake", line)
		}
	}
}

// A TLS configuration without a certificate is refused at once, rather
// than leaving Run's HTTPS server to fail unseen.
func TestHTTPTLSWithoutCertificate(t *testing.T) {
	b := testBundle(t, 4, 3, 2, 4, 1)
	_, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, HTTPAddr: "127.0.0.1:0",
		HTTPTLS: &tls.Config{MinVersion: tls.VersionTLS12}})
	if err == nil || !strings.Contains(err.Error(), "HTTPTLS has no certificate") {
		t.Errorf("NewService: %v, want the certificate missing", err)
	}
}
