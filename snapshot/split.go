package snapshot

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Range is a half-open range [Start, End) of snapshot indices.
//
// Its JSON keys are lower-case ("start", "end"); files written before they
// were ("Start", "End") read the same, encoding/json matching keys
// without regard to case.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Len returns the number of snapshots in r, or 0 if r is empty or inverted.
func (r Range) Len() int {
	if r.End <= r.Start {
		return 0
	}
	return r.End - r.Start
}

// Contains reports whether snapshot index s lies in r.
func (r Range) Contains(s int) bool { return r.Start <= s && s < r.End }

// What a split divides.
const (
	// ByTime cuts the snapshots into consecutive time ranges; every node
	// is scored in every part.
	ByTime = "time"
	// ByNodes deals the nodes into parts; every part holds every snapshot,
	// and a part's loss and metrics count only its nodes (the transductive
	// split of Gao & Ribeiro's time-then-graph code).
	ByNodes = "nodes"
	// ByWindows deals the snapshots, in time order, round-robin into the
	// parts; every node is scored in every part (the inductive split of
	// Gao & Ribeiro's time-then-graph code).
	ByWindows = "windows"
)

// Deal selects, from a Range, the snapshots at positions q = s − Start with
// Lo ≤ q mod Every < Hi: one part of a round-robin deal (WindowSplit). It is
// stored instead of the list of snapshots it selects, which would grow with
// the series. The zero Deal selects every snapshot of the range.
//
// Its JSON keys are lower-case ("every", "lo", "hi"); files written before
// they were ("Every", "Lo", "Hi") read the same.
type Deal struct {
	Every int `json:"every"`
	Lo    int `json:"lo"`
	Hi    int `json:"hi"`
}

// picks reports whether the snapshot at position q of the range is dealt
// to d.
func (d Deal) picks(q int) bool {
	if d.Every <= 0 {
		return true
	}
	m := q % d.Every
	return d.Lo <= m && m < d.Hi
}

// Part is one part of a split: the snapshots of Range that Deal selects
// (all of them for the zero Deal) and, when Nodes is not nil, only the
// targets of those nodes. Every node's window is still an input (a GCN
// reads its neighbours whatever part they are in); only what is learnt from
// and scored is restricted. Range is the span of the part; iterate over
// Snapshots, not over Range, since a part dealt by windows is not
// contiguous.
type Part struct {
	Range
	Deal  Deal  `json:"deal,omitzero"`
	Nodes []int `json:"nodes,omitempty"` // sorted; nil: every node
}

// Len returns the number of snapshots in p.
func (p Part) Len() int {
	n := p.Range.Len()
	d := p.Deal
	if d.Every <= 0 || n == 0 {
		return n
	}
	lo, hi := max(d.Lo, 0), min(d.Hi, d.Every)
	if hi <= lo {
		return 0
	}
	full, rest := n/d.Every, n%d.Every
	return full*(hi-lo) + max(0, min(rest, hi)-lo)
}

// Contains reports whether snapshot s belongs to p.
func (p Part) Contains(s int) bool {
	return p.Range.Contains(s) && p.Deal.picks(s-p.Start)
}

// Snapshots returns the indices of p's snapshots in time order.
func (p Part) Snapshots() []int {
	out := make([]int, 0, p.Len())
	for s := p.Start; s < p.End; s++ {
		if p.Deal.picks(s - p.Start) {
			out = append(out, s)
		}
	}
	return out
}

// First returns p's first snapshot, or −1 if p is empty.
func (p Part) First() int {
	for s := p.Start; s < p.End; s++ {
		if p.Deal.picks(s - p.Start) {
			return s
		}
	}
	return -1
}

// Last returns p's last snapshot, or −1 if p is empty.
func (p Part) Last() int {
	for s := p.End - 1; s >= p.Start; s-- {
		if p.Deal.picks(s - p.Start) {
			return s
		}
	}
	return -1
}

// Scores reports whether node i's targets belong to p.
func (p Part) Scores(i int) bool {
	if p.Nodes == nil {
		return true
	}
	_, ok := slices.BinarySearch(p.Nodes, i)
	return ok
}

