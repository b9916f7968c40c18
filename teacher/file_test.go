package teacher

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// forecast returns m's prediction (a copy) for a fixed random window on a
// ring of 5 nodes, two snapshots deep.
func forecast(t *testing.T, m *Model) *mat.Dense {
	t.Helper()
	const nodes, blocks = 5, 2
	rng := rand.New(rand.NewPCG(31, 32))
	xs := make([]*mat.Dense, m.Config.Window)
	for i := range xs {
		xs[i] = randDense(rng, nodes*blocks, m.Config.Inputs())
	}
	pred, err := m.Forward(xs, ringAdjacency(nodes), nil)
	if err != nil {
		t.Fatal(err)
	}
	return mat.DenseCopyOf(pred)
}

// rewriteConfig reads the model file src, lets edit change its metadata's
// config (decoded as a JSON object) and writes the result to dst.
func rewriteConfig(t *testing.T, src, dst string, edit func(cfg map[string]any)) {
	t.Helper()
	f, err := checkpoint.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal(f.Meta, &meta); err != nil {
		t.Fatal(err)
	}
	edit(meta["config"].(map[string]any))
	if f.Meta, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.WriteFile(dst, f); err != nil {
		t.Fatal(err)
	}
}

// TestModelFileLayers saves and loads GRU-GCN models of each GCN depth and
// checks that the loaded model forecasts exactly as the saved one, that a
// file written before Config.Layers existed loads as a two-layer model, and
// that a file whose configuration and tensors disagree on the depth is
// refused.
func TestModelFileLayers(t *testing.T) {
	dir := t.TempDir()
	meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{1, 2, 3}, Std: []float64{4, 5, 6}}, Dataset: "pems04", Nodes: 5}
	paths := make(map[int]string)
	for _, tc := range []struct {
		layers, want int
		l2           bool // whether the file holds gcn.l2 tensors
	}{
		{0, 2, true},
		{1, 1, false},
		{2, 2, true},
	} {
		m, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 6, NoiseStd: 0.01, Seed: 5, Layers: tc.layers})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "m.model")
		if tc.layers > 0 {
			path = filepath.Join(dir, "m"+string(rune('0'+tc.layers))+".model")
			paths[tc.layers] = path
		}
		if err := SaveModel(path, m, meta); err != nil {
			t.Fatal(err)
		}
		f, err := checkpoint.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Tensor("gcn.l2.W"); (err == nil) != tc.l2 {
			t.Errorf("layers %d: file holds gcn.l2.W %t, want %t", tc.layers, err == nil, tc.l2)
		}
		got, err := LoadModel(path)
		if err != nil {
			t.Fatalf("layers %d: %v", tc.layers, err)
		}
		if got.Meta.Config != m.Config || got.Model.GCN.Layers() != tc.want || got.Model.Config.GCNLayers() != tc.want {
			t.Errorf("layers %d: loaded config %+v with a %d-layer GCN, want %d", tc.layers, got.Meta.Config, got.Model.GCN.Layers(), tc.want)
		}
		if want, p := forecast(t, m), forecast(t, got.Model); !mat.Equal(p, want) {
			t.Errorf("layers %d: loaded model forecasts differently", tc.layers)
		}
	}

	// A file from before Config.Layers: no "layers" key at all.
	old := filepath.Join(dir, "old.model")
	rewriteConfig(t, paths[2], old, func(cfg map[string]any) { delete(cfg, "layers") })
	f, err := checkpoint.ReadFile(old)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(f.Meta), `"layers"`) {
		t.Fatalf("old-style metadata still names the layers: %s", f.Meta)
	}
	got, err := LoadModel(old)
	if err != nil {
		t.Fatalf("old-style file: %v", err)
	}
	two, err := LoadModel(paths[2])
	if err != nil {
		t.Fatal(err)
	}
	if got.Model.GCN.Layers() != 2 || got.Meta.Config.Layers != 0 {
		t.Errorf("old-style file loaded as %d layers (config layers %d), want 2 (0)", got.Model.GCN.Layers(), got.Meta.Config.Layers)
	}
	if !mat.Equal(forecast(t, got.Model), forecast(t, two.Model)) {
		t.Error("old-style file forecasts differently from the two-layer file it came from")
	}

	// Configuration and tensors that disagree on the depth.
	for _, tc := range []struct {
		name, src string
		layers    int
		want      string
	}{
		{"1-layer config with l2 tensors", paths[2], 1, "1-layer GCN, but the file holds the second layer's tensor gcn.l2."},
		{"2-layer config without l2 tensors", paths[1], 2, "2-layer GCN (layers 2), but the file has no second-layer tensors"},
		{"default config without l2 tensors", paths[1], 0, "2-layer GCN (layers 0), but the file has no second-layer tensors"},
		{"3 layers", paths[2], 3, "gcn layers 3: want 1 or 2"},
	} {
		bad := filepath.Join(dir, "bad.model")
		rewriteConfig(t, tc.src, bad, func(cfg map[string]any) {
			if tc.layers == 0 {
				delete(cfg, "layers")
			} else {
				cfg["layers"] = tc.layers
			}
		})
		_, err := LoadModel(bad)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), bad) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", tc.name, err, tc.want)
		}
	}

	// A GRU baseline's file with GCN tensors is refused too.
	gruPath := filepath.Join(dir, "gru.model")
	rewriteConfig(t, paths[1], gruPath, func(cfg map[string]any) { cfg["kind"] = KindGRU; delete(cfg, "layers") })
	if _, err := LoadModel(gruPath); err == nil || !strings.Contains(err.Error(), "gcn.") {
		t.Errorf("gru config with GCN tensors: error %v", err)
	}
}

