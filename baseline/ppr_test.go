package baseline

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/sdgnn"
)

// adjacency returns the symmetric adjacency lists of n nodes with the given
// undirected edges.
func adjacency(n int, edges [][2]int) [][]int {
	nb := make([][]int, n)
	for _, e := range edges {
		nb[e[0]] = append(nb[e[0]], e[1])
		nb[e[1]] = append(nb[e[1]], e[0])
	}
	return nb
}

// twoTriangles is a 6-node graph: triangles {0,1,2} and {3,4,5} joined by
// the edge 2–3, with the chord 1–4.
var twoTriangles = adjacency(6, [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 3}, {3, 4}, {3, 5}, {4, 5}, {1, 4}})

// densePPR returns the matrix whose column z is π_z = α (I − (1−α) Â)^-1 e_z,
// Â = D^-1/2 A D^-1/2, by a dense linear solve.
func densePPR(t *testing.T, nb [][]int, alpha float64) *mat.Dense {
	t.Helper()
	n := len(nb)
	m := mat.NewDense(n, n, nil)
	for i := range nb {
		m.Set(i, i, 1)
		for _, j := range nb[i] {
			m.Set(i, j, m.At(i, j)-(1-alpha)/math.Sqrt(float64(len(nb[i])*len(nb[j]))))
		}
	}
	rhs := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		rhs.Set(i, i, alpha)
	}
	var pi mat.Dense
	if err := pi.Solve(m, rhs); err != nil {
		t.Fatal(err)
	}
	return &pi
}

// denseWalkPPR returns the matrix whose row z is the random walk's
// PageRank p_z = α e_zᵀ (I − (1−α) D^-1 A)^-1, by a dense linear solve:
// PPRGo chooses each node's top k by it.
func denseWalkPPR(t *testing.T, nb [][]int, alpha float64) *mat.Dense {
	t.Helper()
	n := len(nb)
	m := mat.NewDense(n, n, nil) // (I − (1−α) P)ᵀ, so that p_zᵀ solves m x = α e_z
	for i := range nb {
		m.Set(i, i, 1)
		for _, j := range nb[i] {
			m.Set(j, i, m.At(j, i)-(1-alpha)/float64(len(nb[i])))
		}
	}
	rhs := mat.NewDense(n, n, nil)
	for i := 0; i < n; i++ {
		rhs.Set(i, i, alpha)
	}
	var p mat.Dense
	if err := p.Solve(m, rhs); err != nil {
		t.Fatal(err)
	}
	var out mat.Dense
	out.CloneFrom(p.T()) // row z: p_z
	return &out
}

func TestPPRMatchesDenseSolve(t *testing.T) {
	for _, alpha := range []float64{0.15, 0.5, 1} {
		want := densePPR(t, twoTriangles, alpha)
		adj, err := cleanAdjacency(twoTriangles)
		if err != nil {
			t.Fatal(err)
		}
		for z := range twoTriangles {
			got, err := pprScores(adj, alpha, z)
			if err != nil {
				t.Fatal(err)
			}
			var dist float64
			for k, v := range got {
				dist += (v - want.At(k, z)) * (v - want.At(k, z))
			}
			if math.Sqrt(dist) > pprTol {
				t.Errorf("α %g node %d: ‖π − π_dense‖ = %.3g > %g", alpha, z, math.Sqrt(dist), pprTol)
			}
		}
		// With k = n, PPR returns the whole vector, normalised.
		th, err := PPR(twoTriangles, alpha, len(twoTriangles))
		if err != nil {
			t.Fatal(err)
		}
		for z := range twoTriangles {
			var sum float64
			for k := range twoTriangles {
				sum += want.At(k, z)
			}
			for i, k := range th.Nodes[z] {
				if d := math.Abs(th.Weights[z][i] - want.At(k, z)/sum); d > 1e-8 {
					t.Errorf("α %g node %d: weight of %d is %.10g, dense %.10g", alpha, z, k, th.Weights[z][i], want.At(k, z)/sum)
				}
			}
		}
	}
}

