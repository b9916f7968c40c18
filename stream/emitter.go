package stream

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Emitter decides when each node's forecast is emitted, and makes sure
// every forecast slot of a node is emitted once, in order, also under
// replay and across a Snapshot/Restore (the last emitted slot is part of
// the State).
//
// Node z's next target is the slot after its last emitted one (its first
// is the slot after the first one all its receptive nodes that have
// readings have a reading of; one without any goes in as missing
// readings). Target t
// is due
//
//   - fresh: as soon as every receptive node has slot t−1 (State.Ready),
//     with StaleSlots 0;
//   - deadline: otherwise, once some receptive node has reached slot t−1,
//     when the clock passes Lateness after the start of slot t or after the
//     moment the first receptive node reached slot t−1 (OnApply's clock),
//     whichever is later; it is then emitted from the readings there are
//     (StaleSlots > 0 if an input has not reached t−1).
//
// The second clock keeps a consumer that catches up on a backlog from
// emitting stale forecasts for old slots whose readings are still on their
// way, and bounds the wait of each slot by Lateness after its first input
// arrived: behind an input that stays missing (a sensor out of service),
// the slots of a backlog whose other inputs arrived together are all due
// Lateness after they arrived, not one Lateness after another. Where the
// arrival is not known (readings held before Rescan, as after
// State.Restore), the targets pending at Rescan count from the slot alone
// and later ones from when they began to wait. A target whose input windows have
// left the State's history (an input ran more than History slots ahead)
// is skipped and counted. The clock is an argument of every call, so the
// policy is deterministic and testable.
//
// Use: after each State.Apply call OnApply with its result; then, until
// Due returns nothing, emit the nodes Due returns with Emit, or all of
// them at once with EmitMany (one decoder pass). Call Due also
// on a timer (NextDeadline says when). An Emitter is not safe for
// concurrent use.
type Emitter struct {
	st       *State
	lateness int64 // ms

	ready     []int  // fresh nodes, in the order they became ready
	inReady   []bool // z is in ready
	heap      []deadline
	pending   []int64 // target slot of z's live heap entry, noSlot if none
	pendingAt []int64 // its deadline, Unix ms
	due       []int
	targets   []int64

	// reachedAt[k*r+pos(s)] is when node k's newest reading first reached
	// slot s (Unix ms), valid where reachedSlot there is s: the arrival
	// clock of the deadlines (r = the State's ring length).
	reachedAt, reachedSlot []int64

	// EmitMany's batch: the nodes due, their slots (Unix ms), forecasts.
	mz  []int
	mts []int64
	fc  []Forecast

	skips []Skip // since Skips last took them, at most maxSkips
}

// Skip is a run of a node's forecast slots never emitted because an input
// ran more than the State's history ahead (see Emitter): slots From to To,
// both included.
type Skip struct {
	Sensor   int
	From, To int64 // slot indices (ts/step)
}

// maxSkips bounds the skips an Emitter keeps for Skips: the counter
// (Counters.Skipped) counts them all.
const maxSkips = 1024

// Skips appends to dst the runs of skipped slots recorded since its last
// call (the first maxSkips of them) and forgets them, for the caller to
// say which sensors lost which forecasts.
func (e *Emitter) Skips(dst []Skip) []Skip {
	dst = append(dst, e.skips...)
	e.skips = e.skips[:0]
	return dst
}

// skipped counts and records node z's slots from to to as skipped.
func (e *Emitter) skipped(z int, from, to int64) {
	e.st.Counters.Skipped.Add(uint64(to - from + 1))
	if len(e.skips) < maxSkips {
		e.skips = append(e.skips, Skip{Sensor: z, From: from, To: to})
	}
}

type deadline struct {
	at     int64 // Unix ms
	target int64 // forecast slot index
	z      int
}

// NewEmitter returns an emitter for st with the given lateness (negative
// counts as zero). It scans st once, so it also picks up the forecasts due
// after a Restore.
func NewEmitter(st *State, lateness time.Duration) *Emitter {
	e := &Emitter{st: st, lateness: max(lateness.Milliseconds(), 0),
		inReady: make([]bool, st.n), pending: make([]int64, st.n), pendingAt: make([]int64, st.n),
		reachedAt: make([]int64, st.n*st.r), reachedSlot: make([]int64, st.n*st.r)}
	e.Rescan()
	return e
}

// Rescan forgets the pending work and schedules every node again from the
// state; call it after State.Restore. Deadlines are counted from the slots
// alone (as if the targets had been pending since their slot started).
func (e *Emitter) Rescan() {
	e.ready, e.heap = e.ready[:0], e.heap[:0]
	clear(e.inReady)
	for i := range e.reachedSlot {
		e.reachedSlot[i] = noSlot
	}
	for z := range e.pending {
		e.pending[z] = noSlot
	}
	for z := 0; z < e.st.n; z++ {
		e.schedule(z, math.MinInt64)
	}
}

