package pems

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"

	"github.com/sbinet/npyio/npy"
	"github.com/sbinet/npyio/npz"
)

// SeriesKey is the name of the array that holds the series in a release
// .npz file. NumPy stores it as the archive member "data.npy".
const SeriesKey = "data"

// Series is a multichannel series in the release layout, row-major
// (step, node, channel), the same order as the (T, N, C) NumPy array.
type Series struct {
	Steps, Nodes, Channels int

	// Data holds the values, Data[(t*Nodes+i)*Channels+c].
	Data []float64
}

// At returns the value of channel c at node i and step t.
// At panics if an index is out of range, as slice indexing does.
func (s *Series) At(t, i, c int) float64 {
	if uint(t) >= uint(s.Steps) || uint(i) >= uint(s.Nodes) || uint(c) >= uint(s.Channels) {
		panic(fmt.Sprintf("pems: Series.At(%d, %d, %d) out of range (%d, %d, %d)", t, i, c, s.Steps, s.Nodes, s.Channels))
	}
	return s.Data[(t*s.Nodes+i)*s.Channels+c]
}

// validate reports whether the shape of s is positive and matches len(s.Data).
func (s *Series) validate() error {
	if s == nil {
		return errors.New("nil series")
	}
	if s.Steps <= 0 || s.Nodes <= 0 || s.Channels <= 0 {
		return fmt.Errorf("invalid shape (%d, %d, %d): every dimension must be positive", s.Steps, s.Nodes, s.Channels)
	}
	n, ok := product([]int{s.Steps, s.Nodes, s.Channels})
	if !ok || n != len(s.Data) {
		return fmt.Errorf("shape (%d, %d, %d) does not match %d values", s.Steps, s.Nodes, s.Channels, len(s.Data))
	}
	return nil
}

// product returns the product of dims and whether it fits in an int.
func product(dims []int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// ReadNPZ reads the array named "data" from the NumPy .npz archive at path,
// as written by numpy.savez or numpy.savez_compressed in the PeMS release.
//
// The array must be float64, float32 or an integer type of 1 to 8 bytes
// (converted to float64), of either byte order and in C or Fortran order,
// with shape (T, N, C) or (T, N); the latter is read as C = 1. Errors name the file and say what was wrong: not a zip
// archive or truncated, no "data" array, an unsupported dtype or shape, or
// fewer values than the shape requires.
func ReadNPZ(path string) (*Series, error) {
	s, err := readNPZ(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, nil
}

func readNPZ(path string) (*Series, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, err := npz.NewReader(f, fi.Size())
	if err != nil {
		if zerr := errors.Unwrap(err); zerr != nil {
			err = zerr // drop npyio's prefix, which repeats the path
		}
		return nil, fmt.Errorf("not a zip archive, or truncated: %w", err)
	}

	key := ""
	for _, k := range r.Keys() {
		if k == SeriesKey+".npy" || k == SeriesKey {
			key = k
			break
		}
	}
	if key == "" {
		return nil, fmt.Errorf("no array named %q in archive (arrays: %s)", SeriesKey, strings.Join(arrayNames(r.Keys()), ", "))
	}
	rc, err := r.Open(key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 1<<16)

	if err := checkNPYHeaderLen(br); err != nil {
		return nil, fmt.Errorf("array %q: %w", SeriesKey, err)
	}
	hdr, err := readNPYHeader(py2Shape(br))
	if err != nil {
		return nil, fmt.Errorf("array %q: %w", SeriesKey, err)
	}
	dt, err := parseDtype(hdr.Descr.Type)
	if err != nil {
		return nil, fmt.Errorf("array %q: %w", SeriesKey, err)
	}
	shape := hdr.Descr.Shape
	if len(shape) != 2 && len(shape) != 3 {
		return nil, fmt.Errorf("array %q has shape %v, want (steps, nodes, channels) or (steps, nodes)", SeriesKey, shape)
	}
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("array %q has shape %v: every dimension must be positive", SeriesKey, shape)
		}
	}
	n, ok := product(shape)
	if !ok || n > math.MaxInt/8 {
		return nil, fmt.Errorf("array %q has shape %v: too large", SeriesKey, shape)
	}

	data, err := decodeFloats(br, n, dt)
	if err != nil {
		return nil, fmt.Errorf("array %q: %w", SeriesKey, err)
	}
	// Reading to the end makes archive/zip verify the member's CRC-32.
	if extra, err := io.Copy(io.Discard, br); err != nil {
		return nil, fmt.Errorf("array %q: %w", SeriesKey, err)
	} else if extra != 0 {
		return nil, fmt.Errorf("array %q: %d bytes after the %d values of shape %v", SeriesKey, extra, n, shape)
	}

	s := &Series{Steps: shape[0], Nodes: shape[1], Channels: 1, Data: data}
	if len(shape) == 3 {
		s.Channels = shape[2]
	}
	if hdr.Descr.Fortran {
		s.Data = fromFortran(data, shape)
	}
	return s, nil
}

