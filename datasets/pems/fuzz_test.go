package pems

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
)

// FuzzReadNPZ gives ReadNPZ an archive whose data.npy member holds the
// fuzzer's bytes: the npy header and values, which this package parses
// itself, rather than the zip around them, which archive/zip does. It must
// return a series whose shape matches its values, or an error naming the
// file; never panic, and never allocate more than the member's size
// justifies.
func FuzzReadNPZ(f *testing.F) {
	s := testSeries(3, 2, 2)
	var le bytes.Buffer
	le.Write(npyHeader("<f8", []int{3, 2, 2}))
	for _, v := range s.Data {
		binary.Write(&le, binary.LittleEndian, v)
	}
	f.Add(le.Bytes())
	var be bytes.Buffer
	be.Write(npyHeader(">i2", []int{3, 2}))
	for k := range 6 {
		binary.Write(&be, binary.BigEndian, int16(k-3))
	}
	f.Add(be.Bytes())
	for _, tc := range []struct {
		version byte
		dict    string
		values  int // bytes
	}{
		{2, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 2L, 1L), }", 16},
		{3, "{'descr': '<u1', 'fortran_order': True, 'shape': (2, 3, 2), }", 12},
	} {
		var h bytes.Buffer
		h.Write(npy.Magic[:])
		h.Write([]byte{tc.version, 0})
		binary.Write(&h, binary.LittleEndian, uint32(len(tc.dict)+1))
		h.WriteString(tc.dict + "\n")
		h.Write(make([]byte, tc.values))
		f.Add(h.Bytes())
	}
	f.Add(npyHeader("<f8", []int{10, 20, 3})[:40])
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, member []byte) {
		path := filepath.Join(dir, "fuzz.npz")
		writeMember(t, path, member)
		s, err := ReadNPZ(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := s.validate(); err != nil {
			t.Fatalf("series read: %v", err)
		}
	})
}

// writeMember writes a zip archive at path whose data.npy holds b.
func writeMember(t *testing.T, path string, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("data.npy")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzReadDistance: the distance list reader returns a valid graph on the
// nodes asked for, or an error; never a panic.
func FuzzReadDistance(f *testing.F) {
	f.Add("from,to,cost\n0,1,3.5\n1,0,2\n2,3,1e3\n3,3,0\n", 4)
	f.Add("0,1,5.0\n1.0,2,7\n", 3)
	f.Add("from,to\n0,1\n", 2)
	f.Fuzz(func(t *testing.T, text string, nodes int) {
		nodes = 1 + int(uint(nodes)%1000)
		g, err := readDistance(strings.NewReader(text), nodes)
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("graph read: %v", err)
		}
	})
}

// FuzzReadAdjacency: the adjacency matrix reader returns a valid graph or
// an error; never a panic.
func FuzzReadAdjacency(f *testing.F) {
	f.Add("0,1,0,0\n0,0,0,2\n0,1,1,0\n0,5,0,0\n")
	f.Add("0, 1.5\n-2,0\n")
	f.Add("1\n")
	f.Fuzz(func(t *testing.T, text string) {
		g, err := readAdjacency(strings.NewReader(text))
		if err != nil {
			return
		}
		if err := g.Validate(); err != nil {
			t.Fatalf("graph read: %v", err)
		}
	})
}

// FuzzReadSeriesCSV gives ReadSeriesCSV arbitrary text: it must return a
// series whose shape matches its values and its IDs, or an error naming
// the file; never panic.
func FuzzReadSeriesCSV(f *testing.F) {
	f.Add("101,102\n60,61.5\n59,60\n")
	f.Add("\ufeffa,b,c\n1,2\n")
	f.Add("1,1\n1,NaN\n")
	f.Add("x\n\"1\"\n")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		path := filepath.Join(dir, "fuzz.csv")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s, ids, err := ReadSeriesCSV(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := s.validate(); err != nil || s.Channels != 1 || len(ids) != s.Nodes {
			t.Fatalf("series (%d, %d, %d) of %d values with %d IDs: %v", s.Steps, s.Nodes, s.Channels, len(s.Data), len(ids), err)
		}
	})
}
