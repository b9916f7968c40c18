package evaluation

import (
	"fmt"
	"io"
	"math"
	"strconv"
)

// Classes of a forecast's own input window by its missing steps, the
// indices of Breakdown.Own.
const (
	OwnComplete = iota // no step missing
	OwnFew             // 1 to 3 steps missing
	OwnMany            // 4 steps to all but one missing
	OwnWhole           // every step missing: the sensor silent for the whole window
	ownClasses
)

// Receptive-field classes of Breakdown.Joint.
const (
	OthersComplete   = "complete"   // every other receptive sensor's window complete
	OthersIncomplete = "incomplete" // some other receptive sensor's window has a missing step
)

// OwnClass returns the class (OwnComplete … OwnWhole) of a window of
// window steps of which missing are missing.
func OwnClass(missing, window int) int {
	switch {
	case missing <= 0:
		return OwnComplete
	case missing >= window:
		return OwnWhole
	case missing <= 3:
		return OwnFew
	}
	return OwnMany
}

// OwnClassName names class c of windows of window steps: "complete",
// "1–3", "4–11" (for a window of 12) and "whole window".
func OwnClassName(c, window int) string {
	switch c {
	case OwnComplete:
		return "complete"
	case OwnFew:
		return fmt.Sprintf("1–%d", min(3, window-1))
	case OwnMany:
		return fmt.Sprintf("4–%d", window-1)
	case OwnWhole:
		return "whole window"
	}
	return fmt.Sprintf("class %d", c)
}

// OwnClassLabel is OwnClassName in ASCII, for a metrics label or a
// column name that is typed rather than read: "complete", "1-3", "4-11"
// (for a window of 12) and "whole". It is "" for a class that windows of
// that many steps cannot fall in (1–3 missing of a window of 1, 4 or more
// missing but not all of a window of 4 or fewer), so that a caller lists
// only the classes that can occur.
func OwnClassLabel(c, window int) string {
	span := func(lo, hi int) string {
		if lo == hi {
			return strconv.Itoa(lo)
		}
		return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
	}
	switch {
	case c == OwnComplete:
		return "complete"
	case c == OwnWhole:
		return "whole"
	case c == OwnFew && window > 1:
		return span(1, min(3, window-1))
	case c == OwnMany && window > 4:
		return span(4, window-1)
	}
	return ""
}

// OwnClasses is the number of own-window classes, OwnComplete to
// OwnWhole: the length of Breakdown.Own.
const OwnClasses = ownClasses

// OthersIncompleteFor reports whether some receptive sensor of node z other
// than z itself had a missing step in its window, receptive listing the
// sensors whose windows z's forecast reads and missing(i) the missing
// steps of receptive[i]'s: the rule of OthersIncompleteOf for one
// forecast, for a caller (the streaming service) that counts each
// forecast's inputs as it makes it.
func OthersIncompleteFor(z int, receptive []int, missing func(i int) int) bool {
	for i, k := range receptive {
		if k != z && missing(i) > 0 {
			return true
		}
	}
	return false
}

// Gaps says how complete each forecast's inputs were, one entry per
// (snapshot, node), row-major, in the layout of the forecasts' nodes.
type Gaps struct {
	Window int // steps of an input window
	// Missing is the number of missing steps of the node's own window,
	// Trailing how many of them end it: how long the sensor had been
	// silent when the forecast was made (Window: the whole window). See
	// snapshot.WindowGaps.
	Missing, Trailing []int
	// Others is, for a model that reads other sensors' windows, whether
	// some other receptive sensor's window had a missing step
	// (OthersIncompleteOf); nil for a model that reads only the sensor's
	// own window (GRU, GLNN, NOSMOG).
	Others []bool
	// Silenced marks the forecasts whose sensor a simulated outage
	// silenced; nil without one.
	Silenced []bool
}

// Class is the metrics of one completeness class.
type Class struct {
	Own string `json:"own"` // OwnClassName
	// Others is OthersComplete or OthersIncomplete; empty where every
	// forecast of the own class is counted.
	Others  string  `json:"others,omitempty"`
	Metrics Metrics `json:"metrics"`
}

