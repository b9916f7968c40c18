package teacher

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/golden"
)

// TestGoldenBits holds a GRU-GCN's forward pass (embeddings H, mixed
// embeddings Z, forecast), one and two graph convolutions, to the bits it
// has on amd64, so that the teacher the analyst's report compares with
// gives the same figures on every machine (arm64 checked under qemu in
// CI). The graph is a ring of 24 nodes with chords, the batch two
// snapshots; weights (seeded initialisation: uniform draws times exact or
// correctly rounded scales) and inputs (golden.Uniform) are drawn the same
// everywhere. Training is not part of the claim.
func TestGoldenBits(t *testing.T) {
	const nodes, snaps, T, C, d = 24, 2, 12, 3, 16
	g := &pems.Graph{Nodes: nodes}
	for i := range nodes {
		g.Edges = append(g.Edges, pems.Edge{From: min(i, (i+1)%nodes), To: max(i, (i+1)%nodes), Cost: 1})
		if i%5 == 0 && i+7 < nodes {
			g.Edges = append(g.Edges, pems.Edge{From: i, To: i + 7, Cost: 1})
		}
	}
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	adj := g.NormalizedAdjacency()
	got := map[string]string{}
	for _, layers := range []int{1, 2} {
		m, err := New(Config{Kind: KindGRUGCN, Window: T, Channels: C, Hidden: d, Seed: 7, Layers: layers})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(2026, 15))
		xs := make([]*mat.Dense, T)
		for i := range xs {
			xs[i] = mat.NewDense(snaps*nodes, C, nil)
			for j := range xs[i].RawMatrix().Data {
				xs[i].RawMatrix().Data[j] = golden.Uniform(rng)
			}
		}
		h, z, err := m.Embed(xs, adj)
		if err != nil {
			t.Fatal(err)
		}
		name := map[int]string{1: "layers=1", 2: "layers=2"}[layers]
		got[name+"/H"] = golden.Hash(h.RawMatrix().Data)
		got[name+"/Z"] = golden.Hash(z.RawMatrix().Data)
		out, err := m.Forward(xs, adj, nil)
		if err != nil {
			t.Fatal(err)
		}
		got[name+"/forecast"] = golden.Hash(out.RawMatrix().Data)
	}
	golden.Check(t, got)
}
