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
	s.cfg.Log.Info().Int("partitions", r.Partitions).Int("readings", r.Readings).Int("applied", r.Applied).
		Int("forecasts", r.Forecasts).Int("sensors_emitted", r.Sensors).Int("sensors_moved", r.Moved).Int("sensors_inferred", r.Inferred).Stringer("took", time.Since(start).Round(time.Microsecond)).
		Msg("rebuilt from the log: readings before the committed offsets applied, last forecasts found")
}
