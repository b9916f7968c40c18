package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Fetcher downloads files. Its zero value is usable: it takes the
// defaults below.
type Fetcher struct {
	// Client makes the requests; nil: http.DefaultClient. Its Timeout, if
	// any, bounds a whole transfer: Stall is the better bound for large
	// files on slow links.
	Client *http.Client
	// Progress, if not nil, receives a line when a download starts, every
	// tenth of it (at most one a second) and when it is verified.
	Progress io.Writer
	// Stall gives up a transfer that receives nothing for this long,
	// waiting for the response included; 0: 30 s.
	Stall time.Duration
	// Retries is how many times an interrupted or stalled transfer is
	// resumed before Download fails; negative: none; 0: 3.
	Retries int
	// Backoff is the pause before the first resumption, doubled before
	// each next one; 0: 1 s.
	Backoff time.Duration
}

func (f *Fetcher) client() *http.Client {
	if f.Client != nil {
		return f.Client
	}
	return http.DefaultClient
}

func (f *Fetcher) stall() time.Duration {
	if f.Stall > 0 {
		return f.Stall
	}
	return 30 * time.Second
}

func (f *Fetcher) retries() int {
	switch {
	case f.Retries < 0:
		return 0
	case f.Retries == 0:
		return 3
	}
	return f.Retries
}

func (f *Fetcher) backoff() time.Duration {
	if f.Backoff > 0 {
		return f.Backoff
	}
	return time.Second
}

func (f *Fetcher) say(format string, args ...any) {
	if f.Progress != nil {
		fmt.Fprintf(f.Progress, format+"\n", args...)
	}
}

// PartSuffix ends the name of a file being downloaded, beside its target.
const PartSuffix = ".part"

// Download fetches url into dest and checks it against src's sum (its
// SHA-256, else its git blob ID) and size, where src knows them. A dest
// that already matches is left as it is, without a request. The bytes go
// to dest+".part" first, which is renamed to dest once verified: dest is
// never a partial or unverified file. An interrupted or stalled transfer
// is resumed from the .part with a Range request (or restarted, where the
// server answers a range with the whole file) up to f.Retries times; if it
// still fails the .part is kept, and a later Download resumes it. A
// download that does not verify is removed, and the error names dest, the
// sum wanted and the sum got.
func (f *Fetcher) Download(ctx context.Context, url, dest string, src Source) error {
	if st, err := Check(dest, src); err != nil {
		return err
	} else if st.State == Verified {
		f.say("%s: present, %s", dest, st.Describe(src))
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return fmt.Errorf("download %s: %w", dest, err)
	}
	part := dest + PartSuffix
	f.say("%s: downloading %s", dest, url)
	wait := f.backoff()
	for attempt := 0; ; attempt++ {
		err := f.transfer(ctx, url, part, src)
		if err == nil {
			break
		}
		var again *retryable
		if !errors.As(err, &again) || attempt >= f.retries() || ctx.Err() != nil {
			return fmt.Errorf("download %s from %s: %w", dest, url, err)
		}
		f.say("%s: %v; resuming in %v", dest, err, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("download %s from %s: %w", dest, url, ctx.Err())
		}
		wait *= 2
	}
	return f.install(part, dest, url, src)
}

// install verifies the downloaded part against src and renames it to
// dest; a part that does not verify is removed.
func (f *Fetcher) install(part, dest, url string, src Source) error {
	st, err := Check(part, src)
	if err != nil {
		return err
	}
	if src.Size > 0 && st.Size != src.Size {
		hint := lfsHint(part, src)
		os.Remove(part)
		return fmt.Errorf("download %s from %s: got %d bytes, want %d%s (removed)", dest, url, st.Size, src.Size, hint)
	}
	if st.State != Verified && st.Want != "" {
		hint := lfsHint(part, src)
		os.Remove(part)
		kind := "sha256"
		if src.SHA256 == "" {
			kind = "git blob ID"
		}
		return fmt.Errorf("download %s from %s: %s %s, want %s%s (removed)", dest, url, kind, st.Got, st.Want, hint)
	}
	if err := syncFile(part); err != nil {
		return fmt.Errorf("download %s: %w", dest, err)
	}
	if err := os.Rename(part, dest); err != nil {
		return fmt.Errorf("download %s: %w", dest, err)
	}
	syncDir(filepath.Dir(dest))
	f.say("%s: %d bytes, %s", dest, st.Size, st.Describe(src))
	return nil
}

// lfsHint says, for a download that holds a Git LFS pointer rather than
// the file, where the content is.
func lfsHint(part string, src Source) string {
	b := make([]byte, 64)
	fh, err := os.Open(part)
	if err != nil {
		return ""
	}
	defer fh.Close()
	n, _ := io.ReadFull(fh, b)
	if !strings.HasPrefix(string(b[:n]), "version https://git-lfs") {
		return ""
	}
	if src.Repo == "" {
		return " (a Git LFS pointer, not the file)"
	}
	return fmt.Sprintf(" (a Git LFS pointer, not the file: its content is at https://media.githubusercontent.com/media/%s/%s/%s)", src.Repo, src.Commit, src.Path)
}

