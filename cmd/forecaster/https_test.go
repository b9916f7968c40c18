package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestHTTPSBadInvocations checks serve's HTTPS flags: one of the
// certificate and key without the other, the client authorities without
// them, or either without an -http address, is a usage error naming the
// flag missing; a file that is missing, holds no PEM or a key of another
// certificate is a failure naming it, found before the model is read (the
// model here is missing: an error naming it would mean the certificate
// was read after it, or not at all).
func TestHTTPSBadInvocations(t *testing.T) {
	certs := tlstest.New(t)
	otherCert, otherKey := certs.ServerPair(t, 9)
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "gone.sdgnn")
	junk := filepath.Join(tmp, "junk.pem")
	if err := os.WriteFile(junk, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	serve := func(args ...string) []string { return append([]string{"serve", "-model", missing}, args...) }
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"cert without key", serve("-http-tls-cert", certs.ServerCert), 2, "-http-tls-cert needs -http-tls-key"},
		{"key without cert", serve("-http-tls-key", certs.ServerKey), 2, "-http-tls-key needs -http-tls-cert"},
		{"client ca without cert", serve("-http-tls-client-ca", certs.CAFile), 2, "-http-tls-client-ca needs -http-tls-cert and -http-tls-key"},
		{"client ca with key only", serve("-http-tls-key", certs.ServerKey, "-http-tls-client-ca", certs.CAFile), 2, "-http-tls-key needs -http-tls-cert"},
		{"cert without http", serve("-http", "", "-http-tls-cert", certs.ServerCert, "-http-tls-key", certs.ServerKey), 2, "-http-tls-cert needs an -http address"},
		{"missing cert", serve("-http-tls-cert", missing+".pem", "-http-tls-key", certs.ServerKey), 1, "-http-tls-cert: open " + missing + ".pem: no such file"},
		{"missing key", serve("-http-tls-cert", certs.ServerCert, "-http-tls-key", missing+".key"), 1, "-http-tls-key: open " + missing + ".key: no such file"},
		{"cert not PEM", serve("-http-tls-cert", junk, "-http-tls-key", certs.ServerKey), 1, "-http-tls-cert " + junk + ", -http-tls-key " + certs.ServerKey + ": tls: failed to find any PEM data in certificate input"},
		{"key not PEM", serve("-http-tls-cert", certs.ServerCert, "-http-tls-key", junk), 1, "-http-tls-key " + junk + ": tls: failed to find any PEM data in key input"},
		{"key of another certificate", serve("-http-tls-cert", otherCert, "-http-tls-key", certs.ServerKey), 1, "-http-tls-cert " + otherCert + ", -http-tls-key " + certs.ServerKey + ": tls: private key does not match public key"},
		{"client ca not PEM", serve("-http-tls-cert", otherCert, "-http-tls-key", otherKey, "-http-tls-client-ca", junk), 1, "-http-tls-client-ca " + junk + ": no PEM certificate in it"},
		{"missing client ca", serve("-http-tls-cert", otherCert, "-http-tls-key", otherKey, "-http-tls-client-ca", missing+".ca"), 1, "-http-tls-client-ca: open " + missing + ".ca: no such file"},
		// The flags pass: the model is what fails.
		{"good pair", serve("-http-tls-cert", otherCert, "-http-tls-key", otherKey, "-http-tls-client-ca", certs.CAFile), 1, "forecaster serve: load bundle: checkpoint: open " + missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, errb.String(), tc.want)
			}
		})
	}
}

