package figure

import (
	"cmp"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Field is the receptive field of one sensor, for drawing on the road
// graph with ReceptiveField.
type Field struct {
	Center int             // the sensor
	Hop    map[int]int     // node → hop distance from Center (0 for Center) for every node of its k-hop neighbourhood
	Edges  [][2]int        // road-graph edges among those nodes (either direction; duplicates allowed)
	Theta  map[int]float64 // SDGNN's selected receptive nodes and their θ weights; may contain nodes not in Hop (drawn on an outer "beyond k hops" ring)
	// Names, when set, names the nodes (by index) in the title and the
	// labels: the sensors' IDs; nil names them by index.
	Names []string
}

// name returns node n's name: Names[n], or n in decimal.
func (f *Field) name(n int) string {
	if n >= 0 && n < len(f.Names) {
		return f.Names[n]
	}
	return strconv.Itoa(n)
}

// Sizes of the receptive-field drawing.
const (
	maxThetaRadius = 10  // points; radius of the node with the largest θ
	minThetaRadius = 2   // points; so that a node with θ = 0 stays visible
	nodeRadius     = 2   // points; unselected nodes
	centerRadius   = 4.5 // points
)

// ReceptiveField draws f on the road graph as concentric rings, to show
// which of a sensor's neighbours SDGNN reads and how much it weighs them:
// the sensor in the centre, hop-h nodes on ring h and selected nodes beyond
// the neighbourhood on an extra outer ring. Nodes on a ring are evenly
// spaced and ordered by the mean angle of their neighbours on inner rings,
// which keeps edges short and reduces crossings; ties are broken by node
// id. Edges are thin grey lines, unselected nodes small grey circles and
// selected nodes filled circles with area proportional to θ (relative to
// the largest θ) labelled "id (θ=0.31)", by Names where given. The axes are hidden. Rings are
// drawn in data coordinates, so they are circles when the figure is saved
// square and ellipses otherwise.
//
// Edges with an endpoint that is neither in Hop nor in Theta, and self
// loops, are ignored. Theta entries that are NaN or +Inf are ignored; a
// negative θ, a Center missing from Hop or not at hop 0, and any other node
// at a hop below 1 are errors.
func ReceptiveField(f Field) (*plot.Plot, error) {
	name := "figure: receptive field of sensor " + f.name(f.Center)
	if len(f.Hop) == 0 {
		return nil, fmt.Errorf("%s: empty neighbourhood", name)
	}
	h, ok := f.Hop[f.Center]
	if !ok {
		return nil, fmt.Errorf("%s: sensor missing from its neighbourhood", name)
	}
	if h != 0 {
		return nil, fmt.Errorf("%s: sensor at hop %d, want 0", name, h)
	}
	k := 0
	for _, n := range slices.Sorted(maps.Keys(f.Hop)) {
		h := f.Hop[n]
		if n != f.Center && h < 1 {
			return nil, fmt.Errorf("%s: node %d at hop %d, want at least 1", name, n, h)
		}
		k = max(k, h)
	}
	selected := slices.Sorted(maps.Keys(f.Theta))
	var beyond []int
	thetaMax := 0.0
	for _, n := range selected {
		t := f.Theta[n]
		if t < 0 {
			return nil, fmt.Errorf("%s: node %d has negative θ %v", name, n, t)
		}
		if !finite(t) {
			continue
		}
		thetaMax = max(thetaMax, t)
		if _, ok := f.Hop[n]; !ok {
			beyond = append(beyond, n)
		}
	}
	selected = slices.DeleteFunc(selected, func(n int) bool { return !finite(f.Theta[n]) })

	edges := fieldEdges(f.Edges, func(n int) bool {
		_, inHop := f.Hop[n]
		return inHop || slices.Contains(beyond, n)
	})
	pos := ringLayout(f.Center, f.Hop, beyond, edges)
	outer := float64(k)
	if len(beyond) > 0 {
		outer++
	}

	p := plot.New()
	p.Title.Text = "receptive field of sensor " + f.name(f.Center)
	p.HideAxes()

	// Legend entries, added last in reading order.
	var legend struct {
		beyond plot.Thumbnailer
		sel    plot.Thumbnailer
	}

	// Ring guides.
	for r := 1; r <= int(outer); r++ {
		l, err := plotter.NewLine(circle(float64(r)))
		if err != nil {
			return nil, fmt.Errorf("%s: ring %d: %w", name, r, err)
		}
		l.Color = color.Gray{Y: 0xe0}
		l.Width = vg.Points(0.5)
		if len(beyond) > 0 && r == int(outer) {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			l.Color = color.Gray{Y: 0xb0}
		}
		p.Add(l)
		if len(beyond) > 0 && r == int(outer) {
			legend.beyond = l
		}
	}

	// Edges, under the nodes.
	seg := &segments{LineStyle: draw.LineStyle{Color: grey, Width: vg.Points(0.5)}}
	for _, e := range edges {
		seg.xys = append(seg.xys, [2]plotter.XY{pos[e[0]], pos[e[1]]})
	}
	p.Add(seg)

	// Unselected nodes.
	var plain plotter.XYs
	for _, n := range slices.Sorted(maps.Keys(f.Hop)) {
		if _, sel := f.Theta[n]; !sel || !finite(f.Theta[n]) {
			plain = append(plain, pos[n])
		}
	}
	neigh, err := plotter.NewScatter(plain)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	neigh.Color = grey
	neigh.Shape = draw.CircleGlyph{}
	neigh.Radius = vg.Points(nodeRadius)
	p.Add(neigh)

	// Selected nodes, area ∝ θ, labelled.
	if len(selected) > 0 {
		xys := make(plotter.XYs, len(selected))
		radii := make([]vg.Length, len(selected))
		for i, n := range selected {
			xys[i] = pos[n]
			radii[i] = vg.Points(minThetaRadius)
			if thetaMax > 0 {
				radii[i] = max(radii[i], vg.Points(maxThetaRadius*math.Sqrt(f.Theta[n]/thetaMax)))
			}
		}
		sel, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		sel.Color = translucent(seriesColor(0), 0xd0)
		sel.Shape = draw.CircleGlyph{}
		sel.Radius = vg.Points(maxThetaRadius / 2)
		sel.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			g := sel.GlyphStyle
			g.Radius = radii[i]
			return g
		}
		p.Add(sel)
		legend.sel = sel
		for i, n := range selected {
			lab := plotter.XYLabels{
				XYs:    plotter.XYs{xys[i]},
				Labels: []string{fmt.Sprintf("%s (θ=%.2g)", f.name(n), f.Theta[n])},
			}
			l, err := addLabels(p, lab, color.Black, vg.Point{X: radii[i] + 2})
			if err != nil {
				return nil, fmt.Errorf("%s: label of node %d: %w", name, n, err)
			}
			l.TextStyle[0].YAlign = draw.YCenter
		}
	}

	// The sensor, on top.
	ctr, err := plotter.NewScatter(plotter.XYs{pos[f.Center]})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ctr.Color = color.Black
	ctr.Shape = draw.BoxGlyph{}
	ctr.Radius = vg.Points(centerRadius)
	p.Add(ctr)

	p.Legend.Add("sensor "+f.name(f.Center), ctr)
	if legend.sel != nil {
		p.Legend.Add("selected (area proportional to θ)", legend.sel)
	}
	p.Legend.Add(fmt.Sprintf("%d-hop neighbourhood", k), seg, neigh)
	if legend.beyond != nil {
		p.Legend.Add(fmt.Sprintf("beyond %d hops (outer ring)", k), legend.beyond)
	}
	p.Legend.Top = true
	p.Legend.Left = true

	// Square data range around the rings, with headroom above for the
	// legend.
	r := max(outer, 1) + 0.15
	p.X.Min, p.X.Max = -r, r
	p.Y.Min, p.Y.Max = -r, r+0.35*r
	return p, nil
}

