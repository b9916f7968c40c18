package stream

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

var farFuture = time.UnixMilli(1 << 50)

// slotEnd returns the wall-clock time at which slot s ends, plus extra.
func slotEnd(s int64, extra time.Duration) time.Time {
	return time.UnixMilli((s + 1) * testStep).Add(extra)
}

func TestEmitter(t *testing.T) {
	b := testBundle(t, 5, 3, 2, 4, 31)
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	const lateness = 90 * time.Second
	r := &emitterRun{t: t, st: st, em: NewEmitter(st, lateness), emitted: map[[2]int64]int{}}
	emitterDeadlines(r, lateness)
	emitterAhead(r, lateness)
	f := r.f
	// Readings the emitter is not told about leave node 3 (inputs 1, 3, 4)
	// fresh for slot 13; after a snapshot and restore a fresh emitter finds
	// that pending work and nothing already emitted.
	mustApply(t, st, []Reading{{1, 12 * testStep, []float64{1, 1}}, {3, 12 * testStep, []float64{1, 1}}, {4, 12 * testStep, []float64{1, 1}}})
	st2, _ := NewState(b, testStep)
	if err := st2.Restore(st.Snapshot()); err != nil {
		t.Fatal(err)
	}
	em2 := NewEmitter(st2, lateness)
	due := slices.Clone(em2.Due(farFuture))
	if want := []int{3}; !slices.Equal(due, want) {
		t.Errorf("after restore, due %v, want %v", due, want)
	}
	for _, z := range due {
		if ok, err := em2.Emit(z, farFuture, &f); !ok || err != nil || f.TS != 13*testStep {
			t.Errorf("after restore, emit %d: %v %v slot %d", z, ok, err, f.TS/testStep)
		}
	}
	if got := em2.Due(farFuture); len(got) != 0 {
		t.Errorf("after restore and emit, still due %v", got)
	}
}

// emitterRun drives TestEmitter's Emitter over its State, counting the
// forecasts emitted by (node, slot).
type emitterRun struct {
	t       *testing.T
	st      *State
	em      *Emitter
	emitted map[[2]int64]int // (node, slot) → times emitted
	f       Forecast
}

// step applies readings (node, slot) and emits whatever is due at now;
// it returns the forecasts made, their TS in slots.
func (r *emitterRun) step(now time.Time, rs ...[2]int64) []Forecast {
	t, st, em := r.t, r.st, r.em
	t.Helper()
	for _, rd := range rs {
		res, err := st.Apply(Reading{Sensor: int(rd[0]), TS: rd[1] * testStep, Values: []float64{float64(rd[0] + 1), float64(rd[1])}})
		if err != nil {
			t.Fatal(err)
		}
		em.OnApply(res, now)
	}
	var out []Forecast
	for {
		due := em.Due(now)
		if len(due) == 0 {
			return out
		}
		for _, z := range due {
			ok, err := em.Emit(z, now, &r.f)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Fatalf("node %d due but not emitted", z)
			}
			f := &r.f
			r.emitted[[2]int64{int64(z), f.TS / testStep}]++
			out = append(out, Forecast{Sensor: f.Sensor, TS: f.TS / testStep, StaleSlots: f.StaleSlots, EmittedMs: f.EmittedMs, Inputs: slices.Clone(f.Inputs)})
		}
	}
}

// allOf returns a reading of slot s of each of TestEmitter's 5 nodes but
// those except.
func allOf(s int64, except ...int) [][2]int64 {
	var rs [][2]int64
	for k := 0; k < 5; k++ {
		if !slices.Contains(except, k) {
			rs = append(rs, [2]int64{int64(k), s})
		}
	}
	return rs
}

// briefFC is a forecast as TestEmitter compares them: node, slot, stale
// slots.
type briefFC = struct{ z, slot, stale int64 }

// brief returns fs as TestEmitter compares them.
func brief(fs []Forecast) []briefFC {
	var out []briefFC
	for _, f := range fs {
		out = append(out, briefFC{int64(f.Sensor), f.TS, f.StaleSlots})
	}
	return out
}

