package sdgnn

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/portable"
	"github.com/pemsforecast/sdgnn/nn"
)

// Theta holds the sparse non-negative weights of every node: node z's
// receptive nodes Nodes[z] (sorted, each once) and their weights Weights[z].
//
// Silent, when not nil, holds a second set of weights over the same
// receptive nodes, Silent[z][i] that of Nodes[z][i], for a node whose own
// window is empty (every reading missing: a sensor fallen silent): Ẑ_z is
// then Σ Silent[z][i]·φ(H_k) (FitSilent). A node silent for its whole
// window has an embedding that says nothing of its traffic, so weights
// fitted to sensors that read (most of them on the node itself) forecast
// it from nothing; the silent weights lean on its receptive neighbours.
type Theta struct {
	Nodes   [][]int
	Weights [][]float64
	Silent  [][]float64
}

// N returns the number of nodes.
func (t *Theta) N() int { return len(t.Nodes) }

// MeanReceptive returns the mean number of receptive nodes per node.
func (t *Theta) MeanReceptive() float64 {
	var s int
	for _, ns := range t.Nodes {
		s += len(ns)
	}
	return float64(s) / float64(max(1, len(t.Nodes)))
}

// WithoutSelf returns the nodes that are not in their own receptive sets.
// Their forecasts ignore their own recent readings, and on SZ-taxi they are
// where a distillation that lost to its teacher lost most (see KeepSelf).
func (t *Theta) WithoutSelf() []int {
	var out []int
	for z, ns := range t.Nodes {
		if _, found := slices.BinarySearch(ns, z); !found {
			out = append(out, z)
		}
	}
	return out
}

// Validate reports what is wrong with t for a graph of n nodes.
func (t *Theta) Validate(n int) error {
	if len(t.Nodes) != n || len(t.Weights) != n {
		return fmt.Errorf("theta: %d node lists and %d weight lists for %d nodes", len(t.Nodes), len(t.Weights), n)
	}
	for z := range t.Nodes {
		if len(t.Nodes[z]) != len(t.Weights[z]) {
			return fmt.Errorf("theta: node %d has %d receptive nodes but %d weights", z, len(t.Nodes[z]), len(t.Weights[z]))
		}
		for i, k := range t.Nodes[z] {
			if k < 0 || k >= n {
				return fmt.Errorf("theta: node %d has receptive node %d outside [0,%d)", z, k, n)
			}
			if i > 0 && k <= t.Nodes[z][i-1] {
				return fmt.Errorf("theta: node %d's receptive nodes %v are not in increasing order", z, t.Nodes[z])
			}
			if w := t.Weights[z][i]; !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("theta: node %d weight %g for node %d is not a finite non-negative number", z, w, k)
			}
		}
	}
	if t.Silent == nil {
		return nil
	}
	if len(t.Silent) != n {
		return fmt.Errorf("theta: %d silent weight lists for %d nodes", len(t.Silent), n)
	}
	for z, ws := range t.Silent {
		if len(ws) != len(t.Nodes[z]) {
			return fmt.Errorf("theta: node %d has %d receptive nodes but %d silent weights", z, len(t.Nodes[z]), len(ws))
		}
		for i, w := range ws {
			if !(w >= 0) || math.IsInf(w, 0) {
				return fmt.Errorf("theta: node %d silent weight %g for node %d is not a finite non-negative number", z, w, t.Nodes[z][i])
			}
		}
	}
	return nil
}

// SilentCSR returns the silent weights as a sparse matrix of Θ's
// structure (row z holds Silent[z] over Nodes[z]), nil when t has none.
func (t *Theta) SilentCSR() *pems.CSR {
	if t.Silent == nil {
		return nil
	}
	w := &Theta{Nodes: t.Nodes, Weights: t.Silent}
	theta, _ := w.CSR()
	return theta
}

