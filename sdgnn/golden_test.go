package sdgnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/golden"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestGoldenBits holds the online path of a bundle, the one the
// forecaster serves (EmbedBatch, then ForecastMany), to the bits it has on
// amd64, for both preprocessings (z-scores; min-max with calendar inputs),
// so that a forecaster on another machine (arm64, checked under qemu in
// CI) emits the same forecasts bit for bit. The bundle has PeMS's shape
// (3 channels, window 12, hidden 16, up to 6 receptive nodes) on 20 nodes;
// everything in it is drawn the same on every machine (golden.Uniform).
// The offline path (ForecastBatch: Θ by gonum's axpy) and training are
// not part of the claim.
func TestGoldenBits(t *testing.T) {
	const nodes, C, T, d, rows = 20, 3, 12, 16, 37
	got := map[string]string{}
	for _, prep := range []string{"standard", "paper"} {
		rng := rand.New(rand.NewPCG(2026, 14))
		norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{210, 0.0625, 61.5}, Std: []float64{96, 0.03125, 7.25}}
		if prep == "paper" {
			norm = snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 0, 3}, Std: []float64{900, 0.75, 80},
				Time: &snapshot.TimeInputs{OriginMs: 1514764800000, StepMs: 300000, MinuteMax: 1435, WeekdayMax: 6}}
		}
		theta := &Theta{Nodes: make([][]int, nodes), Weights: make([][]float64, nodes)}
		for z := range nodes {
			for k := z; k < nodes && len(theta.Nodes[z]) < 1+z%6; k += 1 + z%3 {
				theta.Nodes[z] = append(theta.Nodes[z], k)
				theta.Weights[z] = append(theta.Weights[z], math.Abs(golden.Uniform(rng))/4)
			}
		}
		cfg := DefaultConfig()
		meta := BundleMeta{Dataset: "golden", Nodes: nodes, Channels: []string{"flow", "occupancy", "speed"}, Window: T, Hidden: d, Norm: norm, Config: cfg}
		b, err := NewBundle(meta, gru.New(norm.Inputs(), d, rng), nn.NewMLP("phi", d, cfg.PhiHidden, d, rng), theta, nn.NewMLP("dec", d, d, C, rng))
		if err != nil {
			t.Fatal(err)
		}
		// Windows of readings on their own scale, a few missing (0).
		windows := make([]float64, rows*T*C)
		for i := range windows {
			if u := golden.Uniform(rng); u > 3.5 {
				windows[i] = 0
			} else {
				windows[i] = (u + 4) * 64 // [0, 512)
			}
		}
		ends := make([]int64, rows)
		for i := range ends {
			ends[i] = 1514764800000 + int64(i*37+T)*300000
		}
		emb := make([]float64, rows*d)
		if err := b.EmbedBatch(emb, windows, ends); err != nil {
			t.Fatal(err)
		}
		got[prep+"/EmbedBatch"] = golden.Hash(emb)
		// Every node, its receptive nodes' embeddings taken from the rows.
		var zs []int
		var es [][]float64
		for z := range nodes {
			zs = append(zs, z)
			ks, _ := b.Receptive(z)
			for i := range ks {
				r := (z*7 + i*3) % rows
				es = append(es, emb[r*d:(r+1)*d])
			}
		}
		out := make([]float64, nodes*C)
		if err := b.ForecastMany(out, zs, es); err != nil {
			t.Fatal(err)
		}
		got[prep+"/ForecastMany"] = golden.Hash(out)
	}
	golden.Check(t, got)
}
