package stream

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// ErrNoData is returned (wrapped) by State.Forecast when no receptive node
// of the forecast node has had a single reading yet (one without readings
// among others that have goes in as a window of missing readings).
var ErrNoData = errors.New("no reading yet")

// MaxHistory is the most slots a State keeps beyond its window.
const MaxHistory = 1 << 20

// MaxStateBytes is the most memory a State takes for its slots
// (StateBytes): a history that would take more is refused, where it
// would end the process out of memory while it starts.
const MaxStateBytes = 8 << 30

// StateBytes returns the memory a State of b keeping history slots beyond
// the window takes for its slots, with its Emitter: for every sensor and
// slot kept, the slot, its readings, its cached embedding and the gaps of
// that embedding's window, and the Emitter's record of when the slot
// arrived. It does not overflow: a size beyond int64 gives math.MaxInt64.
func StateBytes(b *sdgnn.Bundle, history int) int64 {
	n, t, c, d := int64(b.Meta.Nodes), int64(b.Meta.Window), int64(len(b.Meta.Norm.Mean)), int64(b.Meta.Hidden)
	// Slot and embedding's slot (int64), gaps (int32), the Emitter's slot
	// and time of arrival (int64), readings, embedding.
	per := 16 + 4 + 16 + 8*(c+d)
	slots := n * (t + int64(history))
	if slots > 0 && per > math.MaxInt64/slots {
		return math.MaxInt64
	}
	return slots * per
}

// ErrNonFinite is returned (wrapped) by State.ForecastSlots for a forecast
// the model made NaN or infinite (readings huge beyond the normaliser's
// scale, say). Emitter passes the slot by (Counters.NonFinite).
var ErrNonFinite = errors.New("the model's forecast is not finite")

// noSlot marks a ring position without a reading, and a node or an emitter
// entry without any slot.
const noSlot = math.MinInt64

// ApplyKind says what a reading did to the state.
type ApplyKind uint8

// The outcomes of State.Apply.
const (
	// Advanced: the reading's slot is newer than the node's newest; the
	// window moved forward (skipped slots became missing, counted as gaps).
	Advanced ApplyKind = iota + 1
	// Filled: an older slot still inside the window, missing until now,
	// was filled (an out-of-order reading).
	Filled
	// Duplicate: the slot already had exactly these values; nothing changed.
	Duplicate
	// Conflict: the slot already had other values; the first are kept.
	Conflict
	// Late: the slot is older than the window; the reading was dropped.
	Late
	// Completed: the slot was held with missing values (0) that the
	// reading gives, its other values agreeing (see Complement); they
	// were filled in.
	Completed
)

var kindNames = [...]string{"", "advanced", "filled", "duplicate", "conflict", "late", "completed"}

// String returns the kind's lower-case name, as used in logs.
func (k ApplyKind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("ApplyKind(%d)", uint8(k))
}

// ApplyResult reports what State.Apply did with one reading.
type ApplyResult struct {
	Sensor int
	TS     int64 // the reading's slot, Unix ms
	Kind   ApplyKind
	Gap    int64 // slots skipped (now missing) when Kind is Advanced
}

// Changed reports whether the reading changed the node's window (and so its
// embedding): Advanced, Filled or Completed.
func (r ApplyResult) Changed() bool {
	return r.Kind == Advanced || r.Kind == Filled || r.Kind == Completed
}

// Complement compares the values held for a slot with a later reading's
// of it, channel by channel, 0 being a missing value: conflicts is true
// when some channel has non-zero values in both that differ (to the bit),
// and adds when some channel missing in held is not in later. A later
// reading that adds without conflict completes the slot (Completed): the
// outcome is then the same in either order, a slot's first reading being
// kept otherwise.
func Complement(held, later []float64) (adds, conflicts bool) {
	for i, x := range later {
		switch h := held[i]; {
		case x == 0 || math.Float64bits(x) == math.Float64bits(h):
		case h == 0:
			adds = true
		default:
			conflicts = true
		}
	}
	return adds, conflicts
}

// FillMissing sets each missing value (0) of held that later gives to
// later's: the completion of a slot by a later reading that Complement
// finds adds without conflict.
func FillMissing(held, later []float64) {
	for i, x := range later {
		if held[i] == 0 && x != 0 {
			held[i] = x
		}
	}
}

// NodeInfo is one node's position and per-node counts, for diagnostics.
type NodeInfo struct {
	Newest      int64 // newest slot seen, Unix ms; valid when Seen
	Seen        bool
	LastEmitted int64 // slot of the last forecast emitted for the node, Unix ms; valid when Emitted
	Emitted     bool
	Applied     uint64 // readings that advanced, filled or completed the window
	Duplicates  uint64 // duplicates and conflicts
	OutOfOrder  uint64
	Late        uint64
	Gaps        uint64 // slots skipped
}

