package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Names of the baselines, as Model.Name reports them.
const (
	NamePPRGo      = "PPRGo"
	NameSDGNNEqual = "SDGNN-Equal"
	NameGLNN       = "GLNN"
	NameNOSMOG     = "NOSMOG"
)

const (
	selectMAPE      = "mape"
	selectMAE       = "mae"
	decodeChunkRows = 1 << 14 // rows per decoder call when decoding a split
)

// Model is a trained baseline: a student replacing the teacher's GCN
// followed by its fine-tuned decoder. It forecasts from the teacher's GRU
// embeddings of any split and reports its receptive field.
//
// A Model's methods are not safe for concurrent use: the layers keep the
// activations of their last call.
type Model interface {
	// Name returns the baseline's name: "PPRGo", "SDGNN-Equal", "GLNN" or
	// "NOSMOG".
	Name() string
	// Receptive returns the nodes (sorted) whose input windows node z's
	// forecast reads; a new slice.
	Receptive(z int) []int
	// MeanReceptive returns the mean number of receptive nodes per node.
	MeanReceptive() float64
	// Forecast returns the forecasts for the snapshots of t (whose H it
	// reads) on the original scale, row-major (snapshot, node, channel),
	// the layout of t.Truth.
	Forecast(t *sdgnn.Targets) ([]float64, error)
	// History returns the record of the student's training, epoch 0 being
	// the untrained student; the slice is the model's own.
	History() []Epoch
}

// Epoch records one pass of a student's training and its validation.
type Epoch struct {
	Epoch int `json:"epoch"` // 0: before training
	// TrainLoss is the mean squared error of Ẑ against the teacher's Z per
	// row on the training targets: over the whole split for epoch 0, the
	// mean over the epoch's mini-batches after that.
	TrainLoss float64 `json:"train_loss"`
	// SimLoss is NOSMOG's similarity loss, mean over the epoch's
	// mini-batches (0 for the other baselines and for epoch 0).
	SimLoss float64            `json:"sim_loss,omitempty"`
	NR      float64            `json:"nr"`  // validation ‖Ẑ−Z‖² / ‖Z‖²
	Val     evaluation.Metrics `json:"val"` // Ẑ decoded by the teacher's decoder, on the validation targets
	Best    bool               `json:"best"`
	Seconds float64            `json:"seconds"`
}

// Config holds the training settings shared by the baselines, and the
// settings particular to PPRGo and NOSMOG.
type Config struct {
	Epochs      int     `json:"epochs"`       // student passes over the training snapshots
	Batch       int     `json:"batch"`        // snapshots per mini-batch, for the student and the decoder
	LR          float64 `json:"lr"`           // Adam step of the student
	WeightDecay float64 `json:"weight_decay"` // L2 weight decay of the student
	Hidden      int     `json:"hidden"`       // hidden width of φ (PPRGo, SDGNN-Equal) and g (GLNN, NOSMOG)

	FineTuneEpochs int     `json:"finetune_epochs"` // decoder fine-tuning epochs on Ẑ
	FineTuneLR     float64 `json:"finetune_lr"`
	Select         string  `json:"select"`     // validation metric for the best epoch: "mape" or "mae"
	MAPEFloor      float64 `json:"mape_floor"` // truths below it are left out of validation MAPE (see evaluation.Accumulator)
	Seed           uint64  `json:"seed"`

	TopK  int     `json:"top_k"` // PPRGo: receptive nodes kept per node
	Alpha float64 `json:"alpha"` // PPRGo: teleport (restart) probability

	Walk      WalkConfig `json:"walk"`       // NOSMOG: positional encodings
	SimWeight float64    `json:"sim_weight"` // NOSMOG: weight of the similarity loss
	SimNodes  int        `json:"sim_nodes"`  // NOSMOG: nodes sampled per snapshot for the similarity loss
}

