package sdgnn

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestMaskedBundleOnlineMatchesSilencedBatch checks that a bundle whose
// inputs carry missing marks forecasts online (Embed of each receptive
// node's window, zeros where a sensor fell silent, then Forecast) exactly
// what the batched path forecasts from a silenced Set: the one input
// definition (snapshot.Normalizer.StepInputs) on both paths.
func TestMaskedBundleOnlineMatchesSilencedBatch(t *testing.T) {
	const nodes, channels, window, hidden, steps = 4, 2, 3, 4, 12
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]float64, steps*nodes*channels)
	for i := range data {
		data[i] = 1 + rng.Float64()
		if i%9 == 2 {
			data[i] = 0 // a reading missing in the data
		}
	}
	norm, err := snapshot.FitNormalizer(data, nodes, channels, steps)
	if err != nil {
		t.Fatal(err)
	}
	norm.Mask = true
	cfg := DefaultConfig()
	cfg.PhiHidden = 3
	theta := &Theta{Nodes: [][]int{{0, 1}, {1}, {0, 2, 3}, {3}}, Weights: [][]float64{{0.5, 0.25}, {1}, {0.1, 0.2, 0.3}, {2}}}
	meta := BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"a", "b"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	b, err := NewBundle(meta, gru.New(norm.Inputs(), hidden, rng), nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 5, channels, rng))
	if err != nil {
		t.Fatal(err)
	}
	set, err := snapshot.NewSet(data, steps, nodes, channels, window, norm)
	if err != nil {
		t.Fatal(err)
	}
	silence := func(s, z int) int { return (s + z) % (window + 2) }
	sil := set.Silenced(silence)
	whole := snapshot.Part{Range: snapshot.Range{Start: 0, End: set.Len()}}
	batched, _, err := Predict(context.Background(), b, sil, whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	clean, _, err := Predict(context.Background(), b, set, whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	emb := make([][]float64, nodes)
	out := make([]float64, channels)
	for s := 0; s < set.Len(); s++ {
		for k := 0; k < nodes; k++ {
			win := make([]float64, window*channels)
			for j := 0; j < window; j++ {
				if j >= window-silence(s, k) {
					continue // silenced: the service holds no reading, a zero
				}
				for c := 0; c < channels; c++ {
					win[j*channels+c] = set.RawAt(s+j, k, c)
				}
			}
			emb[k] = make([]float64, hidden)
			if err := b.Embed(emb[k], win, 0); err != nil {
				t.Fatal(err)
			}
		}
		for z := 0; z < nodes; z++ {
			ks, _ := b.Receptive(z)
			in := make([][]float64, len(ks))
			for i, k := range ks {
				in[i] = emb[k]
			}
			if err := b.Forecast(out, z, in); err != nil {
				t.Fatal(err)
			}
			for c, v := range out {
				at := (s*nodes+z)*channels + c
				if math.Float64bits(v) != math.Float64bits(batched[at]) {
					t.Fatalf("snapshot %d node %d channel %d: online %v, batched %v", s, z, c, v, batched[at])
				}
				differ = differ || v != clean[at]
			}
		}
	}
	if !differ {
		t.Error("silencing changed no forecast")
	}
	if _, _, err := Predict(context.Background(), b, set.Masked(false), whole, 3); err == nil || !strings.Contains(err.Error(), "missing marks") {
		t.Errorf("data without marks for a bundle that reads them: %v", err)
	}
}
