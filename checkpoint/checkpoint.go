// Package checkpoint reads and writes model files: a versioned, checksummed
// container of named float64 tensors plus free-form JSON metadata.
//
// Every model of the project (the GRU-GCN teacher, SDGNN bundles, ...) is
// stored in this one format, so that files can be identified, checked for
// corruption and versioned independently of the model that wrote them.
//
// # Layout
//
// All integers are little-endian.
//
//	offset  size  content
//	0       8     magic "PEMSMODL"
//	8       4     uint32 format version (FormatVersion)
//	12      8     uint64 header length H (at most MaxHeaderLen)
//	20      H     header: UTF-8 JSON {"kind", "meta", "tensors": [{"name", "shape"}]}
//	20+H    8·N   the data of each tensor, in header order, as float64 (IEEE 754)
//	end-32  32    SHA-256 of every byte before it
//
// where N is the total number of elements of all tensors. A tensor's element
// count is the product of its shape; an empty shape denotes a scalar with one
// element. Data are stored in the tensor's own (row-major by convention)
// order. Meta is stored compacted (insignificant whitespace removed) and is
// omitted from the header when empty.
//
// # Reading
//
// Read rejects a file whose magic differs (ErrNotModelFile) or whose version
// is not FormatVersion (ErrVersion) before reading the rest. It then verifies
// the checksum before interpreting the header, so that any corruption after
// the version field is reported as ErrChecksum; when the checksum fails and
// the file is also shorter than its header describes, the error matches
// ErrTruncated as well. Memory is allocated in proportion to the bytes
// actually read, never from a length field alone.
package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// FormatVersion is the version of the layout written by Write and the only
// one Read accepts.
const FormatVersion = 1

// MaxHeaderLen is the largest header, in bytes, that Read accepts. Headers
// hold only names, shapes and metadata, so a larger length means a corrupt
// or foreign file.
const MaxHeaderLen = 64 << 20

// magic identifies a model file.
const magic = "PEMSMODL"

const (
	prefixLen   = len(magic) + 4 + 8 // magic, version, header length
	checksumLen = sha256.Size
)

// Sentinel errors returned (wrapped) by Read and ReadFile; test for them with
// errors.Is.
var (
	// ErrNotModelFile means the input does not start with the model file
	// magic: it is some other kind of file.
	ErrNotModelFile = errors.New("not a model file")
	// ErrTruncated means the input ended before the layout was complete.
	ErrTruncated = errors.New("model file truncated")
	// ErrChecksum means the SHA-256 checksum does not match the content:
	// the file is corrupt.
	ErrChecksum = errors.New("model file checksum mismatch")
	// ErrVersion means the file has a format version this package cannot
	// read.
	ErrVersion = errors.New("unsupported model file version")
)

// File is the content of a model file.
type File struct {
	// Kind names the model type, e.g. "gru-gcn-teacher", "gru-teacher",
	// "sdgnn-bundle", so a loader can refuse a file meant for another model.
	Kind string
	// Meta holds the model configuration, normaliser and training state as
	// free-form JSON. It may be empty.
	Meta json.RawMessage
	// Tensors are the model parameters, with unique names.
	Tensors []Tensor
}

// Tensor is a named, shaped array of float64.
type Tensor struct {
	Name string
	// Shape gives the size of each dimension; the product must equal
	// len(Data). An empty shape is a scalar.
	Shape []int
	Data  []float64
}

// CheckFinite returns an error naming the first NaN or ±Inf value of t and
// its position (row and column for a matrix): weights that load but make
// every forecast NaN are a damaged or hostile file, not a model.
func (t *Tensor) CheckFinite() error {
	for i, v := range t.Data {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			continue
		}
		if len(t.Shape) == 2 && t.Shape[1] > 0 {
			return fmt.Errorf("tensor %s value %d (row %d, column %d) is %v, not finite", t.Name, i, i/t.Shape[1], i%t.Shape[1], v)
		}
		return fmt.Errorf("tensor %s value %d is %v, not finite", t.Name, i, v)
	}
	return nil
}

// Tensor returns the tensor with the given name. The error names the missing
// tensor and the file kind, so that loading the wrong kind of model is easy
// to diagnose.
func (f *File) Tensor(name string) (*Tensor, error) {
	for i := range f.Tensors {
		if f.Tensors[i].Name == name {
			return &f.Tensors[i], nil
		}
	}
	return nil, fmt.Errorf("checkpoint: %q model file has no tensor %q", f.Kind, name)
}

// Elements returns the number of values in all of f's tensors. What Read
// returns holds only values it read, so this is bounded by the file's size;
// a loader compares it with what the metadata asks for before allocating.
func (f *File) Elements() int {
	n := 0
	for _, t := range f.Tensors {
		n += len(t.Data)
	}
	return n
}

