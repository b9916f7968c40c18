package nn

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Adam is the Adam optimiser (Kingma & Ba) with L2 weight decay added to the
// gradient, as in PyTorch's torch.optim.Adam(weight_decay=...), which is what
// the reference GRU-GCN was trained with.
type Adam struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64

	// T is the number of steps taken; M and V the first and second moment
	// estimates, one per parameter, in the order of the slice given to Step.
	T    int
	M, V []*mat.Dense
}

// NewAdam returns Adam with the usual betas (0.9, 0.999) and eps 1e-8.
func NewAdam(lr, weightDecay float64) *Adam {
	return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: weightDecay}
}

// Step updates ps from their gradients. The same slice (same order) must be
// passed on every call. If the state does not match ps, Step returns an
// error and changes nothing.
func (a *Adam) Step(ps []*Param) error {
	if a.M == nil {
		for _, p := range ps {
			r, c := p.W.Dims()
			a.M = append(a.M, mat.NewDense(r, c, nil))
			a.V = append(a.V, mat.NewDense(r, c, nil))
		}
	}
	if len(a.M) != len(ps) || len(a.V) != len(ps) {
		return fmt.Errorf("adam: state for %d and %d params, got %d", len(a.M), len(a.V), len(ps))
	}
	// Every parameter is checked before any is updated, so that a
	// mismatch further down the list leaves no step half taken.
	for i, p := range ps {
		n := len(p.W.RawMatrix().Data)
		if g, m, v := len(p.G.RawMatrix().Data), len(a.M[i].RawMatrix().Data), len(a.V[i].RawMatrix().Data); g != n || m != n || v != n {
			return fmt.Errorf("adam: param %s has %d values and %d gradients, state has %d and %d", p.Name, n, g, m, v)
		}
	}
	a.T++
	bc1 := 1 - math.Pow(a.Beta1, float64(a.T))
	bc2 := 1 - math.Pow(a.Beta2, float64(a.T))
	for i, p := range ps {
		w, g := p.W.RawMatrix().Data, p.G.RawMatrix().Data
		m, v := a.M[i].RawMatrix().Data, a.V[i].RawMatrix().Data
		for j := range w {
			// Every product rounded before it is added, so that no
			// machine fuses one (see the package doc): the same step
			// everywhere.
			gj := g[j] + float64(a.WeightDecay*w[j])
			m[j] = float64(a.Beta1*m[j]) + float64((1-a.Beta1)*gj)
			v[j] = float64(a.Beta2*v[j]) + float64(float64((1-a.Beta2)*gj)*gj)
			w[j] -= a.LR * (m[j] / bc1) / (math.Sqrt(v[j]/bc2) + a.Eps)
		}
	}
	return nil
}

// ClipGradNorm scales the gradients of ps so that their joint L2 norm is at
// most max, and returns the norm before clipping. A max ≤ 0 disables clipping.
func ClipGradNorm(ps []*Param, max float64) float64 {
	var ss float64
	for _, p := range ps {
		for _, g := range p.G.RawMatrix().Data {
			ss += float64(g * g)
		}
	}
	norm := math.Sqrt(ss)
	if math.IsInf(ss, 1) {
		// The squares overflowed: finite gradients may still have a
		// finite norm (a component above 1.3e154), which the sum of the
		// squares scaled by the largest gives. Only here, so that every
		// other norm keeps its bits.
		var top float64
		for _, p := range ps {
			for _, g := range p.G.RawMatrix().Data {
				top = math.Max(top, math.Abs(g))
			}
		}
		if !math.IsInf(top, 1) && !math.IsNaN(top) {
			ss = 0
			for _, p := range ps {
				for _, g := range p.G.RawMatrix().Data {
					v := g / top
					ss += float64(v * v)
				}
			}
			norm = top * math.Sqrt(ss)
		}
	}
	if max > 0 && norm > max {
		s := max / norm
		for _, p := range ps {
			p.G.Scale(s, p.G)
		}
	}
	return norm
}
