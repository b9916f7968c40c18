package snapshot

import (
	"encoding/json"
	"math"
	"path/filepath"
	"testing"
	"time"
)

// idgnnInputs is Gao & Ribeiro's calendar augmentation written as their
// code computes it (np.tile(arange(per_day)*step_minutes) for the minute,
// np.repeat(arange(7), per_day) tiled for the weekday), for step s, before
// scaling.
func idgnnInputs(s, stepMinutes int) (minute, weekday float64) {
	perDay := 24 * 60 / stepMinutes
	return float64((s % perDay) * stepMinutes), float64((s / perDay) % 7)
}

func TestTimeInputsMatchReference(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		stepMinutes           int
		trainSteps            int
		minuteMax, weekdayMax float64
	}{
		{"PeMS, 5 minutes, 41 days", 5, 41 * 288, 1435, 6},
		{"SZ-taxi, 15 minutes, 18 days", 15, 18 * 96, 1425, 6},
		{"3 days", 5, 3 * 288, 1435, 2},
		{"half a day", 15, 48, 705, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			origin := time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
			ti, err := FitTimeInputs(origin, int64(tc.stepMinutes)*60_000, tc.trainSteps)
			if err != nil {
				t.Fatal(err)
			}
			if ti.MinuteMax != tc.minuteMax || ti.WeekdayMax != tc.weekdayMax {
				t.Fatalf("scales %v, %v; want %v, %v", ti.MinuteMax, ti.WeekdayMax, tc.minuteMax, tc.weekdayMax)
			}
			// Their min-max scaling over the training steps: minimum 0,
			// maximum the largest value seen; a constant input stays 0.
			scale := func(v, max float64) float64 {
				if max == 0 {
					return v
				}
				return v / max
			}
			got := make([]float64, TimeInputCount)
			for s := 0; s < 20*24*60/tc.stepMinutes; s += 7 {
				ti.At(got, ti.StepTime(s))
				m, w := idgnnInputs(s, tc.stepMinutes)
				if want := []float64{scale(m, tc.minuteMax), scale(w, tc.weekdayMax)}; got[0] != want[0] || got[1] != want[1] {
					t.Fatalf("step %d: inputs %v, want %v", s, got, want)
				}
			}
		})
	}
}

func TestTimeInputsBeforeOrigin(t *testing.T) {
	ti, err := FitTimeInputs(0, 300_000, 7*288)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, 2)
	ti.At(got, -300_000) // the step before the origin: last minute of the previous day, weekday 6
	if got[0] != 1 || got[1] != 1 {
		t.Errorf("inputs one step before the origin = %v, want [1 1]", got)
	}
	ti.At(got, 7*24*3_600_000+12*3_600_000) // a week and a half-day later
	if want := 720.0 / 1435; got[0] != want || got[1] != 0 {
		t.Errorf("inputs a week and 12 h after the origin = %v, want [%v 0]", got, want)
	}
}

func TestFitTimeInputsRejects(t *testing.T) {
	if _, err := FitTimeInputs(0, 0, 10); err == nil {
		t.Error("step 0 ms accepted")
	}
	if _, err := FitTimeInputs(0, 300_000, 0); err == nil {
		t.Error("0 training steps accepted")
	}
}

func TestParsePrep(t *testing.T) {
	for _, s := range []string{"standard", "paper"} {
		if p, err := ParsePrep(s); err != nil || string(p) != s {
			t.Errorf("ParsePrep(%q) = %q, %v", s, p, err)
		}
	}
	if _, err := ParsePrep("gao"); err == nil {
		t.Error(`ParsePrep("gao") accepted`)
	}
}

// paperSeries is 3 days of 2 nodes × 2 channels at 5-minute steps whose
// values are distinct and whose second channel never reaches 0 (so that
// min-max scaling has a non-zero minimum), with a zero and a NaN.
func paperSeries() (data []float64, steps, nodes, channels int) {
	steps, nodes, channels = 3*288, 2, 2
	data = make([]float64, steps*nodes*channels)
	for i := range data {
		data[i] = float64(i%97) + 10*float64(i%channels)
	}
	data[5*4+0] = 0 // step 5, node 0, channel 0: missing
	data[6*4+3] = math.NaN()
	return data, steps, nodes, channels
}