// Digest returns the SHA-256, in hex, of f's kind and tensors: every
// tensor's name, shape and values, in order. It leaves Meta out, so that
// two files of the same model written at different times (time stamps,
// training logs in Meta) have the same digest, and any change of a
// parameter gives another. A bundle's version is taken from it where none
// is given, and it is how two training runs, on two machines say, are
// shown to have given the same model.
func (f *File) Digest() string {
	h := sha256.New()
	var buf [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	str := func(s string) {
		word(uint64(len(s)))
		h.Write([]byte(s))
	}
	str(f.Kind)
	word(uint64(len(f.Tensors)))
	for _, t := range f.Tensors {
		str(t.Name)
		word(uint64(len(t.Shape)))
		for _, d := range t.Shape {
			word(uint64(d))
		}
		word(uint64(len(t.Data)))
		for _, v := range t.Data {
			word(math.Float64bits(v))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// header is the JSON header of the layout.
type header struct {
	Kind    string          `json:"kind"`
	Meta    json.RawMessage `json:"meta,omitempty"`
	Tensors []tensorHeader  `json:"tensors"`
}

type tensorHeader struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
}

// elements returns the number of elements of shape and an error for a
// negative dimension or a count that overflows, or exceeds limit when limit
// is non-negative.
func elements(shape []int, limit int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt/8/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	if limit >= 0 && n > limit {
		return 0, fmt.Errorf("shape %v has %d elements, more than the %d left in the file", shape, n, limit)
	}
	return n, nil
}

// validate checks f before it is written.
func validate(f *File) (header, error) {
	h := header{Kind: f.Kind, Tensors: make([]tensorHeader, len(f.Tensors))}
	if len(f.Meta) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, f.Meta); err != nil {
			return h, fmt.Errorf("invalid meta JSON: %w", err)
		}
		h.Meta = buf.Bytes()
	}
	// The header is JSON, which holds text: a kind or name that is not
	// UTF-8 would be written with U+FFFD in place of its bad bytes, so
	// that it read back as another (two names, one duplicate).
	if !utf8.ValidString(f.Kind) {
		return h, fmt.Errorf("kind %q is not UTF-8", f.Kind)
	}
	seen := make(map[string]bool, len(f.Tensors))
	for i, t := range f.Tensors {
		if t.Name == "" {
			return h, fmt.Errorf("tensor %d has no name", i)
		}
		if !utf8.ValidString(t.Name) {
			return h, fmt.Errorf("tensor %d: name %q is not UTF-8", i, t.Name)
		}
		if seen[t.Name] {
			return h, fmt.Errorf("duplicate tensor name %q", t.Name)
		}
		seen[t.Name] = true
		n, err := elements(t.Shape, -1)
		if err != nil {
			return h, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if n != len(t.Data) {
			return h, fmt.Errorf("tensor %q: shape %v has %d elements but data has %d", t.Name, t.Shape, n, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		h.Tensors[i] = tensorHeader{Name: t.Name, Shape: shape}
	}
	return h, nil
}

// Write writes f to w in the model file layout. It validates f first: tensor
// names must be non-empty and unique, each shape's element count must equal
// the tensor's data length, the kind and names must be UTF-8, and Meta,
// when not empty, must be valid JSON.
func Write(w io.Writer, f *File) error {
	if f == nil {
		return errors.New("checkpoint: write: nil file")
	}
	h, err := validate(f)
	if err != nil {
		return fmt.Errorf("checkpoint: write %q: %w", f.Kind, err)
	}
	hdr, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("checkpoint: write %q: encoding header: %w", f.Kind, err)
	}

	sum := sha256.New()
	bw := bufio.NewWriterSize(io.MultiWriter(w, sum), 64<<10)
	var prefix [prefixLen]byte
	copy(prefix[:], magic)
	binary.LittleEndian.PutUint32(prefix[8:], FormatVersion)
	binary.LittleEndian.PutUint64(prefix[12:], uint64(len(hdr)))
	bw.Write(prefix[:]) // bufio.Writer keeps the first error; checked at Flush.
	bw.Write(hdr)
	var b [8]byte
	for _, t := range f.Tensors {
		for _, v := range t.Data {
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			bw.Write(b[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("checkpoint: write %q: %w", f.Kind, err)
	}
	if _, err := w.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("checkpoint: write %q: checksum: %w", f.Kind, err)
	}
	return nil
}

// Read reads a model file from r, verifying its magic, version and checksum.
// Errors wrap ErrNotModelFile, ErrVersion, ErrTruncated or ErrChecksum where
// they apply; see the package documentation for the order of the checks.
// Read consumes r to its end: trailing bytes after the checksum are an
// error.
func Read(r io.Reader) (*File, error) {
	var prefix [prefixLen]byte
	n, err := io.ReadFull(r, prefix[:])
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, fmt.Errorf("checkpoint: reading prefix: %w", err)
	}
	got := prefix[:n]
	m := min(n, len(magic))
	if string(got[:m]) != magic[:m] {
		return nil, fmt.Errorf("checkpoint: %w: the first bytes are %q, not %q", ErrNotModelFile, got[:m], magic)
	}
	if n >= 12 {
		if v := binary.LittleEndian.Uint32(got[8:12]); v != FormatVersion {
			return nil, fmt.Errorf("checkpoint: %w: found version %d, this program supports version %d", ErrVersion, v, FormatVersion)
		}
	}
	if n < prefixLen {
		return nil, fmt.Errorf("checkpoint: %w: expected at least %d bytes, got %d", ErrTruncated, prefixLen+checksumLen, n)
	}

	// The whole remainder is read so that the checksum can be verified
	// before any length field in it is trusted.
	rest, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: reading after %d bytes: %w", prefixLen, err)
	}
	total := prefixLen + len(rest)
	if len(rest) < checksumLen {
		return nil, fmt.Errorf("checkpoint: %w: expected at least %d bytes, got %d", ErrTruncated, prefixLen+checksumLen, total)
	}
	body := rest[:len(rest)-checksumLen]
	hdrLen := binary.LittleEndian.Uint64(prefix[12:])

	sum := sha256.New()
	sum.Write(prefix[:])
	sum.Write(body)
	if !bytes.Equal(sum.Sum(nil), rest[len(body):]) {
		if want, ok := describedLen(hdrLen, body); ok && want > uint64(total) {
			return nil, fmt.Errorf("checkpoint: %w: %w: the header describes %d bytes, got %d", ErrChecksum, ErrTruncated, want, total)
		}
		return nil, fmt.Errorf("checkpoint: %w", ErrChecksum)
	}

	// The checksum matches, so any inconsistency below was written that
	// way: it is reported as a malformed file.
	if hdrLen > MaxHeaderLen || hdrLen > uint64(len(body)) {
		return nil, fmt.Errorf("checkpoint: malformed file: header length %d exceeds the %d bytes available (limit %d)", hdrLen, len(body), MaxHeaderLen)
	}
	var h header
	if err := json.Unmarshal(body[:hdrLen], &h); err != nil {
		return nil, fmt.Errorf("checkpoint: malformed header: %w", err)
	}
	data := body[hdrLen:]
	f := &File{Kind: h.Kind, Tensors: make([]Tensor, len(h.Tensors))}
	if len(h.Meta) > 0 {
		f.Meta = h.Meta
	}
	seen := make(map[string]bool, len(h.Tensors))
	for i, th := range h.Tensors {
		if th.Name == "" || seen[th.Name] {
			return nil, fmt.Errorf("checkpoint: malformed header: tensor %d has an empty or duplicate name %q", i, th.Name)
		}
		seen[th.Name] = true
		n, err := elements(th.Shape, len(data)/8)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: malformed file: tensor %q: %w", th.Name, err)
		}
		t := Tensor{Name: th.Name, Shape: th.Shape, Data: make([]float64, n)}
		for j := range t.Data {
			t.Data[j] = math.Float64frombits(binary.LittleEndian.Uint64(data[8*j:]))
		}
		data = data[8*n:]
		f.Tensors[i] = t
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("checkpoint: malformed file: %d bytes of tensor data beyond the tensors in the header", len(data))
	}
	return f, nil
}

// describedLen returns the total file length that the header in body
// describes, and false if the header cannot be parsed from body.
func describedLen(hdrLen uint64, body []byte) (uint64, bool) {
	if hdrLen > MaxHeaderLen {
		return 0, false
	}
	if hdrLen > uint64(len(body)) {
		// The header itself is cut short.
		return uint64(prefixLen+checksumLen) + hdrLen, true
	}
	var h header
	if err := json.Unmarshal(body[:hdrLen], &h); err != nil {
		return 0, false
	}
	want := uint64(prefixLen+checksumLen) + hdrLen
	for _, t := range h.Tensors {
		n, err := elements(t.Shape, -1)
		if err != nil {
			return 0, false
		}
		want += 8 * uint64(n)
	}
	return want, true
}

// WriteFile writes f to the named file atomically (see WriteAtomic), so that
// a crash never leaves a partial model file at path. The file is created
// with mode 0644.
func WriteFile(path string, f *File) error {
	return WriteAtomic(path, func(w io.Writer) error { return Write(w, f) })
}

// WriteAtomic writes the named file with write: into a temporary file in the
// same directory, flushed to stable storage and renamed over path, so that a
// crash or a failing write leaves either the old file or the new one, never
// a part. The file has mode 0644. Model files, the forecaster's state and
// result tables written while a long run goes on all need this.
func WriteAtomic(path string, write func(w io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// Removed unless renamed: on an error, and on a panic in write too.
	renamed := false
	defer func() {
		if !renamed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	renamed = true
	// Make the rename itself durable. Not every system can sync a
	// directory, so a failure here is not reported.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// ReadFile reads the named model file. Errors include the path and wrap the
// errors of Read.
func ReadFile(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer fh.Close()
	f, err := Read(bufio.NewReader(fh))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