// Inherit takes over old's deadlines where both wait for the same target
// of a node, keeping the later one: an emitter made anew (Rescan) counts
// deadlines from the slots alone, so that, while a consumer catches up on
// a backlog, the targets old had just begun to wait for would be emitted
// stale at once rather than Lateness after they began to wait. For an
// emitter replacing old on a state moved to another model (Service.Reload).
func (e *Emitter) Inherit(old *Emitter) {
	if old == nil || len(old.pending) != len(e.pending) {
		return
	}
	// The arrival clock too, so that the targets after those are not
	// counted from their slots alone.
	or := old.st.r
	for k := range old.pending {
		for p := range or {
			if sl := old.reachedSlot[k*or+p]; sl != noSlot {
				i := k*e.st.r + e.st.pos(sl)
				if e.reachedSlot[i] == noSlot || e.reachedSlot[i] < sl {
					e.reachedSlot[i], e.reachedAt[i] = sl, old.reachedAt[k*or+p]
				}
			}
		}
	}
	moved := false
	for z, t := range e.pending {
		if t != noSlot && old.pending[z] == t && old.pendingAt[z] > e.pendingAt[z] {
			e.pendingAt[z] = old.pendingAt[z]
			moved = true
		}
	}
	if !moved {
		return
	}
	e.heap = e.heap[:0]
	for z, t := range e.pending {
		if t != noSlot {
			e.push(deadline{at: e.pendingAt[z], target: t, z: z})
		}
	}
}

// OnApply updates the pending forecasts after st.Apply returned res at
// now: a reading that advanced or filled a node's window may make the
// node's dependents due.
func (e *Emitter) OnApply(res ApplyResult, now time.Time) {
	if !res.Changed() {
		return
	}
	ms := now.UnixMilli()
	if res.Kind == Advanced {
		e.reached(res.Sensor, res.TS/e.st.stepMs, res.Gap, ms)
	}
	for _, z := range e.st.Dependents(res.Sensor) {
		e.schedule(z, ms)
	}
}

// reached records that node k's newest reading reached slot b at ms,
// having skipped gap slots: slots b−gap to b were first reached then (all
// the ring's, b's first reading).
func (e *Emitter) reached(k int, b, gap, ms int64) {
	r := int64(e.st.r)
	from := b - min(gap, r-1)
	if nd := &e.st.nodes[k]; nd.first == b-gap || nd.first == noSlot {
		from = b - (r - 1) // the first reading: every slot before it too
	}
	for sl := from; sl <= b; sl++ {
		i := k*e.st.r + e.st.pos(sl)
		e.reachedSlot[i], e.reachedAt[i] = sl, ms
	}
}

// arrival returns when the first of z's receptive nodes reached slot s,
// as far as known: math.MaxInt64 if none is known to have.
func (e *Emitter) arrival(z int, s int64) int64 {
	ks, _ := e.st.b.Receptive(z)
	at := int64(math.MaxInt64)
	for _, k := range ks {
		if i := k*e.st.r + e.st.pos(s); e.st.nodes[k].newest >= s && e.reachedSlot[i] == s {
			at = min(at, e.reachedAt[i])
		}
	}
	return at
}

// target returns z's next forecast slot, and false if z cannot be
// forecast yet (no receptive node with a reading). The first is the slot
// after the first one every receptive node with readings has a reading of
// (or the earliest whose inputs are still held).
func (e *Emitter) target(z int) (int64, bool) {
	_, _, earliest, first, ok := e.st.horizon(z)
	if !ok {
		return noSlot, false
	}
	return e.targetAt(z, earliest, first), true
}

// targetAt is target from z's horizon's earliest and first slots.
func (e *Emitter) targetAt(z int, earliest, first int64) int64 {
	t := first + 1
	if last := e.st.nodes[z].lastEmitted; last != noSlot {
		t = last + 1
	}
	return max(t, earliest)
}

// started reports whether some receptive node of z has reached slot
// target−1.
func (e *Emitter) started(z int, target int64) bool {
	newest, _, _, _, ok := e.st.horizon(z)
	return ok && newest >= target-1
}

