package baseline

import (
	"fmt"
	"math"
	"slices"

	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
)

// pprTol is the accuracy to which PPR computes the PageRank vectors: the
// Euclidean distance of each returned vector from the exact solution is at
// most pprTol.
const pprTol = 1e-8

// pprMaxIter caps the power iteration; it is only reached for a teleport
// probability so small that convergence would take impractically long.
const pprMaxIter = 100000

// PPR returns, for every node z of the undirected graph given by its
// adjacency lists, the personalised PageRank weights of PPRGo (Bojchevski et
// al., KDD 2020): the topK nodes a random walk with restart from z is most
// likely at, weighted by their "sym" scores renormalised to sum to one.
//
// As PPRGo's code does (topk_ppr_matrix), the nodes are chosen by the
// random walk's PageRank p_z[k] = [α (I − (1−α) P)^-1]_zk on the
// row-stochastic P = D^-1 A (A binary, without self loops; D its degrees;
// teleporting back to z with probability alpha), and weighted by PPRGo's
// default "sym" normalisation of it, √d_z p_z[k] / √d_k, which is the
// PageRank on the symmetric normalised adjacency Â = D^-1/2 A D^-1/2:
//
//	π_z = α (I − (1−α) Â)^-1 e_z,    p_z[k] = π_z[k] √(d_k/d_z).
//
// (Â is symmetric, so the row and column conventions agree.) The choice by
// p_z favours, against π_z, nodes of larger degree. PPRGo does not
// renormalise the k weights; here they sum to one, as SDGNN's Θ is
// compared with. π_z is computed by power iteration, x ← α e_z + (1−α) Â x
// from x = α e_z, to within 1e-8 in Euclidean norm (‖Â‖₂ ≤ 1 makes the
// iteration contract by 1−α).
//
// Ties in the top-k selection, ranks equal to within rounding (1e-12
// relative), are broken by the smaller node id, so the result is
// deterministic and nodes that a symmetry of the graph makes equal are
// chosen by id, not by rounding; nodes with a zero score are never
// selected, so a node of a small component keeps fewer than topK nodes. A
// zero score means outside z's connected component or, for a teleport
// probability near 1, farther from z than the iteration's steps reach
// before it stops (about log(1e-8)/log(1−α): 8 steps at α = 0.9, against
// 113 at the default 0.15), so that then a node may keep fewer than topK
// nodes of its own component too. An isolated node keeps itself with
// weight one. z itself usually, but not necessarily, is chosen. Each node's receptive nodes are
// returned sorted, as sdgnn.Theta requires.
//
// Adjacency lists may repeat a neighbour or list the node itself (both are
// ignored) but must be symmetric, with ids in [0, n); alpha must be in (0, 1]
// and topK positive.
func PPR(neighbors [][]int, alpha float64, topK int) (*sdgnn.Theta, error) {
	if !(alpha > 0 && alpha <= 1) {
		return nil, fmt.Errorf("ppr: teleport probability %g outside (0, 1]", alpha)
	}
	if topK < 1 {
		return nil, fmt.Errorf("ppr: top-k %d: need at least 1", topK)
	}
	adj, err := cleanAdjacency(neighbors)
	if err != nil {
		return nil, fmt.Errorf("ppr: %w", err)
	}
	n := len(adj)
	theta := &sdgnn.Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	errs := make([]error, n)
	nn.ParallelChunks(n, func(z int) {
		pi, err := pprScores(adj, alpha, z)
		if err != nil {
			errs[z] = err
			return
		}
		theta.Nodes[z], theta.Weights[z] = topKNormalised(pi, walkScores(pi, adj), topK)
	})
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("ppr: %w", err)
		}
	}
	return theta, nil
}

// cleanAdjacency returns sorted adjacency lists without self loops or
// repeats, after checking that ids are in range and that the lists are
// symmetric.
func cleanAdjacency(neighbors [][]int) ([][]int, error) {
	n := len(neighbors)
	if n == 0 {
		return nil, fmt.Errorf("empty graph")
	}
	adj := make([][]int, n)
	for i, ns := range neighbors {
		for _, j := range ns {
			if j < 0 || j >= n {
				return nil, fmt.Errorf("node %d has neighbour %d outside [0,%d)", i, j, n)
			}
			if j != i {
				adj[i] = append(adj[i], j)
			}
		}
		slices.Sort(adj[i])
		adj[i] = slices.Compact(adj[i])
	}
	for i, ns := range adj {
		for _, j := range ns {
			if _, ok := slices.BinarySearch(adj[j], i); !ok {
				return nil, fmt.Errorf("node %d lists neighbour %d but not the reverse: the graph must be undirected", i, j)
			}
		}
	}
	return adj, nil
}

