// Package gcn holds graph convolution layers (Kipf & Welling) that mix node
// embeddings over a road graph: Y = Â·X·W + b, where Â is the symmetric
// normalised adjacency D^-1/2 (A+I) D^-1/2.
//
// Batches stack the node embeddings of several snapshots: rows b·N … b·N+N−1
// of X belong to snapshot b, and Â is applied to each block of N rows.
package gcn

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
)

// Propagator applies the graph operator Â to every block of N rows of b,
// writing dst (same shape, not aliasing b). The operator must be symmetric:
// the backward pass applies it again as its own transpose. *pems.CSR from
// datasets/pems satisfies it.
type Propagator interface {
	MulBlocks(dst, b *mat.Dense)
}

// Layer is one graph convolution Y = Â·X·W + b.
type Layer struct {
	Lin *nn.Linear

	xw, dxw *mat.Dense
}

// NewLayer returns a Glorot-initialised in→out graph convolution.
func NewLayer(name string, in, out int, rng *rand.Rand) *Layer {
	return &Layer{Lin: nn.NewLinear(name, in, out, rng)}
}

// Params returns the layer's parameters.
func (l *Layer) Params() []*nn.Param { return l.Lin.Params() }

// Forward sets dst = Â·x·W + b. x must stay unchanged until Backward.
func (l *Layer) Forward(dst, x *mat.Dense, a Propagator) {
	r, _ := x.Dims()
	l.xw = nn.Resize(l.xw, r, l.Lin.Out())
	nn.Gemm(false, false, 1, x, l.Lin.W.W, 0, l.xw)
	a.MulBlocks(dst, l.xw)
	nn.AddRowVector(dst, l.Lin.B.W)
}

// Backward accumulates the parameter gradients for dy and, when dx is not
// nil, sets dx to the gradient with respect to x.
func (l *Layer) Backward(dx, x, dy *mat.Dense, a Propagator) {
	r, _ := x.Dims()
	l.dxw = nn.Resize(l.dxw, r, l.Lin.Out())
	a.MulBlocks(l.dxw, dy) // Âᵀ = Â
	nn.Gemm(true, false, 1, x, l.dxw, 1, l.Lin.W.G)
	nn.AddColSums(l.Lin.B.G, dy)
	if dx != nil {
		nn.Gemm(false, true, 1, l.dxw, l.Lin.W.W, 0, dx)
	}
}

// GCN is the teacher's graph network with a linear skip connection, as in
// the tsl library's GRUGCNModel (softplus after every convolution, then
// + Linear(H)). It has one or two graph convolutions:
//
//	Z = softplus(Â·softplus(Â·H·W1 + b1)·W2 + b2) + H·Ws + bs  (two layers)
//	Z = softplus(Â·H·W1 + b1) + H·Ws + bs                     (one layer)
//
// It maps the GRU embeddings H to the mixed embeddings Z that SDGNN learns to
// approximate; Z of a node depends on the nodes within Layers() hops of it.
// The skip term keeps each node's own embedding from being averaged away by
// the smoothing convolutions; for SDGNN it is part of the contribution of the
// node itself, which every candidate set contains.
//
// Gao & Ribeiro's own time-then-graph code (GRUoGCNx2), which the SDGNN
// paper's PeMS teacher comes from, differs: with S = softplus(H) it has
// Z = Â·softplus(Â·S·W1 + b1)·W2 + b2 + S, an identity skip of S and no
// activation after the last convolution, Â from PyTorch Geometric's
// GCNConv (self-loops, symmetric) over edges weighted by min-max scaled
// road distances, and its decoder reads softplus(Z).
//
// With a gate (EnableGate), the skip reads, node by node, a mix of the
// node's own embedding and its neighbourhood's, weighed by a gate computed
// from its own:
//
//	Z = softplus(…) + H̃·Ws + bs,  H̃ = g ⊙ H + (1 − g) ⊙ Â·H,  g = σ(H·wg + bg)
//
// so that a node whose embedding says its window was empty (a GRU that
// reads missing marks can say so) can shut its gate and take its
// neighbours' embeddings in place of its own: the decoder then reads a Z
// of the kind it reads for every node, made of what the neighbours saw.
// Without a gate, the skip adds the node's own embedding whatever it
// holds, and a node silent for its whole window is forecast from an empty
// embedding.
type GCN struct {
	L1   *Layer
	L2   *Layer // nil for a one-layer GCN
	Skip *nn.Linear
	Gate *nn.Linear // in→1 gate of the skip; nil: no gate

	h, a1, s1, a2, z, sk, da1, da2, dh    *mat.Dense
	gpre, gate, ah, mix, dmix, dah, dgate *mat.Dense
}

