// Package gru holds a gated recurrent unit shared by all nodes of a graph: it
// encodes each node's window of the last T readings into a d-dimensional
// embedding, for a whole batch of (snapshot, node) rows at once.
//
// The cell is the GRU of Cho et al. (2014), the reset gate applied to h
// before its product:
//
//	z = σ(x·Wz + h·Uz + bz)
//	r = σ(x·Wr + h·Ur + br)
//	n = tanh(x·Wn + (r⊙h)·Un + bn)
//	h' = (1−z)⊙h + z⊙n
//
// with h₀ = 0. It is not PyTorch's torch.nn.GRU, which the reference
// GRU-GCN (Gao & Ribeiro's code, tsl) uses: that cell has
// n = tanh(x·Wn + b_in + r⊙(h·Un + b_hn)), the reset gate applied after
// the product and a second candidate bias b_hn inside it, and two bias
// vectors (b_ih + b_hh) for z and r, which one vector here parametrises
// equally. Its h' = (1−z)⊙n + z⊙h is this one's with z's pre-activation
// negated, the same function class under the symmetric initialisation.
//
// The three input projections are one matrix Wx = [Wz|Wr|Wn] and
// the two recurrent gate projections one matrix Uzr = [Uz|Ur], so that each
// step costs three matrix products over a block of rows (nn.MulAdd, fused
// multiply-adds in vector registers where the machine has them, the same
// bits everywhere). The gates' activations run four at a time (nn.SigmoidTo,
// nn.TanhTo), and so do the cell's elementwise steps forward and back
// (cell.go), again with the same bits on every machine.
//
// Rows are independent sequences, so the batch is cut into blocks of
// blockRows rows, each carried through all steps, forward and back, on one
// goroutine. Inference (Encode) cuts it instead into blocks of equal
// width, as many as a multiple of the cores, for the same embeddings bit
// for bit. Within a block the activations are stored feature-major (one
// row per hidden unit, one column per sequence): with tens of features and
// hundreds of sequences, the products then run along vectors of the block's
// length rather than of the hidden width, several times faster.
//
// "The same bits on every machine" is checked, not assumed: TestGoldenBits
// holds a forward pass and its gradients to hashes of their bits written
// on amd64, and CI runs it on arm64 (under qemu), where every kernel runs
// in Go and the compiler fuses products into additions wherever the code
// lets it.
package gru

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
)

// GRU is a single-layer GRU with input width In and hidden width Hidden.
type GRU struct {
	In, Hidden int
	Wx         *nn.Param // In × 3·Hidden: input projections of z, r, n
	Uzr        *nn.Param // Hidden × 2·Hidden: recurrent projections of z, r
	Un         *nn.Param // Hidden × Hidden: recurrent projection of n
	B          *nn.Param // 1 × 3·Hidden: biases of z, r, n

	// Transposed weights, refreshed by each Forward and used by Backward.
	wxT, uzrT, unT blas64.General

	blocks  []*block // state of the last Forward, one per block of rows
	cache   []*block // blocks allocated so far; blocks is a prefix of it
	rows    int      // rows of the last Forward; 0 before the first
	encoded bool     // the last pass was Encode's, whose blocks Backward does not take
	out     *mat.Dense
}

// blockRows is the number of rows (sequences) that one goroutine carries
// through every step of Forward and Backward. A block's activations stay in
// cache from one step to the next, and its products run serially, so the
// cores are shared out once per pass instead of several times per step.
// The size is fixed, not derived from the
// core count, so that gradients, summed over blocks in block order, are the
// same bit for bit on every machine.
const blockRows = 128

// minEncodeRows is the narrowest block Encode cuts a batch into when it
// shares the batch out over the cores: below it, a goroutine's start
// costs more than its share of the work saves.
const minEncodeRows = 32

// block holds one block's activations, feature-major: gx is 3H × R, the
// others H × R, for R rows of the batch.
type block struct {
	lo, hi int
	capR   int              // the rows its arrays hold: a batch of up to capR rows reuses them
	xs     []blas64.General // per step, In × R: the block's inputs transposed
	steps  []blockStep
	h0     blas64.General // H × R zeros
	bias   blas64.General // 3H × R: row j all the bias of gate row j, each step's gx before its products
	// Work buffers and gradients of Backward.
	dh, dgx, drh          blas64.General
	dwx, duzr, dun, dbias blas64.General
}

type blockStep struct {
	gx          blas64.General // pre-activations of z, r, n: 3H × R
	z, r, rh, n blas64.General
	h           blas64.General
}

func dense(r, c int) blas64.General {
	return blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
}

