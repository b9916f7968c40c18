package checkpoint

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteAtomic checks that a write that fails halfway leaves the old file
// whole and no temporary file behind, and that a write that succeeds
// replaces the file with mode 0644.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "table.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk gone")
	err := WriteAtomic(path, func(w io.Writer) error {
		if _, err := w.Write([]byte("half of the n")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Fatalf("failing write: %v, want %v naming %s", err, boom, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("after a failing write the file holds %q", b)
	}
	if err := WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("file holds %q, want new", b)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644", fi.Mode(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("directory holds %v (%v), want only table.json", entries, err)
	}
	if err := WriteAtomic(filepath.Join(dir, "missing", "x"), func(io.Writer) error { return nil }); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
}

// TestWriteAtomicPanicLeavesNoTemp checks that a write function that
// panics (recovered further up, as a service does) leaves the old file
// and no temporary file behind, as a failing one does.
func TestWriteAtomicPanicLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("no panic")
			}
		}()
		WriteAtomic(path, func(w io.Writer) error {
			io.WriteString(w, "half")
			panic("encoder bug")
		})
	}()
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("file holds %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %v, want only state.json", entries)
	}
}
