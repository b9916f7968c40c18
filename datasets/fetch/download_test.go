package fetch

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// content is a test file of n pseudo-random bytes and its Source.
func content(n int) ([]byte, Source) {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(b)
	return b, Source{Dataset: "test", File: "t/file.bin", Size: int64(n), SHA256: hex.EncodeToString(sum[:])}
}

// server serves body at every path through handle, recording the Range
// header of each request.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	ranges []string
}

func newServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, call int)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.ranges = append(s.ranges, r.Header.Get("Range"))
		call := len(s.ranges)
		s.mu.Unlock()
		handle(w, r, call)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

// serve answers as a file server does: ranges honoured.
func serve(body []byte) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		http.ServeContent(w, r, "f", time.Time{}, bytes.NewReader(body))
	}
}

// whole answers every request with the whole body, ignoring ranges.
func whole(body []byte) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}
}

// cut sends the headers of the whole body, then only its first n bytes,
// and drops the connection.
func cut(body []byte, n int) func(http.ResponseWriter, *http.Request, int) {
	return func(w http.ResponseWriter, r *http.Request, _ int) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:n])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
}

// quick is a Fetcher that gives up soon and does not retry, writing its
// progress to progress where that is not nil.
func quick(progress *bytes.Buffer) *Fetcher {
	f := &Fetcher{Stall: 2 * time.Second, Retries: -1, Backoff: time.Millisecond}
	if progress != nil {
		f.Progress = progress
	}
	return f
}

func checkFile(t *testing.T, dest string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, not the file's %d", dest, len(got), len(want))
	}
	if _, err := os.Stat(dest + PartSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", dest+PartSuffix, err)
	}
}

func TestDownloadGood(t *testing.T) {
	body, src := content(300_000)
	srv := newServer(t, serve(body))
	dest := filepath.Join(t.TempDir(), "sub", "file.bin")
	var log bytes.Buffer
	f := quick(&log)
	if err := f.Download(context.Background(), srv.URL+"/f", dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	for _, want := range []string{"downloading " + srv.URL + "/f", "(100%)", "300000 bytes, verified"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, log.String())
		}
	}
	// Present and verified: no request.
	log.Reset()
	if err := f.Download(context.Background(), srv.URL+"/f", dest, src); err != nil || len(srv.calls()) != 1 || !strings.Contains(log.String(), "present, verified") {
		t.Errorf("second download: %v, %d requests, progress %q", err, len(srv.calls()), log.String())
	}
}

