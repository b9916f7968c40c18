package stream

import (
	"fmt"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// ReplayStepMs is the slot length Replay puts the series on when the bundle
// has no calendar inputs. Any positive length gives the same forecasts; it
// only scales the timestamps. A bundle with calendar inputs (the paper's
// preprocessing) is replayed at the series' own times and step.
const ReplayStepMs = 300_000

// Replay forecasts every node of every snapshot of r through the online
// path of the service, without a broker: the readings of set's series are
// applied step by step to a State in slot order, and after the last step of
// each snapshot's window every node's forecast of the next slot is taken
// with State.Prepare and State.ForecastSlot, exactly as the service emits
// it. Replay is how analysts check offline what the service would have
// forecast.
//
// The result is on the original scale, row-major (snapshot, node, channel),
// in the layout of sdgnn.Predict, so the two can be compared; all-zero
// (missing) readings are applied like any other, as the model was trained
// on them. onSnapshot, if not nil, is called after each snapshot with the
// number done. The bundle is used by the State for the duration of the call
// and must not be used concurrently.
func Replay(b *sdgnn.Bundle, set *snapshot.Set, r snapshot.Range, onSnapshot func(done int)) ([]float64, error) {
	return ReplayPart(b, set, snapshot.Part{Range: r}, onSnapshot)
}

// ReplayPart is Replay over the snapshots of part p: every reading of p's
// span is applied, as the service would receive them, and the forecasts of
// p's snapshots are returned in their order (a part dealt by windows skips
// the others). p's nodes do not matter: every node is forecast.
func ReplayPart(b *sdgnn.Bundle, set *snapshot.Set, p snapshot.Part, onSnapshot func(done int)) ([]float64, error) {
	r := p.Range
	if err := b.Fits(set); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if r.Start < 0 || r.End > set.Len() || p.Len() < 1 {
		return nil, fmt.Errorf("replay: range %+v (%+v) outside the %d snapshots of the data or empty", r, p.Deal, set.Len())
	}
	// The forecasts of a slot read the windows ending one slot before, so
	// no history beyond the window is needed.
	// Slot of series step s is s+1, so that step 0 is not slot 0; a bundle
	// with calendar inputs needs the steps' real times instead.
	stepMs, slotOf := int64(ReplayStepMs), func(step int) int64 { return int64(step + 1) }
	if ti := b.Meta.Norm.Time; ti != nil {
		if ti.OriginMs%ti.StepMs != 0 {
			return nil, fmt.Errorf("replay: the series starts at %d ms, not on the %d ms grid", ti.OriginMs, ti.StepMs)
		}
		stepMs, slotOf = ti.StepMs, func(step int) int64 { return ti.StepTime(step) / ti.StepMs }
	}
	st, err := NewStateHistory(b, stepMs, 1)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	n, c, t := set.Nodes, set.Channels, set.Window
	pred := make([]float64, p.Len()*n*c)
	zs := make([]int, n)
	targets := make([]int64, n)
	for z := range zs {
		zs[z] = z
	}
	rd := Reading{Values: make([]float64, c)}
	var f Forecast
	done := 0
	for step, last := r.Start, p.Last(); step < last+t; step++ {
		rd.TS = slotOf(step) * stepMs
		for z := 0; z < n; z++ {
			rd.Sensor = z
			for ch := 0; ch < c; ch++ {
				rd.Values[ch] = set.RawAt(step, z, ch)
			}
			if _, err := st.Apply(rd); err != nil {
				return nil, fmt.Errorf("replay step %d node %d: %w", step, z, err)
			}
		}
		s := step - t + 1 // the snapshot whose window ends here
		if !p.Contains(s) {
			continue
		}
		target := slotOf(step + 1)
		for z := range targets {
			targets[z] = target
		}
		if err := st.Prepare(zs, targets); err != nil {
			return nil, fmt.Errorf("replay snapshot %d: %w", s, err)
		}
		out := pred[done*n*c:]
		for z := 0; z < n; z++ {
			if err := st.ForecastSlot(z, target*stepMs, &f); err != nil {
				return nil, fmt.Errorf("replay snapshot %d: %w", s, err)
			}
			if f.StaleSlots != 0 {
				return nil, fmt.Errorf("replay snapshot %d node %d: forecast %d slots stale", s, z, f.StaleSlots)
			}
			copy(out[z*c:(z+1)*c], f.Values)
		}
		done++
		if onSnapshot != nil {
			onSnapshot(done)
		}
	}
	return pred, nil
}