// GateBias is the initial bias of a gate: σ(2) ≈ 0.88, a skip reading
// mostly the node's own embedding, as in a GCN without a gate, until
// training shuts it where it should be.
const GateBias = 2

// EnableGate gives g a gate on its skip (see GCN), its weights
// Glorot-drawn from rng and its bias GateBias.
func (g *GCN) EnableGate(rng *rand.Rand) {
	g.Gate = nn.NewLinear("gcn.gate", g.Skip.In(), 1, rng)
	g.Gate.B.W.Set(0, 0, GateBias)
}

// New returns a two-layer GCN of widths in→hidden→out with an in→out skip.
// It is NewLayers(2, in, hidden, out, rng).
func New(in, hidden, out int, rng *rand.Rand) *GCN {
	return NewLayers(2, in, hidden, out, rng)
}

// NumParams returns the number of values in the parameters of
// NewLayers(layers, in, hidden, out, rng), and false if layers is not 1 or
// 2 or the count does not fit in an int (see nn.CountParams).
func NumParams(layers, in, hidden, out int) (int, bool) {
	return NumParamsGated(layers, in, hidden, out, false)
}

// NumParamsGated is NumParams for a GCN with a gate on its skip
// (EnableGate) when gated.
func NumParamsGated(layers, in, hidden, out int, gated bool) (int, bool) {
	n, ok := numParams(layers, in, hidden, out)
	if !gated || !ok {
		return n, ok
	}
	gate, ok := nn.CountParams([]int{in, 1}, []int{1})
	if !ok {
		return 0, false
	}
	return nn.CountParams([]int{n}, []int{gate})
}

func numParams(layers, in, hidden, out int) (int, bool) {
	lin := func(i, o int) [][]int { return [][]int{{i, o}, {o}} }
	switch layers {
	case 1:
		return nn.CountParams(append(lin(in, out), lin(in, out)...)...)
	case 2:
		return nn.CountParams(append(append(lin(in, hidden), lin(hidden, out)...), lin(in, out)...)...)
	}
	return 0, false
}

// NewLayers returns a GCN with the given number of graph convolutions, 1 or
// 2, and an in→out skip. Two layers have widths in→hidden→out; one layer maps
// in→out directly and ignores hidden. For two layers the parameters are drawn
// from rng exactly as New draws them. NewLayers panics if layers is not 1 or
// 2.
func NewLayers(layers, in, hidden, out int, rng *rand.Rand) *GCN {
	switch layers {
	case 1:
		return &GCN{
			L1:   NewLayer("gcn.l1", in, out, rng),
			Skip: nn.NewLinear("gcn.skip", in, out, rng),
		}
	case 2:
		return &GCN{
			L1:   NewLayer("gcn.l1", in, hidden, rng),
			L2:   NewLayer("gcn.l2", hidden, out, rng),
			Skip: nn.NewLinear("gcn.skip", in, out, rng),
		}
	}
	panic(fmt.Sprintf("gcn: %d layers, want 1 or 2", layers))
}

// Layers returns the number of graph convolutions of g, 1 or 2.
func (g *GCN) Layers() int {
	if g.L2 == nil {
		return 1
	}
	return 2
}

// Params returns the GCN's parameters: those of L1, of L2 when there is one,
// of Skip, then of Gate when there is one.
func (g *GCN) Params() []*nn.Param {
	ps := g.L1.Params()
	if g.L2 != nil {
		ps = append(ps, g.L2.Params()...)
	}
	ps = append(ps, g.Skip.Params()...)
	if g.Gate != nil {
		ps = append(ps, g.Gate.Params()...)
	}
	return ps
}

