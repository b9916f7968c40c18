package baseline

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/internal/teachertest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

func quickConfig() Config {
	c := DefaultConfig()
	c.Epochs, c.FineTuneEpochs, c.LR = 6, 3, 5e-3
	c.Walk.Epochs = 2
	return c
}

// fixture is a briefly trained teacher with its training and validation
// targets, built once and shared by the tests on real data.
type fixture struct {
	m          *teacher.Model
	set        *snapshot.Set
	ds         *pems.Dataset
	train, val *sdgnn.Targets
}

var (
	fixtureOnce sync.Once
	fixtureVal  *fixture
	fixtureErr  error
)

// realData returns the shared fixture, skipping (outside CI) when the data
// are absent.
func realData(t *testing.T) *fixture {
	t.Helper()
	datatest.SZTaxi(t) // skip here, not inside the Once
	fixtureOnce.Do(func() {
		m, set, split, ds := teachertest.Quick(t)
		adj := ds.Graph.NormalizedAdjacency()
		f := &fixture{m: m, set: set, ds: ds}
		if f.train, fixtureErr = sdgnn.ComputeTargets(context.Background(), m, set, split.Train, adj); fixtureErr != nil {
			return
		}
		if f.val, fixtureErr = sdgnn.ComputeTargets(context.Background(), m, set, split.Val, adj); fixtureErr != nil {
			return
		}
		fixtureVal = f
	})
	if fixtureErr != nil || fixtureVal == nil {
		t.Fatalf("real-data fixture: %v", fixtureErr)
	}
	return fixtureVal
}

