package stream

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

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

// rotatingClient is a client of brokers that presents the certificate of
// files of its own, read by a KeyPair; put copies another pair over them,
// for the KeyPair's Reload.
type rotatingClient struct {
	t                 *testing.T
	kp                *KeyPair
	sec               Security
	certFile, keyFile string
}

// newRotatingClient returns a rotatingClient trusting the authorities of
// caFile, its files holding the pair cert, key.
func newRotatingClient(t *testing.T, caFile, cert, key string) *rotatingClient {
	t.Helper()
	dir := t.TempDir()
	rc := &rotatingClient{t: t, certFile: filepath.Join(dir, "client.pem"), keyFile: filepath.Join(dir, "client-key.pem")}
	rc.put(cert, key)
	var err error
	if rc.kp, err = LoadKeyPair(rc.certFile, rc.keyFile, "-tls-cert", "-tls-key"); err != nil {
		t.Fatal(err)
	}
	client, err := NewTLS(caFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	client.GetClientCertificate = rc.kp.GetClientCertificate
	rc.sec = Security{TLS: client}
	return rc
}

// put copies the pair cert, key over the client's files.
func (rc *rotatingClient) put(cert, key string) {
	rc.t.Helper()
	for _, f := range [][2]string{{cert, rc.certFile}, {key, rc.keyFile}} {
		b, err := os.ReadFile(f[0])
		if err == nil {
			err = os.WriteFile(f[1], b, 0o600)
		}
		if err != nil {
			rc.t.Fatal(err)
		}
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
	// Signed by an authority the broker does not trust.
	rc := newRotatingClient(t, certs.CAFile, other.ClientCert, other.ClientKey)
	cc, sec, put, keyFile := rc.kp, rc.sec, rc.put, rc.keyFile
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
// TLS configuration or read again by a KeyPair, and none without one.
func TestClientCertExpiryMetric(t *testing.T) {
	certs := tlstest.New(t)
	b := testBundle(t, 4, 3, 2, 4, 1)
	cc, err := LoadKeyPair(certs.ClientCert, certs.ClientKey, "", "")
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

// TestAuthoritiesReload checks what Reload takes and refuses: one
// certificate or more and nothing else, a refusal naming the file and
// keeping the authorities in use; and that VerifyClient checks against
// the authorities last read well.
func TestAuthoritiesReload(t *testing.T) {
	certs, other := tlstest.New(t), tlstest.New(t)
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ca, otherCA := read(certs.CAFile), read(other.CAFile)
	key := read(certs.ClientKey)
	file := filepath.Join(t.TempDir(), "ca.pem")
	put := func(parts ...[]byte) {
		t.Helper()
		if err := os.WriteFile(file, bytes.Join(parts, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put(ca)
	a, err := LoadAuthorities(file, "-client-ca")
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(certFile, keyFile string) tls.ConnectionState {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{pair.Leaf}}
	}
	ours, theirs := leaf(certs.ClientCert, certs.ClientKey), leaf(other.ClientCert, other.ClientKey)
	server := leaf(certs.ServerCert, certs.ServerKey) // of the authority, but not for client authentication
	verify := func(when string, wantOurs, wantTheirs bool) {
		t.Helper()
		for _, c := range []struct {
			name string
			cs   tls.ConnectionState
			want bool
		}{{"ours", ours, wantOurs}, {"theirs", theirs, wantTheirs}, {"a server certificate", server, false}, {"none", tls.ConnectionState{}, false}} {
			if err := a.VerifyClient(c.cs); (err == nil) != c.want {
				t.Errorf("%s: VerifyClient of %s: %v, want accepted %v", when, c.name, err, c.want)
			}
		}
	}
	verify("first authority", true, false)
	for _, c := range []struct {
		name  string
		parts [][]byte
		want  string // in the error; empty: taken
		n     int    // authorities in use afterwards
	}{
		{"both authorities", [][]byte{ca, []byte("\n\n"), otherCA, []byte("\n")}, "", 2},
		{"empty", nil, "-client-ca " + file + ": no PEM certificate in it", 2},
		{"text only", [][]byte{[]byte("not PEM\n")}, "no PEM certificate in it", 2},
		{"cut short", [][]byte{otherCA, ca[:len(ca)/2]}, "bytes after certificate 1 are not a PEM block (cut short?)", 2},
		{"a key", [][]byte{otherCA, key}, `PEM block 2 is a "EC PRIVATE KEY", want a CERTIFICATE`, 2},
		{"bad DER", [][]byte{otherCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0x03, 1, 2, 3}})}, "-client-ca " + file + ": certificate 2: x509:", 2},
		{"the second authority", [][]byte{otherCA}, "", 1},
	} {
		put(c.parts...)
		got, err := a.Reload()
		switch {
		case c.want == "" && (err != nil || len(got) != c.n):
			t.Errorf("%s: %d authorities, %v; want %d taken", c.name, len(got), err, c.n)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
		if n := len(a.Certificates()); n != c.n {
			t.Errorf("%s: %d authorities in use, want %d", c.name, n, c.n)
		}
		if c.name == "both authorities" {
			verify(c.name, true, true)
		}
	}
	verify("second authority", false, true)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Reload(); err == nil || !strings.Contains(err.Error(), "-client-ca: open "+file) {
		t.Errorf("missing file: %v", err)
	}
	verify("after a missing file", false, true)
	var unread Authorities
	if err := unread.VerifyClient(ours); err == nil {
		t.Error("an Authorities never read accepted a certificate")
	}
	var k KeyPair
	if _, err := k.GetCertificate(nil); err == nil || k.Leaf() != nil {
		t.Errorf("a KeyPair never read: %v, leaf %v", err, k.Leaf())
	}
}

// TestClientCertReloadWriter checks the path of the forecasts' writer:
// a kafka.Writer on Security.Transport presents, on each new connection,
// the client certificate a KeyPair last read, as the broker sees it,
// also after its first connection was refused. The service's Reader
// dials through Security.Dialer, which TestClientCertReload covers.
func TestClientCertReloadWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs, other := tlstest.New(t), tlstest.New(t)
	var (
		mu   sync.Mutex
		seen []string // the serials of the client certificates the broker took
	)
	server := certs.RequireClientCert()
	server.VerifyConnection = func(cs tls.ConnectionState) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, cs.PeerCertificates[0].SerialNumber.String())
		return nil
	}
	addr := tlstest.BrokerTLS(t, server)
	last := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) == 0 {
			return ""
		}
		return seen[len(seen)-1]
	}
	// Of an authority the broker does not trust.
	rc := newRotatingClient(t, certs.CAFile, other.ClientCert, other.ClientKey)
	kp, sec, put := rc.kp, rc.sec, rc.put
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	transport := sec.Transport()
	defer transport.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "forecasts", Transport: transport, RequiredAcks: kafka.RequireAll,
		MaxAttempts: 1, BatchTimeout: time.Millisecond}
	defer w.Close()
	write := func(v string) error {
		return w.WriteMessages(ctx, kafka.Message{Key: []byte("7"), Value: []byte(v)})
	}
	if err := write("refused"); err == nil {
		t.Fatal("a write with a certificate of another authority was taken")
	}
	put(certs.ClientCert, certs.ClientKey) // serial 3
	if _, err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := sec.EnsureTopics(ctx, []string{addr}, 1, "forecasts"); err != nil {
		t.Fatal(err)
	}
	// The transport's first look at the cluster was refused, and kafka-go
	// answers with that error until its next look (MetadataTTL, 6 s at
	// most by default): the writer takes the new certificate then,
	// without being closed. The service's writes retry meanwhile.
	start := time.Now()
	for write("first") != nil {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no write taken %s after Reload of the broker's authority's certificate: %v", time.Since(start), write("first"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("first write taken %s after the reload", time.Since(start).Round(time.Millisecond))
	if got := last(); got != "3" {
		t.Errorf("the broker last took serial %s, want 3", got)
	}
	put(certs.ClientPair(t, 30))
	if _, err := kp.Reload(); err != nil {
		t.Fatal(err)
	}
	// The connection open keeps its certificate; the next one presents
	// the new.
	transport.CloseIdleConnections()
	if err := write("second"); err != nil {
		t.Fatalf("write after the rotation: %v", err)
	}
	if got := last(); got != "30" {
		t.Errorf("the broker last took serial %s after the rotation, want 30", got)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "forecasts", Dialer: sec.Dialer(), MaxWait: 100 * time.Millisecond})
	defer r.Close()
	for _, want := range []string{"first", "second"} {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Value) != want {
			t.Errorf("read %q, want %q", m.Value, want)
		}
	}
}

