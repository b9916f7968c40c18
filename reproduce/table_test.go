package reproduce

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/snapshot"
)

func TestMeanStd(t *testing.T) {
	for _, tc := range []struct {
		v         []float64
		mean, std float64
	}{
		{[]float64{2, 4, 6}, 4, 2},
		{[]float64{1, 1}, 1, 0},
		{[]float64{3.5}, 3.5, math.NaN()},
		// Equal values whose sum over their number is not the value
		// (0.30000000000000004/3): no spread, not one of 1.7e-17.
		{[]float64{0.1, 0.1, 0.1}, 0.1, 0},
		{[]float64{0.7, 0.7, 0.7}, 0.7, 0},
	} {
		m, s := meanStd(tc.v)
		if m != tc.mean || !(s == tc.std || math.IsNaN(s) && math.IsNaN(tc.std)) {
			t.Errorf("meanStd(%v) = %v, %v; want %v, %v", tc.v, m, s, tc.mean, tc.std)
		}
	}
}

// TestOneSeedHasNoDeviation checks that a one-seed table prints no "± 0" in
// Markdown and writes the deviations as null in JSON, while several seeds
// keep them.
func TestOneSeedHasNoDeviation(t *testing.T) {
	one := Cell{MAPE: 44.3, MAE: 4.04, RMSE: 5.83, PaperMAPE: 3.8, Receptive: 9.65}
	one.MAPEStd, one.MAEStd, one.RMSEStd, one.PaperMAPEStd = math.NaN(), math.NaN(), math.NaN(), math.NaN()
	three := Cell{MAPE: 38.1, MAPEStd: 0.41, MAE: 3.2143, MAEStd: 0.0032, RMSE: 4.5, RMSEStd: 0.01, PaperMAPE: 3.03, PaperMAPEStd: 0.02}
	for _, tc := range []struct {
		name   string
		c      Cell
		want   []string // in the Markdown
		absent string
		null   bool // deviations null in the JSON
	}{
		{"one seed", one, []string{"| 44.30 |", "| 4.0400 |", "| 3.800 |"}, "±", true},
		{"three seeds", three, []string{"| 38.10 ± 0.41 |", "| 3.2143 ± 0.0032 |", "| 3.030 ± 0.020 |"}, "NaN", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := &Table{Dataset: "sz-taxi", Config: Quick("sz-taxi"), Cells: map[string]Cell{}}
			for _, m := range Models {
				tab.Cells[m] = tc.c
			}
			var md strings.Builder
			if err := tab.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(md.String(), w) {
					t.Errorf("Markdown lacks %q:\n%s", w, md.String())
				}
			}
			if strings.Contains(md.String(), tc.absent) {
				t.Errorf("Markdown holds %q:\n%s", tc.absent, md.String())
			}
			b, err := json.Marshal(tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"mape_std", "mae_std", "rmse_std", "paper_mape_std"} {
				if isNull := got[k] == nil; isNull != tc.null {
					t.Errorf("%s = %v, want null %v", k, got[k], tc.null)
				}
			}
		})
	}
}

// TestMarkdownSaysChannelsPooled checks that a table of PeMS, whose three
// channels are in different units, says that its MAE and RMSE pool them
// (as eval's and report's tables do), and that a one-channel table is
// left as it was.
func TestMarkdownSaysChannelsPooled(t *testing.T) {
	c := Cell{MAPE: 20, MAE: 15, RMSE: 25, PaperMAPE: 3, Receptive: 5}
	for _, tc := range []struct {
		dataset string
		pooled  bool
	}{{"pems04", true}, {"pems08", true}, {"sz-taxi", false}} {
		tab := &Table{Dataset: tc.dataset, Config: Quick(tc.dataset), Cells: map[string]Cell{}}
		for _, m := range Models {
			tab.Cells[m] = c
		}
		var md strings.Builder
		if err := tab.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		const note = "MAE and RMSE pool the channels' units (flow: veh/5 min, occupancy: fraction, speed: mph)"
		if got := strings.Contains(md.String(), note); got != tc.pooled {
			t.Errorf("%s: note %q in the Markdown: %v, want %v:\n%s", tc.dataset, note, got, tc.pooled, md.String())
		}
	}
}

