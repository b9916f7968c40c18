package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestWriteFailsLeavingOldFile fills the disk, as far as the writer can
// tell, halfway through each table: the file already at the path must stay
// whole, and nothing else may be left in its directory. A limit on file
// size (RLIMIT_FSIZE; Go ignores SIGXFSZ, so the write fails with EFBIG)
// stands in for the full disk or the crash that interrupts a long export.
func TestWriteFailsLeavingOldFile(t *testing.T) {
	big := testPredictions()
	for len(big.Snapshot) < 1<<14 {
		big.Snapshot = append(big.Snapshot, big.Snapshot...)
		big.Step = append(big.Step, big.Step...)
		big.Node = append(big.Node, big.Node...)
		big.Pred = append(big.Pred, big.Pred...)
		big.True = append(big.True, big.True...)
	}
	s := newTestSet(t, 400, 40, 2, 12)
	for _, tc := range []struct {
		name  string
		write func(path string) error
	}{
		{"predictions", func(p string) error { return WritePredictions(p, big) }},
		{"snapshots", func(p string) error { return WriteSnapshots(p, s, Range{0, s.Len()}) }},
		{"embeddings", func(p string) error {
			return WriteEmbeddings(p, "h", make([]int, 1000), 20, 8, make([]float64, 1000*20*8))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "table.arrow")
			if err := WritePredictions(path, testPredictions()); err != nil {
				t.Fatal(err)
			}
			old, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var lim syscall.Rlimit
			if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Skip(err)
			}
			small := lim
			small.Cur = 64 << 10
			if small.Cur <= uint64(len(old)) || lim.Max < small.Cur {
				t.Skipf("cannot set a file size limit of %d", small.Cur)
			}
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
				t.Skip(err)
			}
			err = tc.write(path)
			if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); rerr != nil {
				t.Fatal(rerr)
			}
			if err == nil {
				t.Fatal("a write past the file size limit succeeded")
			}
			got, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(got, old) {
				t.Errorf("after the failed write (%v) the old file is %d bytes (%v), want its %d", err, len(got), rerr, len(old))
			}
			if _, rerr := ReadPredictions(path); rerr != nil {
				t.Errorf("old file no longer reads: %v", rerr)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only table.arrow", len(entries))
			}
		})
	}
}
