package evaluation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// SnapshotMAE returns the masked mean absolute error of each snapshot of
// forecasts laid out row-major (snapshot, value), width values per
// snapshot: the loss series that DieboldMariano compares. A snapshot whose
// truths are all masked (Masked) gets NaN, and so does one with a NaN
// forecast; DieboldMariano leaves both out of the test, so a model's
// broken forecasts do not count against it there (its Report's metrics
// show them).
func SnapshotMAE(pred, truth []float64, snapshots, width int) ([]float64, error) {
	if snapshots < 0 || width < 1 || len(pred) != snapshots*width || len(truth) != snapshots*width {
		return nil, fmt.Errorf("evaluation: %d predictions and %d truths for %d snapshots of %d values", len(pred), len(truth), snapshots, width)
	}
	out := make([]float64, snapshots)
	for s := range out {
		var sum float64
		n := 0
		for k := s * width; k < (s+1)*width; k++ {
			if Masked(truth[k]) {
				continue
			}
			sum += math.Abs(pred[k] - truth[k])
			n++
		}
		out[s] = math.NaN()
		if n > 0 {
			out[s] = sum / float64(n)
		}
	}
	return out, nil
}

// DM is the result of a Diebold–Mariano test of equal accuracy.
type DM struct {
	N    int     // pairs of losses compared (both finite)
	DF   int     // degrees of freedom: the cosine terms of the variance
	Mean float64 // mean loss difference, first forecast minus second
	// Stat is the statistic, negative when the first forecast's losses are
	// lower. It and P are NaN when the differences do not vary.
	Stat float64
	P    float64 // two-sided p-value, from Student's t with DF degrees of freedom
}

// dmJSON is the wire form of DM.
type dmJSON struct {
	N    int       `json:"n"`
	DF   int       `json:"df"`
	Mean jsonFloat `json:"mean"`
	Stat jsonFloat `json:"stat"`
	P    jsonFloat `json:"p"`
}

// MarshalJSON implements json.Marshaler, writing NaN as null.
func (d DM) MarshalJSON() ([]byte, error) {
	return json.Marshal(dmJSON{d.N, d.DF, jsonFloat(d.Mean), jsonFloat(d.Stat), jsonFloat(d.P)})
}

// UnmarshalJSON implements json.Unmarshaler, reading null as NaN.
func (d *DM) UnmarshalJSON(data []byte) error {
	var w dmJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*d = DM{w.N, w.DF, float64(w.Mean), float64(w.Stat), float64(w.P)}
	return nil
}

// DMTerms returns the default number of cosine terms for n loss
// differences: ⌈0.4 n^(2/3)⌉, Lazarus, Lewis, Stock and Watson's (2018)
// recommendation, at least 1.
func DMTerms(n int) int {
	return max(1, int(math.Ceil(0.4*portable.Pow(float64(n), 2.0/3))))
}

// ErrTooFewPairs is returned (wrapped) by DieboldMariano when the series
// have too few finite pairs for the test: a test period of a handful of
// snapshots.
var ErrTooFewPairs = errors.New("too few pairs for the test")

// DieboldMariano tests whether two forecasts of the same targets are
// equally accurate from their losses at each time, in time order (for
// example SnapshotMAE). Models trained on one seed are compared on the test
// period they share: the test accounts for the losses' variation over time,
// not for the variation between training runs, which a comparison over
// seeds measures.
//
// The differences d_t = a_t − b_t (pairs with a non-finite loss left out)
// are autocorrelated when errors cluster in time (rush hours, incidents),
// so their mean's variance is not the i.i.d. one. It is estimated with
// terms equal-weighted cosine terms (EWC: Ω = (1/B) Σ_{j=1..B} Λ_j², Λ_j =
// √(2/N) Σ_t d_t cos(πj(t−½)/N)) and the statistic √N·d̄/√Ω compared with
// Student's t with B degrees of freedom: fixed-smoothing inference, which
// keeps the test's size near the nominal level in samples of a few hundred
// where kernel (Newey–West) variances make it reject too often (Coroneo and
// Iacone 2020, Lazarus et al. 2018). terms 0 chooses DMTerms(N).
//
// N, the mean, the statistic and the p-value are the same bits on every
// machine (portable's Cos, Pow and StudentsTSurvival, products rounded;
// TestGoldenBits).
func DieboldMariano(a, b []float64, terms int) (DM, error) {
	if len(a) != len(b) {
		return DM{}, fmt.Errorf("diebold-mariano: %d losses against %d", len(a), len(b))
	}
	if terms < 0 {
		return DM{}, fmt.Errorf("diebold-mariano: %d cosine terms", terms)
	}
	d := make([]float64, 0, len(a))
	for i := range a {
		if x := a[i] - b[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			d = append(d, x)
		}
	}
	n := len(d)
	if terms == 0 {
		terms = DMTerms(n)
	}
	if n < 2 || terms >= n {
		return DM{}, fmt.Errorf("diebold-mariano: %d finite pairs, too few for %d cosine terms: %w", n, terms, ErrTooFewPairs)
	}
	// Differences that do not vary have their value as mean and no
	// variance, exactly: the sum over n may miss it by an ulp, and the
	// deviations of rounding would make a variance of 1e-66 and a
	// statistic of 1e31.
	if !slices.ContainsFunc(d, func(x float64) bool { return x != d[0] }) {
		return DM{N: n, DF: terms, Mean: d[0], Stat: math.NaN(), P: math.NaN()}, nil
	}
	var mean float64
	for _, x := range d {
		mean += x
	}
	mean /= float64(n)
	var omega float64
	for j := 1; j <= terms; j++ {
		var l float64
		for t, x := range d {
			l += float64((x - mean) * portable.Cos(math.Pi*float64(j)*(float64(t)+0.5)/float64(n)))
		}
		l *= math.Sqrt(2 / float64(n))
		omega += float64(l * l)
	}
	omega /= float64(terms)
	out := DM{N: n, DF: terms, Mean: mean, Stat: math.NaN(), P: math.NaN()}
	if omega > 0 {
		out.Stat = math.Sqrt(float64(n)) * mean / math.Sqrt(omega)
		out.P = 2 * portable.StudentsTSurvival(math.Abs(out.Stat), float64(terms))
	}
	return out, nil
}
