package stream

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// Replay applies readings that were applied before (by the service that
// held the partitions until now, or by an earlier run of this one), to
// rebuild the windows from the log: in slot order, skipping a reading
// whose slot the state holds already or has left behind, and one it
// refuses. The readings were counted when they first came, so Counters
// are not touched; and no forecast is made due: call Emitter.Rescan
// afterwards. Replay sorts rs and returns the number of readings that
// changed the state.
func (s *State) Replay(rs []Reading) int {
	slices.SortStableFunc(rs, func(a, b Reading) int { return cmp.Compare(a.TS, b.TS) })
	counters := s.Counters
	s.Counters = new(Counters) // scratch: Apply counts into it
	defer func() { s.Counters = counters }()
	R := int64(s.r)
	changed := 0
	for _, r := range rs {
		if r.Sensor >= 0 && r.Sensor < s.n && r.TS%s.stepMs == 0 {
			nd, slot := &s.nodes[r.Sensor], r.TS/s.stepMs
			if nd.newest != noSlot && slot <= nd.newest && (slot <= nd.newest-R || nd.slots[s.pos(slot)] == slot) {
				continue // held, or older than the ring
			}
		}
		if res, err := s.Apply(r); err == nil && res.Changed() {
			changed++
		}
	}
	return changed
}

// MarkEmitted records that the forecast of sensor z for the slot starting
// at ts (Unix ms) was emitted, as found in the forecasts topic, so that
// the Emitter emits neither it nor an earlier slot of z again: z's last
// emitted slot becomes the later of its own and ts's. It reports false,
// changing nothing, for an unknown sensor or a ts off the slot grid.
// Call Emitter.Rescan afterwards.
func (s *State) MarkEmitted(z int, ts int64) bool {
	if z < 0 || z >= s.n || ts%s.stepMs != 0 || ts/s.stepMs == noSlot {
		return false
	}
	nd := &s.nodes[z]
	if slot := ts / s.stepMs; nd.lastEmitted == noSlot || slot > nd.lastEmitted {
		nd.lastEmitted = slot
	}
	return true
}

// rebuilt reports what Service.rebuild found in the log.
type rebuilt struct {
	Partitions int // readings partitions with committed offsets, read back
	Readings   int // valid readings read back
	Applied    int // of them, those that changed the state
	Forecasts  int // forecasts read back
	Sensors    int // sensors whose last emitted slot was found
	Moved      int // sensors whose last emitted slot moved up (found, or inferred)
	Inferred   int // sensors whose last emitted slot the replayed readings moved up
	// Untrusted counts the forecasts read back for a slot that the
	// readings held could not have produced (see State.Emittable), left
	// out; Forged names the first few as "sensor@time".
	Untrusted int
	Forged    []string
	// Strangers counts the forecasts read back of sensors the model does
	// not name (another model's IDs, or indices where it has IDs): the
	// log, and maybe the state file, were written for other sensors.
	Strangers int
}

// maxForgedNamed bounds rebuilt.Forged.
const maxForgedNamed = 10

// Emittable reports whether a forecast of sensor z for the slot starting
// at ts (Unix ms) can have come from the readings the state holds: z is a
// node, ts is on the grid, and some receptive node of z has reached the
// slot before (a forecast is made once an input has, at the latest at its
// deadline). A forecast found beyond that, in the forecasts topic, was
// not this model's from these readings.
func (s *State) Emittable(z int, ts int64) bool {
	if z < 0 || z >= s.n || ts%s.stepMs != 0 || ts/s.stepMs == noSlot {
		return false
	}
	newest, _, _, _, ok := s.horizon(z)
	return ok && ts/s.stepMs <= satAdd(newest, 1)
}