type node struct {
	newest      int64     // newest slot index (ts/step), noSlot if none
	lastEmitted int64     // slot index of the last forecast emitted, noSlot if none
	first       int64     // oldest slot held when its first reading came (or at Restore), noSlot if none
	slots       []int64   // R ring positions: slot index held, or noSlot
	vals        []float64 // R×C ring values
	embAt       []int64   // R positions: window-end slot whose embedding is cached there, or noSlot
	embs        []float64 // R×d cached φ(GRU(window)), by window-end slot
	embGaps     []int32   // R positions: the slots without a reading of that window (Input.Gaps)

	// The completeness of the node's last forecast made (gather), which
	// Emitter counts as it emits it: the slots of its own window without a
	// reading (ownGaps) and whether another receptive node's window lacked
	// one (evaluation.OthersIncompleteFor).
	fcOwn    int32
	fcOthers bool

	applied, dups, ooo, late, gaps uint64
}

// DefaultHistory is the number of slots a State keeps beyond the window
// (three hours of 5-minute slots): a forecast can still be made from exact
// windows when the inputs of a node are up to this many slots apart, as
// when partitions are consumed unevenly while catching up.
const DefaultHistory = 36

// State is the streaming forecaster's state: for every node its readings
// of the last Window+History slots in a ring buffer, its newest slot, the
// embeddings φ(GRU(window)) of its windows as far as computed, and the slot
// of its last emitted forecast.
//
// The forecast for slot t of node z uses, of every receptive node k, the
// window ending at slot t−1 (or at k's newest slot, if k lags behind):
// the same windows the offline path uses, whatever order the readings
// arrive in, as long as the inputs are at most History slots apart. Each
// embedding is computed once per window, in batches (Prepare), so that a
// forecast costs only the weighted sum of |θ_z| ≤ 6 cached vectors and one
// decoder pass, allocation-free.
//
// A State is not safe for concurrent use (it owns the Bundle, whose layers
// keep activations); its Counters are, so metrics may be scraped from
// another goroutine.
type State struct {
	b       *sdgnn.Bundle
	names   *pems.SensorNames // b's sensors' names
	n, t, c int
	d       int
	r       int // ring length: window + history
	stepMs  int64
	nodes   []node
	deps    [][]int // deps[k]: nodes z with k ∈ θ_z (or k = z, see waits), ascending
	// waits[z] is what z's forecast waits for: its receptive nodes, and
	// z itself where the bundle has silent weights and z is not among
	// them, for its own window then chooses the weights (silentWeights).
	waits    [][]int
	window   []float64
	Counters *Counters

	// Forecast batch (ForecastSlots): the receptive embeddings of the
	// nodes gathered, one node after the other; each node's error; the
	// indices and nodes of those gathered; their forecasts.
	embs  [][]float64
	ferrs []error
	fok   []int
	fz    []int
	fvals []float64
	fsil  []bool // of those gathered, whether its own window was empty (Forecast.Silent)

	// Embedding batch: queued windows, the times of their last steps, their
	// embeddings, and where each goes.
	qwin, qemb []float64
	qend       []int64
	queued     []queued

	// Windows of missing readings in the forecast batch (receptive nodes
	// without any reading), which are the same for every such node: the
	// slot each ends at and its embedding, a row each, and for each use
	// its index in embs and its row. Not cached in the node's ring: two
	// forecasts of a batch a ring apart would share the position of their
	// windows' end.
	mend  []int64
	memb  []float64
	mwant [][2]int

	wm     watermark         // see SetMaxAhead
	bounds []snapshot.Bounds // see SetBounds
}

// NewState returns an empty state for forecasting with b on a grid of
// stepMs-millisecond slots, keeping DefaultHistory slots beyond the window.
// The state takes b over: b must not be used elsewhere concurrently (give
// it a Clone).
func NewState(b *sdgnn.Bundle, stepMs int64) (*State, error) {
	return NewStateHistory(b, stepMs, DefaultHistory)
}