// DefaultConfig returns the settings of SDGNN's DefaultConfig where they
// apply (φ of width 16, Adam at 1e-3 with weight decay 1e-5, batches of 32
// snapshots, 30 fine-tuning epochs at 1e-3, selection by MAPE, the final
// budget 6 as PPRGo's top-k), 100 student epochs, a teleport probability
// of 0.15 for PPRGo (PageRank's usual damping; PPRGo's own experiments used
// 0.25, and 0.5 on Reddit), and a weight of 0.1 for NOSMOG's similarity
// loss over 64 nodes per snapshot with DefaultWalkConfig's positional
// encodings.
func DefaultConfig() Config {
	return Config{
		Epochs: 100, Batch: 32, LR: 1e-3, WeightDecay: 1e-5, Hidden: 16,
		FineTuneEpochs: 30, FineTuneLR: 1e-3, Select: selectMAPE, Seed: 1,
		TopK: 6, Alpha: 0.15,
		Walk: DefaultWalkConfig(), SimWeight: 0.1, SimNodes: 64,
	}
}

// Validate reports what is wrong with c. The walk settings are only checked
// by TrainNOSMOG, which uses them.
func (c Config) Validate() error {
	switch {
	case c.Epochs < 0 || c.Batch < 1 || c.Hidden < 1 || c.FineTuneEpochs < 0:
		return fmt.Errorf("baseline config: epochs %d, batch %d, hidden %d, fine-tune epochs %d: need epochs ≥ 0 and positive sizes",
			c.Epochs, c.Batch, c.Hidden, c.FineTuneEpochs)
	case !(c.LR > 0) || math.IsInf(c.LR, 0) || !(c.WeightDecay >= 0) || math.IsInf(c.WeightDecay, 0) ||
		(c.FineTuneEpochs > 0 && (!(c.FineTuneLR > 0) || math.IsInf(c.FineTuneLR, 0))):
		return fmt.Errorf("baseline config: lr %g, weight decay %g, fine-tune lr %g: need finite positive learning rates and a finite non-negative decay",
			c.LR, c.WeightDecay, c.FineTuneLR)
	case !(c.MAPEFloor >= 0) || math.IsInf(c.MAPEFloor, 0):
		return fmt.Errorf("baseline config: MAPE floor %g: must be finite and ≥ 0", c.MAPEFloor)
	case c.Select != selectMAPE && c.Select != selectMAE:
		return fmt.Errorf("baseline config: select %q: want mape or mae", c.Select)
	case c.TopK < 1 || !(c.Alpha > 0 && c.Alpha <= 1):
		return fmt.Errorf("baseline config: top-k %d, alpha %g: need top-k ≥ 1 and alpha in (0, 1]", c.TopK, c.Alpha)
	case !(c.SimWeight >= 0) || math.IsInf(c.SimWeight, 0) || c.SimNodes < 2:
		return fmt.Errorf("baseline config: similarity weight %g over %d nodes: need a finite weight ≥ 0 and at least 2 nodes", c.SimWeight, c.SimNodes)
	}
	return nil
}

// FromSDGNN returns DefaultConfig with the settings that an SDGNN run shares
// with the baselines taken from c: φ's width, Adam's step and weight decay,
// the batch, the fine-tuning, the selection metric, the seed (also that of
// NOSMOG's random walks, so that every seed draws its own positional
// encodings) and the final budget as PPRGo's top-k, so that a comparison
// differs only in the student.
func FromSDGNN(c sdgnn.Config) Config {
	b := DefaultConfig()
	b.Hidden, b.LR, b.WeightDecay, b.Batch = c.PhiHidden, c.LR, c.Lambda2, c.PhiBatch
	b.FineTuneEpochs, b.FineTuneLR, b.Select, b.Seed = c.FineTuneEpochs, c.FineTuneLR, c.Select, c.Seed
	b.Walk.Seed = c.Seed
	b.MAPEFloor = c.MAPEFloor
	b.TopK = c.BudgetEnd
	return b
}

// sdgnnConfig returns the settings sdgnn.FineTuneDecoder and
// sdgnn.FineTuneDecoderZ read.
func (c Config) sdgnnConfig() sdgnn.Config {
	s := sdgnn.DefaultConfig()
	s.PhiBatch, s.FineTuneEpochs, s.FineTuneLR, s.Select, s.Seed = c.Batch, c.FineTuneEpochs, c.FineTuneLR, c.Select, c.Seed
	s.MAPEFloor = c.MAPEFloor
	return s
}

