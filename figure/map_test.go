package figure

import (
	"bytes"
	"image/png"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// losLoopSites are four of Los-loop's detectors at their coordinates
// (graph_sensor_locations.csv), with values to colour.
func losLoopSites() []Site {
	return []Site{
		{Name: "773869", Lat: 34.15497, Lon: -118.31829, Value: 2.5},
		{Name: "767541", Lat: 34.11621, Lon: -118.23799, Value: 7.5},
		{Name: "717447", Lat: 34.07248, Lon: -118.26772, Value: 5},
		{Name: "769402", Lat: 34.16264, Lon: -118.29395, Value: math.NaN()},
	}
}

// svgCircles returns the centres and fills of the filled circles (of
// circlePoly's 25 points) of p drawn as SVG.
func svgCircles(t *testing.T, p *plot.Plot) []svgCircle {
	t.Helper()
	wt, err := p.WriterTo(6*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	var out []svgCircle
	for _, m := range regexp.MustCompile(`<path d="([^"]*)" style="fill:(#[0-9A-F]{6})"`).FindAllStringSubmatch(buf.String(), -1) {
		pts := strings.Split(strings.TrimSuffix(strings.TrimPrefix(m[1], "M"), "Z"), "L")
		if len(pts) != 25 {
			continue // not a site (the background, the colour bar)
		}
		var c svgCircle
		for _, pt := range pts[:24] {
			x, y, _ := strings.Cut(pt, ",")
			fx, _ := strconv.ParseFloat(x, 64)
			fy, _ := strconv.ParseFloat(y, 64)
			c.x, c.y = c.x+fx/24, c.y+fy/24
		}
		c.fill = m[2]
		out = append(out, c)
	}
	return out
}

type svgCircle struct {
	x, y float64
	fill string
}

// TestSensorMap draws four detectors: each is a circle where its
// coordinates put it (east to the right, north up, a kilometre east as
// long as one north), filled by its value (the largest yellow, the
// smallest purple, none grey), and the figure is a PNG.
func TestSensorMap(t *testing.T) {
	sites := losLoopSites()
	p, err := SensorMap("test MAE per sensor", "MAE (mph)", sites)
	if err != nil {
		t.Fatal(err)
	}
	cs := svgCircles(t, p)
	if len(cs) != len(sites) {
		t.Fatalf("%d circles, want %d: %v", len(cs), len(sites), cs)
	}
	// Drawn by value: none first, then the smallest; find each by fill.
	by := map[string]svgCircle{}
	for _, c := range cs {
		by[c.fill] = c
	}
	grey, lo, hi, mid := by["#C0C0C0"], by["#440154"], by["#FDE725"], by["#21918C"]
	if len(by) != 4 || grey.fill == "" || lo.fill == "" || hi.fill == "" || mid.fill == "" {
		t.Fatalf("fills %v, want grey, the scale's foot, top and middle", cs)
	}
	pos := map[string]svgCircle{"769402": grey, "773869": lo, "767541": hi, "717447": mid}
	k := math.Cos((34.15497 + 34.11621 + 34.07248 + 34.16264) / 4 * math.Pi / 180)
	for _, a := range sites {
		for _, b := range sites {
			pa, pb := pos[a.Name], pos[b.Name]
			// The SVG's path coordinates have y up (its transform flips them).
			if a.Lon < b.Lon && !(pa.x < pb.x) || a.Lat > b.Lat && !(pa.y > pb.y) {
				t.Errorf("%s (%v, %v) drawn at (%.1f, %.1f), %s (%v, %v) at (%.1f, %.1f)", a.Name, a.Lat, a.Lon, pa.x, pa.y, b.Name, b.Lat, b.Lon, pb.x, pb.y)
			}
			if a.Name == b.Name {
				continue
			}
			ground := math.Hypot(a.Lat-b.Lat, k*(a.Lon-b.Lon))
			drawn := math.Hypot(pa.x-pb.x, pa.y-pb.y)
			ref := math.Hypot(sites[0].Lat-sites[1].Lat, k*(sites[0].Lon-sites[1].Lon)) / math.Hypot(pos["773869"].x-pos["767541"].x, pos["773869"].y-pos["767541"].y)
			if r := ground / drawn / ref; math.Abs(r-1) > 0.01 {
				t.Errorf("%s to %s drawn %.1f points, %.3f times the scale of the others", a.Name, b.Name, drawn, r)
			}
		}
	}
	b, err := PNG(p, 6*vg.Inch, 5*vg.Inch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
}

// TestReceptiveMap draws a sensor's receptive set on the ground: its
// receptive sensors are filled, the others grey, and the lines to them
// are wider for a larger θ.
func TestReceptiveMap(t *testing.T) {
	sites := losLoopSites()
	p, err := ReceptiveMap("receptive set of 773869", sites, 0, []Spoke{{Site: 0, Theta: 0.5}, {Site: 1, Theta: 0.4}, {Site: 2, Theta: 0.1}, {Site: 3, Theta: math.NaN()}})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := p.WriterTo(6*vg.Inch, 5*vg.Inch, "svg")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"773869 (θ=0.5)", "767541 (θ=0.4)", "717447 (θ=0.1)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("no label %q", want)
		}
	}
	if strings.Contains(svg, "769402 (θ") {
		t.Error("a spoke of θ NaN is labelled")
	}
	widths := regexp.MustCompile(`<path d="M[0-9.]+,[0-9.]+L[0-9.]+,[0-9.]+" style="fill:none;stroke:#[0-9A-F]+;stroke-opacity:[0-9.]+;stroke-width:([0-9.]+)`).FindAllStringSubmatch(svg, -1)
	if len(widths) != 2 {
		t.Fatalf("%d spokes drawn as lines, want 2 (to 767541 and 717447): %v", len(widths), widths)
	}
	w1, _ := strconv.ParseFloat(widths[0][1], 64)
	w2, _ := strconv.ParseFloat(widths[1][1], 64)
	if !(w1 > w2) || math.Abs(w1/w2-4) > 0.01 {
		t.Errorf("spokes of θ 0.4 and 0.1 drawn %g and %g wide, want 4 to 1", w1, w2)
	}
}

func TestMapErrors(t *testing.T) {
	sites := losLoopSites()
	off := append([]Site(nil), sites...)
	off[1].Lat = 91
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"no sites", second(SensorMap("m", "v", nil)), "no sites"},
		{"latitude", second(SensorMap("m", "v", off)), "site 767541 at (91, -118.23799)"},
		{"centre", second(ReceptiveMap("m", sites, 4, nil)), "sensor 4 is not one of the 4 sites"},
		{"spoke", second(ReceptiveMap("m", sites, 0, []Spoke{{Site: -1, Theta: 1}})), "receptive sensor -1 is not one"},
		{"negative θ", second(ReceptiveMap("m", sites, 0, []Spoke{{Site: 1, Theta: -1}})), "767541 has negative θ -1"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, tc.err, tc.want)
		}
	}
}

func second(_ *plot.Plot, err error) error { return err }
