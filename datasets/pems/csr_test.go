package pems

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func pathGraph(n int) *Graph {
	g := &Graph{Nodes: n}
	for i := 0; i+1 < n; i++ {
		g.Edges = append(g.Edges, Edge{From: i, To: i + 1, Cost: 1})
	}
	return g
}

func ringGraph(n int) *Graph {
	g := pathGraph(n)
	g.Edges = append(g.Edges, Edge{From: 0, To: n - 1, Cost: 1})
	return g
}

func TestNormalizedAdjacencyPath(t *testing.T) {
	// Path 0-1-2: degrees of A+I are 2, 3, 2.
	m := pathGraph(3).NormalizedAdjacency()
	s6 := 1 / math.Sqrt(6)
	want := [][]float64{
		{1.0 / 2, s6, 0},
		{s6, 1.0 / 3, s6},
		{0, s6, 1.0 / 2},
	}
	for i := range want {
		for j := range want[i] {
			if got := m.At(i, j); math.Abs(got-want[i][j]) > 1e-15 {
				t.Errorf("At(%d, %d) = %v, want %v", i, j, got, want[i][j])
			}
		}
	}
	if m.NNZ() != 7 {
		t.Errorf("NNZ = %d, want 7", m.NNZ())
	}
	wantPtr, wantCol := []int{0, 2, 5, 7}, []int{0, 1, 0, 1, 2, 1, 2}
	for i, p := range wantPtr {
		if m.RowPtr[i] != p {
			t.Fatalf("RowPtr = %v, want %v", m.RowPtr, wantPtr)
		}
	}
	for k, c := range wantCol {
		if m.Col[k] != c {
			t.Fatalf("Col = %v, want %v", m.Col, wantCol)
		}
	}
	if !m.IsSymmetric(0) {
		t.Error("not symmetric")
	}
}

func TestNormalizedAdjacencySortedAndIsolated(t *testing.T) {
	// Edges in arbitrary order, a repeated pair and an isolated node 4.
	g := &Graph{Nodes: 5, Edges: []Edge{{2, 3, 1}, {0, 3, 1}, {0, 1, 1}, {0, 3, 2}}}
	m := g.NormalizedAdjacency()
	for i := 0; i < m.N; i++ {
		for k := m.RowPtr[i] + 1; k < m.RowPtr[i+1]; k++ {
			if m.Col[k-1] >= m.Col[k] {
				t.Errorf("row %d columns not strictly increasing: %v", i, m.Col[m.RowPtr[i]:m.RowPtr[i+1]])
			}
		}
	}
	if got := m.At(4, 4); got != 1 {
		t.Errorf("isolated node self weight %v, want 1", got)
	}
	if got, want := m.At(0, 3), 1/math.Sqrt(3*3); math.Abs(got-want) > 1e-15 {
		t.Errorf("At(0, 3) = %v, want %v", got, want)
	}
	if !m.IsSymmetric(1e-15) {
		t.Error("not symmetric")
	}
	asym := &CSR{N: 2, RowPtr: []int{0, 1, 2}, Col: []int{1, 0}, Val: []float64{1, 2}}
	if asym.IsSymmetric(0.5) {
		t.Error("IsSymmetric true for an asymmetric matrix")
	}
	if !asym.IsSymmetric(1) {
		t.Error("IsSymmetric(1) false for entries 1 and 2")
	}
}

func TestMulBlocks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name string
		g    *Graph
		k, d int
	}{
		{"path3", pathGraph(3), 2, 4},
		{"ring10", ringGraph(10), 2, 3},
		{"random30", randomGraph(rnd, 30, 60), 3, 5},
		{"one-column", randomGraph(rnd, 12, 20), 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.g.NormalizedAdjacency()
			n := m.N
			a := mat.DenseCopyOf(m)
			b := mat.NewDense(tc.k*n, tc.d, nil)
			for i := 0; i < tc.k*n; i++ {
				for j := 0; j < tc.d; j++ {
					b.Set(i, j, rnd.NormFloat64())
				}
			}
			dst := mat.NewDense(tc.k*n, tc.d, nil)
			dst.Apply(func(int, int, float64) float64 { return math.NaN() }, dst) // must be overwritten
			m.MulBlocks(dst, b)
			for blk := 0; blk < tc.k; blk++ {
				var want mat.Dense
				want.Mul(a, b.Slice(blk*n, (blk+1)*n, 0, tc.d))
				got := dst.Slice(blk*n, (blk+1)*n, 0, tc.d)
				if !mat.EqualApprox(got, &want, 1e-12) {
					t.Errorf("block %d:\ngot  %v\nwant %v", blk, mat.Formatted(got), mat.Formatted(&want))
				}
			}
		})
	}
}

