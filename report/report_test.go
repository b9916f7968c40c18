package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// path graph 0-1-2-3-4 plus an isolated node 5.
var pathGraph = [][]int{{1}, {0, 2}, {1, 3}, {2, 4}, {3}, {}}

func TestHopDistances(t *testing.T) {
	for _, tc := range []struct {
		src  int
		want []int
	}{
		{0, []int{0, 1, 2, 3, 4, -1}},
		{2, []int{2, 1, 0, 1, 2, -1}},
		{5, []int{-1, -1, -1, -1, -1, 0}},
	} {
		if got := hopDistances(pathGraph, tc.src); !slices.Equal(got, tc.want) {
			t.Errorf("from %d: %v, want %v", tc.src, got, tc.want)
		}
	}
}

func TestFieldOf(t *testing.T) {
	theta := &sdgnn.Theta{Nodes: [][]int{{0, 1}, {1}, {0, 2, 4}, {3}, {4}, {5}}, Weights: [][]float64{{1, 1}, {1}, {0.2, 0.5, 0.3}, {1}, {1}, {1}}}
	f := FieldOf(pathGraph, theta, 2, 1)
	// 1-hop neighbourhood {1, 2, 3} plus the selected nodes 0 and 4 (2 hops).
	wantHop := map[int]int{0: 2, 1: 1, 2: 0, 3: 1, 4: 2}
	if len(f.Hop) != len(wantHop) {
		t.Fatalf("hop %v, want %v", f.Hop, wantHop)
	}
	for v, h := range wantHop {
		if f.Hop[v] != h {
			t.Fatalf("hop %v, want %v", f.Hop, wantHop)
		}
	}
	if want := [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}}; !slices.Equal(f.Edges, want) {
		t.Errorf("edges %v, want %v", f.Edges, want)
	}
	if want := []Selected{{0, 0.2, 2}, {2, 0.5, 0}, {4, 0.3, 2}}; !slices.Equal(f.Selected, want) {
		t.Errorf("selected %v, want %v", f.Selected, want)
	}
}