// rebuild reads the log back as this service begins to hold the readings
// partitions (at start, or taking over from another member), so that it
// continues with whole windows and without emitting again what was
// emitted, even without a state file to restore (a restart without -state,
// a standby on another host):
//
//   - of every readings partition, the last (Window+History)×sensors
//     readings before the group's committed offset are replayed into the
//     state (State.Replay): the windows the previous holder had;
//   - of every forecasts partition, as many of the last forecasts are
//     read, and each sensor's last emitted slot moved up to the newest
//     found (State.MarkEmitted), and the live view and the latest
//     forecasts filled in.
//
// What the state holds already (restored from a current file) is skipped,
// so a rebuild changes nothing then. It reads at most
// (Window+History)×sensors messages per partition of each topic (14,736
// for PeMS04). The caller is Run, holding s.loop.
func (s *Service) rebuild(ctx context.Context, t *kafka.Transport) (out rebuilt, err error) {
	// The emitter schedules again what was replayed or marked, and only
	// then: a holder whose rebuild found nothing new (it held the
	// partitions a moment before a rebalance) keeps its deadlines, which
	// a rescan would count from the slots alone, hastening stale
	// forecasts while it catches up on a backlog.
	last := make([]int64, s.state.n)
	for z := range last {
		last[z] = s.state.nodes[z].lastEmitted
	}
	defer func() {
		for z := range last {
			if s.state.nodes[z].lastEmitted != last[z] {
				out.Moved++
			}
		}
		if out.Applied > 0 || out.Moved > 0 {
			s.emitter.Rescan()
		}
	}()
	client := brokerClient(s.cfg.Brokers, t)
	span := int64(s.state.r) * int64(s.state.n)
	if err := s.replayReadings(ctx, client, t, span, &out); err != nil {
		return out, err
	}
	latest, lastOf, err := s.readForecasts(ctx, client, t, span, &out)
	if err != nil {
		return out, err
	}
	out.Sensors = len(latest)
	if out.Readings > 0 && s.valid.MaxAgeSlots == 0 && s.valid.MaxFutureSlots == 0 && s.sameModel(lastOf, latest) {
		for z := range s.state.n {
			if s.markFresh(z) {
				out.Inferred++
			}
		}
	}
	s.keepLatest(latest)
	return out, nil
}

// replayReadings reads back, of every readings partition, the last span
// readings before the group's committed offset, and replays those that
// are valid into the state and the live view, counting them in out.
func (s *Service) replayReadings(ctx context.Context, client *kafka.Client, t *kafka.Transport, span int64, out *rebuilt) error {
	cfg := &s.cfg
	parts, err := partitionsOf(ctx, t, cfg.Brokers, cfg.ReadingsTopic)
	if err != nil {
		return err
	}
	committed, err := committedOffsets(ctx, client, cfg.GroupID, cfg.ReadingsTopic, parts)
	if err != nil {
		return err
	}
	bounds, err := offsetBounds(ctx, client, cfg.ReadingsTopic, parts)
	if err != nil {
		return err
	}
	// The clock checks but the age: the readings were accepted then.
	valid := s.valid
	valid.MaxAgeSlots = 0
	var rs []Reading
	for _, p := range parts {
		end, ok := committed[p]
		if !ok || end <= bounds[p][0] {
			continue
		}
		out.Partitions++
		err := readRange(ctx, client, cfg.ReadingsTopic, p, max(end-span, bounds[p][0]), end, func(key, value []byte) {
			var r Reading
			if err := DecodeReadingFor(&r, key, value, s.names); err == nil && valid.Check(r) == nil {
				rs = append(rs, r)
			}
		})
		if err != nil {
			return err
		}
	}
	out.Readings = len(rs)
	out.Applied = s.state.Replay(rs)
	for _, r := range rs { // in slot order
		s.live.backfill(r.Sensor, r.TS, r.Values, liveReading)
	}
	return nil
}