// Forward returns Z for the stacked embeddings h; the result is owned by g.
// h must stay unchanged until Backward.
func (g *GCN) Forward(h *mat.Dense, a Propagator) *mat.Dense {
	r, _ := h.Dims()
	g.h = h
	g.a1 = nn.Resize(g.a1, r, g.L1.Lin.Out())
	g.L1.Forward(g.a1, h, a)
	last := g.a1
	if g.L2 != nil {
		g.s1 = nn.Resize(g.s1, r, g.L1.Lin.Out())
		g.a2 = nn.Resize(g.a2, r, g.L2.Lin.Out())
		nn.ApplyTo(g.s1, g.a1, nn.SoftplusTo)
		g.L2.Forward(g.a2, g.s1, a)
		last = g.a2
	}
	g.z = nn.Resize(g.z, r, g.Skip.Out())
	nn.ApplyTo(g.z, last, nn.SoftplusTo)
	g.sk = nn.Resize(g.sk, r, g.Skip.Out())
	if g.Gate == nil {
		g.Skip.Forward(g.sk, h)
		g.z.Add(g.z, g.sk)
		return g.z
	}
	g.Skip.Forward(g.sk, g.gateMix(h, a))
	g.z.Add(g.z, g.sk)
	return g.z
}

// gateMix computes the gate of every row of h and returns the skip's
// input H̃ = g ⊙ H + (1 − g) ⊙ Â·H (owned by g).
func (g *GCN) gateMix(h *mat.Dense, a Propagator) *mat.Dense {
	r, c := h.Dims()
	g.gpre, g.gate = nn.Resize(g.gpre, r, 1), nn.Resize(g.gate, r, 1)
	g.ah, g.mix = nn.Resize(g.ah, r, c), nn.Resize(g.mix, r, c)
	g.Gate.Forward(g.gpre, h)
	nn.SigmoidTo(g.gate.RawMatrix().Data, g.gpre.RawMatrix().Data)
	a.MulBlocks(g.ah, h)
	hr, ad, md, gd := h.RawMatrix(), g.ah.RawMatrix().Data, g.mix.RawMatrix().Data, g.gate.RawMatrix().Data
	for i, gi := range gd {
		own := hr.Data[i*hr.Stride : i*hr.Stride+c]
		for j, v := range own {
			md[i*c+j] = float64(gi*v) + float64((1-gi)*ad[i*c+j]) // rounded: no machine fuses them
		}
	}
	return g.mix
}

// GateValues returns the gate of every row of the last Forward (rows × 1,
// owned by g), nil without a gate: how much of the skip's input was the
// node's own embedding rather than its neighbourhood's.
func (g *GCN) GateValues() *mat.Dense {
	if g.Gate == nil {
		return nil
	}
	return g.gate
}

// softplusBackward sets dst = dy ⊙ softplus'(a) = dy ⊙ σ(a). dst and a are
// contiguous and of the same shape as dy, which may be a view.
func softplusBackward(dst, dy, a *mat.Dense) {
	r, c := a.Dims()
	ad, dd, y := a.RawMatrix().Data, dst.RawMatrix().Data, dy.RawMatrix()
	nn.ParallelRows(r, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(dd[i*c:(i+1)*c], y.Data[i*y.Stride:i*y.Stride+c])
		}
		nn.MulSigmoid(dd[lo*c:hi*c], ad[lo*c:hi*c])
	})
}

