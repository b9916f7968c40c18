// Package report builds the analyst's report on a model bundle: it replays
// a split of a dataset through the same online inference path the streaming
// service uses (stream.Replay), scores the bundle beside the teacher, the
// GRU baseline and the distilled baselines, and writes the numbers
// (metrics.json), the per-snapshot, per-node predictions (Arrow IPC and
// Parquet), the figures (PNG and SVG) and a Markdown and a self-contained
// HTML report.
//
// Build computes; Document.Write writes. The optional parts — the
// teacher, the GRU, the budget sweep, the distilled baselines — are left out
// when their inputs are not given, and the report says which figure needs
// which input.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/pemsforecast/sdgnn/baseline"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/pemsforecast/sdgnn/teacher"
)

// Model names used in the report, its files and its figures.
const (
	SDGNN  = "SDGNN"
	GRUGCN = "GRU-GCN"
	GRU    = "GRU"
	GLNN   = baseline.NameGLNN
	NOSMOG = baseline.NameNOSMOG
	PPRGo  = baseline.NamePPRGo
)

// Sources of predictions, as the report names them.
const (
	SourceReplay  = "online replay (stream.State, as the service forecasts)"
	SourceBatched = "batched whole-graph pass (teacher.Predict)"
	SourceStudent = "distilled student, batched over the teacher's embeddings"
)

// Input is what a report replays and compares. Prepared, Range and Bundle
// are required; the teachers are optional and each enables more of the
// report.
type Input struct {
	Prepared *snapshot.Prepared
	Part     string         // name of the split part replayed: "train", "val" or "test"
	Range    snapshot.Range // the snapshots replayed
	// Deal selects the snapshots of Range scored, for a split by windows;
	// the zero Deal scores every one. Every reading of Range is replayed.
	Deal snapshot.Deal
	// Nodes are the sensors scored, for a split by nodes; nil scores every
	// sensor. Every sensor is still replayed: a forecast reads its
	// receptive nodes whatever part they are in.
	Nodes []int

	Bundle     *sdgnn.Bundle
	BundlePath string

	// Teacher is the GRU-GCN the bundle was distilled from: its scores,
	// the per-node comparison, and the targets of the sweep and the
	// baselines.
	Teacher     *teacher.Saved
	TeacherPath string
	// Teacher1 is a GRU-GCN with a one-layer GCN: the sweep's 1-layer
	// targets.
	Teacher1     *teacher.Saved
	Teacher1Path string
	// GRU is the graph-free GRU baseline: the reference of the per-node
	// MAE reductions.
	GRU     *teacher.Saved
	GRUPath string

	Chunks    int     // chronological chunks of the staleness report (10: tenths)
	MAPEFloor float64 // truths below it are left out of MAPE (see evaluation.Accumulator)
	Sensor    int     // sensor of the receptive-field figure; -1 picks one (see PickSensor)

	// Sweep lists the SDGNN budgets to distil for the MAPE-against-
	// receptive-field figure, with each teacher given; empty: no sweep.
	Sweep []int
	// SweepScale shortens the sweep's distillation schedule (see
	// sdgnn.Config.Scaled) and the baselines' epochs as many times; the
	// bundle's own schedule when ≤ 1.
	SweepScale int
	// Baselines trains GLNN, NOSMOG and PPRGo against Teacher.
	Baselines bool
	// Outage is a scenario of simulated outages every model is also scored
	// under, one pass a silenced length, through its batched path (the
	// zero Outage: none); see Model.Outages.
	Outage snapshot.Outage

	// Progress, if not nil, is told how far each long stage is: stage
	// names a stage, done of total units are finished.
	Progress func(stage string, done, total int)
}

// Model is one forecaster's scores over the replayed range.
type Model struct {
	Name   string `json:"name"`
	Source string `json:"source"` // how its predictions were computed
	File   string `json:"file,omitempty"`
	// Receptive is the mean number of nodes whose windows one node's
	// forecast reads.
	Receptive float64                 `json:"mean_receptive_field"`
	Report    evaluation.Report       `json:"report"`
	Paper     evaluation.PaperMetrics `json:"paper"`
	Seconds   float64                 `json:"seconds"` // to predict (and to train, for the distilled baselines)
	// Outages holds the model's scores under each length of the outage
	// scenario (Input.Outage), forecast through its batched path (SDGNN's
	// too, the function its online path computes); absent without one.
	Outages []OutagePass `json:"outages,omitempty"`

	pred []float64
}

