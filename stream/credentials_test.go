package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestRotatingSASL checks that connections made after Set authenticate
// with the new credentials, against a broker that checks them: refused
// with a wrong password, accepted once the right one is set, and that
// another mechanism is not taken.
func TestRotatingSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs := tlstest.New(t)
	addr := tlstest.Broker(t, certs, tlstest.User{Mechanism: "SCRAM-SHA-512", Name: "forecaster", Password: "pw-new"})
	client, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	mech := func(name, pw string) *saslHolder {
		m, err := NewSASL(name, "forecaster", pw)
		if err != nil {
			t.Fatal(err)
		}
		return &saslHolder{m}
	}
	rot := NewRotatingSASL(mech("SCRAM-SHA-512", "pw-old").m)
	sec := Security{TLS: client, SASL: rot}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sec.CheckBrokers(ctx, []string{addr}); err == nil || !strings.Contains(err.Error(), "SASL") {
		t.Fatalf("old password: %v, want a SASL refusal", err)
	}
	if err := rot.Set(mech("SCRAM-SHA-512", "pw-new").m); err != nil {
		t.Fatal(err)
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after Set with the new password: %v", err)
	}
	if err := rot.Set(mech("PLAIN", "pw-new").m); err == nil || !strings.Contains(err.Error(), "rotate SCRAM-SHA-512 credentials to a PLAIN mechanism") {
		t.Errorf("Set of another mechanism: %v", err)
	}
	if err := rot.Set(nil); err == nil {
		t.Error("Set(nil) taken")
	}
	if rot.Name() != "SCRAM-SHA-512" || sec.String() != "SASL_SSL/SCRAM-SHA-512" {
		t.Errorf("name %s, security %s", rot.Name(), sec)
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after the refused Sets: %v", err)
	}
}

// TestClientCertReload checks that a handshake after Reload presents the
// certificate the files hold then, against a broker that wants one its
// authority signed; and that files that do not read keep the one
// presented.
func TestClientCertReload(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs, other := tlstest.New(t), tlstest.New(t)
	addr := tlstest.BrokerTLS(t, certs.RequireClientCert())
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	put := func(cert, key string) {
		t.Helper()
		for _, f := range [][2]string{{cert, certFile}, {key, keyFile}} {
			b, err := os.ReadFile(f[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f[1], b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	put(other.ClientCert, other.ClientKey) // signed by an authority the broker does not trust
	cc, err := LoadClientCert(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	client, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	client.GetClientCertificate = cc.GetClientCertificate
	sec := Security{TLS: client}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sec.CheckBrokers(ctx, []string{addr}); err == nil {
		t.Fatal("a certificate of another authority was accepted")
	}
	put(certs.ClientCert, certs.ClientKey)
	leaf, err := cc.Reload()
	if err != nil {
		t.Fatal(err)
	}
	if leaf != cc.Leaf() {
		t.Error("Leaf is not the certificate reloaded")
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: certs.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate reloaded is not the broker's authority's: %v", err)
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after Reload with the broker's authority's certificate: %v", err)
	}
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.Reload(); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Errorf("Reload of a bad key: %v, want an error naming %s", err, keyFile)
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after a refused Reload: %v", err)
	}
}

// TestClientCertExpiryMetric checks that /metrics gives the expiry of the
// client certificate presented to the brokers, whether it is fixed in the
// TLS configuration or read again by a ClientCert, and none without one.
func TestClientCertExpiryMetric(t *testing.T) {
	certs := tlstest.New(t)
	b := testBundle(t, 4, 3, 2, 4, 1)
	cc, err := LoadClientCert(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := NewTLS(certs.CAFile, certs.ClientCert, certs.ClientKey, "")
	if err != nil {
		t.Fatal(err)
	}
	rotating, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	rotating.GetClientCertificate = cc.GetClientCertificate
	none, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("\nsdgnn_kafka_tls_client_cert_expiry_timestamp_seconds{serial=\"3\"} %d\n", cc.Leaf().NotAfter.Unix())
	for _, c := range []struct {
		name string
		tls  *tls.Config
		want bool
	}{
		{"fixed", fixed, true},
		{"rotating", rotating, true},
		{"no client certificate", none, false},
		{"plaintext", nil, false},
	} {
		svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, Security: Security{TLS: c.tls}, StepMs: testStep, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		body := rec.Body.String()
		if got := strings.Contains(body, want); got != c.want {
			t.Errorf("%s: /metrics has %q: %v, want %v", c.name, want, got, c.want)
		}
		if !c.want && strings.Contains(body, "client_cert_expiry") {
			t.Errorf("%s: /metrics names a client certificate", c.name)
		}
		if !strings.Contains(body, "\nsdgnn_stream_credential_reload_failures_total 0\n") {
			t.Errorf("%s: /metrics lacks the credential reload failures", c.name)
		}
	}
}
