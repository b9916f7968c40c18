package pems

import (
	"fmt"
	"math"
	"sort"
	"unsafe"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// CSR is a square N×N sparse matrix in compressed sparse row form: the
// nonzeros of row i are Val[RowPtr[i]:RowPtr[i+1]] in the columns
// Col[RowPtr[i]:RowPtr[i+1]], sorted increasingly. Graph convolutions
// multiply by it once per layer and snapshot, so it is kept sparse.
type CSR struct {
	N      int
	RowPtr []int // len N+1
	Col    []int
	Val    []float64
}

// NormalizedAdjacency returns the GCN propagation matrix
// D^-1/2 (A+I) D^-1/2 of Kipf and Welling, where A is the binary symmetric
// adjacency of g (edge costs are ignored) and D holds the degrees of A+I.
// Every entry is 1/sqrt(d_i d_j) for j = i or j a neighbour of i, so the
// result is symmetric; columns are sorted within each row.
func (g *Graph) NormalizedAdjacency() *CSR {
	nb := g.Neighbors()
	n := g.Nodes
	m := &CSR{N: n, RowPtr: make([]int, n+1)}
	nnz := n
	for _, l := range nb {
		nnz += len(l)
	}
	m.Col = make([]int, 0, nnz)
	m.Val = make([]float64, 0, nnz)
	inv := make([]float64, n) // d_i^-1/2
	for i, l := range nb {
		inv[i] = 1 / math.Sqrt(float64(len(l)+1))
	}
	for i, l := range nb {
		self := false
		for _, j := range l {
			if !self && j > i {
				m.Col = append(m.Col, i)
				m.Val = append(m.Val, inv[i]*inv[i])
				self = true
			}
			m.Col = append(m.Col, j)
			m.Val = append(m.Val, inv[i]*inv[j])
		}
		if !self {
			m.Col = append(m.Col, i)
			m.Val = append(m.Val, inv[i]*inv[i])
		}
		m.RowPtr[i+1] = len(m.Col)
	}
	return m
}

// CostRange returns the smallest and largest edge cost of g, and whether
// they differ: a graph whose links all cost the same (a 0/1 adjacency
// matrix, such as SZ-taxi's) has no distances to weigh its links by.
func (g *Graph) CostRange() (lo, hi float64, distinct bool) {
	for i, e := range g.Edges {
		if i == 0 || e.Cost < lo {
			lo = e.Cost
		}
		if i == 0 || e.Cost > hi {
			hi = e.Cost
		}
	}
	return lo, hi, len(g.Edges) > 0 && hi > lo
}

// ScaledAdjacency returns the propagation matrix of Gao & Ribeiro's
// time-then-graph code (the GCN behind the SDGNN paper's PeMS table): each
// road link weighted by its cost min-max scaled over [lo, hi],
// w = (cost − lo)/(hi − lo) (their normalize over the edge features; a
// range of zero counts as 1), then PyTorch Geometric's GCNConv
// normalisation, self-loops of weight 1 and D^-1/2 (W+I) D^-1/2 with
// d_i = 1 + Σ_j w_ij. The shortest link weighs 0 and the longest 1, as in
// their code. Columns are sorted within each row, and every link is kept
// (a zero weight too), so the sparsity is NormalizedAdjacency's.
func (g *Graph) ScaledAdjacency(lo, hi float64) *CSR {
	n := g.Nodes
	scale := hi - lo
	if scale == 0 {
		scale = 1
	}
	w := make([]map[int]float64, n)
	deg := make([]float64, n)
	for i := range deg {
		deg[i] = 1
		w[i] = map[int]float64{}
	}
	for _, e := range g.Edges {
		if e.From == e.To || !g.has(e.From) || !g.has(e.To) {
			continue
		}
		if _, ok := w[e.From][e.To]; ok {
			continue
		}
		v := (e.Cost - lo) / scale
		w[e.From][e.To], w[e.To][e.From] = v, v
		deg[e.From] += v
		deg[e.To] += v
	}
	inv := make([]float64, n)
	for i, d := range deg {
		inv[i] = 1 / math.Sqrt(d)
	}
	m := &CSR{N: n, RowPtr: make([]int, n+1)}
	for i := range n {
		cols := make([]int, 0, len(w[i])+1)
		cols = append(cols, i)
		for j := range w[i] {
			cols = append(cols, j)
		}
		sort.Ints(cols)
		for _, j := range cols {
			v := 1.0
			if j != i {
				v = w[i][j]
			}
			m.Col = append(m.Col, j)
			m.Val = append(m.Val, v*inv[i]*inv[j])
		}
		m.RowPtr[i+1] = len(m.Col)
	}
	return m
}

// WeightedAdjacency returns the GCN propagation matrix of a graph whose
// edge costs are link weights (FormatWeighted, similarities such as
// Los-loop's): D^-1/2 (W+I) D^-1/2 with self-loops of weight 1 and
// d_i = 1 + Σ_j w_ij, PyTorch Geometric's GCNConv normalisation. It is
// ScaledAdjacency(0, 1), whose scaling leaves the costs as they are.
// (T-GCN's own code adds I to a matrix that already has ones on its
// diagonal, so that its self-loops weigh 2; here they weigh 1, as in
// NormalizedAdjacency.)
func (g *Graph) WeightedAdjacency() *CSR { return g.ScaledAdjacency(0, 1) }

// Dims returns the dimensions of m, N×N. With At and T it makes m a
// mat.Matrix, so that it can be printed or compared with gonum.
func (m *CSR) Dims() (r, c int) { return m.N, m.N }

// T returns the transpose of m as an implicit mat.Transpose.
func (m *CSR) T() mat.Matrix { return mat.Transpose{Matrix: m} }

// NNZ returns the number of stored entries.
func (m *CSR) NNZ() int { return len(m.Col) }

// At returns entry (i, j) of m, 0 if it is not stored. At panics if i or j
// is outside [0, N), as gonum's matrices do.
func (m *CSR) At(i, j int) float64 {
	if uint(i) >= uint(m.N) || uint(j) >= uint(m.N) {
		panic(mat.ErrIndexOutOfRange)
	}
	lo, hi := m.RowPtr[i], m.RowPtr[i+1]
	k := lo + sort.SearchInts(m.Col[lo:hi], j)
	if k < hi && m.Col[k] == j {
		return m.Val[k]
	}
	return 0
}

// IsSymmetric reports whether |m(i,j) - m(j,i)| <= tol for every stored
// entry. MulBlocks with a symmetric m also computes the product with m's
// transpose, which backpropagation through a graph convolution needs.
func (m *CSR) IsSymmetric(tol float64) bool {
	for i := 0; i < m.N; i++ {
		for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
			j := m.Col[k]
			if j == i {
				continue
			}
			if !(math.Abs(m.Val[k]-m.At(j, i)) <= tol) {
				return false
			}
		}
	}
	return true
}