// steppedTrainer returns a GRU-GCN of the given channels and GCN layers
// (0: the default) on a ring of 5 nodes and its trainer after one Adam
// step, so that a saved state holds moments.
func steppedTrainer(t *testing.T, channels, layers int) (*Model, *Trainer) {
	t.Helper()
	m, err := New(Config{Kind: KindGRUGCN, Window: 3, Channels: channels, Hidden: 4, Seed: 6, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, DefaultTrain())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	xs := []*mat.Dense{randDense(rng, 5, channels), randDense(rng, 5, channels), randDense(rng, 5, channels)}
	a := ringAdjacency(5)
	pred, err := m.Forward(xs, a, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Backward(mat.DenseCopyOf(pred), a); err != nil {
		t.Fatal(err)
	}
	if err := tr.Opt.Step(m.Params()); err != nil {
		t.Fatal(err)
	}
	return m, tr
}

// TestStateFileLayers saves and loads the training state of a one-layer
// GRU-GCN and of a two-layer one after a training step, and checks that the
// parameters, best parameters and Adam moments come back unchanged.
func TestStateFileLayers(t *testing.T) {
	for _, layers := range []int{1, 2} {
		m, tr := steppedTrainer(t, 2, layers)
		path := filepath.Join(t.TempDir(), "run.state")
		meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0, 0}, Std: []float64{1, 1}}, Dataset: "sz-taxi", Nodes: 5}
		if err := tr.SaveState(path, meta); err != nil {
			t.Fatal(err)
		}
		got, _, err := LoadState(path)
		if err != nil {
			t.Fatalf("layers %d: %v", layers, err)
		}
		if got.Model.GCN.Layers() != layers || got.Best.GCN.Layers() != layers || got.Opt.T != tr.Opt.T {
			t.Fatalf("layers %d: resumed %d/%d layers, Adam step %d", layers, got.Model.GCN.Layers(), got.Best.GCN.Layers(), got.Opt.T)
		}
		for i, p := range m.Params() {
			if !equalData(p, got.Model.Params()[i]) || !mat.Equal(tr.Opt.M[i], got.Opt.M[i]) || !mat.Equal(tr.Opt.V[i], got.Opt.V[i]) {
				t.Errorf("layers %d: %s differs after the state round trip", layers, p.Name)
			}
		}
	}
}

