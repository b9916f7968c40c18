package stream

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestServiceOverTLSAndSASL runs the service, publishes readings and reads
// the forecasts back, all over TLS with SASL (SCRAM-SHA-512 for the
// service, PLAIN for the publisher and SCRAM-SHA-256 for the reader), as a
// managed Kafka cluster asks; and checks that a wrong password, a client
// without TLS and a client that does not trust the broker's certificate
// are refused with errors that say so.
func TestServiceOverTLSAndSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs := tlstest.New(t)
	addr := tlstest.Broker(t, certs, tlstest.User{Mechanism: "SCRAM-SHA-512", Name: "forecaster", Password: "pw-512"},
		tlstest.User{Mechanism: "PLAIN", Name: "publisher", Password: "pw-plain"}, tlstest.User{Mechanism: "SCRAM-SHA-256", Name: "reader", Password: "pw-256"})
	client, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	secure := func(mech, user, pass string) Security {
		t.Helper()
		m, err := NewSASL(mech, user, pass)
		if err != nil {
			t.Fatal(err)
		}
		return Security{TLS: client, SASL: m}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const n, T, C, d = 4, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	// A wrong password, no TLS, TLS without the authority: refused.
	for _, bad := range []struct {
		name string
		sec  Security
		want string
	}{
		{"wrong password", secure("SCRAM-SHA-512", "forecaster", "guess"), "SASL"},
		{"no TLS", Security{SASL: secure("SCRAM-SHA-512", "forecaster", "pw-512").SASL}, "connect to the brokers (SASL_PLAINTEXT/SCRAM-SHA-512)"},
		{"untrusted certificate", Security{TLS: &tls.Config{MinVersion: tls.VersionTLS12}, SASL: secure("SCRAM-SHA-512", "forecaster", "pw-512").SASL}, "certificate"},
	} {
		// Waiting for brokers does not wait out a refusal: Run would
		// return nil at rctx's end.
		svc, err := NewService(b, Config{Brokers: []string{addr}, Security: bad.sec, StepMs: testStep, WaitBrokers: time.Minute, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(ctx, 15*time.Second)
		err = svc.Run(rctx)
		rcancel()
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: Run returned %v, want an error mentioning %q", bad.name, err, bad.want)
		}
		t.Logf("%s: %v", bad.name, err)
	}

	if err := secure("PLAIN", "publisher", "pw-plain").EnsureTopics(ctx, []string{addr}, 4, "readings"); err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(b, Config{Brokers: []string{addr}, Security: secure("scram-sha-512", "forecaster", "pw-512"), StepMs: testStep,
		Lateness: 100 * time.Millisecond, ProbeEvery: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	const steps = 12
	data := testSeries(steps, n, C, 5)
	sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: data}, PublishConfig{Brokers: []string{addr},
		Security: secure("PLAIN", "publisher", "pw-plain"), Topic: "readings", From: 0, To: steps, Start: time.UnixMilli(1000 * testStep), StepMs: testStep, SkipMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for svc.Counters().Applied.Load() < uint64(sent) {
		select {
		case err := <-done:
			t.Fatalf("service stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("applied %d of %d readings", svc.Counters().Applied.Load(), sent)
		case <-time.After(20 * time.Millisecond):
		}
	}
	for !svc.Readiness().Ready {
		select {
		case <-ctx.Done():
			var text strings.Builder
			svc.Readiness().Write(&text)
			t.Fatalf("not ready over TLS and SASL:\n%s", text.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// The forecasts, read over TLS and SCRAM-SHA-256.
	reader := secure("SCRAM-SHA-256", "reader", "pw-256")
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "tls-check", Topic: "forecasts", StartOffset: kafka.FirstOffset,
		MaxWait: 50 * time.Millisecond, Dialer: reader.Dialer()})
	defer r.Close()
	m, err := r.ReadMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f, err := DecodeForecast(m.Value)
	if err != nil || f.Model != "test-v1" {
		t.Fatalf("forecast read over TLS: %+v, %v", f, err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestServiceMutualTLS runs the service against a broker that wants a
// client certificate: refused without one, consuming with the one the
// broker's authority signed.
func TestServiceMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs := tlstest.New(t)
	addr := tlstest.BrokerTLS(t, certs.RequireClientCert())
	b := testBundle(t, 4, 3, 2, 4, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name      string
		cert, key string
		wantErr   string // "" : the service runs and becomes ready
	}{
		{"no client certificate", "", "", "certificate required"},
		{"client certificate", certs.ClientCert, certs.ClientKey, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewTLS(certs.CAFile, tc.cert, tc.key, "")
			if err != nil {
				t.Fatal(err)
			}
			svc, err := NewService(b, Config{Brokers: []string{addr}, Security: Security{TLS: c}, StepMs: testStep, ProbeEvery: 50 * time.Millisecond,
				WaitBrokers: time.Minute, Log: zerolog.Nop()}) // a refused certificate is not waited out
			if err != nil {
				t.Fatal(err)
			}
			stop, done := runService(ctx, svc)
			defer stop()
			if tc.wantErr != "" {
				if err := <-done; err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Run: %v, want an error mentioning %q", err, tc.wantErr)
				}
				return
			}
			for !svc.Readiness().Ready {
				select {
				case err := <-done:
					t.Fatalf("Run: %v", err)
				case <-ctx.Done():
					t.Fatal("not ready over mutual TLS")
				case <-time.After(20 * time.Millisecond):
				}
			}
			stop()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewSASLAndTLS(t *testing.T) {
	certs := tlstest.New(t)
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"unknown mechanism", func() error { _, err := NewSASL("GSSAPI", "u", "p"); return err }, `sasl mechanism "GSSAPI": want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"no user", func() error { _, err := NewSASL("PLAIN", "", "p"); return err }, "sasl: no user name"},
		{"missing CA", func() error { _, err := NewTLS(certs.CAFile+".gone", "", "", ""); return err }, "ca.pem.gone: no such file"},
		{"CA not PEM", func() error { _, err := NewTLS("security_test.go", "", "", ""); return err }, "tls ca security_test.go: no PEM certificate in it"},
		{"certificate without key", func() error { _, err := NewTLS("", certs.CAFile, "", ""); return err }, "give both the certificate and the key file"},
		{"key not matching", func() error { _, err := NewTLS("", certs.CAFile, certs.CAFile, ""); return err }, "tls client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		sec  Security
		want string
	}{
		{Security{}, "PLAINTEXT"},
		{Security{TLS: &tls.Config{}}, "SSL"},
	} {
		if got := tc.sec.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.sec, got, tc.want)
		}
	}
	m, err := NewSASL("scram-sha-256", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	if got := (Security{TLS: &tls.Config{}, SASL: m}).String(); got != "SASL_SSL/SCRAM-SHA-256" {
		t.Errorf("SASL_SSL: %q", got)
	}
	plain, err := NewSASL("plain", "u", "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sec  Security
		want bool
	}{
		{Security{SASL: plain}, true},
		{Security{SASL: plain, TLS: &tls.Config{}}, false},
		{Security{SASL: m}, false}, // SCRAM sends no password
		{Security{}, false},
	} {
		if got := tc.sec.ClearPassword(); got != tc.want {
			t.Errorf("%s: ClearPassword %v, want %v", tc.sec, got, tc.want)
		}
	}
}

// TestTLSServerName checks that the brokers' certificate is verified
// against -tls-server-name when given, by the dialer (CheckBrokers, the
// reader) and the transport (EnsureTopics, the writers and clients)
// alike: a name the certificate does not carry is refused, one it does
// is taken.
func TestTLSServerName(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs := tlstest.New(t)
	addr := tlstest.Broker(t, certs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"kafka.example.com", false}, {"localhost", true}, {"", true}} {
		c, err := NewTLS(certs.CAFile, "", "", tc.name)
		if err != nil {
			t.Fatal(err)
		}
		sec := Security{TLS: c}
		cerr := sec.CheckBrokers(ctx, []string{addr})
		eerr := sec.EnsureTopics(ctx, []string{addr}, 1, "readings")
		if tc.ok && (cerr != nil || eerr != nil) {
			t.Errorf("server name %q: CheckBrokers %v, EnsureTopics %v", tc.name, cerr, eerr)
		}
		if !tc.ok && (cerr == nil || !strings.Contains(cerr.Error(), "kafka.example.com") || eerr == nil) {
			t.Errorf("server name %q: CheckBrokers %v, EnsureTopics %v: want both refused", tc.name, cerr, eerr)
		}
	}
}

// TestCheckBrokersTLSAgainstPlaintext checks that -tls against a
// plaintext listener, which reads the TLS client hello as the start of a
// Kafka request and waits for the rest (as the embedded broker does), is
// named as such: the error said only "failed to dial: context deadline
// exceeded". A broker that is not reached at all keeps its own error.
func TestCheckBrokersTLSAgainstPlaintext(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(io.Discard, c); c.Close() }() // reads, never answers
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name, addr string
		sec        Security
		want       string
		hint       bool
	}{
		{"tls against a plaintext listener", silent.Addr().String(), Security{TLS: &tls.Config{}}, "no answer to the TLS handshake", true},
		{"tls against no listener", refused, Security{TLS: &tls.Config{}}, "connection refused", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := tc.sec.CheckBrokers(ctx, []string{tc.addr})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "plaintext listener") != tc.hint {
				t.Errorf("CheckBrokers: %v, want an error with %q (naming a plaintext listener: %v)", err, tc.want, tc.hint)
			}
		})
	}
}
