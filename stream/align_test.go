package stream

import (
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func TestAligner(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	msg := func(p int, off, hwm int64) kafka.Message {
		return kafka.Message{Partition: p, Offset: off, HighWaterMark: hwm}
	}
	a := NewAligner([]int{0, 1, 2}, 2, time.Second, 100, t0)
	// Partition 0 is fetched far ahead (slots 10…19, more to come);
	// partition 1 has only slot 10 so far (more to come); partition 2 has
	// not answered yet.
	for i := int64(0); i < 10; i++ {
		a.Add(Held{Msg: msg(0, i, 100), Slot: 10 + i, OK: true})
	}
	a.Add(Held{Msg: msg(1, 0, 50), OK: false}) // undecodable: released at the head
	a.Add(Held{Msg: msg(1, 1, 50), Slot: 10, OK: true})
	slotsOf := func(hs []Held) (out [][2]int64) {
		for _, h := range hs {
			out = append(out, [2]int64{int64(h.Msg.Partition), h.Msg.Offset})
		}
		return out
	}
	if got := a.Release(t0.Add(10*time.Millisecond), nil); len(got) != 1 || got[0].OK {
		t.Fatalf("while partition 2 has not answered: released %v, want only the undecodable message", slotsOf(got))
	}
	// After the idle time partition 2 holds nobody back; partition 1 is at
	// slot 10, so up to slot 12 goes.
	got := a.Release(t0.Add(2*time.Second), nil)
	if want := [][2]int64{{0, 0}, {0, 1}, {0, 2}, {1, 1}}; !slices.Equal(slotsOf(got), want) {
		t.Fatalf("released %v, want %v", slotsOf(got), want)
	}
	if a.Len() != 7 {
		t.Fatalf("held %d, want 7", a.Len())
	}
	// Partition 1 catches up to its end at slot 15: nobody is behind but
	// partition 0, whose frontier is 19, so all of it goes.
	a.Add(Held{Msg: msg(1, 2, 3), Slot: 15, OK: true}) // offset 2 of 3: the end
	got = a.Release(t0.Add(2*time.Second), nil)
	if len(got) != 8 || a.Len() != 0 {
		t.Fatalf("after partition 1 caught up: released %d, held %d; want 8 and 0", len(got), a.Len())
	}
	for i := 1; i < 7; i++ {
		if got[i].Msg.Partition == 0 && got[i-1].Msg.Partition == 0 && got[i].Msg.Offset < got[i-1].Msg.Offset {
			t.Fatalf("partition order broken: %v", slotsOf(got))
		}
	}

	// Overflow: more held than allowed releases everything, counted.
	b := NewAligner([]int{0, 1}, 0, 0, 3, t0)
	b.Add(Held{Msg: msg(1, 0, 10), Slot: 1, OK: true})
	for i := int64(0); i < 4; i++ {
		b.Add(Held{Msg: msg(0, i, 10), Slot: 5 + i, OK: true})
	}
	if got := b.Release(t0, nil); len(got) != 5 || b.Overflows != 1 {
		t.Fatalf("overflow: released %d (want 5), overflows %d (want 1)", len(got), b.Overflows)
	}
}
