package baseline

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// studentStream is the random stream of the students' initialisation and
// batches, the one sdgnn.Distill uses, so that for one seed PPRGo,
// SDGNN-Equal and SDGNN start φ from the same weights.
const studentStream = 0x5d6e

// student is what the training loop needs of a baseline's student.
type student interface {
	params() []*nn.Param
	// epoch takes one pass of Adam steps over the snapshots of t, shuffled
	// by rng, and returns the mean batch Z-matching MSE and similarity loss.
	epoch(t *sdgnn.Targets, opt *nn.Adam, rng *rand.Rand) (mse, sim float64, err error)
	// eachZHat calls f with Ẑ of successive blocks of rows of h, in order:
	// rows [lo, hi), in a buffer the next call overwrites.
	eachZHat(h *mat.Dense, f func(lo, hi int, zhat *mat.Dense))
}

// zhatAll returns st's Ẑ for every row of h; a new matrix.
func zhatAll(st student, h *mat.Dense) *mat.Dense {
	r, _ := h.Dims()
	var out *mat.Dense
	st.eachZHat(h, func(lo, hi int, zhat *mat.Dense) {
		_, d := zhat.Dims()
		if out == nil {
			out = mat.NewDense(r, d, nil)
		}
		out.Slice(lo, hi, 0, d).(*mat.Dense).Copy(zhat)
	})
	return out
}

// trainStudent trains st against the teacher's Z for cfg.Epochs epochs,
// validating after each by decoding Ẑ with the teacher's decoder tdec, and
// leaves st at the epoch with the best validation score (epoch 0, the
// untrained student, included). It returns the training record.
func trainStudent(ctx context.Context, st student, tdec *nn.MLP, norm snapshot.Normalizer, train, val *sdgnn.Targets, cfg Config, rng *rand.Rand) ([]Epoch, error) {
	ps := st.params()
	best := make([]*mat.Dense, len(ps))
	for i, p := range ps {
		best[i] = mat.DenseCopyOf(p.W)
	}
	bestScore := math.Inf(1)
	var hist []Epoch
	validate := func(ep Epoch, start time.Time) {
		num, den, m := sdgnn.ScoreZHat(st.eachZHat, tdec, norm, val, cfg.MAPEFloor)
		ep.NR, ep.Val = num/den, m
		if s := selectScore(cfg.Select, ep.Val); s < bestScore {
			bestScore, ep.Best = s, true
			for i, p := range ps {
				best[i].Copy(p.W)
			}
		}
		ep.Seconds = time.Since(start).Seconds()
		hist = append(hist, ep)
	}
	start := time.Now()
	sq, _, _ := sdgnn.ScoreZHat(st.eachZHat, nil, norm, train, 0)
	rows, _ := train.Z.Dims()
	validate(Epoch{TrainLoss: sq / float64(max(1, rows))}, start)
	opt := nn.NewAdam(cfg.LR, cfg.WeightDecay)
	for e := 1; e <= cfg.Epochs; e++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		loss, sim, err := st.epoch(train, opt, rng)
		if err != nil {
			return nil, fmt.Errorf("epoch %d: %w", e, err)
		}
		validate(Epoch{Epoch: e, TrainLoss: loss, SimLoss: sim}, start)
	}
	if math.IsInf(bestScore, 1) {
		return hist, fmt.Errorf("no epoch gave a finite validation %s, or the validation has no unmasked truth (last: %+v)", cfg.Select, hist[len(hist)-1].Val)
	}
	for i, p := range ps {
		p.W.Copy(best[i])
	}
	return hist, nil
}

// Sparse is a student Ẑ = Θ·φ(H) with fixed sparse weights Θ, followed by
// its fine-tuned decoder: PPRGo (Θ from PPR) and SDGNN-Equal (Θ from
// EqualWeights). Its parts fit sdgnn.NewBundle, so it can be served like
// SDGNN.
type Sparse struct {
	Student *sdgnn.Student // φ and Θ
	Decoder *nn.MLP
	Norm    snapshot.Normalizer

	name string
	hist []Epoch
}

// Name returns "PPRGo" or "SDGNN-Equal".
func (m *Sparse) Name() string { return m.name }

