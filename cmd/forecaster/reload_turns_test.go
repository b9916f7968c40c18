//go:build unix

package main

import (
	"context"
	"crypto/tls"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/filetest"
	"github.com/pemsforecast/sdgnn/internal/tlstest"
	"github.com/pemsforecast/sdgnn/stream"
)

// inTurns runs a first reload whose read of path waits, rotates path to
// rotated meanwhile, and runs a second reload: the second must not take
// effect before the first, which then reads stale (the file as it was
// before the rotation), so that the credentials used are the rotated
// ones. first and second are the two reloads.
func inTurns(t *testing.T, path string, stale, rotated []byte, first, second func()) {
	t.Helper()
	done1, done2 := make(chan struct{}), make(chan struct{})
	give := filetest.StallRead(t, path, func() { defer close(done1); first() })
	filetest.Replace(t, path, rotated)
	go func() { defer close(done2); second() }()
	select { // without turns, the second reload ends at once
	case <-done2:
	case <-time.After(200 * time.Millisecond):
	}
	give(stale)
	for _, done := range []chan struct{}{done1, done2} {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a reload did not end")
		}
	}
}

// TestReloadKafkaCredentialsInTurns overlaps two reloads of the Kafka
// credentials, as a SIGHUP and a POST /-/reload may: the first read the
// password file and the client certificate before their rotation, the
// second after; the credentials used afterwards must be the rotated ones,
// not those of the reload that happened to store last.
func TestReloadKafkaCredentialsInTurns(t *testing.T) {
	certs, other := tlstest.New(t), tlstest.New(t)
	tmp := t.TempDir()
	pwFile, certFile, keyFile := filepath.Join(tmp, "pw"), filepath.Join(tmp, "client.pem"), filepath.Join(tmp, "client-key.pem")
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filetest.Replace(t, pwFile, []byte("pw-old\n"))
	filetest.Replace(t, certFile, read(other.ClientCert))
	filetest.Replace(t, keyFile, read(other.ClientKey))
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := addSecurityFlags(fs)
	if err := fs.Parse([]string{"-tls", "-tls-cert", certFile, "-tls-key", keyFile,
		"-sasl", "PLAIN", "-sasl-user", "forecaster", "-sasl-password-file", pwFile}); err != nil {
		t.Fatal(err)
	}
	_, creds, err := f.credentials()
	if err != nil {
		t.Fatal(err)
	}
	reload := func() {
		if _, err := creds.reload(); err != nil {
			t.Error(err)
		}
	}
	password := func() string {
		_, ir, err := creds.sasl.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimPrefix(string(ir), "\x00forecaster\x00")
	}

	inTurns(t, pwFile, []byte("pw-old\n"), []byte("pw-new\n"), reload, reload)
	if got := password(); got != "pw-new" {
		t.Errorf("password %q used after the two reloads, want the file's %q", got, "pw-new")
	}

	// The certificate is read before its key: the first reload reads the
	// old certificate, then waits for the key, which rotates meanwhile
	// with the certificate, and reads the old key.
	rotate := func() {
		filetest.Replace(t, certFile, read(certs.ClientCert))
		reload()
	}
	inTurns(t, keyFile, read(other.ClientKey), read(certs.ClientKey), reload, rotate)
	want, err := tls.LoadX509KeyPair(certs.ClientCert, certs.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if got := creds.cert.Leaf(); !got.Equal(want.Leaf) {
		t.Errorf("client certificate read before the rotation presented after the two reloads (issuer's key %x), want the files' (%x)", got.AuthorityKeyId, want.Leaf.AuthorityKeyId)
	}
}

// TestServerCertReloadInTurns is TestReloadKafkaCredentialsInTurns for
// -http-tls-cert.
func TestServerCertReloadInTurns(t *testing.T) {
	certs := tlstest.New(t)
	oldCert, oldKey := certs.ServerPair(t, 21)
	newCert, newKey := certs.ServerPair(t, 22)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filetest.Replace(t, certFile, read(oldCert))
	filetest.Replace(t, keyFile, read(oldKey))
	c, err := stream.LoadKeyPair(certFile, keyFile, "-http-tls-cert", "-http-tls-key")
	if err != nil {
		t.Fatal(err)
	}
	// The certificate is read before its key: the first reload reads the
	// old certificate, then waits for the key, which rotates meanwhile
	// with the certificate, and reads the old key.
	reload := func() {
		if _, err := c.Reload(); err != nil {
			t.Error(err)
		}
	}
	rotate := func() {
		filetest.Replace(t, certFile, read(newCert))
		reload()
	}
	inTurns(t, keyFile, read(oldKey), read(newKey), reload, rotate)
	if got := c.Leaf().SerialNumber.String(); got != "22" {
		t.Errorf("serial %s served after the two reloads, want the files' 22", got)
	}
}