// fieldEdges returns the distinct undirected edges of es, as (low, high)
// pairs in order of first appearance, leaving out self loops and edges
// with an endpoint for which keep is false.
func fieldEdges(es [][2]int, keep func(int) bool) [][2]int {
	seen := make(map[[2]int]bool)
	var out [][2]int
	for _, e := range es {
		u, v := min(e[0], e[1]), max(e[0], e[1])
		if u == v || !keep(u) || !keep(v) || seen[[2]int{u, v}] {
			continue
		}
		seen[[2]int{u, v}] = true
		out = append(out, [2]int{u, v})
	}
	return out
}

// ringLayout places center at the origin, each node n of hop on the
// circle of radius hop[n], and the nodes of beyond on the circle one
// outside the largest hop. Nodes on a ring are evenly spaced. Ring 1 is
// first ordered by node id; each outer ring is then ordered by the
// circular mean angle of its nodes' neighbours on inner rings (the
// barycentre heuristic for fewer crossings) and rotated to best match
// those angles. A second sweep reorders ring 1 by its neighbours on ring 2
// and lays out the outer rings again. Nodes without placed neighbours go
// last on their ring, by id.
func ringLayout(center int, hop map[int]int, beyond []int, edges [][2]int) map[int]plotter.XY {
	ring := make(map[int]int, len(hop)+len(beyond))
	k := 0
	for n, h := range hop {
		ring[n] = h
		k = max(k, h)
	}
	for _, n := range beyond {
		ring[n] = k + 1
	}
	rings := make([][]int, k+2)
	for _, n := range slices.Sorted(maps.Keys(ring)) {
		rings[ring[n]] = append(rings[ring[n]], n)
	}
	adj := make(map[int][]int)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	for n := range adj {
		slices.Sort(adj[n])
	}

	angle := make(map[int]float64, len(ring))
	// place lays out ring r, ordered by the mean angle of each node's
	// neighbours on the rings for which use is true.
	place := func(r int, use func(int) bool) {
		type keyed struct {
			n   int
			key float64 // NaN when the node has no placed neighbour
		}
		nodes := make([]keyed, len(rings[r]))
		for i, n := range rings[r] {
			var sx, sy float64
			var c int
			for _, m := range adj[n] {
				if a, ok := angle[m]; ok && ring[m] != 0 && use(ring[m]) {
					sx += math.Cos(a)
					sy += math.Sin(a)
					c++
				}
			}
			key := math.NaN()
			if c > 0 {
				key = math.Mod(math.Atan2(sy, sx)+2*math.Pi, 2*math.Pi)
			}
			nodes[i] = keyed{n, key}
		}
		slices.SortStableFunc(nodes, func(a, b keyed) int {
			switch an, bn := math.IsNaN(a.key), math.IsNaN(b.key); {
			case an && bn:
				return cmp.Compare(a.n, b.n)
			case an:
				return 1
			case bn:
				return -1
			}
			return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.n, b.n))
		})
		step := 2 * math.Pi / float64(len(nodes))
		phase := math.Pi / 2 // first node on top when nothing guides us
		var sx, sy float64
		for i, nd := range nodes {
			if !math.IsNaN(nd.key) {
				d := nd.key - float64(i)*step
				sx += math.Cos(d)
				sy += math.Sin(d)
			}
		}
		if sx != 0 || sy != 0 {
			phase = math.Atan2(sy, sx)
		}
		for i, nd := range nodes {
			angle[nd.n] = phase + float64(i)*step
		}
	}
	sweep := func(from int) {
		for r := from; r < len(rings); r++ {
			if len(rings[r]) > 0 {
				place(r, func(q int) bool { return q < r })
			}
		}
	}
	sweep(1)
	if len(rings) > 2 && len(rings[1]) > 0 && len(rings[2]) > 0 {
		place(1, func(q int) bool { return q == 2 })
		sweep(2)
	}

	pos := make(map[int]plotter.XY, len(ring))
	pos[center] = plotter.XY{}
	for n, r := range ring {
		if r == 0 {
			continue
		}
		a := angle[n]
		pos[n] = plotter.XY{X: float64(r) * math.Cos(a), Y: float64(r) * math.Sin(a)}
	}
	return pos
}

// circle returns a closed polygon approximating the circle of radius r
// around the origin.
func circle(r float64) plotter.XYs {
	const n = 120
	xys := make(plotter.XYs, n+1)
	for i := range xys {
		a := 2 * math.Pi * float64(i) / n
		xys[i] = plotter.XY{X: r * math.Cos(a), Y: r * math.Sin(a)}
	}
	return xys
}

// segments is a plot.Plotter drawing straight line segments between pairs
// of points in data coordinates, for the edges of a graph; one Plotter for
// all edges is lighter than one plotter.Line per edge.
type segments struct {
	xys [][2]plotter.XY
	draw.LineStyle
}

// Plot implements plot.Plotter.
func (s *segments) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	for _, e := range s.xys {
		c.StrokeLine2(s.LineStyle, trX(e[0].X), trY(e[0].Y), trX(e[1].X), trY(e[1].Y))
	}
}

// Thumbnail implements plot.Thumbnailer.
func (s *segments) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(s.LineStyle, c.Min.X, y, c.Max.X, y)
}