// emitterDeadlines is TestEmitter's slots 10 and 11: fresh forecasts at
// once, stale ones at their deadline, nothing emitted twice.
func emitterDeadlines(r *emitterRun, lateness time.Duration) {
	t := r.t
	t.Helper()
	// Slot 10 from everyone: every node is fresh at once.
	got := brief(r.step(slotEnd(10, time.Second), allOf(10)...))
	want := []briefFC{{0, 11, 0}, {1, 11, 0}, {2, 11, 0}, {3, 11, 0}, {4, 11, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("slot 10: %v, want %v", got, want)
	}
	// Slot 11 without node 4. Receptive sets for n=5: 0:{0} 1:{1,2,4}
	// 2:{0,2,3} 3:{1,3,4} 4:{0,2,4}; nodes 0 and 2 are fresh.
	got = brief(r.step(slotEnd(11, time.Second), allOf(11, 4)...))
	if want := []briefFC{{0, 12, 0}, {2, 12, 0}}; !slices.Equal(got, want) {
		t.Fatalf("slot 11 without node 4: %v, want %v", got, want)
	}
	// The deadline is lateness after the later of the target slot's start
	// and the moment the target became pending (1 s after it started).
	if at, ok := r.em.NextDeadline(); !ok || !at.Equal(slotEnd(11, lateness+time.Second)) {
		t.Fatalf("next deadline %v %v, want %v", at, ok, slotEnd(11, lateness+time.Second))
	}
	// Just before the deadline: nothing; at it: 1, 3 and 4, stale by one.
	if got := r.step(slotEnd(11, lateness+time.Second-time.Millisecond)); len(got) != 0 {
		t.Fatalf("before the deadline: %v", brief(got))
	}
	fs := r.step(slotEnd(11, lateness+time.Second))
	if want := []briefFC{{1, 12, 1}, {3, 12, 1}, {4, 12, 1}}; !slices.Equal(brief(fs), want) {
		t.Fatalf("at the deadline: %v, want %v", brief(fs), want)
	}
	if in := fs[0].Inputs; !slices.Equal(in, []Input{{Sensor: 1, TS: 11 * testStep, Gaps: 1}, {Sensor: 2, TS: 11 * testStep, Gaps: 1}, {Sensor: 4, TS: 10 * testStep, Gaps: 2}}) {
		t.Errorf("stale forecast inputs %v", in)
	}
	if fs[0].EmittedMs != slotEnd(11, lateness+time.Second).UnixMilli() {
		t.Errorf("emitted_ms %d, want %d", fs[0].EmittedMs, slotEnd(11, lateness+time.Second).UnixMilli())
	}
	// Node 4's late reading for slot 11 makes nothing due again.
	if got := r.step(slotEnd(11, 2*lateness), [2]int64{4, 11}); len(got) != 0 {
		t.Fatalf("late input after the deadline re-emitted %v", brief(got))
	}
	// Replaying everything, at any time, emits nothing.
	for s := int64(10); s <= 11; s++ {
		if got := r.step(farFuture, allOf(s)...); len(got) != 0 {
			t.Fatalf("replay of slot %d emitted %v", s, brief(got))
		}
	}
	// Emit itself is idempotent, and emits nothing not due.
	if ok, err := r.em.Emit(1, farFuture, &r.f); ok || err != nil {
		t.Fatalf("Emit of an emitted slot: %v %v", ok, err)
	}
}

// emitterAhead is TestEmitter's inputs running ahead: nodes 0 and 2
// reach slots 12 and 13 while the others stay at 11; then the counters.
func emitterAhead(r *emitterRun, lateness time.Duration) {
	t := r.t
	t.Helper()
	// Inputs running ahead: nodes 0 and 2 reach slot 12, then 13, while the
	// others stay at 11. Nodes 1, 2 and 4 wait for target 13 until its
	// deadline, and emit it from the windows ending at slot 12 (node 2's,
	// although it has 13 by then) or before; then target 14.
	if got := brief(r.step(slotEnd(12, 0), [2]int64{2, 12}, [2]int64{0, 12})); !slices.Equal(got, []briefFC{{0, 13, 0}}) {
		t.Fatalf("slot 12: %v", got)
	}
	if got := brief(r.step(slotEnd(12, lateness-time.Millisecond), [2]int64{2, 13}, [2]int64{0, 13})); !slices.Equal(got, []briefFC{{0, 14, 0}}) {
		t.Fatalf("slot 13: %v", got)
	}
	fs := r.step(slotEnd(12, lateness))
	if want := []briefFC{{1, 13, 1}, {2, 13, 1}, {4, 13, 1}}; !slices.Equal(brief(fs), want) {
		t.Fatalf("deadline of target 13: %v, want %v", brief(fs), want)
	}
	if in := fs[1].Inputs; !slices.Equal(in, []Input{{Sensor: 0, TS: 12 * testStep}, {Sensor: 2, TS: 12 * testStep}, {Sensor: 3, TS: 11 * testStep, Gaps: 1}}) {
		t.Errorf("node 2's inputs for slot 13: %v", in)
	}
	if got := r.step(slotEnd(13, lateness-time.Millisecond)); len(got) != 0 {
		t.Fatalf("before the deadline of target 14: %v", brief(got))
	}
	got := brief(r.step(slotEnd(13, lateness)))
	if want := []briefFC{{1, 14, 2}, {2, 14, 2}, {4, 14, 2}}; !slices.Equal(got, want) {
		t.Fatalf("deadline of target 14: %v, want %v", got, want)
	}
	if d := r.st.Counters.Skipped.Load(); d != 0 {
		t.Errorf("skipped %d forecast slots, want 0", d)
	}

	for k, n := range r.emitted {
		if n != 1 {
			t.Errorf("node %d slot %d emitted %d times", k[0], k[1], n)
		}
	}
	if e := r.st.Counters.Emitted.Load(); e != uint64(len(r.emitted)) {
		t.Errorf("emitted counter %d, want %d", e, len(r.emitted))
	}
	if r.st.Counters.Stale.Load() != 9 {
		t.Errorf("stale counter %d, want 9", r.st.Counters.Stale.Load())
	}
}

// TestEmitterSensorNeverHeard checks that a sensor without any reading
// (out of service since the start) does not hold back the forecasts of the
// sensors that read it, itself included: they come at the deadline, from
// its window of missing readings, marked so and a window stale, every slot.
func TestEmitterSensorNeverHeard(t *testing.T) {
	const T = 3
	b := testBundle(t, 5, T, 2, 4, 31)
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	const lateness = 90 * time.Second
	em := NewEmitter(st, lateness)
	// Receptive sets for n=5: 0:{0} 1:{1,2,4} 2:{0,2,3} 3:{1,3,4} 4:{0,2,4}.
	var f Forecast
	for slot := int64(10); slot <= 12; slot++ {
		for k := 0; k < 4; k++ { // never node 4
			res, err := st.Apply(Reading{Sensor: k, TS: slot * testStep, Values: []float64{float64(k + 1), float64(slot)}})
			if err != nil {
				t.Fatal(err)
			}
			em.OnApply(res, slotEnd(slot, time.Second))
		}
		var fresh, late []int
		for _, z := range em.Due(slotEnd(slot, time.Second)) {
			if ok, err := em.Emit(z, slotEnd(slot, time.Second), &f); err != nil || !ok {
				t.Fatalf("slot %d: node %d due: %v %v", slot, z, ok, err)
			}
			fresh = append(fresh, z)
		}
		if !slices.Equal(fresh, []int{0, 2}) {
			t.Errorf("slot %d: fresh forecasts of %v, want [0 2]", slot, fresh)
		}
		at := slotEnd(slot, lateness+time.Second)
		for _, z := range em.Due(at) {
			if ok, err := em.Emit(z, at, &f); err != nil || !ok {
				t.Fatalf("slot %d: node %d due at the deadline: %v %v", slot, z, ok, err)
			}
			late = append(late, z)
			i := slices.IndexFunc(f.Inputs, func(in Input) bool { return in.Sensor == 4 })
			if f.TS != (slot+1)*testStep || f.StaleSlots != T || i < 0 || f.Inputs[i] != (Input{Sensor: 4, TS: slot * testStep, Missing: true, Gaps: T}) {
				t.Errorf("slot %d: node %d's forecast for slot %d, stale %d, inputs %v; want slot %d, stale %d, node 4 missing at slot %d",
					slot, z, f.TS/testStep, f.StaleSlots, f.Inputs, slot+1, T, slot)
			}
		}
		if !slices.Equal(late, []int{1, 3, 4}) {
			t.Errorf("slot %d: forecasts at the deadline of %v, want [1 3 4]", slot, late)
		}
	}
	if s := st.Counters.Skipped.Load(); s != 0 {
		t.Errorf("%d forecast slots skipped, want 0", s)
	}
	// Every forecast read a window with gaps but nodes 0's and 2's of
	// slot 13, whose inputs 0, 2 and 3 then held slots 10 to 12.
	if e, p := st.Counters.Emitted.Load(), st.Counters.Partial.Load(); e != 15 || p != 13 {
		t.Errorf("%d forecasts emitted, %d with gaps; want 15, 13", e, p)
	}
}

// TestEmitterCatchUpBehindMissingInput checks that a backlog whose
// readings arrive together is forecast Lateness after they arrived, also
// behind an input that stays missing (a sensor out of service, or gone
// quiet): every slot at that deadline, not one Lateness after another,
// which left the dependents of a dead sensor 72 minutes to catch up on
// three hours of 5-minute slots.
func TestEmitterCatchUpBehindMissingInput(t *testing.T) {
	const T, first, last = 3, 10, 30
	for _, tc := range []struct {
		name   string
		quiet  int64 // node 4's last slot, 0 for never heard
		reload bool  // an emitter of a reloaded model takes over
	}{
		{"never heard", 0, false},
		{"gone quiet", 12, false},
		{"reloaded", 12, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBundle(t, 5, T, 2, 4, 31)
			st, err := NewState(b, testStep)
			if err != nil {
				t.Fatal(err)
			}
			const lateness = 2 * time.Minute
			em := NewEmitter(st, lateness)
			// The backlog arrives at once, long after its slots.
			arrived := slotEnd(last, time.Hour)
			for slot := int64(first); slot <= last; slot++ {
				for k := 0; k < 5; k++ {
					if k == 4 && slot > tc.quiet {
						continue
					}
					res, err := st.Apply(Reading{Sensor: k, TS: slot * testStep, Values: []float64{float64(k + 1), float64(slot)}})
					if err != nil {
						t.Fatal(err)
					}
					em.OnApply(res, arrived)
				}
			}
			if tc.reload {
				// As Service.Reload: the arrival clock moves over too.
				next := NewEmitter(st, lateness)
				next.Inherit(em)
				em = next
			}
			emit := func(now time.Time) map[int][]int64 {
				got := map[int][]int64{}
				for due := em.Due(now); len(due) > 0; due = em.Due(now) {
					fs, err := em.EmitMany(due, now)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range fs {
						got[f.Sensor] = append(got[f.Sensor], f.TS/testStep)
					}
				}
				return got
			}
			// Nodes 0 and 2 do not read node 4: all fresh at once, and so
			// are the others' slots up to the one after node 4's last.
			from := int64(first + 1)
			if tc.quiet > 0 {
				from = tc.quiet + 2
			}
			got := emit(arrived)
			if len(got[0]) != last-first+1 || len(got[2]) != last-first+1 || int64(len(got[1])) != from-first-1 {
				t.Fatalf("on arrival: %v", got)
			}
			if got := emit(arrived.Add(lateness - time.Millisecond)); len(got) != 0 {
				t.Fatalf("before the deadline: %v", got)
			}
			// Nodes 1, 3 and 4 read node 4: every slot at the deadline.
			got = emit(arrived.Add(lateness))
			for _, z := range []int{1, 3, 4} {
				if n := len(got[z]); int64(n) != last+2-from || got[z][0] != from || got[z][n-1] != last+1 {
					t.Errorf("node %d: slots %v at the deadline, want %d to %d", z, got[z], from, last+1)
				}
			}
			if s := st.Counters.Skipped.Load(); s != 0 {
				t.Errorf("%d slots skipped", s)
			}
		})
	}
}