// OutagePass is a model's scores in one pass of an outage scenario: the
// sensors it silences silenced for their last Length readings, the
// truths kept.
type OutagePass struct {
	Length  int                `json:"length"`
	Overall evaluation.Metrics `json:"overall"`
	// Breakdown holds the metrics of the silenced sensors and of the
	// others, and by the completeness of every forecast's inputs.
	Breakdown evaluation.Breakdown `json:"breakdown"`
}

// SweepPoint is one model at one setting of the MAPE-against-receptive-
// field comparison.
type SweepPoint struct {
	Series    string             `json:"series"` // e.g. "SDGNN, 2-layer target"
	Model     string             `json:"model"`
	Layers    int                `json:"layers,omitempty"` // GCN layers of the target (0: no GCN)
	Budget    int                `json:"budget,omitempty"`
	Receptive float64            `json:"mean_receptive_field"`
	Metrics   evaluation.Metrics `json:"metrics"`
	Seconds   float64            `json:"seconds"`

	// of names the model of Document.Models whose scores the point
	// shows, if any, so that its series is drawn in that model's style.
	of string
}

// NodeReduction is one node's MAE reduction relative to the GRU baseline,
// in percent of the GRU's MAE: 100·(MAE_GRU − MAE_model)/MAE_GRU. It is
// NaN, written as JSON null, where the model's MAE is (a NaN forecast).
type NodeReduction struct {
	Node   int     `json:"node"`
	GRUMAE float64 `json:"gru_mae"`
	SDGNN  float64 `json:"sdgnn"`
	GRUGCN float64 `json:"gru_gcn"`
}

// MarshalJSON implements json.Marshaler, writing NaN and ±Inf as null.
func (r NodeReduction) MarshalJSON() ([]byte, error) {
	f := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Node   int      `json:"node"`
		GRUMAE *float64 `json:"gru_mae"`
		SDGNN  *float64 `json:"sdgnn"`
		GRUGCN *float64 `json:"gru_gcn"`
	}{r.Node, f(r.GRUMAE), f(r.SDGNN), f(r.GRUGCN)})
}

// Field is a sensor's receptive field on the road graph.
type Field struct {
	Sensor int `json:"sensor"`
	// Hops is the depth of the neighbourhood drawn: the teacher's GCN
	// layers.
	Hops int `json:"hops"`
	// Hop maps every node within Hops of the sensor, and every selected
	// node, to its hop distance (−1: not connected).
	Hop      map[int]int `json:"hop"`
	Edges    [][2]int    `json:"edges"`
	Selected []Selected  `json:"selected"`
}

// Selected is one of a sensor's receptive nodes with its weight.
type Selected struct {
	Node  int     `json:"node"`
	Theta float64 `json:"theta"`
	Hop   int     `json:"hop"`
}

// Distribution holds a sparse model's receptive-set sizes and row-
// normalised weights (θ_zk / Σ_k θ_zk), for the ECDF figures.
type Distribution struct {
	Model   string    `json:"model"`
	Sizes   []float64 `json:"sizes"`
	Weights []float64 `json:"weights"`
}