func TestPickSensor(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes [][]int
		want  int
	}{
		{"largest set", [][]int{{0}, {0, 1, 2}, {2}, {3}, {4}, {5}}, 1},
		{"tie: more nodes beyond one hop", [][]int{{0, 1}, {1, 2}, {2, 4}, {3}, {4}, {5}}, 2},
		{"tie everywhere: smallest id", [][]int{{0}, {1}, {2}, {3}, {4}, {5}}, 0},
	} {
		th := &sdgnn.Theta{Nodes: tc.nodes}
		if got := PickSensor(th, pathGraph); got != tc.want {
			t.Errorf("%s: sensor %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestDistributionOf(t *testing.T) {
	th := &sdgnn.Theta{Nodes: [][]int{{0, 1}, {1}, {}}, Weights: [][]float64{{1, 3}, {2}, {}}}
	d := DistributionOf("m", th)
	if !slices.Equal(d.Sizes, []float64{2, 1, 0}) || !slices.Equal(d.Weights, []float64{0.25, 0.75, 1}) {
		t.Fatalf("sizes %v weights %v", d.Sizes, d.Weights)
	}
}

func TestBudgetConfig(t *testing.T) {
	base := sdgnn.DefaultConfig() // 46 → 6, one per 100 epochs, 4100 epochs: 100 at the end
	for _, tc := range []struct{ budget, start, epochs int }{
		{6, 46, 4100},
		{20, 46, 4100}, // reaches 20 at 2600; never cut
		{2, 46, 4500},  // 4400 to reach 2, then the same 100
		{60, 60, 4100}, // a budget above the start starts there
	} {
		c := budgetConfig(base, tc.budget)
		if c.BudgetEnd != tc.budget || c.BudgetStart != tc.start || c.Epochs != tc.epochs {
			t.Errorf("budget %d: start %d end %d epochs %d, want start %d epochs %d", tc.budget, c.BudgetStart, c.BudgetEnd, c.Epochs, tc.start, tc.epochs)
		}
		if err := c.Validate(); err != nil || c.Budget(c.Epochs) != tc.budget {
			t.Errorf("budget %d: %v; budget at the last epoch %d", tc.budget, err, c.Budget(c.Epochs))
		}
	}
}

func TestMarkdownToHTML(t *testing.T) {
	md := "# Title <x>\n\nSome `a<b>` text.\n\n| model | MAE |\n|---|---:|\n| GRU | 1.5 |\n\n- one\n- two\n<figure>raw</figure>\n"
	got := markdownToHTML(md)
	for _, want := range []string{"<h1>Title &lt;x&gt;</h1>", "<p>Some <code>a&lt;b&gt;</code> text.</p>", "<tr><th>model</th><th>MAE</th></tr>",
		"<tr><td>GRU</td><td>1.5</td></tr>", "<ul>\n<li>one</li>\n<li>two</li>\n</ul>", "<figure>raw</figure>"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "---") {
		t.Errorf("table rule rendered:\n%s", got)
	}
}

func TestReductions(t *testing.T) {
	d := &Document{}
	if reductions(d) != nil {
		t.Fatal("reductions without models")
	}
	mk := func(name string, maes ...float64) Model {
		m := Model{Name: name}
		m.Report.PerNode = make([]metricsT, len(maes))
		for i, v := range maes {
			m.Report.PerNode[i].MAE = v
		}
		return m
	}
	d.Models = []Model{mk(SDGNN, 1, 2, 1), mk(GRUGCN, 0.5, 2, 1), mk(GRU, 2, 0, math.NaN())}
	got := reductions(d)
	if len(got) != 1 || got[0] != (NodeReduction{Node: 0, GRUMAE: 2, SDGNN: 50, GRUGCN: 75}) {
		t.Fatalf("reductions %+v", got)
	}
}

// TestReductionsJSON checks that a node whose MAE is NaN under SDGNN (a
// broken forecast) keeps its NaN reduction, which metrics.json writes as
// null: the figure leaves such nodes out and the Markdown's average shows
// NaN, but the report must still be written.
func TestReductionsJSON(t *testing.T) {
	mk := func(name string, maes ...float64) Model {
		m := Model{Name: name}
		m.Report.PerNode = make([]metricsT, len(maes))
		for i, v := range maes {
			m.Report.PerNode[i].MAE = v
		}
		return m
	}
	d := &Document{Models: []Model{mk(SDGNN, 1, math.NaN()), mk(GRUGCN, 1, 1), mk(GRU, 2, 2)}}
	d.Reductions = reductions(d)
	if len(d.Reductions) != 2 || !math.IsNaN(d.Reductions[1].SDGNN) {
		t.Fatalf("reductions %+v, want node 1's SDGNN reduction NaN", d.Reductions)
	}
	b, err := json.Marshal(d.Reductions)
	if err != nil {
		t.Fatalf("marshal %+v: %v", d.Reductions, err)
	}
	if want := `[{"node":0,"gru_mae":2,"sdgnn":50,"gru_gcn":50},{"node":1,"gru_mae":2,"sdgnn":null,"gru_gcn":50}]`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("the document: %v", err)
	}
}

func ExampleSlug() {
	for _, n := range []string{"SDGNN", "GRU-GCN", "GRU-GCN L1"} {
		fmt.Println(Slug(n))
	}
	// Output:
	// sdgnn
	// gru_gcn
	// gru_gcn_l1
}

type metricsT = evaluation.Metrics

// TestStalenessEmptyChunk checks that a chunk without a reading to score
// (Count 0, whose metrics are zero by convention) is shown as a gap, not
// as a perfect MAE of 0 ± 0.
func TestStalenessEmptyChunk(t *testing.T) {
	m := Model{Name: SDGNN}
	m.Report.Chunks = []metricsT{{MAE: 1, Count: 4}, {}}
	m.Report.ChunkMAEStd = []float64{0.5, 0}
	d := &Document{Models: []Model{m}}
	var b strings.Builder
	if err := d.Markdown(&b); err != nil {
		t.Fatal(err)
	}
	if want := "| " + SDGNN + " | 1.0000 ± 0.5000 | — |"; !strings.Contains(b.String(), want) {
		t.Errorf("staleness table without %q:\n%s", want, b.String())
	}
}

func TestMedianOf(t *testing.T) {
	for _, tc := range []struct {
		v    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{4, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{0.2, 0.8}, 0.5},
	} {
		if got := medianOf(tc.v); got != tc.want {
			t.Errorf("medianOf(%v) = %v, want %v", tc.v, got, tc.want)
		}
	}
	if got := medianOf(nil); !math.IsNaN(got) {
		t.Errorf("medianOf(nil) = %v, want NaN", got)
	}
}

// TestWriteFileKeepsOldOnFailure checks that a report file whose writing
// fails halfway leaves the file that was there whole, and no partial file.
func TestWriteFileKeepsOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileMetrics)
	if err := writeBytes(path, []byte("{\"old\": true}\n")); err != nil {
		t.Fatal(err)
	}
	cut := errors.New("disk full")
	err := writeFile(path, func(w io.WriteSeeker) error {
		if _, err := w.Write([]byte("{\"new\":")); err != nil {
			return err
		}
		return cut
	})
	if !errors.Is(err, cut) || !strings.Contains(err.Error(), path) {
		t.Errorf("failed write: %v, want %v naming %s", err, cut, path)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != "{\"old\": true}\n" {
		t.Errorf("after the failed write the file holds %q (%v)", got, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only %s", len(entries), FileMetrics)
	}
}

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

// TestStalenessAxisNamesChunksAndPart checks that the staleness figure's
// x axis names the chunks and the split part replayed, here halves of the
// validation part, not tenths of the test part whatever they are.
func TestStalenessAxisNamesChunksAndPart(t *testing.T) {
	d := tinyDocument([]string{"speed"}, SDGNN)
	d.Part = "val"
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range d.Figures {
		if f.Name != "staleness" {
			continue
		}
		for _, path := range f.Files {
			if !strings.HasSuffix(path, ".svg") {
				continue
			}
			svg, err := os.ReadFile(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			if want := ">chronological 1/2 of the val split</text>"; !strings.Contains(string(svg), want) {
				t.Errorf("%s lacks the x label %q", path, want)
			}
			return
		}
	}
	t.Fatalf("no staleness SVG among %+v", d.Figures)
}

// TestDocumentRangeJSON checks that metrics.json names the range and deal
// replayed with lower-case keys, as the rest of it, and that a metrics.json
// written before (capitalised "Start", "Lo", ...) reads the same.
func TestDocumentRangeJSON(t *testing.T) {
	want := Document{Dataset: "sz-taxi", Part: "test", Range: snapshot.Range{Start: 0, End: 2964}, Deal: snapshot.Deal{Every: 10, Lo: 8, Hi: 10}, Snapshots: 592}
	b, err := json.Marshal(&want)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"range":{"start":0,"end":2964},"deal":{"every":10,"lo":8,"hi":10}`) {
		t.Errorf("metrics.json: %s", s)
	}
	for _, tc := range []struct {
		name, json string
	}{
		{"current", string(b)},
		{"capitalised, as written before", `{"dataset":"sz-taxi","split":"test","range":{"Start":0,"End":2964},"deal":{"Every":10,"Lo":8,"Hi":10},"snapshots":592}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Document
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if got.Range != want.Range || got.Deal != want.Deal || got.Snapshots != want.Snapshots {
				t.Errorf("read range %+v, deal %+v, %d snapshots", got.Range, got.Deal, got.Snapshots)
			}
		})
	}
}