// TestAuthoritiesRefuseDamagedBlock checks that a PEM block that does not
// decode (its END line lost, a character that is not base64) is an error
// when another block follows it, as it is when it is the last: pem.Decode
// passes over such a block to the next one, which dropped the damaged
// authority without a word. Text outside the blocks (comments, as in
// openssl's output or CA bundles) is still skipped.
func TestAuthoritiesRefuseDamagedBlock(t *testing.T) {
	certs, other := tlstest.New(t), tlstest.New(t)
	ca, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := os.ReadFile(other.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	put := func(parts ...[]byte) {
		t.Helper()
		if err := os.WriteFile(file, bytes.Join(parts, nil), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	put([]byte("# the clients' authorities\n"), ca, []byte("subject=CN=other\n"), otherCA)
	a, err := LoadAuthorities(file, "-client-ca")
	if err != nil || len(a.Certificates()) != 2 {
		t.Fatalf("authorities with comments around them: %d taken, %v; want 2", len(a.Certificates()), err)
	}
	lines := bytes.Split(ca, []byte("\n"))
	noEnd := bytes.Replace(ca, []byte("-----END CERTIFICATE-----"), nil, 1)
	badChar := bytes.Replace(ca, lines[2], append([]byte("*"), lines[2][1:]...), 1)
	for _, c := range []struct {
		name string
		data []byte
	}{{"END line lost", noEnd}, {"not base64", badChar}} {
		put(c.data, otherCA)
		got, err := a.Reload()
		if err == nil || !strings.Contains(err.Error(), "PEM block 1 does not decode") {
			t.Errorf("%s, then an authority: %d taken, %v; want an error naming block 1", c.name, len(got), err)
		}
		if n := len(a.Certificates()); n != 2 {
			t.Errorf("%s: %d authorities in use, want the 2 read before", c.name, n)
		}
	}
}
