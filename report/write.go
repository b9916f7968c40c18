package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/figure"
	"github.com/pemsforecast/sdgnn/sdgnn"
)

var nan = math.NaN()

// Files written by Document.Write, relative to its directory.
const (
	FileMetrics        = "metrics.json"
	FileMarkdown       = "report.md"
	FileHTML           = "report.html"
	FilePredictions    = "predictions.arrow"
	FileParquet        = "predictions.parquet"
	DirFigures         = "figures"
	figureW, figureH   = 6 * vg.Inch, 4 * vg.Inch
	fieldW, fieldH     = 7 * vg.Inch, 7 * vg.Inch
	reportTitleDefault = "Forecast report"
)

// Figure is one figure of the report: where its files are, or why it was
// not drawn.
type Figure struct {
	Name    string   `json:"name"`
	Title   string   `json:"title"`
	Caption string   `json:"caption"`
	Files   []string `json:"files,omitempty"`   // PNG then SVG, relative to the report directory
	Skipped string   `json:"skipped,omitempty"` // why it was not drawn

	png []byte
}

// Write writes the report into dir (created if needed): metrics.json,
// report.md, report.html, predictions.arrow, predictions.parquet and
// figures/*.png and *.svg. It fills d.Figures.
func (d *Document) Write(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, DirFigures), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := d.writeArrow(filepath.Join(dir, FilePredictions)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := d.writeParquet(filepath.Join(dir, FileParquet)); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if err := d.drawFigures(dir); err != nil {
		return err
	}
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return fmt.Errorf("report: encode metrics: %w", err)
	}
	if err := writeBytes(filepath.Join(dir, FileMetrics), append(js, '\n')); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var md bytes.Buffer
	if err := d.Markdown(&md); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, FileMarkdown), md.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	var h bytes.Buffer
	if err := d.HTML(&h); err != nil {
		return err
	}
	if err := writeBytes(filepath.Join(dir, FileHTML), h.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// drawFigures draws every figure it has the numbers for into dir/figures.
func (d *Document) drawFigures(dir string) error {
	d.Figures = nil
	styles := d.styles()
	// leftOut names what a figure's make left out for having no finite
	// value (a model whose forecasts are NaN somewhere in every chunk, a
	// MAPE over no truth above the floor): the figure package refuses a
	// series with nothing to draw, and one such model must not stop the
	// report.
	var leftOut []string
	add := func(name, title, caption string, w, h vg.Length, make func() (*plot.Plot, error), skip string) error {
		f := Figure{Name: name, Title: title, Caption: caption}
		if skip != "" {
			f.Skipped = skip
			d.Figures = append(d.Figures, f)
			return nil
		}
		leftOut = nil
		p, err := make()
		var none noFinite
		if errors.As(err, &none) {
			f.Skipped = string(none)
			d.Figures = append(d.Figures, f)
			return nil
		}
		if err != nil {
			return fmt.Errorf("report: figure %s: %w", name, err)
		}
		if len(leftOut) > 0 {
			f.Caption += fmt.Sprintf(" Not drawn, having no finite value: %s.", strings.Join(leftOut, ", "))
		}
		paths, err := figure.Save(p, filepath.Join(dir, DirFigures), name, w, h)
		if err != nil {
			return fmt.Errorf("report: figure %s: %w", name, err)
		}
		for _, p := range paths {
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return fmt.Errorf("report: figure %s: %w", name, err)
			}
			f.Files = append(f.Files, filepath.ToSlash(rel))
		}
		if f.png, err = os.ReadFile(paths[0]); err != nil {
			return fmt.Errorf("report: figure %s: %w", name, err)
		}
		d.Figures = append(d.Figures, f)
		return nil
	}

	// Staleness.
	err := add("staleness", "Model staleness",
		fmt.Sprintf("MAE of each chronological %s of the %s split (its readings pooled), with the standard deviation of its snapshots' MAEs as the shaded band about it, one line per model: %s", chunkName(d), d.Part, stalenessMeaning(d)),
		figureW, figureH, func() (*plot.Plot, error) {
			var lines []figure.Line
			for _, m := range d.Models {
				l := figure.Line{Name: m.Name}
				for k, c := range m.Report.Chunks {
					y, e := c.MAE, m.Report.ChunkMAEStd[k]
					if c.Count == 0 { // no reading to score: no point, rather than a perfect 0
						y, e = nan, nan
					}
					l.X = append(l.X, float64(k+1))
					l.Y = append(l.Y, y)
					l.Err = append(l.Err, e)
				}
				if !slices.ContainsFunc(l.Y, isFinite) {
					leftOut = append(leftOut, m.Name)
					continue
				}
				lines = append(lines, l)
			}
			if len(lines) == 0 {
				return nil, noFinite("no model has a finite MAE in any chunk")
			}
			p, err := figure.Staleness(lines, fmt.Sprintf("chronological %s of the %s split", chunkName(d), d.Part), styles)
			if err == nil {
				p.Y.Label.Text = d.maeLabel()
			}
			return p, err
		}, "")
	if err != nil {
		return err
	}

	// MAE against outage length.
	skip := ""
	if d.Outage == "" {
		skip = "needs a scenario of simulated outages (-outage)"
	}
	err = add("outage-length", "MAE against outage length",
		fmt.Sprintf("MAE of the forecasts of the sensors silenced by the outage scenario %s, against the number of their last readings silenced (%d: the whole window), one line per model, through each model's batched path; at 0, the model's MAE on the forecasts whose inputs were complete. The truths are kept: a silenced sensor is forecast as if it had fallen silent.", d.Outage, d.window),
		figureW, figureH, func() (*plot.Plot, error) {
			var lines []figure.Line
			for _, m := range d.Models {
				if len(m.Outages) == 0 {
					continue
				}
				l := figure.Line{Name: m.Name}
				if c := m.Report.Completeness; c != nil && len(c.Own) > 0 && c.Own[0].Metrics.Count > 0 {
					l.X, l.Y = append(l.X, 0), append(l.Y, c.Own[0].Metrics.MAE)
				}
				for _, o := range m.Outages {
					y := nan
					if s := o.Breakdown.Silenced; s != nil && s.Count > 0 {
						y = s.MAE
					}
					l.X, l.Y = append(l.X, float64(o.Length)), append(l.Y, y)
				}
				if !slices.ContainsFunc(l.Y, isFinite) {
					leftOut = append(leftOut, m.Name)
					continue
				}
				lines = append(lines, l)
			}
			if len(lines) == 0 {
				return nil, noFinite("no model has a finite MAE under the outages")
			}
			p, err := figure.OutageLength(lines, "MAE of the silenced sensors"+unitSuffix(d.unit()), styles)
			return p, err
		}, skip)
	if err != nil {
		return err
	}

	// MAPE against receptive field.
	err = add("mape-receptive", "MAPE against receptive-field size",
		fmt.Sprintf("MAPE (%%) on the %s split against the mean number of nodes one forecast reads. SDGNN points are labelled with their budget.", d.Part),
		figureW, figureH, func() (*plot.Plot, error) {
			var pts []figure.Point
			for _, s := range d.Sweep {
				if !isFinite(s.Receptive) || !isFinite(s.Metrics.MAPE) {
					continue
				}
				p := figure.Point{Series: s.Series, X: s.Receptive, Y: s.Metrics.MAPE}
				if s.Budget > 0 && s.Model == SDGNN {
					p.Label = fmt.Sprint(s.Budget)
				}
				pts = append(pts, p)
			}
			for _, s := range d.Sweep {
				if !slices.ContainsFunc(pts, func(p figure.Point) bool { return p.Series == s.Series }) && !slices.Contains(leftOut, s.Series) {
					leftOut = append(leftOut, s.Series)
				}
			}
			if len(pts) == 0 {
				return nil, noFinite("no model has a finite MAPE")
			}
			return figure.MAPEReceptive(pts, styles)
		}, "")
	if err != nil {
		return err
	}

	// Per-node MAE reduction.
	skip = ""
	if len(d.Reductions) == 0 {
		skip = "needs the GRU-GCN teacher (-teacher) and the GRU baseline (-gru)"
	}
	err = add("node-reduction", "Per-node MAE reduction relative to GRU",
		"Each point is a sensor: its MAE reduction (% of the GRU's MAE"+d.pooledNote()+") under SDGNN (x) and under the GRU-GCN teacher (y). Points on y = x: SDGNN keeps all of the teacher's gain over the graph-free GRU.",
		figureW, figureW, func() (*plot.Plot, error) {
			x := make([]float64, len(d.Reductions))
			y := make([]float64, len(d.Reductions))
			finite := false
			for i, r := range d.Reductions {
				x[i], y[i] = r.SDGNN, r.GRUGCN
				finite = finite || isFinite(r.SDGNN) && isFinite(r.GRUGCN)
			}
			if !finite {
				return nil, noFinite("no sensor has a finite reduction under both models")
			}
			return figure.NodeReduction(x, y, SDGNN, GRUGCN)
		}, skip)
	if err != nil {
		return err
	}

	// Approximation error over checkpoints.
	skip = ""
	if len(d.Checkpoints) == 0 {
		skip = "the bundle records no distillation rounds"
	}
	// Bundles written before Round.MSE was recorded have only NR.
	useNR := slices.ContainsFunc(d.Checkpoints, func(r sdgnn.Round) bool { return r.MSE == 0 })
	errName := "validation MSE between Ẑ and Z"
	if useNR {
		errName = "validation ‖Ẑ−Z‖²/‖Z‖²"
	}
	caption := "One point per distillation round (Phase Θ then validation): the student's embedding approximation error against its validation MAPE; the round kept is marked."
	if d.CheckpointsMAPEFloor != d.MAPEFloor {
		caption += fmt.Sprintf(" This MAPE is the bundle's, as distilled (%s), not the report's (%s).", floorPhrase(d.CheckpointsMAPEFloor), floorPhrase(d.MAPEFloor))
	}
	err = add("approx-error", "Embedding approximation error against MAPE", caption,
		figureW, figureH, func() (*plot.Plot, error) {
			var cps []figure.Checkpoint
			for _, r := range d.Checkpoints {
				e := r.MSE
				if useNR {
					e = r.NR
				}
				cps = append(cps, figure.Checkpoint{Epoch: r.Epoch, Budget: r.Budget, ApproxErr: e, MAPE: r.Val.MAPE, Best: r.Best})
			}
			if !slices.ContainsFunc(cps, func(c figure.Checkpoint) bool { return isFinite(c.ApproxErr) && isFinite(c.MAPE) }) {
				return nil, noFinite("no distillation round has a finite approximation error and validation MAPE")
			}
			return figure.ApproxError(cps, errName)
		}, skip)
	if err != nil {
		return err
	}

	// Receptive field of a sensor.
	err = add("receptive-field", fmt.Sprintf("Receptive field of sensor %s", d.sensorName(d.Field.Sensor)),
		fmt.Sprintf("Sensor %s in the centre, its %d-hop neighbourhood on rings by hop distance, road edges in grey; SDGNN's selected receptive nodes filled, area ∝ θ.", d.sensorName(d.Field.Sensor), d.Field.Hops),
		fieldW, fieldH, func() (*plot.Plot, error) {
			f := figure.Field{Center: d.Field.Sensor, Hop: map[int]int{}, Theta: map[int]float64{}, Names: d.SensorIDs}
			for v, h := range d.Field.Hop {
				if h >= 0 && h <= d.Field.Hops {
					f.Hop[v] = h
				}
			}
			for _, e := range d.Field.Edges {
				_, a := f.Hop[e[0]]
				_, b := f.Hop[e[1]]
				if a && b {
					f.Edges = append(f.Edges, e)
				}
			}
			for _, s := range d.Field.Selected {
				f.Theta[s.Node] = s.Theta
			}
			return figure.ReceptiveField(f)
		}, "")
	if err != nil {
		return err
	}
	if err := d.mapFigures(add); err != nil {
		return err
	}

	// ECDFs.
	for _, kind := range []string{"sizes", "weights"} {
		title, xl := "ECDF of receptive-set sizes", "receptive nodes per sensor"
		caption := "Empirical CDF over sensors of the number of receptive nodes."
		if kind == "weights" {
			title, xl = "ECDF of row-normalised θ", "θ_zk / Σ_k θ_zk"
			caption = "Empirical CDF of each receptive node's share of its sensor's total weight."
		}
		err = add("ecdf-"+kind, title, caption, figureW, figureH, func() (*plot.Plot, error) {
			var ss []figure.Sample
			for _, dist := range d.Distributions {
				v := dist.Sizes
				if kind == "weights" {
					v = dist.Weights
				}
				if !slices.ContainsFunc(v, isFinite) {
					leftOut = append(leftOut, dist.Model)
					continue
				}
				ss = append(ss, figure.Sample{Name: dist.Model, Values: v})
			}
			if len(ss) == 0 {
				return nil, noFinite("no model has a finite value to draw")
			}
			return figure.ECDF(title, xl, ss, styles)
		}, "")
		if err != nil {
			return err
		}
	}
	return nil
}