// TestPlainReloadWarning checks that serve warns when POST /-/reload is
// served over plain HTTP on an address other hosts may reach, where its
// token crosses the network in clear, and only then (the warning comes
// before the model is read, which fails here).
func TestPlainReloadWarning(t *testing.T) {
	certs := tlstest.New(t)
	missing := filepath.Join(t.TempDir(), "gone.sdgnn")
	const warning = "cross the network in clear; add -http-tls-cert and -http-tls-key"
	for _, tc := range []struct {
		name string
		args []string
		warn bool
	}{
		{"every interface", []string{"-http", ":8080", "-http-reload"}, true},
		{"every IPv4 interface", []string{"-http", "0.0.0.0:8080", "-http-reload"}, true},
		{"a host name", []string{"-http", "forecaster.example:8080", "-http-reload"}, true},
		{"a LAN address", []string{"-http", "192.0.2.7:8080", "-http-reload"}, true},
		{"loopback", []string{"-http", "127.0.0.1:8080", "-http-reload"}, false},
		{"IPv6 loopback", []string{"-http", "[::1]:8080", "-http-reload"}, false},
		{"localhost", []string{"-http", "localhost:8080", "-http-reload"}, false},
		{"no reload endpoint", []string{"-http", ":8080"}, false},
		{"over TLS", []string{"-http", ":8080", "-http-reload", "-http-tls-cert", certs.ServerCert, "-http-tls-key", certs.ServerKey}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"serve", "-model", missing}, tc.args...), &out, &errb)
			if code != 1 || !strings.Contains(errb.String(), missing) {
				t.Fatalf("exit %d, stderr:\n%s\nwant 1 and the missing model named", code, errb.String())
			}
			if got := strings.Contains(errb.String(), warning); got != tc.warn {
				t.Errorf("warned %v, want %v; stderr:\n%s", got, tc.warn, errb.String())
			}
		})
	}
}

