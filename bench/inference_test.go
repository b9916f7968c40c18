package bench

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/pemsforecast/sdgnn/teacher"
)

// The shapes of the shipped models: window 12, 3 channels (PeMS), hidden
// 16, at most 6 receptive nodes.
const (
	window   = 12
	channels = 3
	hidden   = 16
	budget   = 6
	stepMs   = 5 * 60 * 1000
	requests = 10000 // the paper's protocol: 10,000 random single-node requests
)

type setup struct {
	n      int
	adj    *pems.CSR
	model  *teacher.Model
	bundle *sdgnn.Bundle
	state  *stream.State
	target int64 // the slot every forecast is for (Unix ms)
	raw    []float64
	two    [][]int     // two[z]: z's 2-hop neighbourhood, sorted
	sub    []*pems.CSR // Â restricted to the rows and columns of two[z]
	local  []int       // z's row in two[z]
	order  []int       // the random requests
	ends   []int64     // window-end times for EmbedBatch (the bundle has no calendar inputs: zeros)
}

var cached *setup

// load builds everything once: the real PeMS04 graph, an initialised
// GRU-GCN (weights do not change costs), a bundle that shares its GRU and
// decoder with θ_z = z and its 5 nearest hops, and a stream.State holding
// one window of random readings of every sensor.
func load(b testing.TB) *setup {
	b.Helper()
	if cached != nil {
		return cached
	}
	cached = build(b, pemsGraph(b), stream.DefaultHistory, 1)
	return cached
}

// build makes the setup for graph g: θ_z = z and its 5 nearest hops, the
// 2-hop fields of the requested nodes, a State (with history slots beyond
// the window) holding one window of random readings of every node.
func build(b testing.TB, g *pems.Graph, history int, seed uint64) *setup {
	b.Helper()
	s := &setup{n: g.Nodes, adj: g.NormalizedAdjacency(), ends: make([]int64, g.Nodes)}
	var err error
	s.model, err = teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: window, Channels: channels, Hidden: hidden, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	s.order = make([]int, requests)
	for i := range s.order {
		s.order[i] = rng.IntN(s.n)
	}
	nb := g.Neighbors()
	stamp, gen := make([]int, s.n), 0 // stamp[v] == gen: v seen in this search
	hops2 := func(z int) []int {
		gen++
		stamp[z] = gen
		bfs, ring := []int{z}, []int{z}
		for hop := 0; hop < 2; hop++ {
			var next []int
			for _, u := range ring {
				for _, v := range nb[u] {
					if stamp[v] != gen {
						stamp[v] = gen
						next = append(next, v)
					}
				}
			}
			bfs = append(bfs, next...)
			ring = next
		}
		return bfs
	}
	theta := &sdgnn.Theta{Nodes: make([][]int, s.n), Weights: make([][]float64, s.n)}
	s.two, s.sub, s.local = make([][]int, s.n), make([]*pems.CSR, s.n), make([]int, s.n)
	for z := 0; z < s.n; z++ {
		bfs := hops2(z)
		ks := slices.Clone(bfs[:min(budget, len(bfs))])
		slices.Sort(ks)
		theta.Nodes[z] = ks
		for range ks {
			theta.Weights[z] = append(theta.Weights[z], 1/float64(len(ks)))
		}
	}
	for _, z := range s.order {
		if s.two[z] != nil {
			continue
		}
		two := hops2(z)
		slices.Sort(two)
		s.two[z] = two
		s.local[z], _ = slices.BinarySearch(two, z)
		s.sub[z] = restrict(s.adj, two)
	}
	norm := snapshot.Normalizer{Mean: []float64{200, 0.05, 60}, Std: []float64{100, 0.03, 10}}
	meta := sdgnn.BundleMeta{Dataset: "pems04", Nodes: s.n, Window: window, Hidden: hidden, Norm: norm, Version: "bench"}
	meta.Config.PhiHidden = hidden
	s.bundle, err = sdgnn.NewBundle(meta, s.model.GRU, nn.NewMLP("phi", hidden, hidden, hidden, rng), theta, s.model.Dec)
	if err != nil {
		b.Fatal(err)
	}
	s.state, err = stream.NewStateHistory(s.bundle, stepMs, history)
	if err != nil {
		b.Fatal(err)
	}
	const slot0 = 5_900_000
	s.raw = make([]float64, window*s.n*channels)
	v := make([]float64, channels)
	for t := 0; t < window; t++ {
		for z := 0; z < s.n; z++ {
			v[0], v[1], v[2] = 200+100*rng.NormFloat64(), 0.05+0.01*rng.Float64(), 60+5*rng.NormFloat64()
			copy(s.raw[(t*s.n+z)*channels:], v)
			if _, err := s.state.Apply(stream.Reading{Sensor: z, TS: (slot0 + int64(t)) * stepMs, Values: v}); err != nil {
				b.Fatal(err)
			}
		}
	}
	s.target = (slot0 + window) * stepMs
	return s
}

