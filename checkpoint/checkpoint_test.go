package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() *File {
	return &File{
		Kind: "gru-gcn-teacher",
		Meta: json.RawMessage(`{"hidden":64,"normaliser":{"mean":[1.5,2],"std":[0.5,1]},"note":"héllo"}`),
		Tensors: []Tensor{
			{Name: "gru.w", Shape: []int{2, 3}, Data: []float64{1, -2, 3.25, math.Inf(1), math.SmallestNonzeroFloat64, math.Copysign(0, -1)}},
			{Name: "gru.b", Shape: []int{3}, Data: []float64{0.1, 0.2, 0.3}},
			{Name: "scale", Shape: []int{}, Data: []float64{42}},
			{Name: "empty", Shape: []int{0, 4}, Data: []float64{}},
		},
	}
}

func encode(t testing.TB, f *File) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, f); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

// equalFiles compares files, treating nil and empty shapes and data as equal
// and comparing floats bit for bit.
func equalFiles(a, b *File) bool {
	if a.Kind != b.Kind || string(a.Meta) != string(b.Meta) || len(a.Tensors) != len(b.Tensors) {
		return false
	}
	for i := range a.Tensors {
		x, y := a.Tensors[i], b.Tensors[i]
		if x.Name != y.Name || len(x.Shape) != len(y.Shape) || len(x.Data) != len(y.Data) {
			return false
		}
		if len(x.Shape) > 0 && !reflect.DeepEqual(x.Shape, y.Shape) {
			return false
		}
		for j := range x.Data {
			if math.Float64bits(x.Data[j]) != math.Float64bits(y.Data[j]) {
				return false
			}
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		file *File
	}{
		{"sample", sample()},
		{"no tensors no meta", &File{Kind: "gru-teacher"}},
		{"NaN payload", &File{Kind: "k", Tensors: []Tensor{{Name: "x", Shape: []int{1}, Data: []float64{math.Float64frombits(0x7ff8000000000123)}}}}},
		{"nil shape scalar", &File{Kind: "k", Tensors: []Tensor{{Name: "s", Data: []float64{7}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(encode(t, tc.file)))
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if !equalFiles(got, tc.file) {
				t.Errorf("round trip:\ngot  %+v\nwant %+v", got, tc.file)
			}
		})
	}
}

func TestMetaCompacted(t *testing.T) {
	f := &File{Kind: "k", Meta: json.RawMessage("{ \"a\" :\n [1, 2] }")}
	got, err := Read(bytes.NewReader(encode(t, f)))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Meta) != `{"a":[1,2]}` {
		t.Errorf("meta %s", got.Meta)
	}
}

func TestLayout(t *testing.T) {
	f := &File{Kind: "k", Tensors: []Tensor{{Name: "x", Shape: []int{1}, Data: []float64{1}}}}
	b := encode(t, f)
	if string(b[:8]) != "PEMSMODL" {
		t.Errorf("magic %q", b[:8])
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != FormatVersion {
		t.Errorf("version %d", v)
	}
	h := binary.LittleEndian.Uint64(b[12:])
	hdr := string(b[20 : 20+h])
	if want := `{"kind":"k","tensors":[{"name":"x","shape":[1]}]}`; hdr != want {
		t.Errorf("header %s, want %s", hdr, want)
	}
	data := b[20+h : 20+h+8]
	if v := math.Float64frombits(binary.LittleEndian.Uint64(data)); v != 1 {
		t.Errorf("data %v", v)
	}
	sum := sha256.Sum256(b[:len(b)-32])
	if !bytes.Equal(sum[:], b[len(b)-32:]) || len(b) != int(20+h+8+32) {
		t.Errorf("checksum or length wrong: %d bytes", len(b))
	}
}

func TestTensor(t *testing.T) {
	f := sample()
	x, err := f.Tensor("gru.b")
	if err != nil || x.Data[2] != 0.3 {
		t.Errorf("Tensor(gru.b) = %v, %v", x, err)
	}
	x.Data[0] = 9 // the tensor is shared, not copied
	if f.Tensors[1].Data[0] != 9 {
		t.Error("Tensor returned a copy")
	}
	_, err = f.Tensor("gcn.w")
	if err == nil || !strings.Contains(err.Error(), `"gcn.w"`) || !strings.Contains(err.Error(), `"gru-gcn-teacher"`) {
		t.Errorf("missing tensor error %v", err)
	}
}

func TestTruncation(t *testing.T) {
	b := encode(t, sample())
	for n := range len(b) {
		_, err := Read(bytes.NewReader(b[:n]))
		if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrChecksum) {
			t.Fatalf("truncated to %d of %d bytes: got %v, want ErrTruncated or ErrChecksum", n, len(b), err)
		}
	}
	// Cut inside the data: the header is intact, so the error says both.
	_, err := Read(bytes.NewReader(b[:len(b)-40]))
	if !errors.Is(err, ErrTruncated) || !errors.Is(err, ErrChecksum) ||
		!strings.Contains(err.Error(), "got "+itoa(len(b)-40)) {
		t.Errorf("cut in data: %v", err)
	}
	// Cut inside the prefix.
	_, err = Read(bytes.NewReader(b[:10]))
	if !errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "got 10") {
		t.Errorf("cut in prefix: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestBitFlips(t *testing.T) {
	b := encode(t, sample())
	c := make([]byte, len(b))
	for i := range b {
		for bit := range 8 {
			copy(c, b)
			c[i] ^= 1 << bit
			_, err := Read(bytes.NewReader(c))
			want := ErrChecksum
			switch {
			case i < 8:
				want = ErrNotModelFile
			case i < 12:
				want = ErrVersion
			}
			if !errors.Is(err, want) {
				t.Fatalf("flip byte %d bit %d: got %v, want %v", i, bit, err, want)
			}
		}
	}
}

func TestTrailingBytes(t *testing.T) {
	b := append(encode(t, sample()), 0)
	if _, err := Read(bytes.NewReader(b)); !errors.Is(err, ErrChecksum) {
		t.Errorf("trailing byte: got %v, want ErrChecksum", err)
	}
}

func TestForeignFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
	}{
		{"png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"},
		{"text", "time,node,flow,occupancy,speed\n0,0,12,0.1,64\n"},
		{"short text", "hi"},
		{"npy", "\x93NUMPY\x01\x00v\x00{'descr': '<f8'"},
		{"lowercase magic", "pemsmodl\x01\x00\x00\x00"},
	} {
		_, err := Read(strings.NewReader(tc.data))
		if !errors.Is(err, ErrNotModelFile) || !strings.Contains(err.Error(), "not a model file") {
			t.Errorf("%s: got %v, want ErrNotModelFile", tc.name, err)
		}
	}
}

