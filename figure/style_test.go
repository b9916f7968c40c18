package figure

import (
	"fmt"
	"image/color"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// look is how a legend entry's thumbnail is drawn: its last opaque colour
// and the outline of its last path, relative to the path's start.
type look struct {
	color color.Color
	shape string
}

// legendLooks returns the look of each entry of p's legend by name.
func legendLooks(t *testing.T, p *plot.Plot) map[string]look {
	t.Helper()
	var rec recorder.Canvas
	p.Legend.Draw(draw.Canvas{Canvas: &rec, Rectangle: vg.Rectangle{Max: vg.Point{X: 400, Y: 300}}})
	looks := make(map[string]look)
	var cur look
	for _, a := range rec.Actions {
		switch a := a.(type) {
		case *recorder.SetColor:
			if a.Color == nil {
				continue
			}
			if _, _, _, alpha := a.Color.RGBA(); alpha == 0xffff {
				cur.color = a.Color
			}
		case *recorder.Fill:
			cur.shape = "fill " + outline(a.Path)
		case *recorder.Stroke:
			cur.shape = "stroke " + outline(a.Path)
		case *recorder.FillString:
			if _, ok := looks[a.String]; ok {
				t.Fatalf("legend entry %q twice", a.String)
			}
			looks[a.String] = cur
			cur = look{}
		}
	}
	return looks
}

// outline formats path relative to its first point; legendLooks adds
// whether it was filled or stroked, which tells a filled glyph from the
// same outline stroked (PyramidGlyph, TriangleGlyph).
func outline(path vg.Path) string {
	if len(path) == 0 {
		return ""
	}
	o := path[0].Pos
	s := ""
	for _, c := range path {
		if c.Type == vg.CloseComp {
			s += "close"
			continue
		}
		s += fmt.Sprintf("%d(%.2f,%.2f r%.2f %.2f+%.2f) ", c.Type, c.Pos.X-o.X, c.Pos.Y-o.Y, c.Radius, c.Start, c.Angle)
	}
	return s
}

// TestStylesAcrossFigures checks that figures drawn with one Styles draw
// a model in the same colour and glyph whatever its place among each
// figure's series, and that distinct names within a figure look distinct.
func TestStylesAcrossFigures(t *testing.T) {
	x := []float64{1, 2, 3}
	styles := NewStyles("SDGNN", "GRU-GCN", "GRU")
	styles.Alias("SDGNN (this bundle)", "SDGNN")
	stale, err := Staleness([]Line{
		{Name: "SDGNN", X: x, Y: x, Err: x},
		{Name: "GRU-GCN", X: x, Y: x},
		{Name: "GRU", X: x, Y: x},
		{Name: "PPRGo", X: x, Y: x},
	}, "", styles)
	if err != nil {
		t.Fatal(err)
	}
	// GRU first and PPRGo before SDGNN: a figure's own order would style
	// them as the staleness figure's SDGNN and GRU-GCN.
	mape, err := MAPEReceptive([]Point{
		{Series: "GRU", X: 1, Y: 4},
		{Series: "PPRGo", X: 30, Y: 3.9},
		{Series: "SDGNN (this bundle)", X: 6, Y: 3.8},
		{Series: "SDGNN, 2-layer target", X: 4, Y: 3.9},
		{Series: "SDGNN, 2-layer target", X: 6, Y: 3.7},
		{Series: "GRU-GCN", X: 48, Y: 3.7},
	}, styles)
	if err != nil {
		t.Fatal(err)
	}
	ecdf, err := ECDF("sizes", "nodes", []Sample{{Name: "PPRGo", Values: x}, {Name: "SDGNN", Values: x}}, styles)
	if err != nil {
		t.Fatal(err)
	}
	sl, ml, el := legendLooks(t, stale), legendLooks(t, mape), legendLooks(t, ecdf)
	for _, name := range []string{"SDGNN", "GRU-GCN", "GRU", "PPRGo"} {
		want := styles.Style(name)
		mname := name
		if name == "SDGNN" {
			mname = "SDGNN (this bundle)"
		}
		for fig, got := range map[string]look{"staleness": sl[name], "mape-receptive": ml[mname]} {
			if got.color != want.Color {
				t.Errorf("%s: %s drawn in %v, want %v", fig, name, got.color, want.Color)
			}
			if got.shape != sl[name].shape {
				t.Errorf("%s: %s glyph %s, want %s as in staleness", fig, name, got.shape, sl[name].shape)
			}
		}
		if got, ok := el[name]; ok && got.color != want.Color {
			t.Errorf("ECDF: %s drawn in %v, want %v", name, got.color, want.Color)
		}
	}
	for fig, looks := range map[string]map[string]look{"staleness": sl, "mape-receptive": ml} {
		seen := make(map[look]string)
		for name, l := range looks {
			if other, ok := seen[l]; ok {
				t.Errorf("%s: %s and %s look the same", fig, name, other)
			}
			seen[l] = name
		}
	}
}

// TestStyles checks the order in which Styles gives out styles, and that
// Alias shares a style without taking one from the palette or changing a
// name's.
func TestStyles(t *testing.T) {
	s := NewStyles("a", "b", "a")
	s.Alias("a (again)", "a")
	s.Alias("b", "a") // b has a style: kept
	s.Alias("d", "c") // c has none: it gets the next
	for _, tc := range []struct {
		name string
		want int
	}{{"a", 0}, {"b", 1}, {"a (again)", 0}, {"c", 2}, {"d", 2}, {"e", 3}} {
		if got, want := s.Style(tc.name), styleAt(tc.want); got != want {
			t.Errorf("Style(%q) = %v, want style %d, %v", tc.name, got, tc.want, want)
		}
	}
	var nilStyles *Styles
	if got, want := nilStyles.of(4, "x"), styleAt(4); got != want {
		t.Errorf("nil Styles: 5th series styled %v, want %v", got, want)
	}
}