// schedule files z's next target: among the fresh nodes if it is ready,
// else under its deadline once it has started (target and started from one
// look at z's horizon, since this runs for every dependent of every
// reading applied).
func (e *Emitter) schedule(z int, nowMs int64) {
	newest, _, earliest, first, ok := e.st.horizon(z)
	if !ok {
		return
	}
	t := e.targetAt(z, earliest, first)
	if e.st.readyFor(z, t) {
		if !e.inReady[z] {
			e.inReady[z] = true
			e.ready = append(e.ready, z)
		}
		return
	}
	if newest < t-1 || e.pending[z] == t { // not started, or filed
		return
	}
	// Lateness after the slot's start or the first input's arrival; the
	// arrival is now where it is not known to be earlier (as after a
	// Restore), the slot's start in Rescan (nowMs math.MinInt64).
	at := satAdd(max(satMul(t, e.st.stepMs), min(nowMs, e.arrival(z, t-1))), e.lateness)
	e.pending[z], e.pendingAt[z] = t, at
	e.push(deadline{at: at, target: t, z: z})
}

func satMul(a, b int64) int64 {
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	if a < math.MinInt64/b {
		return math.MinInt64
	}
	return a * b
}

// isDue reports whether z's target t is due at ms.
func (e *Emitter) isDue(z int, t, ms int64) bool {
	return e.st.readyFor(z, t) || e.started(z, t) && e.pending[z] == t && e.pendingAt[z] <= ms
}

// Due returns the nodes whose next forecast is to be emitted at now,
// ascending: the fresh ones and those past their deadline; emit each with
// Emit, then call Due again (an emitted node's next slot may be due at
// once). The embeddings their forecasts need are computed here, in one
// batch. The slice is the emitter's own, valid until the next call.
func (e *Emitter) Due(now time.Time) []int {
	ms := now.UnixMilli()
	e.due = e.due[:0]
	for _, z := range e.ready {
		e.inReady[z] = false
		if t, ok := e.target(z); ok && e.st.readyFor(z, t) {
			e.due = append(e.due, z)
		} else {
			e.schedule(z, ms)
		}
	}
	e.ready = e.ready[:0]
	for len(e.heap) > 0 && e.heap[0].at <= ms {
		d := e.pop()
		if e.pending[d.z] != d.target {
			continue // emitted fresh meanwhile, or superseded
		}
		if t, ok := e.target(d.z); ok && t == d.target && e.started(d.z, t) {
			e.due = append(e.due, d.z)
			continue
		}
		e.pending[d.z] = noSlot
		e.schedule(d.z, ms) // the target moved on (inputs left the history)
	}
	slices.Sort(e.due)
	e.due = slices.Compact(e.due)
	e.targets = e.targets[:0]
	for _, z := range e.due {
		t, _ := e.target(z)
		e.targets = append(e.targets, t)
	}
	// An error here recurs in Emit, which computes what is missing one
	// forecast at a time and returns it.
	_ = e.st.Prepare(e.due, e.targets)
	return e.due
}

// NextDeadline returns when the earliest pending deadline passes, so that
// the caller can call Due then; ok is false if none is pending.
func (e *Emitter) NextDeadline() (at time.Time, ok bool) {
	for len(e.heap) > 0 && e.pending[e.heap[0].z] != e.heap[0].target {
		e.pop() // drop superseded entries
	}
	if len(e.heap) == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(e.heap[0].at), true
}

// Emit computes node z's forecast for its next slot into dst (see
// State.ForecastSlot), stamps it with now and records the slot as emitted,
// if that slot is due at now; otherwise it returns false without error.
// Emitting is idempotent: an emitted slot is never emitted again. Emitted,
// stale and skipped forecasts and the emission delay after the forecast
// slot's start are counted.
func (e *Emitter) Emit(z int, now time.Time, dst *Forecast) (bool, error) {
	st := e.st
	if z < 0 || z >= st.n {
		return false, fmt.Errorf("emit: node %d outside [0,%d)", z, st.n)
	}
	ms := now.UnixMilli()
	t, ok := e.target(z)
	if !ok || !e.isDue(z, t, ms) {
		return false, nil
	}
	if err := st.ForecastSlot(z, t*st.stepMs, dst); err != nil {
		if errors.Is(err, ErrNonFinite) {
			e.passed(z, t, ms)
		}
		return false, fmt.Errorf("emit: %w", err)
	}
	e.emitted(z, t, ms, dst)
	return true, nil
}

