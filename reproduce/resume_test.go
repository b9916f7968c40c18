package reproduce

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// TestTeacherResumesAfterInterrupt cuts a reproduction's teacher training
// short after its second epoch, as Ctrl-C or a time limit would, and checks
// that the state kept in the model directory lets the next run finish it
// with parameters bit for bit those of a run that was never interrupted; that
// the state goes once the model is saved; and that a state written for other
// settings is refused, naming the file, rather than silently resumed.
func TestTeacherResumesAfterInterrupt(t *testing.T) {
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs the shared data: %v", err)
		}
		t.Skipf("no data directory: %v", err)
	}
	cfg := Quick("sz-taxi")
	cfg.DataDir = dir
	cfg.Teacher.MaxEpochs, cfg.Teacher.MaxBatches, cfg.Teacher.Patience = 4, 2, 100
	p, err := snapshot.PrepareFit(dir, cfg.Dataset, cfg.Window, cfg.spec(), cfg.prep())
	if err != nil {
		t.Fatal(err)
	}

	// Uninterrupted.
	cfg.ModelDir = t.TempDir()
	want, err := trainOrLoad(context.Background(), cfg, p, teacher.KindGRUGCN, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Interrupted after epoch 2.
	cfg.ModelDir = t.TempDir()
	path := TeacherPath(cfg.ModelDir, cfg.Dataset, teacher.KindGRUGCN, p, 1)
	state := strings.TrimSuffix(path, ".model") + ".state"
	ctx, cancel := context.WithCancel(context.Background())
	_, err = trainOrLoad(ctx, cfg, p, teacher.KindGRUGCN, 1, func(e teacher.Epoch) {
		if e.Epoch == 2 {
			cancel()
		}
	}, func(string, int) { t.Error("a first run resumed") })
	cancel()
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), state) {
		t.Fatalf("interrupted run: got %v, want context.Canceled naming %s", err, state)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an interrupted run wrote the model %s (%v)", path, err)
	}

	// A state for other settings is refused.
	other := cfg
	other.Teacher.LR *= 2
	if _, err := trainOrLoad(context.Background(), other, p, teacher.KindGRUGCN, 1, nil, nil); err == nil || !strings.Contains(err.Error(), state) {
		t.Fatalf("state of another learning rate: got %v, want a refusal naming %s", err, state)
	}

	// Resumed: epochs 3 and 4 only, the same parameters as the uninterrupted run.
	var epochs []int
	from := -1
	got, err := trainOrLoad(context.Background(), cfg, p, teacher.KindGRUGCN, 1, func(e teacher.Epoch) { epochs = append(epochs, e.Epoch) },
		func(file string, epoch int) {
			if file != state {
				t.Errorf("resumed from %s, want %s", file, state)
			}
			from = epoch
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(epochs) != 2 || epochs[0] != 3 || epochs[1] != 4 || from != 2 {
		t.Errorf("resumed run took up the state after epoch %d and trained epochs %v, want 2 and [3 4]", from, epochs)
	}
	wp, gp := want.Params(), got.Params()
	for i := range wp {
		w, g := wp[i].W.RawMatrix().Data, gp[i].W.RawMatrix().Data
		for j := range w {
			if math.Float64bits(w[j]) != math.Float64bits(g[j]) {
				t.Fatalf("%s[%d]: resumed %v, uninterrupted %v", wp[i].Name, j, g[j], w[j])
			}
		}
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state %s kept after the model was saved (%v)", state, err)
	}
	s, err := teacher.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Meta.Epochs != 4 || len(s.Meta.History) != 4 {
		t.Errorf("saved model: %d epochs, history of %d; want 4 and 4", s.Meta.Epochs, len(s.Meta.History))
	}
	if g, want := s.Meta.Graph, p.GraphFingerprint(); g == nil || *g != want {
		t.Errorf("saved model records graph %v, want %v", g, want)
	}

	// A damaged state is an error naming it, not a silent restart.
	cfg.ModelDir = t.TempDir()
	bad := strings.TrimSuffix(TeacherPath(cfg.ModelDir, cfg.Dataset, teacher.KindGRU, p, 1), ".model") + ".state"
	if err := os.WriteFile(bad, []byte("not a state"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trainOrLoad(context.Background(), cfg, p, teacher.KindGRU, 1, nil, nil); err == nil || !strings.Contains(err.Error(), filepath.Base(bad)) {
		t.Fatalf("damaged state: got %v, want an error naming %s", err, bad)
	}
}

// TestScoresRoundTrip checks what an interrupted seed keeps: its scores come
// back exactly, NaN losses included (JSON has no NaN), and scores that do not
// belong to this run are refused with the file's name rather than reused.
func TestScoresRoundTrip(t *testing.T) {
	cfg := Quick("sz-taxi")
	fp, err := fingerprint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := evaluation.Metrics{MAE: 1.25, RMSE: 2.5, MAPE: 10, Count: 7}
	norm := snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0}, Std: []float64{80.5320804698}}
	sc := &scores{Config: fp, Bundle: "b.sdgnn", Scaling: &norm,
		Run: Run{Seed: 3, Metrics: map[string]evaluation.Metrics{GRU: m}, Seconds: map[string]float64{GRU: 1.5},
			MaxReceptive: map[string]int{GRU: 1}, Receptive: map[string]float64{GRU: 1}, Paper: map[string]evaluation.PaperMetrics{GRU: {MAPE: 0.1}}},
		Losses: map[string]losses{GRU: {0.1, math.NaN(), 1.0 / 3}}}
	dir := t.TempDir()
	path := filepath.Join(dir, "scores.json")
	if err := sc.save(path); err != nil {
		t.Fatal(err)
	}
	got, err := loadScores(path, cfg, norm, 3)
	if err != nil {
		t.Fatal(err)
	}
	l := got.Losses[GRU]
	if len(l) != 3 || l[0] != 0.1 || !math.IsNaN(l[1]) || l[2] != 1.0/3 || got.Run.Metrics[GRU] != m || got.Bundle != "b.sdgnn" || got.Run.DM == nil {
		t.Errorf("round trip: %+v", got)
	}
	if none, err := loadScores(filepath.Join(dir, "absent.json"), cfg, norm, 3); none != nil || err != nil {
		t.Errorf("absent scores: %v, %v", none, err)
	}

	other := cfg
	other.SDGNN.Epochs++
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wider := norm
	wider.Std = []float64{86.4291988825}
	for _, c := range []struct {
		name string
		path string
		cfg  Config
		norm snapshot.Normalizer
		seed uint64
		want string
	}{
		{"other settings", path, other, norm, 3, "other settings"},
		{"other seed", path, cfg, norm, 4, "seed 3, not 4"},
		{"other scaling", path, cfg, wider, 3, "scaled otherwise than this run's data gives (channel 0 offset 0 and scale 80.5320804698 against 0 and 86.4291988825"},
		{"truncated", write("trunc.json", raw[:len(raw)/2]), cfg, norm, 3, "trunc.json"},
		{"no losses", write("nolosses.json", []byte(strings.Replace(string(raw), `"losses"`, `"x"`, 1))), cfg, norm, 3, "incomplete"},
	} {
		if _, err := loadScores(c.path, c.cfg, c.norm, c.seed); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.path)) {
			t.Errorf("%s: got %v, want an error naming %s and saying %q", c.name, err, filepath.Base(c.path), c.want)
		}
	}
}

