package csvfeed

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// source opens the job's input, gzip-compressed or not: a file or
// standard input that starts with gzip's magic bytes is read through
// gzip, as exports are often kept.
func (j *Job) source(stdin io.Reader) (io.ReadCloser, string, error) {
	var (
		in   io.ReadCloser
		name string
	)
	if j.Path == "-" {
		in, name = io.NopCloser(stdin), "standard input"
	} else {
		f, err := os.Open(j.Path)
		if err != nil {
			return nil, "", fmt.Errorf("-csv: %w", err)
		}
		in, name = f, j.Path
	}
	br := bufio.NewReaderSize(in, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			in.Close()
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = &truncatedError{}
			}
			return nil, "", fmt.Errorf("-csv %s: %w", name, err)
		}
		return readCloser{gzipReader{zr}, in}, name, nil
	}
	if head, _ := br.Peek(6); len(head) > 0 {
		for _, c := range otherCompressions {
			if strings.HasPrefix(string(head), c.magic) {
				in.Close()
				how := fmt.Sprintf("%s %s | forecaster publish -csv - …", c.tool, j.Path)
				if j.Path == "-" {
					how = "pipe it through " + c.tool
				}
				return nil, "", fmt.Errorf("-csv %s: the input is %s, which publish does not read (plain or gzip-compressed CSV only): decompress it first (%s)", name, c.name, how)
			}
		}
	}
	return readCloser{br, in}, name, nil
}

// otherCompressions are the compressed formats that exports are often
// kept in, besides gzip, by their magic bytes: such an input is refused
// as what it is rather than as a CSV header of binary bytes.
var otherCompressions = []struct{ magic, name, tool string }{
	{"BZh", "bzip2-compressed", "bzip2 -dc"},
	{"\xfd7zXZ\x00", "xz-compressed", "xz -dc"},
	{"\x28\xb5\x2f\xfd", "zstd-compressed", "zstd -dc"},
	{"PK\x03\x04", "a zip archive", "unzip -p"},
}

// gzipReader reads a gzip stream, and a stream that ends before its end
// (a file cut short in a copy or a download) as a *truncatedError rather
// than a bare io.ErrUnexpectedEOF.
type gzipReader struct{ r *gzip.Reader }

func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = &truncatedError{}
	}
	return n, err
}

// truncatedError is a gzip-compressed input cut short: the rows read
// before the cut are whole, the rest of the file is not there. It wraps
// io.ErrUnexpectedEOF.
type truncatedError struct {
	after int // the last line read whole (1: the header; 0: not known)
}

func (e *truncatedError) Error() string {
	if e.after == 0 {
		return "truncated: the gzip stream ends before its end (unexpected EOF)"
	}
	return fmt.Sprintf("truncated: the gzip stream ends after line %d (unexpected EOF)", e.after)
}

func (e *truncatedError) Unwrap() error { return io.ErrUnexpectedEOF }

// readCloser reads from one reader and closes another beneath it.
type readCloser struct {
	io.Reader
	io.Closer
}
