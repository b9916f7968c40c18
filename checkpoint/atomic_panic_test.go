package checkpoint

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

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
