package snapshot

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"
)

// Set gives normalised input windows and targets of a series. It keeps the
// raw series, whose zeros mark missing readings for masked losses and
// metrics, and a normalised copy used as model input.
//
// In the normalised copy a missing (zero) or non-finite reading is replaced
// by 0, the channel mean in z-score units, so that missing values neither
// dominate the input nor produce NaNs (min-max scaling keeps zeros as
// values; see Normalizer.Input); targets must be masked with the raw
// values.
//
// A Set is safe for concurrent use by multiple goroutines as long as each
// uses its own Batch.
type Set struct {
	// Steps, Nodes and Channels are the series dimensions.
	Steps, Nodes, Channels int
	// Window is the number of input steps of a snapshot.
	Window int
	// Norm is the normaliser used for the normalised copy.
	Norm Normalizer

	raw   []float64 // the caller's data, not copied
	norm  []float64 // normalised copy, same layout as raw
	times []float64 // Steps × TimeInputCount calendar inputs, nil without Norm.Time

	// silence, when not nil, silences the last steps of some windows'
	// inputs (see Silenced); missIn holds each channel's input of a
	// missing reading, what a silenced reading enters as.
	silence Silence
	missIn  []float64
}

// MaxWindow is the longest input window, in steps, that a model may read:
// a week of five-minute steps, far beyond the hour (12 steps) the models
// here are trained on. The streaming service keeps every sensor's last
// window and more, so a model file may not ask for an arbitrary window.
const MaxWindow = 2016

// NewSet returns a Set over data, a row-major (step, node, channel) series
// with the given dimensions, for input windows of the given length. It keeps
// data without copying, so the caller must not modify it afterwards, and
// computes a normalised copy with norm.
//
// NewSet returns an error if a size is not positive, len(data) is not
// steps×nodes×channels, steps <= window (no snapshot), or norm does not
// have one valid entry per channel.
func NewSet(data []float64, steps, nodes, channels, window int, norm Normalizer) (*Set, error) {
	if steps <= 0 || nodes <= 0 || channels <= 0 || window <= 0 {
		return nil, fmt.Errorf("snapshot: new set: non-positive size (steps=%d nodes=%d channels=%d window=%d)", steps, nodes, channels, window)
	}
	n, ok := mulSizes(steps, nodes, channels)
	if !ok || len(data) != n {
		return nil, fmt.Errorf("snapshot: new set: data has %d values, want %d×%d×%d", len(data), steps, nodes, channels)
	}
	if steps <= window {
		return nil, fmt.Errorf("snapshot: new set: %d steps leave no snapshot for window %d", steps, window)
	}
	if nodes > math.MaxInt32 {
		return nil, fmt.Errorf("snapshot: new set: %d nodes exceed int32 node ids", nodes)
	}
	if err := norm.Validate(channels); err != nil {
		return nil, fmt.Errorf("snapshot: new set: %w", err)
	}
	normed := make([]float64, len(data))
	for k, v := range data {
		normed[k] = norm.Input(v, k%channels)
	}
	var times []float64
	if norm.Time != nil {
		times = make([]float64, steps*TimeInputCount)
		for st := 0; st < steps; st++ {
			norm.Time.At(times[st*TimeInputCount:], norm.Time.StepTime(st))
		}
	}
	missIn := make([]float64, channels)
	for c := range missIn {
		missIn[c] = norm.Input(0, c)
	}
	return &Set{
		Steps:    steps,
		Nodes:    nodes,
		Channels: channels,
		Window:   window,
		Norm:     norm,
		raw:      data,
		norm:     normed,
		times:    times,
		missIn:   missIn,
	}, nil
}

// Masked returns a Set over the same series and snapshots whose inputs
// carry missing marks (Normalizer.Mask) when on, and none when off: what a
// model trained with marks, or without them, reads. It shares s's data.
func (s *Set) Masked(on bool) *Set {
	if s == nil {
		return nil
	}
	c := *s
	c.Norm.Mask = on
	return &c
}

// Silenced returns a Set over the same series and snapshots whose input
// windows are silenced as f says: the last f(snapshot, node) steps of a
// node's window enter as missing readings, with their missing marks where
// the normaliser has them, as a sensor fallen silent would give them. The
// targets (Batch.Y and Batch.Raw, RawAt) stay the true readings. A nil f
// silences nothing. It shares s's data; it is how outages are simulated
// for evaluation (Outage.For) and for training (Outage.Draw).
func (s *Set) Silenced(f Silence) *Set {
	if s == nil {
		return nil
	}
	c := *s
	c.silence = f
	return &c
}

