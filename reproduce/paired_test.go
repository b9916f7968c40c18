package reproduce

import (
	"math"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// pairedTable is a table of len(sdgnnMAE) seeds in which every model but
// SDGNN has the MAEs of other, and all MAPEs, RMSEs and paper-style MAPEs
// are a constant offset from the MAE.
func pairedTable(sdgnnMAE, other []float64) *Table {
	t := &Table{Dataset: "sz-taxi", Config: Quick("sz-taxi")}
	for i := range sdgnnMAE {
		r := Run{Seed: uint64(i + 1), Metrics: map[string]evaluation.Metrics{}, Paper: map[string]evaluation.PaperMetrics{}}
		for _, m := range Models {
			v := other[i]
			if m == SDGNN {
				v = sdgnnMAE[i]
			}
			r.Metrics[m] = evaluation.Metrics{MAE: v, MAPE: v + 10, RMSE: v + 1}
			r.Paper[m] = evaluation.PaperMetrics{MAPE: v + 2}
		}
		t.Runs = append(t.Runs, r)
	}
	t.Cells = summarise(t.Runs)
	return t
}

func TestPaired(t *testing.T) {
	const tol = 1e-12
	near := func(a, b float64) bool { return math.Abs(a-b) <= tol || math.IsNaN(a) && math.IsNaN(b) }
	for _, tc := range []struct {
		name       string
		sdgnn, gru []float64
		want       Diff
	}{
		// Differences −0.5 and −0.1: mean −0.3, std 0.2√2, t = −1.5 with
		// one degree of freedom (a Cauchy law): p = 1 − 2·atan(1.5)/π.
		{"two seeds", []float64{1, 2}, []float64{1.5, 2.1}, Diff{Mean: -0.3, Std: 0.2 * math.Sqrt2, Lower: 2, P: 1 - 2*math.Atan(1.5)/math.Pi}},
		// Differences +1, −1, 0: mean 0, t = 0, p = 1; one seed lower.
		{"three seeds, no difference on average", []float64{3, 1, 2}, []float64{2, 2, 2}, Diff{Mean: 0, Std: 1, Lower: 1, P: 1}},
		// Equal differences: no spread, no test.
		{"equal differences", []float64{1, 2, 3}, []float64{2, 3, 4}, Diff{Mean: -1, Std: 0, Lower: 3, P: math.NaN()}},
		// Equal differences whose mean does not come out exactly (three of
		// 0.1 sum to 0.30000000000000004): still no spread and no test, not
		// p 1e-32.
		{"equal differences, inexact mean", []float64{0.1, 0.1, 0.1}, []float64{0, 0, 0}, Diff{Mean: 0.1, Std: 0, Lower: 0, P: math.NaN()}},
		{"one seed", []float64{1}, []float64{2}, Diff{Mean: -1, Std: math.NaN(), Lower: 1, P: math.NaN()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pairs := pairedTable(tc.sdgnn, tc.gru).Paired(SDGNN)
			if len(pairs) != len(Models)-1 {
				t.Fatalf("%d pairs, want %d", len(pairs), len(Models)-1)
			}
			for _, p := range pairs {
				if p.Model == SDGNN || p.Seeds != len(tc.sdgnn) {
					t.Errorf("pair %+v", p)
				}
				// MAPE, RMSE and paper-style MAPE are offsets of the MAE, so
				// their differences are the MAE's.
				for name, d := range map[string]Diff{"MAE": p.MAE, "MAPE": p.MAPE, "RMSE": p.RMSE, "paper MAPE": p.PaperMAPE} {
					if !near(d.Mean, tc.want.Mean) || !near(d.Std, tc.want.Std) || d.Lower != tc.want.Lower || !near(d.P, tc.want.P) {
						t.Errorf("%s against %s: %+v, want %+v", name, p.Model, d, tc.want)
					}
				}
			}
		})
	}
}

func TestPairedMarkdown(t *testing.T) {
	var md strings.Builder
	if err := pairedTable([]float64{1, 2}, []float64{1.5, 2.1}).Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SDGNN against each model, seed by seed", "| GRU | -0.3000 ± 0.2828, 2/2, p 0.37 |", "| SDGNN-Equal |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	whole := pairedTable([]float64{1}, []float64{2})
	whole.Config.Steps = 0 // as RunAll records a series not cut
	if err := whole.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "seed by seed") {
		t.Errorf("one seed has a paired comparison:\n%s", md.String())
	}
	if strings.Contains(md.String(), "first") {
		t.Errorf("a table of the whole series says it used part of it:\n%s", md.String())
	}
	md.Reset()
	cut := pairedTable([]float64{1}, []float64{2})
	cut.Config.Steps = QuickSteps
	if err := cut.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if want := "the series' first 4032 steps only"; !strings.Contains(md.String(), want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md.String())
	}
}

