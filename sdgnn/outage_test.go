package sdgnn

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestMaskedBundleOnlineMatchesSilencedBatch checks that a bundle whose
// inputs carry missing marks forecasts online (Embed of each receptive
// node's window, zeros where a sensor fell silent, then Forecast) exactly
// what the batched path forecasts from a silenced Set: the one input
// definition (snapshot.Normalizer.StepInputs) on both paths.
func TestMaskedBundleOnlineMatchesSilencedBatch(t *testing.T) {
	const nodes, channels, window, hidden, steps = 4, 2, 3, 4, 12
	rng := rand.New(rand.NewPCG(5, 6))
	data := make([]float64, steps*nodes*channels)
	for i := range data {
		data[i] = 1 + rng.Float64()
		if i%9 == 2 {
			data[i] = 0 // a reading missing in the data
		}
	}
	norm, err := snapshot.FitNormalizer(data, nodes, channels, steps)
	if err != nil {
		t.Fatal(err)
	}
	norm.Mask = true
	cfg := DefaultConfig()
	cfg.PhiHidden = 3
	theta := &Theta{Nodes: [][]int{{0, 1}, {1}, {0, 2, 3}, {3}}, Weights: [][]float64{{0.5, 0.25}, {1}, {0.1, 0.2, 0.3}, {2}}}
	meta := BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"a", "b"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	b, err := NewBundle(meta, gru.New(norm.Inputs(), hidden, rng), nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 5, channels, rng))
	if err != nil {
		t.Fatal(err)
	}
	set, err := snapshot.NewSet(data, steps, nodes, channels, window, norm)
	if err != nil {
		t.Fatal(err)
	}
	silence := func(s, z int) int { return (s + z) % (window + 2) }
	sil := set.Silenced(silence)
	whole := snapshot.Part{Range: snapshot.Range{Start: 0, End: set.Len()}}
	batched, _, err := Predict(context.Background(), b, sil, whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	clean, _, err := Predict(context.Background(), b, set, whole, 3)
	if err != nil {
		t.Fatal(err)
	}
	differ := false
	emb := make([][]float64, nodes)
	out := make([]float64, channels)
	for s := 0; s < set.Len(); s++ {
		for k := 0; k < nodes; k++ {
			win := make([]float64, window*channels)
			for j := 0; j < window; j++ {
				if j >= window-silence(s, k) {
					continue // silenced: the service holds no reading, a zero
				}
				for c := 0; c < channels; c++ {
					win[j*channels+c] = set.RawAt(s+j, k, c)
				}
			}
			emb[k] = make([]float64, hidden)
			if err := b.Embed(emb[k], win, 0); err != nil {
				t.Fatal(err)
			}
		}
		for z := 0; z < nodes; z++ {
			ks, _ := b.Receptive(z)
			in := make([][]float64, len(ks))
			for i, k := range ks {
				in[i] = emb[k]
			}
			if err := b.Forecast(out, z, in); err != nil {
				t.Fatal(err)
			}
			for c, v := range out {
				at := (s*nodes+z)*channels + c
				if math.Float64bits(v) != math.Float64bits(batched[at]) {
					t.Fatalf("snapshot %d node %d channel %d: online %v, batched %v", s, z, c, v, batched[at])
				}
				differ = differ || v != clean[at]
			}
		}
	}
	if !differ {
		t.Error("silencing changed no forecast")
	}
	if _, _, err := Predict(context.Background(), b, set.Masked(false), whole, 3); err == nil || !strings.Contains(err.Error(), "missing marks") {
		t.Errorf("data without marks for a bundle that reads them: %v", err)
	}
}

