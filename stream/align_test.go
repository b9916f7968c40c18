package stream

import (
	"slices"
	"testing"
	"time"
)

func TestAligner(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	msg := func(p int, off, hwm int64) Record {
		return Record{Partition: p, Offset: off, HighWaterMark: hwm}
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

// TestAlignerStable holds partition 1's readings for partition 0, which
// says more follows but stops at an open transaction: Quiet names it once
// it has been quiet long enough, Stable with an offset past what it
// fetched changes nothing, Stable at what it fetched releases partition 1
// until partition 0's next message says it is behind again.
func TestAlignerStable(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	msg := func(p int, off, hwm int64) Record {
		return Record{Partition: p, Offset: off, HighWaterMark: hwm}
	}
	a := NewAligner([]int{0, 1}, 2, time.Second, 100, t0)
	for i := int64(0); i < 5; i++ { // offsets 0…4, slots 0…4; an open transaction from 5 to 9
		a.Add(Held{Msg: msg(0, i, 10), Slot: i, OK: true, Arrived: t0})
	}
	for i := int64(0); i < 20; i++ { // caught up at slot 19
		a.Add(Held{Msg: msg(1, i, 20), Slot: i, OK: true, Arrived: t0.Add(time.Second)})
	}
	if got := a.Release(t0, nil); len(got) != 5+7 {
		t.Fatalf("released %d, want 12 (partition 1 up to slot 4+2)", len(got))
	}
	if got := a.Quiet(t0.Add(time.Second), time.Second, nil); len(got) != 0 {
		t.Fatalf("quiet after a second: %v, want none yet", got)
	}
	now := t0.Add(1500 * time.Millisecond)
	if got := a.Quiet(now, time.Second, nil); !slices.Equal(got, []int{0}) {
		t.Fatalf("quiet %v, want [0] (partition 1 is caught up)", got)
	}
	for _, tc := range []struct {
		p        int
		lso      int64
		released int
	}{
		{1, 20, 0}, // caught up already
		{0, 7, 0},  // offsets 5 and 6 can still be fetched
		{2, 0, 0},  // unknown partition
		{0, 5, 13}, // stopped at the transaction: the rest of partition 1 goes
	} {
		if changed := a.Stable(tc.p, tc.lso, now); changed != (tc.released > 0) {
			t.Errorf("Stable(%d, %d) = %v", tc.p, tc.lso, changed)
		}
		if got := a.Release(now, nil); len(got) != tc.released {
			t.Fatalf("after Stable(%d, %d): released %d, want %d", tc.p, tc.lso, len(got), tc.released)
		}
	}
	if got := a.Quiet(now, time.Second, nil); len(got) != 0 {
		t.Fatalf("quiet %v after Stable, want none", got)
	}
	// The transaction commits: partition 0's next message (offset 5, its
	// marker at 10 still to come) counts it as catching up again.
	a.Add(Held{Msg: msg(1, 20, 22), Slot: 20, OK: true, Arrived: now})
	a.Add(Held{Msg: msg(1, 21, 22), Slot: 21, OK: true, Arrived: now})
	a.Add(Held{Msg: msg(0, 5, 11), Slot: 5, OK: true, Arrived: now})
	if got := a.Release(now, nil); len(got) != 1 || got[0].Msg.Partition != 0 {
		t.Fatalf("released %v, want only partition 0's slot 5 (partition 1 waits again)", got)
	}
}

// TestAlignerBacklog holds partition 0's readings for partition 1, which
// has not answered its first fetch: past Idle only while the broker says
// partition 1 has records to read, and up to BacklogWait; a partition
// known to be empty holds nobody back even within Idle.
func TestAlignerBacklog(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	msg := func(p int, off, hwm int64) Record {
		return Record{Partition: p, Offset: off, HighWaterMark: hwm}
	}
	for _, tc := range []struct {
		name    string
		backlog int64 // -1: not asked
		at      time.Duration
		want    int // readings of partition 0 released
	}{
		{"unknown within Idle", -1, 500 * time.Millisecond, 0},
		{"unknown past Idle", -1, 2 * time.Second, 5},
		{"backlog within Idle", 7, 500 * time.Millisecond, 0},
		{"backlog past Idle", 7, 2 * time.Second, 0},
		{"backlog past BacklogWait", 7, 31 * time.Second, 5},
		{"empty within Idle", 0, 500 * time.Millisecond, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAligner([]int{0, 1}, 2, time.Second, 100, t0)
			a.BacklogWait = 30 * time.Second
			if got := a.Unknown(t0, nil); !slices.Equal(got, []int{0, 1}) {
				t.Fatalf("unknown %v, want [0 1]", got)
			}
			if tc.backlog >= 0 {
				if !a.Backlog(1, tc.backlog, t0) {
					t.Fatal("Backlog of an unknown partition reported false")
				}
				if a.Backlog(1, tc.backlog, t0) {
					t.Fatal("a second Backlog reported true")
				}
			}
			for i := int64(0); i < 5; i++ { // partition 0 all fetched: caught up
				a.Add(Held{Msg: msg(0, i, 5), Slot: 10 + i, OK: true, Arrived: t0})
			}
			if got := a.Unknown(t0, nil); (tc.backlog < 0) != slices.Equal(got, []int{1}) || tc.backlog >= 0 && len(got) != 0 {
				t.Fatalf("unknown %v after partition 0's messages", got)
			}
			if got := a.Release(t0.Add(tc.at), nil); len(got) != tc.want {
				t.Fatalf("released %d, want %d", len(got), tc.want)
			}
		})
	}
	// A first message makes the backlog moot: partition 1 is then held to
	// its frontier like any other.
	a := NewAligner([]int{0, 1}, 2, time.Second, 100, t0)
	a.Backlog(1, 7, t0)
	a.Add(Held{Msg: msg(1, 0, 7), Slot: 10, OK: true, Arrived: t0})
	for i := int64(0); i < 5; i++ {
		a.Add(Held{Msg: msg(0, i, 5), Slot: 10 + i, OK: true, Arrived: t0})
	}
	if got := a.Release(t0.Add(2*time.Second), nil); len(got) != 1+3 {
		t.Fatalf("released %d, want 4 (partition 1's slot 10, partition 0 up to slot 12)", len(got))
	}
	if a.Backlog(1, 7, t0) {
		t.Fatal("Backlog of a partition already fetched from reported true")
	}

	// A standby handed the partitions an hour after it started: Restart
	// counts the waits again and forgets what was learnt of partition 1.
	b := NewAligner([]int{0, 1}, 2, time.Second, 100, t0)
	b.BacklogWait = 30 * time.Second
	b.Backlog(1, 0, t0) // empty when asked at start
	later := t0.Add(time.Hour)
	b.Restart(later)
	if got := b.Unknown(t0, nil); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("unknown %v after Restart, want [0 1]", got)
	}
	b.Backlog(1, 9, t0) // it has records now
	for i := int64(0); i < 5; i++ {
		b.Add(Held{Msg: msg(0, i, 5), Slot: 10 + i, OK: true, Arrived: later})
	}
	if got := b.Release(later.Add(2*time.Second), nil); len(got) != 0 {
		t.Fatalf("released %d two seconds after Restart, want 0 (partition 1 has records)", len(got))
	}
	if got := b.Release(later.Add(31*time.Second), nil); len(got) != 5 {
		t.Fatalf("released %d past BacklogWait after Restart, want 5", len(got))
	}
}