// NewStateHistory is NewState keeping history slots beyond the window
// (0: only the window; a node's inputs must then advance in step).
func NewStateHistory(b *sdgnn.Bundle, stepMs int64, history int) (*State, error) {
	if b == nil || b.Theta == nil || b.GRU == nil || b.Phi == nil || b.Dec == nil {
		return nil, errors.New("new state: incomplete bundle")
	}
	n, t, c, d := b.Meta.Nodes, b.Meta.Window, len(b.Meta.Norm.Mean), b.Meta.Hidden
	if n < 1 || t < 1 || c < 1 || d < 1 {
		return nil, fmt.Errorf("new state: bundle has %d nodes, window %d, %d channels, hidden %d; all must be positive", n, t, c, d)
	}
	if stepMs <= 0 {
		return nil, fmt.Errorf("new state: step %d ms must be positive", stepMs)
	}
	if ti := b.Meta.Norm.Time; ti != nil && ti.StepMs != stepMs {
		return nil, fmt.Errorf("new state: the bundle's calendar inputs were fitted on %d ms steps, the stream has %d ms slots", ti.StepMs, stepMs)
	}
	if history < 0 || history > MaxHistory {
		return nil, fmt.Errorf("new state: history of %d slots outside [0, %d]", history, MaxHistory)
	}
	if need := StateBytes(b, history); need > MaxStateBytes {
		return nil, fmt.Errorf("new state: %s × %d slots (window %d, history %d) take %.1f GiB, more than the %d GiB a state may take: keep fewer slots of history",
			english.Count(n, "sensor"), t+history, t, history, float64(need)/(1<<30), MaxStateBytes>>30)
	}
	if err := b.Theta.Validate(n); err != nil {
		return nil, fmt.Errorf("new state: %w", err)
	}
	names, err := b.SensorNames()
	if err != nil {
		return nil, fmt.Errorf("new state: %w", err)
	}
	r := t + history
	s := &State{b: b, names: names, n: n, t: t, c: c, d: d, r: r, stepMs: stepMs,
		nodes: make([]node, n), deps: make([][]int, n), waits: make([][]int, n), window: make([]float64, t*c), Counters: &Counters{window: t}, bounds: b.Meta.Bounds}
	slots := make([]int64, n*r)
	vals := make([]float64, n*r*c)
	embAt := make([]int64, n*r)
	embs := make([]float64, n*r*d)
	embGaps := make([]int32, n*r)
	for i := range slots {
		slots[i], embAt[i] = noSlot, noSlot
	}
	maxR := 0
	for z := range s.nodes {
		nd := &s.nodes[z]
		nd.newest, nd.lastEmitted, nd.first = noSlot, noSlot, noSlot
		nd.slots = slots[z*r : (z+1)*r : (z+1)*r]
		nd.vals = vals[z*r*c : (z+1)*r*c : (z+1)*r*c]
		nd.embAt = embAt[z*r : (z+1)*r : (z+1)*r]
		nd.embs = embs[z*r*d : (z+1)*r*d : (z+1)*r*d]
		nd.embGaps = embGaps[z*r : (z+1)*r : (z+1)*r]
		ks, _ := b.Receptive(z)
		maxR = max(maxR, len(ks))
		s.waits[z] = ks
		if silentWeights(b) {
			if i, found := slices.BinarySearch(ks, z); !found {
				s.waits[z] = slices.Insert(slices.Clone(ks), i, z)
			}
		}
		for _, k := range s.waits[z] {
			s.deps[k] = append(s.deps[k], z)
		}
	}
	s.embs = make([][]float64, maxR)
	return s, nil
}

// SetBounds makes Apply refuse (out_of_range) a reading with a value
// outside its channel's bounds[c] (0, a missing reading, is always
// accepted); nil accepts every finite value. A new state takes its
// bundle's (Meta.Bounds, fitted on the training readings).
func (s *State) SetBounds(bounds []snapshot.Bounds) error {
	if bounds != nil && len(bounds) != s.c {
		return fmt.Errorf("plausible ranges: %d for %d channels", len(bounds), s.c)
	}
	s.bounds = bounds
	return nil
}

// channelName returns channel c's name in the bundle, or its index.
func (s *State) channelName(c int) string {
	if c < len(s.b.Meta.Channels) {
		return s.b.Meta.Channels[c]
	}
	return strconv.Itoa(c)
}

// Bounds returns the plausible ranges Apply checks (see SetBounds), nil
// if none; the slice is the state's own.
func (s *State) Bounds() []snapshot.Bounds { return s.bounds }

// TooOld returns the error a Late result of Apply stands for: the
// reading's slot lies before every slot its sensor's window and history
// hold, for a caller that dead-letters late readings (too_old) rather than
// only counting them. It names the sensor as readings do: by ID, or index.
func (s *State) TooOld(res ApplyResult) error {
	nd := &s.nodes[res.Sensor]
	return reject(ReasonTooOld, "ts %d is older than sensor %s holds: its newest slot is %d and it keeps %d slots back (window and -history)",
		res.TS, s.names.Name(res.Sensor), nd.newest*s.stepMs, s.r)
}

// SetMaxAhead makes Apply refuse (too_new) a reading stamped more than
// slots slots after the newest slot that a tenth of the sensors (at least
// two) have reached, counting the readings refused: a sensor's clock gone
// wrong cannot move its window past the stream's, nor its real readings
// become late, while a jump of the whole stream is followed once that
// many sensors have claimed it (their first readings of it refused). 0
// (the default) turns the check off. A Restore keeps it and starts the
// mark again from the nodes' newest slots.
func (s *State) SetMaxAhead(slots int64) {
	s.wm.reset(s.n, slots, func(z int) int64 { return s.nodes[z].newest })
}

// MaxAhead returns SetMaxAhead's slots, 0 when off.
func (s *State) MaxAhead() int64 { return s.wm.ahead }

func (s *State) resetMark() { s.SetMaxAhead(s.wm.ahead) }

// History returns the number of slots kept beyond the window.
func (s *State) History() int { return s.r - s.t }