// TestFitSilentRecoversPlantedWeights plants, for every node, silent
// weights over its receptive nodes: on the rows where the node is silent
// its target Z is exactly those weights times φ(H) of its receptive nodes
// (elsewhere noise). FitSilent must find them, keep Θ's support and main
// weights, and leave a node silent too rarely with its main weights.
func TestFitSilentRecoversPlantedWeights(t *testing.T) {
	const n, S, d = 5, 120, 4
	rng := rand.New(rand.NewPCG(9, 10))
	st := NewStudent(n, d, 6, rng)
	theta := &Theta{Nodes: [][]int{{0, 1, 2}, {0, 1}, {1, 2, 3}, {3, 4}, {2, 4}}, Weights: [][]float64{{0.8, 0.1, 0.1}, {0.2, 0.9}, {0.1, 0.7, 0.2}, {0.9, 0.1}, {0.3, 0.6}}}
	if err := st.SetTheta(theta); err != nil {
		t.Fatal(err)
	}
	planted := [][]float64{{0, 0.6, 0.5}, {0.7, 0.05}, {0.4, 0, 0.8}, {0.3, 0.2}, {0, 0}}
	h := mat.NewDense(S*n, d, nil)
	for i := range S * n {
		for j := range d {
			h.Set(i, j, rng.NormFloat64())
		}
	}
	phi := st.PhiAll(h)
	z := mat.NewDense(S*n, d, nil)
	silent := make([]bool, S*n)
	for s := range S {
		for node := range n {
			row := s*n + node
			silent[row] = node != 4 && (s+node)%4 == 0 // node 4 never silent
			for j := range d {
				v := rng.NormFloat64()
				if silent[row] {
					v = 0
					for i, k := range theta.Nodes[node] {
						v += planted[node][i] * phi.At(s*n+k, j)
					}
				}
				z.Set(row, j, v)
			}
		}
	}
	tg := &Targets{Range: snapshot.Range{End: S}, Nodes: n, Dim: d, H: h, Z: z, Truth: make([]float64, S*n), Channels: 1}
	fitted, err := st.FitSilent(tg, silent)
	if err != nil {
		t.Fatal(err)
	}
	if fitted != 4 {
		t.Errorf("fitted %d nodes, want 4 (node 4 is never silent)", fitted)
	}
	got := st.Theta
	for node := range n {
		want := planted[node]
		if node == 4 {
			want = theta.Weights[node]
		}
		for i, w := range want {
			if math.Abs(got.Silent[node][i]-w) > 1e-8 {
				t.Errorf("node %d: silent weights %v, want %v", node, got.Silent[node], want)
				break
			}
		}
		for i, k := range theta.Nodes[node] {
			if got.Nodes[node][i] != k || got.Weights[node][i] != theta.Weights[node][i] {
				t.Errorf("node %d: Θ changed to %v %v", node, got.Nodes[node], got.Weights[node])
			}
		}
	}
	if _, err := st.FitSilent(tg, silent[:10]); err == nil {
		t.Error("marks of too few rows accepted")
	}
}

// TestBundleSilentWeights checks a bundle with silent weights: it saves
// and loads them; its batched path weighs a node silent for its whole
// window (every mark set) with them and the others with the main weights,
// as ForecastManySilent does node by node; and a bundle without them, or
// without marks to tell silence by, forecasts as ever.
func TestBundleSilentWeights(t *testing.T) {
	const nodes, channels, window, hidden, steps = 4, 2, 3, 4, 12
	rng := rand.New(rand.NewPCG(15, 16))
	data := make([]float64, steps*nodes*channels)
	for i := range data {
		data[i] = 1 + rng.Float64()
	}
	norm, err := snapshot.FitNormalizer(data, nodes, channels, steps)
	if err != nil {
		t.Fatal(err)
	}
	norm.Mask = true
	cfg := DefaultConfig()
	cfg.PhiHidden = 3
	theta := &Theta{Nodes: [][]int{{0, 1}, {1}, {0, 2, 3}, {3}}, Weights: [][]float64{{0.5, 0.25}, {1}, {0.1, 0.2, 0.3}, {2}},
		Silent: [][]float64{{0, 0.9}, {1}, {0.6, 0, 0.4}, {2}}}
	meta := BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"a", "b"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	b, err := NewBundle(meta, gru.New(norm.Inputs(), hidden, rng), nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), theta, nn.NewMLP("dec", hidden, 5, channels, rng))
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/silent.sdgnn"
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	lb, err := LoadBundle(path)
	if err != nil {
		t.Fatal(err)
	}
	for z := range theta.Silent {
		for i, w := range theta.Silent[z] {
			if lb.Theta.Silent[z][i] != w {
				t.Fatalf("loaded silent weights %v, want %v", lb.Theta.Silent, theta.Silent)
			}
		}
	}
	set, err := snapshot.NewSet(data, steps, nodes, channels, window, norm)
	if err != nil {
		t.Fatal(err)
	}
	silence := func(s, z int) int { return map[bool]int{true: window, false: 0}[(s+z)%3 == 0] }
	sil := set.Silenced(silence)
	whole := snapshot.Part{Range: snapshot.Range{Start: 0, End: set.Len()}}
	batched, _, err := Predict(context.Background(), lb, sil, whole, 4)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := lb.Clone()
	if err != nil {
		t.Fatal(err)
	}
	plain.Theta.Silent = nil
	mainOnly, _, err := Predict(context.Background(), plain, sil, whole, 4)
	if err != nil {
		t.Fatal(err)
	}
	emb := make([][]float64, nodes)
	out := make([]float64, channels)
	changed := false
	for s := 0; s < set.Len(); s++ {
		for k := range emb {
			win := make([]float64, window*channels)
			if silence(s, k) == 0 {
				for j := 0; j < window; j++ {
					for c := 0; c < channels; c++ {
						win[j*channels+c] = set.RawAt(s+j, k, c)
					}
				}
			}
			emb[k] = make([]float64, hidden)
			if err := lb.Embed(emb[k], win, 0); err != nil {
				t.Fatal(err)
			}
		}
		for z := range nodes {
			ks, _ := lb.Receptive(z)
			in := make([][]float64, len(ks))
			for i, k := range ks {
				in[i] = emb[k]
			}
			quiet := silence(s, z) == window
			if err := lb.ForecastManySilent(out, []int{z}, in, []bool{quiet}); err != nil {
				t.Fatal(err)
			}
			for c, v := range out {
				at := (s*nodes+z)*channels + c
				if math.Float64bits(v) != math.Float64bits(batched[at]) {
					t.Fatalf("snapshot %d node %d: online %v, batched %v", s, z, v, batched[at])
				}
				if !quiet && v != mainOnly[at] {
					t.Fatalf("snapshot %d node %d, not silent: %v with silent weights, %v without", s, z, v, mainOnly[at])
				}
				changed = changed || quiet && v != mainOnly[at]
			}
		}
	}
	if !changed {
		t.Error("the silent weights changed no silent node's forecast")
	}
}

