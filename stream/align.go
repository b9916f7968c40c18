package stream

import (
	"math"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// Aligner holds the readings fetched from the partitions of the readings
// topic and releases them so that no partition runs more than Slack slots
// ahead of the slowest one still catching up.
//
// A consumer catching up on a backlog reads partitions unevenly (kafka-go
// fetches each partition on its own and a partition with fewer sensors
// covers more slots per message); applied as fetched, the readings of one
// partition could run hundreds of slots ahead of another's and the
// forecasts that need both would lose their exact windows. Held readings
// keep their partition's order, so the offsets committed after they are
// applied never pass a reading still held.
//
// A partition counts as catching up while it has messages left after the
// last one fetched (Message.HighWaterMark). Before its first message it
// counts as catching up for Idle after the aligner started (or Restart)
// or, once the caller has learnt from the broker that it has records to
// read (Backlog), for BacklogWait: a partition slow to answer its first
// fetch (a broker slow to respond, a fetch timed out and retried) must not
// let the others run ahead, out of the exact windows, as an empty one may.
// Partitions that are caught up, idle or known to be empty hold nobody
// back.
//
// Read committed, a partition cannot be read past its last stable offset,
// the first record of a transaction still open, while its high watermark
// lies beyond: the caller asks the broker for the last stable offsets of
// the partitions Quiet names and passes them to Stable, so that a
// transaction left open does not hold the others back. Readings that
// cannot be decoded (slot unknown) are released as soon as they reach the
// head of their partition, to be dead-lettered in order. If more than
// MaxHeld readings are held, all are released (and Overflows counts it):
// exactness gives way to memory.
//
// A partition that was caught up when last fetched from (or has not been
// fetched from since the aligner started) may yet get readings of the
// slots the others are being applied at: a producer writes the
// partitions' shares of a burst (a file published unpaced) one partition
// at a time, and a consumer fetches them one partition at a time too, a
// fetch that timed out waiting seconds for kafka-go to reconnect. So every
// partition holds the others to Slack after its position: the newest slot
// fetched from it, or, not fetched from yet, the newest slot applied
// before the aligner started (SetBase) or else the oldest slot added. A
// partition holding readings back so is lagging; one that is not catching
// up and has lagged for Hold is checked: the caller asks the broker
// (Quiet, Unknown) whether it has records this consumer has not fetched
// (Stable, Backlog). If it has, it counts as catching up; if it has none,
// it is silent (its sensors gone, or the topic grown partitions no one
// writes to) and holds nobody back until it has a message fetched within
// Slack of the newest slot applied. Without an answer it is taken for
// silent after SilentAfter. Live readings, a slot after the last, never
// wait.
//
// An Aligner is not safe for concurrent use.
type Aligner struct {
	Slack       int64
	Idle        time.Duration
	BacklogWait time.Duration // see Backlog; at least Idle
	// Hold is how long a partition not catching up may hold the others
	// back before it is checked; 0: such partitions hold nobody back.
	Hold time.Duration
	// SilentAfter is how long a lagging partition holds the others
	// back without an answer from the broker before it is taken for
	// silent; at least Hold.
	SilentAfter time.Duration
	MaxHeld     int

	Overflows uint64

	started  time.Time
	parts    map[int]*partQueue
	order    []int // partitions, ascending
	held     int
	applied  int64 // newest slot released (or given by SetBase), noSlot if none
	base     int64 // given by SetBase, noSlot if none
	low      int64 // the oldest slot added, noSlot if none
	silenced []int // partitions found silent since Silenced was last called
}

// Held is a fetched message with its reading's slot (OK false: not
// decodable, or not at the start of a slot) and its arrival time. Reading
// is the message decoded, when OK, for the caller to keep (the Aligner
// ignores it).
type Held struct {
	Msg     Record
	Slot    int64
	OK      bool
	Arrived time.Time
	Reading Reading
}

// Record is what a service keeps of a fetched message: where it lies in
// its partition and its bytes, for a reading's error or a transaction's
// marker. It is a third the size of a kafka.Message, whose topic, headers
// and times the service has no use for, and a reading is copied several
// times between its fetch and its commit.
type Record struct {
	Partition     int
	Offset        int64
	HighWaterMark int64 // the partition's, when the message was fetched
	Key, Value    []byte
}

// RecordOf returns what a service keeps of m.
func RecordOf(m kafka.Message) Record {
	return Record{Partition: m.Partition, Offset: m.Offset, HighWaterMark: m.HighWaterMark, Key: m.Key, Value: m.Value}
}

type partQueue struct {
	items    []Held
	head     int
	frontier int64 // largest slot fetched, noSlot if none
	seen     bool
	backlog  int8      // before the first message: 0 not known, 1 records to read, −1 none
	silent   bool      // found without records while lagging; see Aligner
	behind   bool      // messages were left after the last one fetched
	next     int64     // the offset after the last one fetched
	at       time.Time // when the last one was fetched
	lagSince time.Time // since when it holds readings back, not catching up; zero: it does not
}

// NewAligner returns an aligner for the given partitions (those of the
// readings topic, all assigned to this consumer), started at now.
func NewAligner(partitions []int, slack int64, idle time.Duration, maxHeld int, now time.Time) *Aligner {
	a := &Aligner{Slack: max(slack, 0), Idle: idle, MaxHeld: maxHeld, started: now, parts: map[int]*partQueue{}, applied: noSlot, base: noSlot, low: noSlot}
	for _, p := range partitions {
		a.queue(p)
	}
	return a
}

func (a *Aligner) queue(p int) *partQueue {
	q := a.parts[p]
	if q == nil {
		q = &partQueue{frontier: noSlot}
		a.parts[p] = q
		i, _ := slices.BinarySearch(a.order, p)
		a.order = slices.Insert(a.order, i, p)
	}
	return q
}

// Add holds a fetched message.
func (a *Aligner) Add(h Held) {
	q := a.queue(h.Msg.Partition)
	if len(q.items) == cap(q.items) && q.head > 0 && 2*q.head >= len(q.items) {
		// At least half released: move the rest down rather than grow.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	if h.OK && (a.low == noSlot || h.Slot < a.low) {
		a.low = h.Slot
	}
	q.items = append(q.items, h)
	q.seen = true
	q.behind = h.Msg.HighWaterMark > h.Msg.Offset+1
	q.next, q.at = h.Msg.Offset+1, h.Arrived
	if h.OK && h.Slot > q.frontier {
		q.frontier = h.Slot
		q.lagSince = time.Time{} // it moves: lagging, if still, counts from the next Release
	}
	// A silent partition counts again once it is within Slack of what
	// was applied: its readings further behind are late whatever waits.
	if q.silent && (q.behind || a.applied == noSlot || satAdd(q.frontier, a.Slack) >= a.applied) {
		q.silent = false
	}
	a.held++
}

// Unknown appends to dst, in ascending order, the partitions of which no
// message has been fetched and whose backlog is not known (see Backlog),
// or which have held readings back for Hold at now (see Aligner).
func (a *Aligner) Unknown(now time.Time, dst []int) []int {
	for _, p := range a.order {
		if q := a.parts[p]; !q.seen && (q.backlog == 0 || a.due(q, now)) {
			dst = append(dst, p)
		}
	}
	return dst
}

// due reports whether q, lagging and not known to be catching up, has
// held readings back for Hold at now, and should be checked.
func (a *Aligner) due(q *partQueue, now time.Time) bool {
	return !q.silent && !q.lagSince.IsZero() && now.Sub(q.lagSince) >= a.Hold
}

// Backlog tells the aligner that partition p, of which no message has been
// fetched yet, had, when asked, n records to read from where this consumer
// starts (its group's committed offset, or the first offset) to its last
// stable offset. With n > 0 it holds the others back until its first
// message (all of them up to BacklogWait after the aligner started); with
// n == 0 it holds nobody back within Idle, and, lagging since Hold before
// asked, it is silent (see Aligner). It reports whether p's backlog was
// unknown.
func (a *Aligner) Backlog(p int, n int64, asked time.Time) bool {
	q := a.parts[p]
	if q == nil || q.seen {
		return false
	}
	unknown := q.backlog == 0
	q.backlog = -1
	if n > 0 {
		q.backlog = 1
		q.lagSince = time.Time{}
	} else if a.checked(q, asked) {
		a.silence(p, q)
	}
	return unknown
}

// checked reports whether an answer asked at asked tells q's state after
// it had lagged for Hold.
func (a *Aligner) checked(q *partQueue, asked time.Time) bool {
	return !q.silent && !q.lagSince.IsZero() && asked.Sub(q.lagSince) >= a.Hold
}

func (a *Aligner) silence(p int, q *partQueue) {
	q.silent, q.lagSince = true, time.Time{}
	a.silenced = append(a.silenced, p)
}

// Silenced appends to dst the partitions found silent since its last call
// (see Aligner), for the caller to log, and forgets them.
func (a *Aligner) Silenced(dst []int) []int {
	dst = append(dst, a.silenced...)
	a.silenced = a.silenced[:0]
	return dst
}

// SetBase tells the aligner the newest slot applied before its readings
// (the state's, restored or rebuilt; noSlot: none): a reading more than
// Slack after it begins a burst's hold (see Aligner).
func (a *Aligner) SetBase(slot int64) {
	a.applied, a.base = slot, slot
}

// Restart counts Idle and BacklogWait again from now and forgets the
// backlogs learnt of the partitions not fetched from yet: for a consumer
// that begins to hold the partitions (a standby taking over) long after
// its aligner started.
func (a *Aligner) Restart(now time.Time) {
	a.started = now
	for _, q := range a.parts {
		if !q.seen {
			q.backlog = 0
		}
		q.silent, q.lagSince = false, time.Time{}
	}
}

// Quiet appends to dst, in ascending order, the partitions fetched from
// that are counted as catching up and whose last message was fetched more
// than after before now (either slow to fetch or stopped at an open
// transaction), and those that have held readings back for Hold without
// counting as catching up: the partitions whose last stable offsets the
// caller should ask the broker for (see Stable).
func (a *Aligner) Quiet(now time.Time, after time.Duration, dst []int) []int {
	for _, p := range a.order {
		if q := a.parts[p]; q.seen && (q.behind && now.Sub(q.at) > after || !q.behind && a.due(q, now)) {
			dst = append(dst, p)
		}
	}
	return dst
}

// Stable tells the aligner that partition p's last stable offset was lso
// when asked: read committed, nothing at or past it can be fetched before
// the transactions open there end. If every message before lso was
// fetched, the partition is caught up, until its next message says
// otherwise, and, lagging since Hold before asked, silent (see Aligner);
// if not, it counts as catching up. It reports whether p was counted as
// catching up and no longer is (stopped at an open transaction).
func (a *Aligner) Stable(p int, lso int64, asked time.Time) bool {
	q := a.parts[p]
	switch {
	case q == nil || !q.seen:
		return false
	case q.next < lso: // records left to fetch: catching up
		q.behind, q.lagSince = true, time.Time{}
		return false
	case q.behind:
		q.behind = false
		return true
	case a.checked(q, asked):
		a.silence(p, q)
	}
	return false
}

// Len returns the number of readings held.
func (a *Aligner) Len() int { return a.held }

// Limit returns the newest slot that may be released now: Slack after the
// position of the slowest partition that holds the others back (see
// Aligner), math.MaxInt64 if none does.
func (a *Aligner) Limit(now time.Time) int64 {
	w := int64(math.MaxInt64)
	for _, q := range a.parts {
		switch {
		case !q.seen && q.backlog >= 0 && now.Sub(a.started) < a.Idle,
			!q.seen && q.backlog > 0 && now.Sub(a.started) < a.BacklogWait:
			return noSlot // wait for every partition's first fetch
		case a.holds(q):
			w = min(w, a.position(q))
		}
	}
	if w == math.MaxInt64 || w == noSlot {
		return w
	}
	return satAdd(w, a.Slack)
}

// holds reports whether q holds the others back to Slack after its
// position: catching up, or not found silent (see Aligner).
func (a *Aligner) holds(q *partQueue) bool {
	switch {
	case q.seen && q.behind:
		return true
	case q.silent || a.Hold <= 0:
		return false
	case !q.seen && q.backlog > 0:
		return false // past BacklogWait (Limit holds everything before)
	}
	return a.position(q) != noSlot
}

// Position returns the newest slot partition p is known to have reached
// (see Aligner), noSlot if none.
func (a *Aligner) Position(p int) int64 {
	if q := a.parts[p]; q != nil {
		return a.position(q)
	}
	return noSlot
}

// position returns the newest slot q is known to have reached: the newest
// fetched from it, or, nothing fetched, the newest applied before the
// aligner started or else the oldest slot added.
func (a *Aligner) position(q *partQueue) int64 {
	switch {
	case q.seen && q.frontier != noSlot:
		return q.frontier
	case q.seen:
		return noSlot // only undecodable messages so far
	case a.base != noSlot:
		return a.base
	}
	return a.low
}

// Release appends to dst, partition by partition in fetch order, the held
// messages that may be applied now, and removes them.
func (a *Aligner) Release(now time.Time, dst []Held) []Held {
	a.expire(now)
	limit := a.Limit(now)
	if a.MaxHeld > 0 && a.held > a.MaxHeld {
		limit = math.MaxInt64
		a.Overflows++
	}
	for _, p := range a.order {
		q := a.parts[p]
		for q.head < len(q.items) {
			h := q.items[q.head]
			if h.OK && h.Slot > limit {
				break
			}
			if h.OK && h.Slot > a.applied {
				a.applied = h.Slot
			}
			dst = append(dst, h)
			q.items[q.head] = Held{}
			q.head++
			a.held--
		}
		if q.head == len(q.items) {
			q.items, q.head = q.items[:0], 0
		} else if q.head > 4096 && q.head*2 > len(q.items) {
			q.items = append(q.items[:0], q.items[q.head:]...)
			q.head = 0
		}
	}
	a.lagging(now)
	return dst
}

// expire takes for silent the partitions that have lagged for SilentAfter
// (at least Hold) without an answer from the broker.
func (a *Aligner) expire(now time.Time) {
	after := max(a.SilentAfter, a.Hold)
	for _, p := range a.order {
		if q := a.parts[p]; !q.silent && !q.lagSince.IsZero() && now.Sub(q.lagSince) >= after {
			a.silence(p, q)
		}
	}
}

// lagging marks, from now, the partitions that hold back readings still
// held and are not catching up, and unmarks the others. From now, not
// from when the readings held came: a consumer slow to come round (a
// loaded machine) would otherwise find a partition lagging for longer
// than SilentAfter the moment it first looks, and take it for silent
// without asking the broker.
func (a *Aligner) lagging(now time.Time) {
	waiting := int64(noSlot) // the newest slot held, or more (a partition's readings out of slot order)
	for _, q := range a.parts {
		if q.head < len(q.items) {
			waiting = max(waiting, q.frontier)
		}
	}
	for _, q := range a.parts {
		lags := waiting != noSlot && !(q.seen && q.behind) && a.holds(q) && satAdd(a.position(q), a.Slack) < waiting
		switch {
		case !lags:
			q.lagSince = time.Time{}
		case q.lagSince.IsZero():
			q.lagSince = now
		}
	}
}
