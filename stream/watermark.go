package stream

import (
	"slices"
)

// watermark tells a reading stamped far ahead of the stream: a clock gone
// wrong (a year early, year 9999) that, applied, would move its sensor's
// window past every slot the stream holds, so that its real readings
// were then late, and its dependants' forecasts waited on it for good.
//
// The stream's mark is the newest slot that quorum sensors have reached
// together, within ahead slots of one another, counting the slots of
// readings refused as well (claims): a reading more than ahead slots
// past the mark is refused, while a few sensors' bad clocks, ahead or
// behind, neither move the mark nor count towards the others' quorum.
// When the whole stream jumps ahead (a feed resumed after an outage
// longer than ahead), the first readings of the jump are refused until
// quorum sensors have claimed it, and the rest are applied. Before quorum
// sensors have readings that close together there is no mark and nothing
// is refused. The mark never moves back.
type watermark struct {
	ahead   int64   // slots a reading may run past the mark; 0: off
	quorum  int     // sensors that make the mark
	mark    int64   // noSlot while fewer than quorum sensors have claims
	claims  []int64 // per node, the newest slot claimed; noSlot if none
	above   int     // nodes whose claim is past the mark
	scratch []int64
}

// watermarkQuorum returns the sensors of n that make a stream's mark: a
// tenth of them, at least 2 (one sensor's clock cannot move the mark) and
// at most n.
func watermarkQuorum(n int) int {
	return min(n, max(2, (n+9)/10))
}

// reset makes w a mark of ahead slots over n nodes whose newest slots are
// newest(z) (noSlot if none).
func (w *watermark) reset(n int, ahead int64, newest func(z int) int64) {
	w.ahead, w.quorum = max(ahead, 0), watermarkQuorum(n)
	w.claims = slices.Grow(w.claims[:0], n)[:n]
	for z := range w.claims {
		w.claims[z] = newest(z)
	}
	w.mark = noSlot
	w.update()
}

// admit records node z's claim of slot and reports whether slot lies
// within ahead slots of the mark (always, when off or without a mark).
func (w *watermark) admit(z int, slot int64) bool {
	if w.ahead == 0 {
		return true
	}
	if c := w.claims[z]; slot > c {
		if c <= w.mark && slot > w.mark {
			w.above++
		}
		w.claims[z] = slot
		if w.above >= w.quorum {
			w.update()
		}
	}
	return w.mark == noSlot || slot <= satAdd(w.mark, w.ahead)
}

// update moves the mark up to the oldest of the newest quorum claims that
// lie within ahead slots of one another, if any, and counts the claims
// past it.
func (w *watermark) update() {
	w.scratch = w.scratch[:0]
	for _, c := range w.claims {
		if c != noSlot {
			w.scratch = append(w.scratch, c)
		}
	}
	slices.Sort(w.scratch)
	for i := len(w.scratch) - 1; i >= w.quorum-1 && w.quorum > 0; i-- {
		if lo := w.scratch[i-w.quorum+1]; w.scratch[i]-lo <= w.ahead {
			w.mark = max(w.mark, lo)
			break
		}
	}
	w.above = 0
	for _, c := range w.claims {
		if c > w.mark {
			w.above++
		}
	}
}