// Backward accumulates parameter gradients for dz and returns the gradient
// with respect to the input embeddings (owned by g).
func (g *GCN) Backward(dz *mat.Dense, a Propagator) (*mat.Dense, error) {
	if g.h == nil {
		return nil, fmt.Errorf("gcn backward: no forward pass")
	}
	r, c := g.h.Dims()
	if zr, zc := dz.Dims(); zr != r || zc != g.Skip.Out() {
		return nil, fmt.Errorf("gcn backward: gradient is %d×%d, want %d×%d", zr, zc, r, g.Skip.Out())
	}
	g.da1 = nn.Resize(g.da1, r, g.L1.Lin.Out())
	g.dh = nn.Resize(g.dh, r, c)
	if g.L2 == nil {
		softplusBackward(g.da1, dz, g.a1)
	} else {
		g.da2 = nn.Resize(g.da2, r, g.L2.Lin.Out())
		softplusBackward(g.da2, dz, g.a2)
		g.L2.Backward(g.da1, g.s1, g.da2, a) // da1 holds the gradient of s1
		softplusBackward(g.da1, g.da1, g.a1)
	}
	g.L1.Backward(g.dh, g.h, g.da1, a)
	if g.Gate != nil {
		g.gateBackward(dz, a)
		return g.dh, nil
	}
	// Skip connection: its input gradient adds to dh.
	nn.Gemm(true, false, 1, g.h, dz, 1, g.Skip.W.G)
	nn.AddColSums(g.Skip.B.G, dz)
	nn.Gemm(false, true, 1, dz, g.Skip.W.W, 1, g.dh)
	return g.dh, nil
}

// gateBackward takes dz back through the gated skip of the last Forward:
// it accumulates the skip's and the gate's parameter gradients and adds
// their input gradients to g.dh, through the own embedding, the
// neighbourhood's (Âᵀ = Â) and the gate.
func (g *GCN) gateBackward(dz *mat.Dense, a Propagator) {
	r, c := g.h.Dims()
	g.dmix, g.dgate = nn.Resize(g.dmix, r, c), nn.Resize(g.dgate, r, 1)
	nn.Gemm(true, false, 1, g.mix, dz, 1, g.Skip.W.G)
	nn.AddColSums(g.Skip.B.G, dz)
	nn.Gemm(false, true, 1, dz, g.Skip.W.W, 0, g.dmix) // ∂/∂H̃
	hr, dh := g.h.RawMatrix(), g.dh.RawMatrix()
	dm, ad, gd, dg := g.dmix.RawMatrix().Data, g.ah.RawMatrix().Data, g.gate.RawMatrix().Data, g.dgate.RawMatrix().Data
	for i, gi := range gd {
		own, dhi := hr.Data[i*hr.Stride:i*hr.Stride+c], dh.Data[i*dh.Stride:i*dh.Stride+c]
		var s float64
		for j, v := range own {
			d := dm[i*c+j]
			s += float64(d * (v - ad[i*c+j]))
			dhi[j] += float64(gi * d)
			dm[i*c+j] = float64((1 - gi) * d) // now ∂/∂(Â·H)
		}
		dg[i] = float64(s*gi) * (1 - gi) // σ' = σ(1−σ)
	}
	// Â·H's share goes back through Â, its own transpose.
	g.dah = nn.Resize(g.dah, r, c)
	a.MulBlocks(g.dah, g.dmix)
	g.dh.Add(g.dh, g.dah)
	nn.Gemm(true, false, 1, g.h, g.dgate, 1, g.Gate.W.G)
	nn.AddColSums(g.Gate.B.G, g.dgate)
	nn.Gemm(false, true, 1, g.dgate, g.Gate.W.W, 1, g.dh)
}

// Dense is a Propagator backed by a dense N×N matrix. It is meant for tests
// and tiny graphs; production code uses the sparse normalised adjacency.
type Dense struct{ A *mat.Dense }

// MulBlocks implements Propagator. Like pems.CSR's, it panics with
// mat.ErrShape unless b's rows are a multiple of A's and dst has b's shape.
func (d Dense) MulBlocks(dst, b *mat.Dense) {
	n, _ := d.A.Dims()
	r, c := b.Dims()
	if rd, cd := dst.Dims(); r%n != 0 || rd != r || cd != c {
		panic(mat.ErrShape)
	}
	for k := 0; k < r/n; k++ {
		out := dst.Slice(k*n, (k+1)*n, 0, c).(*mat.Dense)
		in := b.Slice(k*n, (k+1)*n, 0, c).(*mat.Dense)
		out.Mul(d.A, in)
	}
}
