package snapshot

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// TestLosLoopLinks prepares the real Los-loop with each way of weighing
// its links and checks the propagation matrix, the recorded choice, the
// fingerprint, and that a saved model's normaliser brings the same matrix
// back.
func TestLosLoopLinks(t *testing.T) {
	spec := SplitSpec{Ratios: [3]float64{6, 2, 2}, Steps: 300}
	info, err := pems.Lookup("los-loop")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		links   Links
		prep    Prep
		weights bool
	}{
		{LinksOnly, PrepStandard, false},
		{LinksOnly, PrepPaper, false}, // no distances to scale
		{LinksWeights, PrepStandard, true},
		{LinksWeights, PrepPaper, true},
		{LinksDefault, PrepStandard, info.WeighLinks},
		{LinksDefault, PrepPaper, info.WeighLinks},
	} {
		t.Run(string(tc.links)+"-"+string(tc.prep), func(t *testing.T) {
			p, err := PrepareFitLinks("", "los-loop", 12, spec, tc.prep, tc.links)
			if err != nil {
				t.Skipf("no Los-loop data: %v", err)
			}
			g := p.Dataset.Graph
			want := g.NormalizedAdjacency()
			if tc.weights {
				want = g.WeightedAdjacency()
				if !SameEdges(p.Set.Norm.Edges, WeightScale()) {
					t.Errorf("edges %v, want the graph's weights", p.Set.Norm.Edges)
				}
			} else if p.Set.Norm.Edges != nil {
				t.Errorf("edges %v, want links of weight 1", p.Set.Norm.Edges)
			}
			if !slices.Equal(p.Adj.Val, want.Val) || !slices.Equal(p.Adj.Col, want.Col) {
				t.Error("propagation matrix is not the one chosen")
			}
			fp := p.GraphFingerprint()
			if fp.Costs != tc.weights || fp.Nodes != 207 || fp.Edges != 1313 {
				t.Errorf("fingerprint %v", fp)
			}
			norm := p.Set.Norm
			q, err := PrepareSaved("", "los-loop", 12, p.Split, &norm, &fp)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.Adj.Val, p.Adj.Val) {
				t.Error("the saved normaliser builds another propagation matrix")
			}
		})
	}
}

func TestLinksRefused(t *testing.T) {
	if _, err := ParseLinks("distance"); err == nil || !strings.Contains(err.Error(), `"weights"`) {
		t.Errorf("ParseLinks(distance) = %v", err)
	}
	_, err := PrepareFitLinks("", "sz-taxi", 12, SplitSpec{Ratios: [3]float64{6, 2, 2}, Steps: 200}, PrepStandard, LinksWeights)
	if err == nil || !strings.Contains(err.Error(), "not a weighted one") || !strings.Contains(err.Error(), "sz-taxi") {
		t.Errorf("weights on SZ-taxi's 0/1 graph: %v", err)
	}
	norm := Normalizer{Mean: []float64{0}, Std: []float64{1}, Edges: WeightScale()}
	_, err = Prepare("", "sz-taxi", 12, SplitSpec{Ratios: [3]float64{6, 2, 2}, Steps: 200}, &norm)
	if err == nil || !strings.Contains(err.Error(), "not a weighted one") {
		t.Errorf("a saved weights normaliser on SZ-taxi: %v", err)
	}
	if err := (Normalizer{Mean: []float64{0}, Std: []float64{1}, Edges: &EdgeScale{Min: 0.1, Max: 1, Weights: true}}).Validate(1); err == nil {
		t.Error("a weights scaling over [0.1, 1] validates")
	}
}

// TestLosLoopCalendar checks the paper preprocessing's calendar inputs on
// Los-loop against the local time in Los Angeles: the first step is
// minute 0 of day 0, 09:00 on 2012-03-02 is minute 540 of day 1, and
// 23:50 on the seventh day is minute 1430 of day 6.
func TestLosLoopCalendar(t *testing.T) {
	p, err := PrepareFit("", "los-loop", 12, SplitSpec{Ratios: [3]float64{6, 2, 2}}, PrepPaper)
	if err != nil {
		t.Skipf("no Los-loop data: %v", err)
	}
	ti := p.Set.Norm.Time
	if ti == nil {
		t.Fatal("no calendar inputs")
	}
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	day2 := int(time.Date(2012, 3, 2, 9, 0, 0, 0, la).Sub(p.Dataset.Info.Start) / (5 * time.Minute))
	if day2 != 288+108 {
		t.Fatalf("2012-03-02 09:00 is step %d, want %d", day2, 288+108)
	}
	for _, tc := range []struct {
		step           int
		minute, day    float64
		local          string
		snapshot, slot int // a snapshot whose window holds the step, and where
	}{
		{0, 0, 0, "2012-03-01 00:00 PST", 0, 0},
		{day2, 540, 1, "2012-03-02 09:00 PST", day2 - 3, 3},
		{2014, 1430, 6, "2012-03-07 23:50 PST", 2014 - 11, 11}, // the last step an input window holds
	} {
		at := time.UnixMilli(ti.StepTime(tc.step)).In(la)
		if got := at.Format("2006-01-02 15:04 MST"); got != tc.local {
			t.Errorf("step %d at %s, want %s", tc.step, got, tc.local)
		}
		var b Batch
		if err := p.Set.Fill(&b, []int{tc.snapshot}); err != nil {
			t.Fatal(err)
		}
		c := p.Set.Channels
		for _, node := range []int{0, 206} {
			x := b.X[tc.slot]
			if m, d := x.At(node, c)*ti.MinuteMax, x.At(node, c+1)*ti.WeekdayMax; !near(m, tc.minute) || !near(d, tc.day) {
				t.Errorf("step %d: minute %v of day %v, want %v of day %v", tc.step, m, d, tc.minute, tc.day)
			}
		}
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