// Has reports whether the target of node at snapshot s belongs to p: s is
// one of p's snapshots and node one of its nodes. It is how a forecast made
// outside training (a replay through the service) is told to be one the
// model was, or was not, trained on.
func (p Part) Has(node, s int) bool { return p.Contains(s) && p.Scores(node) }

// Hide marks as not scored (NaN) the truths of the nodes outside p in
// truth, laid out row-major (snapshot, node, channel) with the given numbers
// of nodes and channels. Losses and metrics leave NaN truths out
// (teacher.Loss, evaluation.Masked, evaluation.PaperAccumulator), so hiding
// is how a node split restricts training and scoring without another code
// path. Hide does nothing when p holds every node.
func (p Part) Hide(truth []float64, nodes, channels int) {
	if p.Nodes == nil {
		return
	}
	keep := make([]bool, nodes)
	for _, i := range p.Nodes {
		if 0 <= i && i < nodes {
			keep[i] = true
		}
	}
	nan := math.NaN()
	for k := range truth {
		if !keep[(k/channels)%nodes] {
			truth[k] = nan
		}
	}
}

// Split divides a dataset's snapshots into training, validation and test
// parts, by time (ChronoSplit), by nodes (NodeSplit) or by windows
// (WindowSplit).
type Split struct {
	// By is ByTime, ByNodes or ByWindows; files written before node splits
	// existed leave it empty, which means ByTime.
	By               string `json:"by,omitempty"`
	Train, Val, Test Part
	// Ratios are the proportions a node or window split dealt by: what
	// reproduces it (SpecOf).
	Ratios [3]float64 `json:"ratios,omitzero"`
	// Steps is the number of leading series steps the split was made over
	// when the series was cut shorter (SplitSpec.Steps); 0: all of them.
	Steps int `json:"steps,omitempty"`
}

// Part returns the part named train, val (or validation) or test.
func (s Split) Part(name string) (Part, error) {
	switch name {
	case "train":
		return s.Train, nil
	case "val", "validation":
		return s.Val, nil
	case "test":
		return s.Test, nil
	}
	return Part{}, fmt.Errorf("split part %q: want train, val or test", name)
}

// String is a short account of s for logs and messages: the kind, the
// sizes of the parts and what they span.
func (s Split) String() string {
	if s.Steps > 0 {
		t := s
		t.Steps = 0
		return fmt.Sprintf("%s, first %d steps", t, s.Steps)
	}
	if s.ByNodes() {
		return fmt.Sprintf("nodes %d/%d/%d over %d snapshots", len(s.Train.Nodes), len(s.Val.Nodes), len(s.Test.Nodes), s.Train.Len())
	}
	if s.ByWindows() {
		return fmt.Sprintf("windows %d/%d/%d dealt %g:%g:%g over %d snapshots", s.Train.Len(), s.Val.Len(), s.Test.Len(),
			s.Ratios[0], s.Ratios[1], s.Ratios[2], s.Train.Range.Len())
	}
	r := func(p Part) string { return fmt.Sprintf("[%d, %d)", p.Start, p.End) }
	return fmt.Sprintf("time, snapshots %s/%s/%s", r(s.Train), r(s.Val), r(s.Test))
}

// ByNodes reports whether s divides nodes rather than time.
func (s Split) ByNodes() bool { return s.By == ByNodes }

// ByWindows reports whether s deals the snapshots round-robin.
func (s Split) ByWindows() bool { return s.By == ByWindows }

// Dealt reports whether splits of kind by deal round-robin (ByNodes,
// ByWindows): their ratios are whole numbers, reproduce them, and the
// names of the files made under them carry the kind.
func Dealt(by string) bool { return by == ByNodes || by == ByWindows }

// kind returns s.By, ByTime where it is empty (files written before node
// splits).
func (s Split) kind() string {
	if s.By == "" {
		return ByTime
	}
	return s.By
}

