package sdgnn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
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

// TestNewBundleRefusesPartsThatDoNotFit assembles bundles from layers that
// do not fit the metadata or each other: NewBundle refuses each with an
// error, where it used to return a bundle whose Forecast decoded another
// number of channels without a word, or panicked on a nil part.
func TestNewBundleRefusesPartsThatDoNotFit(t *testing.T) {
	ok := tinyBundle(t)
	meta, C, H := ok.Meta, len(ok.Meta.Norm.Mean), ok.Meta.Hidden
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		name string
		edit func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta)
		want string
	}{
		{"nil GRU", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) { *g = nil }, "GRU"},
		{"nil φ", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) { *phi = nil }, "φ"},
		{"nil decoder", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) { *dec = nil }, "decoder"},
		{"nil Θ", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) { *th = nil }, "theta"},
		{"GRU inputs", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*g = gru.New(C+1, H, rng)
		}, "GRU"},
		{"GRU width", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*g = gru.New(C, H+1, rng)
		}, "GRU"},
		{"φ input", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*phi = nn.NewMLP("phi", H+1, 3, H, rng)
		}, "φ"},
		{"φ output", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*phi = nn.NewMLP("phi", H, 3, H+1, rng)
		}, "φ"},
		{"decoder input", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*dec = nn.NewMLP("dec", H+1, 5, C, rng)
		}, "decoder"},
		{"decoder channels", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			*dec = nn.NewMLP("dec", H, 5, C+1, rng)
		}, "decoder"},
		{"no channels", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			m.Norm.Mean, m.Norm.Std, m.Channels = nil, nil, nil
		}, "channels"},
		{"window", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) { m.Window = 0 }, "window"},
		{"channel names", func(m *BundleMeta, g **gru.GRU, phi, dec **nn.MLP, th **Theta) {
			m.Channels = []string{"a"}
		}, "channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			m, g, phi, dec, th := meta, ok.GRU, ok.Phi, ok.Dec, ok.Theta
			tc.edit(&m, &g, &phi, &dec, &th)
			_, err := NewBundle(m, g, phi, th, dec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewBundle: %v, want an error naming the %s", err, tc.want)
			}
		})
	}
	if _, err := NewBundle(meta, ok.GRU, ok.Phi, ok.Theta, ok.Dec); err != nil {
		t.Fatalf("parts that fit: %v", err)
	}
}