// Breakdown is a forecast's metrics by how complete its inputs were.
type Breakdown struct {
	Window int `json:"window"`
	// Own holds the metrics by the missing steps of the sensor's own
	// window, classes OwnComplete to OwnWhole in order.
	Own []Class `json:"own"`
	// Joint holds them by own class and whether the other receptive
	// sensors' windows were complete: OwnComplete with complete and
	// incomplete others, then OwnFew, and so on. Absent for a model that
	// reads no other sensor's window.
	Joint []Class `json:"joint,omitempty"`
	// Trailing holds, at index k from 0 to Window, the metrics of the
	// forecasts whose sensor's window ended with exactly k missing steps:
	// the outage's length when it was forecast (Window: the whole window
	// or longer).
	Trailing []Metrics `json:"trailing"`
	// Silenced and Unsilenced are the metrics of the forecasts of the
	// sensors a simulated outage silenced and of the others; absent
	// without one.
	Silenced   *Metrics `json:"silenced,omitempty"`
	Unsilenced *Metrics `json:"unsilenced,omitempty"`
}

// Stratify returns the breakdown of forecasts laid out row-major
// (snapshot, node, channel), as models' Predict functions return them,
// by the completeness of their inputs g, with truths below mapeFloor left
// out of MAPE. Masking is Accumulator.Add's: every class's metrics are
// those of Compute over that class's pairs.
func Stratify(pred, truth []float64, nodes, channels int, g Gaps, mapeFloor float64) (Breakdown, error) {
	if nodes < 1 || channels < 1 || g.Window < 1 {
		return Breakdown{}, fmt.Errorf("evaluation: stratify: %d nodes, %d channels, window %d: want all positive", nodes, channels, g.Window)
	}
	if !(mapeFloor >= 0) || math.IsInf(mapeFloor, 0) {
		return Breakdown{}, fmt.Errorf("evaluation: stratify: MAPE floor %g: must be a finite number ≥ 0", mapeFloor)
	}
	rows := len(g.Missing)
	if len(pred) != rows*channels || len(truth) != rows*channels || len(g.Trailing) != rows || rows%nodes != 0 ||
		g.Others != nil && len(g.Others) != rows || g.Silenced != nil && len(g.Silenced) != rows {
		return Breakdown{}, fmt.Errorf("evaluation: stratify: %d predictions, %d truths, %d and %d gap counts, %d and %d marks for %d nodes × %d channels",
			len(pred), len(truth), len(g.Missing), len(g.Trailing), len(g.Others), len(g.Silenced), nodes, channels)
	}
	own := make([]Accumulator, ownClasses)
	joint := make([]Accumulator, 2*ownClasses)
	trail := make([]Accumulator, g.Window+1)
	var sil, unsil Accumulator
	for _, acc := range [][]Accumulator{own, joint, trail} {
		for i := range acc {
			acc[i].MAPEFloor = mapeFloor
		}
	}
	sil.MAPEFloor, unsil.MAPEFloor = mapeFloor, mapeFloor
	for r := 0; r < rows; r++ {
		if g.Missing[r] < 0 || g.Trailing[r] < 0 || g.Trailing[r] > g.Missing[r] {
			return Breakdown{}, fmt.Errorf("evaluation: stratify: forecast %d: %d missing steps of which %d end the window", r, g.Missing[r], g.Trailing[r])
		}
		c := OwnClass(g.Missing[r], g.Window)
		k := min(g.Trailing[r], g.Window)
		for ch := 0; ch < channels; ch++ {
			p, y := pred[r*channels+ch], truth[r*channels+ch]
			own[c].Add(p, y)
			trail[k].Add(p, y)
			if g.Others != nil {
				j := 2 * c
				if g.Others[r] {
					j++
				}
				joint[j].Add(p, y)
			}
			if g.Silenced != nil {
				if g.Silenced[r] {
					sil.Add(p, y)
				} else {
					unsil.Add(p, y)
				}
			}
		}
	}
	b := Breakdown{Window: g.Window, Own: make([]Class, ownClasses), Trailing: metricsOf(trail)}
	for c := range own {
		b.Own[c] = Class{Own: OwnClassName(c, g.Window), Metrics: own[c].Metrics()}
	}
	if g.Others != nil {
		b.Joint = make([]Class, len(joint))
		for j := range joint {
			others := OthersComplete
			if j%2 == 1 {
				others = OthersIncomplete
			}
			b.Joint[j] = Class{Own: OwnClassName(j/2, g.Window), Others: others, Metrics: joint[j].Metrics()}
		}
	}
	if g.Silenced != nil {
		s, u := sil.Metrics(), unsil.Metrics()
		b.Silenced, b.Unsilenced = &s, &u
	}
	return b, nil
}

