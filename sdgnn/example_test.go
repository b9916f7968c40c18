package sdgnn_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// ExampleScoreZHat scores a student whose every node reads itself alone
// against targets that are its own Ẑ plus 0.1 in every entry, without
// holding its Ẑ of every snapshot: ‖Ẑ − Z‖² is then 0.01 per entry.
func ExampleScoreZHat() {
	const n, snaps, d = 3, 100, 2
	rng := rand.New(rand.NewPCG(1, 2))
	st := sdgnn.NewStudent(n, d, 4, rng)
	self := &sdgnn.Theta{Nodes: [][]int{{0}, {1}, {2}}, Weights: [][]float64{{1}, {1}, {1}}}
	if err := st.SetTheta(self); err != nil {
		panic(err)
	}
	h := mat.NewDense(snaps*n, d, nil)
	for i := range h.RawMatrix().Data {
		h.RawMatrix().Data[i] = rng.NormFloat64()
	}
	z := st.ZHatAll(h)
	for i := range z.RawMatrix().Data {
		z.RawMatrix().Data[i] += 0.1
	}
	t := &sdgnn.Targets{Nodes: n, Dim: d, H: h, Z: z}
	sq, _, _ := sdgnn.ScoreZHat(st.EachZHat, nil, snapshot.Normalizer{}, t, 0)
	fmt.Printf("‖Ẑ − Z‖² per entry: %.4f\n", sq/float64(snaps*n*d))
	// Output: ‖Ẑ − Z‖² per entry: 0.0100
}

// The online path: a forecast for node z reads the windows of its
// receptive nodes only. Each receptive node's window is embedded (Embed),
// and Forecast weighs the embeddings by θ and decodes them; the windows of
// the other nodes are never asked for.
func ExampleBundle_Forecast() {
	const nodes, channels, window, hidden = 4, 1, 3, 2
	rng := rand.New(rand.NewPCG(1, 2))
	// A normaliser fitted on a few readings (nodes × channels per step).
	readings := []float64{10, 12, 9, 11, 12, 14, 10, 12, 11, 13, 9, 10}
	norm, err := snapshot.FitNormalizer(readings, nodes, channels, len(readings)/nodes)
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := sdgnn.DefaultConfig()
	theta := &sdgnn.Theta{ // sorted receptive nodes and non-negative weights
		Nodes:   [][]int{{0, 1}, {1}, {0, 2, 3}, {3}},
		Weights: [][]float64{{0.6, 0.4}, {1}, {0.2, 0.5, 0.3}, {1}},
	}
	meta := sdgnn.BundleMeta{Dataset: "toy", Nodes: nodes, Channels: []string{"speed"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	b, err := sdgnn.NewBundle(meta, gru.New(norm.Inputs(), hidden, rng),
		nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 4, channels, rng))
	if err != nil {
		fmt.Println(err)
		return
	}
	windows := map[int][]float64{ // last three readings of each node, oldest first
		0: {10, 11, 12}, 1: {12, 12, 13}, 2: {9, 10, 11}, 3: {11, 12, 10},
	}
	forecast := func(z int) float64 {
		nodes, _ := b.Receptive(z)
		emb := make([][]float64, len(nodes))
		for i, k := range nodes {
			emb[i] = make([]float64, hidden)
			if err := b.Embed(emb[i], windows[k], 0); err != nil {
				panic(err)
			}
		}
		out := make([]float64, channels)
		if err := b.Forecast(out, z, emb); err != nil {
			panic(err)
		}
		return out[0]
	}
	recv, _ := b.Receptive(2)
	fmt.Println("node 2 reads nodes", recv)
	before := forecast(2)
	windows[1] = []float64{50, 60, 70} // node 1 is not among them
	fmt.Println("node 2's forecast unchanged by node 1:", forecast(2) == before)
	windows[3] = []float64{50, 60, 70} // node 3 is
	fmt.Println("node 2's forecast unchanged by node 3:", forecast(2) == before)
	// Output:
	// node 2 reads nodes [0 2 3]
	// node 2's forecast unchanged by node 1: true
	// node 2's forecast unchanged by node 3: false
}

// Candidates lists, for each node, the nodes its receptive field may be
// chosen from: itself and its K1-hop neighbours (here on a path of five
// nodes), plus sampled nodes of K2 further hops when K2 > 0.
func ExampleCandidates() {
	path := [][]int{{1}, {0, 2}, {1, 3}, {2, 4}, {3}}
	cands, err := sdgnn.Candidates(path, sdgnn.CandidateConfig{K1: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cands)
	cands, _ = sdgnn.Candidates(path, sdgnn.CandidateConfig{K1: 1, K2: 1, Sample: 1, Seed: 7})
	fmt.Println("node 0 with one sampled further hop:", cands[0])
	// Output:
	// [[0 1] [0 1 2] [1 2 3] [2 3 4] [3 4]]
	// node 0 with one sampled further hop: [0 1 2]
}

// A bundle is one file: Save writes it (with a version, the digest of its
// parameters where none is given) and LoadBundle reads it back, checked,
// to forecast the same.
func ExampleLoadBundle() {
	const nodes, window, hidden = 2, 2, 2
	rng := rand.New(rand.NewPCG(3, 4))
	norm := snapshot.Normalizer{Mean: []float64{10}, Std: []float64{2}}
	cfg := sdgnn.DefaultConfig()
	theta := &sdgnn.Theta{Nodes: [][]int{{0, 1}, {1}}, Weights: [][]float64{{0.5, 0.5}, {1}}}
	meta := sdgnn.BundleMeta{Dataset: "toy", Nodes: nodes, Channels: []string{"speed"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	b, err := sdgnn.NewBundle(meta, gru.New(norm.Inputs(), hidden, rng),
		nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 4, 1, rng))
	if err != nil {
		fmt.Println(err)
		return
	}
	dir, err := os.MkdirTemp("", "bundle")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "toy.sdgnn")
	if err := b.Save(path); err != nil {
		fmt.Println(err)
		return
	}
	loaded, err := sdgnn.LoadBundle(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	forecast := func(b *sdgnn.Bundle) float64 {
		ks, _ := b.Receptive(0)
		emb := make([][]float64, len(ks))
		for i := range ks {
			emb[i] = make([]float64, hidden)
			if err := b.Embed(emb[i], []float64{9, 11}, 0); err != nil {
				panic(err)
			}
		}
		out := make([]float64, 1)
		if err := b.Forecast(out, 0, emb); err != nil {
			panic(err)
		}
		return out[0]
	}
	fmt.Println("dataset:", loaded.Meta.Dataset, "nodes:", loaded.Meta.Nodes, "window:", loaded.Meta.Window)
	fmt.Println("versioned:", strings.HasPrefix(loaded.Meta.Version, "sdgnn-toy-"), loaded.Meta.Version == b.Meta.Version)
	fmt.Println("same forecast:", forecast(loaded) == forecast(b))
	// Output:
	// dataset: toy nodes: 2 window: 2
	// versioned: true true
	// same forecast: true
}
