package snapshot

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// Silence says how many of the last steps of node z's input window in
// snapshot s are silenced: taken as missing, whatever was read, as when a
// sensor falls silent (0: none; the window's length or more: all of it).
// Only inputs are silenced: the snapshot's target, the reading after the
// window, stays the true one, so that a forecast made during an outage is
// scored as any other.
type Silence func(s, z int) int

// Outage is a scenario of simulated sensor outages, seeded and
// reproducible: in every snapshot, each sensor is silenced with
// probability Share, independently of the others and of the other
// snapshots, by a hash of (Seed, snapshot, sensor) that does not depend on
// the order anything is computed in. A silenced sensor has the last L
// steps of its window taken as missing, L one of Lengths: an evaluation
// scores each length in its own pass (For), with the same sensors
// silenced in each, and training draws a length for every silenced sensor
// (Draw). A length at or above the window silences it whole: offline, an
// outage longer than the window reads the same window as one as long.
//
// The zero Outage (Share 0) silences nothing. Its text form (String,
// ParseOutage) is "share=0.1,len=1:3:6:12,seed=1".
type Outage struct {
	Share   float64 `json:"share"`
	Lengths []int   `json:"lengths"`
	Seed    uint64  `json:"seed"`
}

// Outage presets, as ParseOutage takes them.
const (
	// OutageOff silences nothing.
	OutageOff = "off"
	// OutageStandard silences a tenth of the sensors of every snapshot for
	// their last 1, 3, 6 or 12 readings (12: a whole window of an hour of
	// five-minute steps), seed 1: the scenario of the outage tables.
	OutageStandard = "standard"
	// OutageTrain is the default of training with outages: a tenth of the
	// sensors of every training snapshot silenced, each for a length drawn
	// from 1 to 12 readings, every one alike, seed 1.
	OutageTrain = "train"
)

// Enabled reports whether o silences anything.
func (o Outage) Enabled() bool { return o.Share > 0 && len(o.Lengths) > 0 }

// String returns o's text form, the one ParseOutage reads: "off" when it
// silences nothing, else "share=S,len=L1:L2:…,seed=N".
func (o Outage) String() string {
	if !o.Enabled() {
		return OutageOff
	}
	ls := make([]string, len(o.Lengths))
	for i, l := range o.Lengths {
		ls[i] = strconv.Itoa(l)
	}
	return fmt.Sprintf("share=%s,len=%s,seed=%d", strconv.FormatFloat(o.Share, 'g', -1, 64), strings.Join(ls, ":"), o.Seed)
}

// ParseOutage reads an outage scenario: "off" (or "") for none, a preset
// ("standard": share=0.1,len=1:3:6:12,seed=1; "train":
// share=0.1,len=1-12,seed=1), or comma-separated key=value settings:
//
//	share=S   the share of the sensors silenced in each snapshot, 0 < S ≤ 1
//	len=L     the readings silenced, a colon-separated list of numbers ≥ 1
//	          and ranges A-B ("1:3:6:12", "1-12")
//	seed=N    the seed of the draws (default 1)
//
// share and len are required. Lengths are kept sorted, each once.
func ParseOutage(s string) (Outage, error) {
	switch strings.TrimSpace(s) {
	case "", OutageOff, "none":
		return Outage{}, nil
	case OutageStandard:
		return Outage{Share: 0.1, Lengths: []int{1, 3, 6, 12}, Seed: 1}, nil
	case OutageTrain:
		o := Outage{Share: 0.1, Seed: 1}
		for l := 1; l <= 12; l++ {
			o.Lengths = append(o.Lengths, l)
		}
		return o, nil
	}
	o := Outage{Seed: 1}
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || seen[k] {
			return Outage{}, fmt.Errorf("outage %q: %q: want share=S,len=L[:L…],seed=N, each once (or off, %s, %s)", s, kv, OutageStandard, OutageTrain)
		}
		seen[k] = true
		var err error
		switch k {
		case "share":
			o.Share, err = strconv.ParseFloat(v, 64)
			if err == nil && !(o.Share > 0 && o.Share <= 1) {
				err = fmt.Errorf("want a share in (0, 1]")
			}
		case "len":
			o.Lengths, err = parseLengths(v)
		case "seed":
			o.Seed, err = strconv.ParseUint(v, 10, 64)
		default:
			err = fmt.Errorf("unknown setting (want share, len, seed)")
		}
		if err != nil {
			return Outage{}, fmt.Errorf("outage %q: %s=%s: %w", s, k, v, err)
		}
	}
	if !seen["share"] || !seen["len"] {
		return Outage{}, fmt.Errorf("outage %q: share= and len= are required (or off, %s, %s)", s, OutageStandard, OutageTrain)
	}
	return o, nil
}

