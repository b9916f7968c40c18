package sdgnn

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// FileKindBundle is the checkpoint kind of a bundle file.
const FileKindBundle = "sdgnn-bundle"

// tensorSilent names the tensor of Θ's silent weights (Theta.Silent), in
// the order of theta.val; bundles without silent weights, those written
// before they existed among them, have none.
const tensorSilent = "theta.silent"

// BundleMeta describes a bundle: the data it was distilled on and how.
type BundleMeta struct {
	Dataset  string              `json:"dataset"`
	Nodes    int                 `json:"nodes"`
	Channels []string            `json:"channel_names"`
	Window   int                 `json:"window"`
	Hidden   int                 `json:"hidden"`
	Norm     snapshot.Normalizer `json:"norm"`
	Split    snapshot.Split      `json:"split"`
	Teacher  string              `json:"teacher,omitempty"` // path of the teacher model file
	// Graph identifies the road graph the bundle was distilled on, as its
	// teacher read it (snapshot.Prepared.GraphFingerprint): Θ's node ids
	// name roads of that graph only. nil in bundles written before it was
	// kept.
	Graph *pems.GraphFingerprint `json:"graph,omitempty"`
	// Bounds are the plausible ranges of the channels' readings, fitted
	// on the training readings (snapshot.FitBounds): a forecaster refuses
	// readings outside them. nil in bundles written before they were kept.
	Bounds  []snapshot.Bounds `json:"bounds,omitempty"`
	Config  Config            `json:"config"`
	Rounds  []Round           `json:"rounds,omitempty"`
	Version string            `json:"version,omitempty"` // model version reported with forecasts; DigestVersion's where none is given
	Created string            `json:"created,omitempty"`

	// SensorIDs and Locations are the sensors' IDs and coordinates in
	// node order, as the data distilled on names and places them
	// (pems.Dataset): the service takes readings keyed by these IDs and
	// names its forecasts by them (pems.SensorNames). nil where the data
	// has none (PeMS, SZ-taxi: sensors known by index) and in bundles
	// written before they were kept.
	SensorIDs []string        `json:"sensor_ids,omitempty"`
	Locations []pems.Location `json:"locations,omitempty"`
}

// Bundle is everything a per-node forecast needs: the teacher's GRU, the
// student's φ and Θ, the fine-tuned decoder and the normaliser.
//
// A Bundle's methods are not safe for concurrent use (the layers keep
// activations); give each goroutine its own via Clone.
//
// Its online path (EmbedBatch, Forecast, ForecastMany) gives the same bits
// on every machine: amd64 with or without the assembly kernels, and
// arm64, where the compiler would fuse products into additions that this
// path rounds (TestGoldenBits, run on arm64 under qemu in CI).
type Bundle struct {
	Meta  BundleMeta
	GRU   *gru.GRU
	Phi   *nn.MLP
	Theta *Theta
	Dec   *nn.MLP

	xs   []*mat.Dense
	zrow *mat.Dense
}

// Receptive returns node z's receptive nodes (sorted) and their weights; the
// slices are the bundle's own, not to be changed. z must be a node of the
// bundle, 0 ≤ z < Meta.Nodes: another panics, as indexing does (Forecast
// returns an error for it).
func (b *Bundle) Receptive(z int) ([]int, []float64) { return b.Theta.Nodes[z], b.Theta.Weights[z] }

// Embed sets dst (length Hidden) to φ(GRU(window)) for one node. window holds
// the node's last Window readings on the original scale, row-major
// (step, channel), oldest first; missing readings (0) are fed as in
// training (snapshot.Normalizer.StepInputs, the inputs Set.Fill gives,
// with their missing marks where the bundle's normaliser has them). end is the time of the
// window's last step, Unix ms: the calendar inputs of a bundle trained with
// the paper's preprocessing are computed from it (other bundles ignore it).
func (b *Bundle) Embed(dst, window []float64, end int64) error {
	return b.EmbedBatch(dst, window, []int64{end})
}

