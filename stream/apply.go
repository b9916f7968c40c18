package stream

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// apply applies the readings held, adding each to j: its offset, and the
// forecasts and dead letters it makes. They are applied in slot order,
// the forecasts due emitted at every new slot, so that no input runs
// ahead of a pending forecast by more than the partitions' slack; while
// this service holds the partitions, the forecasts due are emitted at
// the end too (fresh ones, and those past their deadline).
func (c *consumeLoop) apply(ctx context.Context, j *flushJob, holding bool) error {
	s := c.s
	aborted := s.abortedIn(ctx, c.client, c.held)
	c.sortHeld()
	now := s.cfg.Now()
	var prev *Held
	for _, hi := range c.order {
		h := &c.held[hi]
		if prev != nil && h.OK && prev.OK && h.Slot != prev.Slot {
			if err := s.emitDue(&j.fc); err != nil {
				return err
			}
		}
		prev = h
		c.applyOne(j, h, aborted, now)
	}
	if holding {
		if err := s.emitDue(&j.fc); err != nil { // fresh and past deadline
			return err
		}
	}
	return nil
}

// sortHeld puts into c.order the indices of c.held in slot order (then
// in the order held). An order of indices is sorted rather than held
// itself, whose elements are large.
func (c *consumeLoop) sortHeld() {
	c.order = c.order[:0]
	for i := range c.held {
		c.order = append(c.order, int32(i))
	}
	held := c.held
	slices.SortFunc(c.order, func(a, b int32) int {
		return cmp.Or(cmp.Compare(held[a].Slot, held[b].Slot), cmp.Compare(a, b))
	})
}

// applyOne adds h's offset to j's batch and, unless h is a transaction's
// marker or of an aborted one, applies its reading to the state, the
// emitter and the live view; a reading refused (see reading) or that the
// state does not take is counted and added to j's dead letters with why.
func (c *consumeLoop) applyOne(j *flushJob, h *Held, aborted map[[2]int64]bool, now time.Time) {
	s := c.s
	m := &h.Msg
	j.batch.add(m.Partition, m.Offset)
	if commit, ok := TxnMarker(m.Key, m.Value); ok {
		if commit {
			s.state.Counters.TxnCommits.Add(1)
		} else {
			s.state.Counters.TxnAborts.Add(1)
		}
		return
	}
	if aborted[[2]int64{int64(m.Partition), m.Offset}] {
		s.state.Counters.TxnAborted.Add(1)
		return
	}
	rd, err := c.reading(h)
	if err == nil {
		var res ApplyResult
		if res, err = s.state.Apply(*rd); err == nil && res.Kind == Late {
			err = s.state.TooOld(res) // dead-lettered, for whoever looks for it
		}
		if err == nil {
			if res.Changed() { // it may make forecasts due
				j.arrived = append(j.arrived, h.Arrived)
			}
			s.emitter.OnApply(res, now)
			if res.Changed() || res.Kind == Duplicate { // the values the state holds
				s.live.Reading(rd.Sensor, rd.TS, rd.Values)
			}
			return
		}
	}
	s.state.Counters.Reject(err)
	j.dead = append(j.dead, deadLetterMessage(NewDeadLetter(err, m.Key, m.Value, s.cfg.ReadingsTopic, int32(m.Partition), m.Offset)))
}

// reading returns h's reading, or why it is refused. It was decoded and
// checked when fetched; what was not is decoded and checked again for
// its error, into c.scratch (h.Reading's values are not written to). The
// fetcher's check stands unless a clock moved on since (Validator.Now).
func (c *consumeLoop) reading(h *Held) (*Reading, error) {
	valid := &c.s.valid
	if h.OK {
		if valid.Now == nil {
			return &h.Reading, nil
		}
		return &h.Reading, valid.Check(h.Reading)
	}
	rd := &c.scratch
	if err := DecodeReadingFor(rd, h.Msg.Key, h.Msg.Value, c.s.names); err != nil {
		return rd, err
	}
	return rd, valid.Check(*rd)
}

// emitDue adds the forecasts due now to fb, round after round (a node's
// next slot may be due as soon as one is emitted, as when catching up),
// each round's embeddings and decoders computed in one batch each. Their
// messages are encoded by the batch's flush (see forecastBatch).
func (s *Service) emitDue(fb *forecastBatch) error {
	now := s.cfg.Now()
	nonFinite := s.counters.NonFinite.Load()
	defer s.logSkips()
	defer func() {
		if n := s.counters.NonFinite.Load() - nonFinite; n > 0 {
			if ok, held := s.markerLog.allow("non-finite", time.Now()); ok {
				s.cfg.Log.Warn().Uint64("slots", n).Int("suppressed", held).
					Msg("forecasts came out NaN or infinite (readings beyond the model's scale?): their slots are passed by (sdgnn_stream_forecasts_non_finite_total)")
			}
		}
	}()
	for {
		fs, err := s.emitter.EmitMany(s.emitter.Due(now), now)
		for i := range fs {
			f := &fs[i]
			s.live.RecordForecast(f)
			fb.add(f)
		}
		if err != nil {
			return fmt.Errorf("forecast: %w", err)
		}
		if len(fs) == 0 {
			return nil
		}
	}
}

// logSkips warns of the forecast slots the emitter has skipped since it
// was last called, naming the sensors and the slots (once a second at
// most, counting the lines held back), and stamps the time for
// sdgnn_stream_forecast_slots_skipped_last_timestamp_seconds.
func (s *Service) logSkips() {
	s.skips = s.emitter.Skips(s.skips[:0])
	if len(s.skips) == 0 {
		return
	}
	now := time.Now()
	s.counters.SkippedAtMs.Store(now.UnixMilli())
	ok, held := s.markerLog.allow("skip", now)
	if !ok {
		return
	}
	var (
		slots    int64
		from, to = int64(math.MaxInt64), int64(math.MinInt64)
		sensors  []int
	)
	for _, k := range s.skips {
		slots += k.To - k.From + 1
		from, to = min(from, k.From), max(to, k.To)
		sensors = append(sensors, k.Sensor)
	}
	slices.Sort(sensors)
	sensors = slices.Compact(sensors)
	step := s.cfg.StepMs
	s.cfg.Log.Warn().Int64("slots", slots).Ints("sensors", sensors).
		Time("from", time.UnixMilli(from*step).UTC()).Time("to", time.UnixMilli(to*step).UTC()).Int("suppressed", held).
		Msg("forecast slots skipped: an input ran more than -history slots ahead of these sensors' windows (sdgnn_stream_forecast_slots_skipped_total)")
}
