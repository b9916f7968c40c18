// Package teacher holds the GRU-GCN ("time-then-graph") forecaster that SDGNN
// distils, and the GRU baseline that drops the graph: the models, their loss,
// a trainer with early stopping, prediction over a split, and saving and
// loading in the checkpoint format.
//
// GRU-GCN: a GRU shared by all nodes encodes each node's window into H
// (n×d); a GCN of one or two layers (two by default, see Config.Layers)
// mixes H over the road graph into Z; a two-layer MLP decoder maps Z to the
// next reading of every channel. During training, Gaussian noise N(0, σ) is
// added to Z before the decoder so that the decoder tolerates the
// approximation error of the student that later replaces the GCN. The GRU
// baseline feeds H to the decoder directly.
package teacher

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/portable"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Kinds of teacher model.
const (
	KindGRUGCN = "gru-gcn" // GRU → 1- or 2-layer GCN → MLP decoder
	KindGRU    = "gru"     // GRU → MLP decoder (no graph)
)

// Config is the shape of a teacher model.
type Config struct {
	Kind     string  `json:"kind"`
	Window   int     `json:"window"`    // T, steps per input window
	Channels int     `json:"channels"`  // C, readings per step
	Hidden   int     `json:"hidden"`    // d, embedding width of GRU, GCN and decoder
	NoiseStd float64 `json:"noise_std"` // σ of the training noise added to Z
	Seed     uint64  `json:"seed"`      // initialisation seed
	// Layers is the number of graph convolutions of a GRU-GCN's GCN, 1 or
	// 2; 0 means DefaultLayers, so that files saved before the field
	// existed load as two-layer models. It is ignored for KindGRU.
	Layers int `json:"layers,omitempty"`
	// TimeInputs is the number of calendar inputs appended to every step
	// of a window (snapshot.TimeInputCount under the paper's preprocessing,
	// 0 otherwise): the GRU reads Channels+TimeInputs inputs per step and
	// the decoder still forecasts Channels.
	TimeInputs int `json:"time_inputs,omitempty"`
	// MaskInputs is the number of missing marks appended to every step
	// (snapshot.Normalizer.Mask: Channels of them, one per channel; 0
	// without): the GRU then knows which readings are missing rather than
	// reading them as values. Files written before it existed lack it: no
	// marks.
	MaskInputs int `json:"mask_inputs,omitempty"`
	// Gate puts a gate on the GCN's skip (gcn.GCN.EnableGate), so that a
	// node whose own window was empty can be forecast from its
	// neighbours; ignored for KindGRU. Files written before it existed
	// lack it: no gate.
	Gate bool `json:"gate,omitempty"`
}

// Inputs returns the GRU's inputs per step: Channels + TimeInputs +
// MaskInputs.
func (c Config) Inputs() int { return c.Channels + c.TimeInputs + c.MaskInputs }

// gated reports whether the model of c has a gate on its GCN's skip.
func (c Config) gated() bool { return c.Gate && c.Kind == KindGRUGCN }

// DefaultLayers is the GCN depth of a GRU-GCN whose Config.Layers is 0.
const DefaultLayers = 2

// GCNLayers returns the number of graph convolutions the model of c has:
// Layers, or DefaultLayers when Layers is 0, for KindGRUGCN, and 0 for
// KindGRU.
func (c Config) GCNLayers() int {
	switch {
	case c.Kind != KindGRUGCN:
		return 0
	case c.Layers == 0:
		return DefaultLayers
	}
	return c.Layers
}

// Validate reports what is wrong with c, if anything.
func (c Config) Validate() error {
	switch {
	case c.Kind != KindGRUGCN && c.Kind != KindGRU:
		return fmt.Errorf("model kind %q: want %q or %q", c.Kind, KindGRUGCN, KindGRU)
	case c.Window < 1 || c.Window > snapshot.MaxWindow:
		return fmt.Errorf("window %d: must be from 1 to %d steps", c.Window, snapshot.MaxWindow)
	case c.Channels < 1:
		return fmt.Errorf("channels %d: must be at least 1", c.Channels)
	case c.Hidden < 1:
		return fmt.Errorf("hidden %d: must be at least 1", c.Hidden)
	case !(c.NoiseStd >= 0) || math.IsInf(c.NoiseStd, 1):
		return fmt.Errorf("noise std %g: must be finite and ≥ 0", c.NoiseStd)
	case c.TimeInputs != 0 && c.TimeInputs != snapshot.TimeInputCount:
		return fmt.Errorf("time inputs %d: want 0 or %d", c.TimeInputs, snapshot.TimeInputCount)
	case c.Kind == KindGRUGCN && (c.Layers < 0 || c.Layers > 2):
		return fmt.Errorf("gcn layers %d: want 1 or 2 (0 for the default, %d)", c.Layers, DefaultLayers)
	case c.MaskInputs != 0 && c.MaskInputs != c.Channels:
		return fmt.Errorf("mask inputs %d: want 0 or one per channel (%d)", c.MaskInputs, c.Channels)
	case c.Gate && c.Kind != KindGRUGCN:
		return fmt.Errorf("a gate on the GCN's skip for a %s model, which has no GCN", c.Kind)
	}
	return nil
}