// TestReportUnits checks that the report labels MAE and RMSE with the
// readings' units, in report.md (and so report.html), metrics.json and the
// staleness figure's y axis: the one unit of a single-channel dataset, each
// channel's where they differ (the pooled figures saying so), none where
// they are not known.
func TestReportUnits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		channels  []string
		units     []string
		md        []string
		yLabel    string // the staleness figure's, as the SVG has it
		jsonUnits string
	}{
		{"one channel", []string{"speed"}, []string{"km/h"},
			[]string{"original scale (km/h)", "| MAE (km/h) | RMSE (km/h) |", "### Staleness: MAE (km/h) per", "| mean receptive field | MAE (km/h) | MAPE % |",
				"Per-node MAE reduction relative to GRU: SDGNN"},
			">MAE (km/h)</text>", `"channel_units": [`},
		{"channels of other units", []string{"flow", "occupancy", "speed"}, []string{"veh/5 min", "fraction", "mph"},
			[]string{"original scale (flow: veh/5 min, occupancy: fraction, speed: mph; pooled in the overall, per-chunk and per-node figures)",
				"| flow (veh/5 min) |", "| occupancy (fraction) |", "| speed (mph) |", "### Staleness: MAE (channels' units pooled) per",
				"Per-node MAE reduction relative to GRU, its channels pooled: SDGNN"},
			">MAE (channels", `"channel_units": [`},
		{"units not known", []string{"a", "b"}, nil,
			[]string{"MAE and RMSE on the original scale, masked", "| MAE | RMSE |", "| a |", "### Staleness: MAE per"},
			">MAE</text>", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tinyDocument(tc.channels, SDGNN)
			d.Units = tc.units
			d.Reductions = []NodeReduction{{Node: 0, GRUMAE: 2, SDGNN: 5, GRUGCN: 6}}
			dir := t.TempDir()
			if err := d.Write(dir); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(dir, FileMarkdown))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.md {
				if !strings.Contains(string(md), w) {
					t.Errorf("report.md lacks %q:\n%s", w, md)
				}
			}
			js, err := os.ReadFile(filepath.Join(dir, FileMetrics))
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(js), `"channel_units"`); has != (tc.jsonUnits != "") {
				t.Errorf("metrics.json names channel units: %v, want %v", has, tc.jsonUnits != "")
			}
			svg, err := os.ReadFile(filepath.Join(dir, DirFigures, "staleness.svg"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(svg), tc.yLabel) {
				t.Errorf("staleness.svg lacks the y label %q", tc.yLabel)
			}
		})
	}
}