// styles returns the style of each model and series of the report's
// figures, so that a model looks the same in all of them: the models in
// the order of the summary, a sweep point that scores one of them in that
// model's style, then the other series of the sweep and the models of the
// distributions.
func (d *Document) styles() *figure.Styles {
	s := figure.NewStyles()
	for _, m := range d.Models {
		s.Style(m.Name)
	}
	for _, p := range d.Sweep {
		if p.of != "" {
			s.Alias(p.Series, p.of)
		} else {
			s.Style(p.Series)
		}
	}
	for _, dist := range d.Distributions {
		s.Style(dist.Model)
	}
	return s
}

// noFinite is returned by a figure's make when it has nothing finite to
// draw: the figure is left out, with the message as why.
type noFinite string

func (e noFinite) Error() string { return string(e) }

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// stalenessMeaning says what the staleness figure's trend means for d's
// part: staleness only where the part comes after the training data (a
// time split's validation or test part).
func stalenessMeaning(d *Document) string {
	switch {
	case d.Part == "train": // of any split: the data trained on
		return "the models were trained on this part, so a trend here is not staleness."
	case d.Deal.Every > 0:
		return "the part's snapshots are dealt among the training ones over the whole series, so a trend here follows the series, not staleness."
	case d.Scored != nil:
		return "the part's sensors are scored over the period the other sensors were trained on, so a trend here follows the series, not staleness."
	}
	return "a model trained on older data degrades as the split goes on."
}