// TestMarkdownByChannel checks the table by channel: each channel's MAPE,
// MAE and RMSE per model, mean ± std over the seeds that recorded them,
// named with its unit; none for runs of one channel or from before it was
// recorded.
func TestMarkdownByChannel(t *testing.T) {
	run := func(seed uint64, flowMAE float64) Run {
		r := Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Channels: map[string][]evaluation.Metrics{}}
		for _, m := range Models {
			r.Channels[m] = []evaluation.Metrics{{MAE: flowMAE, RMSE: 30, MAPE: 12}, {MAE: 0.01, RMSE: 0.02, MAPE: 8}, {MAE: 2, RMSE: 3, MAPE: 4}}
		}
		return r
	}
	tab := &Table{Dataset: "pems04", Config: Quick("pems04"), Cells: map[string]Cell{}, Runs: []Run{run(1, 20), run(2, 22)}}
	delete(tab.Runs[1].Channels, GRU) // a seed without the GRU's
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"By channel (each in its units), mean ± std over seeds:",
		"| flow (veh/5 min) | MAPE (%) | 12.00 ± 0.00 | 12.00 |",
		"|  | MAE | 21.0000 ± 1.4142 | 20.0000 |",
		"| occupancy (fraction) | MAPE (%) |",
		"| speed (mph) | MAPE (%) |",
		"the table by channel gives each channel's",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("no %q in:\n%s", want, md.String())
		}
	}
	for _, tc := range []struct {
		name string
		runs []Run
	}{
		{"one channel", []Run{{Seed: 1, Channels: map[string][]evaluation.Metrics{SDGNN: {{MAE: 1}}}}}},
		{"not recorded", []Run{{Seed: 1}}},
	} {
		md.Reset()
		tab := &Table{Dataset: "sz-taxi", Config: Quick("sz-taxi"), Cells: map[string]Cell{}, Runs: tc.runs}
		if err := tab.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(md.String(), "By channel") {
			t.Errorf("%s: a table by channel:\n%s", tc.name, md.String())
		}
	}
}

// TestMarkdownOutages checks the outage tables: the silenced sensors' MAE
// and MAPE per length and model, mean ± std over seeds, and the MAE by
// the data's own gaps; none for runs without them (tables written before).
func TestMarkdownOutages(t *testing.T) {
	run := func(seed uint64, whole float64) Run {
		r := Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Outages: map[string][]OutageScore{}, Completeness: map[string]evaluation.Breakdown{}}
		for _, m := range Models {
			r.Metrics[m] = evaluation.Metrics{MAE: 4, Count: 10}
			own := []evaluation.Class{{Metrics: evaluation.Metrics{MAE: 3.5, Count: 70}}, {Metrics: evaluation.Metrics{MAE: 4.5, Count: 20}},
				{Metrics: evaluation.Metrics{MAE: 5, Count: 9}}, {Metrics: evaluation.Metrics{MAE: 6, Count: 1}}}
			r.Completeness[m] = evaluation.Breakdown{Window: 12, Own: own}
			for _, l := range []int{3, 12} {
				sil, other := evaluation.Metrics{MAE: whole * float64(l) / 12, MAPE: 50, Count: 5}, evaluation.Metrics{MAE: 4, Count: 50}
				r.Outages[m] = append(r.Outages[m], OutageScore{Length: l, Breakdown: evaluation.Breakdown{Window: 12, Silenced: &sil, Unsilenced: &other}})
			}
		}
		return r
	}
	cfg := Quick("sz-taxi")
	cfg.Outage = snapshot.Outage{Share: 0.1, Lengths: []int{3, 12}, Seed: 1}
	tab := &Table{Dataset: "sz-taxi", Config: cfg, Cells: map[string]Cell{}, Runs: []Run{run(1, 12), run(2, 14)}}
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Simulated outages (share=0.1,len=3:12,seed=1)",
		"| none, inputs complete | MAE | 3.5000 ± 0.0000 |",
		"| 3 | MAE | 3.2500 ± 0.3536 |",
		"| 12 (whole window) | MAE | 13.0000 ± 1.4142 |",
		"|  | MAPE (%) | 50.00 ± 0.00 |",
		"| whole window | 1 (1.0 %) | 6.0000 ± 0.0000 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("no %q in:\n%s", want, md.String())
		}
	}
	if over := "mean ± std over seeds."; !strings.Contains(md.String(), over) || strings.Contains(md.String(), "that recorded them") {
		t.Errorf("runs that all hold the breakdowns: want %q, not a subset, in:\n%s", over, md.String())
	}
	// A merge of a table written before the breakdowns were recorded (seed
	// 3, none) with later ones: the captions name the seeds averaged.
	tab.Runs = append(tab.Runs, Run{Seed: 3, Metrics: tab.Runs[0].Metrics})
	md.Reset()
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"their truths kept; the metrics of the silenced sensors' forecasts, mean ± std over the 2 of 3 seeds that recorded them (seeds 1, 2;",
		"own window (of 12), mean ± std over the 2 of 3 seeds that recorded them (seeds 1, 2;",
		"| whole window | 1 (1.0 %) | 6.0000 ± 0.0000 |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("merged with a seed without breakdowns: no %q in:\n%s", want, md.String())
		}
	}
	plain := &Table{Dataset: "sz-taxi", Config: Quick("sz-taxi"), Cells: map[string]Cell{}, Runs: []Run{{Seed: 1}}}
	md.Reset()
	if err := plain.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Simulated outages") || strings.Contains(md.String(), "own gaps") {
		t.Errorf("outage tables for runs without them:\n%s", md.String())
	}
}