// TestApproxErrorCaptionNamesFloor checks that the approximation-error
// figure, whose MAPE is the bundle's validation MAPE with the floor it was
// distilled with, says so when the report's MAPE floor is another.
func TestApproxErrorCaptionNamesFloor(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		bundleFloor, reportF float64
		want                 string // in the caption; "" for no note
	}{
		{"same floor", 1, 1, ""},
		{"report without floor", 1, 0, "This MAPE is the bundle's, as distilled (truths below 1 left out), not the report's (every truth counted)."},
		{"bundle without floor", 0, 2, "This MAPE is the bundle's, as distilled (every truth counted), not the report's (truths below 2 left out)."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tinyDocument([]string{"speed"}, SDGNN)
			d.MAPEFloor, d.CheckpointsMAPEFloor = tc.reportF, tc.bundleFloor
			d.Checkpoints = []sdgnn.Round{{Epoch: 1, Budget: 6, MSE: 0.5, Val: evaluation.Metrics{MAPE: 30, Count: 1}}, {Epoch: 2, Budget: 6, MSE: 0.25, Val: evaluation.Metrics{MAPE: 20, Count: 1}, Best: true}}
			if err := d.Write(t.TempDir()); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(d.Figures, func(f Figure) bool { return f.Name == "approx-error" })
			if i < 0 || len(d.Figures[i].Files) == 0 {
				t.Fatalf("approx-error not drawn: %+v", d.Figures)
			}
			c := d.Figures[i].Caption
			if tc.want == "" && strings.Contains(c, "as distilled") || tc.want != "" && !strings.Contains(c, tc.want) {
				t.Errorf("caption %q, want it to hold %q", c, tc.want)
			}
		})
	}
}

