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
// A partition caught up, or not fetched from since a restart, may yet
// have readings of the slots others are being applied at: a burst written
// to every partition at once (a file published unpaced) reaches the
// consumer partition by partition, and applied as it comes, the first
// partition's share could run past the history that the others' need.
// So when a reading comes more than Slack slots ahead of the newest slot
// applied (SetBase gives it at start, from the state), while another
// partition stands more than Slack before it and none counts as catching
// up (which would hold it back already), nothing beyond
// that newest slot plus Slack is released for Hold after, or until every
// partition has had a message fetched since: the others' shares of the
// burst are fetched meanwhile, and then released together with it (the
// caller applies them in slot order), the partitions still catching up
// holding the others back as above. Live readings, a slot after the
// last, never wait. A partition that let a hold run out without a message
// counts as silent (its sensors gone, or the topic grown partitions no
// one writes to), and later bursts do not wait for it, until it has a
// message fetched again: else every burst would wait its full Hold.
//
// An Aligner is not safe for concurrent use.
type Aligner struct {
	Slack       int64
	Idle        time.Duration
	BacklogWait time.Duration // see Backlog; at least Idle
	Hold        time.Duration // see SetBase; 0: no reading waits for a burst
	MaxHeld     int

	Overflows uint64

	started   time.Time
	parts     map[int]*partQueue
	order     []int // partitions, ascending
	held      int
	applied   int64     // newest slot released (or given by SetBase), noSlot if none
	low       int64     // before any: the oldest slot added, noSlot if none
	gate      int64     // while a burst is held: the newest slot released until gateUntil
	gateFrom  time.Time // when the burst's first reading came
	gateUntil time.Time // when the burst's hold ends; zero: none
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
	silent   bool      // let a burst's hold run out without a message, none fetched since
	behind   bool      // messages were left after the last one fetched
	next     int64     // the offset after the last one fetched
	at       time.Time // when the last one was fetched
}

// NewAligner returns an aligner for the given partitions (those of the
// readings topic, all assigned to this consumer), started at now.
func NewAligner(partitions []int, slack int64, idle time.Duration, maxHeld int, now time.Time) *Aligner {
	a := &Aligner{Slack: max(slack, 0), Idle: idle, MaxHeld: maxHeld, started: now, parts: map[int]*partQueue{}, applied: noSlot, low: noSlot}
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
	if h.OK && a.Hold > 0 && a.gateUntil.IsZero() {
		ref := a.applied
		if ref == noSlot { // nothing applied yet: the oldest reading stands in
			if a.low == noSlot || h.Slot < a.low {
				a.low = h.Slot
			}
			ref = a.low
		}
		// Another partition still catching up holds this one back as
		// above (a backlog read from every partition): no hold is needed.
		if h.Slot > satAdd(ref, a.Slack) && a.mayFollow(h.Msg.Partition, satSub(h.Slot, a.Slack), ref) {
			a.gate, a.gateFrom, a.gateUntil = satAdd(ref, a.Slack), h.Arrived, h.Arrived.Add(a.Hold)
		}
	}
	q.items = append(q.items, h)
	q.seen, q.silent = true, false
	q.behind = h.Msg.HighWaterMark > h.Msg.Offset+1
	q.next, q.at = h.Msg.Offset+1, h.Arrived
	if h.OK {
		q.frontier = max(q.frontier, h.Slot)
	}
	a.held++
}

// Unknown appends to dst, in ascending order, the partitions of which no
// message has been fetched and whose backlog is not known (see Backlog).
func (a *Aligner) Unknown(dst []int) []int {
	for _, p := range a.order {
		if q := a.parts[p]; !q.seen && q.backlog == 0 {
			dst = append(dst, p)
		}
	}
	return dst
}

// Backlog tells the aligner that partition p, of which no message has been
// fetched yet, has n records to read from where this consumer starts (its
// group's committed offset, or the first offset) to its last stable
// offset. With n > 0 it holds the others back until its first message, up
// to BacklogWait after the aligner started; with n == 0 it holds nobody
// back until a message says otherwise. It reports whether p was unknown.
func (a *Aligner) Backlog(p int, n int64) bool {
	q := a.parts[p]
	if q == nil || q.seen || q.backlog != 0 {
		return false
	}
	q.backlog = -1
	if n > 0 {
		q.backlog = 1
	}
	return true
}

