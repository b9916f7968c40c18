package figure

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Site is a sensor at its coordinates, for the maps: its name (its ID, or
// its index), its latitude and longitude in degrees, and, for SensorMap,
// the value its colour shows (NaN: none, drawn grey).
type Site struct {
	Name     string
	Lat, Lon float64
	Value    float64
}

// Spoke is one of a sensor's receptive sensors on ReceptiveMap: the index
// of its site and its weight θ.
type Spoke struct {
	Site  int
	Theta float64
}

// Sizes of the maps, in points.
const (
	mapMargin    = 12 // around the sites
	mapBarHeight = 34 // the colour bar and scale bar under the sites
	siteRadius   = 3.2
	hubRadius    = 5.5  // the chosen sensor of ReceptiveMap
	maxSpokeW    = 6.0  // the widest spoke, θ the largest
	minSpokeW    = 0.75 // so that a small θ stays visible
	mapLabels    = 5    // SensorMap names the sites of the largest values
)

// viridis is the colour scale of SensorMap, low to high: the stops of
// matplotlib's viridis, as the live view's map has them.
var viridis = []color.RGBA{{68, 1, 84, 255}, {59, 82, 139, 255}, {33, 145, 140, 255}, {94, 201, 98, 255}, {253, 231, 37, 255}}

// scaleColor returns the colour at f ∈ [0, 1] of the viridis scale.
func scaleColor(f float64) color.Color {
	f = math.Min(1, math.Max(0, f)) * float64(len(viridis)-1)
	i := min(len(viridis)-2, int(f))
	u := f - float64(i)
	a, b := viridis[i], viridis[i+1]
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + u*(float64(y)-float64(x)))) }
	return color.RGBA{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 255}
}

// SensorMap draws the sites at their coordinates, each filled by its
// Value on a viridis scale from the smallest value to the largest (grey
// where it has none), with a colour bar labelled valueName and a scale
// bar in kilometres, and names the sites of the five largest values: a
// map of where a model errs (the report's test MAE per sensor). The
// projection is equirectangular, longitudes scaled by the cosine of the
// sites' mean latitude, so that a kilometre east is drawn as long as a
// kilometre north; it needs no tiles. The axes are hidden.
//
// Sites whose coordinates are not finite degrees (latitude within ±90,
// longitude within ±180) are an error, as is no site; values that are
// ±Inf are drawn as none.
func SensorMap(title, valueName string, sites []Site) (*plot.Plot, error) {
	name := "figure: sensor map " + strconv.Quote(title)
	if err := checkSites(sites); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := &sitesPlotter{sites: sites, bar: valueName}
	m.lo, m.hi = math.Inf(1), math.Inf(-1)
	for _, s := range sites {
		if finite(s.Value) {
			m.lo, m.hi = min(m.lo, s.Value), max(m.hi, s.Value)
		}
	}
	order := make([]int, 0, len(sites))
	for i, s := range sites {
		if finite(s.Value) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(sites[b].Value, sites[a].Value) })
	m.labelled = order[:min(len(order), mapLabels)]
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	p.Add(m)
	return p, nil
}

// ReceptiveMap draws the sites as small grey dots and the site center,
// a sensor, larger in black, with a line to each of its receptive
// sensors (spokes) whose width is proportional to θ (relative to the
// largest), each labelled "name (θ=0.31)"; a spoke to the sensor itself
// (its own readings) is a ring around it. It is SDGNN's receptive set on
// the ground, beside the hop rings of ReceptiveField, with the same
// projection and scale bar as SensorMap.
//
// A center or spoke that is no site, a negative θ and the errors of
// SensorMap are errors; a spoke whose θ is NaN or +Inf is not drawn.
func ReceptiveMap(title string, sites []Site, center int, spokes []Spoke) (*plot.Plot, error) {
	name := "figure: receptive map " + strconv.Quote(title)
	if err := checkSites(sites); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if center < 0 || center >= len(sites) {
		return nil, fmt.Errorf("%s: sensor %d is not one of the %d sites", name, center, len(sites))
	}
	m := &sitesPlotter{sites: sites, hub: center, spokes: make([]Spoke, 0, len(spokes))}
	for _, s := range spokes {
		switch {
		case s.Site < 0 || s.Site >= len(sites):
			return nil, fmt.Errorf("%s: receptive sensor %d is not one of the %d sites", name, s.Site, len(sites))
		case s.Theta < 0:
			return nil, fmt.Errorf("%s: receptive sensor %s has negative θ %v", name, sites[s.Site].Name, s.Theta)
		case !finite(s.Theta):
			continue
		}
		m.spokes = append(m.spokes, s)
		m.thetaMax = max(m.thetaMax, s.Theta)
	}
	p := plot.New()
	p.Title.Text = title
	p.HideAxes()
	p.Add(m)
	return p, nil
}