// Document is a built report: every number it shows. Write renders it.
type Document struct {
	Dataset string         `json:"dataset"`
	Part    string         `json:"split"`
	Range   snapshot.Range `json:"range"`
	// Deal says which snapshots of Range were scored, for a split by
	// windows; absent: all.
	Deal      snapshot.Deal `json:"deal,omitzero"`
	Snapshots int           `json:"snapshots"`
	Nodes     int           `json:"nodes"`
	// Scored are the sensors scored, for a split by nodes; absent: all.
	Scored   []int    `json:"scored_nodes,omitempty"`
	Channels []string `json:"channel_names"`
	// SensorIDs name the sensors in node order, as the bundle (or its
	// data) does: Los-loop's detector IDs; absent where there are none,
	// the sensors then named by index. The tables, figures and files name
	// sensors by them.
	SensorIDs []string `json:"sensor_ids,omitempty"`
	// Locations are the sensors' coordinates in node order, where the
	// bundle (or its data) gives them: the maps are drawn from them.
	Locations []pems.Location `json:"locations,omitempty"`
	// Units are the units of the channels' readings, in which MAE and RMSE
	// are; absent when not known (a dataset of one's own).
	Units     []string `json:"channel_units,omitempty"`
	MAPEFloor float64  `json:"mape_floor"`
	// Outage is the scenario of simulated outages the models were also
	// scored under (Model.Outages); absent without one.
	Outage  string `json:"outage,omitempty"`
	Bundle  string `json:"bundle"`
	Created string `json:"created"`
	// Command and Host say how and where the report was made; the caller
	// fills them in.
	Command string `json:"command,omitempty"`
	Host    string `json:"host,omitempty"`

	Models      []Model       `json:"models"`
	Sweep       []SweepPoint  `json:"sweep,omitempty"`
	Checkpoints []sdgnn.Round `json:"checkpoints,omitempty"`
	// CheckpointsMAPEFloor is the MAPE floor of the checkpoints'
	// validation MAPE: the bundle's, set when it was distilled, which may
	// not be MAPEFloor.
	CheckpointsMAPEFloor float64         `json:"checkpoints_mape_floor"`
	Reductions           []NodeReduction `json:"node_reductions,omitempty"`
	Field                *Field          `json:"receptive_field,omitempty"`
	Distributions        []Distribution  `json:"distributions"`
	// Figures lists the figures Write drew, and the ones it could not,
	// with why.
	Figures []Figure `json:"figures,omitempty"`
	// Notes says what was left out of the report and why.
	Notes []string `json:"notes,omitempty"`

	snaps  []int64 // each scored snapshot
	window int     // steps in a window: snapshot s's target is step s+window
	truth  []float64
	lo, hi []float64 // per-channel min and max of the training steps, for the paper's metrics
}

// Model returns the named model's entry, or nil.
func (d *Document) Model(name string) *Model {
	for i := range d.Models {
		if d.Models[i].Name == name {
			return &d.Models[i]
		}
	}
	return nil
}

