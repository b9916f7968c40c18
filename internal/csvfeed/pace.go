package csvfeed

import (
	"context"
	"math"
	"time"
)

// SlowedDown returns ms milliseconds of data time as replay time at
// speedup (> 0), saturated at the longest Duration: a tiny speed-up such as
// 1e-300 gives a time beyond what a Duration holds, whose conversion gave a
// negative one, and so no wait at all rather than a very slow replay.
func SlowedDown(ms int64, speedup float64) time.Duration {
	d := float64(ms) * float64(time.Millisecond) / speedup
	if d >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(d)
}

// pacer holds readings back until their time comes: ts − the first ts,
// divided by speedup, after the first reading was let through. A reading
// older than one already let through goes at once.
type pacer struct {
	speedup float64
	t0      int64     // the first reading's ts
	start   time.Time // when it was let through
}

// wait returns when the reading of ts may be sent, or with ctx's error.
func (p *pacer) wait(ctx context.Context, ts int64) error {
	if p.speedup <= 0 {
		return nil
	}
	if p.start.IsZero() {
		p.t0, p.start = ts, time.Now()
		return nil
	}
	d := time.Until(p.start.Add(SlowedDown(ts-p.t0, p.speedup)))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
