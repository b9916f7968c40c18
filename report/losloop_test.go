package report

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// losLoopReport prepares the real Los-loop data (a chronological 6:2:2
// split of 12-step windows) and a bundle of random layers on it, each
// sensor reading itself and its first two neighbours on the road graph,
// that records the detectors' IDs and locations as pems-train distill
// records them. The layers' numbers do not matter here: the report's
// figures and names do.
func losLoopReport(t *testing.T) (*snapshot.Prepared, *sdgnn.Bundle) {
	t.Helper()
	p, err := snapshot.Prepare(datatest.Dir(t), "los-loop", 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, nil)
	if err != nil {
		datatest.SkipUnlessCI(t, "los-loop: %v", err)
	}
	n, C, H := p.Set.Nodes, p.Set.Channels, 8
	theta := &sdgnn.Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z, nb := range p.Dataset.Graph.Neighbors() {
		ks := append([]int{z}, nb[:min(2, len(nb))]...)
		slices.Sort(ks)
		theta.Nodes[z] = slices.Compact(ks)
		for i := range theta.Nodes[z] {
			theta.Weights[z] = append(theta.Weights[z], 0.6/float64(i+1))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	cfg := sdgnn.DefaultConfig()
	cfg.PhiHidden = H
	graph := p.GraphFingerprint()
	meta := sdgnn.BundleMeta{Dataset: "los-loop", Nodes: n, Channels: p.Dataset.Info.Channels, Window: 12, Hidden: H, Norm: p.Set.Norm,
		Split: p.Split, Graph: &graph, Config: cfg, Version: "test-los-loop", SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	b, err := sdgnn.NewBundle(meta, gru.New(p.Set.Inputs(), H, rng), nn.NewMLP("phi", H, H, H, rng), theta, nn.NewMLP("dec", H, H, C, rng))
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

// TestReportMapsOnLosLoop builds and writes the report on a bundle of
// Los-loop's detectors: it draws the map of SDGNN's MAE per sensor and
// the chosen sensor's receptive set on the map (PNGs that decode, SVGs
// beside them), names the sensors by their IDs in the text, the figures
// and metrics.json, and writes a sensor column of IDs in the predictions.
func TestReportMapsOnLosLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("replays Los-loop")
	}
	p, b := losLoopReport(t)
	test, err := p.Split.Part("test")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Build(context.Background(), Input{Prepared: p, Part: "test", Range: snapshot.Range{Start: test.First(), End: test.First() + 24},
		Bundle: b, BundlePath: "los-loop.sdgnn", Sensor: -1, MAPEFloor: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	drawn := map[string]Figure{}
	for _, f := range d.Figures {
		drawn[f.Name] = f
	}
	for _, name := range []string{"sensor-map", "receptive-map", "receptive-field"} {
		f, ok := drawn[name]
		if !ok || f.Skipped != "" || len(f.Files) != 2 {
			t.Fatalf("figure %s: %+v, want it drawn as PNG and SVG", name, f)
		}
		raw, err := os.ReadFile(filepath.Join(dir, f.Files[0]))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", f.Files[0], err)
		}
		if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 300 {
			t.Errorf("%s is %v", f.Files[0], r)
		}
	}
	id := p.Dataset.SensorIDs[d.Field.Sensor]
	if !strings.Contains(drawn["receptive-map"].Title, id) || !strings.Contains(drawn["receptive-field"].Title, id) {
		t.Errorf("map titles %q and %q do not name sensor %s", drawn["receptive-map"].Title, drawn["receptive-field"].Title, id)
	}
	svg, err := os.ReadFile(filepath.Join(dir, drawn["receptive-map"].Files[1]))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Field.Selected {
		if s.Node != d.Field.Sensor && !bytes.Contains(svg, []byte(p.Dataset.SensorIDs[s.Node]+" (θ=")) {
			t.Errorf("the receptive map does not label receptive sensor %s", p.Dataset.SensorIDs[s.Node])
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### Receptive field of sensor "+id) || !strings.Contains(string(md), "Sensors are named by their IDs (773869, 767541, …) and drawn at their coordinates") {
		t.Errorf("report.md does not name the sensors by ID:\n%s", md)
	}
	var js struct {
		SensorIDs []string `json:"sensor_ids"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, FileMetrics))
	if err != nil || json.Unmarshal(raw, &js) != nil || !slices.Equal(js.SensorIDs, p.Dataset.SensorIDs) {
		t.Errorf("metrics.json's sensor_ids: %v (%v)", js.SensorIDs, err)
	}
	pr, err := ReadPredictions(filepath.Join(dir, FilePredictions))
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Sensor) != len(pr.Node) || pr.Sensor[5] != p.Dataset.SensorIDs[pr.Node[5]] || pr.Sensor[len(pr.Node)-1] != p.Dataset.SensorIDs[pr.Node[len(pr.Node)-1]] {
		t.Errorf("predictions' sensor column: %d of %d rows, row 5 %q for node %d", len(pr.Sensor), len(pr.Node), pr.Sensor[min(5, len(pr.Sensor)-1)], pr.Node[5])
	}
	if _, ok := pr.Columns["true_speed"]; !ok {
		t.Errorf("predictions' columns %v", pr.Names)
	}
}

// TestReportRefusesOtherSensors: a bundle whose sensor IDs are not the
// data's is refused, naming the first that differs.
func TestReportRefusesOtherSensors(t *testing.T) {
	p, b := losLoopReport(t)
	b.Meta.SensorIDs = slices.Clone(b.Meta.SensorIDs)
	b.Meta.SensorIDs[3] = "999999"
	test, _ := p.Split.Part("test")
	_, err := Build(context.Background(), Input{Prepared: p, Part: "test", Range: snapshot.Range{Start: test.First(), End: test.First() + 2}, Bundle: b, Sensor: -1})
	if err == nil || !strings.Contains(err.Error(), `sensor 3 is "999999" in the model`) {
		t.Errorf("error %v, want one naming sensor 3", err)
	}
}