// ChronoSplit splits n snapshots into consecutive training, validation and
// test ranges whose sizes are proportional to ratios (for example 6,2,2 or
// 0.7,0.1,0.2; the ratios are normalised by their sum). Sizes are rounded to
// the nearest integer and the test range takes the remainder, so every
// snapshot is used exactly once. Keeping time order avoids training on the
// future of the evaluation data.
//
// ChronoSplit returns an error if a ratio is negative or not finite, if the
// ratios sum to zero, or if any part would be empty.
func ChronoSplit(n int, ratios [3]float64) (Split, error) {
	var sum float64
	for i, r := range ratios {
		if !(r >= 0) || math.IsInf(r, 0) {
			return Split{}, fmt.Errorf("snapshot: chrono split: ratio %d is %v, want finite and non-negative", i, r)
		}
		sum += r
	}
	if !(sum > 0) {
		return Split{}, fmt.Errorf("snapshot: chrono split: ratios %v sum to zero", ratios)
	}
	if n <= 0 {
		return Split{}, fmt.Errorf("snapshot: chrono split: %d snapshots", n)
	}
	nTrain := int(math.Round(float64(n) * ratios[0] / sum))
	nVal := int(math.Round(float64(n) * ratios[1] / sum))
	nTest := n - nTrain - nVal
	if nTrain <= 0 || nVal <= 0 || nTest <= 0 {
		return Split{}, fmt.Errorf("snapshot: chrono split: %d snapshots with ratios %v give an empty part (train=%d val=%d test=%d)", n, ratios, nTrain, nVal, nTest)
	}
	return Split{
		By:    ByTime,
		Train: Part{Range: Range{0, nTrain}},
		Val:   Part{Range: Range{nTrain, nTrain + nVal}},
		Test:  Part{Range: Range{nTrain + nVal, n}},
	}, nil
}

// NodeSplit deals the nodes of a graph with the given degrees into
// training, validation and test parts, every part holding all n snapshots:
// the transductive split of Gao & Ribeiro's time-then-graph code (fitsplit
// over nodes), which the SDGNN paper's PeMS table uses. The nodes are
// ordered by degree, largest first (ties by id), and dealt round-robin into
// S = sum of ratios chunks: the node at position p of that order goes to the
// training part when p mod S < ratios[0], to validation when it is below
// ratios[0]+ratios[1], to test otherwise. With 7,1,2 that is positions 0–6
// of every ten training, 7 validation, 8 and 9 test, so every part spans
// the degree range.
//
// The ratios must be positive whole numbers and every part non-empty.
func NodeSplit(n int, degrees []int, ratios [3]float64) (Split, error) {
	whole, err := wholeRatios(ratios)
	if err != nil {
		return Split{}, fmt.Errorf("snapshot: node split: %w", err)
	}
	if n <= 0 {
		return Split{}, fmt.Errorf("snapshot: node split: %d snapshots", n)
	}
	order := make([]int, len(degrees))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(degrees[b], degrees[a]) })
	all := Range{0, n}
	s := Split{By: ByNodes, Ratios: ratios, Train: Part{Range: all, Nodes: []int{}}, Val: Part{Range: all, Nodes: []int{}}, Test: Part{Range: all, Nodes: []int{}}}
	sum := whole[0] + whole[1] + whole[2]
	for p, node := range order {
		switch q := p % sum; {
		case q < whole[0]:
			s.Train.Nodes = append(s.Train.Nodes, node)
		case q < whole[0]+whole[1]:
			s.Val.Nodes = append(s.Val.Nodes, node)
		default:
			s.Test.Nodes = append(s.Test.Nodes, node)
		}
	}
	for _, p := range []*Part{&s.Train, &s.Val, &s.Test} {
		slices.Sort(p.Nodes)
	}
	if len(s.Train.Nodes) == 0 || len(s.Val.Nodes) == 0 || len(s.Test.Nodes) == 0 {
		return Split{}, fmt.Errorf("snapshot: node split: %d nodes with ratios %v give an empty part (train=%d val=%d test=%d)",
			len(degrees), ratios, len(s.Train.Nodes), len(s.Val.Nodes), len(s.Test.Nodes))
	}
	return s, nil
}