// TestAlignerQueueReusesSpace keeps one partition 30 slots ahead of the
// other for 2,000 slots: the queue of the one ahead releases in offset
// order and moves what it holds down instead of growing (its capacity
// stays within a few times what it holds).
func TestAlignerQueueReusesSpace(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a := NewAligner([]int{0, 1}, 0, time.Second, 1<<20, t0)
	var next, held int64 // partition 0's next offset; most held at once
	var released []Held
	for s := int64(0); s < 2000; s++ {
		a.Add(Held{Msg: Record{Partition: 0, Offset: next, HighWaterMark: 1 << 40}, Slot: s, OK: true})
		next++
		if s >= 30 {
			a.Add(Held{Msg: Record{Partition: 1, Offset: s - 30, HighWaterMark: 1 << 40}, Slot: s - 30, OK: true})
		}
		held = max(held, int64(a.Len()))
		released = a.Release(t0.Add(2*time.Second), released)
	}
	var offs []int64
	for _, h := range released {
		if h.Msg.Partition == 0 {
			offs = append(offs, h.Msg.Offset)
		}
	}
	if len(offs) < 1900 || !slices.IsSorted(offs) || offs[0] != 0 || offs[len(offs)-1] != int64(len(offs)-1) {
		t.Fatalf("partition 0 released %d readings, in order %v", len(offs), slices.IsSorted(offs))
	}
	if c := cap(a.parts[0].items); c > 4*int(held) {
		t.Errorf("queue capacity %d for at most %d held", c, held)
	}
}