// silentFixture returns a student with Θ and silent weights over 5 nodes,
// targets of S snapshots whose truths are a decoder's forecasts from
// planted silent weights on the silent rows, and those rows' marks.
func silentFixture(t *testing.T, S int, seed uint64) (*Student, *nn.MLP, snapshot.Normalizer, *Targets, []bool, [][]float64) {
	t.Helper()
	const n, d = 5, 4
	rng := rand.New(rand.NewPCG(seed, 1))
	st := NewStudent(n, d, 6, rng)
	theta := &Theta{Nodes: [][]int{{0, 1, 2}, {0, 1}, {1, 2, 3}, {3, 4}, {2, 4}}, Weights: [][]float64{{0.8, 0.1, 0.1}, {0.2, 0.9}, {0.1, 0.7, 0.2}, {0.9, 0.1}, {0.3, 0.6}},
		Silent: [][]float64{{0.8, 0.1, 0.1}, {0.2, 0.9}, {0.1, 0.7, 0.2}, {0.9, 0.1}, {0.3, 0.6}}}
	if err := st.SetTheta(theta); err != nil {
		t.Fatal(err)
	}
	planted := [][]float64{{0.1, 0.6, 0.5}, {0.7, 0.05}, {0.4, 0.1, 0.8}, {0.3, 0.2}, {0.2, 0.5}}
	dec := nn.NewMLP("dec", d, 5, 1, rng)
	norm := snapshot.Normalizer{Mean: []float64{50}, Std: []float64{10}}
	h := mat.NewDense(S*n, d, nil)
	for i := range S * n {
		for j := range d {
			h.Set(i, j, rng.NormFloat64())
		}
	}
	phi := st.PhiAll(h)
	truth := make([]float64, S*n)
	silent := make([]bool, S*n)
	z := mat.NewDense(1, d, nil)
	for s := range S {
		for node := range n {
			row := s*n + node
			silent[row] = (s+node)%3 == 0
			z.Zero()
			for i, k := range theta.Nodes[node] {
				for j := range d {
					z.Set(0, j, z.At(0, j)+planted[node][i]*phi.At(s*n+k, j))
				}
			}
			truth[row] = norm.Denormalize(dec.Forward(z).At(0, 0), 0)
		}
	}
	tg := &Targets{Range: snapshot.Range{End: S}, Nodes: n, Dim: d, H: h, Z: mat.NewDense(S*n, d, nil), Truth: truth, Channels: 1}
	return st, dec, norm, tg, silent, planted
}