// TestEmitterLatenessBeyondSlot checks live operation with a lateness
// longer than a slot and a sensor out of service: each slot of its
// dependents is emitted Lateness after its start. Counting each wait from
// the previous slot's emission instead fell behind by Lateness − step a
// slot, until inputs ran out of the history and slots were skipped.
func TestEmitterLatenessBeyondSlot(t *testing.T) {
	const T, first, last = 3, 10, 60
	b := testBundle(t, 5, T, 2, 4, 31)
	st, err := NewStateHistory(b, testStep, 12)
	if err != nil {
		t.Fatal(err)
	}
	const lateness = 7 * time.Minute // the slot is 5
	em := NewEmitter(st, lateness)
	var f Forecast
	emitted := map[int]int{}
	for slot := int64(first); slot <= last; slot++ {
		// Slot's readings at its end, then the clock runs on to the next.
		for k := 0; k < 4; k++ { // never node 4
			res, err := st.Apply(Reading{Sensor: k, TS: slot * testStep, Values: []float64{float64(k + 1), float64(slot)}})
			if err != nil {
				t.Fatal(err)
			}
			em.OnApply(res, slotEnd(slot, 0))
		}
		for now := slotEnd(slot, 0); now.Before(slotEnd(slot+1, 0)); now = now.Add(time.Minute) {
			for due := em.Due(now); len(due) > 0; due = em.Due(now) {
				for _, z := range due {
					if ok, err := em.Emit(z, now, &f); err != nil || !ok {
						t.Fatalf("emit %d: %v %v", z, ok, err)
					}
					emitted[z]++
					if z == 1 {
						if want := f.TS + lateness.Milliseconds(); f.EmittedMs != want {
							t.Fatalf("node 1's slot %d emitted at %d, want %d (Lateness after its start)", f.TS/testStep, f.EmittedMs, want)
						}
					}
				}
			}
		}
	}
	if s := st.Counters.Skipped.Load(); s != 0 {
		t.Errorf("%d slots skipped", s)
	}
	// Slot last+1 of the dependents of node 4 is not due before its end.
	for z := range 5 {
		want := last - first + 1
		if z == 1 || z == 3 || z == 4 {
			want--
		}
		if emitted[z] != want {
			t.Errorf("node %d: %d forecasts, want %d", z, emitted[z], want)
		}
	}
}