// OthersIncompleteOf returns, row-major (snapshot, node) over the given
// number of snapshots, whether some receptive sensor of each node other
// than the node itself had a missing step in its window: missing holds
// each (snapshot, node)'s missing steps (Gaps.Missing), receptive[z] the
// sensors whose windows node z's forecast reads. It returns nil, for
// Gaps.Others, when no node reads another sensor's window.
func OthersIncompleteOf(missing []int, snapshots, nodes int, receptive [][]int) ([]bool, error) {
	if nodes < 1 || len(missing) != snapshots*nodes || len(receptive) != nodes {
		return nil, fmt.Errorf("evaluation: receptive gaps: %d counts, %d receptive sets for %d snapshots of %d nodes", len(missing), len(receptive), snapshots, nodes)
	}
	reads := false
	for z, ks := range receptive {
		for _, k := range ks {
			if k < 0 || k >= nodes {
				return nil, fmt.Errorf("evaluation: receptive gaps: node %d reads node %d outside [0, %d)", z, k, nodes)
			}
			reads = reads || k != z
		}
	}
	if !reads {
		return nil, nil
	}
	out := make([]bool, len(missing))
	for s := 0; s < snapshots; s++ {
		row := missing[s*nodes : (s+1)*nodes]
		for z, ks := range receptive {
			out[s*nodes+z] = OthersIncompleteFor(z, ks, func(i int) int { return row[ks[i]] })
		}
	}
	return out, nil
}

// Table writes b as Markdown: the metrics by the completeness of the
// sensor's own window, beside those of the forecasts whose other
// receptive sensors were complete and incomplete where b has them, then
// by the length of the outage at the window's end, then the silenced
// and other sensors' of a simulated outage. unit is the unit of MAE and
// RMSE, "" when not known.
func (b Breakdown) Table(w io.Writer, unit string) error {
	ew := &errWriter{w: w}
	u := unitSuffix(unit)
	cell := func(m Metrics) string {
		if m.Count == 0 {
			return "— | 0"
		}
		return fmt.Sprintf("%.4f | %d", m.MAE, m.Count)
	}
	if b.Joint != nil {
		ew.printf("| own window (%d steps) | MAE%s | count | others complete: MAE | count | others incomplete: MAE | count |\n", b.Window, u)
		ew.printf("|---|---:|---:|---:|---:|---:|---:|\n")
	} else {
		ew.printf("| own window (%d steps) | MAE%s | count |\n|---|---:|---:|\n", b.Window, u)
	}
	for c, cl := range b.Own {
		label := cl.Own + " missing"
		if c == OwnComplete {
			label = "none missing"
		}
		ew.printf("| %s | %s |", label, cell(cl.Metrics))
		if b.Joint != nil && 2*c+1 < len(b.Joint) {
			ew.printf(" %s | %s |", cell(b.Joint[2*c].Metrics), cell(b.Joint[2*c+1].Metrics))
		}
		ew.printf("\n")
	}
	ew.printf("\n| last steps missing | MAE%s | count |\n|---|---:|---:|\n", u)
	for k, m := range b.Trailing {
		if m.Count == 0 {
			continue
		}
		ew.printf("| %d | %s |\n", k, cell(m))
	}
	if b.Silenced != nil && b.Unsilenced != nil {
		ew.printf("\n| simulated outage | MAE%s | count |\n|---|---:|---:|\n| silenced sensors | %s |\n| other sensors | %s |\n", u, cell(*b.Silenced), cell(*b.Unsilenced))
	}
	if ew.err != nil {
		return fmt.Errorf("evaluation: writing completeness table: %w", ew.err)
	}
	return nil
}

// NewGaps assembles the Gaps of forecasts over the given number of
// snapshots of nodes each: missing and trailing count each (snapshot,
// node)'s own missing steps (snapshot.Set.Gaps), receptive[z] lists the
// sensors whose windows node z's forecast reads (nil: only its own, as for
// a GRU), and silenced marks the sensors a simulated outage silenced (nil:
// none).
func NewGaps(window, snapshots, nodes int, missing, trailing []int, receptive [][]int, silenced []bool) (Gaps, error) {
	g := Gaps{Window: window, Missing: missing, Trailing: trailing, Silenced: silenced}
	if receptive != nil {
		var err error
		if g.Others, err = OthersIncompleteOf(missing, snapshots, nodes, receptive); err != nil {
			return Gaps{}, err
		}
	}
	return g, nil
}
