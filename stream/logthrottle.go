package stream

import (
	"sync"
	"time"
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

// allow reports whether a line of this kind may be logged at now and, if
// so, how many were held back since the last one.
func (t *throttle) allow(kind string, now time.Time) (ok bool, suppressed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]*throttled{}
	}
	e := t.seen[kind]
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
