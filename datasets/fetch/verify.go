package fetch

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
)

// State is what Check found of a file.
type State int

// States of a file.
const (
	Missing    State = iota // not in the data directory
	Verified                // matches its known SHA-256 or git blob ID
	Unverified              // present but matches no known sum
)

// Status is the result of checking a file against its Source.
type Status struct {
	State State
	// Got is the file's SHA-256, or its git blob ID for a source known by
	// that only, when it is present; Want the sum it was checked against.
	Got, Want string
	Size      int64 // bytes, when present
}

// String says what s is in a few words: "verified", "verified: ASTGCN
// release", "missing", "unverified (sha256 1a2b…, want 3c4d…)".
func (s Status) String() string {
	switch s.State {
	case Missing:
		return "missing"
	case Verified:
		return "verified"
	}
	return fmt.Sprintf("unverified (%s, want %s)", short(s.Got), short(s.Want))
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// Check checks the file at path against src's known sum: its SHA-256 if
// src has one, else its git blob ID.
func Check(path string, src Source) (Status, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Status{State: Missing}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("check %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Status{}, fmt.Errorf("check %s: %w", path, err)
	}
	st := Status{Size: fi.Size()}
	if src.SHA256 != "" {
		st.Want = src.SHA256
		st.Got, err = sha256Of(f)
	} else {
		st.Want = src.GitBlob
		st.Got, err = gitBlobOf(f, fi.Size())
	}
	if err != nil {
		return Status{}, fmt.Errorf("check %s: %w", path, err)
	}
	st.State = Unverified
	if st.Want != "" && st.Got == st.Want {
		st.State = Verified
	}
	return st, nil
}

// Describe is Status.String with the release named for a file known by
// its git blob ID: "verified: ASTGCN release".
func (s Status) Describe(src Source) string {
	if s.State == Verified && src.Release != "" {
		return "verified: " + src.Release
	}
	return s.String()
}

func sha256Of(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// gitBlobOf returns the git blob ID of the size bytes of r: the SHA-1 of
// "blob SIZE\x00" followed by them.
func gitBlobOf(r io.Reader, size int64) (string, error) {
	h := sha1.New()
	io.WriteString(h, "blob "+strconv.FormatInt(size, 10)+"\x00")
	n, err := io.Copy(h, r)
	if err != nil {
		return "", err
	}
	if n != size {
		return "", fmt.Errorf("read %d bytes of %d", n, size)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