func TestVersion(t *testing.T) {
	b := encode(t, sample())
	binary.LittleEndian.PutUint32(b[8:], FormatVersion+1)
	_, err := Read(bytes.NewReader(b))
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "found version 2") ||
		!strings.Contains(err.Error(), "supports version 1") {
		t.Errorf("got %v, want ErrVersion naming both versions", err)
	}
	// The version is checked even when nothing follows it.
	if _, err := Read(bytes.NewReader(b[:12])); !errors.Is(err, ErrVersion) {
		t.Errorf("short file with bad version: got %v", err)
	}
}

// build assembles a file with a valid checksum from a raw header length,
// header and data, to test files that a buggy writer might produce.
func build(hdrLen uint64, hdr string, data []float64) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, uint32(FormatVersion))
	binary.Write(&b, binary.LittleEndian, hdrLen)
	b.WriteString(hdr)
	binary.Write(&b, binary.LittleEndian, data)
	sum := sha256.Sum256(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func TestMalformed(t *testing.T) {
	hdr := func(tensors string) string { return `{"kind":"k","tensors":[` + tensors + `]}` }
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"huge header length", build(1<<40, hdr(""), nil), "header length"},
		{"header length past end", build(1000, hdr(""), nil), "header length"},
		{"bad JSON", build(5, "{oops", nil), "malformed header"},
		{"too little data", build(uint64(len(hdr(`{"name":"x","shape":[3]}`))), hdr(`{"name":"x","shape":[3]}`), []float64{1, 2}), "more than the 2 left"},
		{"absurd shape", build(uint64(len(hdr(`{"name":"x","shape":[1000000000,1000000000]}`))), hdr(`{"name":"x","shape":[1000000000,1000000000]}`), nil), "more than the 0 left"},
		{"overflowing shape", build(uint64(len(hdr(`{"name":"x","shape":[4611686018427387904,4]}`))), hdr(`{"name":"x","shape":[4611686018427387904,4]}`), nil), "too large"},
		{"negative dimension", build(uint64(len(hdr(`{"name":"x","shape":[-1]}`))), hdr(`{"name":"x","shape":[-1]}`), nil), "negative"},
		{"too much data", build(uint64(len(hdr(`{"name":"x","shape":[1]}`))), hdr(`{"name":"x","shape":[1]}`), []float64{1, 2}), "beyond"},
		{"duplicate names", build(uint64(len(hdr(`{"name":"x","shape":[]},{"name":"x","shape":[]}`))), hdr(`{"name":"x","shape":[]},{"name":"x","shape":[]}`), []float64{1, 2}), "duplicate"},
		{"empty name", build(uint64(len(hdr(`{"name":"","shape":[]}`))), hdr(`{"name":"","shape":[]}`), []float64{1}), "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		file *File
		want string
	}{
		{"nil", nil, "nil file"},
		{"shape mismatch", &File{Kind: "k", Tensors: []Tensor{{Name: "x", Shape: []int{2, 2}, Data: []float64{1, 2, 3}}}}, "4 elements but data has 3"},
		{"scalar with no data", &File{Kind: "k", Tensors: []Tensor{{Name: "x"}}}, "1 elements but data has 0"},
		{"duplicate name", &File{Kind: "k", Tensors: []Tensor{{Name: "x", Data: []float64{1}}, {Name: "x", Data: []float64{1}}}}, "duplicate"},
		{"empty name", &File{Kind: "k", Tensors: []Tensor{{Data: []float64{1}}}}, "no name"},
		{"negative dimension", &File{Kind: "k", Tensors: []Tensor{{Name: "x", Shape: []int{-2, -1}, Data: []float64{1, 2}}}}, "negative"},
		{"bad meta", &File{Kind: "k", Meta: json.RawMessage(`{"a":`)}, "meta"},
		// Written as U+FFFD, both names would read back as one.
		{"name not UTF-8", &File{Kind: "k", Tensors: []Tensor{{Name: "x\xff", Data: []float64{1}}, {Name: "x\xfe", Data: []float64{1}}}}, "not UTF-8"},
		{"kind not UTF-8", &File{Kind: "k\xff"}, "not UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Write(&buf, tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes of an invalid file", buf.Len())
			}
		})
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		n := w.n
		w.n = 0
		return n, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	size := len(encode(t, sample()))
	for _, n := range []int{0, 10, size - 32, size - 1} {
		err := Write(&failWriter{n: n}, sample())
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("writer failing after %d bytes: got %v", n, err)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "teacher.model")
	if err := WriteFile(path, &File{Kind: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, sample()); err != nil { // replaces the old file
		t.Fatal(err)
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !equalFiles(got, sample()) {
		t.Errorf("ReadFile: got %+v", got)
	}

	// An invalid file leaves the existing one untouched and no temp file.
	if err := WriteFile(path, &File{Kind: "bad", Tensors: []Tensor{{Name: "x"}}}); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteFile invalid: got %v, want an error naming the path", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "teacher.model" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %q, want only teacher.model", names)
	}
	if got, err := ReadFile(path); err != nil || got.Kind != "gru-gcn-teacher" {
		t.Errorf("existing file damaged: %v, %v", got, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v", info.Mode(), err)
	}

	if err := WriteFile(filepath.Join(dir, "missing", "x.model"), sample()); err == nil {
		t.Error("WriteFile into a missing directory: no error")
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.model")
	_, err := ReadFile(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadFile(text)
	if !errors.Is(err, ErrNotModelFile) || !strings.Contains(err.Error(), text) {
		t.Errorf("text file: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	f.Add(encode(f, sample()))
	f.Add(encode(f, &File{Kind: "k"}))
	f.Add([]byte{})
	f.Add([]byte("\x89PNG\r\n\x1a\n"))
	f.Add(build(1<<40, "", nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		// Whatever Read accepts must be writable and read back the same.
		var buf bytes.Buffer
		if err := Write(&buf, got); err != nil {
			t.Fatalf("Read accepted a file that Write rejects: %v", err)
		}
		again, err := Read(&buf)
		if err != nil || !equalFiles(got, again) {
			t.Fatalf("rewrite round trip: %v", err)
		}
	})
}

// TestDigest: the digest survives a round trip and a change of Meta, and
// every change of the kind or of a tensor's name, shape or value (down to
// the sign of a zero) changes it, as does moving a value from one tensor
// to the next.
func TestDigest(t *testing.T) {
	base := sample().Digest()
	if len(base) != 64 {
		t.Fatalf("digest %q: want 64 hex digits", base)
	}
	g, err := Read(bytes.NewReader(encode(t, sample())))
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Digest(); d != base {
		t.Errorf("digest after a round trip %s, before %s", d, base)
	}
	g.Meta = json.RawMessage(`{"created":"2026-11-25T21:00:00Z"}`)
	if d := g.Digest(); d != base {
		t.Errorf("digest changed with Meta alone: %s, was %s", d, base)
	}
	for _, c := range []struct {
		name   string
		change func(f *File)
	}{
		{"kind", func(f *File) { f.Kind = "gru-teacher" }},
		{"name", func(f *File) { f.Tensors[1].Name = "gru.c" }},
		{"shape", func(f *File) { f.Tensors[0].Shape = []int{3, 2} }},
		{"value", func(f *File) { f.Tensors[1].Data[2] = math.Nextafter(0.3, 1) }},
		{"signed zero", func(f *File) { f.Tensors[0].Data[5] = 0 }},
		{"order", func(f *File) { f.Tensors[0], f.Tensors[1] = f.Tensors[1], f.Tensors[0] }},
		{"a value moved to the next tensor", func(f *File) {
			f.Tensors[1].Data = append([]float64{f.Tensors[0].Data[5]}, f.Tensors[1].Data...)
			f.Tensors[0].Data = f.Tensors[0].Data[:5]
		}},
		{"one tensor fewer", func(f *File) { f.Tensors = f.Tensors[:3] }},
	} {
		f := sample()
		c.change(f)
		if d := f.Digest(); d == base {
			t.Errorf("%s changed, digest did not: %s", c.name, d)
		}
	}
}
