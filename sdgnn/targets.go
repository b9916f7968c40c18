package sdgnn

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// Targets are the frozen teacher's embeddings of the snapshots of a part:
// H (the student's input) and Z (its target), snapshot-major (row s·n+i is
// node i of the part's s-th snapshot), plus the raw targets of the
// forecasts for evaluation. Truth is NaN where a node split does not score
// a node (Only): every loss and metric leaves those out, while H and Z, the
// teacher's outputs, stay there for every node.
type Targets struct {
	Range    snapshot.Range // the span of the snapshots held
	Deal     snapshot.Deal  // which of Range's snapshots are held (zero: all)
	Nodes    int
	Dim      int
	H, Z     *mat.Dense
	Truth    []float64 // raw next readings, row-major (snapshot, node, channel)
	Channels int
}

// Snapshots returns the number of snapshots held.
func (t *Targets) Snapshots() int { r, _ := t.H.Dims(); return r / t.Nodes }

// ComputeTargets runs the teacher's GRU and GCN over the snapshots of p,
// keeping the truths of every node (Only restricts them to p's nodes).
// Memory is (2·d + C) float64 per node and snapshot: 0.3 GB for the training
// split of PeMS04 with d = 16.
func ComputeTargets(ctx context.Context, m *teacher.Model, set *snapshot.Set, p snapshot.Part, a gcn.Propagator) (*Targets, error) {
	if m.GCN == nil {
		return nil, fmt.Errorf("targets: the teacher is a %s model without a GCN to distil", m.Config.Kind)
	}
	n, d := set.Nodes, m.Config.Hidden
	t := &Targets{Range: p.Range, Deal: p.Deal, Nodes: n, Dim: d, Channels: set.Channels,
		H: mat.NewDense(p.Len()*n, d, nil), Z: mat.NewDense(p.Len()*n, d, nil)}
	var b snapshot.Batch
	row := 0
	for _, idx := range snapshot.BatchesOf(p.Snapshots(), 64, nil) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := set.Fill(&b, idx); err != nil {
			return nil, err
		}
		h, z, err := m.Embed(b.X, a)
		if err != nil {
			return nil, err
		}
		rows, _ := h.Dims()
		t.H.Slice(row, row+rows, 0, d).(*mat.Dense).Copy(h)
		t.Z.Slice(row, row+rows, 0, d).(*mat.Dense).Copy(z)
		t.Truth = append(t.Truth, b.Raw.RawMatrix().Data...)
		row += rows
	}
	return t, nil
}

// Only returns targets sharing t's H and Z whose truths are those of part p
// (NaN for nodes p does not score); p's snapshots must be t's.
func (t *Targets) Only(p snapshot.Part) (*Targets, error) {
	if p.Range != t.Range || p.Deal != t.Deal {
		return nil, fmt.Errorf("targets of snapshots %v %+v cannot serve part %v %+v", t.Range, t.Deal, p.Range, p.Deal)
	}
	u := *t
	u.Truth = append([]float64(nil), t.Truth...)
	p.Hide(u.Truth, t.Nodes, t.Channels)
	return &u, nil
}

// PartTargets returns the targets of each part, running the teacher once
// per distinct set of snapshots: a node split's parts share every snapshot
// and differ only in the nodes they score.
func PartTargets(ctx context.Context, m *teacher.Model, set *snapshot.Set, a gcn.Propagator, parts ...snapshot.Part) ([]*Targets, error) {
	type key struct {
		r snapshot.Range
		d snapshot.Deal
	}
	done := map[key]*Targets{}
	out := make([]*Targets, len(parts))
	for i, p := range parts {
		t, ok := done[key{p.Range, p.Deal}]
		if !ok {
			var err error
			if t, err = ComputeTargets(ctx, m, set, p, a); err != nil {
				return nil, err
			}
			done[key{p.Range, p.Deal}] = t
		}
		var err error
		if out[i], err = t.Only(p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GatherSnapshots copies into dst, resized to len(idx)·n rows, the n-row
// blocks of src of the snapshots idx, in that order, and returns dst. It
// assembles a mini-batch from a matrix of n rows per snapshot (Targets.H,
// Targets.Z, a student's Ẑ); dst is reused when large enough.
func GatherSnapshots(dst, src *mat.Dense, n int, idx []int) *mat.Dense {
	_, d := src.Dims()
	dst = nn.Resize(dst, len(idx)*n, d)
	for b, si := range idx {
		dst.Slice(b*n, (b+1)*n, 0, d).(*mat.Dense).Copy(src.Slice(si*n, (si+1)*n, 0, d))
	}
	return dst
}
