//go:build unix

package stream

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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
	replace := func(path string, content []byte) { // as a rotation does
		if err := os.WriteFile(path+".new", content, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".new", path); err != nil {
			t.Fatal(err)
		}
	}
	replace(certFile, read(before.ClientCert))
	replace(keyFile, read(before.ClientKey))
	cc, err := LoadClientCert(certFile, keyFile)
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
	fifo := keyFile + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(fifo, keyFile); err != nil {
		t.Fatal(err)
	}
	first, second := make(chan struct{}), make(chan struct{})
	go reload(first)
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // once the first Reload reads the key
		if err != nil {
			t.Error(err)
		}
		opened <- w
	}()
	var w *os.File
	select {
	case w = <-opened:
	case <-time.After(30 * time.Second):
		t.Fatal("Reload did not open the key file")
	}
	if w == nil {
		t.FailNow()
	}
	replace(keyFile, read(after.ClientKey))
	replace(certFile, read(after.ClientCert))
	go reload(second)
	select { // without turns, the second Reload ends at once
	case <-second:
	case <-time.After(200 * time.Millisecond):
	}
	if _, err := w.Write(read(before.ClientKey)); err != nil {
		t.Fatal(err)
	}
	w.Close()
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
