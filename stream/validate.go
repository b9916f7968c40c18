package stream

import (
	"math"
	"time"
)

// Validator checks a decoded reading against the model and the clock:
// the sensor is a node, the values match the channels and are finite, the
// timestamp is a slot start between 1970 and the end of year 9999 (MaxTS)
// and within the accepted age and clock skew. Failures are *RejectError,
// to be dead-lettered.
//
// A zero field disables its check: Nodes, Channels and StepMs ≤ 0 skip the
// sensor, channel and grid checks; MaxAgeSlots ≤ 0 accepts any age and
// MaxFutureSlots ≤ 0 any slot after now; a nil Now skips both clock
// checks. With Now set, a reading may be at most MaxFutureSlots slots after
// the slot containing Now and at most MaxAgeSlots slots before it.
type Validator struct {
	Nodes, Channels int
	StepMs          int64
	MaxAgeSlots     int64
	MaxFutureSlots  int64
	Now             func() time.Time
}

// Check reports what is wrong with r, or nil. It allocates only on
// rejection.
func (v *Validator) Check(r Reading) error {
	if r.Sensor < 0 || v.Nodes > 0 && r.Sensor >= v.Nodes {
		return reject(ReasonUnknownSensor, "sensor %d outside [0,%d)", r.Sensor, v.Nodes)
	}
	if len(r.Values) == 0 || v.Channels > 0 && len(r.Values) != v.Channels {
		return reject(ReasonChannels, "%d values, want %d", len(r.Values), v.Channels)
	}
	for i, x := range r.Values {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return reject(ReasonNonFinite, "values[%d] is %g: want a finite number (0 for a missing reading)", i, x)
		}
	}
	// Beyond these, slot arithmetic (the next slot's start) could
	// overflow, and no sensor reads before 1970: a ts in µs or ns, or
	// garbage, is named as such rather than moving a window for good.
	if r.TS < 0 {
		return reject(ReasonTooOld, "ts %d is before 1970 (Unix ms, want ≥ 0)", r.TS)
	}
	if r.TS > MaxTS {
		return reject(ReasonTooNew, "ts %d is after 9999-12-31 (Unix ms, want ≤ %d; µs or ns?)", r.TS, MaxTS)
	}
	if v.StepMs <= 0 {
		return nil
	}
	if r.TS%v.StepMs != 0 {
		// A time in seconds is before 1973 in ms, and on the grid in ms.
		if r.TS < secondsBefore && (r.TS*1000)%v.StepMs == 0 {
			return reject(ReasonOffGrid, "ts %d is not a multiple of the %d ms slot (in seconds? ts is Unix ms: %d)", r.TS, v.StepMs, r.TS*1000)
		}
		return reject(ReasonOffGrid, "ts %d is not a multiple of the %d ms slot", r.TS, v.StepMs)
	}
	if v.Now == nil {
		return nil
	}
	now := floorDiv(v.Now().UnixMilli(), v.StepMs) // slot containing now
	slot := r.TS / v.StepMs
	if v.MaxAgeSlots > 0 && slot < satSub(now, v.MaxAgeSlots) {
		return reject(ReasonTooOld, "ts %d is %d slots before the current slot %d (at most %d)", r.TS, now-slot, now*v.StepMs, v.MaxAgeSlots)
	}
	if v.MaxFutureSlots > 0 && slot > satAdd(now, v.MaxFutureSlots) {
		return reject(ReasonTooNew, "ts %d is %d slots after the current slot %d (at most %d)", r.TS, slot-now, now*v.StepMs, v.MaxFutureSlots)
	}
	return nil
}

// MaxTS is the latest reading timestamp a Validator accepts: the last
// millisecond of year 9999, in Unix ms.
const MaxTS int64 = 253402300799999

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// secondsBefore is 1973-03-03 in Unix ms, 100 billion: a reading stamped
// before it in ms is far likelier stamped in seconds (after 1973).
const secondsBefore = 100_000_000_000

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}
