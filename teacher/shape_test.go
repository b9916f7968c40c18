package teacher

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gcn"
)

// TestForwardRefusesBadShapes gives Embed and Forward windows that are not
// whole snapshots of the model's window: each is an error naming what is
// wrong, not a panic in the graph product or forecasts from a window of
// another length.
func TestForwardRefusesBadShapes(t *testing.T) {
	const nodes, window = 4, 3
	m, err := New(Config{Kind: KindGRUGCN, Window: window, Channels: 1, Hidden: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := &pems.Graph{Nodes: nodes, Edges: []pems.Edge{{From: 0, To: 1, Cost: 1}, {From: 1, To: 2, Cost: 1}, {From: 2, To: 3, Cost: 1}}}
	batch := func(steps, rows int) []*mat.Dense {
		xs := make([]*mat.Dense, steps)
		for i := range xs {
			xs[i] = mat.NewDense(rows, 1, nil)
		}
		return xs
	}
	for _, a := range []gcn.Propagator{g.NormalizedAdjacency(), ringAdjacency(nodes)} {
		if _, err := m.Forward(batch(window, 2*nodes), a, nil); err != nil {
			t.Fatalf("two whole snapshots: %v", err)
		}
		for _, tc := range []struct {
			name string
			xs   []*mat.Dense
			want string
		}{
			{"rows not whole snapshots", batch(window, nodes+1), "nodes"},
			{"window too short", batch(window-1, nodes), "window"},
			{"window too long", batch(window+1, nodes), "window"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("panic: %v", r)
					}
				}()
				if _, err := m.Forward(tc.xs, a, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Forward: %v, want an error about the %s", err, tc.want)
				}
				if _, _, err := m.Embed(tc.xs, a); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Embed: %v, want an error about the %s", err, tc.want)
				}
			})
		}
	}
}