// MulBlocks computes dst = blockdiag(m, ..., m) * b, that is m times each of
// the k blocks of N consecutive rows of b: b and dst are (k*N)×d, one block
// per snapshot. dst must have the shape of b and must not overlap it in
// memory; interleaved views of one matrix count as overlapping. MulBlocks is on the hot path of graph convolutions: it works on the
// raw backing slices and does not allocate.
//
// MulBlocks panics with mat.ErrShape if the shapes do not match and with
// a message if dst and b overlap, like gonum's own methods.
func (m *CSR) MulBlocks(dst, b *mat.Dense) {
	rb, d := b.Dims()
	rd, cd := dst.Dims()
	if m.N == 0 || rb%m.N != 0 || rd != rb || cd != d {
		panic(mat.ErrShape)
	}
	bm, dm := b.RawMatrix(), dst.RawMatrix()
	if overlap(bm.Data, dm.Data) {
		panic("pems: CSR.MulBlocks: dst and b share memory")
	}
	n := m.N
	for blk := 0; blk < rb; blk += n {
		for i := 0; i < n; i++ {
			o := (blk + i) * dm.Stride
			drow := dm.Data[o : o+d : o+d]
			clear(drow)
			for k := m.RowPtr[i]; k < m.RowPtr[i+1]; k++ {
				v := m.Val[k]
				o := (blk + m.Col[k]) * bm.Stride
				brow := bm.Data[o : o+d : o+d]
				if d < axpyMin {
					for c, x := range brow {
						drow[c] += float64(v * x) // rounded, as portable.Axpy: the same bits everywhere
					}
					continue
				}
				// gonum's SIMD axpy on amd64 halves the time of the plain
				// loop for PeMS04-sized products with 64 features;
				// portable.Axpy gives its bits on every machine.
				portable.Axpy(v, brow, drow)
			}
		}
	}
}

