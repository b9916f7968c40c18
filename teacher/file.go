package teacher

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// File kinds in the checkpoint format.
const (
	FileKindModel = "teacher-model"          // a trained model (its best parameters)
	FileKindState = "teacher-training-state" // a resumable training run
)

// Meta is everything besides the parameters that a saved model carries: its
// shape, the normaliser fitted on the training split (needed to use the model
// at all), and where and how it was trained.
type Meta struct {
	Config   Config              `json:"config"`
	Norm     snapshot.Normalizer `json:"norm"`
	Dataset  string              `json:"dataset"`
	Nodes    int                 `json:"nodes"`
	Channels []string            `json:"channel_names"`
	Split    snapshot.Split      `json:"split"`
	Train    TrainConfig         `json:"train"`
	// Graph identifies the road graph a GRU-GCN was trained on, as the
	// model reads it (snapshot.Prepared.GraphFingerprint), so that a later
	// use on another graph (snapshot.PrepareSaved) is refused rather than
	// forecasting otherwise; nil for a GRU, which reads no graph, and in
	// files written before it was kept.
	Graph *pems.GraphFingerprint `json:"graph,omitempty"`
	// SensorIDs and Locations are the sensors' IDs and coordinates in
	// node order, as the data trained on names and places them
	// (pems.Dataset), passed on to the bundles distilled from the model;
	// nil where the data has none and in files written before they were
	// kept.
	SensorIDs []string        `json:"sensor_ids,omitempty"`
	Locations []pems.Location `json:"locations,omitempty"`

	Epochs     int     `json:"epochs"`     // epochs run
	BestEpoch  int     `json:"best_epoch"` // epoch whose parameters are saved
	BestValMAE float64 `json:"best_val_mae"`
	History    []Epoch `json:"history,omitempty"`
	Created    string  `json:"created,omitempty"` // RFC 3339
}

// Saved is a model loaded from a file together with its metadata.
type Saved struct {
	Meta  Meta
	Model *Model
}

func paramTensors(prefix string, ps []*nn.Param) []checkpoint.Tensor {
	ts := make([]checkpoint.Tensor, len(ps))
	for i, p := range ps {
		r, c := p.W.Dims()
		ts[i] = checkpoint.Tensor{Name: prefix + p.Name, Shape: []int{r, c}, Data: append([]float64(nil), p.W.RawMatrix().Data...)}
	}
	return ts
}

func matTensors(prefix string, ps []*nn.Param, ms []*mat.Dense) []checkpoint.Tensor {
	ts := make([]checkpoint.Tensor, len(ms))
	for i, m := range ms {
		r, c := m.Dims()
		ts[i] = checkpoint.Tensor{Name: prefix + ps[i].Name, Shape: []int{r, c}, Data: append([]float64(nil), m.RawMatrix().Data...)}
	}
	return ts
}

// loadInto copies the tensors named prefix+param name of f into ms (one per
// param, same shapes). A tensor under prefix that is none of ps is an error:
// the file was written for a model of another shape.
func loadInto(f *checkpoint.File, prefix string, ps []*nn.Param, ms []*mat.Dense) error {
	names := make(map[string]bool, len(ps))
	for _, p := range ps {
		names[prefix+p.Name] = true
	}
	for _, t := range f.Tensors {
		if strings.HasPrefix(t.Name, prefix) && !names[t.Name] {
			return fmt.Errorf("tensor %s is not a parameter of the model its metadata describes", t.Name)
		}
	}
	for i, p := range ps {
		t, err := f.Tensor(prefix + p.Name)
		if err != nil {
			return err
		}
		r, c := ms[i].Dims()
		if len(t.Shape) != 2 || t.Shape[0] != r || t.Shape[1] != c {
			return fmt.Errorf("tensor %s has shape %v, the model needs [%d %d]", t.Name, t.Shape, r, c)
		}
		if err := t.CheckFinite(); err != nil {
			return err
		}
		copy(ms[i].RawMatrix().Data, t.Data)
	}
	return nil
}

