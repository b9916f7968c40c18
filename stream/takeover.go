package stream

import (
	"context"
	"os"
	"time"

	"github.com/segmentio/kafka-go"
)

// holdsPartitions reports whether the last assignment check found this
// service holding every partition of the readings topic.
func (s *Service) holdsPartitions() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.health.assigned
}

// assignmentAskedSince reports whether the last assignment check began at
// t or later, so that what it found is no older than t.
func (s *Service) assignmentAskedSince(t time.Time) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.health.assignAsked.Before(t)
}

// heldSettled reports whether this service held every partition the last
// time its group was settled (Stable), as it tells the group on joining.
func (s *Service) heldSettled() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.held
}

// adoptState restores the state file when another member of the group has
// written it since this service last read or wrote it: this service was a
// standby and has just been handed the partitions, so it continues from
// the state the previous holder saved before its last commit, its windows
// whole. A file that cannot be restored is logged and this service's own
// state kept. Called by Run as it begins to hold the partitions, before
// the batch of readings is applied.
func (s *Service) adoptState() {
	path := s.cfg.StateFile
	if path == "" {
		return
	}
	// A flush of this service's writes the file holding stateMu, and
	// records it as seen before letting go.
	s.stateMu.Lock()
	defer s.stateMu.Unlock()
	fi, err := os.Stat(path)
	if err != nil {
		return // none yet; a file that cannot be read is reported at the next save
	}
	if old := s.stateSeen; old != nil && os.SameFile(fi, old) && fi.Size() == old.Size() && fi.ModTime().Equal(old.ModTime()) {
		return
	}
	s.stateSeen = fi
	data, err := os.ReadFile(path)
	if err == nil {
		err = s.replaceState(s.state.Bundle(), data)
	}
	if err != nil {
		s.cfg.Log.Error().Err(err).Str("state", path).Msg("the state file was written by another member but cannot be restored: keeping this service's state")
		return
	}
	s.cfg.Log.Info().Str("state", path).Msg("took over: state restored from the file the previous holder of the partitions saved")
}

// rebuildLogged rebuilds the state from the log (see rebuild), logging
// and counting what it found or why it failed; a failure leaves the
// service going on with the state it has.
func (s *Service) rebuildLogged(ctx context.Context, t *kafka.Transport) {
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := s.rebuild(rctx, t)
	if err != nil {
		s.counters.RebuildFailures.Add(1)
		s.cfg.Log.Error().Err(err).Msg("cannot rebuild the windows from the log: going on with the state there is (forecasts may read missing slots until the windows fill)")
		return
	}
	s.counters.Rebuilds.Add(1)
	s.counters.Rebuilt.Add(uint64(r.Applied))
	if r.Untrusted > 0 {
		s.cfg.Log.Warn().Int("forecasts", r.Untrusted).Strs("first", r.Forged).
			Msg("forecasts in the forecasts topic for slots the readings read back cannot have produced: not taken as emitted (another writer? see the topics' ACLs)")
	}
	s.cfg.Log.Info().Int("partitions", r.Partitions).Int("readings", r.Readings).Int("applied", r.Applied).
		Int("forecasts", r.Forecasts).Int("sensors_emitted", r.Sensors).Int("sensors_moved", r.Moved).Int("sensors_inferred", r.Inferred).Stringer("took", time.Since(start).Round(time.Microsecond)).
		Msg("rebuilt from the log: readings before the committed offsets applied, last forecasts found")
	if r.Strangers > 0 {
		s.cfg.Log.Warn().Int("forecasts", r.Strangers).Str("sensors", s.names.Describe()).
			Msg("forecasts in the log name sensors this model does not: the topics (and the state file, which holds sensors by index) were written for a model of other sensors")
	}
}

// hold settles whether this service holds the readings partitions in
// this batch of got readings, asks the brokers what the Aligner waits
// for, and releases into c.held what may be applied. A standby (no
// partitions, no readings) emits nothing: its state, restored at start,
// may hold forecasts past their deadline that the holder emits. As it
// begins to hold the partitions it takes over (takeOver).
func (c *consumeLoop) hold(ctx context.Context, got int) (holding bool, err error) {
	claims := c.claims(got)
	c.askBrokers(ctx)
	c.release()
	holding = claims || len(c.held) > 0
	if holding && !c.s.holding {
		if err := c.takeOver(ctx); err != nil {
			return false, err
		}
	}
	c.s.holding = holding
	return holding, nil
}

// claims reports whether this batch, of got readings, finds this service
// holding the partitions, and starts the Aligner's clocks afresh when it
// begins to: a partition not fetched from yet holds the others back, and
// the broker's backlogs count, from when this service begins to hold the
// partitions, at start or taking over from another member.
func (c *consumeLoop) claims(got int) bool {
	s := c.s
	claims := got > 0 || s.holdsPartitions()
	// A holder keeps holding through batches without readings
	// until an assignment check that began since it holds says
	// otherwise. As it starts, the last check's answer may
	// predate its joining the group ("no partitions assigned
	// yet"): taking it would let go and rebuild at every
	// reading until the next check, and the aligner would
	// start over each time.
	if !claims && s.holding && !s.assignmentAskedSince(c.holdingSince) {
		claims = true
	}
	if !s.holding && claims {
		c.align.Restart(time.Now())
		c.backlogAsked = time.Time{}
	}
	return claims
}

// takeOver begins to hold the partitions: it finishes the flush in hand,
// takes the state file over when another member wrote it (adoptState),
// rebuilds the windows from the log (unless Config.NoRebuild), and bases
// the Aligner at the newest slot the state then holds.
func (c *consumeLoop) takeOver(ctx context.Context) error {
	s := c.s
	c.holdingSince = time.Now()
	// Taking the partitions over: the file and the committed offsets are
	// read, so finish writing them first.
	if err := s.finishFlush(); err != nil {
		return err
	}
	// Only now: a write of the file while this service holds the
	// partitions is a former holder's that lost its session (its commit
	// fails, and what it applied is read again here), not one to go back
	// to.
	s.adoptState()
	if !s.cfg.NoRebuild {
		s.rebuildLogged(ctx, c.transport)
	}
	c.align.SetBase(s.state.Newest())
	return nil
}
