// Package evaluation computes masked forecast error statistics.
//
// All metrics are computed on the original (denormalised) scale of the data.
// A truth value of zero, NaN or ±Inf marks a missing sensor reading: such
// pairs are masked out of every statistic, because PeMS encodes a missing
// reading as 0 and a zero truth would also make the percentage error
// undefined.
//
// The package is pure computation: it performs no I/O other than writing a
// Report to a caller-supplied io.Writer, and it knows nothing about models.
package evaluation

import (
	"encoding/json"
	"fmt"
	"math"
)

// MaskEpsilon is the magnitude at or below which a truth value is treated as
// a missing reading. PeMS flow, occupancy and speed values are either exactly
// zero (missing) or far above this threshold, so the value only guards
// against round-off introduced by normalising and denormalising a zero.
const MaskEpsilon = 1e-6

// Masked reports whether a truth value is excluded from the metrics: it is
// NaN, ±Inf, or |truth| <= MaskEpsilon.
func Masked(truth float64) bool {
	return math.IsNaN(truth) || math.IsInf(truth, 0) || math.Abs(truth) <= MaskEpsilon
}

// Metrics are masked error statistics over a set of (prediction, truth)
// pairs.
//
// When Count is zero every error field is zero. When any unmasked pair had a
// non-finite prediction, MAE, RMSE and MAPE are NaN, so that a broken model
// can never look good; Metrics marshals NaN and ±Inf as JSON null.
type Metrics struct {
	MAE  float64 // mean absolute error
	RMSE float64 // root mean squared error
	MAPE float64 // mean absolute percentage error, in percent
	// Count is the number of pairs that were not masked, including pairs
	// whose prediction was not finite.
	Count int
	// MAPECount is the number of pairs in MAPE: Count less the truths below
	// the accumulator's MAPEFloor (and the non-finite predictions).
	MAPECount int
}

// metricsJSON is the wire form of Metrics.
type metricsJSON struct {
	MAE       jsonFloat `json:"mae"`
	RMSE      jsonFloat `json:"rmse"`
	MAPE      jsonFloat `json:"mape"`
	Count     int       `json:"count"`
	MAPECount int       `json:"mape_count"`
}

// MarshalJSON implements json.Marshaler. NaN and ±Inf, which JSON cannot
// represent, are written as null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	return json.Marshal(metricsJSON{
		MAE:       jsonFloat(m.MAE),
		RMSE:      jsonFloat(m.RMSE),
		MAPE:      jsonFloat(m.MAPE),
		Count:     m.Count,
		MAPECount: m.MAPECount,
	})
}

// UnmarshalJSON implements json.Unmarshaler. A null field is read as NaN, the
// inverse of MarshalJSON.
func (m *Metrics) UnmarshalJSON(data []byte) error {
	var v metricsJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("evaluation: decoding metrics: %w", err)
	}
	*m = Metrics{MAE: float64(v.MAE), RMSE: float64(v.RMSE), MAPE: float64(v.MAPE), Count: v.Count, MAPECount: v.MAPECount}
	return nil
}

// jsonFloat is a float64 that is encoded as null when it is not finite and
// decoded from null as NaN.
type jsonFloat float64

// MarshalJSON implements json.Marshaler.
func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *jsonFloat) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*f = jsonFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = jsonFloat(v)
	return nil
}

// kahan is a compensated (Neumaier) sum. It keeps the error of a sum of
// millions of terms independent of the number of terms, which matters when a
// whole test split is accumulated into one total.
type kahan struct {
	sum, c float64
}

func (k *kahan) add(x float64) {
	t := k.sum + x
	if math.Abs(k.sum) >= math.Abs(x) {
		k.c += (k.sum - t) + x
	} else {
		k.c += (x - t) + k.sum
	}
	k.sum = t
}

func (k *kahan) merge(o kahan) {
	k.add(o.sum)
	k.add(o.c)
}

// value returns the sum. A sum that overflowed is +Inf (or -Inf), not the
// NaN that adding its compensation, Inf − Inf, would give.
func (k kahan) value() float64 {
	if math.IsInf(k.sum, 0) {
		return k.sum
	}
	return k.sum + k.c
}