// TestModelFileTimeInputs saves and loads a model trained with the paper's
// preprocessing (its GRU reads the channels and two calendar inputs) and
// checks that a file whose normaliser and model disagree on the inputs is
// refused, naming both.
func TestModelFileTimeInputs(t *testing.T) {
	dir := t.TempDir()
	ti := &snapshot.TimeInputs{OriginMs: 0, StepMs: 300_000, MinuteMax: 1435, WeekdayMax: 6}
	meta := Meta{Norm: snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 0, 0}, Std: []float64{400, 1, 80}, Time: ti}, Dataset: "pems08", Nodes: 5}
	m, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 6, Seed: 5, TimeInputs: snapshot.TimeInputCount})
	if err != nil {
		t.Fatal(err)
	}
	if m.GRU.In != 5 || m.Dec.L2.Out() != 3 {
		t.Fatalf("GRU reads %d inputs, decoder writes %d; want 5 and 3", m.GRU.In, m.Dec.L2.Out())
	}
	path := filepath.Join(dir, "paper.model")
	if err := SaveModel(path, m, meta); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Norm.Prep() != snapshot.PrepPaper || *got.Meta.Norm.Time != *ti || got.Meta.Config != m.Config {
		t.Fatalf("loaded %+v with norm %+v", got.Meta.Config, got.Meta.Norm)
	}
	if want, p := forecast(t, m), forecast(t, got.Model); !mat.Equal(p, want) {
		t.Error("loaded model forecasts differently")
	}
	noTime := filepath.Join(dir, "no-time.model")
	rewriteConfig(t, path, noTime, func(cfg map[string]any) { delete(cfg, "time_inputs") })
	if _, err := LoadModel(noTime); err == nil || !strings.Contains(err.Error(), "5 inputs per step") {
		t.Errorf("calendar normaliser with a model reading only the channels: %v", err)
	}
	if _, err := New(Config{Kind: KindGRU, Window: 4, Channels: 3, Hidden: 6, TimeInputs: 1}); err == nil {
		t.Error("one time input accepted")
	}
	// Data prepared otherwise do not fit the model.
	set, err := snapshot.NewSet(make([]float64, 20*5*3), 20, 5, 3, 4, snapshot.Normalizer{Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Predict(context.Background(), m, set, snapshot.Part{Range: snapshot.Range{Start: 0, End: 2}}, ringAdjacency(5), 4); err == nil || !strings.Contains(err.Error(), "standard preprocessing") {
		t.Errorf("standard data for a paper model: %v", err)
	}
}

func TestConfigNumParams(t *testing.T) {
	for _, c := range []Config{
		{Kind: KindGRUGCN, Window: 12, Channels: 3, Hidden: 16},
		{Kind: KindGRUGCN, Window: 12, Channels: 3, Hidden: 16, Layers: 1, TimeInputs: snapshot.TimeInputCount},
		{Kind: KindGRU, Window: 4, Channels: 1, Hidden: 5},
	} {
		m, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range m.Params() {
			r, c := p.W.Dims()
			n += r * c
		}
		if got, ok := c.NumParams(); got != n || !ok {
			t.Errorf("%+v: NumParams %d, %v; New has %d", c, got, ok, n)
		}
	}
}

// TestModelFileSizes checks that a file whose metadata asks for layers
// larger than its tensors, or for a window beyond snapshot.MaxWindow, is
// refused with the reason, before anything of that size is allocated (a
// hidden width of 2⁴⁰ would otherwise exhaust memory, which no recover
// catches).
func TestModelFileSizes(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 6, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "m.model")
	if err := SaveModel(src, m, Meta{Norm: snapshot.Normalizer{Mean: []float64{1, 2, 3}, Std: []float64{4, 5, 6}}, Nodes: 5}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(cfg map[string]any)
		want string
	}{
		{"hidden 2⁴⁰", func(cfg map[string]any) { cfg["hidden"] = 1 << 40 }, "more parameters than the file's"},
		{"hidden overflowing", func(cfg map[string]any) { cfg["hidden"] = 1 << 62 }, "more parameters than the file's"},
		{"hidden 7", func(cfg map[string]any) { cfg["hidden"] = 7 }, "more parameters than the file's"},
		{"hidden 5", func(cfg map[string]any) { cfg["hidden"] = 5 }, "has shape"},
		{"window 2³⁰", func(cfg map[string]any) { cfg["window"] = 1 << 30 }, "window 1073741824: must be from 1 to 2016 steps"},
	} {
		bad := filepath.Join(dir, "bad.model")
		rewriteConfig(t, src, bad, tc.edit)
		if _, err := LoadModel(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeModel gives the model decoder files whose every byte before the
// checksum the fuzzer chooses (the checksum is computed after the
// mutation; see sdgnn's FuzzDecodeBundle). Whatever is decoded must
// forecast without a panic.
func FuzzDecodeModel(f *testing.F) {
	for _, c := range []Config{
		{Kind: KindGRUGCN, Window: 2, Channels: 2, Hidden: 2, Layers: 1},
		{Kind: KindGRU, Window: 2, Channels: 1, Hidden: 2, TimeInputs: snapshot.TimeInputCount},
	} {
		m, err := New(c)
		if err != nil {
			f.Fatal(err)
		}
		norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: make([]float64, c.Channels), Std: make([]float64, c.Channels)}
		for i := range norm.Std {
			norm.Std[i] = 1
		}
		if c.TimeInputs > 0 {
			ti, err := snapshot.FitTimeInputs(0, 300_000, 100)
			if err != nil {
				f.Fatal(err)
			}
			norm.Time = &ti
		}
		raw, err := json.Marshal(Meta{Config: c, Norm: norm, Nodes: 5})
		if err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := checkpoint.Write(&buf, &checkpoint.File{Kind: FileKindModel, Meta: raw, Tensors: paramTensors("", m.Params())}); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes()[:buf.Len()-sha256.Size])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha256.Sum256(body)
		cf, err := checkpoint.Read(bytes.NewReader(append(body[:len(body):len(body)], sum[:]...)))
		if err != nil {
			return
		}
		s, err := decodeModel(cf, "")
		if err != nil {
			return
		}
		if s.Model.Config.Window > 64 {
			return // a valid but long window: forecast would only be slow
		}
		forecast(t, s.Model)
	})
}

