package report

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
)

// tinyDocument returns a Document of 2 snapshots, 2 nodes and the given
// channels with one model per name, every prediction 1 and truth 2, ready
// for Write without Build.
func tinyDocument(channels []string, names ...string) *Document {
	const snaps, nodes = 2, 2
	c := len(channels)
	d := &Document{Dataset: "tiny", Part: "test", Snapshots: snaps, Nodes: nodes, Channels: channels,
		Bundle: "b.sdgnn", Created: "2026-01-01T00:00:00Z", snaps: []int64{0, 1}, window: 3}
	d.truth = make([]float64, snaps*nodes*c)
	for i := range d.truth {
		d.truth[i] = 2
	}
	for _, name := range names {
		m := Model{Name: name, Source: SourceReplay, Receptive: 1, pred: make([]float64, len(d.truth))}
		for i := range m.pred {
			m.pred[i] = 1
		}
		met := evaluation.Metrics{MAE: 1, RMSE: 1, MAPE: 50, Count: 4, MAPECount: 4}
		m.Report.Overall = met
		m.Report.PerChannel = make([]evaluation.Metrics, c)
		for i := range m.Report.PerChannel {
			m.Report.PerChannel[i] = met
		}
		m.Report.Chunks = []evaluation.Metrics{met, met}
		m.Report.ChunkMAEStd = []float64{0.1, 0.1}
		d.Models = append(d.Models, m)
		d.Sweep = append(d.Sweep, SweepPoint{Series: name, Model: name, Receptive: 1, Metrics: met})
	}
	th := &sdgnn.Theta{Nodes: [][]int{{0, 1}, {1}}, Weights: [][]float64{{0.6, 0.4}, {1}}}
	d.Field = FieldOf([][]int{{1}, {0}}, th, 0, 2)
	d.Distributions = []Distribution{DistributionOf(SDGNN, th), DistributionOf(PPRGo, th)}
	return d
}

// TestHTMLEscapesData checks that text from the data (the bundle's channel
// names and dataset, the paths of the command line) cannot put markup into
// report.html, even across a line break.
func TestHTMLEscapesData(t *testing.T) {
	evil := "x\n<script>alert(1)</script>"
	d := tinyDocument([]string{"flow", evil}, SDGNN)
	d.Bundle = "runs/a\n<img src=x onerror=alert(2)>.sdgnn"
	d.Dataset = "tiny\n<b>bold</b>"
	d.Command = "pems-train report -out \"r\n<i>\""
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<img src=x", "<b>bold", "<i>"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("report.html holds %q unescaped", bad)
		}
	}
}

// TestTablesWithPipeInName checks that a channel name holding "|" keeps
// the Markdown and HTML tables' columns.
func TestTablesWithPipeInName(t *testing.T) {
	d := tinyDocument([]string{"flow", "a|b"}, SDGNN)
	var md strings.Builder
	if err := d.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(l, "| "+SDGNN+" | a") {
			if n := strings.Count(l, "|") - strings.Count(l, `\|`); n != 6 {
				t.Errorf("per-channel row %q has %d cell separators, want 6", l, n)
			}
		}
	}
	var h strings.Builder
	if err := d.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "<td>a|b</td>") {
		t.Errorf("HTML per-channel table splits the channel name a|b:\n%s", h.String())
	}
}

// TestWriteModelWithNaNForecasts checks that a model whose forecasts are
// NaN somewhere in every chunk (its MAE and MAPE NaN: a broken baseline)
// does not stop the report from being written.
func TestWriteModelWithNaNForecasts(t *testing.T) {
	d := tinyDocument([]string{"speed"}, SDGNN, GRU)
	g := &d.Models[1]
	nan := math.NaN()
	bad := evaluation.Metrics{MAE: nan, RMSE: nan, MAPE: nan, Count: 4, MAPECount: 3}
	g.Report.Overall = bad
	g.Report.Chunks = []evaluation.Metrics{bad, bad}
	g.Report.ChunkMAEStd = []float64{nan, nan}
	d.Sweep[1].Metrics = bad
	g.pred[0], g.pred[2] = nan, nan
	if err := d.Write(t.TempDir()); err != nil {
		t.Fatalf("a model with NaN forecasts stops the report: %v", err)
	}
	for _, f := range d.Figures {
		if f.Name == "staleness" && (len(f.Files) == 0 || !strings.Contains(f.Caption, GRU)) {
			t.Errorf("staleness figure %+v: want it drawn, naming %s as left out", f, GRU)
		}
	}
}

// TestWriteMAPEFloorAboveEveryTruth checks that a MAPE floor above every
// truth (MAPE NaN for every model) does not stop the report.
func TestWriteMAPEFloorAboveEveryTruth(t *testing.T) {
	d := tinyDocument([]string{"speed"}, SDGNN)
	d.MAPEFloor = 100
	d.Sweep[0].Metrics.MAPE = math.NaN()
	d.Models[0].Report.Overall.MAPE = math.NaN()
	if err := d.Write(t.TempDir()); err != nil {
		t.Fatalf("MAPE NaN everywhere stops the report: %v", err)
	}
}