// TestEmitterCatchUp replays a stream as a consumer catching up on a
// backlog sees it: the sensors of one partition first, all slots, then
// those of the other. Within the history, every forecast slot is emitted
// once, fresh, and equal to the forecast of the same stream in slot order;
// beyond it, the slots whose windows are gone are skipped and counted, and
// the rest are still exact.
func TestEmitterCatchUp(t *testing.T) {
	const n, T, C, d, steps = 8, 4, 2, 5, 20
	b := testBundle(t, n, T, C, d, 41)
	data := testSeries(steps, n, C, 42)
	for i, v := range data {
		if v == 0 { // no missing readings: a missing one holds its dependents until the deadline
			data[i] = 40 + float64(i%7)
		}
	}
	rs := streamOf(data, steps, n, C, 3000)
	now := time.UnixMilli((3000 + steps) * testStep)
	run := func(history int, order []Reading) (map[[2]int64][]float64, *State) {
		t.Helper()
		st, err := NewStateHistory(b, testStep, history)
		if err != nil {
			t.Fatal(err)
		}
		// Lateness far beyond the test: only fresh forecasts.
		em := NewEmitter(st, 1<<40*time.Millisecond)
		got := map[[2]int64][]float64{}
		var f Forecast
		for _, r := range order {
			res, err := st.Apply(r)
			if err != nil {
				t.Fatal(err)
			}
			em.OnApply(res, time.UnixMilli(0))
			for due := em.Due(now); len(due) > 0; due = em.Due(now) {
				for _, z := range due {
					ok, err := em.Emit(z, now, &f)
					if err != nil || !ok {
						t.Fatalf("emit %d: %v %v", z, ok, err)
					}
					key := [2]int64{int64(z), f.TS / testStep}
					if _, dup := got[key]; dup {
						t.Fatalf("node %d slot %d emitted twice", z, key[1])
					}
					if f.StaleSlots != 0 {
						t.Fatalf("node %d slot %d stale by %d", z, key[1], f.StaleSlots)
					}
					got[key] = slices.Clone(f.Values)
				}
			}
		}
		// Skips names each slot counted as skipped, none emitted.
		var named uint64
		for _, k := range em.Skips(nil) {
			for slot := k.From; slot <= k.To; slot++ {
				if _, ok := got[[2]int64{int64(k.Sensor), slot}]; ok {
					t.Fatalf("node %d slot %d: named skipped, and emitted", k.Sensor, slot)
				}
			}
			named += uint64(k.To - k.From + 1)
		}
		if sk := st.Counters.Skipped.Load(); named != sk {
			t.Fatalf("Skips names %d slots, %d counted", named, sk)
		}
		return got, st
	}
	want, _ := run(0, rs)
	if len(want) == 0 {
		t.Fatal("no forecasts in slot order")
	}
	// The first three slots in order, then partition by partition.
	var skewed []Reading
	for _, r := range rs {
		if r.TS/testStep < 3003 {
			skewed = append(skewed, r)
		}
	}
	for _, part := range []int{0, 1} {
		for _, r := range rs {
			if r.Sensor%2 == part && r.TS/testStep >= 3003 {
				skewed = append(skewed, r)
			}
		}
	}
	got, st := run(steps, skewed)
	if st.Counters.Skipped.Load() != 0 {
		t.Errorf("history %d: %d slots skipped", steps, st.Counters.Skipped.Load())
	}
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("history %d: node %d slot %d missing", steps, k[0], k[1])
			continue
		}
		for c := range w {
			if math.Abs(g[c]-w[c]) > 1e-12*max(1, math.Abs(w[c])) {
				t.Errorf("node %d slot %d channel %d: %.15g caught up, %.15g in order", k[0], k[1], c, g[c], w[c])
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("history %d: %d forecasts caught up, %d in order", steps, len(got), len(want))
	}

	got, st = run(5, skewed)
	if sk := st.Counters.Skipped.Load(); sk == 0 || len(got)+int(sk) != len(want) {
		t.Errorf("history 5 of a skew of %d slots: %d skipped + %d emitted, want > 0 skipped and %d in all", steps-3, sk, len(got), len(want))
	}
	for k, g := range got {
		w, ok := want[k]
		if !ok || math.Abs(g[0]-w[0]) > 1e-12*max(1, math.Abs(w[0])) {
			t.Errorf("history 5: node %d slot %d: %v, in order %v", k[0], k[1], g, w)
		}
	}

	// A cold start with one partition silent until the other is done (its
	// first fetch slow): the nodes whose inputs span both have no forecast
	// before their first, and the slots lost before it count as skipped too.
	var cold []Reading
	for _, part := range []int{0, 1} {
		for _, r := range rs {
			if r.Sensor%2 == part {
				cold = append(cold, r)
			}
		}
	}
	got, st = run(5, cold)
	if sk := st.Counters.Skipped.Load(); sk == 0 || len(got)+int(sk) != len(want) {
		t.Errorf("history 5, one partition after the other: %d skipped + %d emitted, want > 0 skipped and %d in all", sk, len(got), len(want))
	}
}