// CSR returns Θ as a sparse matrix whose row z holds θ_z, and its transpose.
// Ẑ = Θ·Φ stacks Ẑ_z = Σ_k θ_zk Φ_k; the transpose carries gradients back.
func (t *Theta) CSR() (theta, thetaT *pems.CSR) {
	n := t.N()
	theta = &pems.CSR{N: n, RowPtr: make([]int, n+1)}
	counts := make([]int, n+1)
	for z := range t.Nodes {
		for i, k := range t.Nodes[z] {
			theta.Col = append(theta.Col, k)
			theta.Val = append(theta.Val, t.Weights[z][i])
			counts[k+1]++
		}
		theta.RowPtr[z+1] = len(theta.Col)
	}
	thetaT = &pems.CSR{N: n, RowPtr: make([]int, n+1), Col: make([]int, len(theta.Col)), Val: make([]float64, len(theta.Val))}
	for k := 0; k < n; k++ {
		thetaT.RowPtr[k+1] = thetaT.RowPtr[k] + counts[k+1]
	}
	next := append([]int(nil), thetaT.RowPtr[:n]...)
	for z := range t.Nodes { // z increases, so columns of each row of Θᵀ come sorted
		for i, k := range t.Nodes[z] {
			thetaT.Col[next[k]] = z
			thetaT.Val[next[k]] = t.Weights[z][i]
			next[k]++
		}
	}
	return theta, thetaT
}

// nodeMajor rearranges snapshots [s0, s1) of snapshot-major rows (row s·n+i
// is node i of snapshot s, d columns) into one row per node holding its d
// values of each of those snapshots in turn: n × ((s1−s0)·d), written into
// dst (resized as nn.Resize does). Gram matrices over those snapshots are
// then dot products of contiguous rows.
func nodeMajor(dst, m *mat.Dense, n, s0, s1 int) *mat.Dense {
	_, d := m.Dims()
	dst = nn.Resize(dst, n, (s1-s0)*d)
	raw, o := m.RawMatrix(), dst.RawMatrix()
	for s := s0; s < s1; s++ {
		at := (s - s0) * d
		for i := 0; i < n; i++ {
			copy(o.Data[i*o.Stride+at:i*o.Stride+at+d], raw.Data[(s*n+i)*raw.Stride:(s*n+i)*raw.Stride+d])
		}
	}
	return dst
}

// phiRows returns the rows of φ(H) of snapshots [s0, s1), snapshot-major (n
// rows a snapshot), in dst (resized) or as a view. Phase Θ reads φ(H)
// through it a block of snapshots at a time, so that a student can compute
// each block when it is needed rather than hold φ(H) of every snapshot.
type phiRows func(dst *mat.Dense, s0, s1 int) *mat.Dense

// matrixRows returns the phiRows of a matrix already computed: views of it.
func matrixRows(phi *mat.Dense, n int) phiRows {
	_, d := phi.Dims()
	return func(_ *mat.Dense, s0, s1 int) *mat.Dense { return phi.Slice(s0*n, s1*n, 0, d).(*mat.Dense) }
}

// thetaChunkBytes bounds the node-major copy of φ(H) and of Z that Phase Θ
// holds at once: its products run over blocks of snapshots of at most this
// many bytes each (about 430 snapshots of PeMS04 at d = 16), so their
// memory does not grow with S. A copy of every snapshot would be 1.3 GB at
// PeMS04's size split by nodes, as much as the targets themselves.
const thetaChunkBytes = 16 << 20

// ThetaStats summarises one Phase Θ.
type ThetaStats struct {
	MeanReceptive float64 // mean |θ_z|₀
	MeanKKT       float64 // mean over nodes of the KKT violation at the returned λ, relative to max c
	Budget        int
}

