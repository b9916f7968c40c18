package snapshot

import (
	"fmt"
	"math"
)

// minStd is the floor applied to fitted standard deviations so that a
// constant channel does not cause a division by zero.
const minStd = 1e-8

// Normalizer maps readings to model inputs and forecasts back: a
// per-channel affine transform v' = (v-Mean[c])/Std[c], a z-score by
// default (Kind KindZScore) or a min-max scaling (KindMinMax, Mean holding
// the minimum and Std the range), and, when Time is set, the calendar
// inputs appended to every step (see Prep). It is fitted on training steps
// only so that evaluation data does not leak into the model's input
// scaling, and it travels in model files so that every later use of a
// model prepares its inputs the same way.
type Normalizer struct {
	Kind string      `json:"kind,omitempty"`
	Mean []float64   `json:"mean"`
	Std  []float64   `json:"std"`
	Time *TimeInputs `json:"time,omitempty"`
	// Edges, when set, says how the graph convolution weighs the road
	// links by their costs (pems.Graph.ScaledAdjacency): Gao & Ribeiro's
	// min-max scaled distances, which Prepare sets for PrepPaper on a
	// graph with distances, or a weighted graph's own weights (Los-loop's,
	// with Links or the dataset's default); nil: every link weighs 1.
	Edges *EdgeScale `json:"edges,omitempty"`
	// Mask, when set, appends to every step's inputs one missing mark per
	// channel: 1 where the channel's reading is missing (0 or not finite,
	// or silenced by a simulated outage), 0 where it is present (see
	// StepInputs). Without it a missing reading is told from a present one
	// only by its value, which under min-max scaling is an ordinary one.
	// Files written before it existed lack it: no marks, as they ran.
	Mask bool `json:"mask,omitempty"`
}

// EdgeScale says how links weigh by their costs: the cost min-max scaled
// over [Min, Max], (cost − Min)/(Max − Min), the shortest link weighing 0
// and the longest 1 as in Gao & Ribeiro's code. With Weights set, the
// costs are a weighted graph's link weights (similarities: higher is
// closer, pems.FormatWeighted) taken as they are, which is the scaling
// over [0, 1]: Min is 0 and Max 1, so that the same propagation matrix
// comes of it either way.
type EdgeScale struct {
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Weights bool    `json:"weights,omitempty"`
}

// WeightScale is the EdgeScale of links weighed by a weighted graph's own
// weights.
func WeightScale() *EdgeScale { return &EdgeScale{Min: 0, Max: 1, Weights: true} }

// SameEdges reports whether a and b weigh a graph's links alike: both nil
// (weight 1), or the same scaling.
func SameEdges(a, b *EdgeScale) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// String says how e weighs links, for errors and logs.
func (e *EdgeScale) String() string {
	switch {
	case e == nil:
		return "links of weight 1"
	case e.Weights:
		return "links weighed by the graph's weights"
	}
	return fmt.Sprintf("links weighed by distance scaled over [%g, %g]", e.Min, e.Max)
}

// validate reports an EdgeScale that no Prepare makes.
func (e *EdgeScale) validate() error {
	switch {
	case e == nil:
		return nil
	case e.Weights && (e.Min != 0 || e.Max != 1):
		return fmt.Errorf("snapshot: normalizer weighs links by the graph's weights, but records the scaling [%v, %v], want [0, 1]", e.Min, e.Max)
	case !(e.Min <= e.Max && !math.IsInf(e.Min, 0) && !math.IsInf(e.Max, 0)):
		return fmt.Errorf("snapshot: normalizer's link costs range from %v to %v, want finite with min ≤ max", e.Min, e.Max)
	}
	return nil
}