// EmbedBatch is Embed for len(ends) windows at once: windows holds them one
// after the other (rows × Window × Channels), ends the time of each one's
// last step, and dst receives the rows embeddings (rows × Hidden). One
// batched pass of the GRU and φ costs far less per window than rows calls
// of Embed. It allocates only when rows exceeds every earlier call's.
func (b *Bundle) EmbedBatch(dst, windows []float64, ends []int64) error {
	T, C, d, rows := b.Meta.Window, len(b.Meta.Norm.Mean), b.Meta.Hidden, len(ends)
	if rows < 1 || len(windows) != rows*T*C || len(dst) != rows*d {
		return fmt.Errorf("embed: %d windows of %d values (want %d×%d×%d), destination %d (want %d×%d)", rows, len(windows), rows, T, C, len(dst), rows, d)
	}
	norm := &b.Meta.Norm
	in := norm.Inputs()
	if len(b.xs) != T {
		b.xs = make([]*mat.Dense, T)
	}
	for t := range b.xs {
		b.xs[t] = nn.Resize(b.xs[t], rows, in)
		x := b.xs[t].RawMatrix().Data
		for i := 0; i < rows; i++ {
			var ms int64
			if norm.Time != nil {
				ms = ends[i] - int64(T-1-t)*norm.Time.StepMs
			}
			norm.StepInputs(x[i*in:(i+1)*in], windows[(i*T+t)*C:(i*T+t+1)*C], nil, ms)
		}
	}
	h, err := b.GRU.Encode(b.xs)
	if err != nil {
		return err
	}
	copy(dst, b.Phi.Forward(h).RawMatrix().Data)
	return nil
}

// Forecast sets dst (length C) to node z's next reading on the original
// scale from the embeddings of its receptive nodes, emb[i] being Embed's
// output for node Receptive(z)[i]. Only those nodes' data are used.
func (b *Bundle) Forecast(dst []float64, z int, emb [][]float64) error {
	zs := [1]int{z}
	return b.ForecastMany(dst, zs[:], emb)
}

// ForecastMany is Forecast for the nodes zs at once: emb holds, node after
// node, the embeddings of each one's receptive nodes (len(Receptive(zs[i]))
// of them for node i), and dst receives the forecasts, row-major (node,
// channel). The decoder runs once over all rows; each row's figures are
// those Forecast gives it alone, bit for bit (nn's products sum every row
// in the same order whatever the batch). It allocates only when len(zs)
// exceeds every earlier call's.
func (b *Bundle) ForecastMany(dst []float64, zs []int, emb [][]float64) error {
	return b.ForecastManySilent(dst, zs, emb, nil)
}

// ForecastManySilent is ForecastMany where silent[i] says whether node
// zs[i]'s own window was empty (every reading of it missing: a sensor
// fallen silent), so that a bundle with silent weights (Theta.Silent)
// weighs its receptive nodes' embeddings with those: what ForecastBatch
// does for such a node. silent nil, or a bundle without silent weights,
// is ForecastMany. The receptive nodes, and so the embeddings to pass,
// are Receptive's either way.
func (b *Bundle) ForecastManySilent(dst []float64, zs []int, emb [][]float64, silent []bool) error {
	C, d, m := len(b.Meta.Norm.Mean), b.Meta.Hidden, len(zs)
	if m < 1 || len(dst) != m*C {
		return fmt.Errorf("forecast: destination %d for %d nodes of %d channels", len(dst), m, C)
	}
	if silent != nil && len(silent) != m {
		return fmt.Errorf("forecast: %d silence marks for %d nodes", len(silent), m)
	}
	b.zrow = nn.Resize(b.zrow, m, d)
	zd := b.zrow.RawMatrix().Data
	next := 0
	for r, z := range zs {
		if z < 0 || z >= b.Theta.N() {
			return fmt.Errorf("forecast: node %d outside [0,%d)", z, b.Theta.N())
		}
		ks, ws := b.Receptive(z)
		if silent != nil && silent[r] && b.Theta.Silent != nil {
			ws = b.Theta.Silent[z]
		}
		if len(emb)-next < len(ks) {
			return fmt.Errorf("forecast node %d: %d embeddings for %d receptive nodes", z, len(emb)-next, len(ks))
		}
		zr := zd[r*d : (r+1)*d]
		clear(zr)
		for i, e := range emb[next : next+len(ks)] {
			if len(e) != d {
				return fmt.Errorf("forecast node %d: embedding of node %d has %d values, want %d", z, ks[i], len(e), d)
			}
			for j, v := range e {
				zr[j] += float64(ws[i] * v) // rounded: arm64 would fuse it (TestGoldenBits)
			}
		}
		next += len(ks)
	}
	if next != len(emb) {
		return fmt.Errorf("forecast: %d embeddings for %d receptive nodes", len(emb), next)
	}
	out := b.Dec.Forward(b.zrow).RawMatrix().Data
	for i := range dst {
		dst[i] = b.Meta.Norm.Denormalize(out[i], i%C)
	}
	return nil
}