func TestMulBlocksStride(t *testing.T) {
	// Views into larger matrices have Stride > Cols.
	m := ringGraph(5).NormalizedAdjacency()
	bigB := mat.NewDense(10, 7, nil)
	for i := 0; i < 10; i++ {
		for j := 0; j < 7; j++ {
			bigB.Set(i, j, float64(i*7+j))
		}
	}
	bigD := mat.NewDense(10, 9, nil)
	b := bigB.Slice(0, 10, 2, 5).(*mat.Dense)
	dst := bigD.Slice(0, 10, 1, 4).(*mat.Dense)
	m.MulBlocks(dst, b)
	a := mat.DenseCopyOf(m)
	for blk := 0; blk < 2; blk++ {
		var want mat.Dense
		want.Mul(a, b.Slice(blk*5, blk*5+5, 0, 3))
		if got := dst.Slice(blk*5, blk*5+5, 0, 3); !mat.EqualApprox(got, &want, 1e-12) {
			t.Errorf("block %d mismatch", blk)
		}
	}
	if bigD.At(0, 0) != 0 || bigD.At(0, 4) != 0 {
		t.Error("MulBlocks wrote outside dst")
	}
}

func TestMulBlocksPanics(t *testing.T) {
	m := pathGraph(3).NormalizedAdjacency()
	b := mat.NewDense(6, 2, nil)
	for _, tc := range []struct {
		name   string
		dst, b *mat.Dense
	}{
		{"rows-not-multiple", mat.NewDense(4, 2, nil), mat.NewDense(4, 2, nil)},
		{"dst-shape", mat.NewDense(6, 3, nil), b},
		{"alias", b, b},
		{"overlap", b.Slice(0, 6, 1, 2).(*mat.Dense), b.Slice(0, 6, 0, 1).(*mat.Dense)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			m.MulBlocks(tc.dst, tc.b)
		})
	}
}

func TestMulBlocksNoAlloc(t *testing.T) {
	m := ringGraph(50).NormalizedAdjacency()
	b := mat.NewDense(4*50, 8, nil)
	dst := mat.NewDense(4*50, 8, nil)
	if n := testing.AllocsPerRun(10, func() { m.MulBlocks(dst, b) }); n != 0 {
		t.Errorf("MulBlocks allocates %v times per call", n)
	}
}

func randomGraph(rnd *rand.Rand, n, edges int) *Graph {
	b := newGraphBuilder(n)
	for range edges {
		b.add(rnd.IntN(n), rnd.IntN(n), 1)
	}
	return b.graph()
}

// BenchmarkMulBlocks multiplies a PeMS04-sized normalised adjacency (the
// real graph if the data directory is found, else a ring of 307 nodes) with
// 12 snapshots of 64 features.
func BenchmarkMulBlocks(bm *testing.B) {
	g := ringGraph(307)
	if dir, err := ResolveDataDir(""); err == nil {
		if rg, err := ReadDistanceCSV(filepath.Join(dir, "pems", "pems04", "distance.csv"), 307); err == nil {
			g = rg
		}
	}
	m := g.NormalizedAdjacency()
	const k, d = 12, 64
	b := mat.NewDense(k*m.N, d, nil)
	rnd := rand.New(rand.NewPCG(3, 4))
	raw := b.RawMatrix().Data
	for i := range raw {
		raw[i] = rnd.NormFloat64()
	}
	dst := mat.NewDense(k*m.N, d, nil)
	bm.ReportAllocs()
	bm.SetBytes(int64(8 * k * m.N * d))
	bm.ResetTimer()
	for bm.Loop() {
		m.MulBlocks(dst, b)
	}
}

func TestReach(t *testing.T) {
	// Path 0-…-9 and an isolated node 10.
	g := pathGraph(10)
	g.Nodes = 11
	m := g.NormalizedAdjacency()
	for _, tc := range []struct {
		nodes []int
		hops  int
		want  []int
	}{
		{[]int{4}, 0, []int{4}},
		{[]int{4}, 1, []int{3, 4, 5}},
		{[]int{4}, 2, []int{2, 3, 4, 5, 6}},
		{[]int{0, 9}, 2, []int{0, 1, 2, 7, 8, 9}},
		{[]int{9, 0, 9}, 1, []int{0, 1, 8, 9}},
		{[]int{10}, 3, []int{10}},
		{nil, 2, []int{}},
		{[]int{5}, 20, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	} {
		got, err := m.Reach(tc.nodes, tc.hops)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Reach(%v, %d) = %v, want %v", tc.nodes, tc.hops, got, tc.want)
		}
	}
	for _, tc := range []struct {
		nodes []int
		hops  int
	}{{[]int{11}, 1}, {[]int{-1}, 1}, {[]int{1}, -1}} {
		if _, err := m.Reach(tc.nodes, tc.hops); err == nil {
			t.Errorf("Reach(%v, %d) accepted", tc.nodes, tc.hops)
		}
	}
}