// PhaseTheta solves, for every node z, the non-negative Lasso
//
//	min_θ ½ (1/S) Σ_s ‖Σ_{k∈C_z} θ_k φ(H_k^s) − Z_z^s‖² + λ1 ‖θ‖₁,  θ ≥ 0,
//
// over its candidates C_z by the positive LARS path, stopped after budget
// active nodes. phi holds φ(H) and z the teacher's Z, both snapshot-major
// (S·n × d). The Gram matrix of all nodes over all snapshots and the
// correlations with every target are computed once, in one pass over the
// snapshots (the entries the candidate sets read, a block of snapshots at a
// time); each node then works on its |C_z|×|C_z| block, so the cost after
// that does not grow with S. Nodes run in parallel.
//
// With refit, the weights of the nodes LARS selected are solved again by
// non-negative least squares on that support alone (a positive "relaxed
// Lasso"): the Lasso's L1 shrinkage, large when the path is stopped early by
// the budget, is removed while the selection is kept.
//
// With keepSelf, node z itself is not left to the path: its term is
// unpenalised and always in the support (as long as its least-squares
// weight is positive; a node whose own weight would be negative is solved
// on the plain path without refit, and keeps a zero weight with it), and LARS chooses at most budget−1 other nodes for
// what z's own embedding does not explain (the path runs on the Gram matrix
// and correlations with z's column partialled out, by Frisch–Waugh). On
// SZ-taxi the plain path sometimes leaves a node out of its own receptive
// set at small budgets, and that node's forecasts suffer (RESULTS.md).
func PhaseTheta(phi, z *mat.Dense, n int, cands [][]int, lambda1 float64, budget int, refit, keepSelf bool) (*Theta, ThetaStats, error) {
	if err := checkThetaInputs(phi, z, n, cands); err != nil {
		return nil, ThetaStats{}, err
	}
	return phaseTheta(matrixRows(phi, n), z, n, cands, lambda1, budget, refit, keepSelf)
}

// PhaseTheta solves Phase Θ (see the function PhaseTheta) for the targets t
// with φ(H) computed from t.H by s's φ a block of snapshots at a time, so
// that φ(H) of every snapshot (0.67 GB for PeMS04's training snapshots at d
// = 16) is never held. The weights it returns are not set in s.
func (s *Student) PhaseTheta(t *Targets, cands [][]int, lambda1 float64, budget int, refit, keepSelf bool) (*Theta, ThetaStats, error) {
	if err := checkThetaInputs(t.H, t.Z, t.Nodes, cands); err != nil {
		return nil, ThetaStats{}, err
	}
	return phaseTheta(s.phiRows(t.H, t.Nodes), t.Z, t.Nodes, cands, lambda1, budget, refit, keepSelf)
}

// checkThetaInputs checks that φ(H) (or H) and Z are snapshot-major rows
// of the same shape over n nodes, with a candidate set per node whose
// nodes are in [0, n) and distinct: a node given twice would have its
// correlation counted twice and the solution be another problem's.
func checkThetaInputs(phi, z *mat.Dense, n int, cands [][]int) error {
	r, d := phi.Dims()
	if zr, zd := z.Dims(); zr != r || zd != d || n <= 0 || r%n != 0 || len(cands) != n {
		return fmt.Errorf("phase theta: φ(H) %dx%d, Z %dx%d, %d candidate sets for %d nodes", r, d, zr, zd, len(cands), n)
	}
	seen := make([]int, n) // seen[k] = z+1: k is in z's set
	for z, c := range cands {
		for _, k := range c {
			switch {
			case k < 0 || k >= n:
				return fmt.Errorf("phase theta: node %d's candidate %d outside [0, %d)", z, k, n)
			case seen[k] == z+1:
				return fmt.Errorf("phase theta: node %d's candidates give node %d twice", z, k)
			}
			seen[k] = z + 1
		}
	}
	return nil
}

// phaseTheta is PhaseTheta with φ(H) read through phi.
func phaseTheta(phi phiRows, z *mat.Dense, n int, cands [][]int, lambda1 float64, budget int, refit, keepSelf bool) (*Theta, ThetaStats, error) {
	if budget < 1 {
		return nil, ThetaStats{}, fmt.Errorf("phase theta: budget %d, want at least 1 receptive node", budget)
	}
	gram, corr, err := thetaProducts(phi, z, n, cands, thetaChunkBytes)
	if err != nil {
		return nil, ThetaStats{}, err
	}
	theta := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	kkt := make([]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	work := make(chan int, n)
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for node := range work {
				c := cands[node]
				g, cv := nodeProblem(gram, corr, c, node)
				ids, ws, v, err := solveNode(g, cv, c, node, lambda1, budget, refit, keepSelf)
				if err != nil {
					errs[node] = fmt.Errorf("node %d: %w", node, err)
					continue
				}
				theta.Nodes[node], theta.Weights[node], kkt[node] = ids, ws, v
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, ThetaStats{}, fmt.Errorf("phase theta: %w", err)
		}
	}
	var mk float64
	for _, v := range kkt {
		mk += v
	}
	return theta, ThetaStats{MeanReceptive: theta.MeanReceptive(), MeanKKT: mk / float64(n), Budget: budget}, nil
}

