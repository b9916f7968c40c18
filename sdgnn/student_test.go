package sdgnn

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

func randDense(rng *rand.Rand, r, c int) *mat.Dense {
	m := mat.NewDense(r, c, nil)
	d := m.RawMatrix().Data
	for i := range d {
		d[i] = rng.NormFloat64()
	}
	return m
}

func TestThetaCSRAndTranspose(t *testing.T) {
	th := &Theta{Nodes: [][]int{{0, 2}, {1}, {0, 1, 2}}, Weights: [][]float64{{0.5, 1}, {2}, {0.1, 0.2, 0.3}}}
	if err := th.Validate(3); err != nil {
		t.Fatal(err)
	}
	a, at := th.CSR()
	for z := 0; z < 3; z++ {
		for k := 0; k < 3; k++ {
			if a.At(z, k) != at.At(k, z) {
				t.Fatalf("Θ[%d][%d] = %g but Θᵀ[%d][%d] = %g", z, k, a.At(z, k), k, z, at.At(k, z))
			}
		}
	}
	if a.At(0, 2) != 1 || a.At(2, 1) != 0.2 || a.At(1, 0) != 0 {
		t.Fatalf("Θ entries wrong: %v", a)
	}
	for _, bad := range []*Theta{
		{Nodes: [][]int{{0}}, Weights: [][]float64{{-1}}},
		{Nodes: [][]int{{3}}, Weights: [][]float64{{1}}},
		{Nodes: [][]int{{0, 0}}, Weights: [][]float64{{1}}},
		{Nodes: [][]int{{0}}, Weights: [][]float64{{math.NaN()}}},
	} {
		if err := bad.Validate(1); err == nil {
			t.Errorf("invalid Θ %+v accepted", bad)
		}
	}
}

