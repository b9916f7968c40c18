package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadPredictions gives ReadPredictions the fuzzer's file, seeded with
// the predictions of a small document: it must return columns that agree
// in length, or an error naming the file, never a panic out of arrow's
// reader.
func FuzzReadPredictions(f *testing.F) {
	dir := f.TempDir()
	for i, d := range []*Document{tinyDocument([]string{"flow", "speed"}, SDGNN, "GRU-GCN"), tinyDocument([]string{"speed"})} {
		d.truth[0] = 0 // a missing reading: null errors
		p := filepath.Join(dir, "seed"+string(rune('0'+i))+".arrow")
		if err := d.writeArrow(p); err != nil {
			f.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(dir, "fuzz.arrow")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := ReadPredictions(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		rows := len(p.Snapshot)
		if len(p.Step) != rows || len(p.Node) != rows || len(p.Columns) != len(p.Names) {
			t.Fatalf("%d snapshots, %d steps, %d nodes; %d columns of %d names", rows, len(p.Step), len(p.Node), len(p.Columns), len(p.Names))
		}
		for name, col := range p.Columns {
			if len(col) != rows {
				t.Fatalf("column %q has %d values, want %d", name, len(col), rows)
			}
		}
	})
}