// SetBase tells the aligner the newest slot applied before its readings
// (the state's, restored or rebuilt; noSlot: none): a reading more than
// Slack after it begins a burst's hold (see Aligner).
func (a *Aligner) SetBase(slot int64) {
	a.applied, a.low = slot, noSlot
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
	}
}

// Quiet appends to dst, in ascending order, the partitions counted as
// catching up whose last message was fetched more than after before now:
// either slow to fetch or stopped at an open transaction (see Stable).
func (a *Aligner) Quiet(now time.Time, after time.Duration, dst []int) []int {
	for _, p := range a.order {
		if q := a.parts[p]; q.seen && q.behind && now.Sub(q.at) > after {
			dst = append(dst, p)
		}
	}
	return dst
}

// Stable tells the aligner that partition p's last stable offset is lso:
// read committed, nothing at or past it can be fetched before the
// transactions open there end. If every message before lso was fetched,
// the partition is caught up, until its next message says otherwise. It
// reports whether p was counted as catching up and no longer is.
func (a *Aligner) Stable(p int, lso int64) bool {
	q := a.parts[p]
	if q == nil || !q.seen || !q.behind || q.next < lso {
		return false
	}
	q.behind = false
	return true
}

// Len returns the number of readings held.
func (a *Aligner) Len() int { return a.held }

// Limit returns the newest slot that may be released now: Slack after the
// frontier of the slowest partition catching up, math.MaxInt64 if none is.
func (a *Aligner) Limit(now time.Time) int64 {
	w := int64(math.MaxInt64)
	for _, q := range a.parts {
		switch {
		case q.seen && q.behind:
			w = min(w, q.frontier)
		case !q.seen && q.backlog >= 0 && now.Sub(a.started) < a.Idle,
			!q.seen && q.backlog > 0 && now.Sub(a.started) < a.BacklogWait:
			return noSlot // wait for every partition's first fetch
		}
	}
	if w == math.MaxInt64 || w == noSlot {
		return w
	}
	return satAdd(w, a.Slack)
}

// mayFollow reports whether a reading of partition p at slot from+Slack
// may run past readings of another partition still to come: none of the
// others counts as catching up (which holds p back already), and one of
// them stands before from, by its newest slot fetched or, not fetched
// from, by ref (the newest slot applied). Silent partitions do not count.
func (a *Aligner) mayFollow(p int, from, ref int64) bool {
	before := false
	for i, q := range a.parts {
		if i == p || q.silent {
			continue
		}
		if q.seen && q.behind {
			return false
		}
		f := ref
		if q.seen && q.frontier != noSlot {
			f = q.frontier
		}
		before = before || f < from
	}
	return before
}

// allFetchedSince reports whether every partition has had a message
// fetched at t or after, or one past the gate already: then each one's
// share of a burst that began at t is on its way (held, or counted as
// catching up), and the hold has done its work. A backlog read from every
// partition ends its holds so at once. Silent partitions do not count.
func (a *Aligner) allFetchedSince(t time.Time) bool {
	for _, q := range a.parts {
		if !q.silent && a.lags(q, t) {
			return false
		}
	}
	return true
}

// lags reports whether q has had no message fetched at t or after, nor
// one past the gate.
func (a *Aligner) lags(q *partQueue, t time.Time) bool {
	return !q.seen || q.at.Before(t) && q.frontier <= a.gate
}

// Release appends to dst, partition by partition in fetch order, the held
// messages that may be applied now, and removes them.
func (a *Aligner) Release(now time.Time, dst []Held) []Held {
	limit := a.Limit(now)
	if !a.gateUntil.IsZero() {
		switch all := a.allFetchedSince(a.gateFrom); {
		case now.Before(a.gateUntil) && !all:
			limit = min(limit, a.gate)
		case !all: // the hold ran out: those still without a message are silent
			for _, q := range a.parts {
				q.silent = q.silent || a.lags(q, a.gateFrom)
			}
			fallthrough
		default:
			a.gateUntil = time.Time{} // the burst's hold is over
		}
	}
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
	return dst
}