// maxOutageLength bounds a silenced length, far beyond any window
// (MaxWindow) yet small enough that a range of lengths cannot exhaust
// memory.
const maxOutageLength = MaxWindow

// parseLengths reads a colon-separated list of lengths and ranges A-B.
func parseLengths(v string) ([]int, error) {
	var out []int
	for _, item := range strings.Split(v, ":") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 1 || b < a || b > maxOutageLength {
			return nil, fmt.Errorf("%q: want lengths from 1 to %d, or ranges A-B of them", item, maxOutageLength)
		}
		for l := a; l <= b; l++ {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// Validate reports what is wrong with o, if anything: a share outside
// [0, 1], or a length below 1.
func (o Outage) Validate() error {
	if !(o.Share >= 0 && o.Share <= 1) {
		return fmt.Errorf("outage share %v: want a share in [0, 1]", o.Share)
	}
	for _, l := range o.Lengths {
		if l < 1 || l > maxOutageLength {
			return fmt.Errorf("outage length %d: want 1 to %d readings", l, maxOutageLength)
		}
	}
	return nil
}

// Silenced reports whether sensor z is silenced in snapshot s.
func (o Outage) Silenced(s, z int) bool {
	return o.Share > 0 && unit(hash3(o.Seed, uint64(s), uint64(z))) < o.Share
}

// For returns the silence of one pass of an evaluation: the sensors o
// silences (Silenced), each for length steps. Every length silences the
// same sensors of every snapshot, so that a comparison across lengths is
// over the same forecasts.
func (o Outage) For(length int) Silence {
	return func(s, z int) int {
		if o.Silenced(s, z) {
			return length
		}
		return 0
	}
}

// Marks returns, row-major (snapshot, node) over the given snapshots of
// nodes each, which sensors o silences (Silenced); nil when o silences
// nothing.
func (o Outage) Marks(snapshots []int, nodes int) []bool {
	if !o.Enabled() {
		return nil
	}
	out := make([]bool, len(snapshots)*nodes)
	for b, s := range snapshots {
		for z := 0; z < nodes; z++ {
			out[b*nodes+z] = o.Silenced(s, z)
		}
	}
	return out
}

// drawSalt sets the draws of training (Draw) apart from the evaluation's
// (Silenced), which would otherwise silence the same sensors of snapshot
// s in an epoch whose number is s.
const drawSalt = 0x6f7574616765 // "outage"

// Draw returns the silence of training round (epoch) round: every sensor
// of every snapshot silenced with probability Share, for a length drawn
// from Lengths with equal chances, anew each round and independently of
// the evaluation's draws. A round's draws depend on (Seed, round,
// snapshot, sensor) only, so a resumed training sees those of an
// uninterrupted one.
func (o Outage) Draw(round uint64) Silence {
	if !o.Enabled() {
		return nil
	}
	seed := hash3(o.Seed, drawSalt, round)
	return func(s, z int) int {
		h := hash3(seed, uint64(s), uint64(z))
		if unit(h) >= o.Share {
			return 0
		}
		return o.Lengths[hash3(h, 1, 0)%uint64(len(o.Lengths))]
	}
}

// hash3 mixes three words into one with SplitMix64's finaliser, the same
// on every machine.
func hash3(a, b, c uint64) uint64 {
	h := mix64(a ^ 0x9e3779b97f4a7c15)
	h = mix64(h ^ b)
	return mix64((h ^ c) + 0x632be59bd9b4e019)
}

func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// unit maps a hash to [0, 1) with 53 bits.
func unit(h uint64) float64 { return float64(h>>11) * (1.0 / (1 << 53)) }

// silencedLen returns how many of a window's steps silence takes from node
// z of snapshot s, at most the window; 0 for a nil silence.
func silencedLen(f Silence, s, z, window int) int {
	if f == nil {
		return 0
	}
	return min(max(f(s, z), 0), window)
}

// Completeness returns how complete the inputs of the forecasts of part
// p's snapshots were (every node, row-major (snapshot, node)), for
// evaluation.Stratify: the gaps of each node's own window in s (its
// silence included), whether some other sensor in receptive[z] (the
// sensors whose windows node z's forecast reads; nil: its own only) had
// a gap, and, where s is silenced, which sensors the outage o silenced.
func (s *Set) Completeness(p Part, o Outage, receptive [][]int) (evaluation.Gaps, error) {
	snaps := p.Snapshots()
	missing, trailing, err := s.Gaps(snaps)
	if err != nil {
		return evaluation.Gaps{}, err
	}
	var marks []bool
	if s.silence != nil {
		marks = o.Marks(snaps, s.Nodes)
	}
	return evaluation.NewGaps(s.Window, len(snaps), s.Nodes, missing, trailing, receptive, marks)
}
