package figure

import (
	"bytes"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

var nan = math.NaN()

func stalenessLines() []Line {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	return []Line{
		{Name: "SDGNN", X: x,
			Y:   []float64{1.62, 1.63, 1.65, 1.66, 1.68, 1.70, 1.71, 1.73, 1.75, 1.78},
			Err: []float64{0.10, 0.11, 0.10, 0.12, 0.11, 0.12, 0.13, 0.12, 0.14, 0.15}},
		{Name: "GRU-GCN", X: x,
			Y:   []float64{1.70, 1.74, nan, 1.80, 1.85, 1.88, 1.92, 1.95, 2.00, 2.04},
			Err: []float64{0.12, 0.12, 0.13, nan, 0.14, 0.15, 0.15, 0.16, 0.17, 0.18}},
		{Name: "GRU", X: x[:3], Y: []float64{2.1, 2.2, 2.3}},
		{Name: "teacher (one chunk)", X: x[:1], Y: []float64{1.9}, Err: []float64{0.2}},
	}
}

func receptivePoints() []Point {
	s := "SDGNN, 2-layer target"
	return []Point{
		{Series: s, Label: "6", X: 6, Y: 3.81},
		{Series: s, Label: "2", X: 2, Y: 4.10},
		{Series: s, Label: "4", X: 4, Y: 3.90},
		{Series: s, Label: "10", X: 10, Y: 3.75},
		{Series: s, Label: "20", X: 20, Y: 3.74},
		{Series: "GRU-GCN", X: 48.3, Y: 3.70},
		{Series: "GRU", X: 1, Y: 4.52},
		{Series: "PPRGo", X: 29.5, Y: 3.95},
		{Series: "PPRGo", X: nan, Y: 3.9},
	}
}

func nodeReductions() (x, y []float64) {
	for i := range 50 {
		a := 0.3 * math.Sin(float64(i))
		x = append(x, a+0.05*math.Cos(float64(3*i)))
		y = append(y, a+0.05*math.Sin(float64(7*i)))
	}
	x[3] = math.Inf(1)
	return x, y
}

func checkpoints() []Checkpoint {
	var cps []Checkpoint
	for e := 8; e >= 1; e-- {
		cps = append(cps, Checkpoint{Epoch: e, Budget: 6, ApproxErr: 1 / float64(e*e), MAPE: 3.7 + 0.8/float64(e), Best: e == 7})
	}
	cps = append(cps, Checkpoint{Epoch: 9, Budget: 6, ApproxErr: nan, MAPE: 3.5})
	return cps
}

func field() Field {
	f := Field{
		Center: 10,
		Hop:    map[int]int{10: 0, 1: 1, 2: 1, 3: 1, 20: 2, 21: 2, 22: 2, 23: 2, 30: 3, 31: 3},
		Edges: [][2]int{
			{10, 1}, {2, 10}, {10, 3}, {1, 2}, {2, 1}, // duplicate, either direction
			{1, 20}, {21, 1}, {2, 22}, {3, 23}, {20, 30}, {31, 23},
			{30, 30}, // self loop, ignored
			{31, 77}, // 77 is not drawn, ignored
		},
		Theta: map[int]float64{10: 0.31, 3: 0.25, 21: 0.2, 30: 0.1, 99: 0.1, 2: 0, 5: nan},
	}
	return f
}

func samples() []Sample {
	return []Sample{
		{Name: "SDGNN", Values: []float64{6, 6, 5, 6, 4, 6, 3, 6, 6, 2}},
		{Name: "PPRGo", Values: []float64{12, 30, 45, 8, nan, 22, 16, 33, 50}},
	}
}

// figures returns a constructor of each figure on realistic small inputs.
func figures() []struct {
	name string
	make func() (*plot.Plot, error)
} {
	return []struct {
		name string
		make func() (*plot.Plot, error)
	}{
		{"staleness", func() (*plot.Plot, error) {
			return Staleness(stalenessLines(), "chronological tenth of the test split", nil)
		}},
		{"mape_receptive", func() (*plot.Plot, error) { return MAPEReceptive(receptivePoints(), nil) }},
		{"node_reduction", func() (*plot.Plot, error) {
			x, y := nodeReductions()
			return NodeReduction(x, y, "SDGNN", "GRU-GCN")
		}},
		{"approx_error", func() (*plot.Plot, error) { return ApproxError(checkpoints(), "validation MSE(Ẑ, Z)") }},
		{"receptive_field", func() (*plot.Plot, error) { return ReceptiveField(field()) }},
		{"ecdf", func() (*plot.Plot, error) { return ECDF("receptive-set size", "nodes", samples(), nil) }},
	}
}

func svgBytes(t *testing.T, p *plot.Plot) []byte {
	t.Helper()
	wt, err := p.WriterTo(4*vg.Inch, 3*vg.Inch, "svg")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// checkImage fails unless img has at least two colours, i.e. it is not
// blank.
func checkImage(t *testing.T, img image.Image) {
	t.Helper()
	b := img.Bounds()
	if b.Empty() {
		t.Fatal("empty image")
	}
	r0, g0, b0, a0 := img.At(b.Min.X, b.Min.Y).RGBA()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if r, g, b, a := img.At(x, y).RGBA(); r != r0 || g != g0 || b != b0 || a != a0 {
				return
			}
		}
	}
	t.Error("image is a single colour")
}