// TestStalenessCaption checks that the staleness figure says a model
// degrades as the split goes on only where the part comes after the
// training data: a time split's validation or test part, not the training
// part, nor a split by nodes or windows, whose parts span the period
// trained on.
func TestStalenessCaption(t *testing.T) {
	for _, tc := range []struct {
		name    string
		part    string
		deal    snapshot.Deal
		scored  []int
		degrade bool
	}{
		{"time, test", "test", snapshot.Deal{}, nil, true},
		{"time, val", "val", snapshot.Deal{}, nil, true},
		{"time, train", "train", snapshot.Deal{}, nil, false},
		{"windows, test", "test", snapshot.Deal{Every: 10, Lo: 8, Hi: 10}, nil, false},
		{"nodes, test", "test", snapshot.Deal{}, []int{1}, false},
		{"windows, train", "train", snapshot.Deal{Every: 10, Lo: 0, Hi: 7}, nil, false},
		{"nodes, train", "train", snapshot.Deal{}, []int{0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tinyDocument([]string{"speed"}, SDGNN)
			d.Part, d.Deal, d.Scored = tc.part, tc.deal, tc.scored
			if err := d.Write(t.TempDir()); err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(d.Figures, func(f Figure) bool { return f.Name == "staleness" })
			if i < 0 {
				t.Fatal("no staleness figure")
			}
			caption := d.Figures[i].Caption
			if got := strings.Contains(caption, "degrades"); got != tc.degrade {
				t.Errorf("caption says the model degrades: %v, want %v:\n%s", got, tc.degrade, caption)
			}
			if !tc.degrade && !strings.Contains(caption, "not staleness") {
				t.Errorf("caption does not say the trend is not staleness:\n%s", caption)
			}
			// The training part of any split is the data trained on, not
			// sensors scored over the period others were trained on.
			if tc.part == "train" && !strings.Contains(caption, "trained on this part") {
				t.Errorf("caption of the training part does not say the models were trained on it:\n%s", caption)
			}
			if !strings.Contains(caption, "shaded band") {
				t.Errorf("caption does not name the shaded band that figure.Staleness draws:\n%s", caption)
			}
		})
	}
}

// TestWriteOutages checks the report's outage parts: the completeness and
// simulated-outage tables list each model's figures, and the figure of MAE
// against outage length is drawn with a line per model scored under the
// outages, or left out, saying why, without a scenario.
func TestWriteOutages(t *testing.T) {
	d := tinyDocument([]string{"speed"}, SDGNN, GRU)
	for i := range d.Models {
		own := []evaluation.Class{{Own: "complete", Metrics: evaluation.Metrics{MAE: 2, Count: 3}}, {Own: "1–2", Metrics: evaluation.Metrics{MAE: 3, Count: 1}},
			{Own: "4–2"}, {Own: "whole window"}}
		d.Models[i].Report.Completeness = &evaluation.Breakdown{Window: 3, Own: own}
	}
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	if f := figureNamed(d, "outage-length"); f == nil || f.Skipped == "" {
		t.Errorf("outage figure without a scenario: %+v", f)
	}
	d.Outage = "share=0.5,len=1:3,seed=1"
	for i := range d.Models {
		for _, l := range []int{1, 3} {
			sil := evaluation.Metrics{MAE: float64(4*(i+1) + l), Count: 2}
			other := evaluation.Metrics{MAE: 2.5, Count: 2}
			d.Models[i].Outages = append(d.Models[i].Outages, OutagePass{Length: l, Breakdown: evaluation.Breakdown{Window: 3, Silenced: &sil, Unsilenced: &other}})
		}
	}
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	f := figureNamed(d, "outage-length")
	if f == nil || f.Skipped != "" || len(f.Files) == 0 {
		t.Fatalf("outage figure: %+v", f)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| " + SDGNN + " | 2.0000 (n 3) | 3.0000 (n 1) | — (0) | — (0) |",
		"Scenario share=0.5,len=1:3,seed=1",
		"| " + SDGNN + " | 2.0000 | 5.0000 | 7.0000 | 2.5000 |",
		"| " + GRU + " | 2.0000 | 9.0000 | 11.0000 | 2.5000 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("no %q in:\n%s", want, md)
		}
	}
}

// figureNamed returns d's figure of that name, nil if there is none.
func figureNamed(d *Document, name string) *Figure {
	for i := range d.Figures {
		if d.Figures[i].Name == name {
			return &d.Figures[i]
		}
	}
	return nil
}