// readForecasts reads back the last span forecasts of every forecasts
// partition, moving each sensor's last emitted slot up to the newest
// found (State.MarkEmitted) and filling the live view in, counting them
// in out. It returns each sensor's latest forecast found, and each
// partition's last forecast read.
func (s *Service) readForecasts(ctx context.Context, client *kafka.Client, t *kafka.Transport, span int64, out *rebuilt) (latest map[int]found, lastOf map[int][]byte, err error) {
	cfg := &s.cfg
	fparts, err := partitionsOf(ctx, t, cfg.Brokers, cfg.ForecastsTopic)
	if err != nil {
		return nil, nil, err
	}
	bounds, err := offsetBounds(ctx, client, cfg.ForecastsTopic, fparts)
	if err != nil {
		return nil, nil, err
	}
	latest = map[int]found{}
	lastOf = map[int][]byte{} // each partition's last forecast read
	for _, p := range fparts {
		first, end := bounds[p][0], bounds[p][1]
		if end <= first {
			continue
		}
		var f Reading
		err := readRange(ctx, client, cfg.ForecastsTopic, p, max(end-span, first), end, func(key, value []byte) {
			// A forecast message is a reading's (v, sensor, ts, values)
			// and more fields, which the reading decoder skips: much
			// cheaper than DecodeForecast's encoding/json, which took
			// most of a rebuild's time (TestForecastDecodesAsReading).
			if err := DecodeReadingFor(&f, key, value, s.names); err != nil {
				if ReasonOf(err) == ReasonUnknownSensor {
					out.Strangers++
				}
				return
			}
			if !s.state.Emittable(f.Sensor, f.TS) {
				// Beyond what the readings held could have produced:
				// another writer's (forged, or from other data); trusted,
				// it would silence the sensor until its readings reach it.
				out.Untrusted++
				if len(out.Forged) < maxForgedNamed {
					out.Forged = append(out.Forged, s.names.Name(f.Sensor)+"@"+time.UnixMilli(f.TS).UTC().Format(time.RFC3339))
				}
				return
			}
			if !s.state.MarkEmitted(f.Sensor, f.TS) {
				return
			}
			out.Forecasts++
			s.live.backfill(f.Sensor, f.TS, f.Values, liveForecast)
			if l, ok := latest[f.Sensor]; !ok || f.TS >= l.ts {
				latest[f.Sensor] = found{f.TS, value}
			}
			lastOf[p] = value
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return latest, lastOf, nil
}

// keepLatest makes the forecasts of latest the sensors' latest served,
// where they are newer than those held. Served as they are
// (/forecast/{sensor}, /forecasts): a message the reading decoder took
// but that is not a whole forecast (another writer's) is checked once
// here, per sensor, and left out.
func (s *Service) keepLatest(latest map[int]found) {
	for z, l := range latest {
		if _, err := DecodeForecast(l.msg); err != nil {
			delete(latest, z)
		}
	}
	s.mu.Lock()
	for z, l := range latest {
		if old, ok := s.latest[z]; !ok || tsOf(old) < l.ts {
			s.latest[z] = l.msg
		}
	}
	s.mu.Unlock()
}

// found is the latest forecast of a sensor that a rebuild read back: its
// slot (Unix ms) and the message.
type found struct {
	ts  int64
	msg []byte
}

// markFresh moves sensor z's last emitted slot up to the end of the run
// of its next targets whose inputs the state all holds, and reports
// whether it moved. After a replay those were emitted: the holder that
// applied the replayed readings emitted every target all of whose inputs
// it held (a fresh one, at once) before it committed them, and it held
// at least what was replayed. This covers the sensors whose forecasts
// are no longer in the tail of the forecasts topic that the rebuild reads
// (a sensor silent for long, a forecasts topic busier than the readings).
// A sensor with an input never heard is never ready, so not moved: its
// forecasts came at deadlines, which the holder may not have reached.
//
// It holds only where the holder applied every reading replayed and
// forecast with the same receptive sets: the caller checks that no
// reading was refused by the clock (Validator.MaxAgeSlots and
// MaxFutureSlots off, as the replay ignores them) and that the holder ran
// this model (sameModel). Otherwise a forecast the holder never emitted
// could be marked, and lost; a repeated one is the lesser harm.
func (s *Service) markFresh(z int) bool {
	t, ok := s.emitter.target(z)
	if !ok {
		return false
	}
	end := int64(noSlot)
	for ; s.state.readyFor(z, t); t++ {
		end = t
	}
	// The first target follows the last emitted slot, so end moves it.
	return end != noSlot && s.state.MarkEmitted(z, end*s.state.stepMs)
}

// sameModel reports whether the forecasts read back were made by this
// service's model: the last of every partition read carries its version,
// and every sensor's latest names as inputs the sensor's receptive nodes
// under this model's Θ.
func (s *Service) sameModel(last map[int][]byte, latest map[int]found) bool {
	if len(last) == 0 {
		return false
	}
	b := s.Bundle()
	for _, msg := range last {
		if f, err := DecodeForecast(msg); err != nil || f.Model != b.Meta.Version {
			return false
		}
	}
	for z, l := range latest {
		f, err := DecodeForecastFor(l.msg, s.names)
		if err != nil || f.Model != b.Meta.Version {
			return false
		}
		ks, _ := b.Receptive(z)
		if len(f.Inputs) != len(ks) {
			return false
		}
		for i, in := range f.Inputs {
			if in.Sensor != ks[i] {
				return false
			}
		}
	}
	return true
}

// tsOf returns the slot of a forecast message, or the lowest int64 if it
// cannot be decoded.
func tsOf(msg []byte) int64 {
	f, err := DecodeForecast(msg)
	if err != nil {
		return -1 << 63
	}
	return f.TS
}
