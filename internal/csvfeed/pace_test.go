package csvfeed

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// TestPacer checks publish -csv -speedup's pacing: the first reading goes
// at once, a later one when its ts comes at the speed-up (not before), an
// older one at once, and an interrupted wait returns the context's error.
func TestPacer(t *testing.T) {
	const slot = 15 * 60 * 1000    // ms
	p := pacer{speedup: slot / 40} // a slot every 40 ms
	ctx := context.Background()
	start := time.Now()
	for _, ts := range []int64{5 * slot, 5 * slot, 7 * slot, 6 * slot} {
		if err := p.wait(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 80*time.Millisecond {
		t.Errorf("two slots on at 40 ms a slot after %v, want at least 80 ms", d)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := p.wait(ctx, 1000*slot); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("interrupted wait: %v", err)
	}
	if err := (&pacer{}).wait(ctx, 1000*slot); err != nil {
		t.Errorf("no speed-up: %v", err)
	}
}

// TestPacerTinySpeedup checks that a speed-up too small for a Duration to
// hold the wait (1e-300: a slot every 10²⁹³ years) still waits, rather than
// overflowing into a negative wait that sent every reading at once.
func TestPacerTinySpeedup(t *testing.T) {
	const slot = 15 * 60 * 1000 // ms
	p := pacer{speedup: 1e-300}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.wait(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(ctx, slot); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the next slot at a speed-up of 1e-300: %v, want a wait cut short by the context", err)
	}
	if d := SlowedDown(slot, 1e-300); d != math.MaxInt64 {
		t.Errorf("SlowedDown(a slot, 1e-300) = %v, want the longest Duration", d)
	}
	if d := SlowedDown(slot, 3600); d != 250*time.Millisecond {
		t.Errorf("SlowedDown(a slot, 3600) = %v, want 250ms", d)
	}
}
