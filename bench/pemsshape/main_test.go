package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestRefusesTheDataDirectory holds pemsshape to never writing into the
// data directory it reads: -out naming it truncated the real files it
// copies onto themselves (SZ_taxi.npz) and left random PeMS series where
// training would take them for the real ones.
func TestRefusesTheDataDirectory(t *testing.T) {
	data := t.TempDir()
	files := map[string][]byte{
		"pems/pems04/distance.csv": []byte("from,to,cost\n0,1,1.0\n"),
		"pems/pems08/distance.csv": []byte("from,to,cost\n0,1,2.0\n"),
		"sz-taxi/SZ_taxi.npz":      []byte("not really an npz, but bytes to keep"),
		"sz-taxi/SZ_taxi_adj.csv":  []byte("0,1\n1,0\n"),
	}
	for name, b := range files {
		p := filepath.Join(data, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The same directory under another name, as -out and -data often are:
	// a relative path and a symbolic link (os.SameFile).
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	outs := []string{data, link}
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, data); err == nil {
			outs = append(outs, rel)
		}
	}
	for _, out := range outs {
		if err := run(out, data); err == nil {
			t.Errorf("run(-out %s, -data %s): no error, want a refusal", out, data)
		}
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(data, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes after the run, want the %d it had", name, len(got), len(want))
		}
	}
	for _, name := range []string{"pems/pems04/PEMS04.npz", "pems/pems08/PEMS08.npz"} {
		if _, err := os.Stat(filepath.Join(data, filepath.FromSlash(name))); err == nil {
			t.Errorf("%s: random readings written into the data directory", name)
		}
	}
}
