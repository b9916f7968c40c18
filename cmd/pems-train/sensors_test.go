package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/report"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestLosLoopSensorIDs trains a brief teacher on the real Los-loop data,
// distils it and reports on the bundle: the model and the bundle record
// the detectors' IDs and locations as the data gives them, the report
// draws the sensors' maps and takes -sensor as an ID, and exported
// snapshots name each row's sensor by its ID. (Too brief to forecast
// well: its numbers are not the point.)
func TestLosLoopSensorIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on Los-loop")
	}
	ds := datatest.LosLoop(t)
	dir, tmp := datatest.Dir(t), t.TempDir()
	model, bundle := filepath.Join(tmp, "t.model"), filepath.Join(tmp, "b.sdgnn")
	for _, args := range [][]string{
		{"teacher", "-data", dir, "-dataset", "los-loop", "-epochs", "1", "-hidden", "8", "-steps", "600", "-out", model},
		{"distill", "-data", dir, "-teacher", model, "-quick", "-epochs", "60", "-finetune", "1", "-out", bundle},
	} {
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("pems-train %s: exit %d: %s", args[0], code, stderr)
		}
	}
	m, err := teacher.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sdgnn.LoadBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	for what, got := range map[string][]string{"teacher": m.Meta.SensorIDs, "bundle": b.Meta.SensorIDs} {
		if !slices.Equal(got, ds.SensorIDs) {
			t.Errorf("the %s records sensor IDs %q…, the data %q…", what, got[:min(3, len(got))], ds.SensorIDs[:3])
		}
	}
	if !slices.Equal(m.Meta.Locations, ds.Locations) || !slices.Equal(b.Meta.Locations, ds.Locations) {
		t.Errorf("the teacher and the bundle record %d and %d locations, the data has %d", len(m.Meta.Locations), len(b.Meta.Locations), len(ds.Locations))
	}

	id := ds.SensorIDs[40]
	out := filepath.Join(tmp, "r")
	if code, _, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-out", out, "-sensor", id); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "report", "-data", dir, "-model", bundle, "-out", out, "-sensor", "40"); code != 2 || !strings.Contains(stderr, "-sensor 40: the bundle has 207 sensor IDs (773869, 767541, …)") {
		t.Errorf("report -sensor of an index where there are IDs: exit %d, %q", code, stderr)
	}
	var metrics struct {
		Field struct {
			Sensor int `json:"sensor"`
		} `json:"receptive_field"`
	}
	if raw, err := os.ReadFile(filepath.Join(out, report.FileMetrics)); err != nil || json.Unmarshal(raw, &metrics) != nil || metrics.Field.Sensor != 40 {
		t.Errorf("report -sensor %s drew sensor %d's receptive field, want 40 (%v)", id, metrics.Field.Sensor, err)
	}
	pred, err := report.ReadPredictions(filepath.Join(out, report.FilePredictions))
	if err != nil {
		t.Fatal(err)
	}
	if len(pred.Sensor) != len(pred.Node) || pred.Sensor[41] != ds.SensorIDs[pred.Node[41]] {
		t.Errorf("the report's predictions name %d of %d rows' sensors", len(pred.Sensor), len(pred.Node))
	}
	for _, f := range []string{"sensor-map.png", "receptive-map.png", "receptive-map.svg"} {
		if !fileExists(filepath.Join(out, "figures", f)) {
			t.Errorf("no figures/%s", f)
		}
	}

	arrow := filepath.Join(tmp, "s.arrow")
	if code, _, stderr := runCmd(t, "export", "-data", dir, "-model", model, "-what", "snapshots", "-out", arrow); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	tab, err := snapshot.ReadSnapshots(arrow)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Sensor) != tab.Rows() || tab.Sensor[300] != ds.SensorIDs[tab.Node[300]] {
		t.Errorf("exported snapshots name %d of %d rows' sensors", len(tab.Sensor), tab.Rows())
	}
}