// retryable marks a transfer error after which the part can be resumed.
type retryable struct{ err error }

func (e *retryable) Error() string { return e.err.Error() }
func (e *retryable) Unwrap() error { return e.err }

// transfer appends to part what the server sends from part's size on,
// restarting part where the server sends the whole file.
func (f *Fetcher) transfer(ctx context.Context, url, part string, src Source) error {
	off, err := partSize(part, src.Size)
	if err != nil {
		return err
	}
	if src.Size > 0 && off == src.Size {
		return nil // complete: install verifies it
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stalled := fmt.Errorf("nothing received for %v", f.stall())
	timer := time.AfterFunc(f.stall(), func() { cancel(stalled) })
	defer timer.Stop()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(off, 10)+"-")
	}
	resp, err := f.client().Do(req)
	if err != nil {
		return transferError(ctx, err)
	}
	defer resp.Body.Close()
	total := resp.ContentLength
	switch resp.StatusCode {
	case http.StatusOK:
		if off > 0 {
			f.say("%s: the server sends the whole file, not from byte %d: restarting", strings.TrimSuffix(part, PartSuffix), off)
		}
		off = 0
	case http.StatusPartialContent:
		start, size, ok := contentRange(resp.Header.Get("Content-Range"))
		if !ok || start != off {
			os.Remove(part)
			return &retryable{fmt.Errorf("the server resumed at %q, not at byte %d: restarting", resp.Header.Get("Content-Range"), off)}
		}
		total = size
	case http.StatusRequestedRangeNotSatisfiable:
		os.Remove(part) // longer than the file: start again
		return &retryable{fmt.Errorf("the server has no bytes from %d on: restarting", off)}
	default:
		err := fmt.Errorf("GET %s: %s", url, resp.Status)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return &retryable{err}
		}
		return err
	}
	if total < 0 {
		total = src.Size
	}
	return f.receive(ctx, resp.Body, part, off, total, src.Size, timer)
}

// receive writes body to part from offset off (truncating part there),
// resetting the stall timer on every read; total is the file's size where
// known, for the progress lines, and limit the most bytes the file may
// have (0: no limit).
func (f *Fetcher) receive(ctx context.Context, body io.Reader, part string, off, total, limit int64, timer *time.Timer) error {
	out, err := os.OpenFile(part, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := out.Truncate(off); err != nil {
		out.Close()
		return err
	}
	if _, err := out.Seek(off, io.SeekStart); err != nil {
		out.Close()
		return err
	}
	p := progress{f: f, name: strings.TrimSuffix(part, PartSuffix), total: total, done: off}
	buf := make([]byte, 64<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			timer.Reset(f.stall())
			if limit > 0 && p.done+int64(n) > limit {
				out.Close()
				os.Remove(part)
				return fmt.Errorf("the server sends more than the file's %d bytes", limit)
			}
			if _, err := out.Write(buf[:n]); err != nil {
				out.Close()
				return err
			}
			p.add(int64(n))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close() // what arrived stays, to resume from
			return transferError(ctx, rerr)
		}
	}
	return out.Close()
}

// transferError marks an error of a request or its body as resumable,
// naming a stall as such, unless the caller's context ended.
func transferError(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return &retryable{fmt.Errorf("stalled: %w", cause)}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &retryable{fmt.Errorf("interrupted: %w", err)}
}

// partSize returns the size of the partial download at path, 0 if there
// is none; a part longer than the file's size (limit, where known) is
// removed.
func partSize(path string, limit int64) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if limit > 0 && fi.Size() > limit {
		return 0, os.Remove(path)
	}
	return fi.Size(), nil
}

// contentRange parses "bytes START-END/SIZE"; size is -1 for "*".
func contentRange(h string) (start, size int64, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(spec, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		if size, err = strconv.ParseInt(sz, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return start, size, true
}

func syncFile(path string) error {
	fh, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// syncDir makes a rename in dir durable where the system allows it; an
// error is ignored, as some systems cannot sync a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// progress writes a line every tenth of a download, at most one a second.
type progress struct {
	f           *Fetcher
	name        string
	total, done int64
	tenth       int64
	last        time.Time
}

func (p *progress) add(n int64) {
	p.done += n
	if p.total <= 0 {
		return
	}
	tenth := p.done * 10 / p.total
	if tenth > p.tenth && (time.Since(p.last) >= time.Second || p.done == p.total) {
		p.tenth, p.last = tenth, time.Now()
		p.f.say("%s: %s of %s (%d%%)", p.name, mb(p.done), mb(p.total), p.done*100/p.total)
	}
}

// mb gives a size in megabytes, or kilobytes below one megabyte.
func mb(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