// TestDownloadRefused: what does not verify or cannot be had fails,
// naming the file and why, and leaves neither the file nor a part.
func TestDownloadRefused(t *testing.T) {
	body, src := content(100_000)
	wrong := bytes.Clone(body)
	wrong[5000] ^= 1
	sum := sha256.Sum256(wrong)
	for _, tc := range []struct {
		name     string
		handle   func(http.ResponseWriter, *http.Request, int)
		want     []string
		requests int
	}{
		{"truncated", serve(body[:90_000]), []string{"got 90000 bytes, want 100000"}, 1},
		{"wrong bytes", serve(wrong), []string{"sha256 " + hex.EncodeToString(sum[:]) + ", want " + src.SHA256}, 1},
		{"longer", serve(append(bytes.Clone(body), 'x')), []string{"more than the file's 100000 bytes"}, 1},
		{"not found", func(w http.ResponseWriter, r *http.Request, _ int) { http.NotFound(w, r) }, []string{"404 Not Found"}, 1},
		{"server error, retried", func(w http.ResponseWriter, r *http.Request, _ int) {
			http.Error(w, "busy", http.StatusServiceUnavailable)
		}, []string{"503 Service Unavailable"}, 3},
		{"LFS pointer", func(w http.ResponseWriter, r *http.Request, _ int) {
			fmt.Fprint(w, "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 100000\n")
		}, []string{"a Git LFS pointer", "media.githubusercontent.com/media/o/r/c/p"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, tc.handle)
			dest := filepath.Join(t.TempDir(), "file.bin")
			f := quick(nil)
			f.Retries = 2
			src := src
			src.Repo, src.Commit, src.Path = "o/r", "c", "p"
			err := f.Download(context.Background(), srv.URL+"/f", dest, src)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, dest, srv.URL+"/f") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, p := range []string{dest, dest + PartSuffix} {
				if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s exists after a failed download", p)
				}
			}
			if n := len(srv.calls()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestDownloadResume: a transfer cut short keeps what arrived; the next
// download asks for the rest with a Range request and completes the file.
func TestDownloadResume(t *testing.T) {
	body, src := content(400_000)
	dest := filepath.Join(t.TempDir(), "file.bin")
	broken := newServer(t, cut(body, 150_000))
	err := quick(nil).Download(context.Background(), broken.URL, dest, src)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cut transfer: %v", err)
	}
	fi, err := os.Stat(dest + PartSuffix)
	if err != nil || fi.Size() == 0 || fi.Size() > 150_000 {
		t.Fatalf("part after the cut: %v, %v", fi, err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the target exists after a cut transfer")
	}
	good := newServer(t, serve(body))
	if err := quick(nil).Download(context.Background(), good.URL, dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	if got, want := good.calls(), []string{fmt.Sprintf("bytes=%d-", fi.Size())}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("requests %q, want %q", got, want)
	}
}

// TestDownloadResumesInOneCall: with retries, a cut transfer is resumed
// by the same Download.
func TestDownloadResumesInOneCall(t *testing.T) {
	body, src := content(200_000)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, call int) {
		if call == 1 {
			cut(body, 70_000)(w, r, call)
		}
		serve(body)(w, r, call)
	})
	dest := filepath.Join(t.TempDir(), "file.bin")
	var log bytes.Buffer
	f := quick(&log)
	f.Retries = 1
	if err := f.Download(context.Background(), srv.URL, dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	if c := srv.calls(); len(c) != 2 || c[0] != "" || !strings.HasPrefix(c[1], "bytes=") || c[1] == "bytes=0-" {
		t.Errorf("requests %q, want a whole one then a range", c)
	}
	if !strings.Contains(log.String(), "interrupted") || !strings.Contains(log.String(), "resuming") {
		t.Errorf("progress does not say it resumed:\n%s", log.String())
	}
}

// TestDownloadRangeIgnored: a server that answers a range with the whole
// file makes the download restart, whatever the part held.
func TestDownloadRangeIgnored(t *testing.T) {
	body, src := content(120_000)
	for _, part := range [][]byte{body[:50_000], bytes.Repeat([]byte{7}, 50_000)} {
		dest := filepath.Join(t.TempDir(), "file.bin")
		if err := os.WriteFile(dest+PartSuffix, part, 0o644); err != nil {
			t.Fatal(err)
		}
		srv := newServer(t, whole(body))
		var log bytes.Buffer
		if err := quick(&log).Download(context.Background(), srv.URL, dest, src); err != nil {
			t.Fatal(err)
		}
		checkFile(t, dest, body)
		if c := srv.calls(); len(c) != 1 || c[0] != "bytes=50000-" || !strings.Contains(log.String(), "restarting") {
			t.Errorf("requests %q, progress %q", c, log.String())
		}
	}
}

// TestDownloadBadPart: a part whose bytes are not the file's, resumed by a
// server that honours ranges, fails verification and is removed, so that
// the next download starts clean.
func TestDownloadBadPart(t *testing.T) {
	body, src := content(120_000)
	dest := filepath.Join(t.TempDir(), "file.bin")
	if err := os.WriteFile(dest+PartSuffix, bytes.Repeat([]byte{7}, 50_000), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, serve(body))
	err := quick(nil).Download(context.Background(), srv.URL, dest, src)
	if err == nil || !strings.Contains(err.Error(), "want "+src.SHA256) {
		t.Fatalf("resumed bad part: %v", err)
	}
	if err := quick(nil).Download(context.Background(), srv.URL, dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	if c := srv.calls(); len(c) != 2 || c[1] != "" {
		t.Errorf("requests %q, want the second from the start", c)
	}
}

// TestDownloadSlow: a server that sends nothing stalls the transfer, which
// is given up after Stall; one that stops halfway is resumed; the
// caller's deadline ends a download whatever the server does.
func TestDownloadSlow(t *testing.T) {
	body, src := content(100_000)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	silent := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	f := quick(nil)
	f.Stall = 100 * time.Millisecond
	dest := filepath.Join(t.TempDir(), "file.bin")
	start := time.Now()
	err := f.Download(context.Background(), silent.URL, dest, src)
	if err == nil || !strings.Contains(err.Error(), "stalled: nothing received for 100ms") || time.Since(start) > 5*time.Second {
		t.Errorf("silent server: %v after %v", err, time.Since(start))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	f.Stall, f.Retries = time.Minute, 5
	err = f.Download(ctx, silent.URL, dest, src)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
		t.Errorf("deadline: %v", err)
	}

	pausing := newServer(t, func(w http.ResponseWriter, r *http.Request, call int) {
		if call > 1 {
			serve(body)(w, r, call)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:40_000])
		w.(http.Flusher).Flush()
		select {
		case <-hold:
		case <-r.Context().Done():
		}
	})
	f.Stall, f.Retries = 200*time.Millisecond, 1
	if err := f.Download(context.Background(), pausing.URL, dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	if c := pausing.calls(); len(c) != 2 || c[1] != "bytes=40000-" {
		t.Errorf("requests %q, want the second from byte 40000", c)
	}
}

// TestDownloadGitBlob: a file known by its git blob ID (the PeMS series)
// verifies by it and is named for its release.
func TestDownloadGitBlob(t *testing.T) {
	body, _ := content(50_000)
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(body))
	h.Write(body)
	src := Source{Dataset: "pems04", File: "pems/pems04/PEMS04.npz", GitBlob: hex.EncodeToString(h.Sum(nil)), Release: "ASTGCN release"}
	srv := newServer(t, serve(body))
	dest := filepath.Join(t.TempDir(), "PEMS04.npz")
	var log bytes.Buffer
	if err := quick(&log).Download(context.Background(), srv.URL, dest, src); err != nil {
		t.Fatal(err)
	}
	checkFile(t, dest, body)
	if st, err := Check(dest, src); err != nil || st.Describe(src) != "verified: ASTGCN release" || !strings.Contains(log.String(), "verified: ASTGCN release") {
		t.Errorf("check: %v %v; progress %q", st, err, log.String())
	}
	other := newServer(t, serve(body[1:]))
	err := quick(nil).Download(context.Background(), other.URL, filepath.Join(t.TempDir(), "x.npz"), src)
	if err == nil || !strings.Contains(err.Error(), "git blob ID") || !strings.Contains(err.Error(), "want "+src.GitBlob) {
		t.Errorf("another file: %v", err)
	}
}

func TestContentRange(t *testing.T) {
	for _, tc := range []struct {
		h           string
		start, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-9/*", 0, -1, true},
		{"bytes */200", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"", 0, 0, false},
	} {
		start, size, ok := contentRange(tc.h)
		if ok != tc.ok || (ok && (start != tc.start || size != tc.size)) {
			t.Errorf("contentRange(%q) = %d, %d, %v", tc.h, start, size, ok)
		}
	}
}