// ForecastBatch returns the forecasts of every node for the snapshots of a
// batch (rows of the GRU input stacked per snapshot), on the original scale,
// row-major (snapshot, node, channel). It computes the same function as
// Embed and Forecast, over all nodes at once: the offline path. xs must
// hold Window steps whose rows are whole snapshots (a multiple of Nodes).
func (b *Bundle) ForecastBatch(xs []*mat.Dense) ([]float64, error) {
	if len(xs) != b.Meta.Window {
		return nil, fmt.Errorf("forecast batch: %d steps, want the bundle's window of %d", len(xs), b.Meta.Window)
	}
	h, err := b.GRU.Encode(xs)
	if err != nil {
		return nil, err
	}
	if r, _ := h.Dims(); r%b.Meta.Nodes != 0 {
		return nil, fmt.Errorf("forecast batch: %d rows are not whole snapshots of %d nodes", r, b.Meta.Nodes)
	}
	phi := b.Phi.Forward(h)
	r, d := phi.Dims()
	theta, _ := b.Theta.CSR()
	z := mat.NewDense(r, d, nil)
	theta.MulBlocks(z, phi)
	if silent := b.silentMarks(xs); silent != nil {
		// The rows of nodes silent for their whole window, weighed by
		// the silent weights: what ForecastManySilent gives each.
		zs := mat.NewDense(r, d, nil)
		b.Theta.SilentCSR().MulBlocks(zs, phi)
		for i, sil := range silent {
			if sil {
				copy(z.RawRowView(i), zs.RawRowView(i))
			}
		}
	}
	out := b.Dec.Forward(z)
	od := out.RawMatrix().Data
	C := len(b.Meta.Norm.Mean)
	res := make([]float64, len(od))
	for i, v := range od {
		res[i] = b.Meta.Norm.Denormalize(v, i%C)
	}
	return res, nil
}

// silentMarks returns, for a bundle with silent weights, which rows of the
// batch xs (inputs with missing marks) are of a node whose every reading
// of the window is missing; nil for a bundle without silent weights, or
// whose inputs carry no marks to tell.
func (b *Bundle) silentMarks(xs []*mat.Dense) []bool {
	norm := &b.Meta.Norm
	if b.Theta.Silent == nil || !norm.Mask {
		return nil
	}
	C := len(norm.Mean)
	first := norm.Inputs() - C // the marks end each step's inputs
	r, _ := xs[0].Dims()
	out := make([]bool, r)
	for i := range out {
		out[i] = true
		for _, x := range xs {
			for _, v := range x.RawRowView(i)[first:] {
				if v != 1 {
					out[i] = false
				}
			}
			if !out[i] {
				break
			}
		}
	}
	return out
}