// arrayNames returns the names of the arrays of an npz archive, without
// NumPy's ".npy" suffix.
func arrayNames(keys []string) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = strings.TrimSuffix(k, ".npy")
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return names
}

// py2Long is a dimension of a shape as Python 2 wrote it where it was a
// long: 16992L.
var py2Long = regexp.MustCompile(`(\d)L`)

// py2Shape returns what to read br's npy header from: br itself, or, for
// a header that Python 2 wrote with long dimensions ((16992L, 307L, 3L),
// which NumPy reads and npyio does not), that header without the L
// suffixes, padded to its length, and br after it. A format 3.0 header,
// which differs from 2.0 only in allowing UTF-8 in its text and which
// npyio refuses, is presented as 2.0. Anything it does not recognise is
// left to readNPYHeader to report.
func py2Shape(br *bufio.Reader) io.Reader {
	version, off, n, ok := npyPrefix(br)
	if !ok {
		return br
	}
	full, err := br.Peek(off + n)
	if err != nil || (version != 3 && !py2Long.Match(full[off:])) {
		return br
	}
	fixed := bytes.TrimRight(py2Long.ReplaceAll(full[off:], []byte("$1")), "\n")
	hdr := make([]byte, 0, off+n)
	hdr = append(hdr, full[:off]...)
	if hdr[6] == 3 {
		hdr[6] = 2 // same layout as 2.0: 4-byte header length
	}
	hdr = append(hdr, fixed...)
	for len(hdr) < off+n-1 {
		hdr = append(hdr, ' ')
	}
	hdr = append(hdr, '\n')
	br.Discard(off + n) // peeked: cannot fail
	return io.MultiReader(bytes.NewReader(hdr), br)
}

// npyPrefix peeks at the fixed start of an npy header in br: its major
// version, where its text starts and the text's stated length. ok is
// false for data without the npy magic or of a version other than 1, 2
// or 3, which readNPYHeader reports.
func npyPrefix(br *bufio.Reader) (version byte, off, n int, ok bool) {
	pre, err := br.Peek(12)
	if err != nil || !bytes.Equal(pre[:6], npy.Magic[:]) {
		return 0, 0, 0, false
	}
	switch pre[6] {
	case 1:
		return 1, 10, int(binary.LittleEndian.Uint16(pre[8:10])), true
	case 2, 3:
		return pre[6], 12, int(binary.LittleEndian.Uint32(pre[8:12])), true
	}
	return 0, 0, 0, false
}

// maxNPYHeader is the longest npy header text ReadNPZ accepts, in bytes:
// numpy.load's default max_header_size. The headers of the arrays it
// reads are about 120 bytes.
const maxNPYHeader = 10000

