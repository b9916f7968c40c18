package stream

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

func TestThrottle(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	th := throttle{every: 10 * time.Second}
	for _, step := range []struct {
		kind       string
		at         time.Duration
		ok         bool
		suppressed int
	}{
		{"dial %s", 0, true, 0},
		{"dial %s", time.Second, false, 0},
		{"read %d", 2 * time.Second, true, 0}, // another kind: its own clock
		{"dial %s", 3 * time.Second, false, 0},
		{"dial %s", 9 * time.Second, false, 0},
		{"dial %s", 10 * time.Second, true, 3},
		{"dial %s", 25 * time.Second, true, 0},
		{"read %d", 25 * time.Second, true, 0},
	} {
		ok, n := th.allow(step.kind, t0.Add(step.at))
		if ok != step.ok || n != step.suppressed {
			t.Errorf("%q at %v: allow %v with %d held back, want %v with %d", step.kind, step.at, ok, n, step.ok, step.suppressed)
		}
	}
}

// TestReaderErrorLogger feeds kafka-go's error lines, in turn, to one
// logger: the EOF of a fetch at an open transaction is information once a
// minute, the rest warnings once per 10 s and kind.
func TestReaderErrorLogger(t *testing.T) {
	const unknown = "the kafka reader got an unknown error reading partition %d of %s at offset %d: %s"
	var logs bytes.Buffer
	logger := readerErrorLogger(zerolog.New(&logs))
	for _, step := range []struct {
		name string
		msg  string
		args []any
		want string // the line logged, "" none
	}{
		{"EOF at an open transaction", unknown, []any{2, "readings", int64(40), io.ErrUnexpectedEOF},
			`{"level":"info","component":"kafka-reader","partition":2,"offset":40,"similar_held_back":0,"message":"a fetch ended without records below the high watermark, as at a transaction still open: kafka-go reconnects"}`},
		{"the same within the minute", unknown, []any{1, "readings", int64(7), fmt.Errorf("read: %w", io.ErrUnexpectedEOF)}, ""},
		{"another error of the kind", unknown, []any{2, "readings", int64(40), errors.New("connection reset")},
			`{"level":"warn","component":"kafka-reader","similar_held_back":0,"message":"the kafka reader got an unknown error reading partition 2 of readings at offset 40: connection reset"}`},
		{"held back for 10 s", unknown, []any{2, "readings", int64(41), errors.New("connection reset")}, ""},
		{"another kind", "error initializing the kafka reader for partition %d of %s: %s", []any{0, "readings", io.ErrUnexpectedEOF},
			`{"level":"warn","component":"kafka-reader","similar_held_back":0,"message":"error initializing the kafka reader for partition 0 of readings: unexpected EOF"}`},
	} {
		logs.Reset()
		logger(step.msg, step.args...)
		if got := strings.TrimSpace(logs.String()); got != step.want {
			t.Errorf("%s: logged %s, want %s", step.name, got, step.want)
		}
	}
}