// TestEmitManyMatchesEmit runs one stream twice, emitting with Emit node by
// node and with EmitMany: readings missing (deadline forecasts, stale),
// two partitions far apart (slots skipped: the backlog of one read within
// minutes, before the deadlines), the clock moving on. Both must
// emit the same forecasts in the same order, bit for bit, stamped and
// counted alike.
func TestEmitManyMatchesEmit(t *testing.T) {
	const n, T, C, d, steps = 9, 4, 2, 5, 40
	b := testBundle(t, n, T, C, d, 43)
	rs := streamOf(testSeries(steps, n, C, 44), steps, n, C, 3000)
	var order []Reading // the first 5 slots in order, then one partition far ahead of the other
	for _, r := range rs {
		if r.TS/testStep < 3005 {
			order = append(order, r)
		}
	}
	for _, part := range []int{0, 1} {
		for _, r := range rs {
			if r.Sensor%2 == part && r.TS/testStep >= 3005 {
				order = append(order, r)
			}
		}
	}
	run := func(many bool) ([]Forecast, *Counters) {
		t.Helper()
		st, err := NewStateHistory(b, testStep, 12)
		if err != nil {
			t.Fatal(err)
		}
		em := NewEmitter(st, 7*time.Minute)
		var (
			out []Forecast
			f   Forecast
			now time.Time
		)
		for i, r := range order {
			slot := r.TS / testStep
			if slot >= 3005 && r.Sensor%2 == 0 {
				slot = 3005 // partition 0's backlog, read at once
			}
			if at := slotEnd(slot, time.Duration(i%5)*time.Minute); at.After(now) {
				now = at
			}
			res, err := st.Apply(r)
			if err != nil {
				t.Fatal(err)
			}
			em.OnApply(res, now)
			for due := em.Due(now); len(due) > 0; due = em.Due(now) {
				if many {
					fs, err := em.EmitMany(due, now)
					if err != nil {
						t.Fatal(err)
					}
					for _, f := range fs {
						f.Values, f.Inputs = slices.Clone(f.Values), slices.Clone(f.Inputs)
						out = append(out, f)
					}
					continue
				}
				for _, z := range due {
					if ok, err := em.Emit(z, now, &f); err != nil || !ok {
						t.Fatalf("emit %d: %v %v", z, ok, err)
					}
					g := f
					g.Values, g.Inputs = slices.Clone(f.Values), slices.Clone(f.Inputs)
					out = append(out, g)
				}
			}
		}
		return out, st.Counters
	}
	one, c1 := run(false)
	many, c2 := run(true)
	if len(one) == 0 || c1.Stale.Load() == 0 || c1.Skipped.Load() == 0 {
		t.Fatalf("%d forecasts, %d stale, %d skipped: the stream should make all three", len(one), c1.Stale.Load(), c1.Skipped.Load())
	}
	if len(many) != len(one) {
		t.Fatalf("EmitMany emitted %d forecasts, Emit %d", len(many), len(one))
	}
	for i := range one {
		a, b := one[i], many[i]
		if a.Sensor != b.Sensor || a.TS != b.TS || a.StaleSlots != b.StaleSlots || a.EmittedMs != b.EmittedMs || a.Model != b.Model ||
			!slices.Equal(a.Values, b.Values) || !slices.Equal(a.Inputs, b.Inputs) {
			t.Fatalf("forecast %d: Emit %+v, EmitMany %+v", i, a, b)
		}
	}
	for _, c := range [][2]uint64{{c1.Emitted.Load(), c2.Emitted.Load()}, {c1.Stale.Load(), c2.Stale.Load()}, {c1.Skipped.Load(), c2.Skipped.Load()}} {
		if c[0] != c[1] {
			t.Errorf("counters differ: Emit %d, EmitMany %d (emitted, stale, skipped: %d %d %d)", c[0], c[1], c1.Emitted.Load(), c1.Stale.Load(), c1.Skipped.Load())
		}
	}
	if _, err := (&Emitter{st: &State{n: 3}}).EmitMany([]int{3}, time.Time{}); err == nil {
		t.Error("EmitMany of a node outside the graph: no error")
	}
}