// Build replays in.Range through the bundle's online path and computes the
// report's numbers.
func Build(ctx context.Context, in Input) (*Document, error) {
	p, b := in.Prepared, in.Bundle
	if p == nil || b == nil {
		return nil, errors.New("report: no data or no bundle")
	}
	set := p.Set
	if in.Range.Start < 0 || in.Range.End > set.Len() || in.part().Len() < 1 {
		return nil, fmt.Errorf("report: range %+v (%+v) outside the %d snapshots of %s or empty", in.Range, in.Deal, set.Len(), b.Meta.Dataset)
	}
	if in.Chunks < 1 {
		in.Chunks = 10
	}
	for _, m := range []*teacher.Saved{in.Teacher, in.Teacher1, in.GRU} {
		if m != nil && (m.Meta.Dataset != b.Meta.Dataset || !m.Meta.Split.Equal(b.Meta.Split)) {
			return nil, fmt.Errorf("report: a %s model trained on %s with split %+v cannot be compared with a bundle of %s with split %+v",
				m.Model.Config.Kind, m.Meta.Dataset, m.Meta.Split, b.Meta.Dataset, b.Meta.Split)
		}
	}
	// The receptive fields are drawn on p's graph and the GCNs run over
	// it: it must be the one each model was trained on, where the model
	// records which (files written before they did are taken as they are).
	if err := p.CheckGraph(b.Meta.Graph); err != nil {
		return nil, fmt.Errorf("report: bundle %s: %w", in.BundlePath, err)
	}
	for _, m := range []struct {
		saved *teacher.Saved
		path  string
	}{{in.Teacher, in.TeacherPath}, {in.Teacher1, in.Teacher1Path}, {in.GRU, in.GRUPath}} {
		if m.saved == nil {
			continue
		}
		if err := p.CheckGraph(m.saved.Meta.Graph); err != nil {
			return nil, fmt.Errorf("report: %s model %s: %w", m.saved.Model.Config.Kind, m.path, err)
		}
	}
	for _, m := range []*teacher.Saved{in.Teacher, in.Teacher1} {
		if m != nil && !snapshot.SameEdges(m.Meta.Norm.Edges, b.Meta.Norm.Edges) {
			return nil, fmt.Errorf("report: a GRU-GCN trained on %s cannot be compared with a bundle whose graph has %s", m.Meta.Norm.Edges, b.Meta.Norm.Edges)
		}
	}
	if in.Teacher != nil && in.Teacher.Model.Config.Kind != teacher.KindGRUGCN {
		return nil, fmt.Errorf("report: the teacher is a %s model, want %s", in.Teacher.Model.Config.Kind, teacher.KindGRUGCN)
	}
	if in.Teacher1 != nil && (in.Teacher1.Model.Config.Kind != teacher.KindGRUGCN || gcnLayers(in.Teacher1.Model) != 1) {
		return nil, errors.New("report: the 1-layer teacher is not a GRU-GCN with one GCN layer")
	}
	if in.GRU != nil && in.GRU.Model.Config.Kind != teacher.KindGRU {
		return nil, fmt.Errorf("report: the GRU baseline is a %s model, want %s", in.GRU.Model.Config.Kind, teacher.KindGRU)
	}
	if (len(in.Sweep) > 0 || in.Baselines) && in.Teacher == nil && in.Teacher1 == nil {
		return nil, errors.New("report: the sweep and the baselines need a teacher")
	}
	for _, bud := range in.Sweep {
		if bud < 1 {
			return nil, fmt.Errorf("report: sweep budget %d: must be positive", bud)
		}
	}
	s := p.Dataset.Series
	fit, fitNodes, steps := p.Split.FitData(s.Data, s.Nodes, s.Channels, set.Window)
	lo, hi, err := snapshot.FitMinMax(fit, fitNodes, s.Channels, steps)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	d := &Document{lo: lo, hi: hi, window: set.Window, Dataset: b.Meta.Dataset, Part: in.Part, Range: in.Range, Deal: in.Deal, Snapshots: in.part().Len(), Nodes: set.Nodes, Scored: in.Nodes,
		Channels: channelNames(b.Meta.Channels, set.Channels), MAPEFloor: in.MAPEFloor, Bundle: in.BundlePath,
		Created: time.Now().UTC().Format(time.RFC3339)}
	if in.Outage.Enabled() {
		d.Outage = in.Outage.String()
	}
	d.Units = pems.ChannelUnits(b.Meta.Dataset, d.Channels)
	if d.SensorIDs, d.Locations, err = sensorsOf(p, b); err != nil {
		return nil, fmt.Errorf("report: bundle %s: %w", in.BundlePath, err)
	}
	for _, sn := range in.part().Snapshots() {
		d.snaps = append(d.snaps, int64(sn))
	}
	// SDGNN through the online path.
	start := time.Now()
	rb, err := b.Clone()
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	pred, err := stream.ReplayPart(rb, set, in.part(), func(done int) { in.progress("replay "+SDGNN, done, d.Snapshots) })
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	d.truth = truthOf(set, in.part())
	sdgnnPredict := func(s *snapshot.Set) ([]float64, []float64, error) {
		return sdgnn.Predict(ctx, b, s, in.part(), 64)
	}
	if _, err := d.score(&in, SDGNN, SourceReplay, in.BundlePath, b.Theta.MeanReceptive(), pred, d.truth, b.Theta.Nodes, sdgnnPredict, start); err != nil {
		return nil, err
	}
	d.Checkpoints, d.CheckpointsMAPEFloor = b.Meta.Rounds, b.Meta.Config.MAPEFloor

	// The teachers, through their batched path: they have no online one.
	nb := p.Dataset.Graph.Neighbors()
	teachers := []struct {
		name, file string
		m          *teacher.Saved
	}{{GRUGCN, in.TeacherPath, in.Teacher}, {GRUGCN + " L1", in.Teacher1Path, in.Teacher1}, {GRU, in.GRUPath, in.GRU}}
	for _, tc := range teachers {
		if tc.m == nil {
			continue
		}
		start := time.Now()
		in.progress("predict "+tc.name, 0, 1)
		pred, truth, err := teacher.Predict(ctx, tc.m.Model, set, in.part(), p.Adj, 64)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", tc.name, err)
		}
		in.progress("predict "+tc.name, 1, 1)
		rec, err := receptiveOf(tc.m.Model, nb)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		sets, err := receptiveSets(tc.m.Model, nb)
		if err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		m := tc.m.Model
		predict := func(s *snapshot.Set) ([]float64, []float64, error) {
			return teacher.Predict(ctx, m, s, in.part(), p.Adj, 64)
		}
		if _, err := d.score(&in, tc.name, SourceBatched, tc.file, rec, pred, truth, sets, predict, start); err != nil {
			return nil, err
		}
	}
	if in.Teacher == nil {
		d.Notes = append(d.Notes, "no GRU-GCN teacher given (-teacher): its scores, the per-node comparison, the sweep and the baselines are left out")
	}
	if in.GRU == nil {
		d.Notes = append(d.Notes, "no GRU baseline given (-gru): the per-node MAE reductions are left out")
	}

	if err := d.sweep(ctx, in, nb); err != nil {
		return nil, err
	}
	d.Reductions = reductions(d)
	sensor := in.Sensor
	if sensor < 0 {
		sensor = PickSensor(b.Theta, nb)
	}
	if sensor >= set.Nodes {
		return nil, fmt.Errorf("report: sensor %d: the dataset has sensors 0..%d", sensor, set.Nodes-1)
	}
	hops := 2
	if in.Teacher != nil {
		hops = gcnLayers(in.Teacher.Model)
	}
	d.Field = FieldOf(nb, b.Theta, sensor, hops)
	d.Distributions = append(d.Distributions, DistributionOf(SDGNN, b.Theta))
	topK := b.Meta.Config.BudgetEnd
	if topK < 1 {
		topK = 6
	}
	ppr, err := baseline.PPR(nb, baseline.DefaultConfig().Alpha, topK)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	d.Distributions = append(d.Distributions, DistributionOf(PPRGo, ppr))
	return d, nil
}