// Clone returns an independent copy of b (sharing nothing mutable).
// A bundle without a version gets DigestVersion's, as Save gives it.
func (b *Bundle) Clone() (*Bundle, error) {
	_, version, err := b.file()
	if err != nil {
		return nil, fmt.Errorf("clone bundle: %w", err)
	}
	// The metadata by JSON, as Save writes it; the layers by the shapes
	// they have, not by those Meta.Config gives, which a bundle assembled
	// by NewBundle need not (φ's hidden width).
	raw, err := json.Marshal(b.Meta)
	if err != nil {
		return nil, fmt.Errorf("clone bundle: %w", err)
	}
	c := &Bundle{
		GRU:   gruShape(b.GRU.In, b.GRU.Hidden),
		Phi:   nn.NewMLP("phi", b.Phi.L1.In(), b.Phi.L1.Out(), b.Phi.L2.Out(), zeroRand()),
		Dec:   nn.NewMLP("dec", b.Dec.L1.In(), b.Dec.L1.Out(), b.Dec.L2.Out(), zeroRand()),
		Theta: &Theta{Nodes: make([][]int, len(b.Theta.Nodes)), Weights: make([][]float64, len(b.Theta.Weights))},
	}
	if err := json.Unmarshal(raw, &c.Meta); err != nil {
		return nil, fmt.Errorf("clone bundle: %w", err)
	}
	c.Meta.Version = version
	_, src := b.params()
	_, dst := c.params()
	if err := nn.Copy(dst, src); err != nil {
		return nil, fmt.Errorf("clone bundle: %w", err)
	}
	for z := range b.Theta.Nodes {
		c.Theta.Nodes[z] = slices.Clone(b.Theta.Nodes[z])
	}
	for z := range b.Theta.Weights {
		c.Theta.Weights[z] = slices.Clone(b.Theta.Weights[z])
	}
	if b.Theta.Silent != nil {
		c.Theta.Silent = make([][]float64, len(b.Theta.Silent))
		for z := range b.Theta.Silent {
			c.Theta.Silent[z] = slices.Clone(b.Theta.Silent[z])
		}
	}
	return c, nil
}

func (b *Bundle) params() (map[string]*nn.Param, []*nn.Param) {
	var all []*nn.Param
	all = append(all, b.GRU.Params()...)
	all = append(all, b.Phi.Params()...)
	all = append(all, b.Dec.Params()...)
	m := make(map[string]*nn.Param, len(all))
	for _, p := range all {
		m[p.Name] = p
	}
	return m, all
}

// file returns b as a checkpoint file and the version its metadata holds:
// b's, or DigestVersion's for a bundle without one.
func (b *Bundle) file() (*checkpoint.File, string, error) {
	_, ps := b.params()
	var ts []checkpoint.Tensor
	for _, p := range ps {
		r, c := p.W.Dims()
		ts = append(ts, checkpoint.Tensor{Name: p.Name, Shape: []int{r, c}, Data: append([]float64(nil), p.W.RawMatrix().Data...)})
	}
	theta, _ := b.Theta.CSR()
	ptr, col := make([]float64, len(theta.RowPtr)), make([]float64, len(theta.Col))
	for i, v := range theta.RowPtr {
		ptr[i] = float64(v)
	}
	for i, v := range theta.Col {
		col[i] = float64(v)
	}
	ts = append(ts,
		checkpoint.Tensor{Name: "theta.rowptr", Shape: []int{len(ptr)}, Data: ptr},
		checkpoint.Tensor{Name: "theta.col", Shape: []int{len(col)}, Data: col},
		checkpoint.Tensor{Name: "theta.val", Shape: []int{len(theta.Val)}, Data: append([]float64(nil), theta.Val...)})
	if sc := b.Theta.SilentCSR(); sc != nil {
		ts = append(ts, checkpoint.Tensor{Name: tensorSilent, Shape: []int{len(sc.Val)}, Data: append([]float64(nil), sc.Val...)})
	}
	f := &checkpoint.File{Kind: FileKindBundle, Tensors: ts}
	meta := b.Meta
	if meta.Version == "" {
		meta.Version = DigestVersion(meta.Dataset, f.Digest())
	}
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, "", err
	}
	f.Meta = raw
	return f, meta.Version, nil
}