// solveNode solves node's problem (Gram g and correlations cv over its
// candidates c) as PhaseTheta describes, returning the receptive nodes
// (sorted), their weights and the path's relative KKT violation.
func solveNode(g, cv []float64, c []int, node int, lambda1 float64, budget int, refit, keepSelf bool) ([]int, []float64, float64, error) {
	m := len(c)
	self := -1
	if keepSelf {
		self = slices.Index(c, node)
		if self >= 0 && !(g[self*m+self] > 0) {
			self = -1 // a zero embedding explains nothing: the plain path
		}
	}
	// The path's problem: all candidates, or the others with self
	// partialled out.
	idx := make([]int, 0, m) // indices into c of the path's columns
	for i := range c {
		if i != self {
			idx = append(idx, i)
		}
	}
	pg, pc, maxActive := g, cv, budget
	if self >= 0 {
		gss := g[self*m+self]
		k := len(idx)
		pg, pc = make([]float64, k*k), make([]float64, k)
		for a, i := range idx {
			pc[a] = cv[i] - g[i*m+self]*cv[self]/gss
			for b, j := range idx {
				pg[a*k+b] = g[i*m+j] - g[i*m+self]*g[self*m+j]/gss
			}
			pg[a*k+a] = max(pg[a*k+a], 0) // rounding below zero for a column collinear with self
		}
		maxActive = budget - 1
	}
	var sel []int // indices into c
	var ws []float64
	var kkt float64
	if len(idx) > 0 && maxActive > 0 {
		path, err := LARSPositive(pg, pc, lambda1, maxActive, 0)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, a := range path.Active {
			if path.Coef[a] > 0 {
				sel = append(sel, idx[a])
				ws = append(ws, path.Coef[a])
			}
		}
		var cmax float64
		for _, v := range pc {
			cmax = math.Max(cmax, math.Abs(v))
		}
		if cmax > 0 {
			kkt = KKTViolation(pg, pc, path.Lambda, path.Coef) / cmax
		}
	}
	if self >= 0 {
		// Self's least-squares weight given the others'.
		r := cv[self]
		for i, a := range sel {
			r -= float64(g[self*m+a] * ws[i])
		}
		if r < 0 && !refit {
			// The others' weights were solved with self's free to go
			// negative: clipped to zero, they would solve no problem.
			// Such a node is better explained without itself, and the
			// plain path solves that. (With refit, the support's NNLS
			// below gives every weight again, self's at zero.)
			return solveNode(g, cv, c, node, lambda1, budget, refit, false)
		}
		sel = append(sel, self)
		ws = append(ws, max(r/g[self*m+self], 0))
	}
	if refit && len(sel) > 0 {
		k := len(sel)
		gs, cs := make([]float64, k*k), make([]float64, k)
		for i, a := range sel {
			cs[i] = cv[a]
			for j, b := range sel {
				gs[i*k+j] = g[a*m+b]
			}
		}
		w, err := NNLS(gs, cs, 0)
		if err != nil && !errors.Is(err, ErrNotConverged) {
			return nil, nil, 0, fmt.Errorf("refit: %w", err)
		}
		if err == nil {
			ws = w
		}
	}
	var ids []int
	var weights []float64
	for i, a := range sel {
		if ws[i] > 0 {
			ids = append(ids, c[a])
			weights = append(weights, ws[i])
		}
	}
	sortPairs(ids, weights)
	return ids, weights, kkt, nil
}

