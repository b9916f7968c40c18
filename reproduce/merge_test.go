package reproduce

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// fakeRun is a run whose every model scored mae (MAPE 10·mae, RMSE 2·mae)
// with mean receptive field rec; nil rec leaves Receptive out, as tables
// written before it was recorded per seed do.
func fakeRun(seed uint64, mae float64, rec map[string]float64) Run {
	r := Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Paper: map[string]evaluation.PaperMetrics{}, Receptive: rec}
	for _, m := range Models {
		r.Metrics[m] = evaluation.Metrics{MAE: mae, MAPE: 10 * mae, RMSE: 2 * mae, Count: 100}
		r.Paper[m] = evaluation.PaperMetrics{MAPE: mae / 10}
	}
	return r
}

func fakeTable(cfg Config, runs ...Run) *Table {
	t := &Table{Dataset: cfg.Dataset, Config: cfg, Runs: runs, MAPEFloor: cfg.MAPEFloor}
	t.Config.Seeds = nil
	for _, r := range runs {
		t.Config.Seeds = append(t.Config.Seeds, r.Seed)
	}
	t.Cells = summarise(runs)
	return t
}

// named returns t read from file, as pems-train reproduce -merge reads it.
func named(t *Table, file string) *Table {
	t.File = file
	return t
}

func recOf(v float64) map[string]float64 {
	m := map[string]float64{}
	for _, name := range Models {
		m[name] = v
	}
	return m
}

func TestMerge(t *testing.T) {
	cfg := Quick("pems08")
	other := cfg
	other.NoiseStd = 0.2
	floor := cfg
	floor.MAPEFloor = 1
	elsewhere := cfg
	elsewhere.ModelDir = "/elsewhere/models"
	for _, tc := range []struct {
		name    string
		tables  []*Table
		seeds   []uint64
		mae     float64 // SDGNN's mean MAE
		maeStd  float64
		rec     float64 // SDGNN's mean receptive field
		wantErr string
	}{
		{name: "two runs", tables: []*Table{fakeTable(elsewhere, fakeRun(3, 3, recOf(6))), fakeTable(cfg, fakeRun(1, 1, recOf(4)), fakeRun(2, 2, recOf(5)))},
			seeds: []uint64{1, 2, 3}, mae: 2, maeStd: 1, rec: 5},
		// Tables without per-seed receptive fields: each run gets its
		// table's mean, 4.5 for seeds 1 and 2, 6 for seed 3: (4.5+4.5+6)/3.
		{name: "legacy receptive", tables: []*Table{fakeTable(cfg, fakeRun(1, 1, recOf(4)), fakeRun(2, 2, recOf(5))), fakeTable(cfg, fakeRun(3, 3, recOf(6)))},
			seeds: []uint64{1, 2, 3}, mae: 2, maeStd: 1, rec: 5},
		{name: "duplicate seed", tables: []*Table{fakeTable(cfg, fakeRun(1, 1, nil)), fakeTable(cfg, fakeRun(1, 2, nil))}, wantErr: "seed 1 is in table 1 and table 2"},
		{name: "other config", tables: []*Table{fakeTable(cfg, fakeRun(1, 1, nil)), fakeTable(other, fakeRun(2, 2, nil))}, wantErr: "another configuration than table 1 (only the seeds may differ): noise_std 0.2, table 1 0.05"},
		// The refusal names the setting that differs, not only that one does.
		{name: "other floor", tables: []*Table{fakeTable(cfg, fakeRun(1, 1, nil)), fakeTable(floor, fakeRun(2, 2, nil))}, wantErr: "differ): mape_floor 1, table 1 0"},
		{name: "other dataset", tables: []*Table{fakeTable(cfg, fakeRun(1, 1, nil)), fakeTable(Quick("pems04"), fakeRun(2, 2, nil))}, wantErr: "is of pems04"},
		{name: "none", wantErr: "no tables"},
		// Tables read from files are named by them.
		{name: "duplicate seed in files", tables: []*Table{named(fakeTable(cfg, fakeRun(1, 1, nil)), "a.json"), named(fakeTable(cfg, fakeRun(1, 2, nil)), "b.json")},
			wantErr: "merge pems08: seed 1 is in a.json and b.json"},
		{name: "seed twice in a file", tables: []*Table{named(fakeTable(cfg, fakeRun(2, 1, nil)), "a.json"), named(fakeTable(cfg, fakeRun(1, 1, nil), fakeRun(1, 2, nil)), "b.json")},
			wantErr: "merge pems08: seed 1 is in b.json twice"},
		{name: "other config in files", tables: []*Table{named(fakeTable(cfg, fakeRun(1, 1, nil)), "a.json"), named(fakeTable(other, fakeRun(2, 2, nil)), "b.json")},
			wantErr: "merge pems08: b.json was run with another configuration than a.json (only the seeds may differ): noise_std 0.2, a.json 0.05"},
		{name: "other floor in files", tables: []*Table{named(fakeTable(cfg, fakeRun(1, 1, nil)), "a.json"), named(fakeTable(floor, fakeRun(2, 2, nil)), "b.json")},
			wantErr: "differ): mape_floor 1, a.json 0"},
		{name: "other dataset in files", tables: []*Table{named(fakeTable(cfg, fakeRun(1, 1, nil)), "a.json"), named(fakeTable(Quick("pems04"), fakeRun(2, 2, nil)), "b.json")},
			wantErr: "merge: b.json is of pems04, a.json of pems08"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "legacy receptive" {
				for _, tab := range tc.tables {
					for i := range tab.Runs {
						tab.Runs[i].Receptive = nil
					}
				}
				tc.tables[0].Cells[SDGNN] = Cell{Receptive: 4.5}
				tc.tables[1].Cells[SDGNN] = Cell{Receptive: 6}
			}
			got, err := Merge(tc.tables)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Merge error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Config.Seeds) != len(tc.seeds) || len(got.Runs) != len(tc.seeds) {
				t.Fatalf("seeds %v, %d runs; want %v", got.Config.Seeds, len(got.Runs), tc.seeds)
			}
			for i, s := range tc.seeds {
				if got.Config.Seeds[i] != s || got.Runs[i].Seed != s {
					t.Fatalf("seeds %v, run %d seed %d; want %v", got.Config.Seeds, i, got.Runs[i].Seed, tc.seeds)
				}
			}
			c := got.Cells[SDGNN]
			if math.Abs(c.MAE-tc.mae) > 1e-12 || math.Abs(c.MAEStd-tc.maeStd) > 1e-12 || math.Abs(c.Receptive-tc.rec) > 1e-12 {
				t.Errorf("SDGNN cell %+v; want MAE %g ± %g, receptive %g", c, tc.mae, tc.maeStd, tc.rec)
			}
			if math.Abs(c.PaperMAPE-tc.mae/10) > 1e-12 || math.Abs(c.MAPE-10*tc.mae) > 1e-9 {
				t.Errorf("SDGNN cell %+v: MAPEs not recomputed over the runs", c)
			}
		})
	}
}