// TestHTTPErrorLog checks that net/http's error lines become warnings of
// the service's logger, one of a kind per 10 s whatever the client's
// address, so that failed handshakes from many clients do not flood it.
func TestHTTPErrorLog(t *testing.T) {
	var logs bytes.Buffer
	l := httpErrorLog(zerolog.New(&logs))
	l.Printf("http: TLS handshake error from 192.0.2.1:51234: remote error: tls: bad certificate")
	l.Printf("http: TLS handshake error from [2001:db8::1]:443: remote error: tls: bad certificate")
	l.Printf("http: TLS handshake error from 192.0.2.7:40000: EOF")
	l.Printf("http: Accept error: too many open files; retrying in 5ms")
	got := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{
		`{"level":"warn","component":"http","similar_held_back":0,"message":"http: TLS handshake error from 192.0.2.1:51234: remote error: tls: bad certificate"}`,
		`{"level":"warn","component":"http","similar_held_back":0,"message":"http: TLS handshake error from 192.0.2.7:40000: EOF"}`,
		`{"level":"warn","component":"http","similar_held_back":0,"message":"http: Accept error: too many open files; retrying in 5ms"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines logged, want %d:\n%s", len(got), len(want), logs.String())
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

// TestHTTPErrorLogAddressesInError checks that the kind of an HTTP server
// line leaves out every address in it, not only the one after "from":
// the error of a client that resets the connection or stays silent until
// the handshake times out names the client's address again ("read tcp
// SERVER->CLIENT: …"), and keying on it would let every such client
// through and keep a throttle entry for each, without end. A handler's
// panic is keyed by its first line, not by its stack's goroutine numbers.
func TestHTTPErrorLogAddressesInError(t *testing.T) {
	var logs bytes.Buffer
	l := httpErrorLog(zerolog.New(&logs))
	l.Printf("http: TLS handshake error from 127.0.0.1:39096: read tcp 127.0.0.1:33325->127.0.0.1:39096: read: connection reset by peer")
	l.Printf("http: TLS handshake error from 127.0.0.1:39110: read tcp 127.0.0.1:33325->127.0.0.1:39110: read: connection reset by peer")
	l.Printf("http: TLS handshake error from [2001:db8::1]:4000: read tcp [2001:db8::2]:8443->[2001:db8::1]:4000: i/o timeout")
	l.Printf("http: TLS handshake error from [2001:db8::1]:4001: read tcp [2001:db8::2]:8443->[2001:db8::1]:4001: i/o timeout")
	l.Printf("http: panic serving 192.0.2.1:5000: boom\ngoroutine 7 [running]:\nmain.f()")
	l.Printf("http: panic serving 192.0.2.1:5001: boom\ngoroutine 9 [running]:\nmain.f()")
	got := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(got) != 3 {
		t.Fatalf("%d lines logged, want 3 (one of each kind):\n%s", len(got), logs.String())
	}
	for i, want := range []string{"connection reset by peer", "i/o timeout", "panic serving 192.0.2.1:5000"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("line %d: %s, want %q", i, got[i], want)
		}
	}
}

// TestHTTPErrorLogKindsBounded checks that the HTTP server's error lines
// whose text the client chooses keep the throttle bounded: a TLS client
// names the application protocols (ALPN) it offers, and the handshake
// error quotes them ("tls: client requested unsupported application
// protocols ([...])"), so a scanner offering new ones at every handshake
// made a kind of each, let through and kept for good: one more entry,
// and one more log line, per connection. The first line below is
// net/http's own, from a real handshake.
func TestHTTPErrorLogKindsBounded(t *testing.T) {
	var logs bytes.Buffer
	l := httpErrorLog(zerolog.New(&logs))
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = l
	srv.StartTLS()
	conn, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"x-scanner-0"}})
	if err == nil {
		conn.Close()
		t.Fatal("a handshake offering only an unknown protocol succeeded")
	}
	srv.Close() // waits for the connection's goroutine, and its log line
	if !strings.Contains(logs.String(), `unsupported application protocols ([\"x-scanner-0\"])`) {
		t.Fatalf("no handshake error naming the client's protocol logged:\n%s", logs.String())
	}
	const n = 5000
	for i := 1; i < n; i++ {
		l.Printf("http: TLS handshake error from 192.0.2.1:%d: tls: client requested unsupported application protocols ([%q])", 1024+i%60000, fmt.Sprintf("x-scanner-%d", i))
	}
	th := l.Writer().(*httpErrorWriter).th
	th.mu.Lock()
	kinds := len(th.seen)
	th.mu.Unlock()
	if kinds > maxThrottleKinds+1 {
		t.Errorf("the throttle keeps %d kinds after %d lines of kinds the client chose, want at most %d", kinds, n, maxThrottleKinds+1)
	}
	if lines := strings.Count(logs.String(), "\n"); lines > maxThrottleKinds+1 {
		t.Errorf("%d of %d such lines logged within a second, want at most %d", lines, n, maxThrottleKinds+1)
	}
}

// TestThrottleKindsBounded checks that a throttle keeps at most
// maxThrottleKinds kinds (and one for the rest): lines of kinds beyond
// those share one clock, and a kind whose period has passed with nothing
// held back, as good as never seen, is forgotten to make room.
func TestThrottleKindsBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	th := throttle{every: 10 * time.Second}
	for i := range maxThrottleKinds {
		if ok, _ := th.allow(fmt.Sprint("kind ", i), t0); !ok {
			t.Fatalf("kind %d, first of its kind, held back", i)
		}
	}
	th.allow("kind 0", t0.Add(time.Second)) // held back: kind 0 must be kept
	let := 0
	for i := range 10000 {
		if ok, _ := th.allow(fmt.Sprint("new ", i), t0.Add(2*time.Second)); ok {
			let++
		}
	}
	if let != 1 {
		t.Errorf("%d lines of 10000 new kinds beyond those kept let through within the period, want 1", let)
	}
	if len(th.seen) > maxThrottleKinds+1 {
		t.Errorf("%d kinds kept, want at most %d", len(th.seen), maxThrottleKinds+1)
	}
	if ok, n := th.allow("kind 0", t0.Add(12*time.Second)); !ok || n != 1 {
		t.Errorf("kind 0 after its period: allow %v with %d held back, want true with 1 (its entry kept)", ok, n)
	}
	// The kinds whose period passed with nothing held back are forgotten:
	// a new kind has its own clock again.
	if ok, n := th.allow("newer", t0.Add(12*time.Second)); !ok || n != 0 {
		t.Errorf("a new kind once others are forgotten: allow %v with %d held back, want true with 0", ok, n)
	}
	if ok, _ := th.allow("newer", t0.Add(13*time.Second)); ok {
		t.Error("a second line of the new kind within its period let through")
	}
}