func chunkName(d *Document) string {
	if len(d.Models) == 0 {
		return "chunk"
	}
	if c := len(d.Models[0].Report.Chunks); c != 10 {
		return fmt.Sprintf("1/%d", c)
	}
	return "tenth"
}

// Markdown writes the report as Markdown, with figures linked by path.
func (d *Document) Markdown(w io.Writer) error {
	var b strings.Builder
	d.text(&b, func(f Figure) string {
		if len(f.Files) == 0 {
			return ""
		}
		return fmt.Sprintf("![%s](%s)\n\n(%s)\n", f.Title, f.Files[0], strings.Join(f.Files, ", "))
	})
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write markdown: %w", err)
	}
	return nil
}

// text writes the Markdown body; img renders a drawn figure.
func (d *Document) text(b *strings.Builder, img func(Figure) string) {
	fmt.Fprintf(b, "# %s: %s on %s, %s split\n\n", reportTitleDefault, oneLine(d.Bundle), oneLine(d.Dataset), oneLine(d.Part))
	dealt := ""
	if d.Deal.Every > 0 {
		dealt = fmt.Sprintf(" at positions %d–%d of every %d", d.Deal.Lo, d.Deal.Hi-1, d.Deal.Every)
	}
	fmt.Fprintf(b, "Snapshots %d–%d%s (%d), %d sensors, channels %s. Created %s", d.Range.Start, d.Range.End-1, dealt, d.Snapshots, d.Nodes, oneLine(strings.Join(d.Channels, ", ")), oneLine(d.Created))
	if d.Host != "" {
		fmt.Fprintf(b, " on %s", oneLine(d.Host))
	}
	b.WriteString(".\n\n")
	if d.Scored != nil {
		fmt.Fprintf(b, "The bundle's split divides sensors: every sensor is replayed, %d of the %d are scored (the %s part's).\n\n", len(d.Scored), d.Nodes, oneLine(d.Part))
	}
	if len(d.SensorIDs) > 1 {
		mapped := ""
		if len(d.Locations) == d.Nodes {
			mapped = " and drawn at their coordinates"
		}
		fmt.Fprintf(b, "Sensors are named by their IDs (%s, %s, …)%s.\n\n", cell(d.SensorIDs[0]), cell(d.SensorIDs[1]), mapped)
	}
	if d.Command != "" {
		fmt.Fprintf(b, "Command: `%s`\n\n", oneLine(d.Command))
	}
	b.WriteString("MAE and RMSE on the original scale")
	if u := d.unitNote(); u != "" {
		fmt.Fprintf(b, " (%s)", u)
	}
	b.WriteString(", masked: missing readings (0) are left out")
	if d.MAPEFloor > 0 {
		fmt.Fprintf(b, "; MAPE also leaves out truths below %g", d.MAPEFloor)
	}
	b.WriteString(". Paper MAPE is the SDGNN paper's metric (min-max scaled by the training data, unmasked, |p−y|/(|y|+1)); it is not comparable with MAPE.\n\n")

	u := unitSuffix(d.unit())
	fmt.Fprintf(b, "## Summary\n\n| model | predictions | mean receptive field | MAE%s | RMSE%s | MAPE %% | paper MAPE %% |\n|---|---|---:|---:|---:|---:|---:|\n", u, u)
	for _, m := range d.Models {
		o := m.Report.Overall
		fmt.Fprintf(b, "| %s | %s | %.2f | %.4f | %.4f | %.3f | %.3f |\n", cell(m.Name), cell(m.Source), m.Receptive, o.MAE, o.RMSE, o.MAPE, m.Paper.MAPE)
	}
	if len(d.Channels) > 1 {
		b.WriteString("\n### Per channel\n\n| model | channel | MAE | RMSE | MAPE % |\n|---|---|---:|---:|---:|\n")
		for _, m := range d.Models {
			for c, pc := range m.Report.PerChannel {
				name := d.Channels[c]
				if c < len(d.Units) && d.unit() == "" {
					name += " (" + d.Units[c] + ")"
				}
				fmt.Fprintf(b, "| %s | %s | %.4f | %.4f | %.3f |\n", cell(m.Name), cell(name), pc.MAE, pc.RMSE, pc.MAPE)
			}
		}
	}
	if len(d.Models) > 0 && len(d.Models[0].Report.Chunks) > 0 {
		fmt.Fprintf(b, "\n### Staleness: %s per chronological chunk\n\nEach chunk's MAE pools its readings; ± is the standard deviation of its snapshots' MAEs; — marks a chunk without a reading to score.\n\n| model |", d.maeLabel())
		for k := range d.Models[0].Report.Chunks {
			fmt.Fprintf(b, " %d |", k+1)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(d.Models[0].Report.Chunks)) + "\n")
		for _, m := range d.Models {
			fmt.Fprintf(b, "| %s |", cell(m.Name))
			for k, c := range m.Report.Chunks {
				if c.Count == 0 {
					b.WriteString(" — |")
					continue
				}
				fmt.Fprintf(b, " %.4f ± %.4f |", c.MAE, m.Report.ChunkMAEStd[k])
			}
			b.WriteString("\n")
		}
	}
	d.completenessText(b, u)
	if len(d.Sweep) > 0 {
		fmt.Fprintf(b, "\n### MAPE against receptive field\n\n| series | budget | mean receptive field | MAE%s | MAPE %% | seconds |\n|---|---:|---:|---:|---:|---:|\n", u)
		for _, s := range d.Sweep {
			bud := ""
			if s.Budget > 0 {
				bud = fmt.Sprint(s.Budget)
			}
			fmt.Fprintf(b, "| %s | %s | %.2f | %.4f | %.3f | %.1f |\n", cell(s.Series), bud, s.Receptive, s.Metrics.MAE, s.Metrics.MAPE, s.Seconds)
		}
	}
	if len(d.Reductions) > 0 {
		var better, total int
		var sx, sy float64
		for _, r := range d.Reductions {
			total++
			sx += r.SDGNN
			sy += r.GRUGCN
			if r.SDGNN >= r.GRUGCN {
				better++
			}
		}
		fmt.Fprintf(b, "\nPer-node MAE reduction relative to GRU%s: SDGNN %.2f%%, GRU-GCN %.2f%% on average over %d sensors; SDGNN at least matches the teacher's reduction on %d of them.\n",
			d.pooledNote(), sx/float64(total), sy/float64(total), total, better)
	}
	if f := d.Field; f != nil {
		fmt.Fprintf(b, "\n### Receptive field of sensor %s\n\n| node | θ | hops from sensor %s |\n|---:|---:|---:|\n", cell(d.sensorName(f.Sensor)), cell(d.sensorName(f.Sensor)))
		sel := slices.Clone(f.Selected)
		slices.SortFunc(sel, func(a, b Selected) int {
			switch {
			case a.Theta > b.Theta:
				return -1
			case a.Theta < b.Theta:
				return 1
			}
			return a.Node - b.Node
		})
		for _, s := range sel {
			fmt.Fprintf(b, "| %s | %.4f | %d |\n", cell(d.sensorName(s.Node)), s.Theta, s.Hop)
		}
		within := 0
		for _, h := range f.Hop {
			if h >= 0 && h <= f.Hops {
				within++
			}
		}
		fmt.Fprintf(b, "\nIts %d-hop neighbourhood (what the GRU-GCN teacher reads) has %d nodes.\n", f.Hops, within)
	}
	for _, dist := range d.Distributions {
		fmt.Fprintf(b, "\n%s: receptive-set size mean %.2f, max %.0f; median row-normalised weight %.3f.\n",
			oneLine(dist.Model), meanOf(dist.Sizes), slices.Max(dist.Sizes), medianOf(dist.Weights))
	}
	b.WriteString("\n## Figures\n\n")
	for _, f := range d.Figures {
		fmt.Fprintf(b, "### %s\n\n%s\n\n", oneLine(f.Title), oneLine(f.Caption))
		if f.Skipped != "" {
			fmt.Fprintf(b, "Not drawn: %s.\n\n", oneLine(f.Skipped))
			continue
		}
		b.WriteString(img(f))
		b.WriteString("\n")
	}
	b.WriteString("## Files\n\n")
	fmt.Fprintf(b, "- `%s`: every number above, as JSON.\n- `%s` (Arrow IPC) and `%s` (Parquet): one row per snapshot and sensor with the truth, each model's prediction and error (null where the reading is missing or, for a split by sensors, the sensor is not scored); a channel's columns carry its unit, where known, as their `unit` metadata.\n",
		FileMetrics, FilePredictions, FileParquet)
	if len(d.Notes) > 0 {
		b.WriteString("\n## Left out\n\n")
		for _, n := range d.Notes {
			fmt.Fprintf(b, "- %s\n", oneLine(n))
		}
	}
}