// Silence returns the silence of s's inputs (see Silenced), nil for none.
func (s *Set) Silence() Silence { return s.silence }

// Gaps returns, row-major (snapshot, node) for the given snapshots, the
// number of missing steps of every node's input window and how many of
// them end it (see WindowGaps): a forecast's completeness, counting the
// steps s's silence takes away. Snapshots outside [0, Len()) are an error.
func (s *Set) Gaps(snapshots []int) (missing, trailing []int, err error) {
	if s == nil {
		return nil, nil, errNilSet
	}
	n, c, t := s.Nodes, s.Channels, s.Window
	missing, trailing = make([]int, len(snapshots)*n), make([]int, len(snapshots)*n)
	win := make([]float64, t*c)
	for b, sn := range snapshots {
		if sn < 0 || sn >= s.Len() {
			return nil, nil, fmt.Errorf("snapshot: gaps: snapshot %d out of range [0, %d)", sn, s.Len())
		}
		for z := 0; z < n; z++ {
			for j := 0; j < t; j++ {
				at := ((sn+j)*n + z) * c
				copy(win[j*c:(j+1)*c], s.raw[at:at+c])
			}
			missing[b*n+z], trailing[b*n+z] = WindowGaps(win, c, silencedLen(s.silence, sn, z, t))
		}
	}
	return missing, trailing, nil
}

// Inputs returns the number of model inputs per node and step: Channels,
// plus the calendar inputs where Norm has them.
func (s *Set) Inputs() int { return s.Norm.Inputs() }

// Len returns the number of snapshots, Steps-Window.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.Steps - s.Window
}

// Raw returns the raw series (row-major step, node, channel) the Set was
// built on. It is not a copy and must not be modified.
func (s *Set) Raw() []float64 {
	if s == nil {
		return nil
	}
	return s.raw
}

// RawAt returns the raw reading of channel at node and step, or NaN if an
// index is out of range.
func (s *Set) RawAt(step, node, channel int) float64 {
	k, ok := s.index(step, node, channel)
	if !ok {
		return math.NaN()
	}
	return s.raw[k]
}

// NormAt returns the normalised reading of channel at node and step (0 where
// the raw reading is missing), or NaN if an index is out of range.
func (s *Set) NormAt(step, node, channel int) float64 {
	k, ok := s.index(step, node, channel)
	if !ok {
		return math.NaN()
	}
	return s.norm[k]
}

func (s *Set) index(step, node, channel int) (int, bool) {
	if s == nil || step < 0 || step >= s.Steps || node < 0 || node >= s.Nodes || channel < 0 || channel >= s.Channels {
		return 0, false
	}
	return (step*s.Nodes+node)*s.Channels + channel, true
}

// Batch holds B snapshots laid out for a recurrent cell shared across nodes:
// row b*Nodes+i of every matrix is node i of the b-th snapshot, and column c
// is channel c.
type Batch struct {
	// Snapshots are the snapshot indices of the batch, in row order.
	Snapshots []int
	// X has Window matrices; X[t] is (B*Nodes)×Inputs and holds the
	// normalised readings at step Snapshots[b]+t, followed by that step's
	// calendar inputs where the Set's normaliser has them.
	X []*mat.Dense
	// Y is (B*Nodes)×Channels and holds the normalised target at step
	// Snapshots[b]+Window.
	Y *mat.Dense
	// Raw is (B*Nodes)×Channels and holds the raw target in the original
	// scale; zeros mark missing readings to be masked.
	Raw *mat.Dense
}