// TestScoresInfiniteForecast checks that a seed whose model forecast ±Inf
// somewhere (a diverged student) still keeps its scores: the snapshot's
// loss is +Inf, which JSON cannot hold either, and the Diebold–Mariano
// test of the reloaded losses is the one of the original (it leaves
// non-finite losses out).
func TestScoresInfiniteForecast(t *testing.T) {
	cfg := Quick("sz-taxi")
	fp, err := fingerprint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const snaps, width = 6, 2
	truth := []float64{10, 12, 11, 0, 9, 14, 10, 10, 12, 13, 11, 9}
	good, bad := make([]float64, len(truth)), make([]float64, len(truth))
	for k, y := range truth {
		good[k], bad[k] = y+0.5+0.1*float64(k%3), y+1-0.05*float64(k%4)
	}
	bad[4] = math.Inf(1) // snapshot 2
	lg, err := evaluation.SnapshotMAE(good, truth, snaps, width)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := evaluation.SnapshotMAE(bad, truth, snaps, width)
	if err != nil {
		t.Fatal(err)
	}
	want, err := evaluation.DieboldMariano(lg, lb, 1)
	if err != nil {
		t.Fatal(err)
	}
	sc := &scores{Config: fp, Run: Run{Seed: 1, Metrics: map[string]evaluation.Metrics{}, Seconds: map[string]float64{SDGNN: 1, GRU: 1},
		MaxReceptive: map[string]int{SDGNN: 2, GRU: 1}, Receptive: map[string]float64{SDGNN: 2, GRU: 1}, Paper: map[string]evaluation.PaperMetrics{}},
		Losses: map[string]losses{SDGNN: lg, GRU: lb}}
	for name, pred := range map[string][]float64{SDGNN: good, GRU: bad} {
		m, err := evaluation.Compute(pred, truth)
		if err != nil {
			t.Fatal(err)
		}
		sc.Run.Metrics[name] = m
	}
	path := filepath.Join(t.TempDir(), "scores.json")
	if err := sc.save(path); err != nil {
		t.Fatalf("save: %v", err)
	}
	// Written without the scaling, as files before it existed: taken as
	// they are, whatever this run's.
	got, err := loadScores(path, cfg, snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{1}, Std: []float64{2}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	dm, err := evaluation.DieboldMariano(got.Losses[SDGNN], got.Losses[GRU], 1)
	if err != nil || dm != want {
		t.Errorf("DM of the reloaded losses %+v (%v), want %+v", dm, err, want)
	}
}

// TestResumeBundleOtherTeacherSizes checks that a kept bundle distilled
// from a teacher of another hidden width, with the same settings and split,
// is refused as another teacher's, even where its GRU's weights begin as
// the teacher's do (the same seed draws them): it was compared out of range
// (a narrower bundle) or accepted on its first values (a wider one).
func TestResumeBundleOtherTeacherSizes(t *testing.T) {
	const nodes, channels, window = 3, 1, 2
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{1}, Std: []float64{2}}
	split := snapshot.Split{Train: snapshot.Part{Range: snapshot.Range{Start: 0, End: 6}}, Val: snapshot.Part{Range: snapshot.Range{Start: 6, End: 8}}, Test: snapshot.Part{Range: snapshot.Range{Start: 8, End: 10}}}
	sc := sdgnn.DefaultConfig()
	theta := &sdgnn.Theta{Nodes: [][]int{{0}, {1}, {2}}, Weights: [][]float64{{1}, {1}, {1}}}
	for _, tc := range []struct{ bundle, teacher int }{{2, 4}, {4, 2}} {
		m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: window, Channels: channels, Hidden: tc.teacher, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		g := gru.New(norm.Inputs(), tc.bundle, rng)
		for i, p := range g.Params() {
			copy(p.W.RawMatrix().Data, m.GRU.Params()[i].W.RawMatrix().Data)
		}
		meta := sdgnn.BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"v"}, Window: window, Hidden: tc.bundle, Norm: norm, Split: split, Config: sc, Version: "v"}
		b, err := sdgnn.NewBundle(meta, g, nn.NewMLP("phi", tc.bundle, sc.PhiHidden, tc.bundle, rng), theta, nn.NewMLP("dec", tc.bundle, 4, channels, rng))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "b.sdgnn")
		if err := b.Save(path); err != nil {
			t.Fatal(err)
		}
		_, err = resumeBundle(path, m, sc, &snapshot.Prepared{Split: split})
		if err == nil || !strings.Contains(err.Error(), "distilled from another teacher") {
			t.Errorf("a bundle of hidden width %d for a teacher of %d: %v", tc.bundle, tc.teacher, err)
		}
	}
}

