//go:build unix

// Package filetest holds file helpers for tests of code that reads files
// again while it runs (certificates, passwords): an atomic replacement, as
// a rotation makes it, and a read held back, so that two reloads overlap.
package filetest

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// StallRead has the next read of path wait: path becomes a FIFO, read by
// reader, which StallRead starts; it returns once reader has opened it,
// with give, which hands reader content (and the end of the file). Where
// FIFOs cannot be made the test is skipped.
func StallRead(tb testing.TB, path string, reader func()) (give func(content []byte)) {
	tb.Helper()
	fifo := path + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		tb.Skipf("mkfifo: %v", err)
	}
	if err := os.Remove(path); err != nil {
		tb.Fatal(err)
	}
	if err := os.Link(fifo, path); err != nil {
		tb.Fatal(err)
	}
	go reader()
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the reader
		if err != nil {
			tb.Error(err)
		}
		opened <- w
	}()
	var w *os.File
	select {
	case w = <-opened:
	case <-time.After(30 * time.Second):
		tb.Fatalf("nothing opened %s to read it", path)
	}
	if w == nil {
		tb.FailNow()
	}
	return func(content []byte) {
		if _, err := w.Write(content); err != nil {
			tb.Error(err)
		}
		w.Close()
	}
}

// Replace writes content to a file beside path and renames it onto path,
// as a rotation does.
func Replace(tb testing.TB, path string, content []byte) {
	tb.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, content, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}
