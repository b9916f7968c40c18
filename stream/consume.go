package stream

import (
	"context"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// consumeLoop is Run's loop over batches of readings, and what it keeps
// from one batch to the next; Run owns it. A batch is fetched (gather),
// held or let go as the group settles (hold, see takeover.go), applied
// in slot order with the forecasts it makes due (apply, see apply.go),
// and handed to a flush that writes, saves and commits it (handOver, see
// flush.go) while the next batch is fetched.
type consumeLoop struct {
	s         *Service
	client    *kafka.Client    // the brokers, for the questions of the Aligner and abortedIn
	transport *kafka.Transport // the service's, for a rebuild
	align     *Aligner
	fetch     *fetcher

	// The batch in hand is flushed while the next is fetched and
	// applied: the two jobs' buffers take turns, jobs[turn] filled next.
	jobs [2]flushJob
	turn int
	grow bool // jobs[turn] holds a batch not handed over yet, to grow

	taken   []Held       // taken from the fetcher, before the Aligner holds them
	held    []Held       // released by the Aligner, to apply
	order   []int32      // held's indices in slot order
	scratch Reading      // for the error of a reading the fetcher could not decode
	resumed map[int]bool // the partitions whose first reading was logged

	// Fetch errors (the broker gone) are retried: kafka-go's reader
	// reconnects by itself and reports the errors meanwhile.
	fetchWarned  time.Time
	fetchFailing bool
	quiet        []int     // partitions quiet while catching up
	silenced     []int     // partitions found silent (Aligner.Silenced)
	stableAsked  time.Time // when their last stable offsets were last asked
	unknown      []int     // partitions not fetched from, their backlogs unknown
	backlogAsked time.Time // when their backlogs were last asked
	holdingSince time.Time // when this service last began to hold the partitions
}

// round handles one batch, with the model held (see Reload): it gathers
// readings, settles whether this service holds the partitions, applies
// what the Aligner releases with the forecasts it makes due, and hands
// the batch to a flush unless it grows. It returns true once ctx has
// ended and the batch in hand is committed.
func (c *consumeLoop) round(ctx context.Context) (stop bool, err error) {
	s := c.s
	s.loop <- struct{}{}
	defer func() { <-s.loop }()
	j := c.begin()
	got, fetchErr := c.gather(ctx)
	holding, err := c.hold(ctx, got)
	if err != nil {
		return false, err
	}
	if err := c.apply(ctx, j, holding); err != nil {
		return false, err
	}
	// A batch cut at BatchSize (a backlog flows) while the one
	// before is still being written and committed goes on
	// growing rather than waiting for it, up to maxGrow batches:
	// the flush then takes more at each round trip, and the
	// loop waits less.
	c.grow = got == s.cfg.BatchSize && holding && fetchErr == nil && ctx.Err() == nil &&
		j.batch.n < maxGrow*s.cfg.BatchSize && s.pending != nil && !s.pending.ended()
	if !c.grow {
		if err := c.handOver(ctx, j); err != nil {
			return false, err
		}
	}
	c.noteFetch(ctx, got, fetchErr)
	if ctx.Err() != nil {
		return true, c.shutdown(ctx, j)
	}
	return false, nil
}

// begin returns the job the batch fills, jobs[turn] (not pending: its
// flush ended before the other's began), emptied unless the batch it
// holds grows.
func (c *consumeLoop) begin() *flushJob {
	j := &c.jobs[c.turn]
	c.held = c.held[:0]
	if !c.grow {
		j.batch.reset()
		j.dead, j.arrived = j.dead[:0], j.arrived[:0]
		j.fc.reset()
	}
	return j
}

// gather takes up to BatchSize readings from the fetcher and adds them
// to the Aligner. It blocks for the first until the next forecast
// deadline (CommitEvery at most, 50 ms while the Aligner holds
// readings), then, while the broker says more follows, takes what comes
// within 2 ms more, up to that wait. It returns how many readings it
// took, and the fetcher's error.
func (c *consumeLoop) gather(ctx context.Context) (got int, fetchErr error) {
	s, cfg := c.s, &c.s.cfg
	// Block for the first reading until the next forecast deadline.
	wait := cfg.CommitEvery
	if at, ok := s.emitter.NextDeadline(); ok {
		wait = min(wait, max(time.Millisecond, at.Sub(cfg.Now())))
	}
	if c.align.Len() > 0 {
		wait = min(wait, 50*time.Millisecond) // held readings wait for other partitions
	}
	deadline := time.Now().Add(wait)
	var gatherUntil time.Time
	for got < cfg.BatchSize {
		n := len(c.taken)
		if c.taken, fetchErr = c.fetch.take(ctx, c.taken, cfg.BatchSize-got, deadline); fetchErr != nil {
			fetchErr = fmt.Errorf("fetch readings: %w", fetchErr)
			break
		}
		if len(c.taken) == n {
			break // the deadline passed, or ctx ended
		}
		more := got == 0
		for i := n; i < len(c.taken); i++ {
			h := c.taken[i]
			if !c.resumed[h.Msg.Partition] {
				c.resumed[h.Msg.Partition] = true
				cfg.Log.Info().Int("partition", h.Msg.Partition).Int64("offset", h.Msg.Offset).Msg("first reading of partition")
			}
			// The broker said more follows (a backlog; the rest
			// of a transaction, and its marker, fetched together).
			more = more || h.Msg.Offset+1 < h.Msg.HighWaterMark
			c.align.Add(h)
		}
		if got == 0 {
			gatherUntil = time.Now().Add(wait)
		}
		got += len(c.taken) - n
		// Gather what is already fetched, and what follows, within
		// the wait.
		if more {
			if deadline = time.Now().Add(2 * time.Millisecond); deadline.After(gatherUntil) {
				deadline = gatherUntil
			}
		}
	}
	clear(c.taken) // the messages' bytes, until the next batch
	c.taken = c.taken[:0]
	return got, fetchErr
}

// askBrokers tells the Aligner what the brokers say of the partitions it
// waits for, once a second at most for each question. A partition not
// fetched from yet holds the others back for a second (Aligner.Idle);
// the broker says whether it has records to read, for which they wait
// longer (Backlog). A partition that holds others back and has said for
// a second that more follows may be stopped at a transaction left open:
// the broker says where it stops (Aligner.Stable).
func (c *consumeLoop) askBrokers(ctx context.Context) {
	s := c.s
	if time.Since(c.backlogAsked) > time.Second {
		if c.unknown = c.align.Unknown(time.Now(), c.unknown[:0]); len(c.unknown) > 0 {
			c.backlogAsked = time.Now()
			s.backlogs(ctx, c.client, c.unknown, c.align)
		}
	}
	if c.align.Len() > 0 && time.Since(c.stableAsked) > time.Second {
		if c.quiet = c.align.Quiet(time.Now(), time.Second, c.quiet[:0]); len(c.quiet) > 0 {
			c.stableAsked = time.Now()
			s.stable(ctx, c.client, c.quiet, c.align)
		}
	}
}

// release takes from the Aligner into c.held the readings it lets go
// now, warning when it let go of all because it held too many, and
// logging the partitions it found silent.
func (c *consumeLoop) release() {
	overflows := c.align.Overflows
	c.held = c.align.Release(time.Now(), c.held)
	log := c.s.cfg.Log
	if c.align.Overflows != overflows {
		log.Warn().Int("released", len(c.held)).Msg("more readings held for slower partitions than allowed: released all")
	}
	for _, p := range c.align.Silenced(c.silenced[:0]) {
		log.Info().Int("partition", p).Int64("slot", c.align.Position(p)).Dur("hold", c.align.Hold).
			Msg("partition silent: nothing to fetch past its slot while later readings wait; the others are not held for it until it catches up")
	}
}

// handOver hands j to a flush (startFlush), with the state's snapshot
// after it when there is a StateFile, once the batch before is
// committed, and turns to the other job.
func (c *consumeLoop) handOver(ctx context.Context, j *flushJob) error {
	s := c.s
	// The batch before is committed before this one is handed over.
	if err := s.finishFlush(); err != nil {
		return err
	}
	if s.cfg.StateFile != "" && j.batch.n > 0 {
		j.state = s.state.AppendSnapshot(j.state[:0])
	}
	s.startFlush(ctx, j)
	c.turn ^= 1
	c.grow = false
	return nil
}

// noteFetch records the fetch's outcome for /readyz. After a fetch error
// it warns (every 30 s at most while they go on) and waits half a second,
// as the reader backs off too; when readings come again, it says so.
func (c *consumeLoop) noteFetch(ctx context.Context, got int, fetchErr error) {
	s := c.s
	done := time.Now()
	s.mu.Lock()
	if got > 0 {
		s.health.fetchOKAt = done
	}
	if fetchErr != nil {
		s.health.fetchErr, s.health.fetchErrAt = fetchErr, done
	}
	s.mu.Unlock()
	switch {
	case fetchErr != nil:
		s.counters.FetchErrors.Add(1)
		if !c.fetchFailing || done.Sub(c.fetchWarned) > 30*time.Second {
			s.cfg.Log.Warn().Err(fetchErr).Msg("cannot fetch readings: retrying (see /readyz)")
			c.fetchWarned = done
		}
		c.fetchFailing = true
		sleepCtx(ctx, 500*time.Millisecond) // the reader backs off too
	case got > 0 && c.fetchFailing:
		s.cfg.Log.Info().Msg("fetching readings again")
		c.fetchFailing = false
	}
}

// shutdown ends the loop as ctx has ended: the batch in hand, j, is
// handed over if it was growing, and committed.
func (c *consumeLoop) shutdown(ctx context.Context, j *flushJob) error {
	if c.grow {
		if err := c.handOver(ctx, j); err != nil {
			return err
		}
	}
	if err := c.s.finishFlush(); err != nil {
		return err
	}
	c.s.cfg.Log.Info().Int("held", c.align.Len()).Msg("shutting down: batch committed (held readings are read again at restart)")
	return nil
}

// stable asks the broker for the last stable offsets of the readings
// partitions ps, read committed, and passes them to align (see
// Aligner.Stable), logging each partition found stopped at an open
// transaction. Errors are warned of (once a minute at most); the
// partitions then stay counted as catching up.
func (s *Service) stable(ctx context.Context, client *kafka.Client, ps []int, align *Aligner) {
	topic := s.cfg.ReadingsTopic
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}, IsolationLevel: kafka.ReadCommitted}
	for _, p := range ps {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	asked := time.Now()
	resp, err := client.ListOffsets(lctx, req)
	if err == nil {
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				err = fmt.Errorf("partition %d: %w", po.Partition, po.Error)
				continue
			}
			if align.Stable(po.Partition, po.LastOffset, asked) {
				s.cfg.Log.Info().Int("partition", po.Partition).Int64("offset", po.LastOffset).
					Msg("partition stops at a transaction still open: the others are not held for it")
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		if ok, held := s.markerLog.allow("stable", time.Now()); ok {
			s.cfg.Log.Warn().Err(err).Int("suppressed", held).Ints("partitions", ps).
				Msg("cannot ask where quiet partitions stop: the others are held for them")
		}
	}
}

// backlogs asks the broker how many records the readings partitions ps,
// of which nothing has been fetched yet, hold for this consumer: from the
// group's committed offset (or the first offset, where none is committed
// or it has been deleted) to the last stable offset. It passes them to
// align (see Aligner.Backlog). Errors are warned of (once a minute at
// most); the partitions then stay unknown, and are asked again.
func (s *Service) backlogs(ctx context.Context, client *kafka.Client, ps []int, align *Aligner) {
	topic := s.cfg.ReadingsTopic
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	asked := time.Now()
	lag, err := groupLag(lctx, client, s.cfg.GroupID, topic, ps)
	for p, n := range lag {
		align.Backlog(p, n, asked)
	}
	if err != nil && ctx.Err() == nil {
		if ok, held := s.markerLog.allow("backlog", time.Now()); ok {
			s.cfg.Log.Warn().Err(err).Int("suppressed", held).Ints("partitions", ps).
				Msg("cannot ask what partitions not fetched from yet hold: the others wait a second for them")
		}
	}
}

// maxGrow is how many times BatchSize readings a batch may grow to while
// the batch before is being committed (see Run).
const maxGrow = 4