// Receptive returns Θ's receptive nodes of z (sorted; a copy), nil for z
// outside the graph.
func (m *Sparse) Receptive(z int) []int {
	if m.Student == nil || m.Student.Theta == nil || z < 0 || z >= m.Student.Theta.N() {
		return nil
	}
	return slices.Clone(m.Student.Theta.Nodes[z])
}

// MeanReceptive returns Θ's mean number of receptive nodes per node.
func (m *Sparse) MeanReceptive() float64 {
	if m.Student == nil || m.Student.Theta == nil {
		return 0
	}
	return m.Student.Theta.MeanReceptive()
}

// History returns the record of φ's training.
func (m *Sparse) History() []Epoch { return m.hist }

// Forecast returns the decoded Θ·φ(H) of t's snapshots on the original
// scale, row-major (snapshot, node, channel).
func (m *Sparse) Forecast(t *sdgnn.Targets) ([]float64, error) {
	if m.Student == nil || m.Student.Phi == nil || m.Student.Theta == nil || m.Decoder == nil {
		return nil, fmt.Errorf("%s forecast: model has no φ, Θ or decoder", m.name)
	}
	if err := checkTargets(t, m.Student.Theta.N(), m.Decoder.L1.In(), m.Decoder.L2.Out()); err != nil {
		return nil, fmt.Errorf("%s forecast: %w", m.name, err)
	}
	return decode(m.Decoder, m.Norm, m.Student.ZHatAll(t.H)), nil
}

// sparseStudent adapts sdgnn.Student to the training loop.
type sparseStudent struct {
	st    *sdgnn.Student
	batch int
}

func (s sparseStudent) params() []*nn.Param { return s.st.Phi.Params() }
func (s sparseStudent) eachZHat(h *mat.Dense, f func(lo, hi int, zhat *mat.Dense)) {
	s.st.EachZHat(h, f)
}
func (s sparseStudent) epoch(t *sdgnn.Targets, opt *nn.Adam, rng *rand.Rand) (float64, float64, error) {
	l, err := s.st.PhasePhi(t, opt, s.batch, rng)
	return l, 0, err
}

// TrainPPRGo trains PPRGo against the frozen teacher: Θ = PPR(neighbors,
// cfg.Alpha, cfg.TopK), φ trained by sdgnn's Phase φ for cfg.Epochs epochs
// from the initialisation sdgnn.Distill uses (the best epoch by validation
// kept), then a copy of the teacher's decoder dec fine-tuned on Ẑ by
// sdgnn.FineTuneDecoder. dec is not modified.
func TrainPPRGo(ctx context.Context, dec *nn.MLP, norm snapshot.Normalizer, neighbors [][]int, train, val *sdgnn.Targets, cfg Config) (*Sparse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pprgo: %w", err)
	}
	theta, err := PPR(neighbors, cfg.Alpha, cfg.TopK)
	if err != nil {
		return nil, fmt.Errorf("pprgo: %w", err)
	}
	return trainSparse(ctx, NamePPRGo, dec, norm, theta, train, val, cfg)
}

// TrainSDGNNEqual trains the SDGNN-Equal ablation: SDGNN's receptive nodes
// theta (from a distilled bundle) with equal weights (EqualWeights), φ
// retrained from scratch as in TrainPPRGo and the decoder fine-tuned.
// Neither theta nor dec is modified.
func TrainSDGNNEqual(ctx context.Context, dec *nn.MLP, norm snapshot.Normalizer, theta *sdgnn.Theta, train, val *sdgnn.Targets, cfg Config) (*Sparse, error) {
	if theta == nil {
		return nil, fmt.Errorf("sdgnn-equal: no Θ")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sdgnn-equal: %w", err)
	}
	return trainSparse(ctx, NameSDGNNEqual, dec, norm, EqualWeights(theta), train, val, cfg)
}