// part is the replayed part: its snapshots and the sensors scored.
func (in *Input) part() snapshot.Part {
	return snapshot.Part{Range: in.Range, Deal: in.Deal, Nodes: in.Nodes}
}

func (in *Input) progress(stage string, done, total int) {
	if in.Progress != nil {
		in.Progress(stage, done, total)
	}
}

// sweep distils SDGNN at each budget from each teacher given and trains
// the baselines, all scored on the replayed range.
func (d *Document) sweep(ctx context.Context, in Input, nb [][]int) error {
	p, b := in.Prepared, in.Bundle
	set := p.Set
	if g := d.Model(GRU); g != nil {
		d.Sweep = append(d.Sweep, SweepPoint{Series: GRU, Model: GRU, Receptive: 1, Metrics: g.Report.Overall, Seconds: g.Seconds, of: GRU})
	}
	sd := d.Model(SDGNN)
	d.Sweep = append(d.Sweep, SweepPoint{Series: SDGNN + " (this bundle)", Model: SDGNN, Layers: 0, Budget: b.Meta.Config.BudgetEnd,
		Receptive: sd.Receptive, Metrics: sd.Report.Overall, Seconds: sd.Seconds, of: SDGNN})
	base := b.Meta.Config
	if in.SweepScale > 1 {
		base = base.Scaled(in.SweepScale)
	}
	for _, tm := range []*teacher.Saved{in.Teacher, in.Teacher1} {
		if tm == nil {
			continue
		}
		layers := gcnLayers(tm.Model)
		name := GRUGCN
		if tm == in.Teacher1 {
			name += " L1"
		}
		if m := d.Model(name); m != nil {
			d.Sweep = append(d.Sweep, SweepPoint{Series: fmt.Sprintf("%s L%d", GRUGCN, layers), Model: GRUGCN, Layers: layers,
				Receptive: m.Receptive, Metrics: m.Report.Overall, Seconds: m.Seconds, of: name})
		}
		if len(in.Sweep) == 0 && !(in.Baselines && tm == in.Teacher) {
			continue
		}
		in.progress(fmt.Sprintf("targets of the %d-layer teacher", layers), 0, 1)
		tg, err := sdgnn.PartTargets(ctx, tm.Model, set, p.Adj, p.Split.Train, p.Split.Val, in.part())
		if err != nil {
			return fmt.Errorf("report: targets: %w", err)
		}
		in.progress(fmt.Sprintf("targets of the %d-layer teacher", layers), 1, 1)
		train, val, eval := tg[0], tg[1], tg[2]
		for _, bud := range in.Sweep {
			start := time.Now()
			cfg := budgetConfig(base, bud)
			cfg.MAPEFloor = in.MAPEFloor
			cands, err := sdgnn.Candidates(nb, cfg.Candidates)
			if err != nil {
				return fmt.Errorf("report: %w", err)
			}
			stage := fmt.Sprintf("distil budget %d, %d-layer target", bud, layers)
			rounds := cfg.Epochs/cfg.ThetaEvery + 1 // Distill solves Θ at every multiple of ThetaEvery and at the end
			if cfg.Epochs%cfg.ThetaEvery != 0 {
				rounds++
			}
			done := 0
			res, err := sdgnn.Distill(ctx, tm.Model, set.Norm, cands, train, val, cfg, func(sdgnn.Round) {
				done++
				in.progress(stage, min(done, rounds), rounds)
			})
			if err != nil {
				return fmt.Errorf("report: %s: %w", stage, err)
			}
			pred, err := forecastZ(res, set.Norm, eval)
			if err != nil {
				return fmt.Errorf("report: %s: %w", stage, err)
			}
			met := metricsFloor(pred, eval.Truth, in.MAPEFloor)
			d.Sweep = append(d.Sweep, SweepPoint{Series: fmt.Sprintf("%s, %d-layer target", SDGNN, layers), Model: SDGNN, Layers: layers,
				Budget: bud, Receptive: res.Student.Theta.MeanReceptive(), Metrics: met, Seconds: time.Since(start).Seconds()})
		}
		if !in.Baselines || tm != in.Teacher {
			continue
		}
		bc := baseline.FromSDGNN(base)
		bc.MAPEFloor = in.MAPEFloor
		if in.SweepScale > 1 {
			bc.Epochs = max(1, bc.Epochs/in.SweepScale)
		}
		for _, name := range []string{GLNN, NOSMOG, PPRGo} {
			start := time.Now()
			in.progress("train "+name, 0, 1)
			var m baseline.Model
			var err error
			switch name {
			case GLNN:
				m, err = baseline.TrainGLNN(ctx, tm.Model.Dec, set.Norm, train, val, bc)
			case NOSMOG:
				m, err = baseline.TrainNOSMOG(ctx, tm.Model.Dec, set.Norm, nb, train, val, bc)
			case PPRGo:
				m, err = baseline.TrainPPRGo(ctx, tm.Model.Dec, set.Norm, nb, train, val, bc)
			}
			if err != nil {
				return fmt.Errorf("report: %s: %w", name, err)
			}
			in.progress("train "+name, 1, 1)
			pred, err := m.Forecast(eval)
			if err != nil {
				return fmt.Errorf("report: %s: %w", name, err)
			}
			sets := make([][]int, set.Nodes)
			for z := range sets {
				sets[z] = m.Receptive(z)
			}
			predict := func(s *snapshot.Set) ([]float64, []float64, error) {
				t, err := outageTargets(ctx, tm.Model, s, p, in.part())
				if err != nil {
					return nil, nil, err
				}
				pred, err := m.Forecast(t)
				return pred, t.Truth, err
			}
			sm, err := d.score(&in, name, SourceStudent, "", m.MeanReceptive(), pred, eval.Truth, sets, predict, start)
			if err != nil {
				return err
			}
			d.Sweep = append(d.Sweep, SweepPoint{Series: name, Model: name, Layers: layers, Receptive: sm.Receptive, Metrics: sm.Report.Overall, Seconds: sm.Seconds, of: name})
		}
	}
	return nil
}

