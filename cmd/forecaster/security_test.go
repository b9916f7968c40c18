package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
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

// TestReloadKafkaCredentials checks that SIGHUP's and POST /-/reload's
// reload (reloadAll) reads the SASL password file and the client
// certificate again, against a broker that wants both: connections made
// after it authenticate with what the files hold then; files that do not
// read keep the credentials in use, the answer saying so while the model
// is still reloaded.
func TestReloadKafkaCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs, other := tlstest.New(t), tlstest.New(t)
	addr := tlstest.BrokerTLS(t, certs.RequireClientCert(), tlstest.User{Mechanism: "SCRAM-SHA-512", Name: "forecaster", Password: "pw-2"})
	tmp := t.TempDir()
	pwFile, certFile, keyFile := filepath.Join(tmp, "pw"), filepath.Join(tmp, "client.pem"), filepath.Join(tmp, "client-key.pem")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		write(to, string(b))
	}
	// The credentials before their rotation: a retired password, a
	// certificate the broker's authority did not sign.
	write(pwFile, "pw-1\n")
	copyFile(other.ClientCert, certFile)
	copyFile(other.ClientKey, keyFile)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addSecurityFlags(fs)
	if err := fs.Parse([]string{"-tls-ca", certs.CAFile, "-tls-cert", certFile, "-tls-key", keyFile,
		"-sasl", "SCRAM-SHA-512", "-sasl-user", "forecaster", "-sasl-password-file", pwFile}); err != nil {
		t.Fatal(err)
	}
	sec, creds, err := f.credentials()
	if err != nil {
		t.Fatal(err)
	}
	if !creds.rotatable() {
		t.Fatal("a password file and a client certificate: nothing to reload")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := sec.CheckBrokers(ctx, []string{addr}); err == nil {
		t.Fatal("the credentials before the rotation were accepted")
	}

	_, ds, split, first := szTaxiBundle(t, 12, 8)
	model := filepath.Join(tmp, "model.sdgnn")
	if err := first.Save(model); err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	log := zerolog.New(&logs)
	rl := &reloader{svc: unstartedService(t, randomBundle(t, ds, split, first.Meta.Norm, 12, 8), log), path: model, creds: creds, log: log}

	write(pwFile, "pw-2\n")
	copyFile(certs.ClientCert, certFile)
	copyFile(certs.ClientKey, keyFile)
	if _, err := rl.reloadAll(ctx, "test"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if !strings.Contains(logs.String(), `"took":["-sasl-password-file `+pwFile+`","-tls-cert `+certFile+` (serial 3)"]`) {
		t.Errorf("logs %s: want the credentials taken", logs.String())
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after the reload: %v", err)
	}

	write(pwFile, "")
	write(keyFile, "not a key")
	_, err = rl.reloadAll(ctx, "test")
	for _, want := range []string{"the Kafka credentials in use are kept: -sasl-password-file " + pwFile + " is empty; -tls-cert " + certFile + ", -tls-key " + keyFile, "; the model was reloaded"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("reload of an empty password file and a bad key: %v, want %q", err, want)
		}
	}
	if !strings.Contains(logs.String(), "Kafka credentials reload refused") {
		t.Errorf("logs %s: want the refusal", logs.String())
	}
	if n := rl.svc.Counters().CredentialReloadFailures.Load(); n != 1 {
		t.Errorf("%d credential reload failures counted, want 1", n)
	}
	if err := sec.CheckBrokers(ctx, []string{addr}); err != nil {
		t.Fatalf("after a refused reload: %v", err)
	}

	// A password from the environment cannot change: nothing to reload.
	t.Setenv(saslPasswordEnv, "pw-2")
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	f = addSecurityFlags(fs)
	if err := fs.Parse([]string{"-tls-ca", certs.CAFile, "-sasl", "SCRAM-SHA-512", "-sasl-user", "forecaster"}); err != nil {
		t.Fatal(err)
	}
	if _, creds, err := f.credentials(); err != nil || creds.rotatable() {
		t.Errorf("password from the environment: rotatable %v (%v), want false", creds.rotatable(), err)
	}
}

// TestReloadRefusedPasswordNamesFile rotates the password file to one
// that SCRAM's SASLprep refuses: the reload's error names the file, as
// for any other password file that does not read, but not the password.
func TestReloadRefusedPasswordNamesFile(t *testing.T) {
	pwFile := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pwFile, []byte("pw-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addSecurityFlags(fs)
	if err := fs.Parse([]string{"-tls", "-sasl", "SCRAM-SHA-256", "-sasl-user", "forecaster", "-sasl-password-file", pwFile}); err != nil {
		t.Fatal(err)
	}
	_, creds, err := f.credentials()
	if err != nil {
		t.Fatal(err)
	}
	const secret = "MIGHAgEAMBMGByqGSM49"
	if err := os.WriteFile(pwFile, []byte("-----BEGIN PRIVATE KEY-----\n"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	took, err := creds.reload()
	if len(took) > 0 || err == nil || !strings.Contains(err.Error(), "-sasl-password-file "+pwFile) || !strings.Contains(err.Error(), "SASLprep") {
		t.Errorf("reload of a password SASLprep refuses: took %v, %v; want an error naming %s", took, err, pwFile)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestServeReloadsKafkaCredentials runs serve against a broker that wants
// TLS and SCRAM, with -http-reload: POST /-/reload reads the password file
// again, answering 409 naming it while it does not read (the model
// reloaded all the same) and 200 once it does, as SIGHUP would.
func TestServeReloadsKafkaCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	_, _, _, b := szTaxiBundle(t, 12, 8)
	tmp := t.TempDir()
	model := filepath.Join(tmp, "b.sdgnn")
	if err := b.Save(model); err != nil {
		t.Fatal(err)
	}
	certs := tlstest.New(t)
	addr := tlstest.Broker(t, certs, tlstest.User{Mechanism: "SCRAM-SHA-512", Name: "forecaster", Password: "pw-1"})
	pwFile, token := filepath.Join(tmp, "password"), filepath.Join(tmp, "token")
	for path, content := range map[string]string{pwFile: "pw-1\n", token: "s3cret\n"} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- cmdServe(runCtx, []string{"-model", model, "-brokers", addr, "-tls-ca", certs.CAFile, "-sasl", "SCRAM-SHA-512", "-sasl-user", "forecaster",
			"-sasl-password-file", pwFile, "-log-json", "-http", "127.0.0.1:0", "-http-reload", "-http-reload-token-file", token}, io.Discard, &logs)
	}()
	var httpAddr string
	for httpAddr == "" {
		for _, line := range strings.Split(logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["message"] == "serving metrics, health and forecasts" {
				httpAddr, _ = m["http"].(string)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v", err)
		case <-ctx.Done():
			t.Fatalf("no HTTP address logged: %s", logs.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := os.WriteFile(pwFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, body := postReload(t, httpAddr, "s3cret")
	for _, want := range []string{"the Kafka credentials in use are kept: -sasl-password-file " + pwFile + " is empty", "the model was reloaded"} {
		if code != http.StatusConflict || !strings.Contains(body, want) {
			t.Errorf("POST /-/reload with an empty password file: %d %q, want 409 and %q", code, body, want)
		}
	}
	if err := os.WriteFile(pwFile, []byte("pw-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := postReload(t, httpAddr, "s3cret"); code != http.StatusOK {
		t.Errorf("POST /-/reload with the password file put right: %d %q, want 200", code, body)
	}
	if !strings.Contains(logs.String(), `"took":["-sasl-password-file `+pwFile+`"]`) {
		t.Errorf("no credentials reload logged: %s", logs.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