// rowsOf returns rows [lo, hi) of the feature-major matrix m.
func rowsOf(m blas64.General, lo, hi int) blas64.General {
	return blas64.General{Rows: hi - lo, Cols: m.Cols, Stride: m.Stride, Data: m.Data[lo*m.Stride : hi*m.Stride]}
}

// reshape views b's arrays as those of rows [lo, hi), hi−lo at most
// b.capR, without allocating: every matrix with one column per row is
// re-cut from the start of its array. Forward and Backward write every
// value they read, except h0's, whose array stays zero.
func (b *block) reshape(lo, hi int) {
	R := hi - lo
	view := func(m *blas64.General) {
		*m = blas64.General{Rows: m.Rows, Cols: R, Stride: R, Data: m.Data[:m.Rows*R]}
	}
	b.lo, b.hi = lo, hi
	for _, m := range []*blas64.General{&b.h0, &b.bias, &b.dh, &b.dgx, &b.drh} {
		view(m)
	}
	for t := range b.steps {
		view(&b.xs[t])
		s := &b.steps[t]
		for _, m := range []*blas64.General{&s.gx, &s.z, &s.r, &s.rh, &s.n, &s.h} {
			view(m)
		}
	}
}

func (g *GRU) newBlock(lo, hi, steps int) *block {
	H, R := g.Hidden, hi-lo
	b := &block{lo: lo, hi: hi, capR: R, h0: dense(H, R), bias: dense(3*H, R),
		dh: dense(H, R), dgx: dense(3*H, R), drh: dense(H, R),
		dwx: dense(3*H, g.In), duzr: dense(2*H, H), dun: dense(H, H), dbias: dense(1, 3*H)}
	b.xs = make([]blas64.General, steps)
	b.steps = make([]blockStep, steps)
	for t := range b.steps {
		b.xs[t] = dense(g.In, R)
		b.steps[t] = blockStep{gx: dense(3*H, R), z: dense(H, R), r: dense(H, R), rh: dense(H, R), n: dense(H, R), h: dense(H, R)}
	}
	return b
}

// NumParams returns the number of values in the parameters of
// New(in, hidden, rng), and false if it does not fit in an int (see
// nn.CountParams).
func NumParams(in, hidden int) (int, bool) {
	return nn.CountParams([]int{in, 3, hidden}, []int{hidden, 2, hidden}, []int{hidden, hidden}, []int{3, hidden})
}

// New returns a GRU whose weights are drawn from U(−1/√H, 1/√H), PyTorch's
// default initialisation, with the given random source.
func New(in, hidden int, rng *rand.Rand) *GRU {
	g := &GRU{
		In: in, Hidden: hidden,
		Wx:  nn.NewParam("gru.Wx", in, 3*hidden),
		Uzr: nn.NewParam("gru.Uzr", hidden, 2*hidden),
		Un:  nn.NewParam("gru.Un", hidden, hidden),
		B:   nn.NewParam("gru.b", 1, 3*hidden),
	}
	a := 1 / math.Sqrt(float64(hidden))
	for _, p := range g.Params() {
		d := p.W.RawMatrix().Data
		for i := range d {
			d[i] = (2*rng.Float64() - 1) * a
		}
	}
	return g
}

// Params returns the GRU's parameters.
func (g *GRU) Params() []*nn.Param { return []*nn.Param{g.Wx, g.Uzr, g.Un, g.B} }

// transpose sets dst (allocated when its shape differs) to the transpose of m.
func transpose(dst *blas64.General, m *mat.Dense) {
	r, c := m.Dims()
	if dst.Rows != c || dst.Cols != r {
		*dst = dense(c, r)
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			dst.Data[j*dst.Stride+i] = m.At(i, j)
		}
	}
}

// ensure sizes the blocks for a window of t steps over rows rows, cut into
// blocks of width rows (the last one narrower). Blocks are kept from one
// call to the next and reused where their window matches and their arrays
// are large enough, so that batches of different sizes (training, then
// validation, each pass's short last batch, and the streaming service's
// batches of whatever embeddings are due) allocate only for rows never
// seen before.
func (g *GRU) ensure(t, rows, width int) {
	n := (rows + width - 1) / width
	for len(g.cache) < n {
		g.cache = append(g.cache, nil)
	}
	for i := range n {
		lo, hi := i*width, min((i+1)*width, rows)
		switch b := g.cache[i]; {
		case b == nil || len(b.steps) != t || b.capR < hi-lo:
			g.cache[i] = g.newBlock(lo, hi, t)
		case b.lo != lo || b.hi != hi:
			b.reshape(lo, hi)
		}
	}
	g.blocks, g.rows = g.cache[:n], rows
	g.out = nn.Resize(g.out, rows, g.Hidden)
}

