// Package figure draws the figures of the analyst report with
// gonum.org/v1/plot.
//
// Every function takes plain data (curves, points, samples, a receptive
// field, sensors at their coordinates) and returns a *plot.Plot that the caller may adjust further,
// save with Save or embed with PNG. The package knows nothing about
// models or file formats other than the image output.
//
// The figures of several series (Staleness, MAPEReceptive, ECDF) style
// each series by its name from a Styles: pass one Styles to every figure
// of a report and a model has the same colour and glyph in all of them.
//
// Non-finite values (NaN, ±Inf) are skipped: a point with a non-finite
// coordinate is not drawn. A figure or series left with nothing finite to
// draw, empty input and mismatched lengths are errors naming the figure,
// the series and what is wrong.
//
// Output is deterministic: the same input gives the same SVG bytes.
package figure

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/pemsforecast/sdgnn/checkpoint"
)

// palette is the Okabe–Ito colour-blind safe palette without its yellow,
// which is too light on a white background. It is fixed here rather than
// taken from plotutil so that package-level changes elsewhere cannot alter
// the report's figures.
var palette = []color.Color{
	color.RGBA{R: 0x00, G: 0x72, B: 0xb2, A: 0xff}, // blue
	color.RGBA{R: 0xd5, G: 0x5e, B: 0x00, A: 0xff}, // vermillion
	color.RGBA{R: 0x00, G: 0x9e, B: 0x73, A: 0xff}, // bluish green
	color.RGBA{R: 0xe6, G: 0x9f, B: 0x00, A: 0xff}, // orange
	color.RGBA{R: 0xcc, G: 0x79, B: 0xa7, A: 0xff}, // reddish purple
	color.RGBA{R: 0x56, G: 0xb4, B: 0xe9, A: 0xff}, // sky blue
	color.RGBA{R: 0x00, G: 0x00, B: 0x00, A: 0xff}, // black
}

// shapes are the glyphs of successive series. Its length is prime to the
// palette's so that (colour, glyph) pairs repeat only after many series.
var shapes = []draw.GlyphDrawer{
	draw.CircleGlyph{},
	draw.BoxGlyph{},
	draw.TriangleGlyph{},
	draw.PyramidGlyph{},
	draw.CrossGlyph{},
}

var grey = color.Gray{Y: 0xa0}

// seriesColor returns the colour of the i'th series.
func seriesColor(i int) color.Color { return palette[i%len(palette)] }

// seriesShape returns the glyph of the i'th series.
func seriesShape(i int) draw.GlyphDrawer { return shapes[i%len(shapes)] }

// Style is how a series is drawn: the colour of its line, band and
// glyphs, and the shape of its glyphs.
type Style struct {
	Color color.Color
	Shape draw.GlyphDrawer
}

// styleAt returns the style of the i'th series.
func styleAt(i int) Style { return Style{Color: seriesColor(i), Shape: seriesShape(i)} }

// Styles gives each series name a style of its own, so that a model
// drawn in several figures looks the same in all of them: pass the same
// Styles to each. Names get the styles of the palette in the order they
// are first named, to NewStyles or to Style; two names share a style only
// through Alias, or after more names than there are (colour, glyph)
// pairs.
//
// A nil *Styles passed to a figure styles its series by their order in
// that figure alone. Styles is not safe for concurrent use.
type Styles struct {
	index map[string]int // name to position in the palette
	next  int            // position of the next name's style
}

// NewStyles returns Styles that gives names their styles in order: the
// first name the first style, and so on.
func NewStyles(names ...string) *Styles {
	s := &Styles{index: make(map[string]int)}
	for _, name := range names {
		s.Style(name)
	}
	return s
}

// Style returns the style of name, giving it the next style if it has
// none yet.
func (s *Styles) Style(name string) Style {
	return styleAt(s.indexOf(name))
}

// Alias gives name the style of of (giving of the next style if it has
// none yet), for a series that is a model under another name, such as
// "SDGNN (this bundle)" for "SDGNN". A name that has a style keeps it.
func (s *Styles) Alias(name, of string) {
	if _, ok := s.index[name]; ok {
		return
	}
	s.index[name] = s.indexOf(of)
}

