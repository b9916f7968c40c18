package stream

import (
	"errors"
	"io"
	stdlog "log"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// throttle lets a log line of a given kind through at most once per every,
// counting the ones it held back, so that a client that logs each of its
// retries (kafka-go's reader, a few lines a second per partition while the
// broker is away) does not flood the log. The kind is the line's format
// string, before its arguments (addresses, offsets) are filled in.
type throttle struct {
	every time.Duration

	mu   sync.Mutex
	seen map[string]*throttled
}

type throttled struct {
	last       time.Time // when a line of this kind was last let through
	suppressed int       // lines held back since
}

// maxThrottleKinds is how many kinds a throttle keeps apart. Some kinds
// hold text a client chooses (the application protocols a TLS client
// offers, quoted by the handshake error), so that their number has no
// bound: the lines of kinds beyond these share one clock (otherKind), and
// the throttle stays bounded whoever connects.
const maxThrottleKinds = 64

// otherKind is the kind of the lines whose own kinds the throttle has no
// room for; no format string or log line is empty.
const otherKind = ""

// allow reports whether a line of this kind may be logged at now and, if
// so, how many were held back since the last one.
func (t *throttle) allow(kind string, now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]*throttled{}
	}
	e := t.seen[kind]
	if e == nil && len(t.seen) >= maxThrottleKinds {
		// A kind whose period has passed with nothing held back is as
		// good as never seen: it is forgotten to make room.
		for k, e := range t.seen {
			if e.suppressed == 0 && now.Sub(e.last) >= t.every {
				delete(t.seen, k)
			}
		}
		if len(t.seen) >= maxThrottleKinds {
			kind = otherKind
			e = t.seen[kind]
		}
	}
	if e == nil {
		t.seen[kind] = &throttled{last: now}
		return true, 0
	}
	if now.Sub(e.last) < t.every {
		e.suppressed++
		return false, 0
	}
	suppressed, e.last, e.suppressed = e.suppressed, now, 0
	return true, suppressed
}

// readerErrorLogger returns the error logger of the service's kafka-go
// reader: its lines as warnings, one of a kind per 10 s, since kafka-go
// logs each of its retries.
//
// One kind is logged as information, once a minute: a fetch that ends
// without records although the partition's high watermark lies past its
// offset. kafka-go reads that as a broken connection ("unknown error …
// unexpected EOF") and reconnects, but it is what a broker answers a
// read-committed fetch at a transaction still open (and, as
// segmentio/kafka-go#1286 reports, some brokers at other times). While a
// transaction is open at the reader's offset, the reader so reconnects to
// that partition's leader several times a second; nothing is lost
// (TestReaderReconnectsAtOpenTransaction).
func readerErrorLogger(log zerolog.Logger) kafka.LoggerFunc {
	th := &throttle{every: 10 * time.Second}
	quiet := &throttle{every: time.Minute}
	return func(msg string, args ...any) {
		if strings.HasPrefix(msg, "the kafka reader got an unknown error reading partition") && len(args) == 4 {
			if err, ok := args[3].(error); ok && errors.Is(err, io.ErrUnexpectedEOF) {
				if ok, held := quiet.allow(msg, time.Now()); ok {
					p, _ := args[0].(int)
					off := int64(-1) // kafka-go passes its own int64 type
					if v := reflect.ValueOf(args[2]); v.CanInt() {
						off = v.Int()
					}
					log.Info().Str("component", "kafka-reader").Int("partition", p).Int64("offset", off).Int("similar_held_back", held).
						Msg("a fetch ended without records below the high watermark, as at a transaction still open: kafka-go reconnects")
				}
				return
			}
		}
		if ok, held := th.allow(msg, time.Now()); ok {
			log.Warn().Str("component", "kafka-reader").Int("similar_held_back", held).Msgf(msg, args...)
		}
	}
}

// httpErrorLog returns the error log of the service's HTTP server: its
// lines (a TLS handshake that failed, an accept error, a handler's panic)
// as warnings of the service's logger rather than plain text on standard
// error, where a JSON log reader would trip on them, and one of a kind per
// 10 s: with HTTPS, every scanner or client that does not trust the
// certificate logs a failed handshake. A line's kind is its first line
// with every address (host:port) left out (httpErrorKind).
func httpErrorLog(log zerolog.Logger) *stdlog.Logger {
	return stdlog.New(&httpErrorWriter{log: log, th: &throttle{every: 10 * time.Second}}, "", 0)
}

type httpErrorWriter struct {
	log zerolog.Logger
	th  *throttle
}

// hostPort matches an address with its port, an IPv6 host in brackets:
// net/http's error lines name the client's after "from" and often again
// in the error ("read tcp 192.0.2.9:8443->192.0.2.1:51234: read:
// connection reset by peer", "… i/o timeout").
var hostPort = regexp.MustCompile(`(\[[0-9A-Fa-f:.%]+\]|[0-9A-Za-z][0-9A-Za-z.-]*):\d+`)

// httpErrorKind returns what the throttle counts line as: its first line (a
// handler's panic carries its stack, goroutine numbers and all), every
// address in it replaced by ADDR. Keyed on a client's address, every
// client would have its own kind, let through, and kept in the throttle
// for good.
func httpErrorKind(line string) string {
	first, _, _ := strings.Cut(line, "\n")
	return hostPort.ReplaceAllString(first, "ADDR")
}

func (w *httpErrorWriter) Write(p []byte) (int, error) {
	line := strings.TrimRight(string(p), "\n")
	if ok, held := w.th.allow(httpErrorKind(line), time.Now()); ok {
		w.log.Warn().Str("component", "http").Int("similar_held_back", held).Msg(line)
	}
	return len(p), nil
}