func TestFigures(t *testing.T) {
	dir := t.TempDir()
	for _, test := range figures() {
		t.Run(test.name, func(t *testing.T) {
			p, err := test.make()
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}

			paths, err := Save(p, dir, test.name, 4*vg.Inch, 3*vg.Inch)
			if err != nil {
				t.Fatalf("Save: %v", err)
			}
			want := []string{filepath.Join(dir, test.name+".png"), filepath.Join(dir, test.name+".svg")}
			if !slices.Equal(paths, want) {
				t.Fatalf("Save paths = %q, want %q", paths, want)
			}

			f, err := os.Open(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("decoding %s: %v", paths[0], err)
			}
			checkImage(t, img)

			svg, err := os.ReadFile(paths[1])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg[:min(len(svg), 300)], []byte("<svg")) {
				t.Errorf("%s does not start with an XML/svg header: %.80q", paths[1], svg)
			}

			b, err := PNG(p, 3*vg.Inch, 2*vg.Inch)
			if err != nil {
				t.Fatalf("PNG: %v", err)
			}
			img, err = png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("decoding PNG output: %v", err)
			}
			checkImage(t, img)

			// Same input, same bytes.
			q, err := test.make()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(svgBytes(t, p), svgBytes(t, q)) {
				t.Error("SVG output differs between two plots of the same input")
			}
		})
	}
}

// TestFigureText checks the texts a figure shows (titles, axis labels,
// legend entries, annotations, tick labels) through its SVG, where each is
// a whole <text> element.
func TestFigureText(t *testing.T) {
	x, y := nodeReductions()
	tests := []struct {
		name string
		make func() (*plot.Plot, error)
		want []string
	}{
		{"staleness", func() (*plot.Plot, error) {
			return Staleness(stalenessLines(), "chronological 1/5 of the val split", nil)
		},
			[]string{"chronological 1/5 of the val split", "MAE", "SDGNN", "GRU-GCN"}},
		{"staleness default label", func() (*plot.Plot, error) { return Staleness(stalenessLines(), "", nil) },
			[]string{"chronological chunk of the split"}},
		{"mape_receptive", func() (*plot.Plot, error) { return MAPEReceptive(receptivePoints(), nil) },
			[]string{"MAPE (%)", "SDGNN, 2-layer target", "PPRGo", "6", "20", "50"}},
		{"node_reduction", func() (*plot.Plot, error) { return NodeReduction(x, y, "SDGNN", "GRU-GCN") },
			[]string{"MAE reduction vs GRU (%), SDGNN", "MAE reduction vs GRU (%), GRU-GCN", "nodes (49)", "y = x"}},
		{"approx_error", func() (*plot.Plot, error) { return ApproxError(checkpoints(), "validation MSE(Ẑ, Z)") },
			[]string{"validation MSE(Ẑ, Z)", "best (epoch 7, budget 6)"}},
		{"receptive_field", func() (*plot.Plot, error) { return ReceptiveField(field()) },
			[]string{"receptive field of sensor 10", "sensor 10", "3 (θ=0.25)", "99 (θ=0.1)", "2 (θ=0)",
				"3-hop neighbourhood", "beyond 3 hops (outer ring)", "selected (area proportional to θ)"}},
		{"ecdf", func() (*plot.Plot, error) { return ECDF("θ values", "θ", samples(), nil) },
			[]string{"θ values", "fraction ≤ x", "SDGNN", "PPRGo"}},
	}
	for _, test := range tests {
		p, err := test.make()
		if err != nil {
			t.Fatalf("%s: unexpected error: %v", test.name, err)
		}
		svg := string(svgBytes(t, p))
		for _, w := range test.want {
			if !strings.Contains(svg, ">"+html.EscapeString(w)+"</text>") {
				t.Errorf("%s: SVG lacks the text %q", test.name, w)
			}
		}
	}
}