// checkGCNDepth reports a mismatch between the GCN depth that cfg declares
// and the GCN tensors under prefix in f: a one-layer configuration with
// second-layer tensors, or a two-layer one without them.
func checkGCNDepth(f *checkpoint.File, prefix string, cfg Config) error {
	layers := cfg.GCNLayers()
	if layers == 0 {
		return nil
	}
	var l2 string
	for _, t := range f.Tensors {
		if strings.HasPrefix(t.Name, prefix+"gcn.l2.") {
			l2 = t.Name
			break
		}
	}
	switch {
	case layers == 1 && l2 != "":
		return fmt.Errorf("config says a 1-layer GCN, but the file holds the second layer's tensor %s", l2)
	case layers == 2 && l2 == "":
		return fmt.Errorf("config says a 2-layer GCN (layers %d), but the file has no second-layer tensors %sgcn.l2.*", cfg.Layers, prefix)
	}
	return nil
}

func values(ps []*nn.Param) []*mat.Dense {
	ms := make([]*mat.Dense, len(ps))
	for i, p := range ps {
		ms[i] = p.W
	}
	return ms
}

// SaveModel writes m with meta to path (atomically).
func SaveModel(path string, m *Model, meta Meta) error {
	meta.Config = m.Config
	raw, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("save model %s: %w", path, err)
	}
	f := &checkpoint.File{Kind: FileKindModel, Meta: raw, Tensors: paramTensors("", m.Params())}
	if err := checkpoint.WriteFile(path, f); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	return nil
}

// LoadModel reads a model written by SaveModel. A file of another kind, a
// truncated or corrupted file, or one whose tensors do not fit its
// configuration gives an error naming the file and what is wrong.
func LoadModel(path string) (*Saved, error) {
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	if f.Kind != FileKindModel {
		return nil, fmt.Errorf("load model %s: file holds a %q, not a %q", path, f.Kind, FileKindModel)
	}
	s, err := decodeModel(f, "")
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return s, nil
}

func decodeModel(f *checkpoint.File, prefix string) (*Saved, error) {
	var meta Meta
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if err := meta.Config.Validate(); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(meta.Norm.Mean) != meta.Config.Channels || len(meta.Norm.Std) != meta.Config.Channels {
		return nil, fmt.Errorf("metadata: normaliser has %d means and %d stds for %d channels", len(meta.Norm.Mean), len(meta.Norm.Std), meta.Config.Channels)
	}
	if err := meta.Norm.Validate(meta.Config.Channels); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if len(meta.Channels) != 0 && len(meta.Channels) != meta.Config.Channels { // none: written before names were kept
		return nil, fmt.Errorf("metadata: channel_names %q name %d channels, the model has %d", meta.Channels, len(meta.Channels), meta.Config.Channels)
	}
	if in := meta.Norm.Inputs(); in != meta.Config.Inputs() || meta.Norm.Mask != (meta.Config.MaskInputs > 0) {
		return nil, fmt.Errorf("metadata: the normaliser gives %d inputs per step (%s preprocessing, missing marks %v), the model reads %d (%d marks)", in, meta.Norm.Prep(), meta.Norm.Mask, meta.Config.Inputs(), meta.Config.MaskInputs)
	}
	if g := meta.Graph; g != nil {
		if err := g.Validate(meta.Nodes); err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
	}
	if err := pems.CheckSensors(meta.Nodes, meta.SensorIDs, meta.Locations); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if err := checkGCNDepth(f, prefix, meta.Config); err != nil {
		return nil, err
	}
	// Check the sizes against the file before allocating layers of them.
	if need, ok := meta.Config.NumParams(); !ok || need > f.Elements() {
		return nil, fmt.Errorf("metadata: %d inputs and hidden %d take more parameters than the file's %d values", meta.Config.Inputs(), meta.Config.Hidden, f.Elements())
	}
	m, err := New(meta.Config)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	ps := m.Params()
	if err := loadInto(f, prefix, ps, values(ps)); err != nil {
		return nil, err
	}
	return &Saved{Meta: meta, Model: m}, nil
}

// stateMeta is the metadata of a training-state file.
type stateMeta struct {
	Meta
	AdamT int `json:"adam_t"`
	// BestValScore is the Trainer's, kept where it is not BestValMAE
	// (TrainConfig.Select); states written before it have none.
	BestValScore float64 `json:"best_val_score,omitempty"`
}