// WindowSplit deals n snapshots, in time order, into training, validation
// and test parts: the inductive split of Gao & Ribeiro's time-then-graph
// code (fitsplit over windows). The snapshot at position p goes to the
// training part when p mod S < ratios[0] (S the sum of the ratios), to
// validation when it is below ratios[0]+ratios[1], to test otherwise; with
// 7,1,2, snapshots 0–6 of every ten train, 7 validates, 8 and 9 test. Every
// node is scored in every part.
//
// Consecutive snapshots share all but one step of their windows, so a test
// snapshot's inputs and target are inputs and targets of training
// snapshots too: the split measures interpolation within the period it
// trains on, not forecasting beyond it, and scores come out lower than
// under a time split. It is offered to compare with results reported under
// it, not as a measure of forecasting skill.
//
// The ratios must be positive whole numbers and every part non-empty.
func WindowSplit(n int, ratios [3]float64) (Split, error) {
	whole, err := wholeRatios(ratios)
	if err != nil {
		return Split{}, fmt.Errorf("snapshot: window split: %w", err)
	}
	sum := whole[0] + whole[1] + whole[2]
	all := Range{0, n}
	s := Split{By: ByWindows, Ratios: ratios,
		Train: Part{Range: all, Deal: Deal{Every: sum, Lo: 0, Hi: whole[0]}},
		Val:   Part{Range: all, Deal: Deal{Every: sum, Lo: whole[0], Hi: whole[0] + whole[1]}},
		Test:  Part{Range: all, Deal: Deal{Every: sum, Lo: whole[0] + whole[1], Hi: sum}},
	}
	if s.Train.Len() == 0 || s.Val.Len() == 0 || s.Test.Len() == 0 {
		return Split{}, fmt.Errorf("snapshot: window split: %d snapshots with ratios %v give an empty part (train=%d val=%d test=%d)",
			n, ratios, s.Train.Len(), s.Val.Len(), s.Test.Len())
	}
	return s, nil
}

// wholeRatios returns the ratios of a round-robin deal as whole numbers,
// or an error if one is not a positive whole number.
func wholeRatios(ratios [3]float64) ([3]int, error) {
	var whole [3]int
	for i, r := range ratios {
		if !(r >= 1) || r != math.Trunc(r) || r > 1e6 {
			return whole, fmt.Errorf("ratio %d is %v, want a positive whole number (such as 7,1,2)", i, r)
		}
		whole[i] = int(r)
	}
	return whole, nil
}

// SplitSpec says how to split a dataset before its size is known: by time,
// by nodes or by windows, in the given proportions.
type SplitSpec struct {
	By     string     // ByTime (or empty), ByNodes or ByWindows
	Ratios [3]float64 // train, validation, test
	// Steps, when positive, keeps only the first Steps steps of the series
	// (Prepare cuts it before splitting); 0 keeps them all. For short runs
	// on long series: reproduce -quick uses two weeks of PeMS.
	Steps int
}

// ParseSplitBy checks a split kind named on a command line.
func ParseSplitBy(s string) (string, error) {
	switch s {
	case ByTime, ByNodes, ByWindows:
		return s, nil
	}
	return "", fmt.Errorf("split by %q: want %q, %q or %q", s, ByTime, ByNodes, ByWindows)
}

// Make returns the split of n snapshots of a graph whose node degrees are
// given (used by a node split only), recording sp.Steps: n is then the
// number of snapshots of the series' first sp.Steps steps.
func (sp SplitSpec) Make(n int, degrees []int) (Split, error) {
	var s Split
	var err error
	switch sp.By {
	case ByTime, "":
		s, err = ChronoSplit(n, sp.Ratios)
	case ByNodes:
		s, err = NodeSplit(n, degrees, sp.Ratios)
	case ByWindows:
		s, err = WindowSplit(n, sp.Ratios)
	default:
		return Split{}, fmt.Errorf("snapshot: split by %q: want %q, %q or %q", sp.By, ByTime, ByNodes, ByWindows)
	}
	if err != nil {
		return Split{}, err
	}
	if sp.Steps < 0 {
		return Split{}, fmt.Errorf("snapshot: split of the first %d steps: want a positive number, or 0 for all", sp.Steps)
	}
	s.Steps = sp.Steps
	return s, nil
}