// completenessText writes the models' MAE by the completeness of their
// inputs in the data as they are, then, under an outage scenario, the MAE
// of the silenced sensors by the readings silenced; u is the unit suffix.
func (d *Document) completenessText(b *strings.Builder, u string) {
	var classes []evaluation.Class
	for _, m := range d.Models {
		if c := m.Report.Completeness; c != nil {
			classes = c.Own
			break
		}
	}
	if len(classes) > 0 {
		fmt.Fprintf(b, "\n### Completeness of the inputs\n\nMAE%s by the missing readings of the sensor's own window (of %d) in the data as they are; in brackets, the MAE where the other sensors the model reads were complete, then incomplete (for a model that reads other sensors).\n\n| model |", u, d.window)
		for _, c := range classes {
			fmt.Fprintf(b, " %s |", cell(c.Own))
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|", len(classes)) + "\n")
		for _, m := range d.Models {
			c := m.Report.Completeness
			if c == nil {
				continue
			}
			fmt.Fprintf(b, "| %s |", cell(m.Name))
			for k, cl := range c.Own {
				fmt.Fprintf(b, " %s", maeCount(cl.Metrics))
				if 2*k+1 < len(c.Joint) {
					fmt.Fprintf(b, " (%s; %s)", maeOf(c.Joint[2*k].Metrics), maeOf(c.Joint[2*k+1].Metrics))
				}
				b.WriteString(" |")
			}
			b.WriteString("\n")
		}
	}
	if d.Outage == "" {
		return
	}
	var lengths []int
	for _, m := range d.Models {
		if len(m.Outages) > 0 {
			for _, o := range m.Outages {
				lengths = append(lengths, o.Length)
			}
			break
		}
	}
	fmt.Fprintf(b, "\n### Simulated outages\n\nScenario %s: in every snapshot the same sensors silenced for their last L readings (%d: the whole window), their truths kept. MAE%s of the silenced sensors' forecasts (each model's batched path); the last column is the other sensors' at the longest outage.\n\n| model | inputs complete |", oneLine(d.Outage), d.window, u)
	for _, l := range lengths {
		fmt.Fprintf(b, " %d |", l)
	}
	b.WriteString(" others |\n|---|---:|" + strings.Repeat("---:|", len(lengths)+1) + "\n")
	for _, m := range d.Models {
		if len(m.Outages) == 0 {
			continue
		}
		complete := nan
		if c := m.Report.Completeness; c != nil && len(c.Own) > 0 {
			complete = c.Own[0].Metrics.MAE
		}
		fmt.Fprintf(b, "| %s | %.4f |", cell(m.Name), complete)
		for _, o := range m.Outages {
			fmt.Fprintf(b, " %s |", maeOf(derefMetrics(o.Breakdown.Silenced)))
		}
		fmt.Fprintf(b, " %s |\n", maeOf(derefMetrics(m.Outages[len(m.Outages)-1].Breakdown.Unsilenced)))
	}
}

// maeOf formats m's MAE, — where m counts no pair.
func maeOf(m evaluation.Metrics) string {
	if m.Count == 0 {
		return "—"
	}
	return fmt.Sprintf("%.4f", m.MAE)
}

// maeCount formats m's MAE and its number of pairs.
func maeCount(m evaluation.Metrics) string {
	if m.Count == 0 {
		return "— (0)"
	}
	return fmt.Sprintf("%.4f (n %d)", m.MAE, m.Count)
}

// derefMetrics returns *m, the zero Metrics for nil.
func derefMetrics(m *evaluation.Metrics) evaluation.Metrics {
	if m == nil {
		return evaluation.Metrics{}
	}
	return *m
}

// unit returns the unit of every channel's readings when they share one,
// and "" when they differ or are not known.
func (d *Document) unit() string {
	return evaluation.Report{ChannelUnits: d.Units}.Unit()
}

// unitNote says what units MAE and RMSE are in: "km/h", or each channel's
// ("flow: veh/5 min, …; pooled in the overall, per-chunk and per-node
// figures");
// "" when not known.
func (d *Document) unitNote() string {
	if u := d.unit(); u != "" || len(d.Units) == 0 {
		return u
	}
	var parts []string
	for c, u := range d.Units {
		if c < len(d.Channels) {
			parts = append(parts, d.Channels[c]+": "+u)
		}
	}
	return strings.Join(parts, ", ") + "; pooled in the overall, per-chunk and per-node figures"
}

// pooledNote is ", its channels pooled" where the channels' units differ
// (a sensor's MAE then mostly its flow's, on PeMS), "" otherwise.
func (d *Document) pooledNote() string {
	if d.unit() == "" && len(d.Units) > 1 {
		return ", its channels pooled"
	}
	return ""
}

// maeLabel names the pooled MAE with its unit: "MAE (km/h)", "MAE
// (channels' units pooled)" when the channels' units differ, or "MAE".
func (d *Document) maeLabel() string {
	if u := d.unit(); u != "" {
		return "MAE (" + u + ")"
	}
	if len(d.Units) > 1 {
		return "MAE (channels' units pooled)"
	}
	return "MAE"
}

// floorPhrase says what a MAPE floor leaves out of MAPE.
func floorPhrase(floor float64) string {
	if floor > 0 {
		return fmt.Sprintf("truths below %g left out", floor)
	}
	return "every truth counted"
}

// unitSuffix returns " (unit)", or "" for no unit.
func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " (" + unit + ")"
}