// checkSites reports the first site whose coordinates are not finite
// degrees in range, or that there is none.
func checkSites(sites []Site) error {
	if len(sites) == 0 {
		return fmt.Errorf("no sites")
	}
	for _, s := range sites {
		if !(math.Abs(s.Lat) <= 90) || !(math.Abs(s.Lon) <= 180) {
			return fmt.Errorf("site %s at (%v, %v): want a latitude within ±90° and a longitude within ±180°", s.Name, s.Lat, s.Lon)
		}
	}
	return nil
}

// sitesPlotter draws sites at their coordinates in the canvas it is given,
// with its own uniform scale (the plot's axes are hidden and unused), so
// that the projection keeps its proportions whatever the figure's size:
// SensorMap's coloured sites (bar set) or ReceptiveMap's hub and spokes
// (hub set, ≥ 0 only then).
type sitesPlotter struct {
	sites []Site

	bar      string  // SensorMap: the colour bar's label
	lo, hi   float64 // SensorMap: the range of the finite values (lo > hi: none)
	labelled []int   // SensorMap: the sites named

	hub      int
	spokes   []Spoke
	thetaMax float64
}

// projection maps coordinates to a canvas: x = (lon·k − x0)·scale + ox,
// y = (lat − y0)·scale + oy.
type projection struct {
	k, x0, y0, scale float64
	ox, oy           vg.Length
}

// project fits sites into the rectangle [min, max] of a canvas, centred,
// with a uniform scale.
func project(sites []Site, lo, hi vg.Point) projection {
	var lat0 float64
	for _, s := range sites {
		lat0 += s.Lat / float64(len(sites))
	}
	p := projection{k: math.Cos(lat0 * math.Pi / 180)}
	x0, x1, y0, y1 := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range sites {
		x := s.Lon * p.k
		x0, x1, y0, y1 = min(x0, x), max(x1, x), min(y0, s.Lat), max(y1, s.Lat)
	}
	w, h := float64(hi.X-lo.X), float64(hi.Y-lo.Y)
	dx, dy := math.Max(x1-x0, 1e-9), math.Max(y1-y0, 1e-9)
	p.scale = math.Min(w/dx, h/dy)
	p.x0, p.y0 = x0, y0
	p.ox = lo.X + vg.Length((w-(x1-x0)*p.scale)/2)
	p.oy = lo.Y + vg.Length((h-(y1-y0)*p.scale)/2)
	return p
}

// at returns site s's point on the canvas.
func (p projection) at(s Site) vg.Point {
	return vg.Point{X: p.ox + vg.Length((s.Lon*p.k-p.x0)*p.scale), Y: p.oy + vg.Length((s.Lat-p.y0)*p.scale)}
}

// Plot implements plot.Plotter.
func (m *sitesPlotter) Plot(c draw.Canvas, _ *plot.Plot) {
	lo := vg.Point{X: c.Min.X + mapMargin, Y: c.Min.Y + mapMargin + mapBarHeight}
	hi := vg.Point{X: c.Max.X - mapMargin, Y: c.Max.Y - mapMargin}
	pr := project(m.sites, lo, hi)
	label := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(7)), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
	if m.bar != "" {
		m.plotValues(c, pr, label)
	} else {
		m.plotSpokes(c, pr, label)
	}
	m.scaleBar(c, pr, label)
}