// checkNPYHeaderLen reports an npy header whose stated length is
// implausible or runs past the end of the data. npyio allocates the
// stated length (up to 4 GiB for format 2.0) before reading, scans it,
// and on a short header slices out of range. Data that does not start
// with the npy magic is left to readNPYHeader to report.
func checkNPYHeaderLen(br *bufio.Reader) error {
	_, off, n, ok := npyPrefix(br)
	if !ok {
		return nil
	}
	if n > maxNPYHeader {
		return fmt.Errorf("corrupt npy header: states a length of %d bytes, more than the %d NumPy reads", n, maxNPYHeader)
	}
	if _, err := br.Peek(off + n); err != nil {
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		return fmt.Errorf("truncated npy header: %d of its %d bytes present", max(br.Buffered()-off, 0), n)
	}
	return nil
}

// readNPYHeader parses an npy header with npyio. npyio slices the header
// text without bounds checks, so a panic on a malformed header is turned
// into an error here.
func readNPYHeader(r io.Reader) (hdr npy.Header, err error) {
	defer func() {
		if e := recover(); e != nil {
			err = fmt.Errorf("malformed npy header: %v", e)
		}
	}()
	nr, err := npy.NewReader(r)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return hdr, fmt.Errorf("truncated or corrupt npy header: %w", err)
		}
		return hdr, fmt.Errorf("bad npy header: %w", err)
	}
	return nr.Header, nil
}

// dtype is a NumPy element type that ReadNPZ reads: its byte order, kind
// ('f' float, 'i' signed or 'u' unsigned integer) and size in bytes.
type dtype struct {
	order binary.ByteOrder
	kind  byte
	size  int
}

// parseDtype accepts the NumPy type strings of float64 and float32 and of
// the signed and unsigned integers of 1, 2, 4 and 8 bytes, of either byte
// order. Integer series are accepted because flows are counts, and some
// releases of the PeMS files store them so.
func parseDtype(descr string) (dtype, error) {
	dt := dtype{order: binary.NativeEndian}
	t := descr
	if t != "" {
		switch t[0] {
		case '<':
			dt.order, t = binary.LittleEndian, t[1:]
		case '>':
			dt.order, t = binary.BigEndian, t[1:]
		case '=', '|':
			t = t[1:]
		}
	}
	switch t {
	case "f8", "f4", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8":
		dt.kind, dt.size = t[0], int(t[1]-'0')
		return dt, nil
	}
	return dtype{}, fmt.Errorf("unsupported dtype %q: want float64, float32 or an integer type", descr)
}

// value returns the element of type dt at the start of b as a float64. An
// 8-byte integer beyond ±2⁵³ is rounded to the nearest float64.
func (dt dtype) value(b []byte) float64 {
	switch dt.size {
	case 1:
		if dt.kind == 'i' {
			return float64(int8(b[0]))
		}
		return float64(b[0])
	case 2:
		u := dt.order.Uint16(b)
		if dt.kind == 'i' {
			return float64(int16(u))
		}
		return float64(u)
	case 4:
		u := dt.order.Uint32(b)
		switch dt.kind {
		case 'f':
			return float64(math.Float32frombits(u))
		case 'i':
			return float64(int32(u))
		}
		return float64(u)
	}
	u := dt.order.Uint64(b)
	switch dt.kind {
	case 'f':
		return math.Float64frombits(u)
	case 'i':
		return float64(int64(u))
	}
	return float64(u)
}

// put writes v as an element of type dt to the start of b. Integer types
// take v converted toward zero; it is for tests, which write whole numbers
// in range.
func (dt dtype) put(b []byte, v float64) {
	switch {
	case dt.kind == 'f' && dt.size == 8:
		dt.order.PutUint64(b, math.Float64bits(v))
	case dt.kind == 'f':
		dt.order.PutUint32(b, math.Float32bits(float32(v)))
	case dt.size == 1:
		b[0] = byte(int64(v))
	case dt.size == 2:
		dt.order.PutUint16(b, uint16(int64(v)))
	case dt.size == 4:
		dt.order.PutUint32(b, uint32(int64(v)))
	case dt.kind == 'u':
		dt.order.PutUint64(b, uint64(v))
	default:
		dt.order.PutUint64(b, uint64(int64(v)))
	}
}