// NumParams returns the number of values in the parameters of New(c), and
// false if it does not fit in an int. c must be valid.
func (c Config) NumParams() (int, bool) {
	g, ok1 := gru.NumParams(c.Inputs(), c.Hidden)
	dec, ok2 := nn.MLPParams(c.Hidden, c.Hidden, c.Channels)
	gc, ok3 := 0, true
	if c.Kind == KindGRUGCN {
		gc, ok3 = gcn.NumParamsGated(c.GCNLayers(), c.Hidden, c.Hidden, c.Hidden, c.gated())
	}
	n, ok := nn.CountParams([]int{g}, []int{dec}, []int{gc})
	return n, ok && ok1 && ok2 && ok3
}

// Model is a GRU-GCN or GRU forecaster working on normalised readings.
type Model struct {
	Config Config
	GRU    *gru.GRU
	GCN    *gcn.GCN // nil for KindGRU
	Dec    *nn.MLP

	h, z, zn *mat.Dense // embeddings of the last Forward; zn = z + noise
}

// New returns a freshly initialised model.
func New(cfg Config) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	m := &Model{Config: cfg, GRU: gru.New(cfg.Inputs(), cfg.Hidden, rng)}
	if cfg.Kind == KindGRUGCN {
		m.GCN = gcn.NewLayers(cfg.GCNLayers(), cfg.Hidden, cfg.Hidden, cfg.Hidden, rng)
	}
	m.Dec = nn.NewMLP("dec", cfg.Hidden, cfg.Hidden, cfg.Channels, rng)
	if cfg.gated() {
		// Drawn last, so that every other layer starts as in the same
		// model without a gate.
		m.GCN.EnableGate(rng)
	}
	return m, nil
}

// Params returns all trainable parameters in a fixed order.
func (m *Model) Params() []*nn.Param {
	ps := m.GRU.Params()
	if m.GCN != nil {
		ps = append(ps, m.GCN.Params()...)
	}
	return append(ps, m.Dec.Params()...)
}

// Embed runs the GRU and (for GRU-GCN) the GCN on a window, returning the GRU
// embeddings H and the mixed embeddings Z (Z is H for the GRU baseline), both
// rows × Hidden and owned by m. These are SDGNN's inputs and targets.
// xs must hold Config.Window steps; for a GRU-GCN its rows are whole
// snapshots of a's graph, which is an error to break where a says its size
// (*pems.CSR, gcn.Dense).
func (m *Model) Embed(xs []*mat.Dense, a gcn.Propagator) (h, z *mat.Dense, err error) {
	if len(xs) != m.Config.Window {
		return nil, nil, fmt.Errorf("%s forward: %d steps, want the model's window of %d", m.Config.Kind, len(xs), m.Config.Window)
	}
	if m.GCN != nil && a == nil {
		return nil, nil, fmt.Errorf("gru-gcn forward: no graph given")
	}
	h, err = m.GRU.Forward(xs)
	if err != nil {
		return nil, nil, err
	}
	if m.GCN == nil {
		return h, h, nil
	}
	if n := graphNodes(a); n > 0 {
		if r, _ := h.Dims(); r%n != 0 {
			return nil, nil, fmt.Errorf("gru-gcn forward: %d rows are not whole snapshots of the graph's %d nodes", r, n)
		}
	}
	return h, m.GCN.Forward(h, a), nil
}

// graphNodes returns the number of nodes of a's graph where a is one of
// the Propagators that say it, 0 otherwise.
func graphNodes(a gcn.Propagator) int {
	switch a := a.(type) {
	case *pems.CSR:
		if a != nil {
			return a.N
		}
	case gcn.Dense:
		if a.A != nil {
			r, _ := a.A.Dims()
			return r
		}
	}
	return 0
}

// Forward returns the normalised forecast (rows × Channels, owned by m) for
// the window xs (xs[t] is rows × Inputs()). When noise is not nil, N(0, σ)
// noise drawn from it is added to Z before the decoder (training only).
func (m *Model) Forward(xs []*mat.Dense, a gcn.Propagator, noise *rand.Rand) (*mat.Dense, error) {
	h, z, err := m.Embed(xs, a)
	if err != nil {
		return nil, err
	}
	m.h, m.z = h, z
	in := z
	if noise != nil && m.Config.NoiseStd > 0 {
		r, c := z.Dims()
		m.zn = nn.Resize(m.zn, r, c)
		zr, nr := z.RawMatrix().Data, m.zn.RawMatrix().Data
		for i, v := range zr {
			// portable's draws and the rounded product: the same noise on every machine.
			nr[i] = v + float64(m.Config.NoiseStd*portable.NormFloat64(noise))
		}
		in = m.zn
	}
	return m.Dec.Forward(in), nil
}

// Backward accumulates the gradients of all parameters for dy, the gradient
// of the loss with respect to the output of the last Forward.
func (m *Model) Backward(dy *mat.Dense, a gcn.Propagator) error {
	if m.z == nil {
		return fmt.Errorf("teacher backward: no forward pass")
	}
	dz := m.Dec.Backward(dy) // additive noise passes the gradient unchanged
	dh := dz
	if m.GCN != nil {
		var err error
		if dh, err = m.GCN.Backward(dz, a); err != nil {
			return err
		}
	}
	return m.GRU.Backward(dh)
}
