package snapshot

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// chrono is the time split with the given part boundaries.
func chrono(a, b, c, d int) Split {
	return Split{By: ByTime, Train: Part{Range: Range{a, b}}, Val: Part{Range: Range{b, c}}, Test: Part{Range: Range{c, d}}}
}

func TestChronoSplit(t *testing.T) {
	for _, tc := range []struct {
		n       int
		ratios  [3]float64
		want    Split
		wantErr bool
	}{
		{n: 100, ratios: [3]float64{6, 2, 2}, want: chrono(0, 60, 80, 100)},
		{n: 100, ratios: [3]float64{0.6, 0.2, 0.2}, want: chrono(0, 60, 80, 100)},
		{n: 10, ratios: [3]float64{7, 1, 2}, want: chrono(0, 7, 8, 10)},
		{n: 3, ratios: [3]float64{1, 1, 1}, want: chrono(0, 1, 2, 3)},
		{n: 2, ratios: [3]float64{6, 2, 2}, wantErr: true},
		{n: 1, ratios: [3]float64{1, 1, 1}, wantErr: true},
		{n: 0, ratios: [3]float64{6, 2, 2}, wantErr: true},
		{n: 100, ratios: [3]float64{6, 0, 2}, wantErr: true},
		{n: 100, ratios: [3]float64{0, 0, 0}, wantErr: true},
		{n: 100, ratios: [3]float64{6, -2, 2}, wantErr: true},
		{n: 100, ratios: [3]float64{math.NaN(), 2, 2}, wantErr: true},
		{n: 100, ratios: [3]float64{math.Inf(1), 2, 2}, wantErr: true},
	} {
		got, err := ChronoSplit(tc.n, tc.ratios)
		if (err != nil) != tc.wantErr {
			t.Errorf("ChronoSplit(%d, %v) error = %v, wantErr %v", tc.n, tc.ratios, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ChronoSplit(%d, %v) = %+v, want %+v", tc.n, tc.ratios, got, tc.want)
		}
		if total := got.Train.Len() + got.Val.Len() + got.Test.Len(); total != tc.n {
			t.Errorf("ChronoSplit(%d, %v) covers %d snapshots", tc.n, tc.ratios, total)
		}
	}
}

func TestTrainSteps(t *testing.T) {
	for _, tc := range []struct {
		split  Split
		window int
		want   int
	}{
		{Split{Train: Part{Range: Range{0, 60}}}, 12, 72},
		{Split{Train: Part{Range: Range{0, 1}}}, 1, 2},
	} {
		if got := tc.split.TrainSteps(tc.window); got != tc.want {
			t.Errorf("TrainSteps(%d) with train %v = %d, want %d", tc.window, tc.split.Train, got, tc.want)
		}
	}
	// The last training snapshot's target is the last step counted, and
	// the first validation snapshot's target lies beyond it.
	const window = 12
	s, err := ChronoSplit(100, [3]float64{6, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	steps := s.TrainSteps(window)
	if lastTarget := s.Train.End - 1 + window; lastTarget != steps-1 {
		t.Errorf("last training target %d, TrainSteps %d", lastTarget, steps)
	}
	if valTarget := s.Val.Start + window; valTarget < steps {
		t.Errorf("first validation target %d inside training steps %d", valTarget, steps)
	}
}

func TestRange(t *testing.T) {
	for _, tc := range []struct {
		r    Range
		len  int
		in   int
		cont bool
	}{
		{Range{2, 5}, 3, 4, true},
		{Range{2, 5}, 3, 5, false},
		{Range{5, 2}, 0, 3, false},
		{Range{}, 0, 0, false},
	} {
		if got := tc.r.Len(); got != tc.len {
			t.Errorf("%v.Len() = %d, want %d", tc.r, got, tc.len)
		}
		if got := tc.r.Contains(tc.in); got != tc.cont {
			t.Errorf("%v.Contains(%d) = %v, want %v", tc.r, tc.in, got, tc.cont)
		}
	}
}

func TestNodeSplit(t *testing.T) {
	// Degrees of 12 nodes; by degree, largest first, ties by id, the order
	// is 3 7 0 1 2 4 5 6 8 9 10 11 (3 has 9, 7 has 5, the rest 1).
	deg := []int{1, 1, 1, 9, 1, 1, 1, 5, 1, 1, 1, 1}
	for _, tc := range []struct {
		name             string
		ratios           [3]float64
		train, val, test []int
		wantErr          bool
	}{
		// Positions 0–6 of every ten train, 7 validates, 8 and 9 test; then
		// positions 10 and 11 train again.
		{name: "7,1,2", ratios: [3]float64{7, 1, 2}, train: []int{0, 1, 2, 3, 4, 5, 7, 10, 11}, val: []int{6}, test: []int{8, 9}},
		{name: "1,1,1", ratios: [3]float64{1, 1, 1}, train: []int{1, 3, 5, 9}, val: []int{2, 6, 7, 10}, test: []int{0, 4, 8, 11}},
		{name: "fraction", ratios: [3]float64{0.7, 0.1, 0.2}, wantErr: true},
		{name: "zero", ratios: [3]float64{7, 0, 2}, wantErr: true},
		{name: "NaN", ratios: [3]float64{math.NaN(), 1, 2}, wantErr: true},
		{name: "empty test", ratios: [3]float64{11, 1, 1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NodeSplit(50, deg, tc.ratios)
			if (err != nil) != tc.wantErr {
				t.Fatalf("NodeSplit error = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			for name, pair := range map[string][2][]int{"train": {s.Train.Nodes, tc.train}, "val": {s.Val.Nodes, tc.val}, "test": {s.Test.Nodes, tc.test}} {
				if !reflect.DeepEqual(pair[0], pair[1]) {
					t.Errorf("%s nodes %v, want %v", name, pair[0], pair[1])
				}
			}
			for _, p := range []Part{s.Train, s.Val, s.Test} {
				if p.Range != (Range{0, 50}) {
					t.Errorf("part range %v, want every snapshot", p.Range)
				}
			}
			if !s.ByNodes() || s.TrainSteps(12) != 62 {
				t.Errorf("By %q, TrainSteps %d", s.By, s.TrainSteps(12))
			}
			checkRemade(t, s, 50, deg)
		})
	}
}

// checkRemade checks that s survives a JSON round trip (a saved model) and
// that its spec remakes it on the same data.
func checkRemade(t *testing.T, s Split, n int, degrees []int) {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Split
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	again, err := SpecOf(back).Make(n, degrees)
	if err != nil || !reflect.DeepEqual(again, s) || !reflect.DeepEqual(back, s) || !back.Equal(s) {
		t.Errorf("remade %+v (%v), decoded %+v, want %+v", again, err, back, s)
	}
}

func TestSplitJSONBeforeNodeSplits(t *testing.T) {
	// A model file written before node splits: no "by", plain ranges.
	var s Split
	if err := json.Unmarshal([]byte(`{"Train":{"Start":0,"End":60},"Val":{"Start":60,"End":80},"Test":{"Start":80,"End":100}}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.ByNodes() || s.Test.Nodes != nil || s.Test.Range != (Range{80, 100}) {
		t.Fatalf("decoded %+v", s)
	}
	remade, err := SpecOf(s).Make(100, nil)
	if err != nil || !reflect.DeepEqual(remade, chrono(0, 60, 80, 100)) {
		t.Errorf("remade %+v (%v)", remade, err)
	}
	if _, err := (SplitSpec{By: "space"}).Make(100, nil); err == nil {
		t.Error("an unknown split kind was accepted")
	}
}

// TestPartJSONKeys checks that a part is written with lower-case keys, as
// the rest of the files' JSON is, and that the capitalised keys of files
// written before (model files, eval -json, metrics.json) read the same.
func TestPartJSONKeys(t *testing.T) {
	want := Part{Range: Range{Start: 80, End: 100}, Deal: Deal{Every: 10, Lo: 8, Hi: 10}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"start":80,"end":100,"deal":{"every":10,"lo":8,"hi":10}}` {
		t.Errorf("written as %s", got)
	}
	for _, tc := range []struct {
		name, json string
	}{
		{"current", string(b)},
		{"capitalised, before the tags", `{"Start":80,"End":100,"deal":{"Every":10,"Lo":8,"Hi":10}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Part
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("read %s as %+v, want %+v", tc.json, got, want)
			}
		})
	}
}

func TestPartHide(t *testing.T) {
	const nodes, channels = 3, 2
	truth := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12} // 2 snapshots
	all := append([]float64(nil), truth...)
	Part{}.Hide(all, nodes, channels)
	if !reflect.DeepEqual(all, truth) {
		t.Errorf("a part of every node hid %v", all)
	}
	p := Part{Nodes: []int{1}}
	p.Hide(truth, nodes, channels)
	for k, v := range truth {
		node := (k / channels) % nodes
		if hidden := math.IsNaN(v); hidden != (node != 1) || p.Scores(node) != (node == 1) {
			t.Errorf("entry %d (node %d) = %v", k, node, v)
		}
	}
}

func TestPartHas(t *testing.T) {
	// Snapshots 10..29 dealt 7:1:2 (positions 8 and 9 of ten), nodes 1 and 3.
	p := Part{Range: Range{10, 30}, Deal: Deal{10, 8, 10}, Nodes: []int{1, 3}}
	for _, tc := range []struct {
		node, s int
		want    bool
	}{
		{1, 18, true}, {3, 29, true}, {1, 19, true},
		{1, 17, false}, // position 7: another part's
		{0, 18, false}, // node 0: another part's
		{2, 28, false},
		{1, 8, false}, {1, 30, false}, {1, 38, false}, // outside the range
		{-1, 18, false},
	} {
		if got := p.Has(tc.node, tc.s); got != tc.want {
			t.Errorf("Has(node %d, snapshot %d) = %v, want %v", tc.node, tc.s, got, tc.want)
		}
	}
	if all := (Part{Range: Range{0, 5}}); !all.Has(99, 4) || all.Has(0, 5) {
		t.Errorf("a part of every node: Has(99, 4) %v, Has(0, 5) %v", all.Has(99, 4), all.Has(0, 5))
	}
}

func TestFitData(t *testing.T) {
	// 3 steps, 3 nodes, 1 channel: value = 10·step + node.
	data := []float64{0, 1, 2, 10, 11, 12, 20, 21, 22}
	s, err := NodeSplit(2, []int{0, 5, 1}, [3]float64{1, 1, 1}) // order 1 2 0: train {1}
	if err != nil {
		t.Fatal(err)
	}
	fit, nodes, steps := s.FitData(data, 3, 1, 1)
	if !reflect.DeepEqual(fit, []float64{1, 11, 21}) || nodes != 1 || steps != 3 {
		t.Errorf("node split fits on %v (%d nodes, %d steps), want node 1's every step", fit, nodes, steps)
	}
	fit, nodes, steps = chrono(0, 1, 2, 2).FitData(data, 3, 1, 1)
	if len(fit) != len(data) || nodes != 3 || steps != 2 {
		t.Errorf("time split fits on %d values, %d nodes, %d steps; want the data, 3 nodes, 2 steps", len(fit), nodes, steps)
	}
}

// TestFitDataWindows checks the scaling of a split by windows against Gao &
// Ribeiro's normalizeby (lib/meta/dyngraph/sparse/staedge.py): under the
// "time" spindle it takes node_feats at the training window indices
// (onp.take(node_feats, indices, 2)), i.e. the first step of every training
// snapshot and no other step, every node.
func TestFitDataWindows(t *testing.T) {
	// 14 steps, 2 nodes, 1 channel: value = 10·step + node; window 2, so
	// 12 snapshots, training snapshots 0–6, 10 and 11.
	const steps, nodes, window = 14, 2, 2
	data := make([]float64, steps*nodes)
	for k := range data {
		data[k] = float64(10*(k/nodes) + k%nodes)
	}
	s, err := WindowSplit(steps-window, [3]float64{7, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	fit, fitNodes, fitSteps := s.FitData(data, nodes, 1, window)
	var want []float64
	for _, st := range []int{0, 1, 2, 3, 4, 5, 6, 10, 11} {
		want = append(want, float64(10*st), float64(10*st+1))
	}
	if !reflect.DeepEqual(fit, want) || fitNodes != nodes || fitSteps != 9 {
		t.Errorf("window split fits on %v (%d nodes, %d steps), want %v (2 nodes, 9 steps)", fit, fitNodes, fitSteps, want)
	}
	if got := s.FitSteps(); !reflect.DeepEqual(got, []int{0, 1, 2, 3, 4, 5, 6, 10, 11}) {
		t.Errorf("FitSteps = %v, want the training snapshots", got)
	}
	if got := chrono(0, 1, 2, 2).FitSteps(); got != nil {
		t.Errorf("a time split's FitSteps = %v, want nil (its leading TrainSteps)", got)
	}
}

func TestWindowSplit(t *testing.T) {
	for _, tc := range []struct {
		name             string
		n                int
		ratios           [3]float64
		train, val, test []int
		wantErr          bool
	}{
		// Positions 0–6 of every ten train, 7 validates, 8 and 9 test; then
		// 10–11 train again.
		{name: "7,1,2", n: 12, ratios: [3]float64{7, 1, 2}, train: []int{0, 1, 2, 3, 4, 5, 6, 10, 11}, val: []int{7}, test: []int{8, 9}},
		{name: "ends in validation", n: 18, ratios: [3]float64{7, 1, 2},
			train: []int{0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13, 14, 15, 16}, val: []int{7, 17}, test: []int{8, 9}},
		{name: "1,1,1", n: 7, ratios: [3]float64{1, 1, 1}, train: []int{0, 3, 6}, val: []int{1, 4}, test: []int{2, 5}},
		{name: "fraction", n: 50, ratios: [3]float64{0.7, 0.1, 0.2}, wantErr: true},
		{name: "zero", n: 50, ratios: [3]float64{7, 0, 2}, wantErr: true},
		{name: "infinite", n: 50, ratios: [3]float64{math.Inf(1), 1, 2}, wantErr: true},
		{name: "too few for test", n: 8, ratios: [3]float64{7, 1, 2}, wantErr: true},
		{name: "no snapshots", n: 0, ratios: [3]float64{7, 1, 2}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := WindowSplit(tc.n, tc.ratios)
			if (err != nil) != tc.wantErr {
				t.Fatalf("WindowSplit error = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			seen := make([]int, tc.n)
			for name, pair := range map[string]struct {
				p    Part
				want []int
			}{"train": {s.Train, tc.train}, "val": {s.Val, tc.val}, "test": {s.Test, tc.test}} {
				p := pair.p
				if got := p.Snapshots(); !reflect.DeepEqual(got, pair.want) {
					t.Errorf("%s snapshots %v, want %v", name, got, pair.want)
				}
				if p.Len() != len(pair.want) || p.Last() != pair.want[len(pair.want)-1] || p.Nodes != nil {
					t.Errorf("%s: Len %d, Last %d, Nodes %v", name, p.Len(), p.Last(), p.Nodes)
				}
				for sn := -1; sn <= tc.n; sn++ {
					if p.Contains(sn) != slices.Contains(pair.want, sn) {
						t.Errorf("%s: Contains(%d) = %v", name, sn, p.Contains(sn))
					}
				}
				for _, sn := range pair.want {
					seen[sn]++
				}
			}
			for sn, k := range seen {
				if k != 1 {
					t.Errorf("snapshot %d is in %d parts", sn, k)
				}
			}
			if !s.ByWindows() || s.ByNodes() || s.TrainSteps(12) != tc.train[len(tc.train)-1]+13 {
				t.Errorf("By %q, TrainSteps %d", s.By, s.TrainSteps(12))
			}
			checkRemade(t, s, tc.n, nil)
			chrono, err := ChronoSplit(tc.n, tc.ratios)
			if err == nil && (chrono.Equal(s) || s.Equal(chrono)) {
				t.Error("a window split equals a time split")
			}
			other := s
			other.Test.Deal.Lo++
			if other.Equal(s) {
				t.Error("splits with other deals are equal")
			}
		})
	}
}

func TestPartLen(t *testing.T) {
	// Len counts what Snapshots lists, and First and Last are its ends, for
	// every deal over small ranges.
	for start := 0; start < 3; start++ {
		for end := start; end < start+25; end++ {
			for every := 0; every <= 5; every++ {
				for lo := 0; lo <= every; lo++ {
					for hi := lo; hi <= every; hi++ {
						p := Part{Range: Range{start, end}, Deal: Deal{every, lo, hi}}
						snaps := p.Snapshots()
						if got, want := p.Len(), len(snaps); got != want {
							t.Fatalf("%+v: Len %d, %d snapshots", p, got, want)
						}
						first, last := -1, -1
						if len(snaps) > 0 {
							first, last = snaps[0], snaps[len(snaps)-1]
						}
						if p.First() != first || p.Last() != last {
							t.Fatalf("%+v: First %d, Last %d, snapshots %v", p, p.First(), p.Last(), snaps)
						}
					}
				}
			}
		}
	}
}

func TestBatchesOf(t *testing.T) {
	idx := []int{3, 5, 9, 11, 20}
	got := BatchesOf(slices.Clone(idx), 2, nil)
	if !reflect.DeepEqual(got, [][]int{{3, 5}, {9, 11}, {20}}) {
		t.Errorf("in order: %v", got)
	}
	shuffled := BatchesOf(slices.Clone(idx), 2, rand.New(rand.NewPCG(1, 2)))
	flat := slices.Concat(shuffled...)
	slices.Sort(flat)
	if !reflect.DeepEqual(flat, idx) {
		t.Errorf("shuffled batches hold %v, want %v", flat, idx)
	}
	if BatchesOf(nil, 2, nil) != nil || BatchesOf(idx, 0, nil) != nil {
		t.Error("no indices or no size gave batches")
	}
}

func TestSplitString(t *testing.T) {
	chrono, err := ChronoSplit(10, [3]float64{6, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	windows, err := WindowSplit(20, [3]float64{7, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := NodeSplit(5, []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}, [3]float64{7, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    Split
		want string
	}{
		{chrono, "time, snapshots [0, 6)/[6, 8)/[8, 10)"},
		{windows, "windows 14/2/4 dealt 7:1:2 over 20 snapshots"},
		{nodes, "nodes 7/1/2 over 5 snapshots"},
		{cut(chrono, 22), "time, snapshots [0, 6)/[6, 8)/[8, 10), first 22 steps"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

// cut returns s as made over the first steps steps of a series.
func cut(s Split, steps int) Split {
	s.Steps = steps
	return s
}

// TestSplitFirstSteps checks that a split made over the first steps of a
// series records them, is remade from its spec and JSON with them, and is
// not Equal to the same split over a whole series.
func TestSplitFirstSteps(t *testing.T) {
	for _, by := range []string{ByTime, ByNodes, ByWindows} {
		ratios := [3]float64{7, 1, 2}
		s, err := SplitSpec{By: by, Ratios: ratios, Steps: 112}.Make(100, []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3})
		if err != nil {
			t.Fatal(err)
		}
		if s.Steps != 112 {
			t.Errorf("%s: Steps %d, want 112", by, s.Steps)
		}
		checkRemade(t, s, 100, []int{3, 1, 4, 1, 5, 9, 2, 6, 5, 3})
		if s.Equal(cut(s, 0)) || cut(s, 0).Equal(s) {
			t.Errorf("%s: a split of the first 112 steps equals the same split of a whole series", by)
		}
	}
	if _, err := (SplitSpec{Ratios: [3]float64{6, 2, 2}, Steps: -1}).Make(100, nil); err == nil {
		t.Error("a negative number of steps was accepted")
	}
}