// A forecast the model makes non-finite (a reading far beyond the
// normaliser's scale) passes its slot by, counted, rather than stopping
// the emitter or holding the node back: every other forecast is emitted,
// the node's next slot after the bad reading has left the window follows,
// and the emit-delay histogram saturates rather than wraps for slots far
// from now.
func TestEmitterNonFinite(t *testing.T) {
	const n, T, C = 6, 4, 3
	b := testBundle(t, n, T, C, 8, 1)
	for c := range C {
		b.Meta.Norm.Std[c] = 0.01
	}
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	em := NewEmitter(st, time.Hour)
	emitted := map[int][]int64{} // node → slots emitted
	const last = 12
	for s := int64(1); s <= last; s++ {
		now := slotEnd(s, time.Second)
		for z := range n {
			v := []float64{50, 60, 70}
			if z == 2 && s == 5 {
				v = []float64{math.MaxFloat64, -math.MaxFloat64, math.MaxFloat64}
			}
			res, err := st.Apply(Reading{Sensor: z, TS: s * testStep, Values: v})
			if err != nil {
				t.Fatal(err)
			}
			em.OnApply(res, now)
		}
		fs, err := em.EmitMany(em.Due(now), now)
		if err != nil {
			t.Fatalf("slot %d: %v", s, err)
		}
		for _, f := range fs {
			for _, v := range f.Values {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("sensor %d slot %d: forecast %v emitted", f.Sensor, f.TS/testStep, f.Values)
				}
			}
			emitted[f.Sensor] = append(emitted[f.Sensor], f.TS/testStep)
		}
	}
	c := st.Counters
	passed := c.NonFinite.Load()
	if passed == 0 {
		t.Fatal("no forecast came out non-finite: the test does not test")
	}
	if got, want := c.Emitted.Load()+passed, uint64(n*last); got != want {
		t.Errorf("%d emitted + %d passed by = %d slots, want %d", c.Emitted.Load(), passed, got, want)
	}
	// The windows that read slot 5 of sensor 2 end by slot 5+T: every
	// sensor forecasts the slots after them.
	for z := range n {
		if s := emitted[z]; len(s) == 0 || s[len(s)-1] != last+1 {
			t.Errorf("sensor %d: slots emitted %v, want the last to be %d", z, s, last+1)
		}
	}
	t.Logf("%d slots passed by, %d emitted", passed, c.Emitted.Load())

	// Emit (one node) passes the slot by too, and says why.
	if _, err := st.Apply(Reading{Sensor: 2, TS: (last + 1) * testStep, Values: []float64{math.MaxFloat64, -math.MaxFloat64, math.MaxFloat64}}); err != nil {
		t.Fatal(err)
	}
	var f Forecast
	for z := range n {
		if _, err := st.Apply(Reading{Sensor: z, TS: (last + 1) * testStep, Values: []float64{50, 60, 70}}); err != nil && z != 2 {
			t.Fatal(err)
		}
	}
	before := c.NonFinite.Load()
	ok, err := em.Emit(2, farFuture, &f)
	if ok || !errors.Is(err, ErrNonFinite) || c.NonFinite.Load() != before+1 {
		t.Errorf("Emit: %v, %v, %d more passed by; want false, ErrNonFinite, 1", ok, err, c.NonFinite.Load()-before)
	}
	if ok, err := em.Emit(2, farFuture, &f); ok || err != nil {
		t.Errorf("Emit again: %v, %v; want the slot passed by, nothing due", ok, err)
	}

	if got := msDuration(-(1 << 62)); got != math.MinInt64 {
		t.Errorf("msDuration(-2^62) = %v", got)
	}
	if got := msDuration(1 << 62); got != math.MaxInt64 {
		t.Errorf("msDuration(2^62) = %v", got)
	}
	if got := msDuration(-1500); got != -1500*time.Millisecond {
		t.Errorf("msDuration(-1500) = %v", got)
	}
}