// score adds a model's report over the replayed range: the masked metrics
// overall, per channel, per node and per chunk, by the completeness of
// the forecasts' inputs (the sensors whose windows each node's forecast
// reads in sets; nil: its own only), the paper's metrics, and, under an
// outage scenario, its scores in each pass, which predict forecasts from
// a set silenced for that pass.
func (d *Document) score(in *Input, name, source, file string, receptive float64, pred, truth []float64, sets [][]int, predict func(*snapshot.Set) ([]float64, []float64, error), start time.Time) (*Model, error) {
	set := in.Prepared.Set
	rep, err := evaluation.Build(pred, truth, in.part().Len(), set.Nodes, set.Channels, in.Chunks, in.MAPEFloor)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", name, err)
	}
	rep.ChannelNames, rep.ChannelUnits = in.Bundle.Meta.Channels, d.Units
	b, err := breakdown(set, in.part(), snapshot.Outage{}, pred, truth, sets, in.MAPEFloor)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", name, err)
	}
	rep.Completeness = &b
	pm, err := evaluation.Paper(pred, truth, d.lo, d.hi)
	if err != nil {
		return nil, fmt.Errorf("report: %s: %w", name, err)
	}
	m := Model{Name: name, Source: source, File: file, Receptive: receptive, Report: rep, Paper: pm, pred: pred}
	if o := in.Outage; o.Enabled() && predict != nil {
		for _, l := range o.Lengths {
			in.progress(fmt.Sprintf("outages of %s", name), slices.Index(o.Lengths, l), len(o.Lengths))
			sil := set.Silenced(o.For(l))
			spred, struth, err := predict(sil)
			if err != nil {
				return nil, fmt.Errorf("report: %s, outage of %d readings: %w", name, l, err)
			}
			b, err := breakdown(sil, in.part(), o, spred, struth, sets, in.MAPEFloor)
			if err != nil {
				return nil, fmt.Errorf("report: %s, outage of %d readings: %w", name, l, err)
			}
			m.Outages = append(m.Outages, OutagePass{Length: l, Overall: metricsFloor(spred, struth, in.MAPEFloor), Breakdown: b})
		}
		in.progress(fmt.Sprintf("outages of %s", name), len(o.Lengths), len(o.Lengths))
	}
	m.Seconds = time.Since(start).Seconds()
	d.Models = append(d.Models, m)
	return &d.Models[len(d.Models)-1], nil
}