// indexOf returns the position in the palette of name's style, giving
// name the next one if it has none yet.
func (s *Styles) indexOf(name string) int {
	if s.index == nil {
		s.index = make(map[string]int)
	}
	i, ok := s.index[name]
	if !ok {
		i = s.next
		s.index[name] = i
		s.next++
	}
	return i
}

// of returns the style of series name, the i'th of its figure: from s,
// or by position when s is nil.
func (s *Styles) of(i int, name string) Style {
	if s == nil {
		return styleAt(i)
	}
	return s.Style(name)
}

// translucent returns c with the given alpha, for shaded bands.
func translucent(c color.Color, alpha uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: alpha}
}

// finite reports whether all of v are neither NaN nor infinite.
func finite(v ...float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// newPlot returns a plot with the given title and axis labels and a light
// grid behind the data.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Title.Padding = vg.Points(4)
	p.Add(plotter.NewGrid())
	return p
}

// pad widens the data range of a by frac of its extent on each side,
// multiplicatively on a log scale, so that markers and step lines do not
// sit on the axis lines.
func pad(a *plot.Axis, frac float64) {
	if a.Min >= a.Max || !finite(a.Min, a.Max) {
		return // plot.Axis makes a degenerate range usable itself
	}
	if _, log := a.Scale.(plot.LogScale); log {
		lo, hi := math.Log10(a.Min), math.Log10(a.Max)
		d := (hi - lo) * frac
		a.Min, a.Max = math.Pow(10, lo-d), math.Pow(10, hi+d)
		return
	}
	d := (a.Max - a.Min) * frac
	a.Min, a.Max = a.Min-d, a.Max+d
}

// legendRoom raises the top of p's y axis so that a legend of n entries at
// the top of the plot sits above the data rather than over it, assuming
// a data area some 230 points high (a 4-inch figure).
func legendRoom(p *plot.Plot, n int) {
	if p.Y.Min >= p.Y.Max || !finite(p.Y.Min, p.Y.Max) {
		return
	}
	f := min(0.5, 0.07*float64(n))
	p.Y.Max = p.Y.Min + (p.Y.Max-p.Y.Min)/(1-f)
}

// finish pads both axes of p and makes room for its legend of n entries at
// the top.
func finish(p *plot.Plot, n int) {
	pad(&p.X, 0.03)
	pad(&p.Y, 0.03)
	legendRoom(p, n)
}

// addCurve adds xys as a line with glyphs in style st, and a legend entry
// name for it, with extra thumbnails drawn first (a band). A single point
// is drawn as a glyph only.
func addCurve(p *plot.Plot, st Style, name string, xys plotter.XYs, extra ...plot.Thumbnailer) error {
	return addRuns(p, st, name, []plotter.XYs{xys}, extra...)
}

// addRuns is addCurve for a curve with gaps: each of runs is a stretch of
// line with glyphs, not joined to the next, under one legend entry.
func addRuns(p *plot.Plot, st Style, name string, runs []plotter.XYs, extra ...plot.Thumbnailer) error {
	var all plotter.XYs
	thumbs := slices.Clone(extra)
	var line *plotter.Line
	for _, xys := range runs {
		all = append(all, xys...)
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return err
		}
		l.Color = st.Color
		l.Width = vg.Points(1.5)
		p.Add(l)
		if line == nil {
			line = l
			thumbs = append(thumbs, l)
		}
	}
	s, err := plotter.NewScatter(all)
	if err != nil {
		return err
	}
	s.Color = st.Color
	s.Shape = st.Shape
	s.Radius = vg.Points(3)
	p.Add(s)
	thumbs = append(thumbs, s)
	p.Legend.Add(name, thumbs...)
	return nil
}

// useLogX switches p's x axis to a log scale when all of xs are positive
// and they span more than a factor of 10.
func useLogX(p *plot.Plot, xs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		lo = math.Min(lo, x)
		hi = math.Max(hi, x)
	}
	if lo > 0 && hi/lo > 10 {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
}