// ScalingDiff names the first way a and b scale a model's inputs apart,
// "" when they scale them alike bit for bit: kind, each channel's offset
// and scale, and the calendar inputs (link weights are SameEdges's). A
// model trained on one scaling reads the other's inputs wrongly without
// failing, which is why a saved model must not be reused on data that
// fits another: the data file changed, or the code that fits the scaling.
func ScalingDiff(a, b Normalizer) string {
	if a.Kind != b.Kind {
		return fmt.Sprintf("kind %q against %q", a.Kind, b.Kind)
	}
	if len(a.Mean) != len(b.Mean) || len(a.Std) != len(b.Std) {
		return fmt.Sprintf("%d channels (%d scales) against %d (%d)", len(a.Mean), len(a.Std), len(b.Mean), len(b.Std))
	}
	for c := range a.Mean {
		if math.Float64bits(a.Mean[c]) != math.Float64bits(b.Mean[c]) || math.Float64bits(a.Std[c]) != math.Float64bits(b.Std[c]) {
			return fmt.Sprintf("channel %d offset %v and scale %v against %v and %v", c, a.Mean[c], a.Std[c], b.Mean[c], b.Std[c])
		}
	}
	switch {
	case (a.Time == nil) != (b.Time == nil):
		return fmt.Sprintf("calendar inputs %v against %v", a.Time != nil, b.Time != nil)
	case a.Time != nil && *a.Time != *b.Time:
		return fmt.Sprintf("calendar inputs %+v against %+v", *a.Time, *b.Time)
	case a.Mask != b.Mask:
		return fmt.Sprintf("missing marks %v against %v", a.Mask, b.Mask)
	}
	return ""
}

// Prep returns the name of the preprocessing n implements.
func (n Normalizer) Prep() Prep {
	if n.Kind == KindMinMax && n.Time != nil {
		return PrepPaper
	}
	if n.Kind == KindZScore && n.Time == nil {
		return PrepStandard
	}
	return Prep(fmt.Sprintf("custom (kind %q, time inputs %v)", n.Kind, n.Time != nil))
}

// Inputs returns the number of model inputs per step: the channels, plus
// TimeInputCount where n has calendar inputs, plus one missing mark per
// channel where n.Mask.
func (n Normalizer) Inputs() int {
	in := len(n.Mean)
	if n.Time != nil {
		in += TimeInputCount
	}
	if n.Mask {
		in += len(n.Mean)
	}
	return in
}

// Input returns the model input of reading v of channel c. A missing
// reading (zero, NaN or ±Inf) enters a z-scored channel as 0, the channel
// mean; for min-max scaling zero is an ordinary value (as in Gao &
// Ribeiro's preprocessing, which masks nothing) and NaN or ±Inf enter as
// zero would.
func (n Normalizer) Input(v float64, c int) float64 {
	if n.Kind == KindMinMax {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		return n.Normalize(v, c)
	}
	if !valid(v) {
		return 0
	}
	return n.Normalize(v, c)
}

// FitNormalizer fits a Normalizer on steps [0, steps) of data, a row-major
// (step, node, channel) series with the given numbers of nodes and channels.
// data may hold more than steps steps; the later ones are ignored, which is
// how validation and test steps are kept out of the fit.
//
// Readings equal to 0 (missing) and non-finite readings are excluded. The
// standard deviation is the population one, floored at 1e-8 so that constant
// channels are usable. FitNormalizer returns an error if the sizes are
// inconsistent or some channel has no valid reading.
func FitNormalizer(data []float64, nodes, channels, steps int) (Normalizer, error) {
	if nodes <= 0 || channels <= 0 || steps <= 0 {
		return Normalizer{}, fmt.Errorf("snapshot: fit normalizer: non-positive size (nodes=%d channels=%d steps=%d)", nodes, channels, steps)
	}
	n, ok := mulSizes(steps, nodes, channels)
	if !ok || len(data) < n {
		return Normalizer{}, fmt.Errorf("snapshot: fit normalizer: data has %d values, need at least %d×%d×%d", len(data), steps, nodes, channels)
	}
	data = data[:n]

	count := make([]int, channels)
	mean := make([]float64, channels)
	for k, v := range data {
		if !valid(v) {
			continue
		}
		c := k % channels
		count[c]++
		mean[c] += v
	}
	for c := range mean {
		if count[c] == 0 {
			return Normalizer{}, fmt.Errorf("snapshot: fit normalizer: channel %d has no valid (non-zero, finite) reading in %d steps", c, steps)
		}
		mean[c] /= float64(count[c])
	}
	// Second pass for a numerically stable variance.
	std := make([]float64, channels)
	for k, v := range data {
		if !valid(v) {
			continue
		}
		c := k % channels
		d := v - mean[c]
		std[c] += float64(d * d) // rounded, so that no machine fuses it
	}
	for c := range std {
		std[c] = math.Max(math.Sqrt(std[c]/float64(count[c])), minStd)
	}
	return Normalizer{Mean: mean, Std: std}, nil
}