// TestCheckReuseEdges checks that a saved GRU-GCN whose graph's links were
// weighed otherwise than this run's (one saved before -prep paper weighed
// PeMS's links by distance) is not reused: its GCN would run on a
// propagation matrix it was not trained on. A GRU reads no graph.
func TestCheckReuseEdges(t *testing.T) {
	norm := snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0}, Std: []float64{1}, Edges: &snapshot.EdgeScale{Min: 1, Max: 9}}
	set, err := snapshot.NewSet(make([]float64, 20*2), 20, 2, 1, 3, norm)
	if err != nil {
		t.Fatal(err)
	}
	p := &snapshot.Prepared{Set: set}
	cfg := Config{Dataset: "pems08"}
	tc := teacher.DefaultTrain()
	for _, tc2 := range []struct {
		kind  string
		edges *snapshot.EdgeScale
		want  string
	}{
		{teacher.KindGRUGCN, &snapshot.EdgeScale{Min: 1, Max: 9}, ""},
		{teacher.KindGRUGCN, nil, "its GCN was trained on links of weight 1, this run's graph has links weighed by distance scaled over [1, 9]"},
		{teacher.KindGRUGCN, &snapshot.EdgeScale{Min: 2, Max: 9}, "trained on links weighed by distance scaled over [2, 9]"},
		{teacher.KindGRU, nil, ""},
	} {
		mc := teacher.Config{Kind: tc2.kind}
		m := teacher.Meta{Dataset: "pems08", Norm: norm, Train: tc, Config: mc}
		m.Norm.Edges = tc2.edges
		err := checkReuse("t.model", m, cfg, p, tc, mc, false)
		if tc2.want == "" && err != nil || tc2.want != "" && (err == nil || !strings.Contains(err.Error(), tc2.want)) {
			t.Errorf("%s with %v: %v, want %q", tc2.kind, tc2.edges, err, tc2.want)
		}
	}
}

