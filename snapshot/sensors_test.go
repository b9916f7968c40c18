package snapshot

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSensorColumns writes each table for sensors with IDs (Los-loop's
// detectors): a sensor column beside node names every row's sensor, read
// back with the rest as before, over several record batches; IDs that are
// not one per sensor are refused; and a table of sensors without IDs has
// no such column (Sensor nil).
func TestSensorColumns(t *testing.T) {
	withBatchRows(t, 3)
	dir := t.TempDir()
	s := newTestSet(t, 15, 4, 3, 3)
	ids := []string{"773869", "767541", "767542", "717447"}
	want := func(nodes []int32) []string {
		out := make([]string, len(nodes))
		for k, n := range nodes {
			out[k] = ids[n]
		}
		return out
	}

	path := filepath.Join(dir, "snapshots.arrow")
	if err := WriteSnapshotsLabelled(path, s, []int{1, 4}, SnapshotLabels{Dataset: "los-loop", SensorIDs: ids}); err != nil {
		t.Fatal(err)
	}
	tab, err := ReadSnapshots(path)
	if err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain.arrow")
	if err := WriteSnapshotsOf(plain, s, []int{1, 4}); err != nil {
		t.Fatal(err)
	}
	ptab, err := ReadSnapshots(plain)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tab.Sensor, want(tab.Node)) || len(tab.Sensor) != 8 || ptab.Sensor != nil || !floatsEqual(tab.X, ptab.X) || !floatsEqual(tab.Y, ptab.Y) {
		t.Errorf("snapshots: sensors %q for nodes %v; without IDs %q; inputs equal %v", tab.Sensor, tab.Node, ptab.Sensor, floatsEqual(tab.X, ptab.X))
	}

	data := make([]float64, 2*4*3)
	for k := range data {
		data[k] = float64(k)
	}
	path = filepath.Join(dir, "emb.arrow")
	if err := WriteEmbeddingsNamed(path, "h", []int{3, 7}, ids, 4, 3, data); err != nil {
		t.Fatal(err)
	}
	_, nodes, d, got, err := ReadEmbeddings(path)
	if err != nil || d != 3 || !floatsEqual(got, data) || len(nodes) != 8 {
		t.Errorf("embeddings with a sensor column: d %d, data %v, %v", d, got, err)
	}

	p := testPredictions()
	p.Sensor = make([]string, p.Rows())
	for k, n := range p.Node {
		p.Sensor[k] = "id-" + string(rune('a'+n))
	}
	path = filepath.Join(dir, "pred.arrow")
	if err := WritePredictions(path, p); err != nil {
		t.Fatal(err)
	}
	pt, err := ReadPredictions(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pt.Sensor, p.Sensor) || !floatsEqual(pt.Pred, p.Pred) || !floatsEqual(pt.True, p.True) {
		t.Errorf("predictions: sensors %q, want %q", pt.Sensor, p.Sensor)
	}

	for what, err := range map[string]error{
		"snapshots":   WriteSnapshotsLabelled(filepath.Join(dir, "bad.arrow"), s, []int{1}, SnapshotLabels{SensorIDs: ids[:3]}),
		"embeddings":  WriteEmbeddingsNamed(filepath.Join(dir, "bad.arrow"), "h", []int{3, 7}, ids[:3], 4, 3, data),
		"predictions": WritePredictions(filepath.Join(dir, "bad.arrow"), &PredictionTable{Channels: p.Channels, Snapshot: p.Snapshot, Step: p.Step, Node: p.Node, Sensor: p.Sensor[:2], Pred: p.Pred, True: p.True}),
	} {
		if err == nil || !strings.Contains(err.Error(), "sensor") {
			t.Errorf("%s with IDs that do not fit: %v", what, err)
		}
	}
}