// Newest returns the newest slot any node holds a reading of, noSlot
// (math.MinInt64) if none: where a service restarted, or taking over,
// stands (see Aligner.SetBase).
func (s *State) Newest() int64 {
	n := int64(noSlot)
	for i := range s.nodes {
		n = max(n, s.nodes[i].newest)
	}
	return n
}

// Nodes returns the number of nodes.
func (s *State) Nodes() int { return s.n }

// StepMs returns the slot length in milliseconds.
func (s *State) StepMs() int64 { return s.stepMs }

// Bundle returns the model the state forecasts with.
func (s *State) Bundle() *sdgnn.Bundle { return s.b }

// Names returns the names of the bundle's sensors: its sensor IDs, or
// their indices (see DecodeReadingFor).
func (s *State) Names() *pems.SensorNames { return s.names }

// Dependents returns the nodes whose forecasts use node k (k ∈ θ_z), and
// k itself where the bundle has silent weights and k's forecast does not
// read k (its own window chooses the weights: see Ready), ascending; the
// slice is the state's own.
func (s *State) Dependents(k int) []int {
	if k < 0 || k >= s.n {
		return nil
	}
	return s.deps[k]
}

// Node returns node z's position and counts.
func (s *State) Node(z int) (NodeInfo, error) {
	if z < 0 || z >= s.n {
		return NodeInfo{}, fmt.Errorf("node %d outside [0,%d)", z, s.n)
	}
	nd := &s.nodes[z]
	return NodeInfo{Newest: s.ms(nd.newest), Seen: nd.newest != noSlot,
		LastEmitted: s.ms(nd.lastEmitted), Emitted: nd.lastEmitted != noSlot,
		Applied: nd.applied, Duplicates: nd.dups, OutOfOrder: nd.ooo, Late: nd.late, Gaps: nd.gaps}, nil
}

func (s *State) ms(slot int64) int64 {
	if slot == noSlot {
		return 0
	}
	return slot * s.stepMs
}

func (s *State) pos(slot int64) int { return posIn(slot, s.r) }

// Apply adds one reading to the state. It is idempotent: applying a
// reading again changes nothing. What happened is reported in the result
// and counted:
//
//   - a slot newer than the node's newest advances the window (Advanced);
//     slots skipped on the way are missing (zeros, as in training) and
//     counted as gaps;
//   - a missing slot still held (within Window+History slots of the
//     newest) is filled (Filled, counted as out-of-order);
//   - a slot already present is a Duplicate (same values, or none it
//     lacks), Completed (its missing values, 0, given by the reading and
//     the others agreeing: see Complement) or a Conflict (other values;
//     the first reading is kept);
//   - a slot older than that is Late and dropped.
//
// Embeddings are not computed here but when a forecast needs them (a
// Filled slot invalidates those of the windows it lies in). A reading the
// state cannot hold (sensor not a node, wrong number of values, non-finite
// value, timestamp off the grid) is refused with a *RejectError and changes
// nothing; such readings are normally caught by Validator first.
func (s *State) Apply(r Reading) (ApplyResult, error) {
	res := ApplyResult{Sensor: r.Sensor, TS: r.TS}
	if r.Sensor < 0 || r.Sensor >= s.n {
		return res, reject(ReasonUnknownSensor, "sensor %d outside [0,%d)", r.Sensor, s.n)
	}
	if len(r.Values) != s.c {
		return res, reject(ReasonChannels, "%d values, want %d", len(r.Values), s.c)
	}
	for i, x := range r.Values {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return res, reject(ReasonNonFinite, "value %d is %g", i, x)
		}
		if s.bounds != nil && !s.bounds[i].Holds(x) {
			if x != 0 && math.Abs(x) < 0x1p-1022 {
				return res, reject(ReasonOutOfRange, "values[%d] is %g, a subnormal number no sensor of channel %s reads (-value-range)", i, x, s.channelName(i))
			}
			return res, reject(ReasonOutOfRange, "values[%d] is %g, outside the plausible range %v of channel %s (-value-range)", i, x, s.bounds[i], s.channelName(i))
		}
	}
	if r.TS%s.stepMs != 0 {
		return res, reject(ReasonOffGrid, "ts %d is not a multiple of the %d ms slot", r.TS, s.stepMs)
	}
	slot := r.TS / s.stepMs
	if slot == noSlot {
		return res, reject(ReasonTooOld, "ts %d", r.TS)
	}
	if !s.wm.admit(r.Sensor, slot) {
		return res, reject(ReasonTooNew, "ts %d is %d slots after %d, the newest slot %d sensors have reached (at most %d: -max-ahead)",
			r.TS, slot-s.wm.mark, s.wm.mark*s.stepMs, s.wm.quorum, s.wm.ahead)
	}
	nd := &s.nodes[r.Sensor]
	cnt := s.Counters
	R := int64(s.r)
	switch {
	case nd.newest == noSlot || slot > nd.newest:
		res.Kind = Advanced
		if nd.newest != noSlot {
			res.Gap = slot - nd.newest - 1
			// Clear the positions of the skipped slots (all of them when the
			// gap spans the ring), the new slot's position included.
			for sl, i := nd.newest+1, int64(0); sl <= slot && i < R; sl, i = sl+1, i+1 {
				nd.slots[s.pos(sl)] = noSlot
			}
		}
		nd.newest = slot
		if nd.first == noSlot {
			nd.first = slot
		}
		s.store(nd, slot, r.Values)
		nd.applied++
		cnt.Applied.Add(1)
		if res.Gap > 0 {
			nd.gaps += uint64(res.Gap)
			cnt.Gaps.Add(uint64(res.Gap))
		}
	case slot <= nd.newest-R:
		res.Kind = Late
		nd.late++
		cnt.Late.Add(1)
	default:
		p := s.pos(slot)
		if nd.slots[p] == slot {
			held := nd.vals[p*s.c : (p+1)*s.c]
			switch adds, conflicts := Complement(held, r.Values); {
			case conflicts:
				res.Kind = Conflict
				nd.dups++
				cnt.Conflicts.Add(1)
				return res, nil
			case !adds:
				res.Kind = Duplicate
				nd.dups++
				cnt.Duplicates.Add(1)
				return res, nil
			}
			res.Kind = Completed
			FillMissing(held, r.Values)
			nd.applied++
			cnt.Applied.Add(1)
			cnt.Completed.Add(1)
		} else {
			res.Kind = Filled
			nd.first = min(nd.first, slot)
			s.store(nd, slot, r.Values)
			nd.applied++
			nd.ooo++
			cnt.Applied.Add(1)
			cnt.OutOfOrder.Add(1)
		}
		// The windows that hold the slot have changed.
		for e := slot; e < slot+int64(s.t) && e <= nd.newest; e++ {
			if q := s.pos(e); nd.embAt[q] == e {
				nd.embAt[q] = noSlot
			}
		}
	}
	return res, nil
}