// TestDMMarkdown checks the Diebold–Mariano section: p-values per seed, and
// the seeds in which SDGNN is significantly lower or higher counted by the
// sign of the statistic; seeds without tests (older tables) are left out.
func TestDMMarkdown(t *testing.T) {
	tab := pairedTable([]float64{1, 2, 3}, []float64{1.5, 2.1, 2.9})
	for i, dm := range []evaluation.DM{
		{N: 100, DF: 9, Mean: -0.02, Stat: -3.1, P: 0.012},
		{N: 100, DF: 9, Mean: 0.01, Stat: 2.5, P: 0.034},
	} {
		tab.Runs[i].DM = map[string]evaluation.DM{}
		for _, m := range Models {
			if m != SDGNN {
				tab.Runs[i].DM[m] = dm
			}
		}
	}
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Diebold–Mariano tests of the per-snapshot MAE", "(seeds 1, 2)", "| GRU | -0.0050 ± 0.0212 | 0.012, 0.034 | 1 / 1 of 2 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	if err := pairedTable([]float64{1, 2}, []float64{1.5, 2.1}).Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Diebold") {
		t.Errorf("runs without tests have a Diebold–Mariano section:\n%s", md.String())
	}
}

// TestGraphGain checks the teacher against the GRU, seed by seed, and its
// row in the Markdown: GRU-GCN's MAEs 1.4 and 2.0 against the GRU's 1.5 and
// 2.1 differ by −0.1 in both seeds (no spread, no test); with a third seed
// at +0.1 the mean is −1/30, the std 0.2/√3 and t = −0.5, whose two-sided
// p-value with two degrees of freedom is 1 − |t|/√(2+t²) = 2/3.
func TestGraphGain(t *testing.T) {
	tab := pairedTable([]float64{1, 2, 3}, []float64{1.5, 2.1, 2.9})
	for i, v := range []float64{1.4, 2.0, 3.0} {
		tab.Runs[i].Metrics[GRUGCN] = evaluation.Metrics{MAE: v, MAPE: v + 10, RMSE: v + 1}
		tab.Runs[i].Paper[GRUGCN] = evaluation.PaperMetrics{MAPE: v + 2}
	}
	two := &Table{Dataset: tab.Dataset, Config: tab.Config, Runs: tab.Runs[:2]}
	g := two.GraphGain()
	if g.Model != GRU || g.Seeds != 2 || math.Abs(g.MAE.Mean+0.1) > 1e-12 || g.MAE.Lower != 2 || math.Abs(g.MAE.Std) > 1e-12 || !math.IsNaN(g.MAE.P) {
		t.Errorf("two seeds: %+v, want GRU, −0.1 in both seeds, no test", g)
	}
	g = tab.GraphGain()
	if math.Abs(g.MAE.Mean+1.0/30) > 1e-12 || math.Abs(g.MAE.Std-0.2/math.Sqrt(3)) > 1e-12 || g.MAE.Lower != 2 || math.Abs(g.MAE.P-2.0/3) > 1e-9 {
		t.Errorf("three seeds: %+v, want mean −1/30, std 0.2/√3, 2 lower, p 2/3", g.MAE)
	}
	tab.Cells = summarise(tab.Runs)
	var md strings.Builder
	if err := tab.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"The graph's gain, seed by seed: GRU-GCN − GRU", "| GRU-GCN − |", "| GRU | -0.0333 ± 0.1155, 2/3, p 0.67 |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	md.Reset()
	if err := pairedTable([]float64{1}, []float64{2}).Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "graph's gain") {
		t.Errorf("one seed has the graph's gain:\n%s", md.String())
	}
}
