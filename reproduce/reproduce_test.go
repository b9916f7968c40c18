package reproduce

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestQuickOnRealData runs the quick comparison on the real SZ-taxi data and
// checks the two claims the quick mode must keep: SDGNN forecasts better than
// GRU (test MAPE over truths ≥ 1 km/h, the floor SZ-taxi needs), and no node
// of any sparse model reads more nodes than the budget.
//
// The run is interrupted once SDGNN is scored, as Ctrl-C or a time limit
// would, and run again: the second run must take the teachers, SDGNN's
// scores and its bundle (for SDGNN-Equal's Θ) from the model directory,
// train nothing it had finished, and leave no scores behind.
func TestQuickOnRealData(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute on two cores")
	}
	if _, err := pems.ResolveDataDir(""); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs the shared data: %v", err)
		}
		t.Skipf("no data directory: %v", err)
	}
	cfg := Quick("sz-taxi")
	cfg.MAPEFloor = 1
	cfg.SDGNN.Select, cfg.Baseline.Select = "mae", "mae"
	cfg.ModelDir = t.TempDir()
	epochs := map[string]int{}
	rounds := 0
	var scored []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks := Hooks{
		Scored: func(seed uint64, model string, m evaluation.Metrics, rec, sec float64) {
			t.Logf("seed %d %-11s MAPE %.2f MAE %.4f receptive %.2f (%.0fs)", seed, model, m.MAPE, m.MAE, rec, sec)
			scored = append(scored, model)
			if model == SDGNN {
				cancel()
			}
		},
		Epoch: func(seed uint64, model string, e teacher.Epoch) {
			if e.Epoch != epochs[model]+1 {
				t.Errorf("%s: epoch %d after %d", model, e.Epoch, epochs[model])
			}
			epochs[model] = e.Epoch
		},
		Round: func(seed uint64, r sdgnn.Round) { rounds++ },
	}
	if _, err := RunAll(ctx, cfg, hooks); !errors.Is(err, context.Canceled) {
		t.Fatalf("run stopped after SDGNN: got %v, want context.Canceled", err)
	}
	// The hooks saw both teachers train and SDGNN's rounds.
	if epochs[GRUGCN] == 0 || epochs[GRU] == 0 || rounds == 0 || len(epochs) != 2 {
		t.Errorf("hooks saw teacher epochs %v and %d SDGNN rounds", epochs, rounds)
	}
	if want := []string{GRUGCN, GRU, SDGNN}; !slices.Equal(scored, want) {
		t.Errorf("scored %v before the interruption, want %v", scored, want)
	}

	// Resumed.
	scored, rounds, epochs = nil, 0, map[string]int{}
	hooks.Scored = func(seed uint64, model string, m evaluation.Metrics, rec, sec float64) {
		t.Logf("seed %d %-11s MAPE %.2f MAE %.4f receptive %.2f (%.0fs)", seed, model, m.MAPE, m.MAE, rec, sec)
		scored = append(scored, model)
	}
	var resumed []string
	hooks.Resumed = func(seed uint64, file, what string) { resumed = append(resumed, filepath.Base(file)+": "+what) }
	tab, err := RunAll(context.Background(), cfg, hooks)
	if err != nil {
		t.Fatal(err)
	}
	if len(epochs) != 0 || rounds != 0 {
		t.Errorf("the resumed run trained again: teacher epochs %v, %d SDGNN rounds", epochs, rounds)
	}
	if want := []string{GRUGCN, GRU, SDGNN, GLNN, NOSMOG, PPRGo, SDGNNEqual}; !slices.Equal(scored, want) {
		t.Errorf("resumed run reported %v, want %v", scored, want)
	}
	if len(resumed) != 1 || !strings.Contains(resumed[0], "scores") || !strings.HasSuffix(resumed[0], "the scores of GRU-GCN, GRU, SDGNN") {
		t.Errorf("resumed run reported %q, want one line for the scores of GRU-GCN, GRU, SDGNN", resumed)
	}
	left, err := filepath.Glob(filepath.Join(cfg.ModelDir, "*scores*"))
	if err != nil || len(left) != 0 {
		t.Errorf("scores left after the seed finished: %v (%v)", left, err)
	}
	run := tab.Runs[0]
	if s, g := run.Metrics[SDGNN].MAPE, run.Metrics[GRU].MAPE; !(s < g) {
		t.Errorf("SDGNN test MAPE %.3f is not below GRU's %.3f", s, g)
	}
	budget := cfg.SDGNN.BudgetEnd
	for _, m := range []string{SDGNN, PPRGo, SDGNNEqual} {
		if got := run.MaxReceptive[m]; got < 1 || got > budget {
			t.Errorf("%s: a node reads %d nodes, budget %d", m, got, budget)
		}
	}
	// SDGNN is tested against every other model on the same test snapshots
	// (those with some truth), and the test's sign follows the mean
	// difference.
	n := run.DM[GRU].N
	for _, m := range Models {
		d, ok := run.DM[m]
		if m == SDGNN {
			if ok {
				t.Errorf("SDGNN tested against itself")
			}
			continue
		}
		if !ok || d.N < 10 || d.N != n || d.DF != evaluation.DMTerms(d.N) || !(d.P >= 0 && d.P <= 1) || (d.Stat < 0) != (d.Mean < 0) {
			t.Errorf("DM against %s: %+v (present %v)", m, d, ok)
		}
	}
	// The bundle kept in the model directory is the model behind SDGNN's
	// figures: it forecasts them again exactly.
	prep, err := snapshot.PrepareFit("", cfg.Dataset, cfg.Window, cfg.spec(), cfg.prep())
	if err != nil {
		t.Fatal(err)
	}
	b, err := sdgnn.LoadBundle(BundlePath(cfg.ModelDir, cfg.Dataset, prep, 1))
	if err != nil {
		t.Fatal(err)
	}
	if g, want := b.Meta.Graph, prep.GraphFingerprint(); g == nil || *g != want {
		t.Errorf("the bundle records graph %v, want %v", g, want)
	}
	// By default every node is in its own receptive set (sdgnn.Config.KeepSelf).
	if !b.Meta.Config.KeepSelf {
		t.Error("the quick run distilled without KeepSelf, the default")
	}
	if out := b.Theta.WithoutSelf(); len(out) > 0 {
		t.Errorf("nodes %v are outside their own receptive sets", out)
	}
	pred, truth, err := sdgnn.Predict(context.Background(), b, prep.Set, prep.Split.Test, 64)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := evaluation.Build(pred, truth, prep.Split.Test.Len(), prep.Set.Nodes, prep.Set.Channels, 1, cfg.MAPEFloor)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rep.Overall, run.Metrics[SDGNN]; got != want {
		t.Errorf("kept bundle scores %+v, the table has %+v", got, want)
	}
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, m := range Models {
		if !strings.Contains(md.String(), m) {
			t.Errorf("table lacks %s", m)
		}
	}
	if !strings.Contains(md.String(), "Diebold–Mariano") {
		t.Error("table lacks the Diebold–Mariano tests")
	}
	// SZ-taxi's 2976 steps are fewer than QuickSteps: nothing was cut.
	if tab.Config.Steps != 0 || prep.Split.Steps != 0 || strings.Contains(md.String(), "first") {
		t.Errorf("the quick run on SZ-taxi says it cut the series: steps %d, split %s", tab.Config.Steps, prep.Split)
	}
	t.Log("\n" + md.String())
}