// TestModelFileNonFinite checks that a model file whose weights hold NaN or
// ±Inf is refused, naming the tensor: it would load and make every forecast
// NaN.
func TestModelFileNonFinite(t *testing.T) {
	dir := t.TempDir()
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		m, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 4, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		p := m.Params()[1]
		p.W.Set(0, 1, v)
		path := filepath.Join(dir, "m.model")
		if err := SaveModel(path, m, Meta{Norm: snapshot.Normalizer{Mean: []float64{1, 2, 3}, Std: []float64{4, 5, 6}}, Nodes: 5}); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("tensor %s value 1 (row 0, column 1) is %v, not finite", p.Name, v)
		if _, err := LoadModel(path); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("weight %v: error %v, want one containing %q", v, err, want)
		}
	}
}

// TestLoadStateRefusesCounters edits the counters of a saved state, as a
// hand edit would, and rewrites the file with a valid checksum: a negative
// Adam step (its bias correction would make every update NaN) or a best
// epoch after the last must be refused, naming the field.
func TestLoadStateRefusesCounters(t *testing.T) {
	m, err := New(Config{Kind: KindGRUGCN, Window: 3, Channels: 1, Hidden: 4, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, DefaultTrain())
	if err != nil {
		t.Fatal(err)
	}
	tr.Epoch, tr.BestEpoch, tr.BestValMAE, tr.BestValScore = 3, 2, 1.5, 1.5
	dir := t.TempDir()
	path := filepath.Join(dir, "run.state")
	meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}, Dataset: "sz-taxi", Nodes: 5}
	if err := tr.SaveState(path, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadState(path); err != nil {
		t.Fatalf("the state as saved: %v", err)
	}
	for _, c := range []struct{ field, value, want string }{
		{"adam_t", "-1", "adam_t -1"},
		{"best_epoch", "4", "best epoch 4 of 3 epochs"},
		{"epochs", "-1", "best epoch 2 of -1 epochs"},
	} {
		f, err := checkpoint.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var sm map[string]json.RawMessage
		if err := json.Unmarshal(f.Meta, &sm); err != nil {
			t.Fatal(err)
		}
		if _, ok := sm[c.field]; !ok && c.field != "adam_t" {
			t.Fatalf("no field %q in the state's metadata", c.field)
		}
		sm[c.field] = json.RawMessage(c.value)
		if f.Meta, err = json.Marshal(sm); err != nil {
			t.Fatal(err)
		}
		edited := filepath.Join(dir, c.field+".state")
		if err := checkpoint.WriteFile(edited, f); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadState(edited); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: %v, want an error with %q", c.field, c.value, err, c.want)
		}
	}
}