// plotValues draws SensorMap's sites and colour bar.
func (m *sitesPlotter) plotValues(c draw.Canvas, pr projection, label draw.TextStyle) {
	fill := func(v float64) color.Color {
		switch {
		case !finite(v):
			return color.Gray{Y: 0xc0}
		case m.hi > m.lo:
			return scaleColor((v - m.lo) / (m.hi - m.lo))
		}
		return scaleColor(0.5)
	}
	r := vg.Points(siteRadius)
	// Sites without a value first, then by value, the largest on top.
	order := make([]int, len(m.sites))
	for i := range order {
		order[i] = i
	}
	key := func(i int) float64 {
		if v := m.sites[i].Value; finite(v) {
			return v
		}
		return math.Inf(-1)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
	for _, i := range order {
		pt := pr.at(m.sites[i])
		c.FillPolygon(fill(m.sites[i].Value), circlePoly(pt, r))
		c.StrokeLines(draw.LineStyle{Color: color.White, Width: vg.Points(0.4)}, circlePoly(pt, r))
	}
	for _, i := range m.labelled {
		c.FillText(label, pr.at(m.sites[i]).Add(vg.Point{X: r + 2}), m.sites[i].Name)
	}
	// The colour bar, at the bottom left.
	x0, y0 := c.Min.X+mapMargin, c.Min.Y+mapMargin+12
	const steps = 48
	w := vg.Points(150)
	for i := range steps {
		x := x0 + w*vg.Length(i)/steps
		c.FillPolygon(scaleColor(float64(i)/(steps-1)), []vg.Point{{X: x, Y: y0}, {X: x + w/steps + 0.3, Y: y0}, {X: x + w/steps + 0.3, Y: y0 + 8}, {X: x, Y: y0 + 8}})
	}
	lab := label
	lab.YAlign = draw.YTop
	if m.lo <= m.hi {
		c.FillText(lab, vg.Point{X: x0, Y: y0 - 2}, strconv.FormatFloat(m.lo, 'g', 4, 64))
		lab.XAlign = draw.XRight
		c.FillText(lab, vg.Point{X: x0 + w, Y: y0 - 2}, strconv.FormatFloat(m.hi, 'g', 4, 64))
	}
	name := label
	name.YAlign = draw.YBottom
	c.FillText(name, vg.Point{X: x0, Y: y0 + 10}, m.bar+" (grey: none)")
}

// plotSpokes draws ReceptiveMap's sites, hub and spokes.
func (m *sitesPlotter) plotSpokes(c draw.Canvas, pr projection, label draw.TextStyle) {
	grey := color.Gray{Y: 0xb8}
	for _, s := range m.sites {
		c.FillPolygon(grey, circlePoly(pr.at(s), vg.Points(siteRadius*0.7)))
	}
	hub := pr.at(m.sites[m.hub])
	blue := translucent(seriesColor(0), 0xc0)
	width := func(t float64) vg.Length {
		if m.thetaMax <= 0 {
			return vg.Points(minSpokeW)
		}
		return vg.Points(max(minSpokeW, maxSpokeW*t/m.thetaMax))
	}
	for _, s := range m.spokes {
		if s.Site == m.hub {
			c.StrokeLines(draw.LineStyle{Color: blue, Width: width(s.Theta)}, circlePoly(hub, vg.Points(hubRadius+3)+width(s.Theta)/2))
			continue
		}
		c.StrokeLine2(draw.LineStyle{Color: blue, Width: width(s.Theta)}, hub.X, hub.Y, pr.at(m.sites[s.Site]).X, pr.at(m.sites[s.Site]).Y)
	}
	for _, s := range m.spokes {
		if s.Site != m.hub {
			c.FillPolygon(seriesColor(0), circlePoly(pr.at(m.sites[s.Site]), vg.Points(siteRadius)))
		}
	}
	c.FillPolygon(color.Black, circlePoly(hub, vg.Points(hubRadius)))
	for _, s := range m.spokes {
		at, off := pr.at(m.sites[s.Site]), vg.Points(siteRadius+2)
		if s.Site == m.hub {
			off = vg.Points(hubRadius+4) + width(s.Theta)
		}
		c.FillText(label, at.Add(vg.Point{X: off}), fmt.Sprintf("%s (θ=%.2g)", m.sites[s.Site].Name, s.Theta))
	}
	if !slices.ContainsFunc(m.spokes, func(s Spoke) bool { return s.Site == m.hub }) {
		c.FillText(label, hub.Add(vg.Point{X: vg.Points(hubRadius + 2)}), m.sites[m.hub].Name)
	}
	note := label
	note.YAlign = draw.YBottom
	c.FillText(note, vg.Point{X: c.Min.X + mapMargin, Y: c.Min.Y + mapMargin + 12}, "sensor "+m.sites[m.hub].Name+" (black) and the sensors its forecast reads; line width proportional to θ")
}

// scaleBar draws a bar of a round number of kilometres at the bottom
// right, about a fifth of the drawing's width.
func (m *sitesPlotter) scaleBar(c draw.Canvas, pr projection, label draw.TextStyle) {
	const kmPerDegree = 111.32      // of latitude, and of longitude at the equator
	perKm := pr.scale / kmPerDegree // points per kilometre
	if !(perKm > 0) || math.IsInf(perKm, 0) {
		return
	}
	want := float64(c.Max.X-c.Min.X) / 5 / perKm
	km := math.Pow(10, math.Floor(math.Log10(want)))
	for _, f := range []float64{5, 2} {
		if f*km <= want {
			km *= f
			break
		}
	}
	w := vg.Length(km * perKm)
	x1, y := c.Max.X-mapMargin, c.Min.Y+mapMargin+12
	st := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	c.StrokeLines(st, []vg.Point{{X: x1 - w, Y: y + 4}, {X: x1 - w, Y: y}, {X: x1, Y: y}, {X: x1, Y: y + 4}})
	lab := label
	lab.XAlign, lab.YAlign = draw.XCenter, draw.YTop
	c.FillText(lab, vg.Point{X: x1 - w/2, Y: y - 2}, strconv.FormatFloat(km, 'g', -1, 64)+" km")
}

// circlePoly returns a polygon approximating the circle of radius r about
// centre, closed.
func circlePoly(centre vg.Point, r vg.Length) []vg.Point {
	const n = 24
	pts := make([]vg.Point, n+1)
	for i := range pts {
		a := 2 * math.Pi * float64(i) / n
		pts[i] = vg.Point{X: centre.X + r*vg.Length(math.Cos(a)), Y: centre.Y + r*vg.Length(math.Sin(a))}
	}
	return pts
}
