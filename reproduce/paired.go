package reproduce

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// Diff is one metric of a paired comparison over seeds: the differences
// ref − other, seed by seed.
type Diff struct {
	Mean, Std float64 // of the differences; Std is NaN for one seed
	Lower     int     // seeds in which ref is lower (better)
	// P is the two-sided p-value of the paired t-test of a zero mean
	// difference: NaN below two seeds or when every difference is equal.
	P float64
}

// Pair compares a reference model with another one seed by seed.
type Pair struct {
	Model                      string // the other model
	Seeds                      int
	MAE, MAPE, RMSE, PaperMAPE Diff
}

// Paired compares model ref with every other model of the table, seed by
// seed. The margins between the students are often smaller than the spread
// over seeds, and much of that spread is shared by the models of one seed
// (its teacher, which the students are distilled from, and its sampling);
// the paired differences leave that part out, so they say more about which
// model is better than the means and deviations of the main table do.
func (t *Table) Paired(ref string) []Pair {
	var out []Pair
	for _, m := range Models {
		if m != ref {
			out = append(out, t.pair(ref, m))
		}
	}
	return out
}

// pair compares model ref with model m seed by seed (ref − m).
func (t *Table) pair(ref, m string) Pair {
	p := Pair{Model: m, Seeds: len(t.Runs)}
	var mae, mape, rmse, paper []float64
	for _, r := range t.Runs {
		a, b := metricsOf(r, ref), metricsOf(r, m)
		mae, mape, rmse = append(mae, a.MAE-b.MAE), append(mape, a.MAPE-b.MAPE), append(rmse, a.RMSE-b.RMSE)
		paper = append(paper, paperMAPEOf(r, ref)-paperMAPEOf(r, m))
	}
	p.MAE, p.MAPE, p.RMSE, p.PaperMAPE = diffOf(mae), diffOf(mape), diffOf(rmse), diffOf(paper)
	return p
}

// diffOf summarises paired differences.
func diffOf(d []float64) Diff {
	out := Diff{P: math.NaN()}
	out.Mean, out.Std = meanStd(d)
	for _, x := range d {
		if x < 0 {
			out.Lower++
		}
	}
	if n := float64(len(d)); n >= 2 && out.Std > 0 {
		tstat := out.Mean / (out.Std / math.Sqrt(n))
		out.P = 2 * portable.StudentsTSurvival(math.Abs(tstat), n-1)
	}
	return out
}

// pairedMarkdown writes the paired comparison of SDGNN with every other
// model; nothing for fewer than two seeds, where the main table says it all.
func (t *Table) pairedMarkdown(w io.Writer) error {
	n := len(t.Runs)
	if n < 2 {
		return nil
	}
	fmt.Fprintf(w, "\n%s against each model, seed by seed: mean ± std of %s − model over the %d seeds (negative: %s lower, better), "+
		"the seeds in which %s is lower, and the two-sided p-value of a paired t-test\n\n", SDGNN, SDGNN, n, SDGNN, SDGNN)
	fmt.Fprintf(w, "| %s − | MAE | MAPE (%%) | RMSE | paper-style MAPE (%%) |\n|---|---:|---:|---:|---:|\n", SDGNN)
	cell := func(prec int, d Diff) string {
		if math.IsNaN(d.Mean) { // a seed without the figure
			return "–"
		}
		p := "–"
		if !math.IsNaN(d.P) {
			p = fmt.Sprintf("%.2g", d.P)
		}
		return fmt.Sprintf("%+.*f ± %.*f, %d/%d, p %s", prec, d.Mean, prec, d.Std, d.Lower, n, p)
	}
	for _, p := range t.Paired(SDGNN) {
		if _, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", p.Model, cell(4, p.MAE), cell(2, p.MAPE), cell(4, p.RMSE), cell(3, p.PaperMAPE)); err != nil {
			return err
		}
	}
	// The graph's gain, which the students' comparison presumes: the
	// teacher against the same GRU without its graph convolutions.
	g := t.GraphGain()
	_, err := fmt.Fprintf(w, "\nThe graph's gain, seed by seed: %s − %s, in the same terms (negative: %s lower, better)\n\n"+
		"| %s − | MAE | MAPE (%%) | RMSE | paper-style MAPE (%%) |\n|---|---:|---:|---:|---:|\n| %s | %s | %s | %s | %s |\n",
		GRUGCN, GRU, GRUGCN, GRUGCN, GRU, cell(4, g.MAE), cell(2, g.MAPE), cell(4, g.RMSE), cell(3, g.PaperMAPE))
	return err
}

