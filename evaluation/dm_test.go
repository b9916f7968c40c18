package evaluation

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSnapshotMAE(t *testing.T) {
	nan := math.NaN()
	pred := []float64{1, 2, 3, 5, 5, 5, 9, 9, 9}
	truth := []float64{2, 0, 5, 1, nan, 3, 0, nan, 0} // zero and NaN truths are masked
	got, err := SnapshotMAE(pred, truth, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1.5, 3, nan}
	for i := range want {
		if !(got[i] == want[i] || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("snapshot %d: %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := SnapshotMAE(pred, truth, 2, 3); err == nil {
		t.Error("9 values taken as 2 snapshots of 3")
	}
}

func TestDieboldMariano(t *testing.T) {
	nan := math.NaN()
	// Differences 1, −1, 2, 0: mean 0.5, deviations 0.5, −1.5, 1.5, −0.5.
	a, b := []float64{2, 0, 3, 1}, []float64{1, 1, 1, 1}
	c := func(j, t int) float64 { return math.Cos(math.Pi * float64(j) * (float64(t) + 0.5) / 4) }
	l1 := math.Sqrt(0.5) * (0.5*c(1, 0) - 1.5*c(1, 1) + 1.5*c(1, 2) - 0.5*c(1, 3))
	l2 := math.Sqrt(0.5) * (0.5*c(2, 0) - 1.5*c(2, 1) + 1.5*c(2, 2) - 0.5*c(2, 3))
	stat1 := 2 * 0.5 / math.Abs(l1)
	stat2 := 2 * 0.5 / math.Sqrt((l1*l1+l2*l2)/2)
	for _, tc := range []struct {
		name  string
		a, b  []float64
		terms int
		stat  float64
		p     float64 // from the t distribution's closed forms for 1 and 2 degrees of freedom
	}{
		{"one term", a, b, 1, stat1, 1 - 2*math.Atan(stat1)/math.Pi},
		{"two terms", a, b, 2, stat2, 1 - stat2/math.Sqrt(2+stat2*stat2)},
		{"a non-finite pair is left out", append([]float64{nan}, a...), append([]float64{1}, b...), 1, stat1, 1 - 2*math.Atan(stat1)/math.Pi},
		{"swapped", b, a, 1, -stat1, 1 - 2*math.Atan(stat1)/math.Pi},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DieboldMariano(tc.a, tc.b, tc.terms)
			if err != nil {
				t.Fatal(err)
			}
			if got.N != 4 || got.DF != tc.terms || math.Abs(got.Mean-math.Copysign(0.5, tc.stat)) > 1e-15 ||
				math.Abs(got.Stat-tc.stat) > 1e-12 || math.Abs(got.P-tc.p) > 1e-9 {
				t.Errorf("%+v, want N 4, df %d, mean ±0.5, stat %v, p %v", got, tc.terms, tc.stat, tc.p)
			}
		})
	}
	got, err := DieboldMariano([]float64{2, 3, 4}, []float64{1, 2, 3}, 1)
	if err != nil || got.Mean != 1 || !math.IsNaN(got.Stat) || !math.IsNaN(got.P) {
		t.Errorf("constant difference: %+v, %v; want mean 1, no statistic", got, err)
	}
	// Equal differences whose mean misses them by rounding (seven of 0.1
	// sum to 0.7000000000000001): still no statistic, not a huge one from
	// a variance of rounding errors.
	for _, d := range []float64{0.1, 0.7, 1.0 / 3} {
		a := make([]float64, 7)
		for i := range a {
			a[i] = d
		}
		got, err := DieboldMariano(a, make([]float64, 7), 2)
		if err != nil || got.Mean != d || !math.IsNaN(got.Stat) || !math.IsNaN(got.P) {
			t.Errorf("constant difference %v: %+v, %v; want mean %v, no statistic", d, got, err, d)
		}
	}
	for _, bad := range []struct {
		a, b  []float64
		terms int
		want  string
	}{
		{a, b[:3], 0, "4 losses against 3"},
		{a, b, -1, "-1 cosine terms"},
		{a, b, 4, "too few"},
		{[]float64{1, nan}, []float64{0, 0}, 0, "1 finite pairs"},
	} {
		if _, err := DieboldMariano(bad.a, bad.b, bad.terms); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("DieboldMariano(%v, %v, %d): %v, want %q", bad.a, bad.b, bad.terms, err, bad.want)
		}
	}
}

// TestDieboldMarianoSize checks the test's rejection rate at 5 % when the
// forecasts are equally accurate but their loss differences are
// autocorrelated (AR(1), ρ = 0.6, as losses cluster in time): near 5 %,
// where the i.i.d. variance, a quarter of the true one, would reject about
// a third of the time. A real
// difference of half the differences' standard deviation is found nearly
// always.
func TestDieboldMarianoSize(t *testing.T) {
	const n, reps, rho = 300, 1000, 0.6
	rng := rand.New(rand.NewPCG(3, 4))
	zeros := make([]float64, n)
	sd := 1 / math.Sqrt(1-rho*rho)
	series := func(shift float64) []float64 {
		d := make([]float64, n)
		x := rng.NormFloat64() * sd
		for i := range d {
			x = rho*x + rng.NormFloat64()
			d[i] = x + shift
		}
		return d
	}
	rate := func(shift float64) float64 {
		rejected := 0
		for range reps {
			r, err := DieboldMariano(series(shift), zeros, 0)
			if err != nil {
				t.Fatal(err)
			}
			if r.P < 0.05 {
				rejected++
			}
		}
		return float64(rejected) / reps
	}
	// 1000 repetitions: a rate's standard error is about 0.7 points.
	r0 := rate(0)
	t.Logf("size %.1f %%", 100*r0)
	if r := r0; r < 0.025 || r > 0.08 {
		t.Errorf("equal accuracy: rejected %.1f %% at 5 %%", 100*r)
	}
	if r := rate(0.5 * sd); r < 0.9 {
		t.Errorf("a real difference: found in only %.1f %%", 100*r)
	}
}

func TestDMTerms(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{0, 1}, {1, 1}, {300, 18}, {592, 29}, {2964, 83}} {
		if got := DMTerms(tc.n); got != tc.want {
			t.Errorf("DMTerms(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestDMJSON(t *testing.T) {
	in := DM{N: 3, DF: 1, Mean: 1, Stat: math.NaN(), P: math.NaN()}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"n":3,"df":1,"mean":1,"stat":null,"p":null}` {
		t.Errorf("JSON %s", b)
	}
	var out DM
	if err := json.Unmarshal(b, &out); err != nil || out.N != 3 || out.DF != 1 || out.Mean != 1 || !math.IsNaN(out.Stat) || !math.IsNaN(out.P) {
		t.Errorf("round trip: %+v, %v", out, err)
	}
}
