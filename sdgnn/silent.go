package sdgnn

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/internal/portable"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// MinSilentRows is the fewest training rows in which a node was silent
// for its whole window that FitSilent fits the node's silent weights on;
// a node silent in fewer keeps its main weights as its silent ones.
const MinSilentRows = 20

// FitSilent sets s.Theta.Silent: for every node z, the non-negative
// weights over its receptive nodes (Θ's support, kept) that best
// reproduce the teacher's Z_z, by least squares over the rows of t in
// which z was silent for its whole window (silent[row], rows laid out
// (snapshot, node) as t's), φ fixed. t holds the teacher's embeddings of
// inputs in which some sensors were silenced: the silenced node's H is the
// embedding of an empty window and its Z what the teacher makes of it from
// the neighbours. A node with fewer than MinSilentRows such rows keeps its
// main weights. It returns the number of nodes fitted.
//
// The receptive set stays the one Phase Θ chose, at most the budget: a
// forecast of a silent node reads the windows a forecast of it reads
// anyway, only weighed otherwise.
func (s *Student) FitSilent(t *Targets, silent []bool) (int, error) {
	if s.Theta == nil {
		return 0, errors.New("fit silent weights: no Θ set")
	}
	n, d := t.Nodes, t.Dim
	rows, _ := t.H.Dims()
	if len(silent) != rows || rows%n != 0 || s.Theta.N() != n {
		return 0, fmt.Errorf("fit silent weights: %d marks for %d rows of %d nodes, Θ of %d", len(silent), rows, n, s.Theta.N())
	}
	type acc struct {
		g, c []float64
		rows int
	}
	accs := make([]acc, n)
	for z, ks := range s.Theta.Nodes {
		m := len(ks)
		accs[z] = acc{g: make([]float64, m*m), c: make([]float64, m)}
	}
	snaps := rows / n
	step := max(1, (1<<14)/n)
	phi := s.phiRows(t.H, n)
	var block *mat.Dense
	for s0 := 0; s0 < snaps; s0 += step {
		s1 := min(s0+step, snaps)
		block = phi(block, s0, s1)
		br := block.RawMatrix()
		row := func(i int) []float64 { return br.Data[i*br.Stride : i*br.Stride+d] }
		for sn := s0; sn < s1; sn++ {
			for z, ks := range s.Theta.Nodes {
				if !silent[sn*n+z] {
					continue
				}
				a := &accs[z]
				a.rows++
				zr := t.Z.RawRowView(sn*n + z)
				m := len(ks)
				for i, k := range ks {
					pk := row((sn-s0)*n + k)
					a.c[i] += portable.Dot(pk, zr)
					for j := i; j < m; j++ {
						v := portable.Dot(pk, row((sn-s0)*n+ks[j]))
						a.g[i*m+j] += v
						if j != i {
							a.g[j*m+i] += v
						}
					}
				}
			}
		}
	}
	out := make([][]float64, n)
	fitted := 0
	for z, a := range accs {
		out[z] = append([]float64(nil), s.Theta.Weights[z]...)
		if a.rows < MinSilentRows || len(a.c) == 0 {
			continue
		}
		w, err := NNLS(a.g, a.c, 0)
		if errors.Is(err, ErrNotConverged) {
			continue // the main weights, rather than a solution half found
		}
		if err != nil {
			return 0, fmt.Errorf("fit silent weights of node %d: %w", z, err)
		}
		out[z] = w
		fitted++
	}
	th := &Theta{Nodes: s.Theta.Nodes, Weights: s.Theta.Weights, Silent: out}
	if err := s.SetTheta(th); err != nil {
		return 0, err
	}
	return fitted, nil
}

// silentShare is the share of the sensors of every training snapshot
// silenced for the whole window to fit the silent weights on when the
// configuration has no training outages to take it from.
const silentShare = 0.1

// SilentSet returns set with, in every snapshot, a share of the sensors
// silenced for their whole window: the share of c's training outages (or
// 0.1 without them), drawn from c's seed. FitSilentWeights fits on the
// teacher's embeddings of it.
func (c Config) SilentSet(set *snapshot.Set) (*snapshot.Set, error) {
	o, err := snapshot.ParseOutage(c.Outage)
	if err != nil {
		return nil, fmt.Errorf("sdgnn config: %w", err)
	}
	share := silentShare
	if o.Enabled() {
		share = o.Share
	}
	whole := snapshot.Outage{Share: share, Lengths: []int{set.Window}, Seed: c.Seed}
	return set.Silenced(whole.Draw(1)), nil // round 1: not TrainSet's draws (round 0)
}

