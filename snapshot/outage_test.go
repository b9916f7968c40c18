package snapshot

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseOutage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Outage
		text string // String of the result; "" for an error
	}{
		{"", Outage{}, "off"},
		{"off", Outage{}, "off"},
		{"standard", Outage{Share: 0.1, Lengths: []int{1, 3, 6, 12}, Seed: 1}, "share=0.1,len=1:3:6:12,seed=1"},
		{"share=0.25,len=6,seed=7", Outage{Share: 0.25, Lengths: []int{6}, Seed: 7}, "share=0.25,len=6,seed=7"},
		{"len=12:1:3-4:3,share=1", Outage{Share: 1, Lengths: []int{1, 3, 4, 12}, Seed: 1}, "share=1,len=1:3:4:12,seed=1"},
		{"share=0,len=3", Outage{}, ""},
		{"share=1.5,len=3", Outage{}, ""},
		{"share=0.1", Outage{}, ""},
		{"len=3", Outage{}, ""},
		{"share=0.1,len=0", Outage{}, ""},
		{"share=0.1,len=5-3", Outage{}, ""},
		{"share=0.1,len=3,seed=-1", Outage{}, ""},
		{"share=0.1,len=3,share=0.2", Outage{}, ""},
		{"share=0.1,len=3,when=now", Outage{}, ""},
		{"share=0.1,len=1-99999999", Outage{}, ""},
		{"some", Outage{}, ""},
	} {
		got, err := ParseOutage(tc.in)
		if tc.text == "" {
			if err == nil {
				t.Errorf("ParseOutage(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseOutage(%q): %v", tc.in, err)
			continue
		}
		if got.Share != tc.want.Share || got.Seed != tc.want.Seed && tc.want.Share > 0 || !slices.Equal(got.Lengths, tc.want.Lengths) {
			t.Errorf("ParseOutage(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
		if s := got.String(); s != tc.text {
			t.Errorf("ParseOutage(%q).String() = %q, want %q", tc.in, s, tc.text)
		}
		back, err := ParseOutage(got.String())
		if err != nil || back.String() != got.String() {
			t.Errorf("round trip of %q: %+v, %v", got.String(), back, err)
		}
	}
	train, err := ParseOutage(OutageTrain)
	if err != nil || train.Share != 0.1 || len(train.Lengths) != 12 || train.Lengths[11] != 12 {
		t.Errorf("preset %s = %+v, %v", OutageTrain, train, err)
	}
}

// TestOutageSeeded checks that a scenario's draws are a function of the
// seed, snapshot and sensor alone: the same on a second call, in another
// order, and from an Outage read back from its text; that about Share of
// the sensors are silenced; that other seeds silence other sensors; and
// that training rounds draw anew, with lengths from the scenario's.
func TestOutageSeeded(t *testing.T) {
	o := Outage{Share: 0.1, Lengths: []int{1, 3, 6, 12}, Seed: 5}
	back, err := ParseOutage(o.String())
	if err != nil {
		t.Fatal(err)
	}
	const snaps, nodes = 400, 150
	var hit, same, other int
	f6 := o.For(6)
	for s := snaps - 1; s >= 0; s-- { // backwards: order does not matter
		for z := 0; z < nodes; z++ {
			sil := o.Silenced(s, z)
			if sil != back.Silenced(s, z) || sil != o.Silenced(s, z) {
				t.Fatalf("snapshot %d sensor %d: draws differ between calls", s, z)
			}
			if (f6(s, z) == 6) != sil || (f6(s, z) == 0) == sil {
				t.Fatalf("For(6)(%d, %d) = %d, silenced %v", s, z, f6(s, z), sil)
			}
			if sil {
				hit++
			}
			o2 := o
			o2.Seed = 6
			if o2.Silenced(s, z) == sil {
				same++
			}
		}
	}
	n := float64(snaps * nodes)
	if share := float64(hit) / n; math.Abs(share-0.1) > 4*math.Sqrt(0.1*0.9/n) {
		t.Errorf("share silenced %v, want about 0.1", share)
	}
	if float64(same)/n > 0.9 { // independent draws agree on 0.82 of pairs
		t.Errorf("seeds 5 and 6 agree on %d of %v pairs", same, n)
	}
	d1, d1b, d2 := o.Draw(1), back.Draw(1), o.Draw(2)
	counts := map[int]int{}
	for s := 0; s < snaps; s++ {
		for z := 0; z < nodes; z++ {
			l := d1(s, z)
			if l != d1b(s, z) {
				t.Fatalf("round 1 draws differ for snapshot %d sensor %d", s, z)
			}
			if l != 0 && !slices.Contains(o.Lengths, l) {
				t.Fatalf("drawn length %d not among %v", l, o.Lengths)
			}
			counts[l]++
			if l != d2(s, z) {
				other++
			}
		}
	}
	if float64(counts[0])/n < 0.88 || float64(counts[0])/n > 0.92 {
		t.Errorf("round 1 silenced %d of %v pairs, want about a tenth", int(n)-counts[0], n)
	}
	for _, l := range o.Lengths {
		if c := counts[l]; c < 1200 || c > 1800 { // 1500 expected
			t.Errorf("length %d drawn %d times, want about 1500", l, c)
		}
	}
	if other < int(0.1*n) {
		t.Errorf("rounds 1 and 2 differ on %d pairs only", other)
	}
	if (Outage{}).Draw(1) != nil || (Outage{}).Silenced(0, 0) {
		t.Error("the zero Outage silences something")
	}
}

// TestSilencedFill checks the inputs of a silenced set with missing
// marks: every row is StepInputs of the window's readings with the
// silenced steps marked missing, the targets are the true ones, and Gaps
// counts what Fill silenced.
func TestSilencedFill(t *testing.T) {
	data, steps, nodes, channels := paperSeries()
	origin := time.Date(2016, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	const window, stepMs = 6, 300_000
	norm, err := Fit(PrepPaper, data, nodes, channels, 300, origin, stepMs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		if i%11 == 4 {
			data[i] = 0 // more missing readings
		}
	}
	set, err := NewSet(data, steps, nodes, channels, window, norm)
	if err != nil {
		t.Fatal(err)
	}
	sil := func(s, z int) int { return (s + 2*z) % (window + 3) } // 0 to window+2
	ms := set.Masked(true).Silenced(sil)
	if set.Norm.Mask || set.Silence() != nil {
		t.Fatal("Masked or Silenced changed the set it was called on")
	}
	if got, want := ms.Inputs(), channels+TimeInputCount+channels; got != want {
		t.Fatalf("Inputs = %d, want %d", got, want)
	}
	snaps := []int{0, 17, 250, set.Len() - 1}
	var b, clean Batch
	if err := ms.Fill(&b, snaps); err != nil {
		t.Fatal(err)
	}
	if err := set.Fill(&clean, snaps); err != nil {
		t.Fatal(err)
	}
	missing, trailing, err := ms.Gaps(snaps)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, ms.Inputs())
	marks := make([]bool, channels)
	for bi, sn := range snaps {
		for z := 0; z < nodes; z++ {
			k := min(sil(sn, z), window)
			var gaps, run int
			for tt := 0; tt < window; tt++ {
				st := sn + tt
				rd := data[(st*nodes+z)*channels : (st*nodes+z+1)*channels]
				silenced := tt >= window-k
				for c := range marks {
					marks[c] = silenced
				}
				norm := ms.Norm
				norm.StepInputs(want, rd, marks, origin+int64(st)*stepMs)
				got := b.X[tt].RawRowView(bi*nodes + z)
				if !slices.Equal(got, want) {
					t.Fatalf("snapshot %d node %d step %d: inputs %v, want %v", sn, z, tt, got, want)
				}
				for c := 0; c < channels; c++ {
					if wantMark := silenced || Missing(rd[c]); got[channels+TimeInputCount+c] != mark(wantMark) {
						t.Fatalf("snapshot %d node %d step %d channel %d: mark %v", sn, z, tt, c, got[channels+TimeInputCount+c])
					}
				}
				if silenced || SlotMissing(rd) {
					gaps++
					run++
				} else {
					run = 0
				}
			}
			if missing[bi*nodes+z] != gaps || trailing[bi*nodes+z] != run {
				t.Fatalf("snapshot %d node %d: Gaps %d, %d; want %d, %d", sn, z, missing[bi*nodes+z], trailing[bi*nodes+z], gaps, run)
			}
		}
	}
	if !sameBits(b.Raw.RawMatrix().Data, clean.Raw.RawMatrix().Data) || !sameBits(b.Y.RawMatrix().Data, clean.Y.RawMatrix().Data) {
		t.Error("silencing changed the targets")
	}
	// Without marks or silence the inputs are those of the plain set.
	if err := set.Masked(false).Silenced(nil).Fill(&b, snaps); err != nil {
		t.Fatal(err)
	}
	for tt := range b.X {
		if !slices.Equal(b.X[tt].RawMatrix().Data, clean.X[tt].RawMatrix().Data) {
			t.Fatalf("step %d: an unmasked, unsilenced view reads other inputs", tt)
		}
	}
}

func TestWindowGaps(t *testing.T) {
	for _, tc := range []struct {
		window            []float64 // 2 channels
		silenced          int
		missing, trailing int
	}{
		{[]float64{1, 2, 3, 4, 5, 6}, 0, 0, 0},
		{[]float64{0, 0, 3, 4, 5, 6}, 0, 1, 0},
		{[]float64{1, 2, 3, 4, 0, 0}, 0, 1, 1},
		{[]float64{1, 2, 0, 4, 0, 0}, 0, 1, 1}, // one channel of a step missing: the step is not
		{[]float64{0, 0, 0, 0, 0, math.NaN()}, 0, 3, 3},
		{[]float64{1, 2, 3, 4, 5, 6}, 2, 2, 2},
		{[]float64{0, 0, 3, 4, 5, 6}, 1, 2, 1},
		{[]float64{0, 0, 3, 4, 5, 6}, 2, 3, 3},
		{[]float64{1, 2, 3, 4, 5, 6}, 9, 3, 3},
	} {
		m, r := WindowGaps(tc.window, 2, tc.silenced)
		if m != tc.missing || r != tc.trailing {
			t.Errorf("WindowGaps(%v, silenced %d) = %d, %d; want %d, %d", tc.window, tc.silenced, m, r, tc.missing, tc.trailing)
		}
	}
}

func TestScalingDiffMask(t *testing.T) {
	a := Normalizer{Mean: []float64{0}, Std: []float64{1}}
	b := a
	b.Mask = true
	if d := ScalingDiff(a, b); !strings.Contains(d, "missing marks") {
		t.Errorf("ScalingDiff of marks on and off = %q", d)
	}
	if a.Inputs() != 1 || b.Inputs() != 2 {
		t.Errorf("Inputs %d and %d, want 1 and 2", a.Inputs(), b.Inputs())
	}
}

// sameBits reports whether a and b hold the same values bit for bit (NaN
// equal to itself).
func sameBits(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) })
}