func TestErrors(t *testing.T) {
	x := []float64{1, 2, 3}
	tests := []struct {
		name string
		err  func() error
		want string // in the error message
	}{
		{"staleness no lines", func() error { _, err := Staleness(nil, "", nil); return err }, "staleness: no lines"},
		{"staleness x vs y", func() error {
			_, err := Staleness([]Line{{Name: "SDGNN", X: x, Y: x[:2]}}, "", nil)
			return err
		}, `staleness line "SDGNN": 3 x values but 2 y values`},
		{"staleness y vs err", func() error {
			_, err := Staleness([]Line{{Name: "SDGNN", X: x, Y: x, Err: x[:1]}}, "", nil)
			return err
		}, `staleness line "SDGNN": 3 y values but 1 error values`},
		{"staleness nothing finite", func() error {
			_, err := Staleness([]Line{{Name: "ok", X: x, Y: x}, {Name: "GRU", X: x, Y: []float64{nan, math.Inf(1), nan}}}, "", nil)
			return err
		}, `staleness line "GRU": no finite points`},
		{"staleness empty line", func() error {
			_, err := Staleness([]Line{{Name: "GRU"}}, "", nil)
			return err
		}, `staleness line "GRU": no finite points`},
		{"staleness negative error", func() error {
			_, err := Staleness([]Line{{Name: "GRU", X: x, Y: x, Err: []float64{0.1, -0.1, 0.1}}}, "", nil)
			return err
		}, `staleness line "GRU": negative error`},

		{"MAPE no points", func() error { _, err := MAPEReceptive(nil, nil); return err }, "MAPE vs receptive field: no points"},
		{"MAPE nothing finite", func() error {
			_, err := MAPEReceptive([]Point{{Series: "GRU", X: 1, Y: 4}, {Series: "PPRGo", X: nan, Y: 4}}, nil)
			return err
		}, `MAPE vs receptive field: series "PPRGo": no finite points`},

		{"node reduction x vs y", func() error { _, err := NodeReduction(x, x[:2], "SDGNN", "GRU-GCN"); return err },
			"node reduction SDGNN vs GRU-GCN: 3 x values but 2 y values"},
		{"node reduction empty", func() error { _, err := NodeReduction(nil, nil, "SDGNN", "GRU-GCN"); return err },
			"node reduction SDGNN vs GRU-GCN: no nodes"},
		{"node reduction nothing finite", func() error {
			_, err := NodeReduction([]float64{nan, 1}, []float64{1, math.Inf(-1)}, "SDGNN", "GRU-GCN")
			return err
		}, "node reduction SDGNN vs GRU-GCN: no node with finite values"},

		{"approx no checkpoints", func() error { _, err := ApproxError(nil, "MSE"); return err }, "approximation error: no checkpoints"},
		{"approx nothing finite", func() error {
			_, err := ApproxError([]Checkpoint{{Epoch: 1, ApproxErr: nan, MAPE: 4}, {Epoch: 2, ApproxErr: 0.1, MAPE: math.Inf(1)}}, "MSE")
			return err
		}, "approximation error: no checkpoint with finite error and MAPE"},

		{"field empty", func() error { _, err := ReceptiveField(Field{Center: 4}); return err },
			"receptive field of sensor 4: empty neighbourhood"},
		{"field centre missing", func() error {
			_, err := ReceptiveField(Field{Center: 4, Hop: map[int]int{1: 1}})
			return err
		}, "receptive field of sensor 4: sensor missing"},
		{"field centre not at hop 0", func() error {
			_, err := ReceptiveField(Field{Center: 4, Hop: map[int]int{4: 1}})
			return err
		}, "receptive field of sensor 4: sensor at hop 1"},
		{"field other node at hop 0", func() error {
			_, err := ReceptiveField(Field{Center: 4, Hop: map[int]int{4: 0, 5: 0}})
			return err
		}, "receptive field of sensor 4: node 5 at hop 0"},
		{"field negative theta", func() error {
			_, err := ReceptiveField(Field{Center: 4, Hop: map[int]int{4: 0, 5: 1}, Theta: map[int]float64{5: -0.2}})
			return err
		}, "receptive field of sensor 4: node 5 has negative θ"},
		{"field theta -Inf", func() error {
			_, err := ReceptiveField(Field{Center: 4, Hop: map[int]int{4: 0}, Theta: map[int]float64{9: math.Inf(-1)}})
			return err
		}, "receptive field of sensor 4: node 9 has negative θ"},

		{"ECDF no samples", func() error { _, err := ECDF("sizes", "nodes", nil, nil); return err }, `ECDF "sizes": no samples`},
		{"ECDF empty sample", func() error {
			_, err := ECDF("sizes", "nodes", []Sample{{Name: "SDGNN", Values: x}, {Name: "PPRGo"}}, nil)
			return err
		}, `ECDF "sizes": sample "PPRGo": no finite values`},
		{"ECDF nothing finite", func() error {
			_, err := ECDF("sizes", "nodes", []Sample{{Name: "PPRGo", Values: []float64{nan}}}, nil)
			return err
		}, `ECDF "sizes": sample "PPRGo": no finite values among 1`},

		{"save nil plot", func() error { _, err := Save(nil, t.TempDir(), "f", vg.Inch, vg.Inch); return err }, "nil plot"},
		{"save empty name", func() error { _, err := Save(plot.New(), t.TempDir(), "", vg.Inch, vg.Inch); return err }, "empty file name"},
		{"save zero size", func() error { _, err := Save(plot.New(), t.TempDir(), "f", 0, vg.Inch); return err }, "not positive"},
		{"save missing dir", func() error {
			_, err := Save(plot.New(), filepath.Join(t.TempDir(), "missing"), "f", vg.Inch, vg.Inch)
			return err
		}, "figure: save "},
		{"png nil plot", func() error { _, err := PNG(nil, vg.Inch, vg.Inch); return err }, "nil plot"},
		{"png zero size", func() error { _, err := PNG(plot.New(), vg.Inch, -1); return err }, "not positive"},
	}
	for _, test := range tests {
		err := test.err()
		if err == nil {
			t.Errorf("%s: no error", test.name)
			continue
		}
		if !strings.HasPrefix(err.Error(), "figure: ") || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%s: error %q, want it to contain %q", test.name, err, test.want)
		}
	}
}