// Accumulator accumulates masked error sums one pair at a time, using
// compensated float64 summation. The zero value is an empty accumulator ready
// to use. Accumulators over disjoint parts of a data set can be combined with
// Merge, which gives the same result as accumulating all pairs in one.
type Accumulator struct {
	// MAPEFloor leaves truths with |truth| < MAPEFloor out of MAPE (but not
	// out of MAE and RMSE). Zero keeps every unmasked truth. Data with
	// near-zero readings that are not missing need it (SZ-taxi has speeds
	// just above MaskEpsilon; the few at or below it, down to 1e-17, are
	// masked as missing): a single truth of 0.01 would otherwise dominate
	// MAPE.
	MAPEFloor float64

	abs, sq, pct kahan
	n            int // unmasked pairs with a finite prediction
	pctN         int // of those, pairs counted in MAPE
	invalid      int // unmasked pairs with a non-finite prediction
}

// Add records one (prediction, truth) pair. The pair is skipped when
// Masked(truth). A NaN or ±Inf prediction against a valid truth is not
// skipped: it is counted, and it makes Metrics report NaN errors, so that a
// model emitting NaN cannot silently score well.
func (a *Accumulator) Add(pred, truth float64) {
	if Masked(truth) {
		return
	}
	if math.IsNaN(pred) || math.IsInf(pred, 0) {
		a.invalid++
		return
	}
	d := math.Abs(pred - truth)
	a.abs.add(d)
	a.sq.add(float64(d * d)) // rounded: a fused product would differ by machine (see nn)
	if math.Abs(truth) >= a.MAPEFloor {
		a.pct.add(d / math.Abs(truth))
		a.pctN++
	}
	a.n++
}

// Merge adds the pairs recorded in b to a: the same as recording them all
// in a where both have the same MAPEFloor. Each pair's part in MAPE was
// decided by the floor of the accumulator that recorded it, so merging
// accumulators of other floors mixes them; a's floor is kept.
func (a *Accumulator) Merge(b Accumulator) {
	a.abs.merge(b.abs)
	a.sq.merge(b.sq)
	a.pct.merge(b.pct)
	a.n += b.n
	a.pctN += b.pctN
	a.invalid += b.invalid
}

// Totals are the running sums behind an Accumulator's Metrics. Sums, unlike
// means, can be differenced: a monitoring system that scrapes them computes
// the error over any window as a ratio of increases (in Prometheus,
// increase(abs[1h]) / increase(count[1h]) is the last hour's MAE).
type Totals struct {
	AbsError     float64 // Σ |pred − truth| over the Count pairs
	SquaredError float64 // Σ (pred − truth)² over the Count pairs
	// RelError is Σ |pred − truth| / |truth| over the MAPECount pairs (a
	// fraction, not percent).
	RelError  float64
	Count     int // pairs with a finite prediction, not masked
	MAPECount int // of those, truths at or above the MAPE floor
	Invalid   int // pairs, not masked, whose prediction was not finite
}

// Totals returns the sums of the pairs recorded so far; unlike Metrics,
// Count leaves out the non-finite predictions, which Invalid counts.
func (a Accumulator) Totals() Totals {
	return Totals{AbsError: a.abs.value(), SquaredError: a.sq.value(), RelError: a.pct.value(),
		Count: a.n, MAPECount: a.pctN, Invalid: a.invalid}
}

// Metrics returns the statistics of the pairs recorded so far. With no
// unmasked pairs it returns the zero Metrics (Count 0); with any non-finite
// prediction it returns NaN errors, as documented on Add.
func (a Accumulator) Metrics() Metrics {
	count := a.n + a.invalid
	switch {
	case count == 0:
		return Metrics{}
	case a.invalid > 0:
		nan := math.NaN()
		return Metrics{MAE: nan, RMSE: nan, MAPE: nan, Count: count, MAPECount: a.pctN}
	}
	n := float64(a.n)
	mape := math.NaN()
	if a.pctN > 0 {
		mape = 100 * a.pct.value() / float64(a.pctN)
	}
	return Metrics{
		MAE:       a.abs.value() / n,
		RMSE:      math.Sqrt(a.sq.value() / n),
		MAPE:      mape,
		Count:     count,
		MAPECount: a.pctN,
	}
}

// Compute returns the masked metrics of pred against truth, which must have
// the same length.
func Compute(pred, truth []float64) (Metrics, error) {
	if len(pred) != len(truth) {
		return Metrics{}, fmt.Errorf("evaluation: %d predictions but %d truth values", len(pred), len(truth))
	}
	var a Accumulator
	for i, p := range pred {
		a.Add(p, truth[i])
	}
	return a.Metrics(), nil
}
