package snapshot

import (
	"fmt"
	"math"
)

// Bounds is the plausible range of one channel's readings, for a
// forecaster to refuse readings no sensor makes (a unit slip, a value
// gone to 1e300) before they reach a window or a score: a reading outside
// [Lo, Hi], other than 0 (missing), is implausible.
type Bounds struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Holds reports whether v is plausible: 0 (a missing reading), or a
// normal floating-point number within b. A subnormal number (between 0
// and 2.2e-308 in magnitude) is no sensor's reading either.
func (b Bounds) Holds(v float64) bool {
	return v == 0 || b.Lo <= v && v <= b.Hi && math.Abs(v) >= 0x1p-1022
}

// String writes b as "[lo, hi]".
func (b Bounds) String() string { return fmt.Sprintf("[%g, %g]", b.Lo, b.Hi) }

// BoundsMargin widens the range of the training readings by this share of
// its span on either side (FitBounds): readings a little beyond what
// training saw are plausible, a hundred times beyond are not.
const BoundsMargin = 0.5

// FitBounds returns each channel's plausible range from steps [0, steps)
// of data, row-major (step, node, channel): the range of its finite
// readings widened by BoundsMargin of its span on either side, the low end
// kept at 0 where no reading is negative (traffic flow, occupancy and
// speed never are).
func FitBounds(data []float64, nodes, channels, steps int) ([]Bounds, error) {
	lo, hi, err := FitMinMax(data, nodes, channels, steps)
	if err != nil {
		return nil, fmt.Errorf("snapshot: plausible bounds: %w", err)
	}
	b := make([]Bounds, channels)
	for c := range b {
		span := math.Max(hi[c]-lo[c], math.Max(math.Abs(hi[c]), 1)) // a constant channel gets room too
		b[c] = Bounds{Lo: lo[c] - BoundsMargin*span, Hi: hi[c] + BoundsMargin*span}
		if lo[c] >= 0 {
			b[c].Lo = 0
		}
	}
	return b, nil
}

// Bounds returns the plausible ranges of p's channels, fitted on the
// readings its normaliser is fitted on (Split.FitData), for a model
// trained on p to carry.
func (p *Prepared) Bounds() ([]Bounds, error) {
	s := p.Dataset.Series
	fit, nodes, steps := p.Split.FitData(s.Data, s.Nodes, s.Channels, p.Set.Window)
	return FitBounds(fit, nodes, s.Channels, steps)
}