// TestCheckReuseScaling checks that a saved teacher whose inputs were
// scaled otherwise than this run's data gives (the data file changed, or
// the code that fits the scaling) is refused: it would read this run's
// inputs on another scale without failing.
func TestCheckReuseScaling(t *testing.T) {
	ti := snapshot.TimeInputs{OriginMs: 0, StepMs: 300000, MinuteMax: 1435, WeekdayMax: 6}
	norm := snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: []float64{0, 2}, Std: []float64{1, 5}, Time: &ti}
	set, err := snapshot.NewSet(make([]float64, 20*2*2), 20, 2, 2, 3, norm)
	if err != nil {
		t.Fatal(err)
	}
	p := &snapshot.Prepared{Set: set}
	cfg := Config{Dataset: "pems08"}
	tc := teacher.DefaultTrain()
	narrower := ti
	narrower.MinuteMax = 1430
	for _, c := range []struct {
		name string
		edit func(*snapshot.Normalizer)
		want string
	}{
		{"same", func(*snapshot.Normalizer) {}, ""},
		{"offset", func(n *snapshot.Normalizer) { n.Mean = []float64{0, 2.5} }, "channel 1 offset 2.5 and scale 5 against 2 and 5"},
		{"scale", func(n *snapshot.Normalizer) { n.Std = []float64{1.25, 5} }, "channel 0 offset 0 and scale 1.25 against 0 and 1"},
		{"calendar", func(n *snapshot.Normalizer) { n.Time = &narrower }, "calendar inputs"},
		{"no calendar", func(n *snapshot.Normalizer) { n.Time = nil }, `custom (kind "minmax", time inputs false) preprocessing`},
	} {
		for _, kind := range []string{teacher.KindGRUGCN, teacher.KindGRU} {
			mc := teacher.Config{Kind: kind}
			m := teacher.Meta{Dataset: "pems08", Norm: norm, Train: tc, Config: mc}
			m.Norm.Mean = append([]float64(nil), norm.Mean...)
			m.Norm.Std = append([]float64(nil), norm.Std...)
			c.edit(&m.Norm)
			err := checkReuse("t.model", m, cfg, p, tc, mc, false)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%s, %s: %v, want %q", c.name, kind, err, c.want)
			}
		}
	}
}

// TestCheckReuseLayers checks that a saved GRU-GCN whose GCN has another
// number of layers than this run's (a `pems-train teacher -layers 1` file
// copied into the model directory) is refused: the table would report a
// one-layer teacher, and students distilled from it, as the paper's
// two-layer one. A teacher file's explicit 2 is the default's 0.
func TestCheckReuseLayers(t *testing.T) {
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{0}, Std: []float64{1}}
	set, err := snapshot.NewSet(make([]float64, 20*2), 20, 2, 1, 3, norm)
	if err != nil {
		t.Fatal(err)
	}
	p := &snapshot.Prepared{Set: set}
	cfg := Config{Dataset: "pems08"}
	tc := teacher.DefaultTrain()
	for _, c := range []struct {
		kind        string
		saved, want int
		refused     bool
	}{
		{teacher.KindGRUGCN, 0, 0, false},
		{teacher.KindGRUGCN, 2, 0, false},
		{teacher.KindGRUGCN, 1, 0, true},
		{teacher.KindGRUGCN, 0, 1, true},
		{teacher.KindGRU, 0, 0, false},
	} {
		m := teacher.Meta{Dataset: "pems08", Norm: norm, Train: tc, Config: teacher.Config{Kind: c.kind, Layers: c.saved}}
		err := checkReuse("t.model", m, cfg, p, tc, teacher.Config{Kind: c.kind, Layers: c.want}, false)
		if c.refused && (err == nil || !strings.Contains(err.Error(), "t.model")) || !c.refused && err != nil {
			t.Errorf("%s of %d layers saved, %d wanted: %v, want refused %v", c.kind, c.saved, c.want, err, c.refused)
		}
	}
}