// breakdown returns the completeness breakdown of forecasts pred of part
// p from the inputs of set, the sensors silenced by o marked where set
// silences any.
func breakdown(set *snapshot.Set, p snapshot.Part, o snapshot.Outage, pred, truth []float64, sets [][]int, floor float64) (evaluation.Breakdown, error) {
	g, err := set.Completeness(p, o, sets)
	if err != nil {
		return evaluation.Breakdown{}, err
	}
	return evaluation.Stratify(pred, truth, set.Nodes, set.Channels, g, floor)
}

// outageTargets returns the teacher's embeddings of part p from the
// inputs of set, with p's truths: what a distilled student forecasts from.
func outageTargets(ctx context.Context, m *teacher.Model, set *snapshot.Set, p *snapshot.Prepared, part snapshot.Part) (*sdgnn.Targets, error) {
	t, err := sdgnn.ComputeTargets(ctx, m, set, part, p.Adj)
	if err != nil {
		return nil, err
	}
	return t.Only(part)
}

// metricsFloor scores pred against truth with a MAPE floor.
func metricsFloor(pred, truth []float64, floor float64) evaluation.Metrics {
	acc := evaluation.Accumulator{MAPEFloor: floor}
	for i, p := range pred {
		acc.Add(p, truth[i])
	}
	return acc.Metrics()
}

// budgetConfig returns base with final budget bud: a start budget below
// bud is raised to it, and the epochs are stretched (never cut) so that
// the run ends with as many epochs at the final budget as base does.
func budgetConfig(base sdgnn.Config, bud int) sdgnn.Config {
	c := base
	tail := max(c.ThetaEvery, c.Epochs-(c.BudgetStart-c.BudgetEnd)*c.BudgetEvery)
	c.BudgetEnd, c.BudgetStart = bud, max(c.BudgetStart, bud)
	c.Epochs = max(c.Epochs, (c.BudgetStart-bud)*c.BudgetEvery+tail)
	return c
}

// forecastZ decodes a distilled student's Ẑ on the targets t with its
// fine-tuned decoder, on the original scale, in t's layout.
func forecastZ(res *sdgnn.Result, norm snapshot.Normalizer, t *sdgnn.Targets) ([]float64, error) {
	zhat := res.Student.ZHatAll(t.H)
	out := res.Decoder.Forward(zhat)
	od := out.RawMatrix().Data
	if len(od) != len(t.Truth) {
		return nil, fmt.Errorf("decoded %d values for %d truths", len(od), len(t.Truth))
	}
	pred := make([]float64, len(od))
	for i, v := range od {
		pred[i] = norm.Denormalize(v, i%t.Channels)
	}
	return pred, nil
}

// truthOf returns the raw targets of part p, row-major (snapshot, node,
// channel), NaN for the sensors p does not score.
func truthOf(set *snapshot.Set, p snapshot.Part) []float64 {
	n, c := set.Nodes, set.Channels
	out := make([]float64, 0, p.Len()*n*c)
	for _, s := range p.Snapshots() {
		for z := 0; z < n; z++ {
			for ch := 0; ch < c; ch++ {
				out = append(out, set.RawAt(s+set.Window, z, ch))
			}
		}
	}
	p.Hide(out, n, c)
	return out
}

// channelNames returns names, or "c0", "c1", ... when they are missing.
func channelNames(names []string, c int) []string {
	if len(names) == c {
		return names
	}
	out := make([]string, c)
	for i := range out {
		out[i] = fmt.Sprintf("c%d", i)
	}
	return out
}

// gcnLayers returns the number of GCN layers of a teacher (0 for the GRU).
func gcnLayers(m *teacher.Model) int { return m.Config.GCNLayers() }

// receptiveSets returns the sensors whose windows a teacher's forecast of
// each node reads: its k-hop neighbourhood for a k-layer GRU-GCN, nil for
// the GRU (its own only).
func receptiveSets(m *teacher.Model, nb [][]int) ([][]int, error) {
	k := gcnLayers(m)
	if k == 0 {
		return nil, nil
	}
	return sdgnn.Candidates(nb, sdgnn.CandidateConfig{K1: k})
}

