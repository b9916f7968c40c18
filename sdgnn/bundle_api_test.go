package sdgnn

import (
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestForecastBatchRefusesBadShapes gives ForecastBatch batches that are no
// whole snapshots of the bundle's window: each is an error naming what is
// wrong, not a panic in the Θ product or forecasts from another window.
func TestForecastBatchRefusesBadShapes(t *testing.T) {
	b := tinyBundle(t)
	n, T, in := b.Meta.Nodes, b.Meta.Window, b.Meta.Norm.Inputs()
	batch := func(steps, rows int) []*mat.Dense {
		xs := make([]*mat.Dense, steps)
		for i := range xs {
			xs[i] = mat.NewDense(rows, in, nil)
		}
		return xs
	}
	if _, err := b.ForecastBatch(batch(T, 2*n)); err != nil {
		t.Fatalf("two whole snapshots: %v", err)
	}
	for _, tc := range []struct {
		name string
		xs   []*mat.Dense
		want string
	}{
		{"rows not whole snapshots", batch(T, n+1), "nodes"},
		{"window too short", batch(T-1, n), "window"},
		{"window too long", batch(T+1, n), "window"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			_, err := b.ForecastBatch(tc.xs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ForecastBatch: %v, want an error about the %s", err, tc.want)
			}
		})
	}
}