// EmitMany is Emit for each node of zs in turn, into a slice of the
// emitter's own (valid until the next call) that it returns, holding the
// forecasts emitted in the order of zs; their Values and Inputs are the
// emitter's too, overwritten by the next call, so a forecast kept beyond it
// must be encoded or have its slices copied. The decoders of all of them are
// run in one batch (State.ForecastSlots): the same forecasts, counted and
// recorded as emitted as Emit does, for less. A node whose receptive nodes
// have no reading yet (ErrNoData) is passed over, and so is, for good, a
// slot whose forecast came out non-finite (ErrNonFinite, counted in
// Counters.NonFinite); any other error ends the call, the forecasts before
// it emitted and returned with it. A node of zs outside the state is
// refused first, nothing emitted.
func (e *Emitter) EmitMany(zs []int, now time.Time) ([]Forecast, error) {
	st := e.st
	ms := now.UnixMilli()
	e.mz, e.mts = e.mz[:0], e.mts[:0]
	for _, z := range zs {
		if z < 0 || z >= st.n {
			return nil, fmt.Errorf("emit: node %d outside [0,%d)", z, st.n)
		}
		if t, ok := e.target(z); ok && e.isDue(z, t, ms) {
			e.mz, e.mts = append(e.mz, z), append(e.mts, t*st.stepMs)
		}
	}
	if len(e.mz) > len(e.fc) {
		e.fc = append(e.fc, make([]Forecast, len(e.mz)-len(e.fc))...)
	}
	fc := e.fc[:len(e.mz)]
	errs := st.ForecastSlots(e.mz, e.mts, fc)
	n := 0
	for i, z := range e.mz {
		if err := errs[i]; err != nil {
			if errors.Is(err, ErrNoData) {
				continue
			}
			if errors.Is(err, ErrNonFinite) {
				e.passed(z, e.mts[i]/st.stepMs, ms)
				continue
			}
			return fc[:n], fmt.Errorf("emit: %w", err)
		}
		e.emitted(z, e.mts[i]/st.stepMs, ms, &fc[i])
		fc[n], fc[i] = fc[i], fc[n] // swapped, not copied: each keeps its slices
		n++
	}
	return fc[:n], nil
}

// passed records node z's slot t, whose forecast came out non-finite, as
// done at ms without a forecast: counted, and the node's next slot
// scheduled, so that it is neither tried again nor holds the node back
// (a non-finite forecast is a property of the inputs, which do not
// change).
func (e *Emitter) passed(z int, t, ms int64) {
	e.st.Counters.NonFinite.Add(1)
	e.advance(z, t, ms)
}

// emitted records node z's forecast dst for slot t as emitted at ms:
// stamped, counted and the node's next slot scheduled.
func (e *Emitter) emitted(z int, t, ms int64, dst *Forecast) {
	cnt := e.st.Counters
	dst.EmittedMs = ms
	cnt.Emitted.Add(1)
	if dst.StaleSlots > 0 {
		cnt.Stale.Add(1)
	}
	for _, in := range dst.Inputs {
		if in.Gaps > 0 {
			cnt.Partial.Add(1)
			break
		}
	}
	nd := &e.st.nodes[z]
	cnt.countCompleteness(int(nd.fcOwn), nd.fcOthers)
	cnt.EmitDelay.Observe(msDuration(dst.EmittedMs - dst.TS))
	e.advance(z, t, ms)
}

// msDuration is d ms as a Duration, saturated rather than wrapped where
// it does not fit (some 292 years).
func msDuration(d int64) time.Duration {
	const limit = math.MaxInt64 / int64(time.Millisecond)
	switch {
	case d > limit:
		return math.MaxInt64
	case d < -limit:
		return math.MinInt64
	}
	return time.Duration(d) * time.Millisecond
}

// advance makes slot t node z's last emitted one, counting the slots
// skipped before it, and schedules its next.
func (e *Emitter) advance(z int, t, ms int64) {
	st := e.st
	nd := &st.nodes[z]
	switch last := nd.lastEmitted; {
	case last != noSlot && t > last+1:
		e.skipped(z, last+1, t-1)
	case last == noSlot:
		// The first forecast: the slots after the first one all inputs
		// have were lost if the inputs ran apart before it.
		if _, _, _, first, ok := st.horizon(z); ok && t > first+1 {
			e.skipped(z, first+1, t-1)
		}
	}
	nd.lastEmitted = t
	if e.pending[z] == t {
		e.pending[z] = noSlot
	}
	e.schedule(z, ms)
}

func (e *Emitter) less(i, j int) bool {
	a, b := e.heap[i], e.heap[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.z < b.z
}

func (e *Emitter) push(d deadline) {
	e.heap = append(e.heap, d)
	for i := len(e.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if !e.less(i, p) {
			break
		}
		e.heap[i], e.heap[p] = e.heap[p], e.heap[i]
		i = p
	}
}

func (e *Emitter) pop() deadline {
	h := e.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	e.heap = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && e.less(l, m) {
			m = l
		}
		if r < last && e.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		e.heap[i], e.heap[m] = e.heap[m], e.heap[i]
		i = m
	}
	return top
}