// SpecOf returns the spec that remakes s on the same data: for a time split
// the sizes of its parts as ratios (files written before node splits carry
// no ratios), for a node or window split its kind and ratios. It is how a
// saved model's split is reproduced.
func SpecOf(s Split) SplitSpec {
	if Dealt(s.By) {
		return SplitSpec{By: s.By, Ratios: s.Ratios, Steps: s.Steps}
	}
	return SplitSpec{By: ByTime, Ratios: [3]float64{float64(s.Train.Len()), float64(s.Val.Len()), float64(s.Test.Len())}, Steps: s.Steps}
}

// TrainSteps returns the number of leading series steps seen by the training
// snapshots, inputs and targets together, for windows of the given length.
// The last training snapshot L reads steps up to and including its target
// L+window, so the count is L+1+window (Train.End+window for a time split).
// Fitting the Normalizer on these steps keeps validation data out of the
// scaling under a time split. A split by windows is not fitted on them
// (FitSteps).
func (s Split) TrainSteps(window int) int {
	return s.Train.Last() + 1 + window
}

// FitSteps returns the series steps a split by windows fits its scaling
// on: the first step of every training snapshot, and no other, as Gao &
// Ribeiro's normalizeby does under their inductive split (it takes the node
// features at the training window indices). It returns nil for the other
// kinds, which fit on the leading TrainSteps steps.
func (s Split) FitSteps() []int {
	if !s.ByWindows() {
		return nil
	}
	return s.Train.Snapshots()
}

// FitData returns the readings a normaliser is fitted on, row-major (step,
// node, channel), with their numbers of nodes and steps: for a time split
// the first TrainSteps steps of data (data itself), for a node split every
// step of the training nodes (a copy), for a split by windows the FitSteps
// steps of every node (a copy), as Gao & Ribeiro's normalizeby does. Under
// a time or node split no validation or test target enters the scaling;
// under a split by windows the steps fitted on are also read by validation
// and test snapshots, as in their code.
func (s Split) FitData(data []float64, nodes, channels, window int) (fit []float64, fitNodes, steps int) {
	if at := s.FitSteps(); at != nil {
		block := nodes * channels
		fit = make([]float64, 0, len(at)*block)
		for _, t := range at {
			fit = append(fit, data[t*block:(t+1)*block]...)
		}
		return fit, nodes, len(at)
	}
	steps = s.TrainSteps(window)
	if !s.ByNodes() || s.Train.Nodes == nil {
		return data, nodes, steps
	}
	k := len(s.Train.Nodes)
	fit = make([]float64, 0, steps*k*channels)
	for t := 0; t < steps; t++ {
		for _, i := range s.Train.Nodes {
			at := (t*nodes + i) * channels
			fit = append(fit, data[at:at+channels]...)
		}
	}
	return fit, k, steps
}

// Equal reports whether s and o are the same split: same kind, ranges,
// deals and nodes. A time split read from a file written before node splits
// (By empty) equals the same split made now.
func (s Split) Equal(o Split) bool {
	if s.kind() != o.kind() || (Dealt(s.By) && s.Ratios != o.Ratios) || s.Steps != o.Steps {
		return false
	}
	return s.Train.Equal(o.Train) && s.Val.Equal(o.Val) && s.Test.Equal(o.Test)
}

// Equal reports whether p and o are the same part: the same snapshots and
// the same sensors scored.
func (p Part) Equal(o Part) bool {
	return p.Range == o.Range && p.Deal == o.Deal && (p.Nodes == nil) == (o.Nodes == nil) && slices.Equal(p.Nodes, o.Nodes)
}