// Forward runs the GRU over the window xs (xs[t] is rows × In, one row per
// sequence) and returns the last hidden state, rows × Hidden. The result is
// owned by g and overwritten by the next Forward. Backward uses the state of
// the last Forward, not xs, which the caller may change at once.
func (g *GRU) Forward(xs []*mat.Dense) (*mat.Dense, error) {
	if err := g.check(xs); err != nil {
		return nil, err
	}
	rows, _ := xs[0].Dims()
	g.ensure(len(xs), rows, blockRows)
	g.encoded = false
	return g.run(xs), nil
}

// Encode is Forward for inference: the same embeddings, bit for bit, but
// the batch is cut to keep the cores evenly busy rather than into the
// fixed blocks that Backward's sums need. A batch of a few hundred rows
// (the streaming service's embeddings of one slot) becomes one block per
// core of nearly equal width instead of full blocks and a short one, and
// widths are multiples of the product kernel's 8 columns. Backward may
// not follow Encode.
func (g *GRU) Encode(xs []*mat.Dense) (*mat.Dense, error) {
	return g.encode(xs, runtime.GOMAXPROCS(0))
}

// encode is Encode for the given number of goroutines.
func (g *GRU) encode(xs []*mat.Dense, workers int) (*mat.Dense, error) {
	if err := g.check(xs); err != nil {
		return nil, err
	}
	rows, _ := xs[0].Dims()
	g.ensure(len(xs), rows, encodeWidth(rows, workers))
	g.encoded = true
	return g.run(xs), nil
}

// encodeWidth returns the block width Encode cuts rows rows into for
// workers goroutines: as many blocks as a multiple of workers, none wider
// than blockRows nor, unless the batch is, narrower than about
// minEncodeRows, of equal widths rounded up to a multiple of 8.
func encodeWidth(rows, workers int) int {
	n := (rows + blockRows - 1) / blockRows
	n = (n + workers - 1) / workers * workers
	n = max(1, min(n, rows/minEncodeRows))
	w := (rows + n - 1) / n
	return (w + 7) / 8 * 8
}

// check returns an error unless xs is a window of one or more steps of
// equal rows, each In wide.
func (g *GRU) check(xs []*mat.Dense) error {
	if len(xs) == 0 {
		return fmt.Errorf("gru forward: empty window")
	}
	rows, _ := xs[0].Dims()
	for t, x := range xs {
		r, c := x.Dims()
		if r != rows || c != g.In {
			return fmt.Errorf("gru forward: step %d input is %dx%d, want %dx%d", t, r, c, rows, g.In)
		}
	}
	if rows == 0 {
		return fmt.Errorf("gru forward: no rows")
	}
	return nil
}

// run carries every block of the batch, as ensure cut it, through the
// window and returns the last hidden states.
func (g *GRU) run(xs []*mat.Dense) *mat.Dense {
	transpose(&g.wxT, g.Wx.W)
	transpose(&g.uzrT, g.Uzr.W)
	transpose(&g.unT, g.Un.W)
	if len(g.blocks) == 1 {
		g.forward(g.blocks[0], xs) // no closure: a small batch allocates nothing
	} else {
		nn.ParallelChunks(len(g.blocks), func(i int) { g.forward(g.blocks[i], xs) })
	}
	return g.out
}

// forward carries block b through every step and writes its last hidden
// state to its rows of g.out.
func (g *GRU) forward(b *block, xs []*mat.Dense) {
	H, R := g.Hidden, b.hi-b.lo
	for j, v := range g.B.W.RawRowView(0) {
		row := b.bias.Data[j*R : (j+1)*R]
		for i := range row {
			row[i] = v
		}
	}
	hPrev := b.h0
	for t, x := range xs {
		s := &b.steps[t]
		xt, raw := b.xs[t], x.RawMatrix()
		for i := 0; i < R; i++ {
			for c, v := range raw.Data[(b.lo+i)*raw.Stride : (b.lo+i)*raw.Stride+g.In] {
				xt.Data[c*R+i] = v
			}
		}
		// Gate pre-activations: Wxᵀ·x + b, then + Uzrᵀ·h on the z and r rows.
		copy(s.gx.Data, b.bias.Data)
		nn.MulAdd(s.gx, g.wxT, xt)
		nn.MulAdd(rowsOf(s.gx, 0, 2*H), g.uzrT, hPrev)
		nn.SigmoidTo(s.z.Data, s.gx.Data[:H*R])
		nn.SigmoidTo(s.r.Data, s.gx.Data[H*R:2*H*R])
		mulTo(s.rh.Data, s.r.Data, hPrev.Data)
		// Candidate: tanh(Wnᵀ·x + b_n + Unᵀ·(r⊙h)).
		nn.MulAdd(rowsOf(s.gx, 2*H, 3*H), g.unT, s.rh)
		nn.TanhTo(s.n.Data, s.gx.Data[2*H*R:])
		blend(s.h.Data, s.z.Data, s.n.Data, hPrev.Data)
		hPrev = s.h
	}
	out := g.out.RawMatrix()
	for i := 0; i < R; i++ {
		row := out.Data[(b.lo+i)*out.Stride:]
		for j := 0; j < H; j++ {
			row[j] = hPrev.Data[j*R+i]
		}
	}
}