// TestAlignerHoldsBurst replays what a restarted service met when a file
// was published unpaced: every partition caught up (or not fetched from
// since the restart) at slot 5, then a burst of slots 6…60 written to all
// partitions, of which partition 0's is fetched first. Applied at once,
// its readings ran 55 slots ahead of partition 1's, past the history, and
// the forecasts that need both were lost. A reading more than Slack ahead
// of what was applied begins a hold: nothing past that slot plus Slack is
// released until every partition has had a message since, or for Hold.
func TestAlignerHoldsBurst(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const slack = 18
	for _, tc := range []struct {
		name string
		base int64 // SetBase; noSlot: a fresh service, nothing applied
		from int64 // the burst's first slot
	}{
		{"restarted", 5, 6},
		{"fresh", noSlot, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAligner([]int{0, 1}, slack, time.Second, 1<<20, t0)
			a.Hold = time.Second
			a.SetBase(tc.base)
			// Both partitions known and caught up: nobody holds back by
			// the rule of partitions catching up.
			a.Backlog(0, 0, t0)
			a.Backlog(1, 0, t0)
			at := t0.Add(5 * time.Second)
			burst := func(p int, arrived time.Time) {
				for i, s := 0, tc.from; s <= 60; i, s = i+1, s+1 {
					a.Add(Held{Msg: Record{Partition: p, Offset: int64(i), HighWaterMark: int64(i + 1)}, Slot: s, OK: true, Arrived: arrived})
				}
			}
			burst(0, at)
			newest := func(hs []Held) int64 {
				n := int64(noSlot)
				for _, h := range hs {
					n = max(n, h.Slot)
				}
				return n
			}
			ref := tc.base
			if ref == noSlot {
				ref = tc.from
			}
			got := a.Release(at.Add(10*time.Millisecond), nil)
			if n := newest(got); n != ref+slack {
				t.Fatalf("partition 0's burst alone: released up to slot %d, want %d (Slack after %d)", n, ref+slack, ref)
			}
			// Partition 1's share comes 300 ms later: with every partition
			// fetched since the burst began, both shares go together, for
			// the caller to apply in slot order.
			burst(1, at.Add(300*time.Millisecond))
			got = a.Release(at.Add(310*time.Millisecond), nil)
			if a.Len() != 0 || newest(got) != 60 || got[len(got)-1].Msg.Partition != 1 {
				t.Fatalf("both shares in: released up to %d (%d readings), %d held; want all", newest(got), len(got), a.Len())
			}
			// A partition that says nothing holds a burst for Hold only.
			q := NewAligner([]int{0, 1}, slack, time.Second, 1<<20, t0)
			q.Hold = time.Second
			q.SetBase(tc.base)
			q.Backlog(0, 0, t0)
			q.Backlog(1, 0, t0)
			for i, s := 0, tc.from; s <= 60; i, s = i+1, s+1 {
				q.Add(Held{Msg: Record{Partition: 0, Offset: int64(i), HighWaterMark: int64(i + 1)}, Slot: s, OK: true, Arrived: at})
			}
			if got := q.Release(at, nil); newest(got) != ref+slack {
				t.Fatalf("partition 1 silent: released up to %d at once, want %d", newest(got), ref+slack)
			}
			if got := q.Release(at.Add(900*time.Millisecond), nil); len(got) != 0 {
				t.Fatalf("partition 1 silent, before Hold: released up to %d, want nothing more", newest(got))
			}
			if got := q.Release(at.Add(time.Second), nil); newest(got) != 60 || q.Len() != 0 {
				t.Fatalf("partition 1 silent, after Hold: released up to %d, %d held; want all", newest(got), q.Len())
			}
			// Live readings, a slot after the last, never wait.
			a.Add(Held{Msg: Record{Partition: 0, Offset: 100, HighWaterMark: 101}, Slot: 61, OK: true, Arrived: at.Add(2 * time.Second)})
			if got := a.Release(at.Add(2*time.Second), nil); len(got) != 1 {
				t.Fatalf("a live reading of the next slot: released %d, want 1", len(got))
			}
		})
	}
}

