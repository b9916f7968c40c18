package stream

import (
	"testing"
	"time"
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
