package baseline

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
)

// simEps smooths the row norms of SimilarityLoss, ‖x‖ ≈ √(‖x‖² + simEps²),
// so that a zero row has a defined (zero) similarity and a finite gradient.
const simEps = 1e-8

// SimilarityLoss returns NOSMOG's representation-similarity distillation
// loss between the student's rows zhat and the teacher's rows z (both m×d,
// one row per node of one snapshot):
//
//	L = (1/m²) Σ_ij (Ŝ_ij − S_ij)²,   Ŝ_ij = cos(ẑ_i, ẑ_j), S_ij = cos(z_i, z_j),
//
// the mean squared difference of the two cosine-similarity matrices, which
// asks the student to reproduce how the teacher relates nodes to each other
// and not only each node's embedding. Norms are smoothed as √(‖x‖² + 10⁻¹⁶).
//
// Two departures from NOSMOG's code (train_and_eval.py), which compares
// plain dot products, of the teacher's embeddings with those of the MLP's
// hidden layer passed through a learnt projection σ(W·h): the student's
// output Ẑ is compared directly, being already in the teacher's Z space, so
// no projection is learnt; and the similarities are cosines.
//
// When dzhat is not nil (m×d) it is set to ∂L/∂zhat: with u_i = ẑ_i/r_i,
// r_i = √(‖ẑ_i‖² + ε²), G = (2/m²)(Ŝ − S) and g_i = 2 (G U)_i,
//
//	∂L/∂ẑ_i = g_i / r_i − ẑ_i (ẑ_i·g_i) / r_i³.
//
// It returns an error if the shapes do not match.
func SimilarityLoss(zhat, z, dzhat *mat.Dense) (float64, error) {
	m, d := zhat.Dims()
	if zr, zc := z.Dims(); zr != m || zc != d {
		return 0, fmt.Errorf("similarity loss: student %dx%d, teacher %dx%d", m, d, zr, zc)
	}
	if dzhat != nil {
		if gr, gc := dzhat.Dims(); gr != m || gc != d {
			return 0, fmt.Errorf("similarity loss: gradient %dx%d for %dx%d rows", gr, gc, m, d)
		}
	}
	if m == 0 {
		return 0, nil
	}
	u, rs := unitRows(zhat)
	v, _ := unitRows(z)
	sHat := mat.NewDense(m, m, nil)
	sT := mat.NewDense(m, m, nil)
	nn.Gemm(false, true, 1, u, u, 0, sHat)
	nn.Gemm(false, true, 1, v, v, 0, sT)
	diff := sHat.RawMatrix().Data
	var loss float64
	for i, t := range sT.RawMatrix().Data {
		diff[i] -= t
		loss += float64(diff[i] * diff[i])
	}
	scale := 1 / float64(m*m)
	loss *= scale
	if dzhat == nil {
		return loss, nil
	}
	// g = ∂L/∂U = (G + Gᵀ) U = 2 G U with G = (2/m²)(Ŝ − S) symmetric.
	gU := mat.NewDense(m, d, nil)
	nn.Gemm(false, false, 4*scale, sHat, u, 0, gU) // sHat now holds Ŝ − S
	zr, gr, dr := zhat.RawMatrix(), gU.RawMatrix(), dzhat.RawMatrix()
	for i := 0; i < m; i++ {
		x := zr.Data[i*zr.Stride : i*zr.Stride+d]
		g := gr.Data[i*gr.Stride : i*gr.Stride+d]
		out := dr.Data[i*dr.Stride : i*dr.Stride+d]
		var xg float64
		for k := range x {
			xg += float64(x[k] * g[k])
		}
		r := rs[i]
		for k := range x {
			out[k] = g[k]/r - x[k]*xg/(r*r*r)
		}
	}
	return loss, nil
}

// unitRows returns the rows of x divided by their smoothed norms, and those
// norms.
func unitRows(x *mat.Dense) (*mat.Dense, []float64) {
	m, d := x.Dims()
	u := mat.NewDense(m, d, nil)
	rs := make([]float64, m)
	xr, ur := x.RawMatrix(), u.RawMatrix()
	for i := 0; i < m; i++ {
		row := xr.Data[i*xr.Stride : i*xr.Stride+d]
		var ss float64
		for _, v := range row {
			ss += float64(v * v)
		}
		r := math.Sqrt(ss + simEps*simEps)
		rs[i] = r
		for k, v := range row {
			ur.Data[i*ur.Stride+k] = v / r
		}
	}
	return u, rs
}