func (s *State) store(nd *node, slot int64, vals []float64) {
	p := s.pos(slot)
	nd.slots[p] = slot
	copy(nd.vals[p*s.c:(p+1)*s.c], vals)
}

// fillWindow writes the node's window ending at slot end into dst
// (Window×Channels), oldest first, zeros for missing slots.
func (s *State) fillWindow(dst []float64, nd *node, end int64) {
	c := s.c
	for j := 0; j < s.t; j++ {
		sl := end - int64(s.t-1-j)
		p := s.pos(sl)
		w := dst[j*c : (j+1)*c]
		if nd.slots[p] == sl {
			copy(w, nd.vals[p*c:(p+1)*c])
		} else {
			clear(w)
		}
	}
}

// zeroRows counts the slots of a window (Window×Channels, as fillWindow
// fills it) whose values are all 0: those without a reading, never
// received or missing (Input.Gaps).
func (s *State) zeroRows(win []float64) int {
	n := 0
	for j := 0; j < s.t; j++ {
		if allZero(win[j*s.c : (j+1)*s.c]) {
			n++
		}
	}
	return n
}

// held reports whether node nd's window ending at slot end is still held:
// end is at most its newest slot and at least History slots before.
func (s *State) held(nd *node, end int64) bool {
	return nd.newest != noSlot && end <= nd.newest && end > nd.newest-int64(s.r-s.t+1)
}

// queue makes sure node k's embedding of the window ending at end (held) is
// cached or queued for the next flushEmbeddings, and returns where it is
// (or will be).
func (s *State) queue(k int, end int64) []float64 {
	nd := &s.nodes[k]
	p := s.pos(end)
	e := nd.embs[p*s.d : (p+1)*s.d]
	if nd.embAt[p] == end {
		return e
	}
	nd.embAt[p] = end // valid once flushed
	n, w := len(s.queued), s.t*s.c
	s.qwin = slices.Grow(s.qwin[:n*w], w)[:(n+1)*w]
	s.fillWindow(s.qwin[n*w:], nd, end)
	nd.embGaps[p] = int32(s.zeroRows(s.qwin[n*w : (n+1)*w]))
	s.qend = append(s.qend, end*s.stepMs)
	s.queued = append(s.queued, queued{k, p})
	return e
}

// queueMissing appends to s.embs, for the forecast being gathered, the
// embedding of a window of missing readings ending at slot end, queued
// once a batch: its place is set by ForecastSlots once the batch is
// gathered (a row of memb).
func (s *State) queueMissing(end int64) {
	row := slices.Index(s.mend, end)
	if row < 0 {
		row = len(s.mend)
		s.mend = append(s.mend, end)
		n, w := len(s.queued), s.t*s.c
		s.qwin = slices.Grow(s.qwin[:n*w], w)[:(n+1)*w]
		clear(s.qwin[n*w:])
		s.qend = append(s.qend, end*s.stepMs)
		s.queued = append(s.queued, queued{-1, row})
	}
	s.mwant = append(s.mwant, [2]int{len(s.embs), row})
	s.embs = append(s.embs, nil)
}