// axpyMin is the row width from which MulBlocks calls portable.Axpy
// rather than looping itself.
const axpyMin = 8

// overlap reports whether the elements of a and b share memory.
func overlap(a, b []float64) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	const size = unsafe.Sizeof(float64(0))
	a1 := a0 + uintptr(len(a))*size
	b1 := b0 + uintptr(len(b))*size
	return a0 < b1 && b0 < a1
}

// String returns a short description of m for debugging.
func (m *CSR) String() string {
	return fmt.Sprintf("CSR{N: %d, NNZ: %d}", m.N, len(m.Col))
}

// Reach returns, in increasing order, the nodes that rows nodes of a
// product by m applied hops times depend on: nodes themselves and every j
// reached from them in at most hops steps from a row to a column of its
// nonzeros. For a graph convolution of depth hops, these are the nodes whose
// inputs the outputs at nodes need.
func (m *CSR) Reach(nodes []int, hops int) ([]int, error) {
	if hops < 0 {
		return nil, fmt.Errorf("pems: reach: %d hops", hops)
	}
	in := make([]bool, m.N)
	frontier := make([]int, 0, len(nodes))
	for _, i := range nodes {
		if uint(i) >= uint(m.N) {
			return nil, fmt.Errorf("pems: reach: node %d outside [0, %d)", i, m.N)
		}
		if !in[i] {
			in[i] = true
			frontier = append(frontier, i)
		}
	}
	for range hops {
		var next []int
		for _, i := range frontier {
			for _, j := range m.Col[m.RowPtr[i]:m.RowPtr[i+1]] {
				if !in[j] {
					in[j] = true
					next = append(next, j)
				}
			}
		}
		frontier = next
	}
	out := make([]int, 0, len(nodes))
	for i, ok := range in {
		if ok {
			out = append(out, i)
		}
	}
	return out, nil
}

// Induced returns the submatrix of m on the rows and columns nodes, which
// must be increasing and inside [0, N); node nodes[k] of m is node k of the
// result. Entries keep their values and, within a row, their order, so a
// product by the result sums the same terms in the same order as one by m
// for every row whose nonzeros all lie in nodes.
func (m *CSR) Induced(nodes []int) (*CSR, error) {
	pos := make([]int, m.N)
	for i := range pos {
		pos[i] = -1
	}
	for k, i := range nodes {
		if uint(i) >= uint(m.N) {
			return nil, fmt.Errorf("pems: induced: node %d outside [0, %d)", i, m.N)
		}
		if k > 0 && i <= nodes[k-1] {
			return nil, fmt.Errorf("pems: induced: nodes not increasing (%d after %d)", i, nodes[k-1])
		}
		pos[i] = k
	}
	s := &CSR{N: len(nodes), RowPtr: make([]int, len(nodes)+1)}
	for k, i := range nodes {
		for e := m.RowPtr[i]; e < m.RowPtr[i+1]; e++ {
			if p := pos[m.Col[e]]; p >= 0 {
				s.Col = append(s.Col, p)
				s.Val = append(s.Val, m.Val[e])
			}
		}
		s.RowPtr[k+1] = len(s.Col)
	}
	return s, nil
}
