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

// TestCloneOfAssembledBundle clones bundles that NewBundle accepts but
// whose Config does not give φ's hidden width (left zero, as the stream
// package's examples leave it, or another than φ's): Clone used to refuse
// them, reading them back as a file whose metadata asks for another φ,
// although a State is to be given a Clone. The clone forecasts the same
// bits and shares no layer.
func TestCloneOfAssembledBundle(t *testing.T) {
	for _, phiHidden := range []int{0, 7} {
		b := tinyBundle(t)
		b.Meta.Config.PhiHidden = phiHidden
		c, err := b.Clone()
		if err != nil {
			t.Fatalf("Config.PhiHidden %d: Clone: %v", phiHidden, err)
		}
		if c.Phi == b.Phi || c.GRU == b.GRU || c.Dec == b.Dec || c.Theta == b.Theta {
			t.Fatal("the clone shares a layer")
		}
		if c.Meta.Version != b.Meta.Version || c.Meta.Config.PhiHidden != phiHidden {
			t.Errorf("clone's metadata: version %q, φ hidden %d; want %q, %d", c.Meta.Version, c.Meta.Config.PhiHidden, b.Meta.Version, phiHidden)
		}
		n, T, C, d := b.Meta.Nodes, b.Meta.Window, len(b.Meta.Norm.Mean), b.Meta.Hidden
		windows := make([]float64, n*T*C)
		for i := range windows {
			windows[i] = float64(i%5) + 0.25
		}
		embB, embC := make([]float64, n*d), make([]float64, n*d)
		if err := b.EmbedBatch(embB, windows, make([]int64, n)); err != nil {
			t.Fatal(err)
		}
		if err := c.EmbedBatch(embC, windows, make([]int64, n)); err != nil {
			t.Fatal(err)
		}
		for i := range embB {
			if embB[i] != embC[i] {
				t.Fatalf("embedding %d: clone %v, original %v", i, embC[i], embB[i])
			}
		}
		c.Phi.L1.W.W.Set(0, 0, 99)
		c.Theta.Weights[0][0] = 99
		if b.Phi.L1.W.W.At(0, 0) == 99 || b.Theta.Weights[0][0] == 99 {
			t.Error("changing the clone changed the original")
		}
	}
}