// TestLoadStateRefusesNegativeSecondMoment edits one of Adam's second
// moments in a saved state to a negative value and rewrites the file with
// a valid checksum: no run writes one (each is an average of squares), and
// the first resumed step would take its square root and make that weight
// NaN. It must be refused, naming the tensor and the value.
func TestLoadStateRefusesNegativeSecondMoment(t *testing.T) {
	m, tr := steppedTrainer(t, 1, 0)
	dir := t.TempDir()
	path := filepath.Join(dir, "run.state")
	meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}, Dataset: "sz-taxi", Nodes: 5}
	if err := tr.SaveState(path, meta); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadState(path); err != nil {
		t.Fatalf("the state as saved: %v", err)
	}
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	name := "adam.v." + m.Params()[1].Name
	v, err := f.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	v.Data[1] = -1e-6
	edited := filepath.Join(dir, "edited.state")
	if err := checkpoint.WriteFile(edited, f); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("tensor %s value 1", name)
	if _, _, err := LoadState(edited); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "-1e-06") {
		t.Errorf("negative second moment: %v, want an error with %q and the value", err, want)
	}
}

// TestModelFileChannelNames gives the decoder a model whose metadata
// names another number of channels than its configuration has: reports
// would label the channels wrongly, and a bundle distilled from it would
// carry the names into a file that sdgnn.LoadBundle refuses, after the
// whole distillation. It must be refused, naming channel_names, for a
// model and a training state alike; a file without names loads.
func TestModelFileChannelNames(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{Kind: KindGRUGCN, Window: 3, Channels: 2, Hidden: 4, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, DefaultTrain())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"flow", "speed"}, true},
		{nil, true},
		{[]string{"flow", "occupancy", "speed"}, false},
		{[]string{"speed"}, false},
	} {
		meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0, 0}, Std: []float64{1, 1}}, Nodes: 5, Channels: c.names}
		path := filepath.Join(dir, "m.model")
		if err := SaveModel(path, m, meta); err != nil {
			t.Fatal(err)
		}
		state := filepath.Join(dir, "run.state")
		if err := tr.SaveState(state, meta); err != nil {
			t.Fatal(err)
		}
		_, err := LoadModel(path)
		_, _, serr := LoadState(state)
		for what, err := range map[string]error{"model": err, "state": serr} {
			if c.ok && err != nil {
				t.Errorf("%s with channel names %q for 2 channels: %v", what, c.names, err)
			}
			if !c.ok && (err == nil || !strings.Contains(err.Error(), "channel_names")) {
				t.Errorf("%s with channel names %q for 2 channels: got error %v, want one naming channel_names", what, c.names, err)
			}
		}
	}
}

// TestModelFileGraph saves models and training states with and without
// the fingerprint of the road graph they were trained on: it comes back
// as written, a file without one (written before they were kept) loads
// with none, and one that no writer makes (another node count than the
// model's, a digest that is no SHA-256) is refused.
func TestModelFileGraph(t *testing.T) {
	dir := t.TempDir()
	m, err := New(Config{Kind: KindGRUGCN, Window: 3, Channels: 2, Hidden: 4, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrainer(m, DefaultTrain())
	if err != nil {
		t.Fatal(err)
	}
	ring := (&pems.Graph{Nodes: 5, Edges: []pems.Edge{{From: 0, To: 1, Cost: 1}, {From: 1, To: 2, Cost: 2}, {From: 2, To: 3, Cost: 1}, {From: 3, To: 4, Cost: 3}, {From: 0, To: 4, Cost: 1}}}).Fingerprint(true)
	other, short := ring, ring
	other.Nodes = 6
	short.SHA256 = ring.SHA256[:12]
	for _, c := range []struct {
		name  string
		graph *pems.GraphFingerprint
		want  string // in the error; "" for none
	}{
		{"fingerprinted", &ring, ""},
		{"none", nil, ""},
		{"another node count", &other, "graph fingerprint of 6 nodes for a model of 5"},
		{"not a SHA-256", &short, "64 lower-case hex digits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0, 0}, Std: []float64{1, 1}}, Nodes: 5, Graph: c.graph}
			path := filepath.Join(dir, "m.model")
			if err := SaveModel(path, m, meta); err != nil {
				t.Fatal(err)
			}
			state := filepath.Join(dir, "run.state")
			if err := tr.SaveState(state, meta); err != nil {
				t.Fatal(err)
			}
			s, err := LoadModel(path)
			var got *pems.GraphFingerprint
			if err == nil {
				got = s.Meta.Graph
			}
			_, sm, serr := LoadState(state)
			for what, err := range map[string]error{"model": err, "state": serr} {
				if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
					t.Errorf("%s: error %v, want one with %q", what, err, c.want)
				}
			}
			if c.want != "" {
				return
			}
			for what, g := range map[string]*pems.GraphFingerprint{"model": got, "state": sm.Graph} {
				if (g == nil) != (c.graph == nil) || g != nil && *g != *c.graph {
					t.Errorf("%s: graph %v, saved %v", what, g, c.graph)
				}
			}
		})
	}
}

