package evaluation

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestStratifySmallCase checks every class of a breakdown against the
// mean absolute error computed by hand over its pairs: 2 snapshots of 3
// nodes and 1 channel, windows of 4 steps.
func TestStratifySmallCase(t *testing.T) {
	//            snapshot 0         snapshot 1
	pred := []float64{10, 20, 30, 11, 24, 27}
	truth := []float64{12, 20, 35, 10, 0, 30} // node 1 of snapshot 1 missing: masked
	g := Gaps{
		Window:   4,
		Missing:  []int{0, 2, 4, 3, 0, 4},
		Trailing: []int{0, 1, 4, 0, 0, 4},
		Others:   []bool{true, false, true, false, true, false},
		Silenced: []bool{false, false, true, false, false, true},
	}
	b, err := Stratify(pred, truth, 3, 1, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	// |p − y| per pair: 2, 0, 5, 1, (masked), 3.
	wantOwn := []struct {
		mae   float64
		count int
	}{
		{2, 1},            // complete: pair 0 (pair 4 masked)
		{(0 + 1) / 2., 2}, // 1–3 missing: pairs 1 and 3
		{0, 0},            // 4–3: none
		{(5 + 3) / 2., 2}, // whole window: pairs 2 and 5
	}
	names := []string{"complete", "1–3", "4–3", "whole window"}
	for c, w := range wantOwn {
		got := b.Own[c]
		if got.Own != names[c] || got.Metrics.Count != w.count || math.Abs(got.Metrics.MAE-w.mae) > 1e-15 {
			t.Errorf("own class %d: %+v, want %s MAE %v over %d", c, got, names[c], w.mae, w.count)
		}
	}
	// Joint: (complete, others complete) none scored; (complete,
	// incomplete) pair 0; (1–3, complete) pairs 1 and 3; (whole,
	// incomplete) pair 2; (whole, complete) pair 5.
	for _, tc := range []struct {
		j     int
		mae   float64
		count int
	}{{0, 0, 0}, {1, 2, 1}, {2, 0.5, 2}, {3, 0, 0}, {6, 3, 1}, {7, 5, 1}} {
		if m := b.Joint[tc.j].Metrics; m.Count != tc.count || math.Abs(m.MAE-tc.mae) > 1e-15 {
			t.Errorf("joint class %d (%s, others %s): MAE %v over %d, want %v over %d", tc.j, b.Joint[tc.j].Own, b.Joint[tc.j].Others, m.MAE, m.Count, tc.mae, tc.count)
		}
	}
	if b.Joint[6].Others != OthersComplete || b.Joint[7].Others != OthersIncomplete {
		t.Errorf("joint classes 6 and 7 are %+v and %+v", b.Joint[6], b.Joint[7])
	}
	// Trailing: 0 → pairs 0, 3 (4 masked): (2+1)/2; 1 → pair 1: 0; 4 → pairs 2, 5: 4.
	for k, w := range []struct {
		mae   float64
		count int
	}{{1.5, 2}, {0, 1}, {0, 0}, {0, 0}, {4, 2}} {
		if m := b.Trailing[k]; m.Count != w.count || math.Abs(m.MAE-w.mae) > 1e-15 {
			t.Errorf("trailing %d: MAE %v over %d, want %v over %d", k, m.MAE, m.Count, w.mae, w.count)
		}
	}
	if b.Silenced == nil || b.Silenced.MAE != 4 || b.Silenced.Count != 2 || b.Unsilenced.MAE != 1 || b.Unsilenced.Count != 3 {
		t.Errorf("silenced %+v, others %+v; want MAE 4 over 2 and 1 over 3", b.Silenced, b.Unsilenced)
	}
	// Every class's metrics are Compute's over its pairs.
	whole, err := Compute([]float64{30, 27}, []float64{35, 30})
	if err != nil {
		t.Fatal(err)
	}
	if b.Own[OwnWhole].Metrics != whole {
		t.Errorf("whole-window metrics %+v, Compute gives %+v", b.Own[OwnWhole].Metrics, whole)
	}

	// Without receptive others or an outage, those parts are absent.
	g.Others, g.Silenced = nil, nil
	b2, err := Stratify(pred, truth, 3, 1, g, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b2.Joint != nil || b2.Silenced != nil || b2.Own[OwnWhole].Metrics != whole {
		t.Errorf("breakdown without others or outage: %+v", b2)
	}
	js, err := json.Marshal(Report{Completeness: &b})
	if err != nil || !bytes.Contains(js, []byte(`"completeness":{"window":4`)) {
		t.Errorf("report JSON %s, %v", js, err)
	}
	var sb strings.Builder
	if err := b.Table(&sb, "km/h"); err != nil || !strings.Contains(sb.String(), "| whole window missing | 4.0000 | 2 | 3.0000 | 1 | 5.0000 | 1 |") {
		t.Errorf("table:\n%s%v", sb.String(), err)
	}
}

func TestStratifyRejects(t *testing.T) {
	ok := Gaps{Window: 4, Missing: []int{0, 1}, Trailing: []int{0, 1}}
	for name, tc := range map[string]struct {
		pred []float64
		g    Gaps
	}{
		"short predictions":      {[]float64{1}, ok},
		"trailing above missing": {[]float64{1, 2}, Gaps{Window: 4, Missing: []int{0, 1}, Trailing: []int{1, 1}}},
		"marks of other rows":    {[]float64{1, 2}, Gaps{Window: 4, Missing: []int{0, 1}, Trailing: []int{0, 1}, Others: []bool{true}}},
		"no window":              {[]float64{1, 2}, Gaps{Missing: []int{0, 1}, Trailing: []int{0, 1}}},
	} {
		if _, err := Stratify(tc.pred, []float64{1, 2}, 2, 1, tc.g, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestOthersIncompleteOf(t *testing.T) {
	missing := []int{0, 2, 0, 0, 0, 1} // 2 snapshots of 3 nodes
	got, err := OthersIncompleteOf(missing, 2, 3, [][]int{{0, 1}, {1}, {0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	want := []bool{true, false, false, false, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("OthersIncompleteOf = %v, want %v", got, want)
		}
	}
	// Node 2 in snapshot 1 reads only itself beside node 0: its own gap does not count.
	if own, err := OthersIncompleteOf(missing, 2, 3, [][]int{{0}, {1}, {2}}); err != nil || own != nil {
		t.Errorf("receptive sets of the node alone: %v, %v; want nil", own, err)
	}
	if _, err := OthersIncompleteOf(missing, 2, 3, [][]int{{0}, {1}, {3}}); err == nil {
		t.Error("a receptive node outside the graph: no error")
	}
}

func TestOwnClassLabel(t *testing.T) {
	for _, tc := range []struct {
		window int
		want   [OwnClasses]string
	}{
		{12, [OwnClasses]string{"complete", "1-3", "4-11", "whole"}},
		{6, [OwnClasses]string{"complete", "1-3", "4-5", "whole"}},
		{5, [OwnClasses]string{"complete", "1-3", "4", "whole"}},
		{4, [OwnClasses]string{"complete", "1-3", "", "whole"}},
		{2, [OwnClasses]string{"complete", "1", "", "whole"}},
		{1, [OwnClasses]string{"complete", "", "", "whole"}},
	} {
		for c, want := range tc.want {
			if got := OwnClassLabel(c, tc.window); got != want {
				t.Errorf("OwnClassLabel(%d, %d) = %q, want %q", c, tc.window, got, want)
			}
		}
		// Every number of missing steps falls in a class with a label.
		for m := 0; m <= tc.window; m++ {
			if OwnClassLabel(OwnClass(m, tc.window), tc.window) == "" {
				t.Errorf("window %d: %d missing in class %d, which has no label", tc.window, m, OwnClass(m, tc.window))
			}
		}
	}
}

func TestOthersIncompleteFor(t *testing.T) {
	gaps := map[int]int{0: 0, 1: 2, 2: 0, 3: 1}
	for _, tc := range []struct {
		z         int
		receptive []int
		want      bool
	}{
		{0, []int{0, 1}, true},
		{1, []int{1}, false}, // its own gaps do not count
		{1, []int{0, 1, 2}, false},
		{2, []int{2, 3}, true},
		{0, nil, false},
	} {
		got := OthersIncompleteFor(tc.z, tc.receptive, func(i int) int { return gaps[tc.receptive[i]] })
		if got != tc.want {
			t.Errorf("OthersIncompleteFor(%d, %v) = %v, want %v", tc.z, tc.receptive, got, tc.want)
		}
	}
}
