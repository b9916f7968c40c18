package reproduce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// seedFile is the name of a seed's file in a model directory:
// DATASET-WHAT[-PREP][-SPLIT]-seedS.EXT (the preprocessing when it is not
// the standard one, the split when it deals nodes or windows).
func seedFile(dir, dataset, what string, p *snapshot.Prepared, seed uint64, ext string) string {
	prep := ""
	if p.Set.Norm.Prep() != snapshot.PrepStandard {
		prep = "-" + string(p.Set.Norm.Prep())
	}
	if snapshot.Dealt(p.Split.By) {
		prep += "-" + p.Split.By
	}
	return filepath.Join(dir, fmt.Sprintf("%s-%s%s-seed%d%s", dataset, what, prep, seed, ext))
}

// TeacherPath is where a reproduction with model directory dir keeps the
// teacher of the given kind and seed for the prepared data p, for example
// sz-taxi-gru-gcn-paper-windows-seed6.model.
func TeacherPath(dir, dataset, kind string, p *snapshot.Prepared, seed uint64) string {
	return seedFile(dir, dataset, kind, p, seed, ".model")
}

// BundlePath is where a reproduction with model directory dir keeps the
// SDGNN bundle of a seed (for example sz-taxi-sdgnn-paper-windows-seed6.sdgnn),
// the very model behind the table's SDGNN figures, which the forecaster
// can serve.
func BundlePath(dir, dataset string, p *snapshot.Prepared, seed uint64) string {
	return seedFile(dir, dataset, "sdgnn", p, seed, ".sdgnn")
}

// scoresPath is where an unfinished seed keeps the scores of the models done
// so far.
func scoresPath(dir, dataset string, p *snapshot.Prepared, seed uint64) string {
	return seedFile(dir, dataset, "scores", p, seed, ".json")
}

// checkReuse reports why a teacher saved at path (a finished model, or a
// training state when state is set, described by m) cannot serve a run that
// needs training tc and model mc on p, if it cannot.
func checkReuse(path string, m teacher.Meta, cfg Config, p *snapshot.Prepared, tc teacher.TrainConfig, mc teacher.Config, state bool) error {
	if m.Dataset != cfg.Dataset || !m.Split.Equal(p.Split) || m.Norm.Prep() != p.Set.Norm.Prep() {
		return fmt.Errorf("reuse %s: trained on %s with split %+v and %s preprocessing, this run needs %s with %+v and %s",
			path, m.Dataset, m.Split, m.Norm.Prep(), cfg.Dataset, p.Split, p.Set.Norm.Prep())
	}
	if d := snapshot.ScalingDiff(m.Norm, p.Set.Norm); d != "" {
		return fmt.Errorf("reuse %s: its inputs were scaled otherwise than this run's data gives (%s: the data file or the fitting of the scaling changed; remove the file to retrain)", path, d)
	}
	if mc.Kind == teacher.KindGRUGCN { // a GRU reads no graph
		if !snapshot.SameEdges(m.Norm.Edges, p.Set.Norm.Edges) {
			return fmt.Errorf("reuse %s: its GCN was trained on %s, this run's graph has %s (remove the file to retrain)", path, m.Norm.Edges, p.Set.Norm.Edges)
		}
		if err := p.CheckGraph(m.Graph); err != nil {
			return fmt.Errorf("reuse %s: %w (remove the file to retrain)", path, err)
		}
	}
	capped := m.Train // the cap is checked below
	capped.MaxEpochs = tc.MaxEpochs
	if capped != tc {
		return fmt.Errorf("reuse %s: trained with %+v, this run needs %+v (remove the file to retrain)", path, m.Train, tc)
	}
	if err := checkCap(m, tc, state); err != nil {
		return fmt.Errorf("reuse %s: %w", path, err)
	}
	if c := m.Config; c.Kind != mc.Kind || c.Window != mc.Window || c.Hidden != mc.Hidden || c.NoiseStd != mc.NoiseStd || c.Seed != mc.Seed {
		return fmt.Errorf("reuse %s: a %s with window %d, hidden %d, noise %g, seed %d; this run needs window %d, hidden %d, noise %g, seed %d (remove the file to retrain)",
			path, c.Kind, c.Window, c.Hidden, c.NoiseStd, c.Seed, mc.Window, mc.Hidden, mc.NoiseStd, mc.Seed)
	}
	if c := m.Config; c.MaskInputs != mc.MaskInputs || c.Gate != mc.Gate {
		return fmt.Errorf("reuse %s: a %s with %d missing marks and gate %v; this run needs %d and %v (remove the file to retrain)", path, c.Kind, c.MaskInputs, c.Gate, mc.MaskInputs, mc.Gate)
	}
	if c := m.Config; c.GCNLayers() != mc.GCNLayers() {
		return fmt.Errorf("reuse %s: a %s with %d GCN layers; this run needs %d (remove the file to retrain)", path, c.Kind, c.GCNLayers(), mc.GCNLayers())
	}
	return nil
}

