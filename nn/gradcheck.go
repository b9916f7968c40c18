package nn

import (
	"fmt"
	"math"
)

// GradCheck compares the analytic gradients of ps against central finite
// differences of loss. grad must zero the gradients, run forward and backward
// and leave the analytic gradients in ps; loss must run forward only and return
// the scalar loss. Every entry of every parameter is checked when there are at
// most maxPerParam entries, otherwise an evenly spaced subset of maxPerParam.
// Each parameter's W and G must be contiguous and of one shape (as NewParam
// makes them), as entries are perturbed by their index in the raw data;
// GradCheck refuses others.
//
// It returns the largest relative error |a-n| / max(1e-5, |a|+|n|) (the floor keeps
// round-off on near-zero gradients from counting as an error), NaN if an
// entry's analytic or numeric gradient is NaN or infinite, and an error
// naming the first entry above tol or NaN.
func GradCheck(ps []*Param, grad func(), loss func() float64, h, tol float64, maxPerParam int) (float64, error) {
	for _, p := range ps {
		w, g := p.W.RawMatrix(), p.G.RawMatrix()
		if w.Stride != w.Cols || g.Stride != g.Cols || w.Rows != g.Rows || w.Cols != g.Cols {
			return 0, fmt.Errorf("gradcheck: %s: values %d×%d (stride %d) and gradients %d×%d (stride %d), want both contiguous and of one shape",
				p.Name, w.Rows, w.Cols, w.Stride, g.Rows, g.Cols, g.Stride)
		}
	}
	grad()
	var worst float64
	var firstErr error
	for _, p := range ps {
		w := p.W.RawMatrix().Data
		g := append([]float64(nil), p.G.RawMatrix().Data...)
		n := len(w)
		if maxPerParam > 0 && n > maxPerParam {
			n = maxPerParam
		}
		for i := range n {
			j := i * len(w) / n
			orig := w[j]
			w[j] = orig + h
			lp := loss()
			w[j] = orig - h
			lm := loss()
			w[j] = orig
			num := (lp - lm) / (2 * h)
			rel := math.Abs(g[j]-num) / math.Max(1e-5, math.Abs(g[j])+math.Abs(num))
			if rel > worst || math.IsNaN(rel) {
				worst = rel
			}
			// NaN (a NaN or infinite gradient or loss) fails too:
			// rel > tol would let it through.
			if !(rel <= tol) && firstErr == nil {
				firstErr = fmt.Errorf("gradient of %s[%d]: analytic %.10g, numeric %.10g (relative error %.3g > %.3g)", p.Name, j, g[j], num, rel, tol)
			}
		}
	}
	return worst, firstErr
}