// SaveState writes everything needed to resume training: the current and
// best parameters, Adam's moments and step count, and the counters. meta
// describes the run (dataset, split, normaliser); its counters are filled in
// from t.
func (t *Trainer) SaveState(path string, meta Meta) error {
	meta.Config, meta.Train = t.Model.Config, t.Config
	meta.Epochs, meta.BestEpoch, meta.BestValMAE, meta.History = t.Epoch, t.BestEpoch, t.BestValMAE, t.History
	if t.BestEpoch == 0 {
		meta.BestValMAE = 0 // +Inf has no JSON form; BestEpoch 0 says "none yet"
	}
	sm := stateMeta{Meta: meta, AdamT: t.Opt.T}
	if t.BestEpoch > 0 && t.Config.Select == SelectScaled {
		sm.BestValScore = t.BestValScore
	}
	raw, err := json.Marshal(sm)
	if err != nil {
		return fmt.Errorf("save state %s: %w", path, err)
	}
	ps := t.Model.Params()
	ts := paramTensors("model.", ps)
	ts = append(ts, paramTensors("best.", t.Best.Params())...)
	if t.Opt.M != nil {
		ts = append(ts, matTensors("adam.m.", ps, t.Opt.M)...)
		ts = append(ts, matTensors("adam.v.", ps, t.Opt.V)...)
	}
	if err := checkpoint.WriteFile(path, &checkpoint.File{Kind: FileKindState, Meta: raw, Tensors: ts}); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}

// LoadState reads a training state written by SaveState and returns a
// trainer that continues where it stopped, with its run metadata.
func LoadState(path string) (*Trainer, Meta, error) {
	fail := func(err error) (*Trainer, Meta, error) {
		return nil, Meta{}, fmt.Errorf("load training state %s: %w", path, err)
	}
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("load training state: %w", err)
	}
	if f.Kind != FileKindState {
		return fail(fmt.Errorf("file holds a %q, not a %q", f.Kind, FileKindState))
	}
	var sm stateMeta
	if err := json.Unmarshal(f.Meta, &sm); err != nil {
		return fail(fmt.Errorf("metadata: %w", err))
	}
	// The checksum refuses a damaged file; these refuse counters that no
	// run writes (a file edited by hand), which would resume into NaN
	// updates or a best epoch after the last.
	switch {
	case sm.AdamT < 0:
		return fail(fmt.Errorf("metadata: adam_t %d, want 0 or more", sm.AdamT))
	case sm.Epochs < 0 || sm.BestEpoch < 0 || sm.BestEpoch > sm.Epochs:
		return fail(fmt.Errorf("metadata: best epoch %d of %d epochs, want 0 ≤ best ≤ epochs", sm.BestEpoch, sm.Epochs))
	}
	cur, err := decodeModel(f, "model.")
	if err != nil {
		return fail(err)
	}
	t, err := NewTrainer(cur.Model, sm.Train)
	if err != nil {
		return fail(err)
	}
	prefixes := []string{"best."}
	if sm.AdamT > 0 {
		prefixes = append(prefixes, "adam.m.", "adam.v.")
	}
	for _, prefix := range prefixes {
		if err := checkGCNDepth(f, prefix, sm.Config); err != nil {
			return fail(err)
		}
	}
	bp := t.Best.Params()
	if err := loadInto(f, "best.", bp, values(bp)); err != nil {
		return fail(err)
	}
	ps := cur.Model.Params()
	if sm.AdamT > 0 {
		t.Opt.M, t.Opt.V = make([]*mat.Dense, len(ps)), make([]*mat.Dense, len(ps))
		for i, p := range ps {
			r, c := p.W.Dims()
			t.Opt.M[i], t.Opt.V[i] = mat.NewDense(r, c, nil), mat.NewDense(r, c, nil)
		}
		if err := loadInto(f, "adam.m.", ps, t.Opt.M); err != nil {
			return fail(err)
		}
		if err := loadInto(f, "adam.v.", ps, t.Opt.V); err != nil {
			return fail(err)
		}
		// Second moments are averages of squares: a negative one (a file
		// edited by hand) would make the first resumed step's square root,
		// and so its weight, NaN.
		for i, p := range ps {
			for j, v := range t.Opt.V[i].RawMatrix().Data {
				if v < 0 {
					return fail(fmt.Errorf("tensor adam.v.%s value %d is %v, want 0 or more (a second moment)", p.Name, j, v))
				}
			}
		}
	}
	t.Opt.T = sm.AdamT
	t.Epoch, t.BestEpoch, t.BestValMAE, t.History = sm.Epochs, sm.BestEpoch, sm.BestValMAE, sm.History
	t.BestValScore = t.BestValMAE
	if t.Config.Select == SelectScaled {
		t.BestValScore = sm.BestValScore
	}
	if t.BestEpoch == 0 {
		t.BestValMAE, t.BestValScore = math.Inf(1), math.Inf(1)
	}
	return t, sm.Meta, nil
}
