package pems

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
	"gonum.org/v1/gonum/mat"
)

// testSeries returns a (t, n, c) series whose values encode their indices.
func testSeries(t, n, c int) *Series {
	s := &Series{Steps: t, Nodes: n, Channels: c, Data: make([]float64, t*n*c)}
	for k := range s.Data {
		s.Data[k] = float64(k)*0.5 - 3
	}
	return s
}

// intSeries returns a (t, n, c) series of whole numbers that span the range
// of the integer dtype descr, its extremes included.
func intSeries(t, n, c int, descr string) *Series {
	dt, err := parseDtype(descr)
	if err != nil {
		panic(err)
	}
	bits := 8*dt.size - 1 // of the largest magnitude of a signed type
	lo, hi := -math.Ldexp(1, bits), math.Ldexp(1, bits)-1
	if dt.kind == 'u' {
		lo, hi = 0, math.Ldexp(1, bits+1)-1
	}
	if dt.size == 8 { // whole numbers a float64 holds exactly
		lo, hi = max(lo, -(1<<53)), min(hi, 1<<53)
	}
	s := &Series{Steps: t, Nodes: n, Channels: c, Data: make([]float64, t*n*c)}
	for k := range s.Data {
		s.Data[k] = float64(k%97*7919) - 1000
	}
	s.Data[0], s.Data[len(s.Data)-1] = lo, hi
	for k, v := range s.Data {
		s.Data[k] = min(max(v, lo), hi)
	}
	return s
}

func TestNPZRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		descr   string
		shape   []int
		t, n, c int
	}{
		{"f8-3d", "<f8", []int{4, 3, 2}, 4, 3, 2},
		{"f8-2d", "<f8", []int{5, 3}, 5, 3, 1},
		{"f4-3d", "<f4", []int{4, 3, 3}, 4, 3, 3},
		{"f8-big-endian", ">f8", []int{2, 3, 1}, 2, 3, 1},
		{"f4-big-endian", ">f4", []int{3, 2}, 3, 2, 1},
		{"long", "<f8", []int{3000, 7, 1}, 3000, 7, 1}, // more than one read chunk
		{"i8", "<i8", []int{4, 3, 3}, 4, 3, 3},
		{"i4-big-endian", ">i4", []int{3000, 2, 3}, 3000, 2, 3},
		{"i2", "<i2", []int{4, 3, 2}, 4, 3, 2},
		{"i1", "|i1", []int{4, 3, 2}, 4, 3, 2},
		{"u1", "|u1", []int{4, 3}, 4, 3, 1},
		{"u2-big-endian", ">u2", []int{4, 3, 2}, 4, 3, 2},
		{"u4", "<u4", []int{4, 3, 2}, 4, 3, 2},
		{"u8", "<u8", []int{4, 3, 2}, 4, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := testSeries(tc.t, tc.n, tc.c)
			if k := tc.descr[1]; k == 'i' || k == 'u' {
				want = intSeries(tc.t, tc.n, tc.c, tc.descr)
			}
			path := filepath.Join(dir, tc.name+".npz")
			if err := writeNPZArray(path, SeriesKey, tc.descr, tc.shape, want.Data); err != nil {
				t.Fatal(err)
			}
			got, err := ReadNPZ(path)
			if err != nil {
				t.Fatal(err)
			}
			checkSeries(t, got, want)
		})
	}

	t.Run("WriteNPZ", func(t *testing.T) {
		want := testSeries(6, 5, 3)
		path := filepath.Join(dir, "write.npz")
		if err := WriteNPZ(path, want); err != nil {
			t.Fatal(err)
		}
		got, err := ReadNPZ(path)
		if err != nil {
			t.Fatal(err)
		}
		checkSeries(t, got, want)
		if got.At(5, 4, 2) != want.Data[len(want.Data)-1] || got.At(1, 2, 0) != want.Data[(1*5+2)*3] {
			t.Errorf("At disagrees with the row-major layout")
		}
	})

	t.Run("npyio-writer", func(t *testing.T) {
		// A (T, N) matrix written by npyio itself reads as C = 1.
		m := mat.NewDense(3, 4, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
		path := filepath.Join(dir, "npyio.npz")
		if err := npz.Write(path, map[string]any{"data": m}); err != nil {
			t.Fatal(err)
		}
		got, err := ReadNPZ(path)
		if err != nil {
			t.Fatal(err)
		}
		checkSeries(t, got, &Series{Steps: 3, Nodes: 4, Channels: 1, Data: m.RawMatrix().Data})
	})
}

func checkSeries(t *testing.T, got, want *Series) {
	t.Helper()
	if got.Steps != want.Steps || got.Nodes != want.Nodes || got.Channels != want.Channels {
		t.Fatalf("shape (%d, %d, %d), want (%d, %d, %d)", got.Steps, got.Nodes, got.Channels, want.Steps, want.Nodes, want.Channels)
	}
	if len(got.Data) != len(want.Data) {
		t.Fatalf("%d values, want %d", len(got.Data), len(want.Data))
	}
	for k := range want.Data {
		if got.Data[k] != want.Data[k] {
			t.Fatalf("Data[%d] = %v, want %v", k, got.Data[k], want.Data[k])
		}
	}
}