// GraphGain compares the GRU-GCN teacher with the GRU seed by seed
// (GRU-GCN − GRU): how much the road graph helps a forecast, the gain that
// SDGNN is meant to keep with few receptive nodes.
func (t *Table) GraphGain() Pair { return t.pair(GRUGCN, GRU) }

// dmMarkdown writes, for the seeds whose runs hold them, the Diebold–Mariano
// tests of SDGNN against every other model on the test snapshots: per model,
// the p-value of each seed and the seeds in which SDGNN is significantly
// lower or higher at 5 %. Nothing when no run holds the tests.
func (t *Table) dmMarkdown(w io.Writer) error {
	runs := t.runsWith(func(r Run) bool { return len(r.DM) > 0 })
	if len(runs) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s against each model on the test snapshots, seed by seed: Diebold–Mariano tests of the per-snapshot MAE "+
		"(EWC variance, fixed-smoothing t), the p-value of each seed (seeds %s), and the seeds in which %s is significantly lower or higher at 5 %%\n\n",
		SDGNN, seedList(runs), SDGNN)
	fmt.Fprintf(w, "| %s − | mean per-snapshot MAE difference | p per seed | lower / higher at 5 %% |\n|---|---:|---|---:|\n", SDGNN)
	for _, m := range Models {
		if m == SDGNN {
			continue
		}
		var diffs []float64
		ps := ""
		lower, higher := 0, 0
		for i, r := range runs {
			d := r.DM[m]
			diffs = append(diffs, d.Mean)
			if i > 0 {
				ps += ", "
			}
			ps += fmt.Sprintf("%.2g", d.P)
			if d.P < 0.05 {
				if d.Stat < 0 {
					lower++
				} else {
					higher++
				}
			}
		}
		mean, std := meanStd(diffs)
		if _, err := fmt.Fprintf(w, "| %s | %s | %s | %d / %d of %d |\n", m, pm(4, mean, std), ps, lower, higher, len(runs)); err != nil {
			return err
		}
	}
	return nil
}

// runsWith returns the runs that hold a figure (has): tables written
// before a figure was recorded lack it, and merges mix them with later ones.
func (t *Table) runsWith(has func(Run) bool) []Run {
	var runs []Run
	for _, r := range t.Runs {
		if has(r) {
			runs = append(runs, r)
		}
	}
	return runs
}

// overSeeds says over which seeds a table of a figure only some runs hold
// is averaged: "mean ± std over seeds" where every run holds it, else the
// seeds that do, so that a merge does not pass a subset off as them all.
func (t *Table) overSeeds(has func(Run) bool) string {
	runs := t.runsWith(has)
	if len(runs) == len(t.Runs) {
		return "mean ± std over seeds"
	}
	return fmt.Sprintf("mean ± std over the %d of %d seeds that recorded them (seeds %s; the others' tables were written before)", len(runs), len(t.Runs), seedList(runs))
}

// seedList names the seeds of runs: "1, 2, 3".
func seedList(runs []Run) string {
	seeds := make([]string, len(runs))
	for i, r := range runs {
		seeds[i] = fmt.Sprint(r.Seed)
	}
	return strings.Join(seeds, ", ")
}