func TestPPRTopK(t *testing.T) {
	const alpha = 0.15
	want := densePPR(t, twoTriangles, alpha)
	walk := denseWalkPPR(t, twoTriangles, alpha)
	for _, k := range []int{1, 2, 3, 6, 10} {
		th, err := PPR(twoTriangles, alpha, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := th.Validate(6); err != nil {
			t.Fatal(err)
		}
		for z := range twoTriangles {
			ns, ws := th.Nodes[z], th.Weights[z]
			if len(ns) != min(k, 6) || !slices.IsSorted(ns) {
				t.Fatalf("k %d node %d: receptive nodes %v, want %d sorted", k, z, ns, min(k, 6))
			}
			var sum float64
			for _, w := range ws {
				sum += w
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("k %d node %d: weights sum to %.15g", k, z, sum)
			}
			// Every kept node the walk is at at least as likely as at
			// every dropped one.
			lowest := math.Inf(1)
			for _, n := range ns {
				lowest = math.Min(lowest, walk.At(z, n))
			}
			for n := range twoTriangles {
				if !slices.Contains(ns, n) && walk.At(z, n) > lowest+1e-9 {
					t.Errorf("k %d node %d: dropped %d (walk score %.6g) over a kept walk score %.6g", k, z, n, walk.At(z, n), lowest)
				}
			}
			// Kept weights are the kept scores renormalised.
			var kept float64
			for _, n := range ns {
				kept += want.At(n, z)
			}
			for i, n := range ns {
				if d := math.Abs(ws[i] - want.At(n, z)/kept); d > 1e-7 {
					t.Errorf("k %d node %d: weight of %d is %.10g, renormalised score %.10g", k, z, n, ws[i], want.At(n, z)/kept)
				}
			}
		}
	}
}

func TestPPRTiesAndDeterminism(t *testing.T) {
	// On a ring every node's neighbours at equal distance tie; the smaller
	// id must win.
	ring := adjacency(8, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 0}})
	tests := []struct {
		k    int
		z    int
		want []int
	}{
		{1, 0, []int{0}},
		{2, 0, []int{0, 1}}, // 1 and 7 tie
		{3, 0, []int{0, 1, 7}},
		{4, 0, []int{0, 1, 2, 7}}, // 2 and 6 tie
		{2, 5, []int{4, 5}},       // 4 and 6 tie
	}
	for _, tc := range tests {
		th, err := PPR(ring, 0.15, tc.k)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(th.Nodes[tc.z], tc.want) {
			t.Errorf("k %d node %d: %v, want %v", tc.k, tc.z, th.Nodes[tc.z], tc.want)
		}
	}
	a, err := PPR(twoTriangles, 0.15, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		b, err := PPR(twoTriangles, 0.15, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("PPR not deterministic: %+v vs %+v", a, b)
		}
	}
}

// On the 6-dimensional hypercube every node's six neighbours tie exactly,
// but the power iteration sums their neighbours in different orders, so
// their computed ranks differ in the last bits: the tie must still go to
// the smaller ids, not to whichever rounding came out ahead.
func TestPPRTiesWithinRounding(t *testing.T) {
	const dim = 6
	n := 1 << dim
	nb := make([][]int, n)
	for i := range nb {
		for b := 0; b < dim; b++ {
			nb[i] = append(nb[i], i^(1<<b))
		}
		slices.Sort(nb[i])
	}
	for _, k := range []int{2, 3, 4} {
		th, err := PPR(nb, 0.15, k)
		if err != nil {
			t.Fatal(err)
		}
		for z := range nb {
			want := append([]int{z}, nb[z][:k-1]...)
			slices.Sort(want)
			if !slices.Equal(th.Nodes[z], want) {
				t.Errorf("k %d node %d: %v, want itself and its %d smallest neighbours %v", k, z, th.Nodes[z], k-1, want)
			}
		}
	}
}

