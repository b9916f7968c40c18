package stream

import (
	"fmt"

	"github.com/pemsforecast/sdgnn/snapshot"
)

// PartScope places the forecasts of a replayed series in one part of a
// model's split, so that the live view scores that part (the held-out
// sensors, snapshots or period) apart from the forecasts of what the model
// was trained on. Without it, replaying a split by nodes or by windows
// scores the training sensors and snapshots too, and the live error looks
// better than the model is.
//
// The forecast of sensor z for the slot starting at ts targets series step
// t = (ts − StartMs) / stepMs, the target of snapshot s = t − Window; it
// belongs to the part when Part.Has(z, s).
type PartScope struct {
	// Name says which part, for people: "test part".
	Name string
	Part snapshot.Part
	// Window is the model's window: snapshot s reads steps s … s+Window−1
	// and forecasts step s+Window.
	Window int
	// StartMs is the time (Unix ms) of the series' step 0, as published.
	StartMs int64
}

// Check reports a scope that cannot place any forecast, on a grid of
// stepMs: a window below 1, an empty part, or a start off the grid.
func (sc *PartScope) Check(stepMs int64) error {
	switch {
	case sc.Window < 1:
		return fmt.Errorf("part scope %q: window %d: want at least 1", sc.Name, sc.Window)
	case sc.Part.Len() == 0:
		return fmt.Errorf("part scope %q: the part is empty", sc.Name)
	case stepMs <= 0 || sc.StartMs%stepMs != 0:
		return fmt.Errorf("part scope %q: series start %d ms is not on the %d ms slot grid", sc.Name, sc.StartMs, stepMs)
	}
	return nil
}

// Holds reports whether the forecast of sensor for the slot starting at ts
// (Unix ms, slots of stepMs) belongs to the part. Slots off the grid or
// before the series' first target belong to no part.
func (sc *PartScope) Holds(sensor int, ts, stepMs int64) bool {
	d := ts - sc.StartMs
	if d < 0 || stepMs <= 0 || d%stepMs != 0 {
		return false
	}
	s := d/stepMs - int64(sc.Window)
	if s < 0 || s > int64(sc.Part.End) {
		return false
	}
	return sc.Part.Has(sensor, int(s))
}