// Tuning of the silent weights against the ground truth (TuneSilent).
const (
	silentEpochs = 200
	silentLR     = 1e-2
)

// FitSilentWeights gives st silent weights: fitted to the teacher m's Z
// (Student.FitSilent) on its embeddings of the snapshots of train from
// cfg.SilentSet's inputs (the rows of nodes silent for their whole window
// there: the silenced ones and those the data leave empty), then tuned
// against the ground truth through the decoder dec (Student.TuneSilent),
// the pass kept chosen on the silent rows of val alike. It returns the
// number of nodes fitted and the validation MAE of the silent rows.
func FitSilentWeights(ctx context.Context, st *Student, dec *nn.MLP, m *teacher.Model, set *snapshot.Set, train, val snapshot.Part, a gcn.Propagator, cfg Config) (int, float64, error) {
	ss, err := cfg.SilentSet(set)
	if err != nil {
		return 0, 0, err
	}
	targets := func(p snapshot.Part) (*Targets, []bool, error) {
		t, err := ComputeTargets(ctx, m, ss, p, a)
		if err != nil {
			return nil, nil, fmt.Errorf("silent weights: %w", err)
		}
		if t, err = t.Only(p); err != nil {
			return nil, nil, fmt.Errorf("silent weights: %w", err)
		}
		missing, _, err := ss.Gaps(p.Snapshots())
		if err != nil {
			return nil, nil, fmt.Errorf("silent weights: %w", err)
		}
		silent := make([]bool, len(missing))
		for i, g := range missing {
			silent[i] = g >= set.Window
		}
		return t, silent, nil
	}
	tt, ts, err := targets(train)
	if err != nil {
		return 0, 0, err
	}
	n, err := st.FitSilent(tt, ts)
	if err != nil {
		return 0, 0, err
	}
	vt, vs, err := targets(val)
	if err != nil {
		return 0, 0, err
	}
	mae, err := st.TuneSilent(dec, set.Norm, tt, ts, vt, vs, silentEpochs, silentLR)
	if err != nil {
		return 0, 0, err
	}
	return n, mae, nil
}

// silentRows is the forecasts of the silent rows of targets: for every
// row in which a node was silent for its whole window, the node, its
// snapshot and its truths' place.
type silentRows struct {
	t     *Targets
	phi   *mat.Dense // φ(H) of every row of t
	rows  []int      // rows of t (snapshot·n + node) that are silent
	y, rw *mat.Dense // normalised and raw truths of those rows
}

// newSilentRows gathers the silent rows of t (silent marks per row) with
// φ(H) of every row computed by st.
func newSilentRows(st *Student, t *Targets, silent []bool, norm snapshot.Normalizer) *silentRows {
	sr := &silentRows{t: t, phi: st.PhiAll(t.H)}
	for r, s := range silent {
		if s {
			sr.rows = append(sr.rows, r)
		}
	}
	C := t.Channels
	sr.y, sr.rw = mat.NewDense(max(1, len(sr.rows)), C, nil), mat.NewDense(max(1, len(sr.rows)), C, nil)
	for i, r := range sr.rows {
		for c := range C {
			v := t.Truth[r*C+c]
			sr.rw.Set(i, c, v)
			sr.y.Set(i, c, norm.Normalize(v, c))
		}
	}
	return sr
}

// zhat returns Σ_i w[off[z]+i]·φ(H_k) of every silent row, k the i-th
// receptive node of the row's node z.
func (sr *silentRows) zhat(theta *Theta, w []float64, off []int) *mat.Dense {
	n, d := sr.t.Nodes, sr.t.Dim
	out := mat.NewDense(max(1, len(sr.rows)), d, nil)
	for i, r := range sr.rows {
		s, z := r/n, r%n
		dst := out.RawRowView(i)
		for j, k := range theta.Nodes[z] {
			wj := w[off[z]+j]
			for c, v := range sr.phi.RawRowView(s*n + k) {
				dst[c] += float64(wj * v) // rounded: the same sums everywhere
			}
		}
	}
	return out
}