func TestFitPaperAndFill(t *testing.T) {
	data, steps, nodes, channels := paperSeries()
	train := 2 * 288
	origin := time.Date(2016, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	norm, err := Fit(PrepPaper, data, nodes, channels, train, origin, 300_000)
	if err != nil {
		t.Fatal(err)
	}
	if norm.Prep() != PrepPaper || norm.Inputs() != channels+2 {
		t.Fatalf("prep %q with %d inputs, want paper with %d", norm.Prep(), norm.Inputs(), channels+2)
	}
	for c := 0; c < channels; c++ {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i := c; i < train*nodes*channels; i += channels {
			if v := data[i]; !math.IsNaN(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if norm.Mean[c] != lo || norm.Std[c] != hi-lo {
			t.Fatalf("channel %d: min %v range %v, want %v %v", c, norm.Mean[c], norm.Std[c], lo, hi-lo)
		}
	}
	if norm.Mean[1] == 0 {
		t.Fatal("test data: channel 1 should not reach 0")
	}
	set, err := NewSet(data, steps, nodes, channels, 4, norm)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	snaps := []int{3, 100}
	if err := set.Fill(&b, snaps); err != nil {
		t.Fatal(err)
	}
	in := channels + 2
	for bi, sn := range snaps {
		for tt, x := range b.X {
			if r, c := x.Dims(); r != len(snaps)*nodes || c != in {
				t.Fatalf("X[%d] is %d×%d, want %d×%d", tt, r, c, len(snaps)*nodes, in)
			}
			st := sn + tt
			m, w := idgnnInputs(st, 5)
			for i := 0; i < nodes; i++ {
				row := x.RawRowView(bi*nodes + i)
				for c := 0; c < channels; c++ {
					v := data[(st*nodes+i)*channels+c]
					if math.IsNaN(v) {
						v = 0 // enters as zero would
					}
					// Zero is a value under min-max scaling, not a missing mark.
					if want := (v - norm.Mean[c]) / norm.Std[c]; math.Abs(row[c]-want) > 1e-15 {
						t.Fatalf("snapshot %d step %d node %d channel %d: input %v, want %v", sn, tt, i, c, row[c], want)
					}
				}
				if row[channels] != m/1435 || row[channels+1] != w/1 {
					t.Fatalf("snapshot %d step %d node %d: calendar inputs %v, want %v %v", sn, tt, i, row[channels:], m/1435, w)
				}
			}
		}
		if r, c := b.Y.Dims(); r != len(snaps)*nodes || c != channels {
			t.Fatalf("Y is %d×%d, want %d×%d (targets stay the channels)", r, c, len(snaps)*nodes, channels)
		}
	}
	// The zero of step 5 went in as (0 − min)/range, not as 0.
	if got, want := set.NormAt(5, 0, 0), -norm.Mean[0]/norm.Std[0]; got != want {
		t.Errorf("zero reading normalised to %v, want %v", got, want)
	}

	// The normaliser travels as JSON in model files.
	js, err := json.Marshal(norm)
	if err != nil {
		t.Fatal(err)
	}
	var back Normalizer
	if err := json.Unmarshal(js, &back); err != nil || back.Prep() != PrepPaper || *back.Time != *norm.Time {
		t.Fatalf("JSON round trip: %s gave %+v, %v", js, back, err)
	}
}

func TestWriteSnapshotsWithTimeInputs(t *testing.T) {
	data, steps, nodes, channels := paperSeries()
	norm, err := FitPaper(data, nodes, channels, 2*288, 0, 300_000)
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewSet(data, steps, nodes, channels, 3, norm)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.arrow")
	r := Range{Start: 290, End: 293}
	if err := WriteSnapshots(path, set, r); err != nil {
		t.Fatal(err)
	}
	tab, err := ReadSnapshots(path)
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	if err := set.Fill(&b, []int{291}); err != nil {
		t.Fatal(err)
	}
	in := norm.Inputs()
	row := 1*nodes + 1 // snapshot 291, node 1
	for tt, x := range b.X {
		for j := 0; j < in; j++ {
			if got, want := tab.X[row*set.Window*in+tt*in+j], x.At(1, j); got != want {
				t.Fatalf("file x[%d][%d] = %v, Fill gives %v", tt, j, got, want)
			}
		}
	}
}

// TestPrepareWindowsFitsReferenceSteps prepares SZ-taxi split by windows
// with Gao & Ribeiro's preprocessing and checks that every input, the
// readings and the calendar, is min-max scaled over the first steps of the
// training snapshots only, as their normalizeby does under the inductive
// split (onp.take(node_feats, train_window_indices, 2)).
func TestPrepareWindowsFitsReferenceSteps(t *testing.T) {
	p, err := PrepareFit("", "sz-taxi", 12, SplitSpec{By: ByWindows, Ratios: [3]float64{7, 1, 2}}, PrepPaper)
	if err != nil {
		t.Skipf("no SZ-taxi data: %v", err)
	}
	s := p.Dataset.Series
	at := p.Split.Train.Snapshots()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, st := range at {
		for _, v := range s.Data[st*s.Nodes*s.Channels : (st+1)*s.Nodes*s.Channels] {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	n := p.Set.Norm
	if n.Mean[0] != lo || n.Std[0] != hi-lo {
		t.Errorf("speed scaled by min %v, range %v; want %v, %v (the training snapshots' first steps)", n.Mean[0], n.Std[0], lo, hi-lo)
	}
	want, err := FitTimeInputsAt(p.Dataset.Info.Start.UnixMilli(), int64(p.Dataset.Info.StepMinutes)*minuteMs, at)
	if err != nil {
		t.Fatal(err)
	}
	if n.Time == nil || *n.Time != want {
		t.Errorf("calendar inputs %+v, want %+v", n.Time, want)
	}
}