// trainSparse trains φ for the fixed Θ theta and fine-tunes the decoder.
func trainSparse(ctx context.Context, name string, dec *nn.MLP, norm snapshot.Normalizer, theta *sdgnn.Theta, train, val *sdgnn.Targets, cfg Config) (*Sparse, error) {
	if err := checkInputs(dec, norm, train, val); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, studentStream))
	st := sdgnn.NewStudent(train.Nodes, train.Dim, cfg.Hidden, rng)
	if err := st.SetTheta(theta); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	tdec, err := copyMLP("dec", dec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hist, err := trainStudent(ctx, sparseStudent{st, cfg.Batch}, tdec, norm, train, val, cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.FineTuneEpochs > 0 {
		if tdec, err = sdgnn.FineTuneDecoder(ctx, tdec, st, norm, train, val, cfg.sdgnnConfig()); err != nil {
			return nil, fmt.Errorf("%s: fine-tune decoder: %w", name, err)
		}
	}
	return &Sparse{Student: st, Decoder: tdec, Norm: norm, name: name, hist: hist}, nil
}

// Graphless is a student that maps each node's own GRU embedding, with
// NOSMOG's positional encoding appended, to Ẑ_z through an MLP g, followed
// by its fine-tuned decoder: GLNN and NOSMOG. Its receptive field is the
// node itself.
type Graphless struct {
	G       *nn.MLP    // (d + p) → hidden → d, softplus
	PE      *mat.Dense // n × p positional encodings (NOSMOG); nil for GLNN (p = 0)
	Nodes   int
	Decoder *nn.MLP
	Norm    snapshot.Normalizer

	name string
	hist []Epoch
}

// Name returns "GLNN" or "NOSMOG".
func (m *Graphless) Name() string { return m.name }

// Receptive returns z alone, nil for z outside the graph.
func (m *Graphless) Receptive(z int) []int {
	if z < 0 || z >= m.Nodes {
		return nil
	}
	return []int{z}
}

// MeanReceptive returns 1: every forecast reads only its own node's window.
func (m *Graphless) MeanReceptive() float64 { return 1 }

// History returns the record of g's training.
func (m *Graphless) History() []Epoch { return m.hist }

// Forecast returns the decoded g(H_z ‖ PE_z) of t's snapshots on the
// original scale, row-major (snapshot, node, channel).
func (m *Graphless) Forecast(t *sdgnn.Targets) ([]float64, error) {
	if m.G == nil || m.Decoder == nil {
		return nil, fmt.Errorf("%s forecast: model has no MLP or decoder", m.name)
	}
	p := 0
	if m.PE != nil {
		var r int
		if r, p = m.PE.Dims(); r != m.Nodes {
			return nil, fmt.Errorf("%s forecast: positional encodings of %d nodes for %d", m.name, r, m.Nodes)
		}
	}
	if in, d := m.G.L1.In(), m.Decoder.L1.In(); in != d+p || m.G.L2.Out() != d {
		return nil, fmt.Errorf("%s forecast: MLP maps %d → %d, want %d → %d", m.name, in, m.G.L2.Out(), d+p, d)
	}
	if err := checkTargets(t, m.Nodes, m.Decoder.L1.In(), m.Decoder.L2.Out()); err != nil {
		return nil, fmt.Errorf("%s forecast: %w", m.name, err)
	}
	return decode(m.Decoder, m.Norm, graphlessZHat(m.G, m.PE, m.Nodes, t.H)), nil
}

// graphlessStudent adapts g to the training loop.
type graphlessStudent struct {
	g         *nn.MLP
	pe        *mat.Dense
	n, batch  int
	simWeight float64
	simNodes  int
}

func (s *graphlessStudent) params() []*nn.Param { return s.g.Params() }
func (s *graphlessStudent) eachZHat(h *mat.Dense, f func(lo, hi int, zhat *mat.Dense)) {
	graphlessEachZHat(s.g, s.pe, s.n, h, f)
}

func (s *graphlessStudent) epoch(t *sdgnn.Targets, opt *nn.Adam, rng *rand.Rand) (float64, float64, error) {
	n, d := s.n, t.Dim
	ps := s.g.Params()
	batches := snapshot.Batches(snapshot.Range{End: t.Snapshots()}, s.batch, rng)
	var x, h, z, dz *mat.Dense
	var sumMSE, sumSim float64
	for _, idx := range batches {
		rows := len(idx) * n
		h, z, dz = sdgnn.GatherSnapshots(h, t.H, n, idx), sdgnn.GatherSnapshots(z, t.Z, n, idx), nn.Resize(dz, rows, d)
		x = graphlessInput(x, h, s.pe, n, 0)
		var subsets [][]int
		if s.simWeight > 0 {
			subsets = make([][]int, len(idx))
			for b := range subsets {
				subsets[b] = rng.Perm(n)[:min(n, s.simNodes)]
			}
		}
		m, sim, err := batchLoss(s.g, x, z, n, subsets, s.simWeight, dz)
		if err != nil {
			return 0, 0, err
		}
		nn.ZeroGrad(ps)
		s.g.Backward(dz)
		if err := opt.Step(ps); err != nil {
			return 0, 0, err
		}
		sumMSE += m
		sumSim += sim
	}
	k := float64(max(1, len(batches)))
	return sumMSE / k, sumSim / k, nil
}

// graphlessInput returns x (reused when its shape fits) holding the rows of
// h with the positional encoding of each row's node appended; row i of h is
// node (first+i) mod n. With pe nil it returns h itself.
func graphlessInput(x, h, pe *mat.Dense, n, first int) *mat.Dense {
	if pe == nil {
		return h
	}
	r, d := h.Dims()
	_, p := pe.Dims()
	x = nn.Resize(x, r, d+p)
	x.Slice(0, r, 0, d).(*mat.Dense).Copy(h)
	xr, pr := x.RawMatrix(), pe.RawMatrix()
	for i := 0; i < r; i++ {
		node := (first + i) % n
		copy(xr.Data[i*xr.Stride+d:i*xr.Stride+d+p], pr.Data[node*pr.Stride:node*pr.Stride+p])
	}
	return x
}

// graphlessZHat returns g(H ‖ PE) for every row of the snapshot-major h; a
// new matrix.
func graphlessZHat(g *nn.MLP, pe *mat.Dense, n int, h *mat.Dense) *mat.Dense {
	r, _ := h.Dims()
	out := mat.NewDense(r, g.L2.Out(), nil)
	graphlessEachZHat(g, pe, n, h, func(lo, hi int, zhat *mat.Dense) {
		out.Slice(lo, hi, 0, g.L2.Out()).(*mat.Dense).Copy(zhat)
	})
	return out
}

// graphlessEachZHat calls f with g(H ‖ PE) of successive blocks of rows of
// the snapshot-major h, in order, in g's own buffer.
func graphlessEachZHat(g *nn.MLP, pe *mat.Dense, n int, h *mat.Dense, f func(lo, hi int, zhat *mat.Dense)) {
	r, d := h.Dims()
	var x *mat.Dense
	for lo := 0; lo < r; lo += decodeChunkRows {
		hi := min(lo+decodeChunkRows, r)
		x = graphlessInput(x, h.Slice(lo, hi, 0, d).(*mat.Dense), pe, n, lo)
		f(lo, hi, g.Forward(x))
	}
}

// batchLoss runs g forward on the batch x (whole snapshots of n nodes) and
// returns the mean squared error of Ẑ against z per row and the mean over
// snapshots of SimilarityLoss over each snapshot's node subset (none when
// subsets is nil), writing the gradient of mse + w·sim with respect to Ẑ
// into dz, ready for g.Backward.
func batchLoss(g *nn.MLP, x, z *mat.Dense, n int, subsets [][]int, w float64, dz *mat.Dense) (mse, sim float64, err error) {
	zhat := g.Forward(x)
	rows, d := zhat.Dims()
	if zr, zc := z.Dims(); zr != rows || zc != d || rows%n != 0 {
		return 0, 0, fmt.Errorf("batch loss: Ẑ %dx%d, Z %dx%d, %d nodes", rows, d, zr, zc, n)
	}
	zr, hr, dr := z.RawMatrix().Data, zhat.RawMatrix().Data, dz.RawMatrix().Data
	inv := 1 / float64(rows)
	for i := range zr {
		e := hr[i] - zr[i]
		mse += float64(e * e) // rounded: the same on every machine
		dr[i] = 2 * e * inv
	}
	mse *= inv
	if len(subsets) == 0 {
		return mse, 0, nil
	}
	if len(subsets) != rows/n {
		return 0, 0, fmt.Errorf("batch loss: %d node subsets for %d snapshots", len(subsets), rows/n)
	}
	scale := w / float64(len(subsets))
	for b, sub := range subsets {
		m := len(sub)
		a, t, ga := mat.NewDense(m, d, nil), mat.NewDense(m, d, nil), mat.NewDense(m, d, nil)
		for i, node := range sub {
			if node < 0 || node >= n {
				return 0, 0, fmt.Errorf("batch loss: node %d outside [0,%d)", node, n)
			}
			a.SetRow(i, zhat.RawRowView(b*n+node))
			t.SetRow(i, z.RawRowView(b*n+node))
		}
		l, err := SimilarityLoss(a, t, ga)
		if err != nil {
			return 0, 0, err
		}
		sim += l
		for i, node := range sub {
			row := dz.RawRowView(b*n + node)
			for k, v := range ga.RawRowView(i) {
				row[k] += float64(scale * v)
			}
		}
	}
	return mse, sim / float64(len(subsets)), nil
}

// TrainGLNN trains GLNN (Zhang et al., ICLR 2022) against the frozen
// teacher: an MLP g (d → cfg.Hidden → d, softplus) from each node's own
// GRU embedding H_z to Ẑ_z, trained by Adam on the mean squared error
// against the teacher's Z for cfg.Epochs epochs (the best epoch by
// validation kept), then a copy of the teacher's decoder dec fine-tuned on
// Ẑ against the ground truth. dec is not modified.
func TrainGLNN(ctx context.Context, dec *nn.MLP, norm snapshot.Normalizer, train, val *sdgnn.Targets, cfg Config) (*Graphless, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("glnn: %w", err)
	}
	return trainGraphless(ctx, NameGLNN, dec, norm, nil, train, val, cfg, 0)
}