// TestBaselinesOnRealData trains every baseline for a few epochs against a
// briefly trained teacher on SZ-taxi and checks the receptive fields, that
// the Z-matching loss fell, that the validation metrics are finite and that
// Score agrees with the selection record.
func TestBaselinesOnRealData(t *testing.T) {
	f := realData(t)
	m, set, ds, train, val := f.m, f.set, f.ds, f.train, f.val
	ctx := context.Background()
	nb := ds.Graph.Neighbors()
	cfg := quickConfig()

	// An SDGNN Θ for the ablation, from a short distillation.
	sc := sdgnn.DefaultConfig()
	sc.Epochs, sc.ThetaEvery, sc.BudgetStart, sc.BudgetEnd, sc.BudgetEvery = 4, 2, 7, 6, 2
	sc.FineTuneEpochs, sc.LR = 0, 5e-3
	cands, err := sdgnn.Candidates(nb, sc.Candidates)
	if err != nil {
		t.Fatal(err)
	}
	dist, err := sdgnn.Distill(ctx, m, set.Norm, cands, train, val, sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	decBefore := mat2slice(m.Dec.Params())

	tests := []struct {
		name      string
		train     func() (Model, error)
		maxRecept float64
	}{
		{NamePPRGo, func() (Model, error) { return TrainPPRGo(ctx, m.Dec, set.Norm, nb, train, val, cfg) }, 6},
		{NameSDGNNEqual, func() (Model, error) {
			return TrainSDGNNEqual(ctx, m.Dec, set.Norm, dist.Student.Theta, train, val, cfg)
		}, 6},
		{NameGLNN, func() (Model, error) { return TrainGLNN(ctx, m.Dec, set.Norm, train, val, cfg) }, 1},
		{NameNOSMOG, func() (Model, error) { return TrainNOSMOG(ctx, m.Dec, set.Norm, nb, train, val, cfg) }, 1},
	}
	for _, tc := range tests {
		start := time.Now()
		model, err := tc.train()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if model.Name() != tc.name {
			t.Errorf("name %q, want %q", model.Name(), tc.name)
		}
		r := model.MeanReceptive()
		if r > tc.maxRecept || r < 1 {
			t.Errorf("%s: mean receptive field %g, want in [1, %g]", tc.name, r, tc.maxRecept)
		}
		for z := 0; z < set.Nodes; z++ {
			if k := len(model.Receptive(z)); k < 1 || float64(k) > tc.maxRecept {
				t.Fatalf("%s: node %d reads %d nodes", tc.name, z, k)
			}
		}
		if tc.maxRecept == 1 && model.Receptive(3)[0] != 3 {
			t.Errorf("%s: node 3 reads %v", tc.name, model.Receptive(3))
		}
		h := model.History()
		if len(h) != cfg.Epochs+1 {
			t.Fatalf("%s: %d epochs recorded, want %d", tc.name, len(h), cfg.Epochs+1)
		}
		first, last := h[0], h[len(h)-1]
		if !(last.TrainLoss < first.TrainLoss) || !(last.NR < first.NR) {
			t.Errorf("%s: Z-matching loss did not fall: train %.4g → %.4g, validation NR %.4g → %.4g",
				tc.name, first.TrainLoss, last.TrainLoss, first.NR, last.NR)
		}
		if tc.name == NameNOSMOG && !(last.SimLoss > 0) {
			t.Errorf("%s: similarity loss %g", tc.name, last.SimLoss)
		}
		met, err := Score(model, val)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []float64{met.MAE, met.RMSE, met.MAPE} {
			if math.IsNaN(v) || math.IsInf(v, 0) || met.Count == 0 {
				t.Fatalf("%s: validation metrics %+v", tc.name, met)
			}
		}
		// Fine-tuning keeps the best decoder, the teacher's included.
		var bestVal float64
		for _, e := range h {
			if e.Best {
				bestVal = e.Val.MAPE
			}
		}
		if met.MAPE > bestVal+1e-9 {
			t.Errorf("%s: fine-tuned MAPE %.4f above the student's best with the teacher's decoder %.4f", tc.name, met.MAPE, bestVal)
		}
		t.Logf("%-11s receptive %.2f  train MSE %.4f → %.4f  NR %.4f → %.4f  val MAE %.3f RMSE %.3f MAPE %.2f%%  (%.1fs)",
			tc.name, r, first.TrainLoss, last.TrainLoss, first.NR, last.NR, met.MAE, met.RMSE, met.MAPE, time.Since(start).Seconds())
	}
	if got := mat2slice(m.Dec.Params()); !equalSlices(got, decBefore) {
		t.Error("the teacher's decoder was modified")
	}
	var teacherMet = decodeMetrics(m.Dec, set.Norm, val.Z, val, 0)
	t.Logf("teacher     val MAE %.3f MAPE %.2f%%", teacherMet.MAE, teacherMet.MAPE)

	// Forecasting refuses targets of another graph.
	glnn, err := TrainGLNN(ctx, m.Dec, set.Norm, train, val, Config{Epochs: 0, Batch: 32, LR: 1e-3, Hidden: 4, Select: "mae", TopK: 1, Alpha: 1, SimNodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	bad := *val
	bad.Nodes++
	if _, err := glnn.Forecast(&bad); err == nil {
		t.Error("targets of another graph accepted")
	}
}

func mat2slice(ps []*nn.Param) []float64 {
	var out []float64
	for _, p := range ps {
		out = append(out, p.W.RawMatrix().Data...)
	}
	return out
}

func equalSlices(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFromSDGNNSeedsEverything checks that a baseline configuration taken
// from an SDGNN run of seed s draws everything random from s, NOSMOG's
// DeepWalk included: with the walks left at seed 1, every seed of a
// comparison read the same positional encodings, and the spread of NOSMOG
// over seeds left out theirs.
func TestFromSDGNNSeedsEverything(t *testing.T) {
	for _, seed := range []uint64{1, 2, 7} {
		c := sdgnn.DefaultConfig()
		c.Seed = seed
		b := FromSDGNN(c)
		if b.Seed != seed || b.Walk.Seed != seed {
			t.Errorf("FromSDGNN of seed %d: seed %d, walk seed %d; want both %d", seed, b.Seed, b.Walk.Seed, seed)
		}
	}
}

// TestConfigValidate checks that Validate refuses what would train nothing
// silently: an infinite weight decay or fine-tuning step turns every
// trained epoch to NaN, so that the untrained epoch 0 (or the teacher's
// decoder) is kept without an error, and a NaN or infinite MAPE floor
// leaves every validation MAPE empty.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	inf, nan := math.Inf(1), math.NaN()
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{"epochs -1", func(c *Config) { c.Epochs = -1 }},
		{"batch 0", func(c *Config) { c.Batch = 0 }},
		{"lr 0", func(c *Config) { c.LR = 0 }},
		{"lr inf", func(c *Config) { c.LR = inf }},
		{"weight decay -1", func(c *Config) { c.WeightDecay = -1 }},
		{"weight decay NaN", func(c *Config) { c.WeightDecay = nan }},
		{"weight decay inf", func(c *Config) { c.WeightDecay = inf }},
		{"fine-tune lr 0", func(c *Config) { c.FineTuneLR = 0 }},
		{"fine-tune lr inf", func(c *Config) { c.FineTuneLR = inf }},
		{"MAPE floor -1", func(c *Config) { c.MAPEFloor = -1 }},
		{"MAPE floor NaN", func(c *Config) { c.MAPEFloor = nan }},
		{"MAPE floor inf", func(c *Config) { c.MAPEFloor = inf }},
		{"select rmse", func(c *Config) { c.Select = "rmse" }},
		{"top-k 0", func(c *Config) { c.TopK = 0 }},
		{"alpha 0", func(c *Config) { c.Alpha = 0 }},
		{"sim weight inf", func(c *Config) { c.SimWeight = inf }},
		{"sim nodes 1", func(c *Config) { c.SimNodes = 1 }},
	}
	for _, tc := range tests {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	c := DefaultConfig()
	c.FineTuneEpochs, c.FineTuneLR = 0, 0 // no fine-tuning: its step is unused
	if err := c.Validate(); err != nil {
		t.Errorf("no fine-tuning, step 0: %v", err)
	}
}