// checkCap reports why a teacher trained with cap m.Train.MaxEpochs, which
// has run m.Epochs epochs, is not what a run capped at tc.MaxEpochs would
// train, if it is not. The cap only stops training, so a state that has not
// passed the new cap continues as a run with it would (a Los-loop teacher
// still improving at 1000 epochs can be given more), and a model that
// stopped early, by patience, within the new cap is that run's model. A
// model that stopped at its cap, or one that ran past the new cap, is not.
func checkCap(m teacher.Meta, tc teacher.TrainConfig, state bool) error {
	was, want := m.Train.MaxEpochs, tc.MaxEpochs
	early := m.BestEpoch > 0 && m.Epochs-m.BestEpoch >= m.Train.Patience
	switch {
	case was == want:
		return nil
	case m.Epochs > want:
		return fmt.Errorf("ran %d epochs (at most %d), past this run's cap of %d (remove the file to retrain)", m.Epochs, was, want)
	case state || early:
		return nil
	default:
		return fmt.Errorf("stopped at its cap of %d epochs, not by early stopping, so a run capped at %d would train it further "+
			"(its training state is gone with the model: remove the file to retrain)", was, want)
	}
}

// scores is what an unfinished seed keeps between runs: the run so far,
// each model's per-snapshot test MAE (for the Diebold–Mariano tests, which
// need every model's), and the settings, so that a run with others does not
// mix its scores with these.
type scores struct {
	Config json.RawMessage   `json:"config"`
	Run    Run               `json:"run"`
	Losses map[string]losses `json:"losses"`
	// Bundle is the SDGNN bundle this seed's run distilled, once it has.
	Bundle string `json:"bundle,omitempty"`
	// Scaling is the inputs' scaling the models were scored on, so that a
	// run on data scaled otherwise (the data file or the fitting changed)
	// does not put these scores beside its own. Files written before it
	// existed have none and are taken as they are.
	Scaling *snapshot.Normalizer `json:"scaling,omitempty"`
}

// losses is a per-snapshot error series whose NaN (a snapshot without a
// truth to score, or with a NaN forecast) and +Inf (an infinite forecast)
// are written as JSON null, JSON having neither; null reads back as NaN,
// which DieboldMariano leaves out as it does +Inf.
type losses []float64