// TestServeHTTPS runs the real forecaster binary with -http-tls-cert and
// -http-tls-key: a client trusting the authority gets /healthz over
// HTTPS, with TLS 1.2 at least; plain HTTP and TLS 1.1 are refused. The
// certificate files are then replaced and the new certificate (told by
// its serial number) is served after POST /-/reload and after SIGHUP;
// a key that is not PEM, and a key of another certificate, are refused
// (409 naming the file, or a log line), the certificate served being
// kept and the model reloaded all the same.
func TestServeHTTPS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	_, _, _, b := szTaxiBundle(t, 12, 8)
	tmp := t.TempDir()
	model := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(model); err != nil {
		t.Fatal(err)
	}
	certs := tlstest.New(t)
	certFile, keyFile := filepath.Join(tmp, "http.pem"), filepath.Join(tmp, "http-key.pem")
	// install puts the PEM files certSrc and keySrc in place of the ones
	// served.
	install := func(certSrc, keySrc string) {
		t.Helper()
		for dst, src := range map[string]string{certFile: certSrc, keyFile: keySrc} {
			data, err := os.ReadFile(src)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	install(certs.ServerCert, certs.ServerKey)
	token := filepath.Join(tmp, "reload.token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)
	bin := buildForecaster(t, t.TempDir())
	cmd := bin.command("serve", "-model", model, "-brokers", emb.Addr, "-log-json", "-http", "127.0.0.1:0",
		"-http-reload", "-http-reload-token-file", token, "-http-tls-cert", certFile, "-http-tls-key", keyFile)
	log := startLogged(ctx, t, cmd)
	if m := log.wait("-http serves HTTPS"); m["serial"] != "2" || m["cert"] != certFile {
		t.Errorf("start logged %v, want serial 2 of %s", m, certFile)
	}
	m := log.wait("serving metrics, health and forecasts")
	addr, _ := m["http"].(string)
	if m["tls"] != true {
		t.Errorf("serving logged %v, want tls true", m)
	}
	log.wait("consuming")

	// A new connection for each request, so that each is served the
	// certificate of its own handshake.
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: certs.Pool}, DisableKeepAlives: true}}
	serial := func() int64 {
		t.Helper()
		resp, err := client.Get("https://" + addr + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != "ok\n" || resp.TLS.Version < tls.VersionTLS12 {
			t.Fatalf("GET /healthz over HTTPS: %d %q, TLS version %#x", resp.StatusCode, body, resp.TLS.Version)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64()
	}
	reload := func() (int, string) {
		t.Helper()
		return postReloadURL(t, client, "https://"+addr+"/-/reload", "s3cret")
	}
	if got := serial(); got != 2 {
		t.Errorf("serial %d served, want 2", got)
	}
	// Plain HTTP gets no endpoint: Go's server answers 400 to it.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(body), "ok") {
			t.Errorf("plain HTTP: %d %q, want 400 and no endpoint", resp.StatusCode, body)
		}
	}
	old, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: certs.Pool, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	if err == nil {
		old.Close()
		t.Error("a TLS 1.1 handshake was taken, want TLS 1.2 at least")
	} else if !strings.Contains(err.Error(), "protocol version") {
		t.Errorf("TLS 1.1 handshake: %v, want the server to refuse the protocol version", err)
	}

	// Rotated by POST /-/reload.
	install(certs.ServerPair(t, 10))
	if code, body := reload(); code != http.StatusOK || body != "serving crash-test\n" {
		t.Errorf("POST /-/reload: %d %q, want 200 serving crash-test", code, body)
	}
	if m := log.wait("HTTPS certificate reloaded"); m["serial"] != "10" || m["was"] != "2" || m["by"] != "POST /-/reload" {
		t.Errorf("reload logged %v, want serial 10, was 2, by POST /-/reload", m)
	}
	if got := serial(); got != 10 {
		t.Errorf("serial %d served after POST /-/reload, want 10", got)
	}

	// Rotated by SIGHUP.
	cert11, key11 := certs.ServerPair(t, 11)
	install(cert11, key11)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if m := log.wait("HTTPS certificate reloaded"); m["serial"] != "11" || m["by"] != "SIGHUP" {
		t.Errorf("reload logged %v, want serial 11 by SIGHUP", m)
	}
	if got := serial(); got != 11 {
		t.Errorf("serial %d served after SIGHUP, want 11", got)
	}

	// A key file that is not PEM: 409 naming it, the certificate kept,
	// the model reloaded.
	cert12, key12 := certs.ServerPair(t, 12)
	install(cert12, key12)
	if err := os.WriteFile(keyFile, []byte("-----BEGIN EC PRIVATE KEY-----\ncut short"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := reload()
	for _, want := range []string{"the HTTPS certificate served is kept", "-http-tls-key " + keyFile, "key input", "the model was reloaded", "serving crash-test"} {
		if code != http.StatusConflict || !strings.Contains(body, want) {
			t.Errorf("POST /-/reload with a bad key: %d %q, want 409 and %q", code, body, want)
		}
	}
	if m := log.wait("certificate reload refused: the certificate served is kept"); m["serving"] != "11" || m["by"] != "POST /-/reload" {
		t.Errorf("refusal logged %v, want serving 11 by POST /-/reload", m)
	}
	log.wait("model reloaded")
	if got := serial(); got != 11 {
		t.Errorf("serial %d served after a bad key, want 11 kept", got)
	}

	// The key of another certificate, by SIGHUP: a log line naming why.
	install(cert12, key11)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	m = log.wait("certificate reload refused: the certificate served is kept")
	if e, _ := m["error"].(string); !strings.Contains(e, keyFile) || !strings.Contains(e, "private key does not match public key") || m["serving"] != "11" {
		t.Errorf("refusal logged %v, want the mismatch named, serving 11", m)
	}
	log.wait("model reloaded")
	if got := serial(); got != 11 {
		t.Errorf("serial %d served after a mismatched pair, want 11 kept", got)
	}

	// Put right, the next reload takes it.
	install(cert12, key12)
	if code, body := reload(); code != http.StatusOK {
		t.Errorf("POST /-/reload after the pair was put right: %d %q", code, body)
	}
	if got := serial(); got != 12 {
		t.Errorf("serial %d served, want 12", got)
	}
	// /metrics counts the two refusals and gives the expiry of the
	// certificate served now.
	resp, err := client.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	leaf, err := tls.LoadX509KeyPair(cert12, key12)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nsdgnn_stream_credential_reload_failures_total 2\n",
		fmt.Sprintf("\nsdgnn_http_tls_cert_expiry_timestamp_seconds{serial=\"12\"} %d\n", leaf.Leaf.NotAfter.Unix())} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := log.exit(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:80": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "192.0.2.7:80": false, "example.com:80": false, "127.0.0.1": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}