// lossGrad returns the masked MAE (normalised scale) of dec's forecasts
// from the silent weights w (flat, node z's from off[z]) over sr's rows,
// and adds its gradient with respect to w to w.G; dec's parameters are
// left without gradients. dy is a buffer, kept between calls.
func (sr *silentRows) lossGrad(dec *nn.MLP, th *Theta, w *nn.Param, off []int, dy **mat.Dense) (float64, error) {
	z := sr.zhat(th, w.W.RawMatrix().Data, off)
	pred := dec.Forward(z)
	r, c := pred.Dims()
	*dy = nn.Resize(*dy, r, c)
	l, err := teacher.Loss(teacher.LossMAE, *dy, pred, sr.y, sr.rw)
	if err != nil {
		return 0, err
	}
	dz := dec.Backward(*dy)
	nn.ZeroGrad(dec.Params()) // the decoder stays as it is
	g, n := w.G.RawMatrix().Data, sr.t.Nodes
	for i, row := range sr.rows {
		sn, node := row/n, row%n
		dzi := dz.RawRowView(i)
		for j, k := range th.Nodes[node] {
			g[off[node]+j] += portable.Dot(dzi, sr.phi.RawRowView(sn*n+k))
		}
	}
	return l, nil
}

// TuneSilent fine-tunes s's silent weights (set by FitSilent) against the
// ground truth, as the decoder is fine-tuned on Ẑ: projected Adam (the
// weights kept ≥ 0) at lr on the masked MAE of dec's forecasts from
// Σ_k w_zk φ(H_k) over the silent rows of train (silent marks per row),
// for the given number of full passes, keeping the weights of the pass
// (the starting ones included) with the lowest MAE over the silent rows
// of val. Fitting the teacher's Z (FitSilent) bounds a silent sensor's
// forecast by the teacher's, whose own forecast of it may not be the best
// its neighbours allow. It returns the validation MAE of the weights kept.
func (s *Student) TuneSilent(dec *nn.MLP, norm snapshot.Normalizer, train *Targets, trainSilent []bool, val *Targets, valSilent []bool, epochs int, lr float64) (float64, error) {
	if s.Theta == nil || s.Theta.Silent == nil {
		return 0, errors.New("tune silent weights: no silent weights to start from (FitSilent)")
	}
	th := s.Theta
	off := make([]int, th.N()+1)
	for z, ks := range th.Nodes {
		off[z+1] = off[z] + len(ks)
	}
	w := nn.NewParam("silent", 1, max(1, off[th.N()]))
	for z, ws := range th.Silent {
		copy(w.W.RawMatrix().Data[off[z]:], ws)
	}
	tr, va := newSilentRows(s, train, trainSilent, norm), newSilentRows(s, val, valSilent, norm)
	if len(tr.rows) == 0 || len(va.rows) == 0 {
		return 0, fmt.Errorf("tune silent weights: %d training and %d validation rows of silent nodes", len(tr.rows), len(va.rows))
	}
	score := func() float64 {
		z := va.zhat(th, w.W.RawMatrix().Data, off)
		out := dec.Forward(z)
		acc := evaluation.Accumulator{}
		for i, v := range out.RawMatrix().Data {
			acc.Add(norm.Denormalize(v, i%train.Channels), va.rw.RawMatrix().Data[i])
		}
		return selectScore("mae", acc.Metrics())
	}
	best := score()
	keep := append([]float64(nil), w.W.RawMatrix().Data...)
	opt := nn.NewAdam(lr, 0)
	ps := []*nn.Param{w}
	var dy *mat.Dense
	for range epochs {
		nn.ZeroGrad(ps)
		if _, err := tr.lossGrad(dec, th, w, off, &dy); err != nil {
			return 0, err
		}
		if err := opt.Step(ps); err != nil {
			return 0, err
		}
		wd := w.W.RawMatrix().Data
		for i, v := range wd {
			wd[i] = max(v, 0)
		}
		if sc := score(); sc < best {
			best = sc
			copy(keep, wd)
		}
	}
	silent := make([][]float64, th.N())
	for z := range silent {
		silent[z] = append([]float64(nil), keep[off[z]:off[z+1]]...)
	}
	if err := s.SetTheta(&Theta{Nodes: th.Nodes, Weights: th.Weights, Silent: silent}); err != nil {
		return 0, err
	}
	return best, nil
}