// Backward accumulates the parameter gradients for dH, the gradient of the
// loss with respect to the output of the last Forward (rows × Hidden). The
// inputs are data, so no input gradient is computed. Each block is taken back
// through time on its own goroutine into gradients of its own, which are then
// added to the parameters' in block order.
func (g *GRU) Backward(dH *mat.Dense) error {
	if len(g.blocks) == 0 {
		return fmt.Errorf("gru backward: no forward pass")
	}
	if g.encoded {
		return fmt.Errorf("gru backward: the last pass was Encode, not Forward")
	}
	if r, c := dH.Dims(); r != g.rows || c != g.Hidden {
		return fmt.Errorf("gru backward: gradient is %dx%d, want %dx%d", r, c, g.rows, g.Hidden)
	}
	nn.ParallelChunks(len(g.blocks), func(i int) { g.backward(g.blocks[i], dH) })
	bias := g.B.G.RawRowView(0)
	for _, b := range g.blocks {
		// The block's gradients are of the transposed weights.
		addTransposed(g.Wx.G, b.dwx)
		addTransposed(g.Uzr.G, b.duzr)
		addTransposed(g.Un.G, b.dun)
		for j, v := range b.dbias.Data {
			bias[j] += v
		}
	}
	return nil
}

// addTransposed adds mᵀ to dst.
func addTransposed(dst *mat.Dense, m blas64.General) {
	d := dst.RawMatrix()
	for j := 0; j < m.Rows; j++ {
		for c, v := range m.Data[j*m.Stride : j*m.Stride+m.Cols] {
			d.Data[c*d.Stride+j] += v
		}
	}
}

// addRowSums adds to sums[j] the sum of row j of m (rows of r values),
// each summed in order; four rows at a time, so that four chains of
// additions run side by side.
func addRowSums(sums, m []float64, r int) {
	j := 0
	for ; j+4 <= len(sums); j += 4 {
		r0, r1, r2, r3 := m[j*r:(j+1)*r], m[(j+1)*r:(j+2)*r], m[(j+2)*r:(j+3)*r], m[(j+3)*r:(j+4)*r]
		var s0, s1, s2, s3 float64
		for i, v := range r0 {
			s0 += v
			s1 += r1[i]
			s2 += r2[i]
			s3 += r3[i]
		}
		sums[j] += s0
		sums[j+1] += s1
		sums[j+2] += s2
		sums[j+3] += s3
	}
	for ; j < len(sums); j++ {
		var s float64
		for _, v := range m[j*r : (j+1)*r] {
			s += v
		}
		sums[j] += s
	}
}

// backward takes block b back through every step, into its own gradients of
// the transposed weights.
func (g *GRU) backward(b *block, dH *mat.Dense) {
	H, R := g.Hidden, b.hi-b.lo
	for _, m := range []blas64.General{b.dwx, b.duzr, b.dun, b.dbias} {
		clear(m.Data)
	}
	dh, dgx, drh := b.dh.Data, b.dgx.Data, b.drh.Data
	raw := dH.RawMatrix()
	for i := 0; i < R; i++ {
		for j, v := range raw.Data[(b.lo+i)*raw.Stride : (b.lo+i)*raw.Stride+H] {
			dh[j*R+i] = v
		}
	}
	dz, dr, dan := dgx[:H*R], dgx[H*R:2*H*R], dgx[2*H*R:]
	for t := len(b.steps) - 1; t >= 0; t-- {
		s := &b.steps[t]
		hp := b.h0
		if t > 0 {
			hp = b.steps[t-1].h
		}
		cellBack(dz, dan, dh, s.z.Data, s.n.Data, hp.Data)
		danM := rowsOf(b.dgx, 2*H, 3*H)
		nn.MulAddTB(b.dun, danM, s.rh)
		clear(drh)
		nn.MulAddTA(b.drh, g.unT, danM)
		gateBack(dh, dr, drh, s.r.Data, hp.Data)
		nn.MulAddTB(b.dwx, b.dgx, b.xs[t])
		addRowSums(b.dbias.Data, dgx, R)
		dzr := rowsOf(b.dgx, 0, 2*H)
		nn.MulAddTB(b.duzr, dzr, hp)
		nn.MulAddTA(b.dh, g.uzrT, dzr)
	}
}