// queued is an embedding waiting for flushEmbeddings: node k, ring
// position p; or, k < 0, row p of the batch's windows of missing readings.
type queued struct{ k, p int }

// flushEmbeddings computes the queued embeddings in one batch.
func (s *State) flushEmbeddings() error {
	n, d := len(s.queued), s.d
	if n == 0 {
		return nil
	}
	s.qemb = slices.Grow(s.qemb[:0], n*d)[:n*d]
	err := s.b.EmbedBatch(s.qemb, s.qwin[:n*s.t*s.c], s.qend[:n])
	for i, q := range s.queued {
		if q.k < 0 { // a window of missing readings: row q.p of memb
			if err == nil {
				copy(s.memb[q.p*d:(q.p+1)*d], s.qemb[i*d:(i+1)*d])
			}
			continue
		}
		nd := &s.nodes[q.k]
		if err != nil {
			nd.embAt[q.p] = noSlot // not computed
			continue
		}
		copy(nd.embs[q.p*d:(q.p+1)*d], s.qemb[i*d:(i+1)*d])
	}
	s.queued, s.qend = s.queued[:0], s.qend[:0]
	return err
}

// Window appends node k's current window (Window×Channels, oldest first,
// zeros for missing slots, ending at its newest slot) to dst, and returns
// the extended slice with the newest slot (Unix ms): pass dst[:0] to reuse
// its storage. ok is false, and dst returned as it was, if k is not a node
// or has no reading yet.
func (s *State) Window(dst []float64, k int) (w []float64, newest int64, ok bool) {
	if k < 0 || k >= s.n || s.nodes[k].newest == noSlot {
		return dst, 0, false
	}
	nd := &s.nodes[k]
	s.fillWindow(s.window, nd, nd.newest)
	return append(dst, s.window...), s.ms(nd.newest), true
}

// Ready reports whether every receptive node of z has a reading for slot
// ts (Unix ms), so that z's forecast for the next slot can be made from
// fresh data; where the bundle has silent weights, z itself too (its own
// window chooses the weights). A node without receptive nodes is never
// ready.
func (s *State) Ready(z int, ts int64) bool {
	if z < 0 || z >= s.n || ts%s.stepMs != 0 {
		return false
	}
	return s.readyFor(z, ts/s.stepMs+1)
}

// readyFor reports whether every node z waits for (waits[z]) has slot
// target−1.
func (s *State) readyFor(z int, target int64) bool {
	slot := target - 1
	ks := s.waits[z]
	for _, k := range ks {
		nd := &s.nodes[k]
		if nd.newest == noSlot || slot > nd.newest || slot <= nd.newest-int64(s.r) || nd.slots[s.pos(slot)] != slot {
			return false
		}
	}
	return len(ks) > 0
}

// horizon returns, for those of z's receptive nodes that have a reading,
// the newest slot over them, the oldest of their newest slots, the
// earliest forecast slot whose input windows are all still held and the
// latest of their first slots, and whether any has a reading. A receptive
// node without any reading (out of service since the start) holds no
// forecast back: it goes in as a window of missing readings (see gather).
func (s *State) horizon(z int) (newest, oldest, earliest, first int64, ok bool) {
	ks, _ := s.b.Receptive(z)
	newest, oldest, earliest, first = noSlot, math.MaxInt64, noSlot, noSlot
	h := int64(s.r - s.t)
	for _, k := range ks {
		nd := &s.nodes[k]
		if nd.newest == noSlot {
			continue
		}
		newest, oldest, earliest, first = max(newest, nd.newest), min(oldest, nd.newest), max(earliest, nd.newest-h+1), max(first, nd.first)
		ok = true
	}
	if !ok {
		return noSlot, noSlot, noSlot, noSlot, false
	}
	return newest, oldest, earliest, first, true
}

// Forecast writes node z's forecast from the newest readings into dst: the
// forecast slot is one step after the newest slot over the receptive
// nodes, dst.TS = (max_k newest_k + 1)·step (see ForecastSlot).
func (s *State) Forecast(z int, dst *Forecast) error {
	if z < 0 || z >= s.n {
		return fmt.Errorf("forecast: node %d outside [0,%d)", z, s.n)
	}
	newest, _, _, _, ok := s.horizon(z)
	if !ok {
		return fmt.Errorf("forecast node %d: receptive nodes without readings: %w", z, ErrNoData)
	}
	return s.ForecastSlot(z, (newest+1)*s.stepMs, dst)
}

// ErrGone is returned (wrapped) by ForecastSlot when an input window of the
// forecast slot is no longer held: some receptive node is more than
// History slots ahead of it.
var ErrGone = errors.New("input window no longer held")