// Normalize returns the reading v of channel c scaled by n: (v −
// Mean[c]) / Std[c], its z-score, or, for a KindMinMax normaliser, its
// place in the training range. It returns NaN if c is not a channel of n.
func (n Normalizer) Normalize(v float64, c int) float64 {
	if c < 0 || c >= len(n.Mean) || c >= len(n.Std) {
		return math.NaN()
	}
	return (v - n.Mean[c]) / n.Std[c]
}

// Denormalize maps the scaled value v of channel c (a z-score, or a
// place in a KindMinMax range) back to the original scale; it is the
// inverse of Normalize. It returns NaN if c is not a channel of n.
func (n Normalizer) Denormalize(v float64, c int) float64 {
	if c < 0 || c >= len(n.Mean) || c >= len(n.Std) {
		return math.NaN()
	}
	return float64(v*n.Std[c]) + n.Mean[c] // rounded, so that no machine fuses it (see nn)
}

// Channels returns the number of channels n transforms.
func (n Normalizer) Channels() int { return len(n.Mean) }

// Validate reports whether n is usable for a series with the given number of
// channels: Mean and Std must both have that length, means must be finite and
// standard deviations finite and positive.
func (n Normalizer) Validate(channels int) error {
	if n.Kind != KindZScore && n.Kind != KindMinMax {
		return fmt.Errorf("snapshot: normalizer kind %q: want %q (z-score) or %q", n.Kind, KindZScore, KindMinMax)
	}
	if n.Time != nil {
		if err := n.Time.Validate(); err != nil {
			return err
		}
	}
	if len(n.Mean) != channels || len(n.Std) != channels {
		return fmt.Errorf("snapshot: normalizer has %d means and %d stds, want %d channels", len(n.Mean), len(n.Std), channels)
	}
	if err := n.Edges.validate(); err != nil {
		return err
	}
	for c := range n.Mean {
		if math.IsNaN(n.Mean[c]) || math.IsInf(n.Mean[c], 0) {
			return fmt.Errorf("snapshot: normalizer mean of channel %d is %v", c, n.Mean[c])
		}
		if !(n.Std[c] > 0) || math.IsInf(n.Std[c], 0) {
			return fmt.Errorf("snapshot: normalizer std of channel %d is %v, want finite and positive", c, n.Std[c])
		}
	}
	return nil
}

// valid reports whether v is a present reading: non-zero and finite.
func valid(v float64) bool {
	return v != 0 && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// mulSizes returns the product of positive sizes and whether it fits in an
// int without overflow.
func mulSizes(sizes ...int) (int, bool) {
	p := 1
	for _, s := range sizes {
		if s < 0 || (s != 0 && p > math.MaxInt/s) {
			return 0, false
		}
		p *= s
	}
	return p, true
}

// FitMinMax returns the per-channel minimum and maximum over steps [0, steps)
// of data (row-major step, node, channel), zeros included: the scaling of
// Gao & Ribeiro's preprocessing, used by evaluation.Paper.
func FitMinMax(data []float64, nodes, channels, steps int) (min, max []float64, err error) {
	if nodes < 1 || channels < 1 || steps < 1 || len(data) < steps*nodes*channels {
		return nil, nil, fmt.Errorf("fit min-max: %d values for %d steps × %d nodes × %d channels", len(data), steps, nodes, channels)
	}
	min, max = make([]float64, channels), make([]float64, channels)
	for c := range min {
		min[c], max[c] = math.Inf(1), math.Inf(-1)
	}
	for i, v := range data[:steps*nodes*channels] {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		c := i % channels
		min[c], max[c] = math.Min(min[c], v), math.Max(max[c], v)
	}
	for c := range min {
		if math.IsInf(min[c], 1) {
			return nil, nil, fmt.Errorf("fit min-max: channel %d has no finite value", c)
		}
	}
	return min, max, nil
}