// A partition that lets a burst's hold run out without a message is
// silent: later bursts do not wait for it, nor while its readings come
// more than Slack behind what was applied (they are late whatever waits),
// until it catches up.
func TestAlignerSilentPartition(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const slack = 18
	a := NewAligner([]int{0, 1}, slack, time.Second, 1<<20, t0)
	a.Hold = time.Second
	a.SetBase(5)
	a.Backlog(0, 0, t0)
	a.Backlog(1, 0, t0)
	off := map[int]int64{}
	burst := func(p int, from, to int64, arrived time.Time) {
		for s := from; s <= to; s++ {
			a.Add(Held{Msg: Record{Partition: p, Offset: off[p], HighWaterMark: off[p] + 1}, Slot: s, OK: true, Arrived: arrived})
			off[p]++
		}
	}
	newest := func(hs []Held) int64 {
		n := int64(noSlot)
		for _, h := range hs {
			n = max(n, h.Slot)
		}
		return n
	}
	for _, step := range []struct {
		name     string
		p        int
		from, to int64
		at       time.Duration // the burst's arrival, after t0
		release  time.Duration // when to release, after t0
		want     int64         // newest slot released
	}{
		{"first burst, partition 1 silent: held", 0, 6, 60, 5 * time.Second, 5*time.Second + 10*time.Millisecond, 5 + slack},
		{"first burst: the hold runs out", 0, 61, 60, 5 * time.Second, 6*time.Second + 10*time.Millisecond, 60},
		{"second burst: partition 1 silent, no hold", 0, 61, 120, 10 * time.Second, 10*time.Second + 10*time.Millisecond, 120},
		{"partition 1 speaks again, late", 1, 60, 60, 11 * time.Second, 11 * time.Second, 60},
		{"third burst: partition 1, far behind what was applied, is not waited for", 0, 121, 180, 12 * time.Second, 12*time.Second + 10*time.Millisecond, 180},
		{"partition 1 catches up", 1, 61, 170, 13 * time.Second, 13 * time.Second, 170},
		{"fourth burst: held for partition 1 again", 0, 181, 240, 14 * time.Second, 14*time.Second + 10*time.Millisecond, 170 + slack},
		{"fourth burst: the hold runs out", 0, 241, 240, 14 * time.Second, 15*time.Second + 10*time.Millisecond, 240},
	} {
		if step.from <= step.to {
			burst(step.p, step.from, step.to, t0.Add(step.at))
		}
		if got := newest(a.Release(t0.Add(step.release), nil)); got != step.want {
			t.Fatalf("%s: released up to slot %d, want %d", step.name, got, step.want)
		}
	}
}

// TestAlignerLaggingPartitionChecked holds partition 0's readings for
// partition 1, caught up when last fetched but 60 slots behind: a
// producer may yet write, or the consumer yet fetch, its share of those
// slots. After Hold, Quiet names it for the broker to be asked; with
// records left to fetch it counts as catching up and holds the others
// back for as long as it takes; with none it is silent and holds nobody
// back; without an answer it is taken for silent after SilentAfter.
func TestAlignerLaggingPartitionChecked(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	const slack = 18
	for _, tc := range []struct {
		name   string
		lso    int64 // partition 1's last stable offset when asked; -1: no answer
		at     time.Duration
		newest int64 // newest slot released by at
	}{
		{"within Hold", -1, 900 * time.Millisecond, 40 + slack},
		{"records left: catching up", 100, 20 * time.Second, 40 + slack},
		{"none left: silent", 41, 1600 * time.Millisecond, 100},
		{"no answer, before SilentAfter", -1, 9 * time.Second, 40 + slack},
		{"no answer, after SilentAfter", -1, 10 * time.Second, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := NewAligner([]int{0, 1}, slack, time.Second, 1<<20, t0)
			a.Hold, a.SilentAfter = time.Second, 10*time.Second
			at := t0.Add(5 * time.Second)
			for s := int64(0); s <= 100; s++ { // each caught up when fetched
				a.Add(Held{Msg: Record{Partition: 0, Offset: s, HighWaterMark: s + 1}, Slot: s, OK: true, Arrived: at})
				if s <= 40 {
					a.Add(Held{Msg: Record{Partition: 1, Offset: s, HighWaterMark: s + 1}, Slot: s, OK: true, Arrived: at})
				}
			}
			newest := int64(noSlot)
			release := func(now time.Time) {
				for _, h := range a.Release(now, nil) {
					newest = max(newest, h.Slot)
				}
			}
			release(at)
			if newest != 40+slack {
				t.Fatalf("released up to %d at once, want %d", newest, 40+slack)
			}
			asked := at.Add(1500 * time.Millisecond)
			if got := a.Quiet(asked, time.Second, nil); !slices.Equal(got, []int{1}) {
				t.Fatalf("quiet %v after Hold, want [1]", got)
			}
			if tc.lso >= 0 && tc.at > 1500*time.Millisecond {
				a.Stable(1, tc.lso, asked)
			}
			release(at.Add(tc.at))
			if newest != tc.newest {
				t.Fatalf("released up to %d, want %d", newest, tc.newest)
			}
			if silent := a.Silenced(nil); (tc.newest == 100) != slices.Equal(silent, []int{1}) {
				t.Errorf("silenced %v", silent)
			}
		})
	}
}