// DigestVersion is the version of a bundle that was given none: "sdgnn-",
// the dataset and the first 12 hex digits of its file's digest
// (checkpoint.File.Digest), e.g. "sdgnn-pems04-3f9a1c0e7b2d". It names
// the model's numbers, not when it was written, so the same training run
// repeated, on any machine, gives the same version, and a forecast's
// "model" field identifies the parameters that made it.
func DigestVersion(dataset, digest string) string {
	if len(digest) > 12 {
		digest = digest[:12]
	}
	return "sdgnn-" + dataset + "-" + digest
}

// Save writes b to path atomically in the checkpoint format. A bundle
// without a version is given DigestVersion's, in the file and in
// b.Meta.Version. A bundle that LoadBundle would refuse (parts that do not
// fit together) is not written.
func (b *Bundle) Save(path string) error {
	f, version, err := b.file()
	if err != nil {
		return fmt.Errorf("save bundle %s: %w", path, err)
	}
	// What LoadBundle would refuse is not written: a bundle whose parts
	// do not fit together would be found out only by the service.
	if _, err := decodeBundle(f); err != nil {
		return fmt.Errorf("save bundle %s: it would not load: %w", path, err)
	}
	if err := checkpoint.WriteFile(path, f); err != nil {
		return fmt.Errorf("save bundle: %w", err)
	}
	b.Meta.Version = version
	return nil
}

// LoadBundle reads a bundle written by Save; a truncated, corrupted or
// foreign file, or one whose contents do not fit together, is refused with an
// error naming the file and the problem. A file without a version (written
// before Save gave every bundle one) gets DigestVersion's.
func LoadBundle(path string) (*Bundle, error) {
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	if f.Kind != FileKindBundle {
		return nil, fmt.Errorf("load bundle %s: file holds a %q, not a %q", path, f.Kind, FileKindBundle)
	}
	b, err := decodeBundle(f)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", path, err)
	}
	return b, nil
}

// NewBundle assembles a bundle; the layers are used as they are (not copied).
// Parts that are missing or do not fit the metadata and each other (a GRU
// of other inputs or width, a φ not Hidden→Hidden, a decoder not
// Hidden→channels) are an error.
func NewBundle(meta BundleMeta, g *gru.GRU, phi *nn.MLP, theta *Theta, dec *nn.MLP) (*Bundle, error) {
	if theta == nil {
		return nil, fmt.Errorf("new bundle: no theta")
	}
	if err := theta.Validate(meta.Nodes); err != nil {
		return nil, err
	}
	if err := silentNeedsMarks(theta, meta.Norm); err != nil {
		return nil, fmt.Errorf("new bundle: %w", err)
	}
	C := len(meta.Norm.Mean)
	if meta.Window < 1 || meta.Window > snapshot.MaxWindow || meta.Hidden < 1 || meta.Nodes < 1 || C < 1 {
		return nil, fmt.Errorf("new bundle: window %d (at most %d), hidden %d, nodes %d and channels %d must be positive", meta.Window, snapshot.MaxWindow, meta.Hidden, meta.Nodes, C)
	}
	if err := meta.Norm.Validate(C); err != nil {
		return nil, err
	}
	if len(meta.Channels) != 0 && len(meta.Channels) != C {
		return nil, fmt.Errorf("new bundle: %d channel names for the normaliser's %d channels", len(meta.Channels), C)
	}
	if len(meta.Bounds) != 0 && len(meta.Bounds) != C {
		return nil, fmt.Errorf("new bundle: %d plausible ranges for the normaliser's %d channels", len(meta.Bounds), C)
	}
	for c, bd := range meta.Bounds {
		if !(bd.Lo <= bd.Hi) {
			return nil, fmt.Errorf("new bundle: channel %d's plausible range %v is empty", c, bd)
		}
	}
	if err := pems.CheckSensors(meta.Nodes, meta.SensorIDs, meta.Locations); err != nil {
		return nil, fmt.Errorf("new bundle: %w", err)
	}
	in, H := meta.Norm.Inputs(), meta.Hidden
	if g == nil {
		return nil, fmt.Errorf("new bundle: no GRU")
	}
	if g.In != in || g.Hidden != H {
		return nil, fmt.Errorf("new bundle: GRU of %d inputs and width %d, want %d and %d", g.In, g.Hidden, in, H)
	}
	if err := mlpFits(phi, H, H); err != nil {
		return nil, fmt.Errorf("new bundle: φ %w", err)
	}
	if err := mlpFits(dec, H, C); err != nil {
		return nil, fmt.Errorf("new bundle: decoder %w", err)
	}
	return &Bundle{Meta: meta, GRU: g, Phi: phi, Theta: theta, Dec: dec}, nil
}