// TestPhaseThetaRecoversPlantedWeights plants a sparse non-negative Θ* over
// the candidate sets, builds Z = Θ*·Φ exactly, and checks that Phase Θ
// finds weights that reproduce Z within the budget.
func TestPhaseThetaRecoversPlantedWeights(t *testing.T) {
	const n, d, S = 12, 4, 80
	rng := rand.New(rand.NewPCG(3, 3))
	nb := make([][]int, n)
	for i := 0; i < n; i++ { // a ring with chords
		nb[i] = []int{(i + 1) % n, (i + n - 1) % n, (i + 5) % n}
	}
	for i := range nb {
		for _, j := range nb[i] {
			nb[j] = appendUnique(nb[j], i)
		}
	}
	cands, err := Candidates(nb, CandidateConfig{K1: 2})
	if err != nil {
		t.Fatal(err)
	}
	planted := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := 0; z < n; z++ {
		perm := rng.Perm(len(cands[z]))[:3]
		for _, p := range perm {
			planted.Nodes[z] = append(planted.Nodes[z], cands[z][p])
			planted.Weights[z] = append(planted.Weights[z], 0.2+rng.Float64())
		}
		sortPairs(planted.Nodes[z], planted.Weights[z])
	}
	phi := randDense(rng, S*n, d)
	a, _ := planted.CSR()
	z := mat.NewDense(S*n, d, nil)
	a.MulBlocks(z, phi)
	theta, stats, err := PhaseTheta(phi, z, n, cands, 0, 6, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if stats.MeanKKT > 1e-8 {
		t.Errorf("mean KKT violation %g", stats.MeanKKT)
	}
	for zi := 0; zi < n; zi++ {
		if len(theta.Nodes[zi]) > 6 {
			t.Fatalf("node %d has %d receptive nodes, budget 6", zi, len(theta.Nodes[zi]))
		}
	}
	got, _ := theta.CSR()
	zhat := mat.NewDense(S*n, d, nil)
	got.MulBlocks(zhat, phi)
	var num, den float64
	for i, v := range z.RawMatrix().Data {
		e := zhat.RawMatrix().Data[i] - v
		num += e * e
		den += v * v
	}
	if num/den > 1e-10 {
		t.Fatalf("relative error of recovered Θ: %g", num/den)
	}
	for zi := 0; zi < n; zi++ {
		for i, k := range planted.Nodes[zi] {
			if w := got.At(zi, k); math.Abs(w-planted.Weights[zi][i]) > 1e-6 {
				t.Fatalf("θ[%d][%d] = %g, planted %g", zi, k, w, planted.Weights[zi][i])
			}
		}
	}
}

// TestPhaseThetaRefitRemovesShrinkage uses a large λ1: the Lasso weights are
// shrunk, and the refit on the same support recovers the planted ones.
func TestPhaseThetaRefitRemovesShrinkage(t *testing.T) {
	const n, d, S = 6, 3, 200
	rng := rand.New(rand.NewPCG(5, 5))
	nb := path(n)
	cands, err := Candidates(nb, CandidateConfig{K1: 1})
	if err != nil {
		t.Fatal(err)
	}
	planted := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := 0; z < n; z++ {
		planted.Nodes[z] = []int{z}
		planted.Weights[z] = []float64{1 + float64(z)/10}
	}
	phi := randDense(rng, S*n, d)
	a, _ := planted.CSR()
	zt := mat.NewDense(S*n, d, nil)
	a.MulBlocks(zt, phi)
	for _, refit := range []bool{false, true} {
		theta, _, err := PhaseTheta(phi, zt, n, cands, 0.3, 6, refit, false)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := theta.CSR()
		var worst float64
		for z := 0; z < n; z++ {
			worst = math.Max(worst, math.Abs(got.At(z, z)-planted.Weights[z][0]))
		}
		if refit && worst > 1e-9 {
			t.Errorf("refit: largest weight error %g", worst)
		}
		if !refit && worst < 1e-2 {
			t.Errorf("without refit the weights were not shrunk (largest error %g): the test's λ is too small", worst)
		}
	}
}

func appendUnique(s []int, v int) []int {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// TestStudentGradients checks φ's gradients through Θ against finite
// differences.
func TestStudentGradients(t *testing.T) {
	const n, d, B = 5, 3, 2
	rng := rand.New(rand.NewPCG(4, 4))
	st := NewStudent(n, d, 4, rng)
	th := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := 0; z < n; z++ {
		th.Nodes[z] = []int{z, (z + 1) % n}
		th.Weights[z] = []float64{0.7, 0.4}
		sortPairs(th.Nodes[z], th.Weights[z])
	}
	if err := st.SetTheta(th); err != nil {
		t.Fatal(err)
	}
	h := randDense(rng, B*n, d)
	w := randDense(rng, B*n, d)
	loss := func() float64 {
		zh, err := st.Forward(h)
		if err != nil {
			t.Fatal(err)
		}
		var m mat.Dense
		m.MulElem(zh, w)
		return mat.Sum(&m)
	}
	grad := func() {
		nn.ZeroGrad(st.Phi.Params())
		loss()
		st.Backward(w)
	}
	if worst, err := nn.GradCheck(st.Phi.Params(), grad, loss, 1e-6, 1e-6, 0); err != nil {
		t.Fatalf("%v (worst %.3g)", err, worst)
	}
}

func TestScheduleBudget(t *testing.T) {
	c := DefaultConfig()
	c.BudgetStart, c.BudgetEnd, c.BudgetEvery = 46, 6, 100
	for _, tc := range []struct{ epoch, want int }{{0, 46}, {99, 46}, {100, 45}, {3999, 7}, {4000, 6}, {9000, 6}} {
		if got := c.Budget(tc.epoch); got != tc.want {
			t.Errorf("budget at epoch %d = %d, want %d", tc.epoch, got, tc.want)
		}
	}
	sc := DefaultConfig().Scaled(10)
	if sc.Epochs != 410 || sc.ThetaEvery != 4 || sc.BudgetEvery != 10 || sc.Budget(400) != 6 || sc.Budget(399) != 7 {
		t.Errorf("Scaled(10): %+v", sc)
	}
}

// TestConfigValidate checks that each wrong setting is refused with a
// message naming it, and that the defaults pass.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"budget end above start", func(c *Config) { c.BudgetEnd = c.BudgetStart + 1 }, "need start ≥ end ≥ 1"},
		{"zero budget", func(c *Config) { c.BudgetEnd = 0 }, "budget 46 → 0"},
		{"negative epochs", func(c *Config) { c.Epochs = -1 }, "epochs -1"},
		{"zero theta period", func(c *Config) { c.ThetaEvery = 0 }, "theta every 0"},
		{"negative fine-tuning", func(c *Config) { c.FineTuneEpochs = -3 }, "fine-tune epochs -3: must be ≥ 0"},
		{"fine-tuning without a rate", func(c *Config) { c.FineTuneLR = 0 }, "fine-tune lr 0"},
		{"negative λ1", func(c *Config) { c.Lambda1 = -1 }, "λ1 -1"},
		{"NaN MAPE floor", func(c *Config) { c.MAPEFloor = math.NaN() }, "MAPE floor NaN"},
		{"unknown selection", func(c *Config) { c.Select = "rmse" }, `select "rmse"`},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestSolveNodeKeepSelf checks the keepSelf option of Phase Θ on a node
// whose target its neighbours explain better than its own column, so that
// the plain path leaves it out of its own receptive set: with keepSelf the
// node is in, the budget still holds, the self weight is the least-squares
// one given the others (the gradient of the unpenalised self term is zero),
// and the others satisfy the Lasso's conditions on the partialled problem.
func TestSolveNodeKeepSelf(t *testing.T) {
	// Columns over 6 samples: self (x0) and two neighbours; the target is
	// mostly x1 + x2.
	x := [][]float64{
		{1, 0, 0, 1, 0, 0},
		{0.2, 1, 0, 0, 1, 0.1},
		{0, 0.3, 1, 0, 0.2, 1},
	}
	y := []float64{0.5, 1.2, 1.1, 0.4, 1.3, 1.0}
	m := len(x)
	g, cv := make([]float64, m*m), make([]float64, m)
	for i := range x {
		cv[i] = floats.Dot(x[i], y)
		for j := range x {
			g[i*m+j] = floats.Dot(x[i], x[j])
		}
	}
	c := []int{7, 3, 9} // node 7 is the first candidate
	for _, tc := range []struct {
		budget   int
		keepSelf bool
		wantSelf bool
		wantLen  int
	}{
		{1, false, false, 1},
		{2, false, false, 2},
		{1, true, true, 1},
		{2, true, true, 2},
		{3, true, true, 3},
	} {
		ids, ws, _, err := solveNode(g, cv, c, 7, 1e-6, tc.budget, false, tc.keepSelf)
		if err != nil {
			t.Fatal(err)
		}
		self := slices.Index(ids, 7)
		if (self >= 0) != tc.wantSelf || len(ids) != tc.wantLen || len(ids) > tc.budget {
			t.Errorf("budget %d keepSelf %v: receptive %v %v, want self %v and %d nodes", tc.budget, tc.keepSelf, ids, ws, tc.wantSelf, tc.wantLen)
			continue
		}
		if !tc.keepSelf {
			continue
		}
		// Residual correlations: zero for self, λ-level or below for the others.
		theta := make([]float64, m)
		for i, id := range ids {
			theta[slices.Index(c, id)] = ws[i]
		}
		grad := make([]float64, m)
		for i := range grad {
			grad[i] = cv[i]
			for j := range theta {
				grad[i] -= g[i*m+j] * theta[j]
			}
		}
		if math.Abs(grad[0]) > 1e-9 {
			t.Errorf("budget %d: self gradient %g, want 0", tc.budget, grad[0])
		}
		if tc.budget == 3 {
			for i := 1; i < m; i++ {
				if theta[i] > 0 && math.Abs(grad[i]) > 1e-5 {
					t.Errorf("budget 3: active node %d has residual correlation %g, want λ = 1e-6", c[i], grad[i])
				}
			}
		}
	}
}

func TestThetaWithoutSelf(t *testing.T) {
	th := &Theta{Nodes: [][]int{{0, 2}, {0, 2}, {}, {1, 3, 4}}, Weights: [][]float64{{1, 1}, {1, 1}, {}, {1, 1, 1}}}
	if got := th.WithoutSelf(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("WithoutSelf = %v, want [1 2]", got)
	}
}

// fullProducts returns the Gram matrix of phi's node-major rows and their
// correlations with z's, averaged over the S snapshots: every entry that
// Phase Θ's problems read, computed whole.
func fullProducts(phi, z *mat.Dense, n, S int) (gram, corr *mat.Dense) {
	p, q := nodeMajor(nil, phi, n, 0, S), nodeMajor(nil, z, n, 0, S)
	gram, corr = new(mat.Dense), new(mat.Dense)
	gram.Mul(p, p.T())
	gram.Scale(1.0/float64(S), gram)
	corr.Mul(p, q.T())
	corr.Scale(1.0/float64(S), corr)
	return gram, corr
}

// TestThetaProblemsMatchFullProducts checks the node problems, built from
// the Gram and correlation entries the candidate sets need, against ones
// built from the full products φᵀφ/S and φᵀZ/S, whether the snapshots are
// summed in one block or in several (the last one shorter), and that a
// candidate outside the graph is refused.
func TestThetaProblemsMatchFullProducts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, S, d = 9, 40, 3
	cands := [][]int{{0, 1}, {0, 1, 2}, {1, 2, 3, 8}, {3}, {4, 5}, {4, 5, 6}, {6}, {7, 0}, {8, 2}}
	phi, z := randDense(rng, S*n, d), randDense(rng, S*n, d)
	gram, corr := fullProducts(phi, z, n, S)
	gs, cs, err := ThetaProblems(phi, z, n, cands)
	if err != nil {
		t.Fatal(err)
	}
	for node, c := range cands {
		g, cv := nodeProblem(gram, corr, c, node)
		if !floats.EqualApprox(gs[node], g, 1e-12) || !floats.EqualApprox(cs[node], cv, 1e-12) {
			t.Errorf("node %d: problem\n%v %v\nwant\n%v %v", node, gs[node], cs[node], g, cv)
		}
	}
	// A student's φ computed block by block gives the products of φ(H)
	// computed whole.
	h := randDense(rng, S*n, d)
	st := NewStudent(n, d, 5, rng)
	phiH := st.PhiAll(h)
	sg, sc := fullProducts(phiH, z, n, S)
	for _, chunk := range []int{1, 7, S - 1, S} {
		for _, src := range []struct {
			name       string
			rows       phiRows
			gram, corr *mat.Dense
		}{
			{"matrix", matrixRows(phi, n), gram, corr},
			{"student", st.phiRows(h, n), sg, sc},
		} {
			gc, cc, err := thetaProducts(src.rows, z, n, cands, chunk*8*n*d)
			if err != nil {
				t.Fatal(err)
			}
			for node, c := range cands {
				g, cv := nodeProblem(src.gram, src.corr, c, node)
				gn, cn := nodeProblem(gc, cc, c, node)
				if !floats.EqualApprox(gn, g, 1e-12) || !floats.EqualApprox(cn, cv, 1e-12) {
					t.Errorf("%s, blocks of %d snapshots, node %d: problem\n%v %v\nwant\n%v %v", src.name, chunk, node, gn, cn, g, cv)
				}
			}
		}
	}
	if _, _, err := ThetaProblems(phi, z, n, [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {9}}); err == nil {
		t.Error("a candidate outside the graph accepted")
	}
}

// TestStudentPhaseThetaMatchesMatrix checks that the student's Phase Θ,
// which computes φ(H) a block of snapshots at a time, selects the nodes
// and weights that PhaseTheta does on φ(H) computed whole, and refuses
// targets whose shapes disagree.
func TestStudentPhaseThetaMatchesMatrix(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const n, S, d = 9, 30, 3
	cands := [][]int{{0, 1, 8}, {0, 1, 2}, {1, 2, 3, 8}, {3, 2}, {4, 5}, {4, 5, 6}, {6, 5, 7}, {7, 0, 6}, {8, 2, 0}}
	st := NewStudent(n, d, 5, rng)
	h := randDense(rng, S*n, d)
	phi := st.PhiAll(h)
	// Targets mixing φ(H) of each node's candidates, plus noise.
	z := randDense(rng, S*n, d)
	z.Scale(0.1, z)
	for s := 0; s < S; s++ {
		for node, c := range cands {
			for _, k := range c {
				for j := 0; j < d; j++ {
					z.Set(s*n+node, j, z.At(s*n+node, j)+0.5*phi.At(s*n+k, j))
				}
			}
		}
	}
	tg := &Targets{Nodes: n, Dim: d, H: h, Z: z}
	want, wstats, err := PhaseTheta(phi, z, n, cands, 0.01, 3, true, true)
	if err != nil {
		t.Fatal(err)
	}
	got, gstats, err := st.PhaseTheta(tg, cands, 0.01, 3, true, true)
	if err != nil {
		t.Fatal(err)
	}
	if wstats.MeanReceptive == 0 {
		t.Fatal("PhaseTheta selected no node: the test checks nothing")
	}
	if gstats.MeanReceptive != wstats.MeanReceptive || math.Abs(gstats.MeanKKT-wstats.MeanKKT) > 1e-12 {
		t.Errorf("stats %+v, want %+v", gstats, wstats)
	}
	for node := range cands {
		if !slices.Equal(got.Nodes[node], want.Nodes[node]) || !floats.EqualApprox(got.Weights[node], want.Weights[node], 1e-12) {
			t.Errorf("node %d: θ %v %v, want %v %v", node, got.Nodes[node], got.Weights[node], want.Nodes[node], want.Weights[node])
		}
	}
	bad := &Targets{Nodes: n, Dim: d, H: h, Z: mat.NewDense(S*n, d+1, nil)}
	if _, _, err := st.PhaseTheta(bad, cands, 0.01, 3, true, true); err == nil {
		t.Error("Z of another width accepted")
	}
}

// TestEachZHat checks that EachZHat covers every row once, in order and in
// blocks of whole snapshots, with Θ·φ(H) computed whole, and that ZHatAll
// returns the same, over enough snapshots to need several blocks.
func TestEachZHat(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const n, S, d = 9, 4000, 3
	st := NewStudent(n, d, 5, rng)
	th := &Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := range n {
		th.Nodes[z] = []int{(z + n - 1) % n, z}
		if z == 0 {
			th.Nodes[z] = []int{z, n - 1}
		}
		th.Weights[z] = []float64{0.3 + rng.Float64(), 0.3 + rng.Float64()}
	}
	if err := st.SetTheta(th); err != nil {
		t.Fatal(err)
	}
	h := randDense(rng, S*n, d)
	a, _ := th.CSR()
	want := mat.NewDense(S*n, d, nil)
	a.MulBlocks(want, st.PhiAll(h))
	next, blocks := 0, 0
	st.EachZHat(h, func(lo, hi int, zhat *mat.Dense) {
		blocks++
		if lo != next || hi <= lo || (hi-lo)%n != 0 {
			t.Fatalf("block [%d, %d) after row %d", lo, hi, next)
		}
		if !mat.EqualApprox(zhat, want.Slice(lo, hi, 0, d), 1e-12) {
			t.Errorf("block [%d, %d) differs from Θ·φ(H)", lo, hi)
		}
		next = hi
	})
	if next != S*n || blocks < 2 {
		t.Errorf("%d blocks ending at row %d, want several ending at %d", blocks, next, S*n)
	}
	if !mat.EqualApprox(st.ZHatAll(h), want, 1e-12) {
		t.Error("ZHatAll differs from Θ·φ(H)")
	}

	// validate, which scores Ẑ block by block, against Ẑ computed whole.
	const C = 2
	tg := &Targets{Nodes: n, Dim: d, H: h, Z: randDense(rng, S*n, d), Channels: C, Truth: make([]float64, S*n*C)}
	for i := range tg.Truth {
		tg.Truth[i] = 10 + rng.Float64()
	}
	tg.Truth[5] = math.NaN()
	dec := nn.NewMLP("dec", d, 4, C, rng)
	norm := snapshot.Normalizer{Kind: snapshot.KindZScore, Mean: []float64{10, 11}, Std: []float64{2, 3}}
	var num, den float64
	for i, v := range want.RawMatrix().Data {
		z := tg.Z.RawMatrix().Data[i]
		num += (v - z) * (v - z)
		den += z * z
	}
	wm := decodeMetrics(dec, norm, want, tg, 1)
	nr, mse, m := validate(st, dec, norm, tg, 1)
	if math.Abs(nr-num/den) > 1e-12*num/den || math.Abs(mse-num/float64(S*n*d)) > 1e-12*mse {
		t.Errorf("validate: NR %g, MSE %g; want %g, %g", nr, mse, num/den, num/float64(S*n*d))
	}
	if math.Abs(m.MAE-wm.MAE) > 1e-12*wm.MAE || math.Abs(m.RMSE-wm.RMSE) > 1e-12*wm.RMSE || math.Abs(m.MAPE-wm.MAPE) > 1e-12*wm.MAPE || m.Count != wm.Count || m.Count != S*n*C-1 {
		t.Errorf("validate: metrics %+v, want %+v", m, wm)
	}
}