// logTicks marks each power of ten and its multiples on a log axis,
// labelling the powers, and also 2 and 5 times them when the axis spans
// few decades, so that a range such as 1–50 gets more than two labels.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	if !(min > 0 && max >= min) || !finite(min, max) {
		return nil // not a log range; plot.LogScale rejects it anyway
	}
	lo := int(math.Floor(math.Log10(min)))
	hi := int(math.Ceil(math.Log10(max)))
	dense := hi-lo <= 3
	var ticks []plot.Tick
	for e := lo; e <= hi; e++ {
		for m := 1; m <= 9 && (e < hi || m == 1); m++ {
			t := plot.Tick{Value: decimal(m, e)}
			if m == 1 || dense && (m == 2 || m == 5) {
				t.Label = decimalLabel(m, e)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// decimal returns m×10^e with the rounding of the literal "me<e>".
func decimal(m, e int) float64 {
	v, _ := strconv.ParseFloat(strconv.Itoa(m)+"e"+strconv.Itoa(e), 64)
	return v
}

// decimalLabel formats m×10^e without floating-point noise.
func decimalLabel(m, e int) string {
	switch {
	case e < -4 || e > 6:
		return fmt.Sprintf("%de%d", m, e)
	case e < 0:
		return strconv.FormatFloat(decimal(m, e), 'f', -e, 64)
	default:
		return strconv.FormatFloat(decimal(m, e), 'f', 0, 64)
	}
}

// Line is one model's curve for Staleness: Y[i] ± Err[i] at X[i].
// Err may be nil, in which case no band is drawn.
type Line struct {
	Name      string
	X, Y, Err []float64
}

// errPoint is a point of a Line with its error, NaN when it has none.
type errPoint struct{ x, y, err float64 }

// Staleness plots MAE mean ± std per chronological chunk (a tenth, say)
// of a split, one line per model, with a shaded band for ± Err, to show
// how a model degrades as the period moves away from its training data
// (the SDGNN paper's model-staleness analysis). xLabel labels the x axis
// with the chunks and the split (e.g. "chronological tenth of the test
// split"); "" labels it "chronological chunk of the split".
//
// Points with a non-finite X or Y are not drawn, and one with a
// non-finite Y (a chunk without a reading to score) breaks its line and
// band there rather than being bridged; a point with a non-finite Err is
// drawn without its part of the band. Err values must
// not be negative.
//
// Lines are styled by name from styles, or by their order when styles is
// nil.
func Staleness(lines []Line, xLabel string, styles *Styles) (*plot.Plot, error) {
	if xLabel == "" {
		xLabel = "chronological chunk of the split"
	}
	return linePlot("staleness", "model staleness", xLabel, "MAE", lines, styles)
}

// OutageLength draws a model's MAE against the length of an outage, one
// line per model: X the number of a sensor's last readings silenced (0
// for forecasts whose inputs were complete), Y the MAE of the silenced
// sensors' forecasts, Err, if not nil, a spread drawn as a shaded band.
// How much worse a model forecasts a sensor the longer it has been silent,
// and whether reading its neighbours helps, is the figure's question.
func OutageLength(lines []Line, yLabel string, styles *Styles) (*plot.Plot, error) {
	if yLabel == "" {
		yLabel = "MAE of the silenced sensors"
	}
	return linePlot("outage length", "MAE against outage length", "readings silenced at the window's end (0: inputs complete)", yLabel, lines, styles)
}

// linePlot draws lines as Staleness describes, under the given title and
// axis labels; what names the figure in errors.
func linePlot(what, title, xLabel, yLabel string, lines []Line, styles *Styles) (*plot.Plot, error) {
	if len(lines) == 0 {
		return nil, fmt.Errorf("figure: %s: no lines", what)
	}
	p := newPlot(title, xLabel, yLabel)
	p.Legend.Top = true
	p.Legend.Left = true
	for i, l := range lines {
		st := styles.of(i, l.Name)
		if len(l.X) != len(l.Y) {
			return nil, fmt.Errorf("figure: %s line %q: %d x values but %d y values", what, l.Name, len(l.X), len(l.Y))
		}
		if l.Err != nil && len(l.Err) != len(l.Y) {
			return nil, fmt.Errorf("figure: %s line %q: %d y values but %d error values", what, l.Name, len(l.Y), len(l.Err))
		}
		var pts []errPoint
		drawn := false
		for j := range l.X {
			e := math.NaN()
			if l.Err != nil {
				e = l.Err[j]
				if e < 0 {
					return nil, fmt.Errorf("figure: %s line %q: negative error %v at x=%v", what, l.Name, e, l.X[j])
				}
			}
			// A point without a finite Y is kept as a gap in the line.
			if finite(l.X[j]) {
				pts = append(pts, errPoint{l.X[j], l.Y[j], e})
				drawn = drawn || finite(l.Y[j])
			}
		}
		if !drawn {
			return nil, fmt.Errorf("figure: %s line %q: no finite points among %d", what, l.Name, len(l.X))
		}
		slices.SortStableFunc(pts, func(a, b errPoint) int { return cmp.Compare(a.x, b.x) })

		var (
			runs []plotter.XYs // the line's stretches between gaps
			band []plot.Thumbnailer
		)
		for rest := pts; len(rest) > 0; {
			i := slices.IndexFunc(rest, func(pt errPoint) bool { return !finite(pt.y) })
			if i < 0 {
				i = len(rest)
			}
			run := rest[:i]
			rest = rest[min(i+1, len(rest)):]
			if len(run) == 0 {
				continue
			}
			xys := make(plotter.XYs, len(run))
			var banded []errPoint
			for j, pt := range run {
				xys[j] = plotter.XY{X: pt.x, Y: pt.y}
				if finite(pt.err) {
					banded = append(banded, pt)
				}
			}
			runs = append(runs, xys)
			switch {
			case len(banded) > 1:
				// Upper edge left to right, lower edge back.
				ring := make(plotter.XYs, 0, 2*len(banded))
				for _, pt := range banded {
					ring = append(ring, plotter.XY{X: pt.x, Y: pt.y + pt.err})
				}
				for _, pt := range slices.Backward(banded) {
					ring = append(ring, plotter.XY{X: pt.x, Y: pt.y - pt.err})
				}
				poly, err := plotter.NewPolygon(ring)
				if err != nil {
					return nil, fmt.Errorf("figure: %s line %q: %w", what, l.Name, err)
				}
				poly.Color = translucent(st.Color, 0x38)
				poly.LineStyle.Width = 0
				p.Add(poly)
				if band == nil {
					band = append(band, poly)
				}
			case len(banded) == 1:
				// A single point has no band to shade: draw an error bar.
				pt := banded[0]
				eb, err := plotter.NewYErrorBars(struct {
					plotter.XYs
					plotter.YErrors
				}{plotter.XYs{{X: pt.x, Y: pt.y}}, plotter.YErrors{{Low: pt.err, High: pt.err}}})
				if err != nil {
					return nil, fmt.Errorf("figure: %s line %q: %w", what, l.Name, err)
				}
				eb.Color = st.Color
				p.Add(eb)
			}
		}
		if err := addRuns(p, st, l.Name, runs, band...); err != nil {
			return nil, fmt.Errorf("figure: %s line %q: %w", what, l.Name, err)
		}
	}
	finish(p, len(lines))
	return p, nil
}

// Point is one model at one setting for MAPEReceptive: X its mean
// receptive-field size (nodes), Y its MAPE (%). Points with the same
// Series are joined by a line in order of X (e.g. series "SDGNN, 2-layer
// target" at budgets 2, 4, 6, 10, 20); a series with one point is a single
// marker. Label, if not empty, annotates the point (e.g. "6").
type Point struct {
	Series, Label string
	X, Y          float64
}

// MAPEReceptive plots MAPE against mean receptive-field size, showing the
// accuracy each model buys with the nodes it reads (the SDGNN paper's
// Fig. 3a). The x axis is logarithmic when the X values span more than a
// factor of 10, as receptive sizes go from 1 to about 50.
//
// Series are listed in the legend in order of first appearance, and
// styled by name from styles, or by that order when styles is nil.
func MAPEReceptive(points []Point, styles *Styles) (*plot.Plot, error) {
	if len(points) == 0 {
		return nil, errors.New("figure: MAPE vs receptive field: no points")
	}
	var order []string
	all := make(map[string]int)
	series := make(map[string][]Point)
	for _, pt := range points {
		if _, ok := all[pt.Series]; !ok {
			order = append(order, pt.Series)
		}
		all[pt.Series]++
		if finite(pt.X, pt.Y) {
			series[pt.Series] = append(series[pt.Series], pt)
		}
	}
	var xs []float64
	for _, name := range order {
		if len(series[name]) == 0 {
			return nil, fmt.Errorf("figure: MAPE vs receptive field: series %q: no finite points among %d", name, all[name])
		}
		for _, pt := range series[name] {
			xs = append(xs, pt.X)
		}
	}

	p := newPlot("MAPE vs receptive-field size", "mean receptive-field size (nodes)", "MAPE (%)")
	p.Legend.Top = true
	useLogX(p, xs)
	for i, name := range order {
		st := styles.of(i, name)
		pts := series[name]
		slices.SortStableFunc(pts, func(a, b Point) int { return cmp.Compare(a.X, b.X) })
		xys := make(plotter.XYs, len(pts))
		var labels plotter.XYLabels
		for j, pt := range pts {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
			if pt.Label != "" {
				labels.XYs = append(labels.XYs, xys[j])
				labels.Labels = append(labels.Labels, pt.Label)
			}
		}
		if err := addCurve(p, st, name, xys); err != nil {
			return nil, fmt.Errorf("figure: MAPE vs receptive field: series %q: %w", name, err)
		}
		if len(labels.Labels) > 0 {
			if _, err := addLabels(p, labels, st.Color, vg.Point{X: 4, Y: 3}); err != nil {
				return nil, fmt.Errorf("figure: MAPE vs receptive field: series %q: %w", name, err)
			}
		}
	}
	finish(p, len(order))
	return p, nil
}

// addLabels adds text labels in colour c, offset from their points.
func addLabels(p *plot.Plot, labels plotter.XYLabels, c color.Color, offset vg.Point) (*plotter.Labels, error) {
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = c
		l.TextStyle[i].Font.Size = vg.Points(8)
	}
	l.Offset = offset
	p.Add(l)
	return l, nil
}

// NodeReduction scatters per-node MAE reductions relative to the GRU
// baseline, in percent of the GRU's MAE, with the line y = x over the data
// range, so that nodes where one model gains more than the other stand out
// (the SDGNN paper's Fig. 3b): x[i] is node i's reduction under model xName
// (SDGNN), y[i] under model yName (GRU-GCN).
//
// Nodes with a non-finite x or y are not drawn.
func NodeReduction(x, y []float64, xName, yName string) (*plot.Plot, error) {
	if len(x) != len(y) {
		return nil, fmt.Errorf("figure: node reduction %s vs %s: %d x values but %d y values", xName, yName, len(x), len(y))
	}
	if len(x) == 0 {
		return nil, fmt.Errorf("figure: node reduction %s vs %s: no nodes", xName, yName)
	}
	var xys plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := range x {
		if finite(x[i], y[i]) {
			xys = append(xys, plotter.XY{X: x[i], Y: y[i]})
			lo = math.Min(lo, math.Min(x[i], y[i]))
			hi = math.Max(hi, math.Max(x[i], y[i]))
		}
	}
	if len(xys) == 0 {
		return nil, fmt.Errorf("figure: node reduction %s vs %s: no node with finite values among %d", xName, yName, len(x))
	}
	if lo == hi {
		lo, hi = lo-1, hi+1
	}

	p := newPlot("per-node MAE reduction vs GRU",
		"MAE reduction vs GRU (%), "+xName,
		"MAE reduction vs GRU (%), "+yName)
	p.Legend.Top = true
	p.Legend.Left = true

	diag, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
	if err != nil {
		return nil, fmt.Errorf("figure: node reduction %s vs %s: %w", xName, yName, err)
	}
	diag.Color = color.Gray{Y: 0x60}
	diag.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, fmt.Errorf("figure: node reduction %s vs %s: %w", xName, yName, err)
	}
	s.Color = translucent(seriesColor(0), 0xb0)
	s.Shape = draw.CircleGlyph{}
	s.Radius = vg.Points(2)
	p.Add(diag, s)
	p.Legend.Add(fmt.Sprintf("nodes (%d)", len(xys)), s)
	p.Legend.Add("y = x", diag)
	finish(p, 2)
	return p, nil
}

// Checkpoint is one distillation round of SDGNN, for ApproxError.
type Checkpoint struct {
	Epoch, Budget int
	ApproxErr     float64 // embedding approximation error of the round (validation MSE between Ẑ and Z)
	MAPE          float64 // validation MAPE (%) of the round
	Best          bool    // the round kept as the final model
}

// ApproxError plots validation MAPE against embedding approximation error
// over distillation checkpoints, to show that forecasting accuracy tracks
// how well SDGNN approximates the teacher's embeddings. errName labels the
// x axis (e.g. "validation MSE(Ẑ, Z)"). Points are joined in epoch order
// and the best one is highlighted with its own glyph and legend entry. The
// x axis is logarithmic when the errors span more than a factor of 10.
//
// Checkpoints with a non-finite ApproxErr or MAPE are not drawn.
func ApproxError(cps []Checkpoint, errName string) (*plot.Plot, error) {
	if len(cps) == 0 {
		return nil, errors.New("figure: approximation error: no checkpoints")
	}
	var kept []Checkpoint
	for _, cp := range cps {
		if finite(cp.ApproxErr, cp.MAPE) {
			kept = append(kept, cp)
		}
	}
	if len(kept) == 0 {
		return nil, fmt.Errorf("figure: approximation error: no checkpoint with finite error and MAPE among %d", len(cps))
	}
	slices.SortStableFunc(kept, func(a, b Checkpoint) int { return cmp.Compare(a.Epoch, b.Epoch) })

	if errName == "" {
		errName = "embedding approximation error"
	}
	p := newPlot("MAPE vs embedding approximation error", errName, "validation MAPE (%)")
	p.Legend.Top = true
	p.Legend.Left = true

	xys := make(plotter.XYs, len(kept))
	xs := make([]float64, len(kept))
	var best plotter.XYs
	var bestCP Checkpoint
	for i, cp := range kept {
		xys[i] = plotter.XY{X: cp.ApproxErr, Y: cp.MAPE}
		xs[i] = cp.ApproxErr
		if cp.Best {
			best = append(best, xys[i])
			bestCP = cp
		}
	}
	useLogX(p, xs)
	if err := addCurve(p, styleAt(0), "checkpoints (epoch order)", xys); err != nil {
		return nil, fmt.Errorf("figure: approximation error: %w", err)
	}
	if len(best) > 0 {
		s, err := plotter.NewScatter(best)
		if err != nil {
			return nil, fmt.Errorf("figure: approximation error: best checkpoint: %w", err)
		}
		s.Color = seriesColor(1)
		s.Shape = draw.BoxGlyph{}
		s.Radius = vg.Points(5)
		p.Add(s)
		name := "best"
		if len(best) == 1 {
			name = fmt.Sprintf("best (epoch %d, budget %d)", bestCP.Epoch, bestCP.Budget)
		}
		p.Legend.Add(name, s)
	}
	finish(p, 1+min(len(best), 1))
	return p, nil
}

// Sample is one model's distribution of values, for ECDF.
type Sample struct {
	Name   string
	Values []float64
}

// ECDF plots the empirical cumulative distribution function of each sample
// as a step line, one per sample, with the given title and x label, to
// compare distributions such as the receptive-set sizes and row-normalised
// θ values of SDGNN and PPRGo. The y axis, "fraction ≤ x", runs from 0 to
// 1. Each step line is extended at height 1 to the largest value of all
// samples so that the curves end together.
//
// Non-finite values are skipped; the fractions are of the finite values.
// Samples are coloured by name from styles, or by their order when styles
// is nil.
func ECDF(title, xLabel string, samples []Sample, styles *Styles) (*plot.Plot, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("figure: ECDF %q: no samples", title)
	}
	sorted := make([][]float64, len(samples))
	hi := math.Inf(-1)
	for i, s := range samples {
		for _, v := range s.Values {
			if finite(v) {
				sorted[i] = append(sorted[i], v)
			}
		}
		if len(sorted[i]) == 0 {
			return nil, fmt.Errorf("figure: ECDF %q: sample %q: no finite values among %d", title, s.Name, len(s.Values))
		}
		slices.Sort(sorted[i])
		hi = math.Max(hi, sorted[i][len(sorted[i])-1])
	}

	p := newPlot(title, xLabel, "fraction ≤ x")
	p.Y.Min, p.Y.Max = 0, 1
	for i, s := range samples {
		l, err := plotter.NewLine(ecdf(sorted[i], hi))
		if err != nil {
			return nil, fmt.Errorf("figure: ECDF %q: sample %q: %w", title, s.Name, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = styles.of(i, s.Name).Color
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.Name, l)
	}
	pad(&p.X, 0.03)
	return p, nil
}

// ecdf returns the vertices of the post-step line of the empirical
// distribution function of the sorted values vs: it starts at height 0 at
// the smallest value, rises at each distinct value to the fraction of
// values at or below it, and runs on at height 1 to end.
func ecdf(vs []float64, end float64) plotter.XYs {
	n := float64(len(vs))
	xys := plotter.XYs{{X: vs[0], Y: 0}}
	for i, v := range vs {
		if i+1 < len(vs) && vs[i+1] == v {
			continue
		}
		xys = append(xys, plotter.XY{X: v, Y: float64(i+1) / n})
	}
	if end > vs[len(vs)-1] {
		xys = append(xys, plotter.XY{X: end, Y: 1})
	}
	return xys
}

// Save writes p as dir/name.png and dir/name.svg, w × h, for the report
// and for print, and returns the two paths, png first. dir must exist. Each
// file is written atomically (checkpoint.WriteAtomic).
func Save(p *plot.Plot, dir, name string, w, h vg.Length) ([]string, error) {
	if p == nil {
		return nil, fmt.Errorf("figure: save %q: nil plot", name)
	}
	if name == "" {
		return nil, errors.New("figure: save: empty file name")
	}
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("figure: save %q: size %v × %v is not positive", name, w, h)
	}
	paths := []string{
		filepath.Join(dir, name+".png"),
		filepath.Join(dir, name+".svg"),
	}
	for _, path := range paths {
		wt, err := p.WriterTo(w, h, strings.TrimPrefix(filepath.Ext(path), "."))
		if err != nil {
			return nil, fmt.Errorf("figure: save %s: %w", path, err)
		}
		// Atomically, as every file a report writes: a figure redrawn over
		// an old one is the old or the new, never a part.
		if err := checkpoint.WriteAtomic(path, func(f io.Writer) error {
			_, err := wt.WriteTo(f)
			return err
		}); err != nil {
			return nil, fmt.Errorf("figure: save %q: %w", name, err)
		}
	}
	return paths, nil
}

// PNG renders p as PNG bytes, w × h, for embedding in an HTML report as a
// data URI.
func PNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	if p == nil {
		return nil, errors.New("figure: png: nil plot")
	}
	if w <= 0 || h <= 0 {
		return nil, fmt.Errorf("figure: png: size %v × %v is not positive", w, h)
	}
	wt, err := p.WriterTo(w, h, "png")
	if err != nil {
		return nil, fmt.Errorf("figure: png: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("figure: png: %w", err)
	}
	return buf.Bytes(), nil
}
