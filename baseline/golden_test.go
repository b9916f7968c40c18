package baseline

import (
	"context"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/internal/distilltest"
	"github.com/pemsforecast/sdgnn/internal/golden"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestGoldenBits holds the baselines' training to the bits it has on
// amd64, so that a comparison run on another machine (arm64, checked under
// qemu in CI) gives the same table: NOSMOG's positional encodings
// (DeepWalk: portable's Exp and Pow) and similarity loss with its
// gradient, and a few epochs of GLNN, NOSMOG, PPRGo and SDGNN-Equal with
// their decoders' fine-tuning, on targets of a known sparse decomposition
// over a ring of 20 nodes with chords (internal/distilltest). Everything
// is drawn the same on every machine (golden.Uniform, seeded
// initialisations).
func TestGoldenBits(t *testing.T) {
	const n, d, C = 20, 16, 3
	got := map[string]string{}
	rng := rand.New(rand.NewPCG(2026, 20))
	neighbors := distilltest.Ring(n)

	walk := DefaultWalkConfig()
	walk.WalksPerNode, walk.WalkLength, walk.Epochs = 4, 10, 2
	pe, err := PositionalEncodings(neighbors, walk)
	if err != nil {
		t.Fatal(err)
	}
	got["PositionalEncodings"] = golden.Hash(pe.RawMatrix().Data)

	zhat, z, dz := mat.NewDense(30, d, nil), mat.NewDense(30, d, nil), mat.NewDense(30, d, nil)
	for i := range zhat.RawMatrix().Data {
		zhat.RawMatrix().Data[i], z.RawMatrix().Data[i] = golden.Uniform(rng), golden.Uniform(rng)
	}
	loss, err := SimilarityLoss(zhat, z, dz)
	if err != nil {
		t.Fatal(err)
	}
	got["SimilarityLoss"] = golden.Hash(append([]float64{loss}, dz.RawMatrix().Data...))

	phiTrue := nn.NewMLP("phi*", d, 16, d, rng)
	train, val := distilltest.Targets(rng, phiTrue, n, 48, C), distilltest.Targets(rng, phiTrue, n, 24, C)
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 4, Channels: C, Hidden: d, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{80, 80, 80}, Std: []float64{40, 40, 40}}
	cfg := DefaultConfig()
	cfg.Epochs, cfg.FineTuneEpochs, cfg.LR, cfg.Batch, cfg.TopK = 3, 2, 5e-3, 8, 3
	cfg.Walk, cfg.SimNodes = walk, 8
	theta, err := PPR(neighbors, cfg.Alpha, cfg.TopK)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	models := map[string]func() (Model, error){
		NameGLNN:   func() (Model, error) { return TrainGLNN(ctx, m.Dec, norm, train, val, cfg) },
		NameNOSMOG: func() (Model, error) { return TrainNOSMOG(ctx, m.Dec, norm, neighbors, train, val, cfg) },
		NamePPRGo:  func() (Model, error) { return TrainPPRGo(ctx, m.Dec, norm, neighbors, train, val, cfg) },
		// SDGNN-Equal on PPR's selection: any Θ serves to check the bits.
		NameSDGNNEqual: func() (Model, error) { return TrainSDGNNEqual(ctx, m.Dec, norm, theta, train, val, cfg) },
	}
	for name, fit := range models {
		b, err := fit()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		pred, err := b.Forecast(val)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got[name+"/forecast"] = golden.Hash(pred)
		var hist []float64
		for _, e := range b.History() {
			hist = append(hist, e.TrainLoss, e.SimLoss, e.NR, e.Val.MAE, e.Val.RMSE, e.Val.MAPE)
		}
		got[name+"/history"] = golden.Hash(hist)
	}
	golden.Check(t, got)
}
