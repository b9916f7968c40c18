package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// WalkConfig says how PositionalEncodings samples random walks and trains
// the skip-gram embeddings.
type WalkConfig struct {
	Dim          int     `json:"dim"`            // embedding width
	WalkLength   int     `json:"walk_length"`    // nodes per walk, the start included
	WalksPerNode int     `json:"walks_per_node"` // walks started from every node
	Window       int     `json:"window"`         // context nodes on each side of a centre node
	Negatives    int     `json:"negatives"`      // negative samples per (centre, context) pair
	Epochs       int     `json:"epochs"`         // SGD passes over the walks
	LR           float64 `json:"lr"`             // initial SGD step, decayed linearly to LR/1000
	Seed         uint64  `json:"seed"`
}

// DefaultWalkConfig returns DeepWalk's usual settings scaled to road graphs:
// 10 walks of length 20 per node, window 5, 8 dimensions, 5 negative samples
// per pair, 5 epochs of SGD from a step of 0.025 (word2vec's default).
func DefaultWalkConfig() WalkConfig {
	return WalkConfig{Dim: 8, WalkLength: 20, WalksPerNode: 10, Window: 5, Negatives: 5, Epochs: 5, LR: 0.025, Seed: 1}
}

// Validate reports what is wrong with c.
func (c WalkConfig) Validate() error {
	if c.Dim < 1 || c.WalkLength < 2 || c.WalksPerNode < 1 || c.Window < 1 || c.Negatives < 1 || c.Epochs < 1 || !(c.LR > 0) || math.IsInf(c.LR, 0) {
		return fmt.Errorf("walk config %+v: sizes must be positive, walks at least 2 long and the step a positive number", c)
	}
	return nil
}

// PositionalEncodings returns DeepWalk embeddings (Perozzi et al., KDD 2014)
// of the nodes of the undirected graph given by its adjacency lists, one row
// per node: NOSMOG's positional features, which let a graph-less MLP tell
// nodes apart by where they lie on the road network.
//
// From every node, cfg.WalksPerNode uniform random walks of cfg.WalkLength
// nodes are drawn; every pair of nodes at most cfg.Window apart on a walk is
// a (centre, context) pair of a skip-gram model with negative sampling
// (Mikolov et al., 2013), negatives drawn from the walks' node frequencies
// to the power 3/4, trained by plain SGD with a linearly decaying step over
// cfg.Epochs shuffled passes. The centre ("input") vectors are returned,
// each column standardised to mean 0 and variance 1 so that their scale
// matches no particular training run. Walks that reach an isolated node stay
// there. NOSMOG's own code trains DeepWalk with gensim's hierarchical
// softmax switched on beside negative sampling (hs=1); here it is negative
// sampling alone, the objective DeepWalk's and NOSMOG's papers state, and a
// negative drawn equal to the context is kept, as that objective has it
// (gensim and word2vec skip it).
//
// Everything is drawn from one generator seeded by cfg.Seed and the work is
// sequential, so the result is a deterministic function of the graph and
// cfg, the same on every machine (portable's Exp and Pow, products rounded;
// TestGoldenBits). The adjacency lists must be symmetric with ids in [0, n).
func PositionalEncodings(neighbors [][]int, cfg WalkConfig) (*mat.Dense, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("positional encodings: %w", err)
	}
	adj, err := cleanAdjacency(neighbors)
	if err != nil {
		return nil, fmt.Errorf("positional encodings: %w", err)
	}
	n, dim := len(adj), cfg.Dim
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xdeed))

	walks := make([][]int, 0, n*cfg.WalksPerNode)
	freq := make([]float64, n)
	for r := 0; r < cfg.WalksPerNode; r++ {
		for start := 0; start < n; start++ {
			w := make([]int, cfg.WalkLength)
			w[0] = start
			for i := 1; i < len(w); i++ {
				if ns := adj[w[i-1]]; len(ns) > 0 {
					w[i] = ns[rng.IntN(len(ns))]
				} else {
					w[i] = w[i-1]
				}
			}
			for _, v := range w {
				freq[v]++
			}
			walks = append(walks, w)
		}
	}
	// Cumulative unigram^0.75 distribution for negative samples.
	cum := make([]float64, n)
	var total float64
	for i, f := range freq {
		total += portable.Pow(f, 0.75)
		cum[i] = total
	}
	negative := func() int {
		u := rng.Float64() * total
		return min(n-1, sort.SearchFloat64s(cum, u))
	}

	in := make([]float64, n*dim)  // centre vectors
	out := make([]float64, n*dim) // context vectors, zero at the start as in word2vec
	for i := range in {
		in[i] = (rng.Float64() - 0.5) / float64(dim)
	}
	pairsPerEpoch := 0
	for _, w := range walks {
		for i := range w {
			pairsPerEpoch += min(len(w)-1, i+cfg.Window) - max(0, i-cfg.Window)
		}
	}
	steps := float64(cfg.Epochs * pairsPerEpoch)
	grad := make([]float64, dim)
	done := 0
	for e := 0; e < cfg.Epochs; e++ {
		order := rng.Perm(len(walks))
		for _, wi := range order {
			w := walks[wi]
			for i, centre := range w {
				for j := max(0, i-cfg.Window); j <= min(len(w)-1, i+cfg.Window); j++ {
					if j == i {
						continue
					}
					lr := cfg.LR * math.Max(1e-3, 1-float64(done)/steps)
					done++
					u := in[centre*dim : (centre+1)*dim]
					clear(grad)
					for s := 0; s <= cfg.Negatives; s++ {
						target, label := w[j], 1.0
						if s > 0 {
							target, label = negative(), 0
						}
						v := out[target*dim : (target+1)*dim]
						var dot float64
						for k := range u {
							dot += float64(u[k] * v[k])
						}
						// Gradient step on log σ(u·v) (label 1) or log σ(−u·v) (label 0).
						g := lr * (label - sigmoid(dot))
						for k := range u {
							grad[k] += float64(g * v[k])
							v[k] += float64(g * u[k])
						}
					}
					for k := range u {
						u[k] += grad[k]
					}
				}
			}
		}
	}
	pe := mat.NewDense(n, dim, in)
	standardiseColumns(pe)
	return pe, nil
}

// sigmoid is the logistic function, clamped so that exp cannot overflow.
func sigmoid(x float64) float64 {
	x = math.Max(-30, math.Min(30, x))
	return 1 / (1 + portable.Exp(-x))
}

// standardiseColumns shifts and scales every column of m to mean 0 and
// (population) variance 1; a constant column becomes zero.
func standardiseColumns(m *mat.Dense) {
	r, c := m.Dims()
	for j := 0; j < c; j++ {
		var mean, sq float64
		for i := 0; i < r; i++ {
			mean += m.At(i, j)
		}
		mean /= float64(r)
		for i := 0; i < r; i++ {
			d := m.At(i, j) - mean
			sq += float64(d * d)
		}
		sd := math.Sqrt(sq / float64(r))
		for i := 0; i < r; i++ {
			v := 0.0
			if sd > 1e-12 {
				v = (m.At(i, j) - mean) / sd
			}
			m.Set(i, j, v)
		}
	}
}