// MarshalJSON writes l with null for NaN and ±Inf.
func (l losses) MarshalJSON() ([]byte, error) {
	v := make([]*float64, len(l))
	for i := range l {
		if !math.IsNaN(l[i]) && !math.IsInf(l[i], 0) {
			v[i] = &l[i]
		}
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *losses) UnmarshalJSON(b []byte) error {
	var v []*float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*l = make(losses, len(v))
	for i, x := range v {
		(*l)[i] = math.NaN()
		if x != nil {
			(*l)[i] = *x
		}
	}
	return nil
}

// fingerprint is cfg as the scores of one of its seeds depend on it: without
// the seeds, the directories or the data directory.
func fingerprint(cfg Config) (json.RawMessage, error) {
	cfg.Seeds, cfg.ModelDir, cfg.DataDir = nil, "", ""
	return json.Marshal(cfg)
}

// loadScores reads the scores an interrupted run of seed on norm's scaling
// left at path: nil when there are none.
func loadScores(path string, cfg Config, norm snapshot.Normalizer, seed uint64) (*scores, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	var sc scores
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("resume %s: %w (remove it to score the seed from the start)", path, err)
	}
	fp, err := fingerprint(cfg)
	if err != nil {
		return nil, err
	}
	var a, c bytes.Buffer
	if err := json.Compact(&a, sc.Config); err != nil {
		return nil, fmt.Errorf("resume %s: settings: %w", path, err)
	}
	if err := json.Compact(&c, fp); err != nil {
		return nil, err
	}
	if !bytes.Equal(a.Bytes(), c.Bytes()) {
		return nil, fmt.Errorf("resume %s: scored with other settings (%s), this run has %s (remove it to score the seed again)", path, a.String(), c.String())
	}
	if sc.Run.Seed != seed {
		return nil, fmt.Errorf("resume %s: holds seed %d, not %d", path, sc.Run.Seed, seed)
	}
	if sc.Scaling != nil {
		if d := snapshot.ScalingDiff(*sc.Scaling, norm); d != "" {
			return nil, fmt.Errorf("resume %s: scored on inputs scaled otherwise than this run's data gives (%s; remove it to score the seed again)", path, d)
		}
	}
	r := &sc.Run
	if r.Metrics == nil || r.Seconds == nil || r.MaxReceptive == nil || r.Receptive == nil || r.Paper == nil || sc.Losses == nil {
		return nil, fmt.Errorf("resume %s: incomplete (remove it to score the seed from the start)", path)
	}
	if r.DM == nil { // none until the seed is finished, and then omitted as empty
		r.DM = map[string]evaluation.DM{}
	}
	for name := range sc.Run.Metrics {
		if len(sc.Losses[name]) == 0 {
			return nil, fmt.Errorf("resume %s: %s is scored but its per-snapshot errors are missing (remove it to score the seed again)", path, name)
		}
	}
	return &sc, nil
}

// save writes the scores atomically, so that a run killed while writing
// leaves the previous ones.
func (sc *scores) save(path string) error {
	return checkpoint.WriteAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		return enc.Encode(sc)
	})
}

// resumeBundle returns the bundle an interrupted run of this seed saved at
// path, if it was distilled from m with the settings sc on p's split; nil
// when there is none.
func resumeBundle(path string, m *teacher.Model, sc sdgnn.Config, p *snapshot.Prepared) (*sdgnn.Bundle, error) {
	b, err := sdgnn.LoadBundle(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	if b.Meta.Config != sc || !b.Meta.Split.Equal(p.Split) {
		return nil, fmt.Errorf("resume %s: distilled with %+v on split %+v, this run needs %+v on %+v (remove it to distil again)", path, b.Meta.Config, b.Meta.Split, sc, p.Split)
	}
	if err := p.CheckGraph(b.Meta.Graph); err != nil {
		return nil, fmt.Errorf("resume %s: %w (remove it to distil again)", path, err)
	}
	if b.Meta.SensorIDs != nil { // a bundle that records none is not checked
		if err := pems.CompareSensorIDs(b.Meta.SensorIDs, p.Dataset.SensorIDs); err != nil {
			return nil, fmt.Errorf("resume %s: %w (remove it to distil again)", path, err)
		}
	}
	bp, tp := b.GRU.Params(), m.GRU.Params()
	for i := range tp {
		if i >= len(bp) || len(bp[i].W.RawMatrix().Data) != len(tp[i].W.RawMatrix().Data) {
			return nil, fmt.Errorf("resume %s: distilled from another teacher (its GRU has other sizes; remove it to distil again)", path)
		}
		x, y := bp[i].W.RawMatrix().Data, tp[i].W.RawMatrix().Data
		for j := range y {
			if math.Float64bits(x[j]) != math.Float64bits(y[j]) {
				return nil, fmt.Errorf("resume %s: distilled from another teacher (its GRU differs; remove it to distil again)", path)
			}
		}
	}
	return b, nil
}
