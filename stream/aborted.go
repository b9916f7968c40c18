package stream

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// partKind is what the service knows of the producers of a readings
// partition, for abortedIn.
type partKind uint8

const (
	partUnknown       partKind = iota // no stretch of it checked yet
	partPlain                         // the first stretch checked held no transaction
	partTransactional                 // a transactional batch or a marker met
)

// abortedIn returns the messages of held (partition, offset) that belong
// to an aborted transaction, so that they are not applied. kafka-go's
// Reader delivers the records of aborted transactions and does not say
// which producer wrote a message (segmentio/kafka-go#1332), so the
// stretch of every transactional partition in held is fetched again, read
// committed, and told apart as Kafka's own consumer does (walkCommitted):
// from the fetch's list of aborted transactions, which names a
// transaction once it has ended, so that its records are told even in a
// batch before its marker's (a transaction larger than a batch, or one
// whose marker lies behind another producer's transaction still open).
//
// A partition's first stretch is checked so, which tells whether its
// producers write in transactions; a partition found plain is not fetched
// again unless a marker comes (a producer turned transactional), and its
// readings until then count as applied unchecked. The partitions are
// fetched concurrently. A failed fetch is warned of (once a minute at
// most) and its readings applied unchecked, as is an aborted transaction
// begun before a stretch in a partition with readings applied unchecked.
func (s *Service) abortedIn(ctx context.Context, client *kafka.Client, held []Held) map[[2]int64]bool {
	type span struct {
		lo, hi  int64  // offsets held, [lo, hi]
		records uint64 // other than markers
		out     []int64
		walk    walk
		err     error
	}
	if s.txnKind == nil {
		s.txnKind, s.txnUnchecked, s.txnBefore = map[int]partKind{}, map[int]bool{}, map[int]uint64{}
	}
	var spans map[int]*span
	for _, h := range held {
		m := h.Msg
		_, marker := TxnMarker(m.Key, m.Value)
		if marker && s.txnKind[m.Partition] != partTransactional {
			s.txnKind[m.Partition] = partTransactional
			s.unchecked(m.Partition, s.txnBefore[m.Partition]) // applied while it seemed plain
			delete(s.txnBefore, m.Partition)
		}
		if spans == nil {
			spans = map[int]*span{}
		}
		sp := spans[m.Partition]
		if sp == nil {
			sp = &span{lo: m.Offset, hi: m.Offset}
			spans[m.Partition] = sp
		}
		sp.lo, sp.hi = min(sp.lo, m.Offset), max(sp.hi, m.Offset)
		if !marker {
			sp.records++
		}
	}
	for p, sp := range spans {
		if s.txnKind[p] == partPlain {
			s.txnBefore[p] += sp.records
		}
		if s.txnKind[p] == partPlain || sp.records == 0 {
			delete(spans, p)
		}
	}
	if len(spans) == 0 {
		return nil
	}
	// The batch in hand is finished even when Run is told to stop.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	topic := s.cfg.ReadingsTopic
	var wg sync.WaitGroup
	for p, sp := range spans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sp.walk, sp.err = walkCommitted(ctx, client, topic, p, sp.lo, sp.hi+1, func(off int64, _, _ []byte, aborted bool) {
				if aborted {
					sp.out = append(sp.out, off)
				}
			})
		}()
	}
	wg.Wait()
	s.counters.TxnChecks.Add(uint64(len(spans)))
	out := map[[2]int64]bool{}
	for p, sp := range spans {
		for _, off := range sp.out {
			out[[2]int64{int64(p), off}] = true
		}
		switch {
		case sp.err != nil:
			if s.txnKind[p] == partTransactional {
				s.unchecked(p, sp.records)
			} else {
				s.txnBefore[p] += sp.records // still unknown: counted if it turns out transactional
			}
			if ok, held := s.markerLog.allow("abort-read", time.Now()); ok {
				s.cfg.Log.Warn().Err(sp.err).Int("partition", p).Int("similar_held_back", held).
					Msg("cannot tell the readings of an aborted transaction: those in this batch are applied")
			}
			continue
		case sp.walk.Earlier && s.txnUnchecked[p]:
			if ok, held := s.markerLog.allow("abort-earlier", time.Now()); ok {
				s.cfg.Log.Warn().Int("partition", p).Int64("offset", sp.lo).Int("similar_held_back", held).
					Msg("readings of an aborted transaction may have been applied: they came before the partition was known to be transactional (kafka-go delivers them, segmentio/kafka-go#1332)")
			}
		}
		if s.txnKind[p] == partUnknown {
			s.txnKind[p] = partPlain
			if sp.walk.Transactional {
				s.txnKind[p] = partTransactional
				s.unchecked(p, s.txnBefore[p]) // applied while its checks failed
				delete(s.txnBefore, p)
			}
		}
	}
	return out
}

// unchecked records that n readings of the transactional partition p are
// applied without being checked for aborted transactions (see abortedIn).
func (s *Service) unchecked(p int, n uint64) {
	if n > 0 {
		s.txnUnchecked[p] = true
		s.counters.TxnUnchecked.Add(n)
	}
}
