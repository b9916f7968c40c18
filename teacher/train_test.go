package teacher

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// realData loads SZ-taxi, the real stand-in dataset, cut to its first steps
// so that tests stay fast (datatest.Chrono).
func realData(t *testing.T, steps int) (*snapshot.Set, snapshot.Split, *pems.CSR) {
	t.Helper()
	ds := datatest.SZTaxi(t)
	split, set := datatest.Chrono(t, ds, steps, 12)
	return set, split, ds.Graph.NormalizedAdjacency()
}

// TestShortTrainingOnRealDataLowersValidationError trains GRU-GCN for a few
// epochs on real SZ-taxi data and checks that validation MAE falls well below
// that of the untrained model.
func TestShortTrainingOnRealDataLowersValidationError(t *testing.T) {
	set, split, adj := realData(t, 700)
	m, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 16, NoiseStd: 0.01, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	before, err := Evaluate(context.Background(), m, set, split.Val, adj, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultTrain()
	cfg.MaxEpochs = 4
	cfg.LR = 5e-3
	tr, err := NewTrainer(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	after := tr.BestValMAE
	t.Logf("validation MAE: untrained %.3f, after %d epochs %.3f", before.Overall.MAE, tr.Epoch, after)
	if !(after < 0.8*before.Overall.MAE) {
		t.Fatalf("validation MAE %.3f did not fall below 80%% of the untrained %.3f", after, before.Overall.MAE)
	}
	if tr.History[0].TrainLoss <= tr.History[len(tr.History)-1].TrainLoss {
		t.Errorf("training loss did not fall: %v", tr.History)
	}
	// The kept model is the best epoch's, and evaluates to the recorded MAE.
	rep, err := Evaluate(context.Background(), tr.Best, set, split.Val, adj, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.Overall.MAE-tr.BestValMAE) > 1e-9 {
		t.Errorf("best model's validation MAE %.12f, recorded %.12f", rep.Overall.MAE, tr.BestValMAE)
	}
}

func TestEarlyStopping(t *testing.T) {
	tr := &Trainer{Config: TrainConfig{MaxEpochs: 100, Patience: 3}}
	for _, tc := range []struct {
		epoch, best int
		stop        bool
	}{
		{0, 0, false}, {5, 5, false}, {7, 5, false}, {8, 5, true}, {100, 99, true},
	} {
		tr.Epoch, tr.BestEpoch = tc.epoch, tc.best
		if got := tr.Stopped(); got != tc.stop {
			t.Errorf("epoch %d best %d: stopped %v, want %v", tc.epoch, tc.best, got, tc.stop)
		}
	}
}

// resumeFixture is what the resume tests share: SZ-taxi's first 300
// steps, a maker of trainers of one small configuration (3 epochs of 3
// batches), and the run of one of them uninterrupted.
func resumeFixture(t *testing.T) (*snapshot.Set, snapshot.Split, *pems.CSR, func() *Trainer, *Trainer) {
	t.Helper()
	set, split, adj := realData(t, 300)
	cfg := Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 8, NoiseStd: 0.05, Seed: 4}
	tc := DefaultTrain()
	tc.MaxEpochs = 3
	tc.MaxBatches = 3
	newTrainer := func() *Trainer {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTrainer(m, tc)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	full := newTrainer()
	if err := full.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	return set, split, adj, newTrainer, full
}

// TestResumeMatchesUninterruptedRun interrupts training, saves and reloads
// its state, resumes, and checks that the result equals an uninterrupted run
// bit for bit.
func TestResumeMatchesUninterruptedRun(t *testing.T) {
	set, split, adj, newTrainer, full := resumeFixture(t)

	part := newTrainer()
	ctx, cancel := context.WithCancel(context.Background())
	err := part.Run(ctx, set, split, adj, func(e Epoch) {
		if e.Epoch == 1 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v, want context.Canceled", err)
	}
	path := filepath.Join(t.TempDir(), "run.state")
	meta := Meta{Norm: set.Norm, Dataset: "sz-taxi", Nodes: set.Nodes, Split: split}
	if err := part.SaveState(path, meta); err != nil {
		t.Fatal(err)
	}
	resumed, gotMeta, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if gotMeta.Dataset != "sz-taxi" || !gotMeta.Split.Equal(split) || resumed.Epoch != 1 {
		t.Fatalf("state meta %+v epoch %d", gotMeta, resumed.Epoch)
	}
	if err := resumed.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range full.Model.Params() {
		q := resumed.Model.Params()[i]
		if !equalData(p, q) {
			t.Fatalf("parameter %s differs after resume", p.Name)
		}
	}
	if full.BestEpoch != resumed.BestEpoch || full.BestValMAE != resumed.BestValMAE {
		t.Fatalf("best epoch/MAE %d/%g vs resumed %d/%g", full.BestEpoch, full.BestValMAE, resumed.BestEpoch, resumed.BestValMAE)
	}
}

func equalData(a, b *nn.Param) bool {
	x, y := a.W.RawMatrix().Data, b.W.RawMatrix().Data
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}

func TestModelFileRoundTripAndBadFiles(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: 3, Hidden: 4, NoiseStd: 0.01, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{1, 2, 3}, Std: []float64{4, 5, 6}}, Dataset: "pems04", Nodes: 307, Channels: []string{"flow", "occupancy", "speed"}}
	path := filepath.Join(dir, "m.model")
	if err := SaveModel(path, m, meta); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Dataset != "pems04" || got.Meta.Config != m.Config || got.Meta.Norm.Std[2] != 6 {
		t.Fatalf("meta round trip: %+v", got.Meta)
	}
	for i, p := range m.Params() {
		if !equalData(p, got.Model.Params()[i]) {
			t.Fatalf("parameter %s differs after round trip", p.Name)
		}
	}

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(dir, "trunc.model")
	if err := os.WriteFile(trunc, raw[:len(raw)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModel(trunc); err == nil || !(errors.Is(err, checkpoint.ErrTruncated) || errors.Is(err, checkpoint.ErrChecksum)) {
		t.Errorf("truncated file: %v", err)
	}
	foreign := filepath.Join(dir, "foreign.model")
	if err := os.WriteFile(foreign, []byte("from,to,cost\n0,1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModel(foreign); !errors.Is(err, checkpoint.ErrNotModelFile) {
		t.Errorf("foreign file: %v", err)
	}
	// A valid checkpoint of another kind is refused by name.
	other := filepath.Join(dir, "other.model")
	if err := checkpoint.WriteFile(other, &checkpoint.File{Kind: "sdgnn-bundle", Meta: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadModel(other); err == nil {
		t.Error("a file of another kind loaded as a teacher")
	}
}

// TestPredictPartMatchesPredict checks that forecasting a node part on the
// subgraph its forecasts need gives the whole graph's forecasts, bit for
// bit, at the part's nodes and NaN elsewhere, for GRU-GCNs of depth 1 and 2
// and the GRU, on real SZ-taxi readings dealt by nodes.
func TestPredictPartMatchesPredict(t *testing.T) {
	set, chrono, adj := realData(t, 200)
	deg := make([]int, adj.N)
	for i := range deg {
		deg[i] = adj.RowPtr[i+1] - adj.RowPtr[i]
	}
	split, err := snapshot.NodeSplit(set.Len(), deg, [3]float64{7, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if reach, _ := adj.Reach(split.Val.Nodes, 2); len(reach) >= adj.N {
		t.Fatalf("the validation nodes reach the whole graph in 2 hops; the test needs a part")
	}
	for _, tc := range []struct {
		kind   string
		layers int
	}{{KindGRUGCN, 1}, {KindGRUGCN, 2}, {KindGRU, 0}} {
		m, err := New(Config{Kind: tc.kind, Layers: tc.layers, Window: 12, Channels: set.Channels, Hidden: 8, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []snapshot.Part{split.Val, split.Test, chrono.Val} {
			p.Range = snapshot.Range{Start: 30, End: 100} // a stretch, in batches of 32 with a short last one
			want, wantTruth, err := Predict(context.Background(), m, set, p, adj, 32)
			if err != nil {
				t.Fatal(err)
			}
			got, truth, err := PredictPart(context.Background(), m, set, p, adj, 32)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || !slices.EqualFunc(truth, wantTruth, sameFloat) {
				t.Fatalf("%s layers %d: %d forecasts (want %d) or truths differ", tc.kind, tc.layers, len(got), len(want))
			}
			bad := 0
			for i, v := range got {
				if math.IsNaN(wantTruth[i]) {
					if !math.IsNaN(v) {
						bad++
					}
				} else if v != want[i] {
					bad++
				}
			}
			if bad > 0 {
				t.Errorf("%s layers %d, part of %d nodes: %d of %d forecasts differ from the whole graph's", tc.kind, tc.layers, len(p.Nodes), bad, len(got))
			}
		}
	}
	m, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	bad := split.Val
	bad.Nodes = []int{0, adj.N}
	if _, _, err := PredictPart(context.Background(), m, set, bad, adj, 32); err == nil {
		t.Error("a part with a node outside the graph accepted")
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// stopAfter is a context that is cancelled once its Err has been asked n
// times: a Ctrl-C that arrives in the middle of a long pass.
type stopAfter struct {
	context.Context
	n int
}

func (c *stopAfter) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestPredictStopsWhenCancelled checks that the forecasting passes return
// the context's error between batches instead of forecasting every snapshot
// of the part first.
func TestPredictStopsWhenCancelled(t *testing.T) {
	set, split, adj := realData(t, 200)
	m, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 8, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p := split.Train // several batches of 8
	for name, predict := range map[string]func(context.Context) error{
		"Predict": func(ctx context.Context) error {
			_, _, err := Predict(ctx, m, set, p, adj, 8)
			return err
		},
		"PredictPart": func(ctx context.Context) error {
			_, _, err := PredictPart(ctx, m, set, p, adj, 8)
			return err
		},
		"Evaluate": func(ctx context.Context) error {
			_, err := Evaluate(ctx, m, set, p, adj, 1, 8)
			return err
		},
	} {
		if err := predict(&stopAfter{Context: context.Background(), n: 2}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled after two batches: %v, want %v", name, err, context.Canceled)
		}
		if err := predict(context.Background()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSelectionScore(t *testing.T) {
	norm := snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 0, 0}, Std: []float64{400, 1, 80}}
	val := evaluation.Report{Overall: evaluation.Metrics{MAE: 7}, PerChannel: []evaluation.Metrics{{MAE: 20}, {MAE: 0.05}, {MAE: 4}}}
	if got := selectionScore("", val, norm); got != 7 {
		t.Errorf("default selection: %v, want the overall MAE 7", got)
	}
	if got, want := selectionScore(SelectScaled, val, norm), (20.0/400+0.05/1+4.0/80)/3; math.Abs(got-want) > 1e-15 {
		t.Errorf("scaled selection: %v, want %v", got, want)
	}
}

// TestScaledSelectionOneChannel trains on one-channel SZ-taxi with each
// selection: on one channel the scaled score is the MAE over a constant, so
// both must keep the same epoch and the same parameters; and a state saved
// and loaded keeps the scaled score, so that a resumed run compares the
// next epochs with it.
func TestScaledSelectionOneChannel(t *testing.T) {
	set, split, adj := realData(t, 300)
	run := func(sel string) *Trainer {
		m, err := New(Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 8, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultTrain()
		cfg.MaxEpochs, cfg.LR, cfg.Select = 4, 5e-3, sel
		tr, err := NewTrainer(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background(), set, split, adj, nil); err != nil {
			t.Fatal(err)
		}
		return tr
	}
	mae, scaled := run(""), run(SelectScaled)
	if mae.BestEpoch != scaled.BestEpoch || mae.BestValMAE != scaled.BestValMAE {
		t.Fatalf("best epoch %d (MAE %v) by MAE, %d (%v) by scaled MAE", mae.BestEpoch, mae.BestValMAE, scaled.BestEpoch, scaled.BestValMAE)
	}
	if want := scaled.BestValMAE / set.Norm.Std[0]; scaled.BestValScore != want || mae.BestValScore != mae.BestValMAE {
		t.Errorf("scores %v (want %v) and %v (want %v)", scaled.BestValScore, want, mae.BestValScore, mae.BestValMAE)
	}
	path := filepath.Join(t.TempDir(), "s.state")
	if err := scaled.SaveState(path, Meta{Norm: set.Norm, Nodes: set.Nodes}); err != nil {
		t.Fatal(err)
	}
	back, _, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.BestValScore != scaled.BestValScore || back.Config.Select != SelectScaled {
		t.Errorf("loaded state: score %v, selection %q; saved %v", back.BestValScore, back.Config.Select, scaled.BestValScore)
	}
}

// TestResumeAfterMidEpochInterrupt interrupts training in the middle of an
// epoch (a Ctrl-C between two batches, as `teacher` gets it), saves the
// state as `teacher` then does, resumes, and checks that the result equals
// an uninterrupted run bit for bit.
func TestResumeAfterMidEpochInterrupt(t *testing.T) {
	set, split, adj, newTrainer, full := resumeFixture(t)
	for _, after := range []int{1, full.Config.MaxBatches + 2} { // in epoch 1, in epoch 2
		part := newTrainer()
		err := part.Run(&stopAfter{Context: context.Background(), n: after}, set, split, adj, nil)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted run returned %v, want context.Canceled", err)
		}
		path := filepath.Join(t.TempDir(), "run.state")
		if err := part.SaveState(path, Meta{Norm: set.Norm, Dataset: "sz-taxi", Nodes: set.Nodes, Split: split}); err != nil {
			t.Fatal(err)
		}
		resumed, _, err := LoadState(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := resumed.Run(context.Background(), set, split, adj, nil); err != nil {
			t.Fatal(err)
		}
		for i, p := range full.Model.Params() {
			if !equalData(p, resumed.Model.Params()[i]) {
				t.Fatalf("interrupted after %d batches: parameter %s differs after resume", after, p.Name)
			}
		}
		for i, p := range full.Best.Params() {
			if !equalData(p, resumed.Best.Params()[i]) {
				t.Fatalf("interrupted after %d batches: best parameter %s differs after resume", after, p.Name)
			}
		}
		if full.BestEpoch != resumed.BestEpoch || full.BestValMAE != resumed.BestValMAE || full.Opt.T != resumed.Opt.T {
			t.Fatalf("interrupted after %d batches: best epoch/MAE/adam t %d/%g/%d vs resumed %d/%g/%d", after,
				full.BestEpoch, full.BestValMAE, full.Opt.T, resumed.BestEpoch, resumed.BestValMAE, resumed.Opt.T)
		}
	}
}

// TestEpochMAPEFloor checks that the trainer's MAPEFloor leaves low truths
// out of the validation MAPE of the epochs' records, and changes nothing
// else: SZ-taxi's speeds below 1 (many are 0.0x) made it hundreds of per
// cent, beside a final report floored as asked.
func TestEpochMAPEFloor(t *testing.T) {
	set, split, adj, newTrainer, full := resumeFixture(t)
	floored := newTrainer()
	floored.MAPEFloor = 1
	if err := floored.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	if len(floored.History) != len(full.History) {
		t.Fatalf("%d epochs, want %d", len(floored.History), len(full.History))
	}
	for i, e := range floored.History {
		f := full.History[i]
		if e.TrainLoss != f.TrainLoss || e.Val.MAE != f.Val.MAE || e.Val.RMSE != f.Val.RMSE || e.Best != f.Best {
			t.Fatalf("epoch %d: loss %v, val MAE %v, RMSE %v, best %v; without the floor %v, %v, %v, %v",
				e.Epoch, e.TrainLoss, e.Val.MAE, e.Val.RMSE, e.Best, f.TrainLoss, f.Val.MAE, f.Val.RMSE, f.Best)
		}
		if !(e.Val.MAPE < f.Val.MAPE) || e.Val.MAPE > 100 {
			t.Errorf("epoch %d: validation MAPE %.2f %% with floor 1, %.2f %% without; want it lower, and below 100 %%", e.Epoch, e.Val.MAPE, f.Val.MAPE)
		}
	}
	for i, p := range floored.Best.Params() {
		if !mat.Equal(p.W, full.Best.Params()[i].W) {
			t.Errorf("the floor changed the best parameters (%s)", p.Name)
		}
	}
}

// TestRunRefusesUnscoredValidation trains on a series whose readings are
// all missing (0) from the first validation target on: no epoch has a
// validation score, whose zero errors would make the first epoch the best
// for good, so Run must refuse, naming why.
func TestRunRefusesUnscoredValidation(t *testing.T) {
	set, split, adj := realData(t, 300)
	data := slices.Clone(set.Raw())
	per := set.Nodes * set.Channels
	first := split.Val.Snapshots()[0] + set.Window // the step of the first validation target
	clear(data[first*per:])
	blank, err := snapshot.NewSet(data, len(data)/per, set.Nodes, set.Channels, set.Window, set.Norm)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Kind: KindGRUGCN, Window: set.Window, Channels: set.Channels, Hidden: 8, NoiseStd: 0.05, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	tc := DefaultTrain()
	tc.MaxEpochs, tc.MaxBatches = 2, 1
	tr, err := NewTrainer(m, tc)
	if err != nil {
		t.Fatal(err)
	}
	err = tr.Run(context.Background(), blank, split, adj, nil)
	if err == nil || !strings.Contains(err.Error(), "no reading of the validation part to score") {
		t.Fatalf("Run on a validation part without readings: %v (best epoch %d), want an error naming it", err, tr.BestEpoch)
	}
}

// TestOutageTrainingResumes trains with simulated outages and missing
// marks: an interrupted run resumes to the uninterrupted one bit for bit
// (each epoch's outages are drawn from its number), and the outages change
// what is learnt.
func TestOutageTrainingResumes(t *testing.T) {
	set, split, adj := realData(t, 300)
	set = set.Masked(true)
	cfg := Config{Kind: KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 8, NoiseStd: 0.05, Seed: 4, MaskInputs: set.Channels, Gate: true}
	newTrainer := func(outage string) *Trainer {
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tc := DefaultTrain()
		tc.MaxEpochs, tc.MaxBatches, tc.Outage = 3, 3, outage
		tr, err := NewTrainer(m, tc)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	const outage = "share=0.3,len=1-12,seed=2"
	full := newTrainer(outage)
	if err := full.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	part := newTrainer(outage)
	ctx, cancel := context.WithCancel(context.Background())
	if err := part.Run(ctx, set, split, adj, func(e Epoch) {
		if e.Epoch == 1 {
			cancel()
		}
	}); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run returned %v", err)
	}
	path := filepath.Join(t.TempDir(), "run.state")
	if err := part.SaveState(path, Meta{Norm: set.Norm, Dataset: "sz-taxi", Nodes: set.Nodes, Split: split}); err != nil {
		t.Fatal(err)
	}
	resumed, _, err := LoadState(path)
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Config.Outage != outage {
		t.Fatalf("resumed with outages %q", resumed.Config.Outage)
	}
	if err := resumed.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	clean := newTrainer("")
	if err := clean.Run(context.Background(), set, split, adj, nil); err != nil {
		t.Fatal(err)
	}
	same := true
	for i, p := range full.Model.Params() {
		if !equalData(p, resumed.Model.Params()[i]) {
			t.Fatalf("parameter %s differs after resume", p.Name)
		}
		same = same && equalData(p, clean.Model.Params()[i])
	}
	if same {
		t.Error("training with outages learnt what training without them did")
	}
	bad := DefaultTrain()
	bad.Outage = "share=2,len=1"
	if err := bad.Validate(); err == nil {
		t.Error("a training outage of share 2 accepted")
	}
}