// receptiveOf returns the mean number of nodes a teacher's forecast of one
// node reads: the node itself for the GRU, its k-hop neighbourhood for a
// k-layer GRU-GCN.
func receptiveOf(m *teacher.Model, nb [][]int) (float64, error) {
	k := gcnLayers(m)
	if k == 0 {
		return 1, nil
	}
	hood, err := sdgnn.Candidates(nb, sdgnn.CandidateConfig{K1: k})
	if err != nil {
		return 0, err
	}
	var s int
	for _, h := range hood {
		s += len(h)
	}
	return float64(s) / float64(len(hood)), nil
}

// reductions returns the per-node MAE reductions of SDGNN and GRU-GCN
// relative to the GRU, when all three were scored; nodes without a finite
// GRU MAE above zero are left out.
func reductions(d *Document) []NodeReduction {
	g, s, t := d.Model(GRU), d.Model(SDGNN), d.Model(GRUGCN)
	if g == nil || s == nil || t == nil {
		return nil
	}
	var out []NodeReduction
	for z, m := range g.Report.PerNode {
		base := m.MAE
		if !(base > 0) || math.IsInf(base, 0) {
			continue
		}
		out = append(out, NodeReduction{Node: z, GRUMAE: base,
			SDGNN:  100 * (base - s.Report.PerNode[z].MAE) / base,
			GRUGCN: 100 * (base - t.Report.PerNode[z].MAE) / base})
	}
	return out
}

// PickSensor returns the sensor whose receptive field shows the most: the
// largest receptive set, then the most selected nodes outside its 1-hop
// neighbourhood, then the smallest id.
func PickSensor(theta *sdgnn.Theta, nb [][]int) int {
	best, bestSize, bestFar := 0, -1, -1
	for z, ks := range theta.Nodes {
		far := 0
		for _, k := range ks {
			if k != z && !slices.Contains(nb[z], k) {
				far++
			}
		}
		if len(ks) > bestSize || (len(ks) == bestSize && far > bestFar) {
			best, bestSize, bestFar = z, len(ks), far
		}
	}
	return best
}

// FieldOf returns sensor's receptive field under theta with its
// neighbourhood of the given depth on the graph nb.
func FieldOf(nb [][]int, theta *sdgnn.Theta, sensor, hops int) *Field {
	dist := hopDistances(nb, sensor)
	f := &Field{Sensor: sensor, Hops: hops, Hop: map[int]int{}}
	for v, h := range dist {
		if h >= 0 && h <= hops {
			f.Hop[v] = h
		}
	}
	ks, ws := theta.Nodes[sensor], theta.Weights[sensor]
	for i, k := range ks {
		f.Selected = append(f.Selected, Selected{Node: k, Theta: ws[i], Hop: dist[k]})
		if _, ok := f.Hop[k]; !ok {
			f.Hop[k] = dist[k]
		}
	}
	for v := range f.Hop {
		for _, u := range nb[v] {
			if _, ok := f.Hop[u]; ok && v < u {
				f.Edges = append(f.Edges, [2]int{v, u})
			}
		}
	}
	slices.SortFunc(f.Edges, func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	f.Edges = slices.Compact(f.Edges)
	return f
}

// hopDistances returns the hop distance of every node from src by breadth-
// first search (−1 where not connected). nb must be symmetric for the
// result to be a distance on the road graph; directed lists give the
// distance along them.
func hopDistances(nb [][]int, src int) []int {
	dist := make([]int, len(nb))
	for i := range dist {
		dist[i] = -1
	}
	dist[src] = 0
	queue := []int{src}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, u := range nb[v] {
			if u >= 0 && u < len(nb) && dist[u] < 0 {
				dist[u] = dist[v] + 1
				queue = append(queue, u)
			}
		}
	}
	return dist
}

// DistributionOf returns theta's receptive-set sizes and row-normalised
// weights, labelled model.
func DistributionOf(model string, theta *sdgnn.Theta) Distribution {
	d := Distribution{Model: model}
	for z, ks := range theta.Nodes {
		d.Sizes = append(d.Sizes, float64(len(ks)))
		var s float64
		for _, w := range theta.Weights[z] {
			s += w
		}
		if !(s > 0) {
			continue
		}
		for _, w := range theta.Weights[z] {
			d.Weights = append(d.Weights, w/s)
		}
	}
	return d
}
