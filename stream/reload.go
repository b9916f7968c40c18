package stream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/rs/zerolog"
)

// Reload replaces the service's model by b: a model rolled out without
// stopping the service. b must be a bundle of the same dataset, sensors,
// window and channels as the one served (its GRU, φ, Θ, decoder, hidden
// size and normalisation may differ), and is taken over as by NewState.
//
// Reload waits until the batch in hand is written and committed (while the
// broker is away, up to Config.RetryFor), then moves every sensor's
// readings held and last emitted slot to a state for b and drops the
// cached embeddings, which b computes anew. No forecast
// slot is lost or emitted twice: every forecast emitted after Reload
// returns is b's, and carries b's version. The live view, the counters and
// the latest forecasts carry on. On error (naming what does not match)
// nothing changes and the service goes on with its model. Safe to call
// from any goroutine, whether Run is running or not.
func (s *Service) Reload(b *sdgnn.Bundle) error {
	return s.ReloadContext(context.Background(), b)
}

// ReloadContext is Reload, waiting for the batch in hand only until ctx
// ends: while the broker is away that batch may take up to
// Config.RetryFor, and a caller that answers a request cannot wait so
// long. It then returns an error wrapping ctx's (ErrReloadBusy and
// context.DeadlineExceeded, say), counted as a failed reload, and nothing
// changes.
func (s *Service) ReloadContext(ctx context.Context, b *sdgnn.Bundle) error {
	start := time.Now()
	select {
	case s.loop <- struct{}{}:
	case <-ctx.Done():
		s.counters.ReloadFailures.Add(1)
		return fmt.Errorf("reload model: %w after %s (is the broker reachable? see /readyz): %w", ErrReloadBusy, time.Since(start).Round(time.Millisecond), ctx.Err())
	}
	defer func() { <-s.loop }()
	if j := s.pending; j != nil {
		select {
		case <-j.done: // its error, if any, is Run's to return
		case <-ctx.Done():
			s.counters.ReloadFailures.Add(1)
			return fmt.Errorf("reload model: %w after %s (is the broker reachable? see /readyz): %w", ErrReloadBusy, time.Since(start).Round(time.Millisecond), ctx.Err())
		}
	}
	old := s.state.Bundle()
	if err := compatible(old, b); err != nil {
		s.counters.ReloadFailures.Add(1)
		return fmt.Errorf("reload model: %w", err)
	}
	if err := s.replaceState(b, s.state.Snapshot()); err != nil {
		s.counters.ReloadFailures.Add(1)
		return fmt.Errorf("reload model %s: %w", b.Meta.Version, err)
	}
	s.counters.Reloads.Add(1)
	s.cfg.Log.Info().Str("model", b.Meta.Version).Str("was", old.Meta.Version).Msg("model reloaded")
	warnOtherGraph(s.cfg.Log, old, b)
	warnWithoutSelf(s.cfg.Log, b)
	return nil
}

// warnOtherGraph warns when b, replacing old, was distilled on another
// road graph (pems.GraphFingerprint) than old: a model retrained on a
// mended graph is served so, but so is one of another network that has
// as many sensors under the same dataset's name (a file of the wrong
// deployment), and an operator should see which. Bundles written before
// graphs were fingerprinted, and fingerprints of which one covers the
// links' costs and the other not, say nothing.
func warnOtherGraph(log zerolog.Logger, old, b *sdgnn.Bundle) {
	og, ng := old.Meta.Graph, b.Meta.Graph
	if og == nil || ng == nil || og.Costs != ng.Costs || *og == *ng {
		return // nothing to compare, or the same graph
	}
	log.Warn().Str("model", b.Meta.Version).Str("was", old.Meta.Version).
		Stringer("graph", ng).Stringer("was_graph", og).Str("differs", og.Diff(*ng)).
		Msg("the model reloaded was distilled on another road graph than the one it replaces: its forecasts read the sensors that graph links")
}

// ErrReloadBusy is wrapped by ReloadContext's error when ctx ended before
// the batch in hand was committed.
var ErrReloadBusy = errors.New("the batch in hand is not committed yet")

// ReloadWait is how long POST /-/reload waits for the batch in hand
// before answering 503 Service Unavailable (see ReloadContext).
const ReloadWait = 20 * time.Second

// compatible returns an error naming what differs when b cannot replace
// old in a running service (see Service.Reload); NewStateHistory checks
// that b is complete.
func compatible(old, b *sdgnn.Bundle) error {
	if b == nil {
		return errors.New("incomplete bundle: none given")
	}
	om, nm := old.Meta, b.Meta
	switch {
	case nm.Dataset != om.Dataset:
		return fmt.Errorf("bundle %s is of dataset %q, the service serves %q", nm.Version, nm.Dataset, om.Dataset)
	case nm.Nodes != om.Nodes:
		return fmt.Errorf("bundle %s has %s, the service %d", nm.Version, english.Count(nm.Nodes, "sensor"), om.Nodes)
	case nm.Window != om.Window:
		return fmt.Errorf("bundle %s reads windows of %d slots, the service keeps %d", nm.Version, nm.Window, om.Window)
	case len(nm.Norm.Mean) != len(om.Norm.Mean):
		return fmt.Errorf("bundle %s has %s, the service %d", nm.Version, english.Count(len(nm.Norm.Mean), "channel"), len(om.Norm.Mean))
	}
	return sameSensors(old, b)
}

// sameSensors returns an error naming the difference when b names its
// sensors otherwise than old: readings are keyed, and forecasts named,
// by the sensors' names, which a running service does not change (its
// producers and consumers would not follow).
func sameSensors(old, b *sdgnn.Bundle) error {
	o, n := old.Meta.SensorIDs, b.Meta.SensorIDs
	const restart = "restart the service with it, its producers keying readings by the new names"
	switch {
	case o == nil && n == nil:
		return nil
	case o == nil:
		return fmt.Errorf("bundle %s names its sensors by ID (%s, …), the service by index: %s", b.Meta.Version, n[0], restart)
	case n == nil:
		return fmt.Errorf("bundle %s names its sensors by index, the service by ID (%s, …): %s", b.Meta.Version, o[0], restart)
	}
	for i := range o {
		if o[i] != n[i] {
			return fmt.Errorf("bundle %s names sensor %d %q, the service %q: %s", b.Meta.Version, i, n[i], o[i], restart)
		}
	}
	return nil
}

// replaceState makes the service's state one for b restored from
// snapshot, with the service's counters and a new emitter; on error
// nothing changes. The caller holds s.loop (Reload) or is Run.
func (s *Service) replaceState(b *sdgnn.Bundle, snapshot []byte) error {
	st, err := NewStateHistory(b, s.cfg.StepMs, s.state.History())
	if err == nil {
		err = guardState(st, b, s.cfg)
	}
	if err == nil {
		err = st.Restore(snapshot)
	}
	if err != nil {
		return err
	}
	st.Counters = s.counters
	s.mu.Lock()
	em := NewEmitter(st, s.cfg.Lateness)
	em.Inherit(s.emitter)
	s.bundle, s.state, s.emitter = b, st, em
	s.mu.Unlock()
	return nil
}