// restrict returns Â's rows and columns of the sorted node set ns, with
// Â's own weights (degrees of the whole graph): the operator a 2-hop
// computation of one node's GCN output needs.
func restrict(a *pems.CSR, ns []int) *pems.CSR {
	r := &pems.CSR{N: len(ns), RowPtr: make([]int, 1, len(ns)+1)}
	for _, u := range ns {
		for p := a.RowPtr[u]; p < a.RowPtr[u+1]; p++ {
			if j, ok := slices.BinarySearch(ns, a.Col[p]); ok {
				r.Col = append(r.Col, j)
				r.Val = append(r.Val, a.Val[p])
			}
		}
		r.RowPtr = append(r.RowPtr, len(r.Col))
	}
	return r
}

// latencies keeps the last 10,000 per-request times and reports their
// median and 99th percentile with the benchmark.
type latencies struct {
	d []time.Duration
	i int
}

func (l *latencies) add(d time.Duration) {
	if len(l.d) < requests {
		l.d = append(l.d, d)
		return
	}
	l.d[l.i%requests] = d
	l.i++
}

func (l *latencies) report(b *testing.B) {
	s := slices.Clone(l.d)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return
	}
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(q(0.5), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// perRequest runs op once per benchmark iteration on the next node of the
// random request order, timing each call, and reports allocations, p50 and
// p99.
func (s *setup) perRequest(b *testing.B, op func(z int) error) {
	l := latencies{d: make([]time.Duration, 0, requests)}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		z := s.order[i%requests]
		i++
		t0 := time.Now()
		if err := op(z); err != nil {
			b.Fatal(err)
		}
		l.add(time.Since(t0))
	}
	l.report(b)
}

// BenchmarkSDGNNCached is one forecast from the cached embeddings of the
// node's receptive nodes: the streaming service's hot path.
func BenchmarkSDGNNCached(b *testing.B) {
	s := load(b)
	var f stream.Forecast
	s.fillCache(b, &f)
	s.perRequest(b, func(z int) error { return s.state.ForecastSlot(z, s.target, &f) })
}