// Fill fills dst with the snapshots of the given indices, in order. Matrices
// already in dst are reused when their shape is the one Batch documents
// ((len(snapshots)*Nodes)×Inputs for X, ×Channels for Y and Raw) with a
// contiguous layout, so a training loop with a fixed batch size does not
// allocate in steady state; others are replaced.
//
// Fill returns an error, leaving dst unchanged, if dst is nil, snapshots is
// empty or an index is outside [0, Len()).
func (s *Set) Fill(dst *Batch, snapshots []int) error {
	if s == nil {
		return errNilSet
	}
	if dst == nil {
		return errors.New("snapshot: fill: nil Batch")
	}
	if len(snapshots) == 0 {
		return errors.New("snapshot: fill: no snapshots")
	}
	n := s.Len()
	for _, sn := range snapshots {
		if sn < 0 || sn >= n {
			return fmt.Errorf("snapshot: fill: snapshot %d out of range [0, %d)", sn, n)
		}
	}
	rows, ok := mulSizes(len(snapshots), s.Nodes)
	if !ok {
		return fmt.Errorf("snapshot: fill: %d snapshots of %d nodes overflow", len(snapshots), s.Nodes)
	}

	dst.Snapshots = append(dst.Snapshots[:0], snapshots...)
	if cap(dst.X) < s.Window {
		x := make([]*mat.Dense, s.Window)
		copy(x, dst.X)
		dst.X = x
	}
	dst.X = dst.X[:s.Window]
	in := s.Inputs()
	for t := range dst.X {
		dst.X[t] = fit(dst.X[t], rows, in)
	}
	dst.Y = fit(dst.Y, rows, s.Channels)
	dst.Raw = fit(dst.Raw, rows, s.Channels)

	// A step of the series is a contiguous Nodes×Channels block, which is
	// also the block of a snapshot in a batch matrix.
	block := s.Nodes * s.Channels
	y, raw := dst.Y.RawMatrix().Data, dst.Raw.RawMatrix().Data
	for b, sn := range snapshots {
		out := b * block
		for t, x := range dst.X {
			s.fillInputs(x.RawMatrix().Data[b*s.Nodes*in:(b+1)*s.Nodes*in], sn, t)
		}
		at := (sn + s.Window) * block
		copy(y[out:out+block], s.norm[at:at+block])
		copy(raw[out:out+block], s.raw[at:at+block])
	}
	return nil
}

// fillInputs writes the model inputs of every node at step t of the
// window of snapshot sn into dst (Nodes × Inputs, row-major): the
// normalised readings, then the step's calendar inputs where there are
// any, then the missing marks where the normaliser has them, a silenced
// reading entering as a missing one. The values are StepInputs's.
func (s *Set) fillInputs(dst []float64, sn, t int) {
	if s.times == nil && !s.Norm.Mask && s.silence == nil {
		block := s.Nodes * s.Channels
		st := sn + t
		copy(dst, s.norm[st*block:(st+1)*block])
		return
	}
	in := s.Inputs()
	for i := 0; i < s.Nodes; i++ {
		s.nodeInputs(dst[i*in:(i+1)*in], sn, t, i)
	}
}

// nodeInputs writes the model inputs of node i at step t of the window of
// snapshot sn into dst (Inputs values), as fillInputs describes.
func (s *Set) nodeInputs(dst []float64, sn, t, i int) {
	st, c := sn+t, s.Channels
	at := (st*s.Nodes + i) * c
	silenced := t >= s.Window-silencedLen(s.silence, sn, i, s.Window)
	if silenced {
		copy(dst[:c], s.missIn)
	} else {
		copy(dst[:c], s.norm[at:at+c])
	}
	next := c
	if s.times != nil {
		copy(dst[c:c+TimeInputCount], s.times[st*TimeInputCount:(st+1)*TimeInputCount])
		next += TimeInputCount
	}
	if s.Norm.Mask {
		for ch, v := range s.raw[at : at+c] {
			dst[next+ch] = mark(silenced || Missing(v))
		}
	}
}

// fit returns m if it is an r×c matrix with a contiguous layout, and a new
// r×c matrix otherwise.
func fit(m *mat.Dense, r, c int) *mat.Dense {
	if m != nil {
		mr, mc := m.Dims()
		if mr == r && mc == c && m.RawMatrix().Stride == c {
			return m
		}
	}
	return mat.NewDense(r, c, nil)
}

// Batches returns the snapshot indices of r cut into consecutive chunks of
// at most size indices; only the last chunk may be shorter. If rng is not
// nil the indices are shuffled with it first, as for a training epoch; with
// a nil rng time order is kept, as for evaluation. Every index of r appears
// exactly once. Batches returns nil if r is empty or size is not positive.
func Batches(r Range, size int, rng *rand.Rand) [][]int {
	n := r.Len()
	if n == 0 || size <= 0 {
		return nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = r.Start + i
	}
	return BatchesOf(idx, size, rng)
}

// BatchesOf is Batches over the given snapshot indices (a Part's
// Snapshots, say), which it may shuffle in place.
func BatchesOf(idx []int, size int, rng *rand.Rand) [][]int {
	n := len(idx)
	if n == 0 || size <= 0 {
		return nil
	}
	if rng != nil {
		rng.Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	out := make([][]int, 0, (n+size-1)/size)
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		out = append(out, idx[lo:hi:hi])
	}
	return out
}

var errNilSet = errors.New("snapshot: nil Set")