// TrainNOSMOG trains NOSMOG (Tian et al., ICLR 2023) against the frozen
// teacher: GLNN whose MLP reads H_z with node z's DeepWalk positional
// encoding appended (PositionalEncodings of the road graph with cfg.Walk),
// trained on the mean squared error against Z plus cfg.SimWeight times the
// representation-similarity loss (SimilarityLoss) over cfg.SimNodes nodes
// drawn per snapshot. NOSMOG's adversarial feature augmentation (0.1 times
// the loss on inputs perturbed by 5 steps of PGD within an ε-ball, added to
// its training loss) is left out.
// dec is not modified.
func TrainNOSMOG(ctx context.Context, dec *nn.MLP, norm snapshot.Normalizer, neighbors [][]int, train, val *sdgnn.Targets, cfg Config) (*Graphless, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("nosmog: %w", err)
	}
	if train != nil && len(neighbors) != train.Nodes {
		return nil, fmt.Errorf("nosmog: graph of %d nodes for targets of %d", len(neighbors), train.Nodes)
	}
	pe, err := PositionalEncodings(neighbors, cfg.Walk)
	if err != nil {
		return nil, fmt.Errorf("nosmog: %w", err)
	}
	return trainGraphless(ctx, NameNOSMOG, dec, norm, pe, train, val, cfg, cfg.SimWeight)
}