// TestTableJSONRoundTrip checks that a table read back from its JSON has
// the configuration and cells it was written with, NaN deviations included,
// so that tables from files merge.
func TestTableJSONRoundTrip(t *testing.T) {
	cfg := Full("pems04")
	cfg.ModelDir, cfg.MAPEFloor = "runs/x/models", 1
	tab := fakeTable(cfg, fakeRun(4, 2.5, recOf(5.5)))
	raw, err := json.Marshal([]*Table{tab})
	if err != nil {
		t.Fatal(err)
	}
	var back []*Table
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 1 {
		t.Fatalf("%d tables back", len(back))
	}
	got := back[0]
	if _, err := Merge([]*Table{tab, got}); err == nil || !strings.Contains(err.Error(), "seed 4") {
		t.Fatalf("merging a table with its own JSON: %v, want the duplicate seed", err)
	}
	if c, w := got.Cells[SDGNN], tab.Cells[SDGNN]; c.MAE != w.MAE || c.Receptive != w.Receptive || !math.IsNaN(c.MAEStd) {
		t.Errorf("cell back %+v, written %+v", c, w)
	}
	got.Runs[0].Seed = 5
	m, err := Merge([]*Table{tab, got})
	if err != nil {
		t.Fatalf("merge with the table read back: %v", err)
	}
	if c := m.Cells[SDGNN]; c.MAEStd != 0 || c.MAE != 2.5 {
		t.Errorf("merged cell %+v", c)
	}
}

// TestRunAllRefusesSeedTwice: a seed listed twice would be run twice and
// its identical figures counted as two seeds (the table Merge refuses),
// so RunAll refuses it before it loads anything.
func TestRunAllRefusesSeedTwice(t *testing.T) {
	cfg := Quick("sz-taxi")
	cfg.Seeds = []uint64{3, 1, 3}
	cfg.DataDir = filepath.Join(t.TempDir(), "no-data-here")
	_, err := RunAll(context.Background(), cfg, Hooks{})
	if err == nil || !strings.Contains(err.Error(), "seed 3 twice") {
		t.Fatalf("RunAll with seed 3 twice: %v, want it refused", err)
	}
}

// TestMergeTableWithoutPaperMAPE merges a table written before the
// paper-style MAPE was computed (its runs hold none) with one that has it:
// the merged paper-style column is unknown ("–"), not a mean with the old
// seeds counted as 0, while the other columns stay whole.
func TestMergeTableWithoutPaperMAPE(t *testing.T) {
	cfg := Quick("pems08")
	old := fakeRun(1, 2, recOf(6))
	old.Paper = nil
	merged, err := Merge([]*Table{fakeTable(cfg, old), fakeTable(cfg, fakeRun(2, 4, recOf(6)), fakeRun(3, 6, recOf(6)))})
	if err != nil {
		t.Fatal(err)
	}
	c := merged.Cells[SDGNN]
	if !math.IsNaN(c.PaperMAPE) || c.MAE != 4 || c.MAEStd != 2 {
		t.Errorf("SDGNN cell %+v, want paper-style MAPE NaN, MAE 4 ± 2", c)
	}
	var md strings.Builder
	if err := merged.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	row := ""
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(line, "| paper-style MAPE") {
			row = line
		}
	}
	if row == "" || strings.Contains(row, "0.") || strings.Contains(row, "NaN") || !strings.Contains(row, "–") {
		t.Errorf("paper-style row %q, want – in every model's cell:\n%s", row, md.String())
	}
	if strings.Contains(md.String(), "NaN") {
		t.Errorf("Markdown prints NaN:\n%s", md.String())
	}
}
