package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestServeAndPublishOverTLSAndSASL runs serve and publish against a
// broker that speaks only TLS and SASL, with the flags an operator gives
// for a managed cluster: the service's password in a file, the
// publisher's in $SDGNN_SASL_PASSWORD. Every sensor gets its forecast for
// the slot after the last one replayed, read back over TLS; a wrong
// password is refused with an error that says so.
func TestServeAndPublishOverTLSAndSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	const T, steps = 12, 16
	dir, ds, split, b := szTaxiBundle(t, T, 8)
	tmp := t.TempDir()
	path := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	certs := tlstest.New(t)
	addr := tlstest.Broker(t, certs, tlstest.User{Mechanism: "SCRAM-SHA-256", Name: "forecaster", Password: "pw 256"},
		tlstest.User{Mechanism: "PLAIN", Name: "publisher", Password: "pw-plain"})
	pwFile := filepath.Join(tmp, "password")
	if err := os.WriteFile(pwFile, []byte("pw 256\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := filepath.Join(tmp, "wrong")
	if err := os.WriteFile(wrong, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	secure := []string{"-brokers", addr, "-tls-ca", certs.CAFile, "-sasl", "scram-sha-256", "-sasl-user", "forecaster"}

	err := cmdServe(ctx, append([]string{"-model", path, "-http", "", "-sasl-password-file", wrong}, secure...), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "SASL Authentication Failed") || !strings.Contains(err.Error(), "SASL_SSL/SCRAM-SHA-256") {
		t.Fatalf("serve with a wrong password: %v", err)
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		done <- cmdServe(runCtx, append([]string{"-model", path, "-http", "", "-lateness", "1000h", "-sasl-password-file", pwFile}, secure...), io.Discard, io.Discard)
	}()
	t.Setenv(saslPasswordEnv, "pw-plain")
	var out strings.Builder
	if err := cmdPublish(ctx, []string{"-brokers", addr, "-tls-ca", certs.CAFile, "-sasl", "PLAIN", "-sasl-user", "publisher",
		"-data", dir, "-model", path, "-steps", fmt.Sprint(steps)}, &out, io.Discard); err != nil {
		t.Fatalf("publish: %v", err)
	}
	// The forecasts of the slot after the last one replayed, one per sensor.
	const stepMs = 15 * 60 * 1000
	want := ds.Info.Start.UnixMilli() + int64(split.Test.Start+steps)*stepMs
	m, err := stream.NewSASL("PLAIN", "publisher", "pw-plain")
	if err != nil {
		t.Fatal(err)
	}
	client, err := stream.NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "tls-check", Topic: "forecasts", StartOffset: kafka.FirstOffset,
		MaxWait: 50 * time.Millisecond, Dialer: stream.Security{TLS: client, SASL: m}.Dialer()})
	defer r.Close()
	sensors := map[int]bool{}
	for len(sensors) < ds.Series.Nodes {
		msg, err := r.ReadMessage(ctx)
		if err != nil {
			select {
			case err := <-done:
				t.Fatalf("serve stopped: %v", err)
			default:
			}
			t.Fatalf("forecasts of %d of %d sensors: %v", len(sensors), ds.Series.Nodes, err)
		}
		f, err := stream.DecodeForecast(msg.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f.TS > want {
			t.Fatalf("a forecast for %s, after the last slot replayed", time.UnixMilli(f.TS).UTC().Format(time.RFC3339))
		}
		if f.TS == want {
			sensors[f.Sensor] = true
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	t.Logf("%s; forecasts of every sensor for %s", strings.TrimSpace(out.String()), time.UnixMilli(want).UTC().Format(time.RFC3339))
}

// TestSASLPasswordNotInErrors gives serve and publish a password that
// SCRAM refuses (a file of several lines: the wrong file given, a key,
// say; a control character): the error names the flag and what is
// wrong, but not the password, which would otherwise end up in the logs.
func TestSASLPasswordNotInErrors(t *testing.T) {
	tmp := t.TempDir()
	const secret = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49\n-----END PRIVATE KEY-----\n"
	pwFile := filepath.Join(tmp, "key.pem")
	if err := os.WriteFile(pwFile, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "-model", filepath.Join(tmp, "none.sdgnn"), "-http", "", "-sasl-password-file", pwFile},
		{"publish", "-sasl-password-file", pwFile},
	} {
		for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
			args := append(args, "-brokers", "127.0.0.1:1", "-sasl", mech, "-sasl-user", "forecaster")
			var stderr strings.Builder
			code := run(args, io.Discard, &stderr)
			if code == 0 || !strings.Contains(stderr.String(), "-sasl") {
				t.Errorf("%s: exit %d, stderr %q: want a failure naming -sasl", args, code, stderr.String())
			}
			if strings.Contains(stderr.String(), "MIGHAgEAMBMGByqGSM49") {
				t.Errorf("%s: stderr shows the password: %q", args, stderr.String())
			}
		}
	}
	t.Setenv(saslPasswordEnv, "pass\tword")
	var stderr strings.Builder
	if code := run([]string{"publish", "-brokers", "127.0.0.1:1", "-sasl", "SCRAM-SHA-256", "-sasl-user", "u"}, io.Discard, &stderr); code == 0 ||
		strings.Contains(stderr.String(), "pass\tword") || strings.Contains(stderr.String(), `pass\tword`) {
		t.Errorf("$%s with a tab: exit %d, stderr %q: want a failure without the password", saslPasswordEnv, code, stderr.String())
	}
}