// pprScores returns the PageRank vector π_z of node z on the symmetric
// normalised adjacency of adj (clean, symmetric lists), to within pprTol in
// Euclidean norm.
func pprScores(adj [][]int, alpha float64, z int) ([]float64, error) {
	n := len(adj)
	inv := make([]float64, n) // D^-1/2, zero for isolated nodes
	for i, ns := range adj {
		if len(ns) > 0 {
			inv[i] = 1 / math.Sqrt(float64(len(ns)))
		}
	}
	x, next := make([]float64, n), make([]float64, n)
	x[z] = alpha
	// After an update of size δ the remaining error is at most δ(1−α)/α.
	stop := pprTol * alpha / math.Max(1-alpha, 1e-300)
	for it := 0; it < pprMaxIter; it++ {
		var delta float64
		for i, ns := range adj {
			var s float64
			for _, j := range ns {
				s += float64(inv[j] * x[j]) // products rounded: the same scores on every machine (see nn)
			}
			v := float64((1 - alpha) * inv[i] * s)
			if i == z {
				v += alpha
			}
			next[i] = v
			delta += float64((v - x[i]) * (v - x[i]))
		}
		x, next = next, x
		if math.Sqrt(delta) <= stop {
			return x, nil
		}
	}
	return nil, fmt.Errorf("node %d: power iteration did not reach %g in %d steps (teleport probability %g)", z, pprTol, pprMaxIter, alpha)
}

// walkScores returns π_z[k] √d_k for every node k: the random walk's
// PageRank p_z up to the factor √d_z, common to z's scores (see PPR). An
// isolated node counts with a degree of 1e-12, as in PPRGo.
func walkScores(pi []float64, adj [][]int) []float64 {
	out := make([]float64, len(pi))
	for k, v := range pi {
		out[k] = v * math.Sqrt(math.Max(float64(len(adj[k])), 1e-12))
	}
	return out
}

// pprTieTol is the relative difference below which two ranks count as
// tied. Nodes that a symmetry of the graph makes equal get ranks a few ulps
// apart (the power iteration sums their neighbours in different orders), a
// difference of rounding that must not decide between them.
const pprTieTol = 1e-12

// topKNormalised returns the ids (sorted) of the k nodes of positive score
// with the largest rank, ties (ranks within pprTieTol of each other, relative)
// going to the smaller id, with their scores divided by their sum.
func topKNormalised(scores, rank []float64, k int) ([]int, []float64) {
	ids := make([]int, 0, len(scores))
	for i, s := range scores {
		if s > 0 {
			ids = append(ids, i)
		}
	}
	slices.SortStableFunc(ids, func(a, b int) int {
		switch {
		case rank[a] > rank[b]:
			return -1
		case rank[a] < rank[b]:
			return 1
		}
		return a - b
	})
	// Runs of ranks within pprTieTol of the run's largest are ties: order
	// them by id.
	for lo := 0; lo < len(ids) && lo < k; {
		hi := lo + 1
		for hi < len(ids) && rank[ids[lo]]-rank[ids[hi]] <= pprTieTol*rank[ids[lo]] {
			hi++
		}
		slices.Sort(ids[lo:hi])
		lo = hi
	}
	ids = ids[:min(k, len(ids))]
	slices.Sort(ids)
	ws := make([]float64, len(ids))
	var sum float64
	for i, id := range ids {
		ws[i] = scores[id]
		sum += ws[i]
	}
	for i := range ws {
		ws[i] /= sum
	}
	return ids, ws
}

// EqualWeights returns a copy of t that keeps every node's receptive nodes
// but gives them equal weights 1/|R_z|: SDGNN-Equal, the paper's ablation of
// the learned weights. A node without receptive nodes keeps none; a nil t
// gives nil.
func EqualWeights(t *sdgnn.Theta) *sdgnn.Theta {
	if t == nil {
		return nil
	}
	out := &sdgnn.Theta{Nodes: make([][]int, len(t.Nodes)), Weights: make([][]float64, len(t.Nodes))}
	for z, ns := range t.Nodes {
		out.Nodes[z] = slices.Clone(ns)
		out.Weights[z] = make([]float64, len(ns))
		for i := range ns {
			out.Weights[z][i] = 1 / float64(len(ns))
		}
	}
	return out
}