// An emitter made anew on a state (a reload) counts deadlines from the
// slots alone: while catching up, the targets the old one had just begun
// to wait for would be due at once, stale. Inherit keeps the old
// deadlines; the control without it shows the difference.
func TestEmitterInherit(t *testing.T) {
	const n, lateness = 5, time.Hour
	b := testBundle(t, n, 3, 2, 4, 31)
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	old := NewEmitter(st, lateness)
	now := slotEnd(100, 0) // catching up: slots 1–6 are long past
	for s := int64(1); s <= 6; s++ {
		for z := range n {
			if z == 3 && s == 6 {
				continue // on its way
			}
			res, err := st.Apply(Reading{Sensor: z, TS: s * testStep, Values: []float64{1, 2}})
			if err != nil {
				t.Fatal(err)
			}
			old.OnApply(res, now)
		}
		for {
			fs, err := old.EmitMany(old.Due(now), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) == 0 {
				break
			}
		}
	}
	waiting := 0
	for z := range n {
		if old.pending[z] != noSlot {
			waiting++
		}
	}
	if waiting == 0 {
		t.Fatal("no target waits for sensor 3: the test does not test")
	}
	for _, inherit := range []bool{false, true} {
		e := NewEmitter(st, lateness)
		if inherit {
			e.Inherit(old)
		}
		due := len(e.Due(now))
		if inherit && due != 0 || !inherit && due != waiting {
			t.Errorf("inherit %v: %d due at once, want %d", inherit, due, map[bool]int{false: waiting, true: 0}[inherit])
		}
		if inherit {
			if got := len(e.Due(now.Add(lateness))); got != waiting {
				t.Errorf("inherit: %d due after the lateness, want %d", got, waiting)
			}
			if at, ok := e.NextDeadline(); ok && at.Before(now.Add(lateness)) {
				t.Errorf("next deadline %v, before the old one", at)
			}
		}
	}
}