// mlpFits reports whether m maps in values to out through a hidden layer
// of matching widths.
func mlpFits(m *nn.MLP, in, out int) error {
	if m == nil || m.L1 == nil || m.L2 == nil {
		return fmt.Errorf("missing")
	}
	if m.L1.Out() != m.L2.In() {
		return fmt.Errorf("layers do not chain: %d outputs into %d inputs", m.L1.Out(), m.L2.In())
	}
	if m.L1.In() != in || m.L2.Out() != out {
		return fmt.Errorf("maps %d values to %d, want %d to %d", m.L1.In(), m.L2.Out(), in, out)
	}
	return nil
}

func decodeBundle(f *checkpoint.File) (*Bundle, error) {
	var meta BundleMeta
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	C := len(meta.Norm.Mean)
	if meta.Window < 1 || meta.Hidden < 1 || meta.Nodes < 1 || C < 1 || meta.Config.PhiHidden < 1 {
		return nil, fmt.Errorf("metadata: window %d, hidden %d, nodes %d, channels %d, φ hidden %d must all be positive", meta.Window, meta.Hidden, meta.Nodes, C, meta.Config.PhiHidden)
	}
	if meta.Window > snapshot.MaxWindow {
		return nil, fmt.Errorf("metadata: window %d exceeds %d steps", meta.Window, snapshot.MaxWindow)
	}
	if err := meta.Norm.Validate(C); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(meta.Channels) != 0 && len(meta.Channels) != C { // none: written before names were kept
		return nil, fmt.Errorf("metadata: channel_names %q name %d channels, the normaliser has %d", meta.Channels, len(meta.Channels), C)
	}
	if g := meta.Graph; g != nil { // none: written before graphs were fingerprinted
		if err := g.Validate(meta.Nodes); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	if err := pems.CheckSensors(meta.Nodes, meta.SensorIDs, meta.Locations); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	in, H, P, D := meta.Norm.Inputs(), meta.Hidden, meta.Config.PhiHidden, decHidden(f, meta.Hidden)
	if D < 1 {
		return nil, fmt.Errorf("tensor dec.l1.W has %d columns, want at least 1", D)
	}
	// Check the sizes against the file before allocating layers of them.
	g, ok1 := gru.NumParams(in, H)
	phi, ok2 := nn.MLPParams(H, P, H)
	dec, ok3 := nn.MLPParams(H, D, C)
	if need, ok := nn.CountParams([]int{g}, []int{phi}, []int{dec}); !ok1 || !ok2 || !ok3 || !ok || need > f.Elements() {
		return nil, fmt.Errorf("metadata: %d inputs, hidden %d, φ hidden %d, decoder hidden %d and %d channels take more parameters than the file's %d values", in, H, P, D, C, f.Elements())
	}
	b := &Bundle{Meta: meta, GRU: gruShape(in, H),
		Phi: nn.NewMLP("phi", H, P, H, zeroRand()),
		Dec: nn.NewMLP("dec", H, D, C, zeroRand())}
	byName, _ := b.params()
	// A tensor that is none of these was written for a bundle of another
	// architecture: dropping it would load another model than the saved.
	for _, t := range f.Tensors {
		if byName[t.Name] == nil && t.Name != "theta.rowptr" && t.Name != "theta.col" && t.Name != "theta.val" && t.Name != tensorSilent {
			return nil, fmt.Errorf("tensor %s is not a parameter of the bundle its metadata describes", t.Name)
		}
	}
	for name, p := range byName {
		t, err := f.Tensor(name)
		if err != nil {
			return nil, err
		}
		r, c := p.W.Dims()
		if len(t.Shape) != 2 || t.Shape[0] != r || t.Shape[1] != c {
			return nil, fmt.Errorf("tensor %s has shape %v, want [%d %d]", name, t.Shape, r, c)
		}
		if err := t.CheckFinite(); err != nil {
			return nil, err
		}
		copy(p.W.RawMatrix().Data, t.Data)
	}
	theta, err := decodeTheta(f, meta.Nodes)
	if err != nil {
		return nil, err
	}
	if err := silentNeedsMarks(theta, meta.Norm); err != nil {
		return nil, err
	}
	b.Theta = theta
	if b.Meta.Version == "" { // written before every bundle had one
		b.Meta.Version = DigestVersion(meta.Dataset, f.Digest())
	}
	return b, nil
}

func decHidden(f *checkpoint.File, def int) int {
	if t, err := f.Tensor("dec.l1.W"); err == nil && len(t.Shape) == 2 {
		return t.Shape[1]
	}
	return def
}

func decodeTheta(f *checkpoint.File, n int) (*Theta, error) {
	ptr, err := f.Tensor("theta.rowptr")
	if err != nil {
		return nil, err
	}
	col, err := f.Tensor("theta.col")
	if err != nil {
		return nil, err
	}
	val, err := f.Tensor("theta.val")
	if err != nil {
		return nil, err
	}
	if len(ptr.Data) != n+1 {
		return nil, fmt.Errorf("theta: tensor %s has %d row pointers, want %d for %d nodes", ptr.Name, len(ptr.Data), n+1, n)
	}
	if len(col.Data) != len(val.Data) {
		return nil, fmt.Errorf("theta: tensor %s has %d node ids but tensor %s has %d weights", col.Name, len(col.Data), val.Name, len(val.Data))
	}
	// Positions and node ids are stored as float64: one that is not a
	// whole number in range would be truncated to another.
	if err := wholeIn(ptr, len(col.Data)); err != nil {
		return nil, err
	}
	if ptr.Data[0] != 0 || int(ptr.Data[n]) != len(col.Data) {
		return nil, fmt.Errorf("theta: tensor %s runs from %v to %v, want from 0 to %d, the number of weights", ptr.Name, ptr.Data[0], ptr.Data[n], len(col.Data))
	}
	if err := wholeIn(col, n-1); err != nil {
		return nil, err
	}
	var silent *checkpoint.Tensor
	if hasTensor(f, tensorSilent) {
		if silent, err = f.Tensor(tensorSilent); err != nil {
			return nil, err
		}
		if len(silent.Data) != len(val.Data) {
			return nil, fmt.Errorf("theta: tensor %s has %d silent weights for %d weights", silent.Name, len(silent.Data), len(val.Data))
		}
	}
	t := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	if silent != nil {
		t.Silent = make([][]float64, n)
	}
	for z := 0; z < n; z++ {
		lo, hi := int(ptr.Data[z]), int(ptr.Data[z+1])
		if lo > hi || hi > len(col.Data) {
			return nil, fmt.Errorf("theta: row %d spans [%d,%d) of %d weights", z, lo, hi, len(col.Data))
		}
		for i := lo; i < hi; i++ {
			t.Nodes[z] = append(t.Nodes[z], int(col.Data[i]))
			t.Weights[z] = append(t.Weights[z], val.Data[i])
			if silent != nil {
				t.Silent[z] = append(t.Silent[z], silent.Data[i])
			}
		}
		if silent != nil && t.Silent[z] == nil {
			t.Silent[z] = []float64{} // a node without receptive nodes: none, as its weights
		}
	}
	return t, t.Validate(n)
}

// silentNeedsMarks refuses silent weights for inputs without missing
// marks: the batched path (ForecastBatch) tells a silent node by its
// marks, and could not use them, while the online one
// (ForecastManySilent) would, and the two would part.
func silentNeedsMarks(theta *Theta, norm snapshot.Normalizer) error {
	if theta.Silent != nil && !norm.Mask {
		return fmt.Errorf("theta has silent weights but the inputs carry no missing marks to tell a silent sensor by")
	}
	return nil
}

// hasTensor reports whether f holds a tensor of that name.
func hasTensor(f *checkpoint.File, name string) bool {
	return slices.ContainsFunc(f.Tensors, func(t checkpoint.Tensor) bool { return t.Name == name })
}

// wholeIn reports the first value of t that is not a whole number in
// [0, hi].
func wholeIn(t *checkpoint.Tensor, hi int) error {
	for i, v := range t.Data {
		if !(v >= 0 && v <= float64(hi)) || v != math.Trunc(v) {
			return fmt.Errorf("theta: tensor %s value %d is %v, want a whole number in [0, %d]", t.Name, i, v, hi)
		}
	}
	return nil
}

func gruShape(in, hidden int) *gru.GRU { return gru.New(in, hidden, zeroRand()) }

// zeroRand is a fixed source for layers whose values are overwritten at once.
func zeroRand() *rand.Rand { return rand.New(rand.NewPCG(0, 0)) }

// Fits reports whether set's snapshots are what the bundle reads: the same
// nodes, window and channels, prepared with the same inputs per step.
func (b *Bundle) Fits(set *snapshot.Set) error {
	if set.Norm.Mask != b.Meta.Norm.Mask {
		return fmt.Errorf("data with missing marks %v, a bundle %s them (use snapshot.Set.Masked)", set.Norm.Mask, map[bool]string{true: "that reads", false: "that does not read"}[b.Meta.Norm.Mask])
	}
	if set.Nodes != b.Meta.Nodes || set.Window != b.Meta.Window || set.Channels != len(b.Meta.Norm.Mean) || set.Inputs() != b.Meta.Norm.Inputs() {
		return fmt.Errorf("data has %s, window %d, %s, %s (%s preprocessing); the bundle wants %d, %d, %d, %d (%s)",
			english.Count(set.Nodes, "node"), set.Window, english.Count(set.Channels, "channel"), english.Count(set.Inputs(), "input"), set.Norm.Prep(), b.Meta.Nodes, b.Meta.Window, len(b.Meta.Norm.Mean), b.Meta.Norm.Inputs(), b.Meta.Norm.Prep())
	}
	return nil
}

// Predict returns the bundle's forecasts for the snapshots of part p on
// the original scale, row-major (snapshot, node, channel), with the raw
// targets in the same layout (NaN, not scored, for nodes outside p),
// through the batched path. When ctx is cancelled it stops between batches
// and returns ctx.Err().
func Predict(ctx context.Context, b *Bundle, set *snapshot.Set, p snapshot.Part, batchSize int) (pred, truth []float64, err error) {
	if err := b.Fits(set); err != nil {
		return nil, nil, fmt.Errorf("predict: %w", err)
	}
	if batchSize < 1 {
		batchSize = 64
	}
	var batch snapshot.Batch
	for _, idx := range snapshot.BatchesOf(p.Snapshots(), batchSize, nil) {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if err := set.Fill(&batch, idx); err != nil {
			return nil, nil, err
		}
		f, err := b.ForecastBatch(batch.X)
		if err != nil {
			return nil, nil, err
		}
		pred = append(pred, f...)
		truth = append(truth, batch.Raw.RawMatrix().Data...)
	}
	p.Hide(truth, set.Nodes, set.Channels)
	return pred, truth, nil
}
