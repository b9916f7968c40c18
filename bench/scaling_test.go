package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/stream"
)

// tiled returns copies side by side of the road graph g, copy c's node i
// being c·n+i, each copy joined to the next by cross links between cross
// random pairs of nodes: a road-like graph of any size with the real
// graph's local structure.
func tiled(g *pems.Graph, copies, cross int, rng *rand.Rand) *pems.Graph {
	n := g.Nodes
	t := &pems.Graph{Nodes: n * copies}
	for c := 0; c < copies; c++ {
		for _, e := range g.Edges {
			t.Edges = append(t.Edges, pems.Edge{From: c*n + e.From, To: c*n + e.To, Cost: e.Cost})
		}
		if c+1 < copies {
			seen := map[[2]int]bool{}
			for k := 0; k < cross; k++ {
				p := [2]int{c*n + rng.IntN(n), (c+1)*n + rng.IntN(n)}
				if !seen[p] {
					seen[p] = true
					t.Edges = append(t.Edges, pems.Edge{From: p[0], To: p[1], Cost: 1})
				}
			}
		}
	}
	slices.SortFunc(t.Edges, func(a, b pems.Edge) int {
		if a.From != b.From {
			return a.From - b.From
		}
		return a.To - b.To
	})
	return t
}

// BenchmarkScalingWholeGraph is GRU-GCN over the whole tiled graph (see
// BenchmarkScaling); node-µs is the cost per node, ns/op the cost of one
// forecast of any node when the whole graph is run for it.
//
//	go test -run xxx -bench ScalingWholeGraph -cpu 1 -benchtime 3x ./bench
func BenchmarkScalingWholeGraph(b *testing.B) {
	g := pemsGraph(b)
	for _, n := range []int{1_000, 10_000, 100_000} {
		s := build(b, tiled(g, (n+g.Nodes-1)/g.Nodes, 5, rand.New(rand.NewPCG(uint64(n), 1))), 0, uint64(n))
		b.Run(fmt.Sprintf("n=%d/gru-gcn-graph", s.n), func(b *testing.B) { benchWholeGraph(b, s) })

	}
}

// pemsGraph reads the real PeMS04 road graph.
func pemsGraph(b testing.TB) *pems.Graph {
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		if os.Getenv("CI") != "" {
			b.Fatal(err)
		}
		b.Skip(err)
	}
	info, err := pems.Lookup("pems04")
	if err != nil {
		b.Fatal(err)
	}
	g, err := pems.ReadDistanceCSV(filepath.Join(dir, filepath.FromSlash(info.GraphFile)), info.Nodes)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// BenchmarkScaling measures, on tiled copies of the real PeMS04 graph (5
// cross links between neighbouring copies) from 10³ to 10⁵ nodes (10⁶ with
// SDGNN_BENCH_1M=1), one forecast on one core by SDGNN from cached
// embeddings and by GRU-GCN for one node from its exact 2-hop field, and
// the bytes per node of the streaming state's rings and embedding caches
// (window only, no history; counted from their sizes, not measured: each
// node's bookkeeping and dependency lists, about 8 % more, are left out);
// BenchmarkScalingWholeGraph times GRU-GCN over the whole graph. 'Scaling$'
// leaves that one out: at 10000x its 10⁵-node passes alone take hours.
//
//	go test -run xxx -bench 'Scaling$' -cpu 1 -benchtime 10000x -timeout 30m ./bench
func BenchmarkScaling(b *testing.B) {
	g := pemsGraph(b)
	sizes := []int{1_000, 10_000, 100_000}
	if os.Getenv("SDGNN_BENCH_1M") != "" {
		sizes = append(sizes, 1_000_000)
	}
	for _, n := range sizes {
		copies := (n + g.Nodes - 1) / g.Nodes
		tg := tiled(g, copies, 5, rand.New(rand.NewPCG(uint64(n), 1)))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s := build(b, tg, 0, uint64(n))
		runtime.GC()
		runtime.ReadMemStats(&after)
		// The state's share: rings and embedding caches (n × window × (C+1
		// slots) and n × window × d), beside the setup's own copies.
		stateBytes := float64(s.n * window * (channels*8 + 8 + 8 + hidden*8))
		zs := make([]int, 0, 4096)
		ts := make([]int64, 0, 4096)
		for z := 0; z < s.n; z++ { // every embedding once, in batches
			zs, ts = append(zs, z), append(ts, s.target/stepMs)
			if len(zs) == cap(zs) || z == s.n-1 {
				if err := s.state.Prepare(zs, ts); err != nil {
					b.Fatal(err)
				}
				zs, ts = zs[:0], ts[:0]
			}
		}
		b.Run(fmt.Sprintf("n=%d/sdgnn-cached", s.n), func(b *testing.B) {
			var f stream.Forecast
			s.perRequest(b, func(z int) error { return s.state.ForecastSlot(z, s.target, &f) })
			b.ReportMetric(stateBytes/float64(s.n), "state-B/node")
			b.ReportMetric(float64(after.HeapAlloc-min(before.HeapAlloc, after.HeapAlloc))/float64(s.n), "setup-B/node")
		})
		b.Run(fmt.Sprintf("n=%d/gru-gcn-node", s.n), func(b *testing.B) {
			xs := make([]*mat.Dense, window)
			zr := mat.NewDense(1, hidden, nil)
			field, calls := 0, 0
			s.perRequest(b, func(z int) error {
				field += len(s.two[z])
				calls++
				_, err := s.gruGCNNode(z, xs, zr)
				return err
			})
			b.ReportMetric(float64(field)/float64(max(calls, 1)), "receptive-nodes")
		})
	}
}