// Score returns the masked metrics of m's forecasts for the snapshots of t
// against t.Truth, on the original scale (zero targets are missing readings
// and left out), as SDGNN's validation scores its bundles.
func Score(m Model, t *sdgnn.Targets) (evaluation.Metrics, error) {
	pred, err := m.Forecast(t)
	if err != nil {
		return evaluation.Metrics{}, fmt.Errorf("score %s: %w", m.Name(), err)
	}
	met, err := evaluation.Compute(pred, t.Truth)
	if err != nil {
		return evaluation.Metrics{}, fmt.Errorf("score %s: %w", m.Name(), err)
	}
	return met, nil
}

// checkInputs reports whether the decoder, normaliser and targets fit
// together.
func checkInputs(dec *nn.MLP, norm snapshot.Normalizer, train, val *sdgnn.Targets) error {
	if dec == nil || train == nil || val == nil {
		return fmt.Errorf("missing decoder or targets")
	}
	for _, t := range []*sdgnn.Targets{train, val} {
		if err := checkTargets(t, train.Nodes, train.Dim, train.Channels); err != nil {
			return err
		}
	}
	if in, out := dec.L1.In(), dec.L2.Out(); in != train.Dim || out != train.Channels {
		return fmt.Errorf("decoder maps %d → %d, targets have %d-wide embeddings and %d channels", in, out, train.Dim, train.Channels)
	}
	if err := norm.Validate(train.Channels); err != nil {
		return err
	}
	return nil
}

// checkTargets reports whether t is well formed for n nodes, d-wide
// embeddings and c channels.
func checkTargets(t *sdgnn.Targets, n, d, c int) error {
	if t == nil || t.H == nil || t.Z == nil {
		return fmt.Errorf("targets without embeddings")
	}
	if t.Nodes != n || t.Dim != d || t.Channels != c || n < 1 || d < 1 || c < 1 {
		return fmt.Errorf("targets of %d nodes, %d dims, %d channels; want %d, %d, %d (all positive)", t.Nodes, t.Dim, t.Channels, n, d, c)
	}
	hr, hc := t.H.Dims()
	zr, zc := t.Z.Dims()
	if hc != d || zc != d || hr != zr || hr%n != 0 || len(t.Truth) != hr*c {
		return fmt.Errorf("targets: H %dx%d, Z %dx%d and %d truths do not hold whole snapshots of %d nodes, %d dims, %d channels",
			hr, hc, zr, zc, len(t.Truth), n, d, c)
	}
	return nil
}

// copyMLP returns an independent copy of m.
func copyMLP(name string, m *nn.MLP) (*nn.MLP, error) {
	c := nn.NewMLP(name, m.L1.In(), m.L1.Out(), m.L2.Out(), rand.New(rand.NewPCG(0, 0)))
	if err := nn.Copy(c.Params(), m.Params()); err != nil {
		return nil, err
	}
	return c, nil
}

// decode returns dec's forecasts for the rows of z on the original scale,
// row-major (row, channel).
func decode(dec *nn.MLP, norm snapshot.Normalizer, z *mat.Dense) []float64 {
	r, d := z.Dims()
	C := dec.L2.Out()
	pred := make([]float64, 0, r*C)
	for lo := 0; lo < r; lo += decodeChunkRows {
		hi := min(lo+decodeChunkRows, r)
		out := dec.Forward(z.Slice(lo, hi, 0, d).(*mat.Dense))
		for i, v := range out.RawMatrix().Data {
			pred = append(pred, norm.Denormalize(v, i%C))
		}
	}
	return pred
}

// decodeMetrics decodes z (rows of t's snapshots) and scores the forecasts
// against t's raw truth, as sdgnn's validation does.
func decodeMetrics(dec *nn.MLP, norm snapshot.Normalizer, z *mat.Dense, t *sdgnn.Targets, floor float64) evaluation.Metrics {
	acc := evaluation.Accumulator{MAPEFloor: floor}
	for i, p := range decode(dec, norm, z) {
		acc.Add(p, t.Truth[i])
	}
	return acc.Metrics()
}

// selectScore returns the validation score to minimise; NaN counts as +Inf,
// and so do the metrics of no pair (every truth masked), whose zero errors
// would otherwise read as a perfect score.
func selectScore(kind string, m evaluation.Metrics) float64 {
	v := m.MAPE
	if kind == selectMAE {
		v = m.MAE
	}
	if math.IsNaN(v) || m.Count == 0 {
		return math.Inf(1)
	}
	return v
}