func TestRingLayout(t *testing.T) {
	const tol = 1e-12
	f := field()
	beyond := []int{99}
	edges := fieldEdges(f.Edges, func(n int) bool { _, ok := f.Hop[n]; return ok || n == 99 })
	pos := ringLayout(f.Center, f.Hop, beyond, edges)
	if len(pos) != len(f.Hop)+len(beyond) {
		t.Fatalf("%d positions, want %d", len(pos), len(f.Hop)+len(beyond))
	}
	if pos[f.Center] != (plotter.XY{}) {
		t.Errorf("centre at %v, want origin", pos[f.Center])
	}
	for n, h := range f.Hop {
		if r := math.Hypot(pos[n].X, pos[n].Y); math.Abs(r-float64(h)) > tol {
			t.Errorf("node %d at hop %d has radius %v", n, h, r)
		}
	}
	if r := math.Hypot(pos[99].X, pos[99].Y); math.Abs(r-4) > tol {
		t.Errorf("node 99 beyond 3 hops has radius %v, want 4", r)
	}
	// Nodes on a ring are evenly spaced, hence distinct.
	for a, pa := range pos {
		for b, pb := range pos {
			if a < b && math.Hypot(pa.X-pb.X, pa.Y-pb.Y) < 0.1 {
				t.Errorf("nodes %d and %d overlap at %v and %v", a, b, pa, pb)
			}
		}
	}
	again := ringLayout(f.Center, f.Hop, beyond, edges)
	for n, p := range pos {
		if again[n] != p {
			t.Errorf("node %d at %v then %v", n, p, again[n])
		}
	}
}

// TestRingLayoutOrder checks that children follow their parents around
// the rings, so that a tree is drawn without crossings whatever its ids.
func TestRingLayoutOrder(t *testing.T) {
	tests := []struct {
		name  string
		hop   map[int]int
		edges [][2]int
	}{
		{
			name:  "one child each, ids shuffled",
			hop:   map[int]int{0: 0, 1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2},
			edges: [][2]int{{0, 1}, {0, 2}, {0, 3}, {3, 4}, {1, 5}, {2, 6}},
		},
		{
			name:  "three rings",
			hop:   map[int]int{0: 0, 9: 1, 8: 1, 7: 1, 6: 1, 1: 2, 2: 2, 3: 2, 4: 2, 10: 3, 11: 3, 12: 3, 13: 3},
			edges: [][2]int{{0, 9}, {0, 8}, {0, 7}, {0, 6}, {9, 3}, {8, 1}, {7, 4}, {6, 2}, {1, 13}, {2, 10}, {3, 12}, {4, 11}},
		},
	}
	for _, test := range tests {
		pos := ringLayout(0, test.hop, nil, test.edges)
		for _, e := range test.edges {
			if e[0] == 0 {
				continue
			}
			parent, child := pos[e[0]], pos[e[1]]
			d := math.Remainder(math.Atan2(child.Y, child.X)-math.Atan2(parent.Y, parent.X), 2*math.Pi)
			if math.Abs(d) > 1e-9 {
				t.Errorf("%s: node %d is %v rad round from its parent %d", test.name, e[1], d, e[0])
			}
		}
	}
}

