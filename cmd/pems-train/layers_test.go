package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestOneLayerTeacher trains a GRU-GCN with -layers 1 for one short epoch,
// and checks that the saved model has a one-layer GCN and that eval reports
// the 1-hop receptive field, smaller than the 2-hop one of the default.
func TestOneLayerTeacher(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, saved := trainTeacher(t, dir, "-dataset", "pems08", "-layers", "1", "-epochs", "1", "-max-batches", "1")
	if saved.Meta.Config.Layers != 1 || saved.Model.GCN.Layers() != 1 {
		t.Fatalf("saved config layers %d, GCN layers %d, want 1", saved.Meta.Config.Layers, saved.Model.GCN.Layers())
	}
	code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("eval -json output is not JSON: %v\n%s", err, stdout)
	}
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, &saved.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	one, err := teacherReceptive(teacher.KindGRUGCN, 1, p)
	if err != nil {
		t.Fatal(err)
	}
	two, err := teacherReceptive(teacher.KindGRUGCN, 2, p)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(res.Receptive-one) > 1e-12 || !(1 < one && one < two) {
		t.Fatalf("receptive field: eval %g, 1 hop %g, 2 hops %g", res.Receptive, one, two)
	}
	if gru, err := teacherReceptive(teacher.KindGRU, 0, p); err != nil || gru != 1 {
		t.Fatalf("GRU receptive field %g, %v", gru, err)
	}
	if _, err := teacherReceptive(teacher.KindGRUGCN, 0, p); err == nil {
		t.Fatal("a GRU-GCN with 0 layers has a receptive field")
	}
}