// TestInduced checks the submatrix's entries against At, and that a product
// by it gives, bit for bit, the rows of the whole graph's product whose
// neighbourhoods it holds: two products (a two-layer convolution) over the
// 2-hop reach of some nodes equal the whole graph's at those nodes.
func TestInduced(t *testing.T) {
	g := ringGraph(12)
	g.Edges = append(g.Edges, Edge{From: 2, To: 7, Cost: 1})
	m := g.NormalizedAdjacency()
	targets := []int{1, 8}
	keep, err := m.Reach(targets, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(keep) >= m.N {
		t.Fatalf("reach %v is the whole graph; the test needs a part", keep)
	}
	s, err := m.Induced(keep)
	if err != nil {
		t.Fatal(err)
	}
	for a, i := range keep {
		for b, j := range keep {
			if s.At(a, b) != m.At(i, j) {
				t.Errorf("induced (%d, %d) = %v, whole (%d, %d) = %v", a, b, s.At(a, b), i, j, m.At(i, j))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const snaps, d = 3, 9
	x := mat.NewDense(snaps*m.N, d, nil)
	for i := range x.RawMatrix().Data {
		x.RawMatrix().Data[i] = rng.NormFloat64()
	}
	xs := mat.NewDense(snaps*len(keep), d, nil)
	for b := range snaps {
		for k, i := range keep {
			xs.SetRow(b*len(keep)+k, x.RawRowView(b*m.N+i))
		}
	}
	twice := func(a *CSR, x *mat.Dense) *mat.Dense {
		r, c := x.Dims()
		y, z := mat.NewDense(r, c, nil), mat.NewDense(r, c, nil)
		a.MulBlocks(y, x)
		a.MulBlocks(z, y)
		return z
	}
	whole, sub := twice(m, x), twice(s, xs)
	for b := range snaps {
		for k, i := range keep {
			if !slices.Contains(targets, i) {
				continue
			}
			if !slices.Equal(sub.RawRowView(b*len(keep)+k), whole.RawRowView(b*m.N+i)) {
				t.Errorf("snapshot %d node %d: induced %v, whole %v", b, i, sub.RawRowView(b*len(keep)+k), whole.RawRowView(b*m.N+i))
			}
		}
	}
	for _, bad := range [][]int{{3, 2}, {1, 1}, {12}, {-1}} {
		if _, err := m.Induced(bad); err == nil {
			t.Errorf("Induced(%v) accepted", bad)
		}
	}
}

// TestScaledAdjacency checks Gao & Ribeiro's weighting by hand on a path
// 0-1-2-3 with costs 10, 30, 20: weights 0, 1 and 0.5, degrees (self-loop
// included) 1, 2, 2.5 and 1.5.
func TestScaledAdjacency(t *testing.T) {
	g := &Graph{Nodes: 4, Edges: []Edge{{0, 1, 10}, {1, 2, 30}, {2, 3, 20}}}
	lo, hi, ok := g.CostRange()
	if lo != 10 || hi != 30 || !ok {
		t.Fatalf("CostRange = %v, %v, %v; want 10, 30, true", lo, hi, ok)
	}
	m := g.ScaledAdjacency(lo, hi)
	want := [][]float64{
		{1, 0, 0, 0},
		{0, 1.0 / 2, 1 / math.Sqrt(5), 0},
		{0, 1 / math.Sqrt(5), 1 / 2.5, 0.5 / math.Sqrt(2.5*1.5)},
		{0, 0, 0.5 / math.Sqrt(2.5*1.5), 1 / 1.5},
	}
	for i := range want {
		for j := range want[i] {
			if got := m.At(i, j); math.Abs(got-want[i][j]) > 1e-15 {
				t.Errorf("At(%d, %d) = %v, want %v", i, j, got, want[i][j])
			}
		}
	}
	// Every link is stored, a zero weight too: the sparsity of the 0/1
	// propagation matrix.
	if b := g.NormalizedAdjacency(); !slices.Equal(m.RowPtr, b.RowPtr) || !slices.Equal(m.Col, b.Col) || !m.IsSymmetric(0) {
		t.Errorf("rows %v cols %v, want the 0/1 matrix's %v %v, symmetric", m.RowPtr, m.Col, b.RowPtr, b.Col)
	}
	// Links of one cost have no range: they weigh 0, as the reference's
	// zero range taken as 1 makes them, and CostRange says not to use it.
	if _, _, ok := pathGraph(3).CostRange(); ok {
		t.Error("a graph of equal costs has a range")
	}
	if id := pathGraph(3).ScaledAdjacency(1, 1); id.At(0, 0) != 1 || id.At(0, 1) != 0 || id.At(1, 1) != 1 {
		t.Errorf("equal costs: %v", mat.Formatted(id))
	}
}