// TestReuseChecksGraph checks that a saved GRU-GCN or a kept bundle whose
// road graph is not this run's (the data directory's distance.csv changed
// since) is refused, naming the file and what differs: the teacher's GCN
// would run over another graph, the bundle's Θ name other roads. A file
// that records no graph (written before they were kept) is taken, and so
// is a GRU, which reads none.
func TestReuseChecksGraph(t *testing.T) {
	const nodes, window = 4, 2
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{0}, Std: []float64{1}}
	set, err := snapshot.NewSet(make([]float64, 12*nodes), 12, nodes, 1, window, norm)
	if err != nil {
		t.Fatal(err)
	}
	split := snapshot.Split{Train: snapshot.Part{Range: snapshot.Range{Start: 0, End: 6}}, Val: snapshot.Part{Range: snapshot.Range{Start: 6, End: 8}}, Test: snapshot.Part{Range: snapshot.Range{Start: 8, End: 10}}}
	path := &pems.Graph{Nodes: nodes, Edges: []pems.Edge{{From: 0, To: 1, Cost: 1}, {From: 1, To: 2, Cost: 1}, {From: 2, To: 3, Cost: 1}}}
	ring := &pems.Graph{Nodes: nodes, Edges: append(append([]pems.Edge(nil), path.Edges...), pems.Edge{From: 0, To: 3, Cost: 1})}
	p := &snapshot.Prepared{Dataset: &pems.Dataset{Info: pems.Info{Name: "pems08", GraphFile: "pems/pems08/distance.csv"}, Graph: path}, Dir: "data", Split: split, Set: set}
	mine, other := path.Fingerprint(false), ring.Fingerprint(false)
	cfg := Config{Dataset: "pems08"}
	tc := teacher.DefaultTrain()
	sc := sdgnn.DefaultConfig()
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: window, Channels: 1, Hidden: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		kind  string
		graph *pems.GraphFingerprint
		want  string // in the error; "" for none
	}{
		{"same graph", teacher.KindGRUGCN, &mine, ""},
		{"no graph recorded", teacher.KindGRUGCN, nil, ""},
		{"another graph", teacher.KindGRUGCN, &other, "3 links, want 4"},
		{"a GRU", teacher.KindGRU, &other, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			mc := teacher.Config{Kind: c.kind}
			meta := teacher.Meta{Dataset: "pems08", Norm: norm, Split: split, Train: tc, Config: mc, Graph: c.graph}
			err := checkReuse("t.model", meta, cfg, p, tc, mc, false)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.model")) {
				t.Errorf("checkReuse: %v, want an error with %q", err, c.want)
			}
			if c.kind != teacher.KindGRUGCN {
				return
			}
			rng := rand.New(rand.NewPCG(1, 2))
			bm := sdgnn.BundleMeta{Dataset: "pems08", Nodes: nodes, Channels: []string{"v"}, Window: window, Hidden: 2, Norm: norm, Split: split, Graph: c.graph, Config: sc, Version: "v"}
			theta := &sdgnn.Theta{Nodes: [][]int{{0}, {1}, {2}, {3}}, Weights: [][]float64{{1}, {1}, {1}, {1}}}
			b, err := sdgnn.NewBundle(bm, m.GRU, nn.NewMLP("phi", 2, sc.PhiHidden, 2, rng), theta, nn.NewMLP("dec", 2, 4, 1, rng))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "b.sdgnn")
			if err := b.Save(file); err != nil {
				t.Fatal(err)
			}
			got, err := resumeBundle(file, m, sc, p)
			if c.want == "" && (err != nil || got == nil) || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file)) {
				t.Errorf("resumeBundle: %v, want an error with %q", err, c.want)
			}
		})
	}
}