// oneLine returns s with its line breaks as spaces: text from the data (a
// path, the bundle's dataset or channel names) must not start a line of
// the Markdown, where the HTML rendering would take a line starting with
// "<" as markup.
func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// cell returns s as the text of a Markdown table cell: on one line, its
// "|" escaped as "\|" so that it does not end the cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

func meanOf(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(max(1, len(v)))
}

// medianOf returns the median of v: the middle value, or the mean of the
// two middle values when there are an even number; NaN for none.
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return nan
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if h := len(s) / 2; len(s)%2 == 0 {
		return (s[h-1] + s[h]) / 2
	}
	return s[len(s)/2]
}

var htmlPage = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.92em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}
code{background:#f4f4f4;padding:1px 4px}
figure{margin:1.5em 0} figcaption{color:#555;font-size:0.9em}
img{max-width:100%}
</style></head><body>
{{.Body}}
</body></html>
`))

// HTML writes the report as one self-contained HTML page: the figures are
// embedded as PNG data URIs.
func (d *Document) HTML(w io.Writer) error {
	var b strings.Builder
	d.text(&b, func(f Figure) string {
		return fmt.Sprintf("<figure><img alt=\"%s\" src=\"data:image/png;base64,%s\"><figcaption>%s</figcaption></figure>\n",
			template.HTMLEscapeString(f.Title), base64.StdEncoding.EncodeToString(f.png), template.HTMLEscapeString(strings.Join(f.Files, ", ")))
	})
	body := markdownToHTML(b.String())
	err := htmlPage.Execute(w, struct {
		Title string
		Body  template.HTML
	}{fmt.Sprintf("%s: %s on %s", reportTitleDefault, d.Bundle, d.Dataset), template.HTML(body)})
	if err != nil {
		return fmt.Errorf("report: write html: %w", err)
	}
	return nil
}

// markdownToHTML renders the small Markdown subset text writes: headings,
// pipe tables, list items, inline code and paragraphs; lines starting with
// "<" pass through as HTML.
func markdownToHTML(md string) string {
	var out strings.Builder
	lines := strings.Split(md, "\n")
	inTable, inList := false, false
	closeBlocks := func() {
		if inTable {
			out.WriteString("</table>\n")
			inTable = false
		}
		if inList {
			out.WriteString("</ul>\n")
			inList = false
		}
	}
	header := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "|"):
			cells := splitCells(l)
			if strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
				continue
			}
			if !inTable {
				closeBlocks()
				out.WriteString("<table>\n")
				inTable, header = true, true
			}
			tag := "td"
			if header {
				tag = "th"
				header = false
			}
			out.WriteString("<tr>")
			for _, c := range cells {
				fmt.Fprintf(&out, "<%s>%s</%s>", tag, inline(strings.TrimSpace(c)), tag)
			}
			out.WriteString("</tr>\n")
		case strings.HasPrefix(l, "- "):
			if !inList {
				closeBlocks()
				out.WriteString("<ul>\n")
				inList = true
			}
			fmt.Fprintf(&out, "<li>%s</li>\n", inline(l[2:]))
		case strings.HasPrefix(l, "#"):
			closeBlocks()
			n := len(l) - len(strings.TrimLeft(l, "#"))
			fmt.Fprintf(&out, "<h%d>%s</h%d>\n", n, inline(strings.TrimSpace(l[n:])), n)
		case strings.HasPrefix(l, "<"):
			closeBlocks()
			out.WriteString(l + "\n")
		case strings.TrimSpace(l) == "":
			closeBlocks()
		default:
			closeBlocks()
			fmt.Fprintf(&out, "<p>%s</p>\n", inline(l))
		}
	}
	closeBlocks()
	return out.String()
}

// splitCells returns the cells of the table row l: split at every "|" but
// an escaped one ("\|", which becomes "|"), the outer ones dropped.
func splitCells(l string) []string {
	l = strings.TrimPrefix(l, "|")
	if strings.HasSuffix(l, "|") && !strings.HasSuffix(l, `\|`) {
		l = l[:len(l)-1]
	}
	var cells []string
	var c strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			c.WriteByte('|')
			i++
		case l[i] == '|':
			cells = append(cells, c.String())
			c.Reset()
		default:
			c.WriteByte(l[i])
		}
	}
	return append(cells, c.String())
}

// inline escapes s and renders `code` spans.
func inline(s string) string {
	parts := strings.Split(s, "`")
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 1 && i < len(parts)-1 {
			b.WriteString("<code>" + template.HTMLEscapeString(p) + "</code>")
			continue
		}
		if i%2 == 1 {
			b.WriteString("`")
		}
		b.WriteString(template.HTMLEscapeString(p))
	}
	return b.String()
}

// writeBytes writes data to path atomically, as writeFile does.
func writeBytes(path string, data []byte) error {
	return writeFile(path, func(w io.WriteSeeker) error {
		_, err := w.Write(data)
		return err
	})
}
