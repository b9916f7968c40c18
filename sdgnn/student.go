package sdgnn

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Student is SDGNN's replacement of the GCN: Ẑ = Θ·φ(H).
type Student struct {
	Phi   *nn.MLP
	Theta *Theta

	n            int
	theta, thetT *pems.CSR
	phiOut, zhat *mat.Dense
	dphi         *mat.Dense
}

// NewStudent returns a student over n nodes whose φ is a d→hidden→d MLP
// with softplus, initialised from rng, and whose Θ is empty until SetTheta.
func NewStudent(n, d, hidden int, rng *rand.Rand) *Student {
	return &Student{Phi: nn.NewMLP("phi", d, hidden, d, rng), n: n}
}

// SetTheta installs new weights.
func (s *Student) SetTheta(t *Theta) error {
	if err := t.Validate(s.n); err != nil {
		return err
	}
	s.Theta = t
	s.theta, s.thetT = t.CSR()
	return nil
}

// Forward returns Ẑ (owned by s) for snapshot-major embeddings h (B·n × d).
func (s *Student) Forward(h *mat.Dense) (*mat.Dense, error) {
	if s.theta == nil {
		return nil, fmt.Errorf("student forward: no Θ set")
	}
	r, d := h.Dims()
	if r%s.n != 0 {
		return nil, fmt.Errorf("student forward: %d rows are not whole snapshots of %d nodes", r, s.n)
	}
	s.phiOut = s.Phi.Forward(h)
	s.zhat = nn.Resize(s.zhat, r, d)
	s.theta.MulBlocks(s.zhat, s.phiOut)
	return s.zhat, nil
}

// Backward accumulates φ's gradients for dẑ, the gradient with respect to
// the output of the last Forward. Θ is fixed in Phase φ.
func (s *Student) Backward(dzhat *mat.Dense) {
	r, d := dzhat.Dims()
	s.dphi = nn.Resize(s.dphi, r, d)
	s.thetT.MulBlocks(s.dphi, dzhat)
	s.Phi.Backward(s.dphi)
}

// PhiAll returns φ(H) for every row of h, in batches; a new matrix.
func (s *Student) PhiAll(h *mat.Dense) *mat.Dense {
	r, d := h.Dims()
	out := mat.NewDense(r, d, nil)
	s.phiInto(out, h)
	return out
}

// phiInto writes φ(H) for every row of h into out (of h's shape), in
// batches of rows that bound φ's own buffers.
func (s *Student) phiInto(out, h *mat.Dense) {
	r, d := h.Dims()
	const rows = 1 << 14
	for lo := 0; lo < r; lo += rows {
		hi := min(lo+rows, r)
		out.Slice(lo, hi, 0, d).(*mat.Dense).Copy(s.Phi.Forward(h.Slice(lo, hi, 0, d).(*mat.Dense)))
	}
}

// phiRows returns the phiRows of φ(h) for h's snapshots of n nodes,
// computing each block when asked.
func (s *Student) phiRows(h *mat.Dense, n int) phiRows {
	_, d := h.Dims()
	return func(dst *mat.Dense, s0, s1 int) *mat.Dense {
		dst = nn.Resize(dst, (s1-s0)*n, d)
		s.phiInto(dst, h.Slice(s0*n, s1*n, 0, d).(*mat.Dense))
		return dst
	}
}

// ZHatAll returns Θ·φ(H) for every snapshot of h; a new matrix.
func (s *Student) ZHatAll(h *mat.Dense) *mat.Dense {
	r, d := h.Dims()
	out := mat.NewDense(r, d, nil)
	s.EachZHat(h, func(lo, hi int, zhat *mat.Dense) {
		out.Slice(lo, hi, 0, d).(*mat.Dense).Copy(zhat)
	})
	return out
}

// EachZHat calls f with Θ·φ(H) of successive blocks of whole snapshots of h,
// in order: zhat holds rows [lo, hi) of what ZHatAll returns, in a buffer
// that the next call overwrites. Validation scores a student this way
// without holding φ(H) or Ẑ of every snapshot (0.67 GB each for PeMS04's
// snapshots at d = 16).
func (s *Student) EachZHat(h *mat.Dense, f func(lo, hi int, zhat *mat.Dense)) {
	r, d := h.Dims()
	n := s.theta.N
	step := max(1, (1<<14)/n) * n
	var phi, zhat *mat.Dense
	for lo := 0; lo < r; lo += step {
		hi := min(lo+step, r)
		phi, zhat = nn.Resize(phi, hi-lo, d), nn.Resize(zhat, hi-lo, d)
		s.phiInto(phi, h.Slice(lo, hi, 0, d).(*mat.Dense))
		s.theta.MulBlocks(zhat, phi)
		f(lo, hi, zhat)
	}
}

// PhasePhi takes one pass of Adam steps over the snapshots of the targets in
// mini-batches of batch snapshots, minimising the mean squared error
// ‖Θ·φ(H) − Z‖² per row, with Θ fixed. It returns the mean batch loss.
func (s *Student) PhasePhi(t *Targets, opt *nn.Adam, batch int, rng *rand.Rand) (float64, error) {
	if s.theta == nil {
		return 0, fmt.Errorf("phase phi: no Θ set")
	}
	n, d := t.Nodes, t.Dim
	ps := s.Phi.Params()
	var sum float64
	batches := snapshot.Batches(snapshot.Range{Start: 0, End: t.Snapshots()}, batch, rng)
	var h, z, dz *mat.Dense
	for _, idx := range batches {
		rows := len(idx) * n
		h, z, dz = GatherSnapshots(h, t.H, n, idx), GatherSnapshots(z, t.Z, n, idx), nn.Resize(dz, rows, d)
		zhat, err := s.Forward(h)
		if err != nil {
			return 0, err
		}
		zr, hr, dr := z.RawMatrix().Data, zhat.RawMatrix().Data, dz.RawMatrix().Data
		var loss float64
		inv := 1 / float64(rows)
		for i := range zr {
			e := hr[i] - zr[i]
			loss += float64(e * e)
			dr[i] = 2 * e * inv
		}
		nn.ZeroGrad(ps)
		s.Backward(dz)
		if err := opt.Step(ps); err != nil {
			return 0, err
		}
		sum += float64(loss * inv)
	}
	return sum / float64(max(1, len(batches))), nil
}