// ForecastSlot writes node z's forecast for the slot starting at ts (Unix
// ms) into dst, from every receptive node k's window ending at slot
// ts/step − 1, or at k's newest slot if k has not reached it yet. Each
// input is reported with the end of the window used, and dst.StaleSlots =
// max_k (forecast slot − 1 − window end_k), the window's length for a
// node without readings: 0 when every receptive node had the slot before
// the forecast slot.
//
// Cached embeddings make this cheap; missing ones are computed first, one
// at a time (Prepare computes them in a batch). dst's slices are reused
// (with enough capacity nothing is allocated); dst.EmittedMs is left to
// the caller (Emitter.Emit sets it). A receptive node without any reading
// goes in as a window of missing readings (Input.Missing). dst.Silent is
// set when z's own window ending at slot ts/step − 1 holds no reading
// (every slot missing or not received: see ownGaps); the bundle's silent
// weights, where it has them, then weigh the receptive nodes' embeddings,
// as Bundle.ForecastBatch weighs a row whose every input is marked
// missing. The error wraps ErrNoData if no receptive node has a reading
// yet and ErrGone if a window needed has left the ring.
func (s *State) ForecastSlot(z int, ts int64, dst *Forecast) error {
	zs, tss, dsts := [1]int{z}, [1]int64{ts}, [1]Forecast{*dst}
	err := s.ForecastSlots(zs[:], tss[:], dsts[:])[0]
	*dst = dsts[0]
	return err
}

// ForecastSlots is ForecastSlot for the nodes zs, node zs[i] for the slot
// starting at ts[i], into dst[i], with the decoder run once over all of
// them; each forecast is the one ForecastSlot gives, bit for bit. It
// returns each node's error (nil if none) in a slice of the state's own,
// valid until the next call.
func (s *State) ForecastSlots(zs []int, ts []int64, dst []Forecast) []error {
	m := len(zs)
	s.ferrs = slices.Grow(s.ferrs[:0], m)[:m]
	clear(s.ferrs)
	if len(ts) != m || len(dst) != m {
		err := fmt.Errorf("forecast: %d nodes, %d slots, %d destinations", m, len(ts), len(dst))
		for i := range s.ferrs {
			s.ferrs[i] = err
		}
		return s.ferrs
	}
	s.embs, s.fok, s.fz, s.fsil, s.mwant, s.mend = s.embs[:0], s.fok[:0], s.fz[:0], s.fsil[:0], s.mwant[:0], s.mend[:0]
	for i, z := range zs {
		if err := s.gather(z, ts[i], &dst[i]); err != nil {
			s.ferrs[i] = err
			continue
		}
		s.fok, s.fz, s.fsil = append(s.fok, i), append(s.fz, z), append(s.fsil, dst[i].Silent)
	}
	if len(s.fok) == 0 {
		return s.ferrs
	}
	s.memb = slices.Grow(s.memb[:0], len(s.mend)*s.d)[:len(s.mend)*s.d]
	for _, u := range s.mwant {
		s.embs[u[0]] = s.memb[u[1]*s.d : (u[1]+1)*s.d]
	}
	fail := func(err error) []error {
		for _, i := range s.fok {
			s.ferrs[i] = fmt.Errorf("forecast node %d: %w", zs[i], err)
		}
		return s.ferrs
	}
	if err := s.flushEmbeddings(); err != nil {
		return fail(err)
	}
	s.fvals = slices.Grow(s.fvals[:0], len(s.fok)*s.c)[:len(s.fok)*s.c]
	if err := s.b.ForecastManySilent(s.fvals, s.fz, s.embs, s.silentMarks()); err != nil {
		return fail(err)
	}
	for j, i := range s.fok {
		f := &dst[i]
		f.Values = append(f.Values[:0], s.fvals[j*s.c:(j+1)*s.c]...)
		for c, v := range f.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				s.ferrs[i] = fmt.Errorf("forecast node %d: channel %d is %g: %w", zs[i], c, v, ErrNonFinite)
				break
			}
		}
		f.Sensor, f.ID, f.TS, f.Model = zs[i], s.names.ID(zs[i]), ts[i], s.b.Meta.Version
	}
	return s.ferrs
}

// silentMarks returns, for ForecastManySilent, which of the nodes gathered
// had an empty own window (Forecast.Silent): where the bundle has silent
// weights, which it has only for inputs with missing marks, as
// Bundle.ForecastBatch tells a silent node by them; nil otherwise, every
// node then forecast with its main weights.
func (s *State) silentMarks() []bool {
	if !silentWeights(s.b) {
		return nil
	}
	return s.fsil
}

// silentWeights reports whether b forecasts a node with an empty own
// window by its silent weights: it has them, and the missing marks by
// which the offline path tells such a node.
func silentWeights(b *sdgnn.Bundle) bool {
	return b.Theta.Silent != nil && b.Meta.Norm.Mask
}