// trainGraphless trains g and fine-tunes the decoder.
func trainGraphless(ctx context.Context, name string, dec *nn.MLP, norm snapshot.Normalizer, pe *mat.Dense, train, val *sdgnn.Targets, cfg Config, simWeight float64) (*Graphless, error) {
	if err := checkInputs(dec, norm, train, val); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	n, d := train.Nodes, train.Dim
	p := 0
	if pe != nil {
		_, p = pe.Dims()
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, studentStream))
	st := &graphlessStudent{g: nn.NewMLP("g", d+p, cfg.Hidden, d, rng), pe: pe, n: n, batch: cfg.Batch, simWeight: simWeight, simNodes: cfg.SimNodes}
	tdec, err := copyMLP("dec", dec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	hist, err := trainStudent(ctx, st, tdec, norm, train, val, cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.FineTuneEpochs > 0 {
		zTrain := zhatAll(st, train.H)
		zVal := zTrain // a node split's parts share their snapshots
		if val.H != train.H {
			zVal = zhatAll(st, val.H)
		}
		if tdec, err = sdgnn.FineTuneDecoderZ(ctx, tdec, zTrain, zVal, norm, train, val, cfg.sdgnnConfig()); err != nil {
			return nil, fmt.Errorf("%s: fine-tune decoder: %w", name, err)
		}
	}
	return &Graphless{G: st.g, PE: pe, Nodes: n, Decoder: tdec, Norm: norm, name: name, hist: hist}, nil
}

var (
	_ Model = (*Sparse)(nil)
	_ Model = (*Graphless)(nil)
)