// TestTeacherCapRaised interrupts a teacher capped at 3 epochs after its
// second and resumes its state with the cap raised to 4: the run trains
// epochs 3 and 4 and ends with the parameters, bit for bit, of a run capped
// at 4 from the start. The model it saves stopped at its cap, so a run
// capped at 6 refuses it rather than report it as trained further.
func TestTeacherCapRaised(t *testing.T) {
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs the shared data: %v", err)
		}
		t.Skipf("no data directory: %v", err)
	}
	cfg := Quick("sz-taxi")
	cfg.DataDir = dir
	cfg.Teacher.MaxEpochs, cfg.Teacher.MaxBatches, cfg.Teacher.Patience = 4, 2, 100
	p, err := snapshot.PrepareFit(dir, cfg.Dataset, cfg.Window, cfg.spec(), cfg.prep())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ModelDir = t.TempDir()
	want, err := trainOrLoad(context.Background(), cfg, p, teacher.KindGRU, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	cfg.ModelDir = t.TempDir()
	short := cfg
	short.Teacher.MaxEpochs = 3
	ctx, cancel := context.WithCancel(context.Background())
	_, err = trainOrLoad(ctx, short, p, teacher.KindGRU, 1, func(e teacher.Epoch) {
		if e.Epoch == 2 {
			cancel()
		}
	}, nil)
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: got %v, want context.Canceled", err)
	}
	var epochs []int
	got, err := trainOrLoad(context.Background(), cfg, p, teacher.KindGRU, 1, func(e teacher.Epoch) { epochs = append(epochs, e.Epoch) }, nil)
	if err != nil {
		t.Fatalf("state capped at 3 resumed with cap 4: %v", err)
	}
	if len(epochs) != 2 || epochs[0] != 3 || epochs[1] != 4 {
		t.Errorf("resumed with the cap raised, trained epochs %v, want [3 4]", epochs)
	}
	wp, gp := want.Params(), got.Params()
	for i := range wp {
		w, g := wp[i].W.RawMatrix().Data, gp[i].W.RawMatrix().Data
		for j := range w {
			if math.Float64bits(w[j]) != math.Float64bits(g[j]) {
				t.Fatalf("%s[%d]: resumed with the cap raised %v, capped at 4 from the start %v", wp[i].Name, j, g[j], w[j])
			}
		}
	}
	s, err := teacher.LoadModel(TeacherPath(cfg.ModelDir, cfg.Dataset, teacher.KindGRU, p, 1))
	if err != nil {
		t.Fatal(err)
	}
	if s.Meta.Train.MaxEpochs != 4 || s.Meta.Epochs != 4 {
		t.Errorf("saved model: cap %d, %d epochs; want 4 and 4", s.Meta.Train.MaxEpochs, s.Meta.Epochs)
	}
	longer := cfg
	longer.Teacher.MaxEpochs = 6
	if _, err := trainOrLoad(context.Background(), longer, p, teacher.KindGRU, 1, nil, nil); err == nil || !strings.Contains(err.Error(), "stopped at its cap of 4 epochs") {
		t.Errorf("model stopped at its cap of 4, reused for a cap of 6: got %v, want a refusal", err)
	}
}

// TestCheckCap checks when a teacher trained under one epoch cap is what a
// run under another would train: a state not past the new cap, and a model
// that stopped by patience within it; not a model that stopped at its cap,
// nor one past the new cap.
func TestCheckCap(t *testing.T) {
	tc := teacher.DefaultTrain() // patience 30
	for _, c := range []struct {
		name                   string
		was, epochs, best, cap int
		state                  bool
		want                   string // in the error; "" for none
	}{
		{"same cap", 500, 500, 499, 500, false, ""},
		{"state, cap raised", 1000, 700, 690, 2000, true, ""},
		{"state at the new cap", 1000, 700, 690, 700, true, ""},
		{"state past the new cap", 1000, 700, 690, 600, true, "ran 700 epochs (at most 1000), past this run's cap of 600"},
		{"stopped early, cap raised", 1000, 650, 620, 2000, false, ""},
		{"stopped early, cap lowered to its epochs", 1000, 650, 620, 650, false, ""},
		{"stopped early, past the lowered cap", 1000, 650, 620, 640, false, "past this run's cap of 640"},
		{"stopped at its cap", 1000, 1000, 995, 2000, false, "stopped at its cap of 1000 epochs"},
		{"stopped at its cap and by patience", 1000, 1000, 970, 2000, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := teacher.Meta{Train: tc, Epochs: c.epochs, BestEpoch: c.best}
			m.Train.MaxEpochs = c.was
			run := tc
			run.MaxEpochs = c.cap
			err := checkCap(m, run, c.state)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("checkCap: %v, want %q", err, c.want)
			}
		})
	}
}