// fillCache forecasts every node once, so that every embedding is cached.
func (s *setup) fillCache(tb testing.TB, f *stream.Forecast) {
	tb.Helper()
	for z := 0; z < s.n; z++ {
		if err := s.state.ForecastSlot(z, s.target, f); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkSDGNNCold is one forecast computing the receptive nodes' GRU
// windows and φ from their readings first (no cache).
func BenchmarkSDGNNCold(b *testing.B) {
	s := load(b)
	wins := make([]float64, 0, budget*window*channels)
	embs := make([]float64, budget*hidden)
	rows := make([][]float64, budget)
	out := make([]float64, channels)
	s.perRequest(b, func(z int) error {
		ks, _ := s.bundle.Receptive(z)
		wins = wins[:0]
		for _, k := range ks {
			wins, _, _ = s.state.Window(wins, k)
		}
		if err := s.bundle.EmbedBatch(embs[:len(ks)*hidden], wins, s.ends[:len(ks)]); err != nil {
			return err
		}
		for j := range ks {
			rows[j] = embs[j*hidden : (j+1)*hidden]
		}
		return s.bundle.Forecast(out, z, rows[:len(ks)])
	})
}

// gruGCNNode is the teacher's forecast of node z (normalised) from its
// 2-hop receptive field only.
func (s *setup) gruGCNNode(z int, xs []*mat.Dense, zr *mat.Dense) (*mat.Dense, error) {
	ns := s.two[z]
	for t := range xs {
		xs[t] = nn.Resize(xs[t], len(ns), channels)
		x := xs[t].RawMatrix().Data
		for r, u := range ns {
			for c := 0; c < channels; c++ {
				x[r*channels+c] = s.bundle.Meta.Norm.Normalize(s.raw[(t*s.n+u)*channels+c], c)
			}
		}
	}
	_, zz, err := s.model.Embed(xs, s.sub[z])
	if err != nil {
		return nil, err
	}
	copy(zr.RawRowView(0), zz.RawRowView(s.local[z]))
	return s.model.Dec.Forward(zr), nil
}

// TestPerNodePathsAreExact checks that what the benchmarks time computes
// the right thing: GRU-GCN from a node's 2-hop field alone equals the
// whole-graph forward pass for that node, and SDGNN's cached forecast is
// the same as one computed from the windows.
func TestPerNodePathsAreExact(t *testing.T) {
	s := load(t)
	full, err := s.model.Forward(s.graphInput(), s.adj, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := mat.DenseCopyOf(full)
	nxs := make([]*mat.Dense, window)
	zr := mat.NewDense(1, hidden, nil)
	var f stream.Forecast
	for _, z := range s.order[:200] {
		got, err := s.gruGCNNode(z, nxs, zr)
		if err != nil {
			t.Fatal(err)
		}
		for c := 0; c < channels; c++ {
			if d := got.At(0, c) - want.At(z, c); d > 1e-12 || d < -1e-12 {
				t.Fatalf("node %d channel %d: 2-hop %.15g, whole graph %.15g", z, c, got.At(0, c), want.At(z, c))
			}
		}
		if err := s.state.ForecastSlot(z, s.target, &f); err != nil {
			t.Fatal(err)
		}
		ks, _ := s.bundle.Receptive(z)
		var wins []float64
		embs := make([]float64, len(ks)*hidden)
		rows := make([][]float64, len(ks))
		for _, k := range ks {
			wins, _, _ = s.state.Window(wins, k)
		}
		if err := s.bundle.EmbedBatch(embs, wins, s.ends[:len(ks)]); err != nil {
			t.Fatal(err)
		}
		for j := range ks {
			rows[j] = embs[j*hidden : (j+1)*hidden]
		}
		out := make([]float64, channels)
		if err := s.bundle.Forecast(out, z, rows); err != nil {
			t.Fatal(err)
		}
		for c := range out {
			if d := out[c] - f.Values[c]; !(d <= 1e-9 && d >= -1e-9) { // NaN fails too
				t.Fatalf("node %d channel %d: cold %.15g, cached %.15g", z, c, out[c], f.Values[c])
			}
		}
	}
}

// TestCachedForecastAllocatesNothing holds the streaming service's hot path
// to no allocation: a forecast from cached embeddings. A closure handed to
// nn.ParallelRows by the decoder's activation once cost one (112 bytes) a
// forecast from 2026-11-24, unseen until bench/run's raw output was read
// again.
func TestCachedForecastAllocatesNothing(t *testing.T) {
	s := load(t)
	var f stream.Forecast
	s.fillCache(t, &f)
	i := 0
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.state.ForecastSlot(s.order[i%requests], s.target, &f); err != nil {
			t.Fatal(err)
		}
		i++
	}); n != 0 {
		t.Errorf("%v allocations per cached forecast, want 0", n)
	}
}

// BenchmarkGRUGCNNode is the teacher's forecast of one node computed
// exactly from its 2-hop receptive field: the GRU over every window in it,
// two graph convolutions on the restricted operator, the decoder on the
// node's row.
func BenchmarkGRUGCNNode(b *testing.B) {
	s := load(b)
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
}

// BenchmarkGRUGCNGraph is the teacher's forecast of every node at once;
// ns/op is for the whole graph, and node-µs the cost per node.
func BenchmarkGRUGCNGraph(b *testing.B) {
	benchWholeGraph(b, load(b))
}

// graphInput returns the normalised windows of every node, as the
// teacher's whole-graph forward pass takes them.
func (s *setup) graphInput() []*mat.Dense {
	xs := make([]*mat.Dense, window)
	for t := range xs {
		xs[t] = mat.NewDense(s.n, channels, nil)
		x := xs[t].RawMatrix().Data
		for j := range x {
			x[j] = s.bundle.Meta.Norm.Normalize(s.raw[t*s.n*channels+j], j%channels)
		}
	}
	return xs
}

// benchWholeGraph times the teacher's forward pass over the whole graph of
// s and reports its cost per node.
func benchWholeGraph(b *testing.B, s *setup) {
	xs := s.graphInput()
	b.ReportAllocs()
	start, ops := time.Now(), 0
	for b.Loop() {
		if _, err := s.model.Forward(xs, s.adj, nil); err != nil {
			b.Fatal(err)
		}
		ops++
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e3/float64(max(ops, 1))/float64(s.n), "node-µs")
}