func TestFromFortran(t *testing.T) {
	// Column-major (2, 3, 2): element (s, i, k) at s + 2*(i + 3*k).
	shape := []int{2, 3, 2}
	want := testSeries(2, 3, 2)
	f := make([]float64, len(want.Data))
	for s := 0; s < 2; s++ {
		for i := 0; i < 3; i++ {
			for k := 0; k < 2; k++ {
				f[s+2*(i+3*k)] = want.At(s, i, k)
			}
		}
	}
	got := fromFortran(f, shape)
	checkSeries(t, &Series{Steps: 2, Nodes: 3, Channels: 2, Data: got}, want)
}

func TestReadNPZErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.npz")
	if err := WriteNPZ(good, testSeries(50, 4, 3)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	otherKey := filepath.Join(dir, "other.npz")
	if err := writeNPZArray(otherKey, "values", "<f8", []int{2, 2, 1}, []float64{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	badShape := filepath.Join(dir, "shape.npz")
	if err := writeNPZArray(badShape, "data", "<f8", []int{8}, make([]float64, 8)); err != nil {
		t.Fatal(err)
	}
	ints := filepath.Join(dir, "ints.npz")
	if err := npz.Write(ints, map[string]any{"data": []complex128{1, 2, 3}}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		path string
		want []string // substrings of the error
	}{
		{"missing", filepath.Join(dir, "nope.npz"), []string{"nope.npz", "no such file"}},
		{"not-zip", write("text.npz", []byte("from,to,cost\n1,2,3\n")), []string{"text.npz", "zip"}},
		{"truncated", write("trunc.npz", raw[:len(raw)/2]), []string{"trunc.npz"}},
		{"truncated-tail", write("tail.npz", raw[:len(raw)-10]), []string{"tail.npz"}},
		{"no-data-key", otherKey, []string{"other.npz", `"data"`, "values"}},
		{"bad-shape", badShape, []string{"shape.npz", "shape [8]"}},
		{"bad-dtype", ints, []string{"ints.npz", "dtype"}},
		{"corrupt", write("corrupt.npz", corrupt(raw)), []string{"corrupt.npz", `array "data"`}},
		{"short-data", truncatedMember(t, dir), []string{"short.npz", "truncated", "of 600 values"}},
		{"short-header", npzMember(t, dir, "shorthdr.npz", npyHeader("<f8", []int{10, 20, 3})[:40]), []string{"shorthdr.npz", "truncated npy header", "30 of its 118 bytes"}},
		{"huge-header", npzMember(t, dir, "hugehdr.npz", append([]byte("\x93NUMPY\x02\x00\xf0\xff\xff\xff"), npyHeader("<f8", []int{2, 2, 1})[10:]...)), []string{"hugehdr.npz", "corrupt npy header", "4294967280 bytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadNPZ(tc.path)
			if err == nil {
				t.Fatalf("ReadNPZ(%s) = %d values, want an error", tc.path, len(s.Data))
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// corrupt returns a copy of an npz archive with bytes in the middle of its
// compressed member flipped, leaving the zip directory intact.
func corrupt(raw []byte) []byte {
	b := append([]byte(nil), raw...)
	for i := len(b)/2 - 8; i < len(b)/2+8; i++ {
		b[i] ^= 0x5a
	}
	return b
}

// truncatedMember writes a valid zip whose data.npy holds fewer values than
// its header's shape (10, 20, 3) says.
func truncatedMember(t *testing.T, dir string) string {
	t.Helper()
	return npzMember(t, dir, "short.npz", append(npyHeader("<f8", []int{10, 20, 3}), make([]byte, 8*100)...))
}

// npzMember writes a zip archive at dir/name whose data.npy holds b.
func npzMember(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.Create("data.npy")
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWriteNPZErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		s    *Series
	}{
		{"nil", nil},
		{"zero-dim", &Series{Steps: 0, Nodes: 2, Channels: 1}},
		{"length", &Series{Steps: 2, Nodes: 2, Channels: 1, Data: []float64{1, 2, 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".npz")
			if err := WriteNPZ(path, tc.s); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("WriteNPZ error = %v, want one naming %s", err, path)
			}
		})
	}
}

func TestNPYHeaderAlignment(t *testing.T) {
	for _, shape := range [][]int{{1}, {2976, 156, 1}, {16992, 307, 3}} {
		h := npyHeader("<f8", shape)
		if len(h)%64 != 0 || h[len(h)-1] != '\n' {
			t.Errorf("header for %v has length %d, want a multiple of 64 ending in newline", shape, len(h))
		}
	}
}

// TestDtypeValue decodes elements from their bytes as NumPy lays them out,
// independently of the writer the round trip uses.
func TestDtypeValue(t *testing.T) {
	for _, tc := range []struct {
		descr string
		b     []byte
		want  float64
	}{
		{"<f8", []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}, 1.5},
		{">f8", []byte{0xc0, 0x04, 0, 0, 0, 0, 0, 0}, -2.5},
		{"<f4", []byte{0, 0, 0xc0, 0x3f}, 1.5},
		{">f4", []byte{0xc0, 0x20, 0, 0}, -2.5},
		{"|i1", []byte{0x80}, -128},
		{"|u1", []byte{0x80}, 128},
		{"<i2", []byte{0xfe, 0xff}, -2},
		{">i2", []byte{0xff, 0xfe}, -2},
		{"<u2", []byte{0xfe, 0xff}, 65534},
		{"<i4", []byte{0x00, 0x00, 0x00, 0x80}, -2147483648},
		{">u4", []byte{0xff, 0xff, 0xff, 0xff}, 4294967295},
		{"<i8", []byte{0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, -3},
		{">i8", []byte{0, 0, 0, 0, 0, 0, 0x01, 0x2c}, 300},
		{"<u8", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 18446744073709551615},
	} {
		dt, err := parseDtype(tc.descr)
		if err != nil {
			t.Fatalf("parseDtype(%q): %v", tc.descr, err)
		}
		if len(tc.b) != dt.size {
			t.Fatalf("%s: %d bytes, want %d", tc.descr, len(tc.b), dt.size)
		}
		if got := dt.value(tc.b); got != tc.want {
			t.Errorf("%s % x = %v, want %v", tc.descr, tc.b, got, tc.want)
		}
		got, err := decodeFloats(bytes.NewReader(tc.b), 1, dt)
		if err != nil || len(got) != 1 || got[0] != tc.want {
			t.Errorf("decodeFloats %s % x = %v, %v; want [%v]", tc.descr, tc.b, got, err, tc.want)
		}
	}
	for _, descr := range []string{"<c16", "|b1", "<f2", "<i3", "<U8", "O", ""} {
		if _, err := parseDtype(descr); err == nil {
			t.Errorf("parseDtype(%q) accepted", descr)
		}
	}
}

// A header that Python 2 wrote with long dimensions, (T L, N L, C L),
// which NumPy reads, reads as the same series; in format 2.0 too.
func TestReadNPZPython2Shape(t *testing.T) {
	want := testSeries(7, 4, 3)
	dir := t.TempDir()
	for _, version := range []byte{1, 2} {
		path := fmt.Sprintf("py2-v%d.npz", version)
		dict := "{'descr': '<f8', 'fortran_order': False, 'shape': (7L, 4L, 3L), }"
		var hdr bytes.Buffer
		hdr.Write(npy.Magic[:])
		hdr.Write([]byte{version, 0})
		size := len(dict) + 1 + 5 // some padding, as NumPy leaves
		if version == 1 {
			binary.Write(&hdr, binary.LittleEndian, uint16(size))
		} else {
			binary.Write(&hdr, binary.LittleEndian, uint32(size))
		}
		hdr.WriteString(dict + "     \n")
		for _, v := range want.Data {
			binary.Write(&hdr, binary.LittleEndian, v)
		}
		got, err := ReadNPZ(npzMember(t, dir, path, hdr.Bytes()))
		if err != nil {
			t.Fatalf("format %d: %v", version, err)
		}
		checkSeries(t, got, want)
	}
}

// TestReadNPZFormat3 reads npy format 3.0 headers, which numpy.load reads
// and numpy.save writes when the header text needs UTF-8; the layout is
// 2.0's. Fortran order is checked end to end as well.
func TestReadNPZFormat3(t *testing.T) {
	want := testSeries(7, 4, 3)
	dir := t.TempDir()
	for _, fortran := range []string{"False", "True"} {
		path := "v3-" + fortran + ".npz"
		dict := "{'descr': '<f8', 'fortran_order': " + fortran + ", 'shape': (7, 4, 3), }"
		var hdr bytes.Buffer
		hdr.Write(npy.Magic[:])
		hdr.Write([]byte{3, 0})
		size := 128 - 12
		binary.Write(&hdr, binary.LittleEndian, uint32(size))
		hdr.WriteString(dict + strings.Repeat(" ", size-len(dict)-1) + "\n")
		for k := range want.Data {
			v := want.Data[k]
			if fortran == "True" { // element (s, i, c) at s + 7*(i + 4*c)
				s, i, c := k%7, k/7%4, k/28
				v = want.At(s, i, c)
			}
			binary.Write(&hdr, binary.LittleEndian, v)
		}
		got, err := ReadNPZ(npzMember(t, dir, path, hdr.Bytes()))
		if err != nil {
			t.Fatalf("format 3.0, fortran_order %s: %v", fortran, err)
		}
		checkSeries(t, got, want)
	}
}