func TestPPRSmallComponents(t *testing.T) {
	// Node 3 is isolated, 4–5 a pair; duplicates and self loops are ignored.
	nb := [][]int{{1, 2, 1, 0}, {0, 2}, {0, 1}, {3}, {5}, {4}}
	th, err := PPR(nb, 0.15, 6)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 1, 2}, {0, 1, 2}, {0, 1, 2}, {3}, {4, 5}, {4, 5}}
	if !reflect.DeepEqual(th.Nodes, want) {
		t.Fatalf("receptive nodes %v, want %v (components)", th.Nodes, want)
	}
	if th.Weights[3][0] != 1 || math.Abs(th.Weights[4][0]+th.Weights[4][1]-1) > 1e-12 || !(th.Weights[4][0] > th.Weights[4][1]) {
		t.Errorf("weights %v", th.Weights)
	}
}

func TestPPRBadInput(t *testing.T) {
	tests := []struct {
		name  string
		nb    [][]int
		alpha float64
		k     int
	}{
		{"empty", nil, 0.15, 6},
		{"asymmetric", [][]int{{1}, {}}, 0.15, 6},
		{"out of range", [][]int{{2}, {0}}, 0.15, 6},
		{"negative id", [][]int{{-1}, {}}, 0.15, 6},
		{"alpha 0", twoTriangles, 0, 6},
		{"alpha > 1", twoTriangles, 1.5, 6},
		{"alpha NaN", twoTriangles, math.NaN(), 6},
		{"k 0", twoTriangles, 0.15, 0},
	}
	for _, tc := range tests {
		if th, err := PPR(tc.nb, tc.alpha, tc.k); err == nil {
			t.Errorf("%s: accepted, got %+v", tc.name, th)
		}
	}
}

func TestEqualWeights(t *testing.T) {
	tests := []struct {
		name string
		in   *sdgnn.Theta
		want *sdgnn.Theta
	}{
		{"nil", nil, nil},
		{"mixed",
			&sdgnn.Theta{Nodes: [][]int{{0, 2, 5}, {1}, {}, {0, 3}}, Weights: [][]float64{{0.2, 3, 0.1}, {7}, {}, {0.5, 0.25}}},
			&sdgnn.Theta{Nodes: [][]int{{0, 2, 5}, {1}, {}, {0, 3}}, Weights: [][]float64{{1. / 3, 1. / 3, 1. / 3}, {1}, {}, {0.5, 0.5}}}},
	}
	for _, tc := range tests {
		got := EqualWeights(tc.in)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
		if tc.in != nil {
			tc.in.Nodes[0][0] = 99 // the copy shares nothing
			if got.Nodes[0][0] == 99 {
				t.Errorf("%s: result shares node lists with the input", tc.name)
			}
		}
	}
}

// PPRGo chooses a node's top k by the random walk's PageRank, not by its
// "sym" weights, which favour nodes of smaller degree: from z on the path
// a–z–b with b a hub of ten leaves, the walk is more likely at b, the
// sym score higher at a. PPR keeps b, weighted by its sym score.
func TestPPRChoosesByTheWalk(t *testing.T) {
	const alpha, z, a, b = 0.15, 0, 1, 2
	edges := [][2]int{{z, a}, {z, b}}
	for leaf := 3; leaf < 13; leaf++ {
		edges = append(edges, [2]int{b, leaf})
	}
	nb := adjacency(13, edges)
	walk, sym := denseWalkPPR(t, nb, alpha), densePPR(t, nb, alpha)
	if !(walk.At(z, b) > walk.At(z, a) && sym.At(b, z) < sym.At(a, z)) {
		t.Fatalf("the graph does not tell the two apart: walk %.4g, %.4g; sym %.4g, %.4g", walk.At(z, a), walk.At(z, b), sym.At(a, z), sym.At(b, z))
	}
	th, err := PPR(nb, alpha, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(th.Nodes[z], []int{z, b}) {
		t.Fatalf("top 2 of node %d: %v, want [%d %d]", z, th.Nodes[z], z, b)
	}
	sum := sym.At(z, z) + sym.At(b, z)
	if d := math.Abs(th.Weights[z][1] - sym.At(b, z)/sum); d > 1e-7 {
		t.Errorf("weight of %d: %.8g, its sym score renormalised %.8g", b, th.Weights[z][1], sym.At(b, z)/sum)
	}
}
