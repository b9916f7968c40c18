package stream

import (
	"errors"
	"testing"
)

// TestWatermark feeds forty sensors (a quorum of four) and checks which
// readings the mark admits: one sensor's clock a year ahead is refused,
// again and again, while the stream goes on, and does not count towards
// the quorum of another sensor's reading too far ahead; a jump of the
// whole stream is refused until four sensors have claimed it (the bad
// clock's claim, far beyond, not among them) and then followed.
func TestWatermark(t *testing.T) {
	const n, ahead = 40, 48
	var w watermark
	w.reset(n, ahead, func(int) int64 { return noSlot })
	if w.quorum != 4 {
		t.Fatalf("quorum %d of %d sensors, want 4", w.quorum, n)
	}
	type step struct {
		z    int
		slot int64
		want bool
	}
	var steps []step
	for z := range n { // no mark before four sensors have readings
		steps = append(steps, step{z, 100, true})
	}
	steps = append(steps,
		step{3, 100 + 365*96, false}, // a year ahead
		step{3, 101, true},           // its real reading: applied
		step{4, 100 + ahead + 1, false},
		step{5, 100 + ahead, true}, // at the limit
		step{3, 100 + 365*96, false},
	)
	for z := range n { // the stream moves on by steps of 40
		steps = append(steps, step{z, 140, true})
	}
	for z := range n {
		steps = append(steps, step{z, 180, true})
	}
	for z := range n {
		// A jump of 1000 slots: sensors 0, 1 and 2 claim it, refused;
		// sensor 3, whose claim is a year ahead, claims nothing new and
		// is refused too; sensor 4 makes the quorum.
		steps = append(steps, step{z, 1180, z >= 4})
	}
	for i, s := range steps {
		if got := w.admit(s.z, s.slot); got != s.want {
			t.Fatalf("step %d: sensor %d slot %d admitted %v, want %v (mark %d)", i, s.z, s.slot, got, s.want, w.mark)
		}
	}
	if w.mark != 1180 {
		t.Errorf("mark %d after the jump, want 1180", w.mark)
	}

	// Off: everything goes.
	var off watermark
	off.reset(n, 0, func(int) int64 { return 5 })
	if !off.admit(0, 1<<40) {
		t.Error("a mark of 0 slots refused a reading")
	}
}

// TestStateMaxAhead applies readings to a state with SetMaxAhead: a
// reading far ahead of the stream is refused (too_new) and does not move
// its sensor's window; the mark survives a snapshot and restore.
func TestStateMaxAhead(t *testing.T) {
	const n, T, C = 4, 3, 2
	b := testBundle(t, n, T, C, 4, 1)
	st, err := NewStateHistory(b, testStep, 6)
	if err != nil {
		t.Fatal(err)
	}
	st.SetMaxAhead(9)
	for slot := int64(1); slot <= 5; slot++ {
		for z := range n {
			if _, err := st.Apply(Reading{Sensor: z, TS: slot * testStep, Values: []float64{1, 2}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var rej *RejectError
	_, err = st.Apply(Reading{Sensor: 2, TS: 15 * testStep, Values: []float64{1, 2}})
	if !errors.As(err, &rej) || rej.Reason != ReasonTooNew {
		t.Fatalf("a reading 10 slots ahead: %v, want too_new", err)
	}
	if _, err := st.Apply(Reading{Sensor: 2, TS: 14 * testStep, Values: []float64{1, 2}}); err != nil {
		t.Fatalf("a reading 9 slots ahead: %v", err)
	}
	st2, err := NewStateHistory(b, testStep, 6)
	if err != nil {
		t.Fatal(err)
	}
	st2.SetMaxAhead(9)
	if err := st2.Restore(st.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if _, err := st2.Apply(Reading{Sensor: 1, TS: 40 * testStep, Values: []float64{1, 2}}); !errors.As(err, &rej) || rej.Reason != ReasonTooNew {
		t.Fatalf("restored: a reading 35 slots ahead: %v, want too_new", err)
	}
	if _, err := st2.Apply(Reading{Sensor: 1, TS: 6 * testStep, Values: []float64{1, 2}}); err != nil {
		t.Fatalf("restored: the next slot: %v", err)
	}
}
