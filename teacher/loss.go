package teacher

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Loss names.
const (
	LossMAE = "mae" // mean absolute error: what the forecasts are judged by
	LossMSE = "mse" // mean squared error
)

// Loss returns the masked loss of the normalised prediction pred against the
// normalised target y, and writes its gradient with respect to pred into dy.
// Entries whose raw target is missing (0 or not finite) are left out of both;
// the loss is the mean over the rest (0 with a zero gradient when none is
// left).
func Loss(kind string, dy, pred, y, raw *mat.Dense) (float64, error) {
	r, c := pred.Dims()
	for _, m := range []*mat.Dense{dy, y, raw} {
		if mr, mc := m.Dims(); mr != r || mc != c {
			return 0, fmt.Errorf("loss: shapes %dx%d and %dx%d differ", r, c, mr, mc)
		}
	}
	if kind != LossMAE && kind != LossMSE {
		return 0, fmt.Errorf("loss %q: want %q or %q", kind, LossMAE, LossMSE)
	}
	p, t, w, d := pred.RawMatrix().Data, y.RawMatrix().Data, raw.RawMatrix().Data, dy.RawMatrix().Data
	var sum float64
	var n int
	for i := range p {
		if w[i] == 0 || math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			continue
		}
		n++
		e := p[i] - t[i]
		if kind == LossMAE {
			sum += math.Abs(e)
		} else {
			sum += float64(e * e) // rounded, so that no machine fuses it
		}
	}
	if n == 0 {
		dy.Zero()
		return 0, nil
	}
	inv := 1 / float64(n)
	for i := range p {
		if w[i] == 0 || math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			d[i] = 0
			continue
		}
		e := p[i] - t[i]
		switch {
		case kind == LossMSE:
			d[i] = 2 * e * inv
		case e > 0:
			d[i] = inv
		case e < 0:
			d[i] = -inv
		default:
			d[i] = 0
		}
	}
	return sum * inv, nil
}
