package sdgnn

import (
	"context"
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/internal/portable"
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

// FitSilentWeights fits st's silent weights (Student.FitSilent) on the
// teacher m's embeddings of the snapshots of part p (the training part)
// from cfg.SilentSet's inputs: the rows of nodes silent for the whole
// window there, the silenced ones and those the data leave empty. It
// returns the number of nodes fitted.
func FitSilentWeights(ctx context.Context, st *Student, m *teacher.Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator, cfg Config) (int, error) {
	ss, err := cfg.SilentSet(set)
	if err != nil {
		return 0, err
	}
	t, err := ComputeTargets(ctx, m, ss, p, a)
	if err != nil {
		return 0, fmt.Errorf("silent weights: %w", err)
	}
	missing, _, err := ss.Gaps(p.Snapshots())
	if err != nil {
		return 0, fmt.Errorf("silent weights: %w", err)
	}
	silent := make([]bool, len(missing))
	for i, g := range missing {
		silent[i] = g >= set.Window
	}
	return st.FitSilent(t, silent)
}