// decodeFloats reads n values of type dt from r as float64. It grows the
// result as data arrives so that a corrupt shape cannot force a huge
// allocation up front.
func decodeFloats(r io.Reader, n int, dt dtype) ([]float64, error) {
	const chunk = 1 << 13 // values per read
	size := dt.size
	data := make([]float64, 0, min(n, 1<<22))
	buf := make([]byte, chunk*size)
	for len(data) < n {
		m := min(n-len(data), chunk)
		b := buf[:m*size]
		if k, err := io.ReadFull(r, b); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated or corrupt: %d of %d values present", len(data)+k/size, n)
			}
			return nil, err
		}
		switch {
		case dt.kind == 'f' && size == 8:
			for i := 0; i < m; i++ {
				data = append(data, math.Float64frombits(dt.order.Uint64(b[8*i:])))
			}
		default:
			for i := 0; i < m; i++ {
				data = append(data, dt.value(b[size*i:]))
			}
		}
	}
	return data, nil
}

// fromFortran reorders column-major data of the given shape to row-major.
func fromFortran(data []float64, shape []int) []float64 {
	if len(shape) == 2 {
		shape = []int{shape[0], shape[1], 1}
	}
	t, nn, c := shape[0], shape[1], shape[2]
	out := make([]float64, len(data))
	for k := 0; k < c; k++ {
		for i := 0; i < nn; i++ {
			for s := 0; s < t; s++ {
				out[(s*nn+i)*c+k] = data[s+t*(i+nn*k)]
			}
		}
	}
	return out
}

// WriteNPZ writes s to path as a NumPy .npz archive holding one float64
// array "data" of shape (Steps, Nodes, Channels), the layout of the PeMS
// release. It lets tests and users make small files of the same layout; the
// files are readable by numpy.load as well as ReadNPZ.
func WriteNPZ(path string, s *Series) error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	shape := []int{s.Steps, s.Nodes, s.Channels}
	if err := writeNPZArray(path, SeriesKey, "<f8", shape, s.Data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeNPZArray writes one array named name with dtype descr (one that
// parseDtype accepts, such as "<f8", ">f4" or "<i8") and the given C-order
// shape to a new npz archive at path.
// It writes the npy format 1.0 header itself because npyio's writer only
// records 1-D and 2-D shapes.
func writeNPZArray(path, name, descr string, shape []int, data []float64) (err error) {
	dt, err := parseDtype(descr)
	if err != nil {
		return err
	}
	if n, ok := product(shape); !ok || n != len(data) {
		return fmt.Errorf("shape %v does not match %d values", shape, len(data))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(path)
		}
	}()

	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name + ".npy", Method: zip.Deflate})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.Write(npyHeader(descr, shape)); err != nil {
		return err
	}
	var b [8]byte
	for _, v := range data {
		dt.put(b[:], v)
		if _, err := bw.Write(b[:dt.size]); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// npyHeader returns an npy format 1.0 header padded, as NumPy does, so that
// the data starts at a multiple of 64 bytes.
func npyHeader(descr string, shape []int) []byte {
	var sh strings.Builder
	sh.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			sh.WriteString(", ")
		}
		fmt.Fprint(&sh, d)
	}
	if len(shape) == 1 {
		sh.WriteByte(',')
	}
	sh.WriteByte(')')
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, sh.String())

	const prefix = 10 // magic (6) + version (2) + header length (2)
	total := prefix + len(dict) + 1
	total = (total + 63) / 64 * 64
	var buf bytes.Buffer
	buf.Write(npy.Magic[:])
	buf.Write([]byte{1, 0})
	binary.Write(&buf, binary.LittleEndian, uint16(total-prefix))
	buf.WriteString(dict)
	for buf.Len() < total-1 {
		buf.WriteByte(' ')
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}
