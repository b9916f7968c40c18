package reproduce

import (
	"fmt"
	"io"
	"strings"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// OutageScore is a model's test scores in one pass of the outage scenario
// (Config.Outage): the sensors it silences silenced for their last Length
// readings, the truths kept.
type OutageScore struct {
	Length  int                `json:"length"`
	Overall evaluation.Metrics `json:"overall"`
	// Breakdown holds the metrics of the silenced sensors and of the
	// others, and by the completeness of every forecast's inputs.
	Breakdown evaluation.Breakdown `json:"breakdown"`
}

// completeness returns the completeness breakdown of the test forecasts
// pred from the inputs of set (which may silence some), for a model whose
// forecast of node z reads the windows of receptive[z] (nil: its own
// only), marking the sensors silenced by o where it silences any.
func completeness(set *snapshot.Set, test snapshot.Part, o snapshot.Outage, pred, truth []float64, receptive [][]int, floor float64) (evaluation.Breakdown, error) {
	g, err := set.Completeness(test, o, receptive)
	if err != nil {
		return evaluation.Breakdown{}, err
	}
	return evaluation.Stratify(pred, truth, set.Nodes, set.Channels, g, floor)
}

// outageScores scores a model under every length of the scenario o:
// predict returns its test forecasts and truths from the inputs of a set
// silenced for that length.
func outageScores(set *snapshot.Set, test snapshot.Part, o snapshot.Outage, receptive [][]int, floor float64, predict func(set *snapshot.Set, length int) (pred, truth []float64, err error)) ([]OutageScore, error) {
	if !o.Enabled() {
		return nil, nil
	}
	var out []OutageScore
	for _, l := range o.Lengths {
		sil := set.Silenced(o.For(l))
		pred, truth, err := predict(sil, l)
		if err != nil {
			return nil, fmt.Errorf("outage of %d readings: %w", l, err)
		}
		b, err := completeness(sil, test, o, pred, truth, receptive, floor)
		if err != nil {
			return nil, fmt.Errorf("outage of %d readings: %w", l, err)
		}
		out = append(out, OutageScore{Length: l, Overall: metricsFloor(pred, truth, floor), Breakdown: b})
	}
	return out, nil
}

// metricsFloor returns the metrics of pred against truth with truths
// below floor left out of MAPE.
func metricsFloor(pred, truth []float64, floor float64) evaluation.Metrics {
	acc := evaluation.Accumulator{MAPEFloor: floor}
	for i, p := range pred {
		acc.Add(p, truth[i])
	}
	return acc.Metrics()
}

// outageOf returns the scores of model name in run r under a silenced
// length, and whether the run has them.
func outageOf(r Run, name string, length int) (OutageScore, bool) {
	for _, s := range r.Outages[name] {
		if s.Length == length {
			return s, true
		}
	}
	return OutageScore{}, false
}

// outageLengths returns the silenced lengths the runs were scored under,
// in the order of the first run that has any.
func (t *Table) outageLengths() []int {
	for _, r := range t.Runs {
		for _, m := range Models {
			if ss := r.Outages[m]; len(ss) > 0 {
				ls := make([]int, len(ss))
				for i, s := range ss {
					ls[i] = s.Length
				}
				return ls
			}
		}
	}
	return nil
}

// outageMarkdown writes, where the runs were scored under simulated
// outages, each model's MAE and MAPE of the silenced sensors by the number
// of readings silenced, beside its MAE on the data as they are and on the
// forecasts whose inputs were complete, mean ± std over the seeds.
func (t *Table) outageMarkdown(w io.Writer) error {
	ls := t.outageLengths()
	if len(ls) == 0 {
		return nil
	}
	window := t.Config.Window
	fmt.Fprintf(w, "\nSimulated outages (%s): in every test snapshot the same sensors silenced for their last L readings (%d: the whole window), their truths kept; the metrics of the silenced sensors' forecasts, %s.\n\n| readings silenced | metric |", t.Config.Outage, window,
		t.overSeeds(func(r Run) bool { return len(r.Outages) > 0 }))
	for _, m := range Models {
		fmt.Fprintf(w, " %s |", m)
	}
	fmt.Fprint(w, "\n|---|---|")
	for range Models {
		fmt.Fprint(w, "---:|")
	}
	row := func(label, metric string, prec int, f func(Run, string) (float64, bool)) {
		fmt.Fprintf(w, "\n| %s | %s |", label, metric)
		for _, m := range Models {
			fmt.Fprintf(w, " %s |", t.cell(prec, func(r Run) (float64, bool) { return f(r, m) }))
		}
	}
	mae := func(m evaluation.Metrics) float64 { return m.MAE }
	mape := func(m evaluation.Metrics) float64 { return m.MAPE }
	row("none (test data as they are)", "MAE", 4, func(r Run, m string) (float64, bool) {
		x, ok := r.Metrics[m]
		return x.MAE, ok
	})
	row("none, inputs complete", "MAE", 4, own(evaluation.OwnComplete, mae))
	for _, l := range ls {
		label := fmt.Sprint(l)
		if l >= window {
			label += " (whole window)"
		}
		for _, mt := range []struct {
			name string
			prec int
			f    func(evaluation.Metrics) float64
		}{{"MAE", 4, mae}, {"MAPE (%)", 2, mape}} {
			row(label, mt.name, mt.prec, func(r Run, m string) (float64, bool) {
				s, ok := outageOf(r, m, l)
				if !ok || s.Breakdown.Silenced == nil {
					return 0, false
				}
				return mt.f(*s.Breakdown.Silenced), true
			})
			label = ""
		}
	}
	row("other sensors, longest outage", "MAE", 4, func(r Run, m string) (float64, bool) {
		s, ok := outageOf(r, m, ls[len(ls)-1])
		if !ok || s.Breakdown.Unsilenced == nil {
			return 0, false
		}
		return s.Breakdown.Unsilenced.MAE, true
	})
	fmt.Fprintln(w)
	return t.mainWeightsMarkdown(w, ls)
}

// mainWeightsMarkdown writes, where SDGNN's bundles had silent weights,
// the silenced sensors' MAE of SDGNN with them and without them (its main
// weights only), mean ± std over seeds.
func (t *Table) mainWeightsMarkdown(w io.Writer, ls []int) error {
	has := false
	for _, r := range t.Runs {
		has = has || len(r.Outages[SDGNNMainWeights]) > 0
	}
	if !has {
		return nil
	}
	fmt.Fprintf(w, "\nSDGNN's silent weights (a second set of weights over each sensor's receptive nodes, for a sensor whose own window is empty, fitted to the teacher and tuned against the truth): the silenced sensors' MAE with them and with the main weights only.\n\n| readings silenced | %s | %s |\n|---|---:|---:|", SDGNN, SDGNNMainWeights)
	for _, l := range ls {
		fmt.Fprintf(w, "\n| %d |", l)
		for _, m := range []string{SDGNN, SDGNNMainWeights} {
			fmt.Fprintf(w, " %s |", t.cell(4, func(r Run) (float64, bool) {
				if s, ok := outageOf(r, m, l); ok && s.Breakdown.Silenced != nil {
					return s.Breakdown.Silenced.MAE, true
				}
				return 0, false
			}))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// own returns the figure pick of model m's test metrics in own-window
// class class of the data as they are, in run r, and whether r has it.
func own(class int, pick func(evaluation.Metrics) float64) func(r Run, m string) (float64, bool) {
	return func(r Run, m string) (float64, bool) {
		b, ok := r.Completeness[m]
		if !ok || class >= len(b.Own) || b.Own[class].Metrics.Count == 0 {
			return 0, false
		}
		return pick(b.Own[class].Metrics), true
	}
}

// completenessMarkdown writes each model's test MAE by the missing steps
// of the sensor's own window in the data as they are (their real gaps),
// mean ± std over the seeds, with the share of forecasts in each class.
func (t *Table) completenessMarkdown(w io.Writer) error {
	window := t.Config.Window
	var counts [4]int
	for _, r := range t.Runs {
		if b, ok := r.Completeness[GRUGCN]; ok && len(b.Own) == len(counts) {
			for c := range counts {
				counts[c] += b.Own[c].Metrics.Count
			}
			break
		}
	}
	total := counts[0] + counts[1] + counts[2] + counts[3]
	if total == 0 {
		return nil
	}
	over := t.overSeeds(func(r Run) bool { return len(r.Completeness) > 0 })
	fmt.Fprintf(w, "\nThe data's own gaps: test MAE by the missing readings of the sensor's own window (of %d), %s.\n\n| missing readings | forecasts |", window, over)
	for _, m := range Models {
		fmt.Fprintf(w, " %s |", m)
	}
	fmt.Fprint(w, "\n|---|---:|")
	for range Models {
		fmt.Fprint(w, "---:|")
	}
	for c := range counts {
		fmt.Fprintf(w, "\n| %s | %d (%.1f %%) |", evaluation.OwnClassName(c, window), counts[c], 100*float64(counts[c])/float64(total))
		mae := own(c, func(m evaluation.Metrics) float64 { return m.MAE })
		for _, m := range Models {
			fmt.Fprintf(w, " %s |", t.cell(4, func(r Run) (float64, bool) { return mae(r, m) }))
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// awareNote says how the models were made ready for missing readings,
// ", missing marks as inputs, …", or "" for the paper's protocol.
func (c Config) awareNote() string {
	var parts []string
	if c.MaskInput {
		parts = append(parts, "missing marks as inputs")
	}
	if c.Gate {
		parts = append(parts, "the GCN's skip gated")
	}
	if c.SDGNN.SilentWeights {
		parts = append(parts, "SDGNN with silent weights")
	}
	if o, err := snapshot.ParseOutage(c.TrainOutage); err == nil && o.Enabled() {
		parts = append(parts, fmt.Sprintf("trained under simulated outages (share %g, lengths %v, each seed its own draws)", o.Share, o.Lengths))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}
