//go:build unix

package stream

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/internal/filetest"
	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestClientCertReloadInTurns overlaps two Reloads: the first reads the
// certificate before a rotation, then waits for its key (a FIFO) while
// the pair rotates and the second reloads. The pair presented afterwards
// must be the rotated one, not that of the Reload that stored last.
func TestClientCertReloadInTurns(t *testing.T) {
	before, after := tlstest.New(t), tlstest.New(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filetest.Replace(t, certFile, read(before.ClientCert))
	filetest.Replace(t, keyFile, read(before.ClientKey))
	cc, err := LoadKeyPair(certFile, keyFile, "", "")
	if err != nil {
		t.Fatal(err)
	}
	reload := func(done chan<- struct{}) {
		defer close(done)
		if _, err := cc.Reload(); err != nil {
			t.Error(err)
		}
	}

	// The key becomes a FIFO, so that the first Reload waits for it.
	first, second := make(chan struct{}), make(chan struct{})
	give := filetest.StallRead(t, keyFile, func() { reload(first) })
	filetest.Replace(t, keyFile, read(after.ClientKey))
	filetest.Replace(t, certFile, read(after.ClientCert))
	go reload(second)
	select { // without turns, the second Reload ends at once
	case <-second:
	case <-time.After(200 * time.Millisecond):
	}
	give(read(before.ClientKey))
	for _, done := range []chan struct{}{first, second} {
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a Reload did not end")
		}
	}
	want, err := tls.LoadX509KeyPair(after.ClientCert, after.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	if !cc.Leaf().Equal(want.Leaf) {
		t.Error("the certificate read before the rotation is presented after the two Reloads, want the files'")
	}
}
