package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/reproduce"
)

// FuzzMergeTables gives reproduce -merge a table file of the fuzzer's
// bytes, seeded with tables as reproduce writes them: it must merge and
// write the tables into -out, or refuse them with an error; never panic,
// nor write outside -out.
func FuzzMergeTables(f *testing.F) {
	run := func(seed uint64, mae float64) reproduce.Run {
		r := reproduce.Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Seconds: map[string]float64{},
			MaxReceptive: map[string]int{}, Receptive: map[string]float64{}, Paper: map[string]evaluation.PaperMetrics{},
			DM: map[string]evaluation.DM{}}
		for _, m := range reproduce.Models {
			r.Metrics[m] = evaluation.Metrics{MAE: mae, RMSE: 2 * mae, MAPE: 10 * mae, Count: 100, MAPECount: 90}
			r.Paper[m] = evaluation.PaperMetrics{MAPE: mae / 10, RMSE: 0.1, Rows: 100}
			r.Receptive[m], r.MaxReceptive[m], r.Seconds[m] = 2.5, 4, 1
			if m != reproduce.SDGNN {
				r.DM[m] = evaluation.DM{N: 50, DF: 3, Mean: -0.5, Stat: -2, P: 0.04}
			}
		}
		return r
	}
	table := func(dataset string, runs ...reproduce.Run) *reproduce.Table {
		tab := &reproduce.Table{Dataset: dataset, Config: reproduce.Quick(dataset), Runs: runs, Created: "2026-01-01T00:00:00Z"}
		for _, r := range runs {
			tab.Config.Seeds = append(tab.Config.Seeds, r.Seed)
		}
		return tab
	}
	paper := table("pems08", run(3, 1.5))
	paper.Config.Prep, paper.Config.SplitBy, paper.Config.Ratios = "paper", "nodes", [3]float64{7, 1, 2}
	for _, tables := range [][]*reproduce.Table{
		{table("pems08", run(1, 1), run(2, 2))},
		{table("sz-taxi", run(4, 3)), table("pems08", run(5, 1))},
		{paper},
	} {
		raw, err := json.Marshal(tables)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "seeds.json")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		mergeTables([]string{path}, filepath.Join(dir, "out"), io.Discard)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "seeds.json" && e.Name() != "out" {
				t.Fatalf("merge wrote %s outside -out", e.Name())
			}
		}
	})
}