// thetaProducts returns the entries of the Gram matrix of the nodes' φ(H)
// over all snapshots, and of their correlations with the nodes' Z, that the
// node problems read (see PhaseTheta): gram[j][k] for j and k candidates of
// one node, corr[k][z] for k a candidate of z; the other entries are zero.
// On a road graph that is a few percent of the n² entries of each full
// product (PeMS04: 3,622 of 47,278 Gram pairs, 2,909 of 94,249
// correlations), each a dot product over S·d values. They are summed over
// blocks of snapshots of at most chunkBytes in node-major layout (see
// thetaChunkBytes), so the memory they need beside Z is three such blocks
// (φ's rows as phi gives them, and both node-major copies) and the two n × n
// results.
func thetaProducts(phi phiRows, z *mat.Dense, n int, cands [][]int, chunkBytes int) (gram, corr *mat.Dense, err error) {
	r, d := z.Dims()
	// pairs[j] lists the k ≥ j with (j, k) in some C_z × C_z.
	need := make([]bool, n*n)
	for _, c := range cands {
		for _, a := range c {
			if a < 0 || a >= n {
				return nil, nil, fmt.Errorf("phase theta: candidate %d outside [0, %d)", a, n)
			}
			for _, b := range c {
				if a <= b {
					need[a*n+b] = true
				}
			}
		}
	}
	pairs := make([][]int, n)
	for j := range pairs {
		for k := j; k < n; k++ {
			if need[j*n+k] {
				pairs[j] = append(pairs[j], k)
			}
		}
	}
	S := r / n
	gram = mat.NewDense(n, n, nil) // gram[j][k] = (1/S) Σ_s φ(H_j^s)·φ(H_k^s)
	corr = mat.NewDense(n, n, nil) // corr[k][z] = (1/S) Σ_s φ(H_k^s)·Z_z^s
	gr, cr := gram.RawMatrix(), corr.RawMatrix()
	row := func(m blas64.General, i int) []float64 { return m.Data[i*m.Stride : i*m.Stride+m.Cols] }
	chunk := max(1, chunkBytes/(8*n*max(d, 1)))
	var rows, p, q *mat.Dense
	for s0 := 0; s0 < S; s0 += chunk {
		s1 := min(S, s0+chunk)
		rows = phi(rows, s0, s1)
		p, q = nodeMajor(p, rows, n, 0, s1-s0), nodeMajor(q, z, n, s0, s1)
		pr, qr := p.RawMatrix(), q.RawMatrix()
		// Every task adds to its own entries: (j, k) and (k, j) for its
		// j, and (k, z) for its z.
		nn.ParallelChunks(n, func(j int) {
			pj := row(pr, j)
			for _, k := range pairs[j] {
				v := portable.Dot(pj, row(pr, k))
				gr.Data[j*gr.Stride+k] += v
				if k != j {
					gr.Data[k*gr.Stride+j] += v
				}
			}
			qz := row(qr, j)
			for _, k := range cands[j] {
				cr.Data[k*cr.Stride+j] += portable.Dot(row(pr, k), qz)
			}
		})
	}
	gram.Scale(1/float64(S), gram)
	corr.Scale(1/float64(S), corr)
	return gram, corr, nil
}

// nodeProblem extracts node's Lasso problem over its candidates c: the
// Gram block (|c|×|c|, row-major) and the correlations with its target.
func nodeProblem(gram, corr *mat.Dense, c []int, node int) (g, cv []float64) {
	m := len(c)
	g, cv = make([]float64, m*m), make([]float64, m)
	for a, ka := range c {
		for b, kb := range c {
			g[a*m+b] = gram.At(ka, kb)
		}
		cv[a] = corr.At(ka, node)
	}
	return g, cv
}

// ThetaProblems returns the per-node problems PhaseTheta solves with
// LARSPositive: for node z the Gram block gs[z] (|C_z|×|C_z|, row-major) and
// the correlations cs[z]. For comparisons with other solvers on the same
// inputs (bench/).
func ThetaProblems(phi, z *mat.Dense, n int, cands [][]int) (gs, cs [][]float64, err error) {
	if err := checkThetaInputs(phi, z, n, cands); err != nil {
		return nil, nil, err
	}
	gram, corr, err := thetaProducts(matrixRows(phi, n), z, n, cands, thetaChunkBytes)
	if err != nil {
		return nil, nil, err
	}
	gs, cs = make([][]float64, n), make([][]float64, n)
	for node := range gs {
		gs[node], cs[node] = nodeProblem(gram, corr, cands[node], node)
	}
	return gs, cs, nil
}

// sortPairs sorts ids increasingly, permuting ws alongside.
func sortPairs(ids []int, ws []float64) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}