// ownGaps returns the slots of node z's own window ending at slot
// target−1 that hold no reading (never received, or every value 0):
// the window of z the offline path reads for z's forecast of slot
// target, whether z is among its receptive nodes ks (sorted, with the
// inputs ins gathered for them) or not. It reads the gaps counted as the
// embedding was queued where z's input is that window, and counts them
// in z's ring otherwise, changing nothing cached; a slot no longer held
// counts as missing.
func (s *State) ownGaps(z int, target int64, ks []int, ins []Input) int {
	if i, ok := slices.BinarySearch(ks, z); ok {
		switch in := &ins[i]; {
		case in.Missing:
			return s.t
		case in.TS == (target-1)*s.stepMs:
			return in.Gaps
		}
	}
	nd := &s.nodes[z]
	if nd.newest == noSlot {
		return s.t
	}
	n := 0
	for sl := target - int64(s.t); sl < target; sl++ {
		p := s.pos(sl)
		if nd.slots[p] != sl || allZero(nd.vals[p*s.c:(p+1)*s.c]) {
			n++
		}
	}
	return n
}

// gather checks node z's forecast for the slot starting at ts, records
// its inputs and staleness in dst, and appends to s.embs the embeddings of
// its receptive nodes, queueing those not cached (flushEmbeddings computes
// them). On error s.embs is as it was.
func (s *State) gather(z int, ts int64, dst *Forecast) error {
	if z < 0 || z >= s.n {
		return fmt.Errorf("forecast: node %d outside [0,%d)", z, s.n)
	}
	if ts%s.stepMs != 0 {
		return fmt.Errorf("forecast node %d: ts %d is not a multiple of the %d ms slot", z, ts, s.stepMs)
	}
	target := ts / s.stepMs
	ks, _ := s.b.Receptive(z)
	dst.Inputs = dst.Inputs[:0]
	// Checked first, so that nothing is queued for a forecast that fails.
	seen := false
	for _, k := range ks {
		nd := &s.nodes[k]
		if nd.newest == noSlot {
			continue // no reading at all: a window of missing readings
		}
		seen = true
		if end := min(target-1, nd.newest); !s.held(nd, end) {
			return fmt.Errorf("forecast node %d slot %d: node %d is at slot %d, beyond the %d slots of history: %w",
				z, target, k, nd.newest, s.r-s.t, ErrGone)
		}
	}
	if !seen {
		return fmt.Errorf("forecast node %d: receptive nodes without readings: %w", z, ErrNoData)
	}
	stale := int64(0)
	for _, k := range ks {
		nd := &s.nodes[k]
		if nd.newest == noSlot {
			// Every reading of its window missing, as a sensor silent
			// for a window long is: the lag of a whole window.
			s.queueMissing(target - 1)
			stale = max(stale, int64(s.t))
			dst.Inputs = append(dst.Inputs, Input{Sensor: k, ID: s.names.ID(k), TS: (target - 1) * s.stepMs, Missing: true, Gaps: s.t})
			continue
		}
		end := min(target-1, nd.newest)
		s.embs = append(s.embs, s.queue(k, end))
		stale = max(stale, target-1-end)
		// Counted as its embedding was queued, from the same window.
		dst.Inputs = append(dst.Inputs, Input{Sensor: k, ID: s.names.ID(k), TS: end * s.stepMs, Gaps: int(nd.embGaps[s.pos(end)])})
	}
	dst.StaleSlots = stale
	s.completeness(z, target, ks, dst)
	return nil
}

// completeness records how complete the inputs of node z's forecast dst
// of slot target were: dst.Silent, and the node's fcOwn and fcOthers,
// which Emitter counts. Another receptive node's window lacks a reading
// when it has gaps or ends before slot target−1 (a stale input).
func (s *State) completeness(z int, target int64, ks []int, dst *Forecast) {
	own := s.ownGaps(z, target, ks, dst.Inputs)
	nd := &s.nodes[z]
	nd.fcOwn, dst.Silent = int32(own), own >= s.t
	nd.fcOthers = evaluation.OthersIncompleteFor(z, ks, func(i int) int {
		in := &dst.Inputs[i]
		return in.Gaps + int(target-1-in.TS/s.stepMs)
	})
	dst.class = liveClass(evaluation.OwnClass(own, s.t), nd.fcOthers)
}

// Prepare computes, in one batch, the embeddings that the forecasts of
// nodes zs for slots targets (slot indices, one per node) need and that are
// not cached yet. Forecasts whose inputs are missing or gone are left out
// (ForecastSlot reports them).
func (s *State) Prepare(zs []int, targets []int64) error {
	for i, z := range zs {
		if z < 0 || z >= s.n {
			continue
		}
		ks, _ := s.b.Receptive(z)
		for _, k := range ks {
			nd := &s.nodes[k]
			if nd.newest == noSlot {
				continue // a window of missing readings: made by the forecast
			}
			if end := min(targets[i]-1, nd.newest); s.held(nd, end) {
				s.queue(k, end)
			}
		}
		if len(s.queued) >= 512 {
			if err := s.flushEmbeddings(); err != nil {
				return fmt.Errorf("prepare: %w", err)
			}
		}
	}
	if err := s.flushEmbeddings(); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	return nil
}