func TestECDFSteps(t *testing.T) {
	tests := []struct {
		vs   []float64
		end  float64
		want plotter.XYs
	}{
		{[]float64{3}, 3, plotter.XYs{{X: 3, Y: 0}, {X: 3, Y: 1}}},
		{[]float64{1, 2, 2, 3}, 5, plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 0.25}, {X: 2, Y: 0.75}, {X: 3, Y: 1}, {X: 5, Y: 1}}},
		{[]float64{2, 2}, 2, plotter.XYs{{X: 2, Y: 0}, {X: 2, Y: 1}}},
	}
	for _, test := range tests {
		if got := ecdf(test.vs, test.end); !slices.Equal(got, test.want) {
			t.Errorf("ecdf(%v, %v) = %v, want %v", test.vs, test.end, got, test.want)
		}
	}
}

func TestLogAxis(t *testing.T) {
	tests := []struct {
		xs      []float64
		wantLog bool
	}{
		{[]float64{1, 4, 50}, true},
		{[]float64{2, 6, 20}, false}, // exactly a factor 10
		{[]float64{0, 6, 50}, false}, // not positive
		{[]float64{-1, 50}, false},
		{[]float64{1e-4, 0.5}, true},
		{[]float64{7}, false},
	}
	for _, test := range tests {
		p := plot.New()
		useLogX(p, test.xs)
		if _, log := p.X.Scale.(plot.LogScale); log != test.wantLog {
			t.Errorf("useLogX(%v): log scale %t, want %t", test.xs, log, test.wantLog)
		}
	}
}

func TestLogTicks(t *testing.T) {
	tests := []struct {
		min, max float64
		want     []string
	}{
		{1, 50, []string{"1", "2", "5", "10", "20", "50", "100"}},
		{0.003, 0.4, []string{"0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"}},
		{1e-6, 10, []string{"1e-6", "1e-5", "0.0001", "0.001", "0.01", "0.1", "1", "10"}},
		{0, 10, nil},
		{math.NaN(), 10, nil},
	}
	for _, test := range tests {
		var got []string
		for _, tk := range (logTicks{}).Ticks(test.min, test.max) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, test.want) {
			t.Errorf("ticks(%v, %v) labels = %q, want %q", test.min, test.max, got, test.want)
		}
	}
}

// TestStalenessGap checks that a chunk without a finite MAE (one without
// a reading to score) is a gap in its line and band, not bridged by a
// segment from the chunk before it to the chunk after it, which would
// draw values where there are none.
func TestStalenessGap(t *testing.T) {
	for _, tc := range []struct {
		name     string
		y, err   []float64
		segments int // line segments drawn
		bands    int // shaded polygons drawn
	}{
		{"no gap", []float64{1, 2, 3, 4}, []float64{0.1, 0.1, 0.1, 0.1}, 3, 1},
		{"gap", []float64{1, 2, nan, 4, 5}, []float64{0.1, 0.1, nan, 0.1, 0.1}, 2, 2},
		{"gap after one point", []float64{1, nan, 3, 4}, []float64{0.1, nan, 0.1, 0.1}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := make([]float64, len(tc.y))
			for i := range x {
				x[i] = float64(i + 1)
			}
			p, err := Staleness([]Line{{Name: "m", X: x, Y: tc.y, Err: tc.err}}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			svg := string(svgBytes(t, p))
			var segments, bands int
			for _, el := range strings.Split(svg, "<path ")[1:] {
				d, _, _ := strings.Cut(strings.TrimPrefix(el, `d="`), `"`)
				switch {
				case strings.Contains(el, "stroke-width:1.5") && !strings.Contains(el, "fill:#"):
					segments += strings.Count(d, "L")
				case strings.Contains(el, "fill:#") && !strings.Contains(el, "fill:#FFFFFF") && strings.Count(d, "L") >= 3:
					bands++
				}
			}
			segments-- // the legend's line
			bands--    // the legend's
			if segments != tc.segments || bands != tc.bands {
				t.Errorf("%d line segments and %d bands, want %d and %d", segments, bands, tc.segments, tc.bands)
			}
		})
	}
}
