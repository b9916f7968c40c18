package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// svgLegend returns how each legend entry of the SVG figure at path is
// drawn: the colour ("#0072B2") and the outline of the last element of its
// thumbnail, the glyph of a series with glyphs ("fill MAAZ"). An entry is
// the <text> element of its name after the <path> elements of its
// thumbnail, the legend being drawn last.
func svgLegend(t *testing.T, path string) map[string][2]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pathRE := regexp.MustCompile(`<path d="([^"]*)" style="([^"]*)"`)
	colorRE := regexp.MustCompile(`(fill|stroke):(#[0-9A-Fa-f]{6})(;|$)`)
	textRE := regexp.MustCompile(`>([^<>]*)</text>`)
	looks := make(map[string][2]string)
	var last [2]string
	for _, line := range strings.Split(string(b), "\n") {
		if m := pathRE.FindStringSubmatch(line); m != nil {
			if strings.Contains(m[2], "opacity") {
				continue // a band, not the series' own colour
			}
			// The glyph's kind: filled or stroked, and its commands.
			shape := strings.Map(func(r rune) rune {
				if strings.ContainsRune("MLAZ", r) {
					return r
				}
				return -1
			}, m[1])
			var col string
			for _, c := range colorRE.FindAllStringSubmatch(m[2], -1) {
				col = c[2]
				if c[1] == "fill" {
					shape = "fill " + shape
				} else {
					shape = "stroke " + shape
				}
			}
			last = [2]string{col, shape}
		}
		if m := textRE.FindStringSubmatch(line); m != nil {
			looks[m[1]] = last
		}
	}
	return looks
}

// TestFigureStylesFollowModels checks that a model is drawn in the same
// colour, and with the same glyph where it has one, in every figure of a
// report, though its place among the series differs between them: here
// GRU is the summary's third model but the sweep's first, and PPRGo the
// distributions' first.
func TestFigureStylesFollowModels(t *testing.T) {
	d := tinyDocument([]string{"speed"}, SDGNN, GRUGCN, GRU, PPRGo)
	bySeries := map[string]SweepPoint{}
	for _, p := range d.Sweep {
		bySeries[p.Series] = p
	}
	this := bySeries[SDGNN]
	this.Series, this.of = SDGNN+" (this bundle)", SDGNN
	d.Sweep = []SweepPoint{bySeries[GRU], this, bySeries[PPRGo], bySeries[GRUGCN]}
	d.Distributions[0], d.Distributions[1] = d.Distributions[1], d.Distributions[0]
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	fig := func(name string) map[string][2]string {
		return svgLegend(t, filepath.Join(dir, DirFigures, name+".svg"))
	}
	stale, mape := fig("staleness"), fig("mape-receptive")
	ecdfs := map[string]map[string][2]string{"ecdf-sizes": fig("ecdf-sizes"), "ecdf-weights": fig("ecdf-weights")}
	for _, tc := range []struct{ model, series string }{
		{SDGNN, SDGNN + " (this bundle)"},
		{GRUGCN, GRUGCN},
		{GRU, GRU},
		{PPRGo, PPRGo},
	} {
		want, ok := stale[tc.model]
		if !ok || want[0] == "" {
			t.Fatalf("staleness figure: no legend entry for %s among %v", tc.model, stale)
		}
		if got, ok := mape[tc.series]; !ok || got != want {
			t.Errorf("mape-receptive figure: %s (%s) drawn as %v, want %v as in the staleness figure", tc.series, tc.model, got, want)
		}
		for name, looks := range ecdfs {
			if got, ok := looks[tc.model]; ok && got[0] != want[0] {
				t.Errorf("%s figure: %s drawn in %s, want %s as in the staleness figure", name, tc.model, got[0], want[0])
			}
		}
	}
	seen := map[[2]string]string{}
	for _, name := range []string{SDGNN, GRUGCN, GRU, PPRGo} {
		if other, ok := seen[stale[name]]; ok {
			t.Errorf("staleness figure: %s and %s drawn alike, as %v", name, other, stale[name])
		}
		seen[stale[name]] = name
	}
}