// TestModelFileMaskGate saves and loads a GRU-GCN that reads missing marks
// and gates its skip: it forecasts as the saved one did; a file whose
// configuration lost either setting is refused rather than loaded as
// another model; and data without marks do not fit it.
func TestModelFileMaskGate(t *testing.T) {
	dir := t.TempDir()
	meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}, Mask: true}, Dataset: "pems08", Nodes: 5}
	m, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 6, Seed: 5, MaskInputs: 3, Gate: true})
	if err != nil {
		t.Fatal(err)
	}
	if m.GRU.In != 6 || m.GCN.Gate == nil {
		t.Fatalf("GRU reads %d inputs, gate %v; want 6 and a gate", m.GRU.In, m.GCN.Gate)
	}
	// Every layer but the gate starts as in the model without marks' or gate's extra rows.
	plain, err := New(Config{Kind: KindGRUGCN, Window: 4, Channels: 3, Hidden: 6, Seed: 5, MaskInputs: 3})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*nn.Param{}
	for _, p := range m.Params() {
		byName[p.Name] = p
	}
	for _, p := range plain.Params() {
		if !mat.Equal(p.W, byName[p.Name].W) {
			t.Errorf("%s differs between the models with and without a gate", p.Name)
		}
	}
	path := filepath.Join(dir, "aware.model")
	if err := SaveModel(path, m, meta); err != nil {
		t.Fatal(err)
	}
	got, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Meta.Config != m.Config || !got.Meta.Norm.Mask {
		t.Fatalf("loaded %+v with norm %+v", got.Meta.Config, got.Meta.Norm)
	}
	if want, p := forecast(t, m), forecast(t, got.Model); !mat.Equal(p, want) {
		t.Error("loaded model forecasts differently")
	}
	for _, tc := range []struct {
		name, key, want string
	}{{"no gate", "gate", "gcn.gate"}, {"no marks", "mask_inputs", "missing marks"}} {
		bad := filepath.Join(dir, tc.key+".model")
		rewriteConfig(t, path, bad, func(cfg map[string]any) { delete(cfg, tc.key) })
		if _, err := LoadModel(bad); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	set, err := snapshot.NewSet(make([]float64, 20*5*3), 20, 5, 3, 4, snapshot.Normalizer{Mean: []float64{0, 0, 0}, Std: []float64{1, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	part := snapshot.Part{Range: snapshot.Range{Start: 0, End: 2}}
	if _, _, err := Predict(context.Background(), m, set, part, ringAdjacency(5), 4); err == nil || !strings.Contains(err.Error(), "Masked") {
		t.Errorf("data without marks for a model that reads them: %v", err)
	}
	if _, _, err := Predict(context.Background(), m, set.Masked(true), part, ringAdjacency(5), 4); err != nil {
		t.Errorf("data with marks: %v", err)
	}
	if _, err := New(Config{Kind: KindGRU, Window: 4, Channels: 3, Hidden: 6, Gate: true}); err == nil {
		t.Error("a gate for a GRU accepted")
	}
	if _, err := New(Config{Kind: KindGRU, Window: 4, Channels: 3, Hidden: 6, MaskInputs: 1}); err == nil {
		t.Error("one mark for three channels accepted")
	}
}