// TestTuneSilentGradient checks the gradient of the silent weights' loss
// against central finite differences.
func TestTuneSilentGradient(t *testing.T) {
	st, dec, norm, tg, silent, _ := silentFixture(t, 30, 3)
	sr := newSilentRows(st, tg, silent, norm)
	th := st.Theta
	off := []int{0, 3, 5, 8, 10, 12}
	w := nn.NewParam("silent", 1, 12)
	rng := rand.New(rand.NewPCG(4, 4))
	for i := range w.W.RawMatrix().Data {
		w.W.RawMatrix().Data[i] = 0.2 + rng.Float64()
	}
	var dy *mat.Dense
	loss := func() float64 {
		l, err := sr.lossGrad(dec, th, w, off, &dy)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	grad := func() {
		nn.ZeroGrad([]*nn.Param{w})
		loss()
	}
	if worst, err := nn.GradCheck([]*nn.Param{w}, grad, loss, 1e-6, 1e-5, 0); err != nil {
		t.Errorf("silent weights' gradient: %v (worst %.3g)", err, worst)
	}
	// Every node has silent rows in the fixture, so every weight has a
	// gradient: a zero one would pass GradCheck on a flat loss and check
	// nothing.
	grad()
	for i, g := range w.G.RawMatrix().Data {
		if g == 0 {
			t.Errorf("silent weight %d: zero gradient", i)
		}
	}
	for _, p := range dec.Params() {
		for _, g := range p.G.RawMatrix().Data {
			if g != 0 {
				t.Fatalf("the decoder's %s has gradients after lossGrad", p.Name)
			}
		}
	}
}

// TestTuneSilentLearnsFromTruth checks that tuning against truths made by
// planted silent weights lowers the silent rows' validation error well
// below that of the starting weights, keeps every weight ≥ 0 and Θ's main
// weights, and that with no pass (0 epochs) the starting weights stay.
func TestTuneSilentLearnsFromTruth(t *testing.T) {
	st, dec, norm, train, ts, _ := silentFixture(t, 60, 5)
	_, _, _, val, vs, _ := silentFixture(t, 30, 5)
	start := st.Theta
	mae0, err := st.TuneSilent(dec, norm, train, ts, val, vs, 0, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	for z := range start.Silent {
		for i, w := range start.Silent[z] {
			if st.Theta.Silent[z][i] != w {
				t.Fatalf("0 passes changed the silent weights to %v", st.Theta.Silent)
			}
		}
	}
	mae, err := st.TuneSilent(dec, norm, train, ts, val, vs, 300, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	if !(mae < 0.3*mae0) {
		t.Errorf("validation MAE of the silent rows %v after tuning, %v before", mae, mae0)
	}
	for z := range st.Theta.Silent {
		for i, w := range st.Theta.Silent[z] {
			if w < 0 || st.Theta.Weights[z][i] != start.Weights[z][i] {
				t.Fatalf("node %d: silent %v, main %v", z, st.Theta.Silent[z], st.Theta.Weights[z])
			}
		}
	}
	if _, err := st.TuneSilent(dec, norm, train, make([]bool, len(ts)), val, vs, 1, 1e-2); err == nil {
		t.Error("no silent training row: no error")
	}
}

// TestSilentWeightsNeedMarks checks that a bundle whose inputs carry no
// missing marks cannot hold silent weights, made or decoded: its batched
// path could not tell a silent sensor and would part from the online one.
func TestSilentWeightsNeedMarks(t *testing.T) {
	const nodes, channels, window, hidden = 3, 1, 3, 4
	rng := rand.New(rand.NewPCG(25, 26))
	norm := snapshot.Normalizer{Mean: []float64{50}, Std: []float64{10}}
	cfg := DefaultConfig()
	cfg.PhiHidden = 3
	meta := BundleMeta{Dataset: "tiny", Nodes: nodes, Channels: []string{"a"}, Window: window, Hidden: hidden, Norm: norm, Config: cfg}
	theta := func(silent bool) *Theta {
		th := &Theta{Nodes: [][]int{{0, 1}, {1}, {1, 2}}, Weights: [][]float64{{0.5, 0.5}, {1}, {0.3, 0.7}}}
		if silent {
			th.Silent = [][]float64{{0, 1}, {1}, {1, 0}}
		}
		return th
	}
	g, phi, dec := gru.New(norm.Inputs(), hidden, rng), nn.NewMLP("phi", hidden, cfg.PhiHidden, hidden, rng), nn.NewMLP("dec", hidden, 5, channels, rng)
	if _, err := NewBundle(meta, g, phi, theta(true), dec); err == nil || !strings.Contains(err.Error(), "missing marks") {
		t.Errorf("NewBundle with silent weights and no marks: %v", err)
	}
	b, err := NewBundle(meta, g, phi, theta(false), dec)
	if err != nil {
		t.Fatal(err)
	}
	// Save checks that the file it writes loads: decoding refuses it.
	b.Theta = theta(true)
	if err := b.Save(t.TempDir() + "/nomarks.sdgnn"); err == nil || !strings.Contains(err.Error(), "missing marks") {
		t.Errorf("saving silent weights without marks: %v", err)
	}
}
