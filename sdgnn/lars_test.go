package sdgnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// lassoProblem is a non-negative Lasso instance given by its design matrix,
// kept so that tests can check the G/c formulation against X directly.
type lassoProblem struct {
	n, p int
	x    []float64 // n×p row-major
	y    []float64
	g    []float64 // XᵀX
	c    []float64 // Xᵀy
	yy   float64
}

// newLassoProblem draws X (n×p, standard normal), a non-negative θ* with
// nnz nonzeros and y = Xθ* + noise·ε.
func newLassoProblem(rng *rand.Rand, n, p, nnz int, noise float64) lassoProblem {
	x := make([]float64, n*p)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	theta := make([]float64, p)
	for _, j := range rng.Perm(p)[:min(nnz, p)] {
		theta[j] = 0.5 + rng.Float64()
	}
	y := make([]float64, n)
	for i := range y {
		s := noise * rng.NormFloat64()
		for j := 0; j < p; j++ {
			s += x[i*p+j] * theta[j]
		}
		y[i] = s
	}
	return fromDesign(n, p, x, y)
}

// fromDesign builds G, c and yy from X and y.
func fromDesign(n, p int, x, y []float64) lassoProblem {
	g := make([]float64, p*p)
	c := make([]float64, p)
	yy := 0.0
	for r := 0; r < n; r++ {
		row := x[r*p : r*p+p]
		for i := 0; i < p; i++ {
			c[i] += row[i] * y[r]
			for j := 0; j < p; j++ {
				g[i*p+j] += row[i] * row[j]
			}
		}
		yy += y[r] * y[r]
	}
	return lassoProblem{n: n, p: p, x: x, y: y, g: g, c: c, yy: yy}
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func nonzeros(v []float64) int {
	n := 0
	for _, x := range v {
		if x != 0 {
			n++
		}
	}
	return n
}

// checkPath verifies the invariants every LassoPath must satisfy and the KKT
// conditions at path.Lambda to tol relative to max|c|.
func checkPath(t *testing.T, g, c []float64, maxActive int, path LassoPath, tol float64) {
	t.Helper()
	p := len(c)
	if len(path.Coef) != p {
		t.Fatalf("len(Coef) = %d, want %d", len(path.Coef), p)
	}
	for j, v := range path.Coef {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Fatalf("Coef[%d] = %v, want finite and ≥ 0", j, v)
		}
	}
	if nz := nonzeros(path.Coef); nz > maxActive {
		t.Errorf("%d nonzeros, want ≤ maxActive = %d", nz, maxActive)
	}
	if nz := nonzeros(path.Coef); nz != len(path.Active) {
		t.Errorf("%d nonzeros but Active = %v", nz, path.Active)
	}
	for _, j := range path.Active {
		if !(path.Coef[j] > 0) {
			t.Errorf("Active holds %d with Coef %v", j, path.Coef[j])
		}
	}
	if len(path.Lambdas) != path.Steps+1 {
		t.Errorf("len(Lambdas) = %d, want Steps+1 = %d", len(path.Lambdas), path.Steps+1)
	}
	for i := 1; i < len(path.Lambdas); i++ {
		if path.Lambdas[i] > path.Lambdas[i-1] {
			t.Errorf("Lambdas increase at %d: %v", i, path.Lambdas)
			break
		}
	}
	if path.Lambda != path.Lambdas[len(path.Lambdas)-1] {
		t.Errorf("Lambda = %v, want last of Lambdas %v", path.Lambda, path.Lambdas[len(path.Lambdas)-1])
	}
	scale := math.Max(maxAbs(c), 1e-300)
	if v := KKTViolation(g, c, path.Lambda, path.Coef); !(v <= tol*scale) {
		t.Errorf("KKT violation %.3g (relative %.3g) at λ = %g, want ≤ %g relative; stop %v, coef %v",
			v, v/scale, path.Lambda, tol, path.Stop, path.Coef)
	}
}

func TestLARSPositiveKKT(t *testing.T) {
	tests := []struct {
		n, p, nnz int
		noise     float64
		maxActive int
		lamFrac   float64 // lambdaMin as a fraction of max c
	}{
		{n: 40, p: 10, nnz: 3, noise: 0.1, maxActive: 10, lamFrac: 0},
		{n: 40, p: 10, nnz: 3, noise: 0.1, maxActive: 2, lamFrac: 0},
		{n: 40, p: 10, nnz: 3, noise: 0.1, maxActive: 10, lamFrac: 0.3},
		{n: 60, p: 30, nnz: 8, noise: 1, maxActive: 30, lamFrac: 0},
		{n: 60, p: 30, nnz: 8, noise: 1, maxActive: 5, lamFrac: 0.01},
		{n: 60, p: 30, nnz: 8, noise: 1, maxActive: 12, lamFrac: 0.05},
		{n: 200, p: 60, nnz: 20, noise: 0.5, maxActive: 46, lamFrac: 0},
		{n: 200, p: 60, nnz: 20, noise: 0.5, maxActive: 6, lamFrac: 0},
		{n: 120, p: 100, nnz: 30, noise: 2, maxActive: 50, lamFrac: 0.001},
		{n: 120, p: 100, nnz: 30, noise: 2, maxActive: 100, lamFrac: 0},
	}
	for i, tc := range tests {
		for seed := uint64(1); seed <= 5; seed++ {
			name := fmt.Sprintf("%d/n=%d,p=%d,max=%d,lam=%g/seed=%d", i, tc.n, tc.p, tc.maxActive, tc.lamFrac, seed)
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 17))
				pr := newLassoProblem(rng, tc.n, tc.p, tc.nnz, tc.noise)
				lamMin := tc.lamFrac * maxAbs(pr.c)
				path, err := LARSPositive(pr.g, pr.c, lamMin, tc.maxActive, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkPath(t, pr.g, pr.c, tc.maxActive, path, 1e-8)
				if path.Lambda < lamMin {
					t.Errorf("final λ %g below lambdaMin %g", path.Lambda, lamMin)
				}
				switch path.Stop {
				case StopLambdaMin:
					if math.Abs(path.Lambda-lamMin) > 1e-12*maxAbs(pr.c) {
						t.Errorf("stopped at λ = %g, want lambdaMin = %g", path.Lambda, lamMin)
					}
				case StopMaxActive:
					if nz := nonzeros(path.Coef); nz != tc.maxActive {
						t.Errorf("stopped by max-active with %d nonzeros, want %d", nz, tc.maxActive)
					}
				default:
					t.Errorf("unexpected stop %v", path.Stop)
				}
			})
		}
	}
}

// bestSupportObjective returns the minimum of the non-negative Lasso
// objective at λ by enumerating every support S and solving the stationarity
// system G_SS θ = c_S − λ·1, keeping the solutions with θ > 0 (each is a
// feasible point, and the minimiser is one of them).
func bestSupportObjective(t *testing.T, pr lassoProblem, lambda float64) float64 {
	t.Helper()
	p := pr.p
	best := Objective(pr.g, pr.c, pr.yy, lambda, make([]float64, p))
	for mask := 1; mask < 1<<p; mask++ {
		var s []int
		for j := 0; j < p; j++ {
			if mask&(1<<j) != 0 {
				s = append(s, j)
			}
		}
		k := len(s)
		a := mat.NewDense(k, k, nil)
		b := mat.NewVecDense(k, nil)
		for i, si := range s {
			for j, sj := range s {
				a.Set(i, j, pr.g[si*p+sj])
			}
			b.SetVec(i, pr.c[si]-lambda)
		}
		var sol mat.VecDense
		if err := sol.SolveVec(a, b); err != nil {
			continue
		}
		theta := make([]float64, p)
		ok := true
		for i, si := range s {
			if !(sol.AtVec(i) > 0) {
				ok = false
				break
			}
			theta[si] = sol.AtVec(i)
		}
		if ok {
			best = math.Min(best, Objective(pr.g, pr.c, pr.yy, lambda, theta))
		}
	}
	return best
}

func TestLARSPositiveExhaustive(t *testing.T) {
	tests := []struct {
		n, p, nnz, maxActive int
		lamFrac              float64
	}{
		{n: 12, p: 3, nnz: 2, maxActive: 3, lamFrac: 0.1},
		{n: 12, p: 4, nnz: 2, maxActive: 1, lamFrac: 0},
		{n: 20, p: 6, nnz: 3, maxActive: 6, lamFrac: 0.2},
		{n: 20, p: 6, nnz: 4, maxActive: 3, lamFrac: 0},
		{n: 30, p: 8, nnz: 4, maxActive: 8, lamFrac: 0.05},
		{n: 30, p: 8, nnz: 6, maxActive: 4, lamFrac: 0.01},
		{n: 9, p: 8, nnz: 8, maxActive: 8, lamFrac: 0},
	}
	for i, tc := range tests {
		for seed := uint64(1); seed <= 4; seed++ {
			name := fmt.Sprintf("%d/p=%d,max=%d,lam=%g/seed=%d", i, tc.p, tc.maxActive, tc.lamFrac, seed)
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 99))
				pr := newLassoProblem(rng, tc.n, tc.p, tc.nnz, 1)
				path, err := LARSPositive(pr.g, pr.c, tc.lamFrac*maxAbs(pr.c), tc.maxActive, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkPath(t, pr.g, pr.c, tc.maxActive, path, 1e-8)
				got := Objective(pr.g, pr.c, pr.yy, path.Lambda, path.Coef)
				want := bestSupportObjective(t, pr, path.Lambda)
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("objective at λ = %g: LARS %.15g, exhaustive minimum %.15g", path.Lambda, got, want)
				}
			})
		}
	}
}

func TestLARSPositiveMatchesNNLS(t *testing.T) {
	for _, tc := range []struct{ n, p, nnz int }{
		{10, 3, 2}, {30, 8, 4}, {60, 20, 5}, {100, 60, 30}, {80, 40, 40},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("n=%d,p=%d/seed=%d", tc.n, tc.p, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, 5))
				pr := newLassoProblem(rng, tc.n, tc.p, tc.nnz, 1)
				path, err := LARSPositive(pr.g, pr.c, 0, tc.p, 0)
				if err != nil {
					t.Fatal(err)
				}
				if path.Stop != StopLambdaMin || path.Lambda != 0 {
					t.Errorf("stop %v at λ = %g, want lambda-min at 0", path.Stop, path.Lambda)
				}
				nnls, err := NNLS(pr.g, pr.c, 0)
				if err != nil {
					t.Fatal(err)
				}
				if v := KKTViolation(pr.g, pr.c, 0, nnls); v > 1e-9*maxAbs(pr.c) {
					t.Errorf("NNLS KKT violation %g", v)
				}
				scale := math.Max(maxAbs(nnls), 1)
				for j := range nnls {
					if math.Abs(path.Coef[j]-nnls[j]) > 1e-8*scale {
						t.Fatalf("θ[%d]: LARS %.12g, NNLS %.12g", j, path.Coef[j], nnls[j])
					}
				}
			})
		}
	}
}

func TestObjectiveMatchesDesign(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	pr := newLassoProblem(rng, 15, 5, 3, 0.3)
	theta := []float64{0.2, 0, 1.5, 0.7, 0}
	const lambda = 0.4
	want := 0.0
	for r := 0; r < pr.n; r++ {
		res := pr.y[r]
		for j := 0; j < pr.p; j++ {
			res -= pr.x[r*pr.p+j] * theta[j]
		}
		want += 0.5 * res * res
	}
	for _, v := range theta {
		want += lambda * v
	}
	if got := Objective(pr.g, pr.c, pr.yy, lambda, theta); math.Abs(got-want) > 1e-12*want {
		t.Errorf("Objective = %.15g, want ½‖y−Xθ‖²+λΣθ = %.15g", got, want)
	}
	if got := Objective(pr.g, pr.c, pr.yy, lambda, theta[:3]); !math.IsNaN(got) {
		t.Errorf("Objective with short θ = %v, want NaN", got)
	}
}

func TestKKTViolation(t *testing.T) {
	g := []float64{2, 0, 0, 1}
	c := []float64{3, -1}
	tests := []struct {
		name   string
		lambda float64
		theta  []float64
		want   float64
	}{
		{"optimum", 1, []float64{1, 0}, 0},
		{"zero θ, positive correlation", 1, []float64{0, 0}, 2},
		{"active off the level", 1, []float64{0.5, 0}, 1},
		{"inactive below the level", 0, []float64{1.5, 0}, 0},
		{"negative θ", 1, []float64{1, -1}, math.Inf(1)},
		{"bad length", 1, []float64{1}, math.NaN()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := KKTViolation(g, c, tc.lambda, tc.theta)
			if math.IsNaN(tc.want) {
				if !math.IsNaN(got) {
					t.Errorf("got %v, want NaN", got)
				}
				return
			}
			if got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLARSPositiveMaxIter(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	pr := newLassoProblem(rng, 50, 20, 10, 0.5)
	for _, it := range []int{1, 2, 5} {
		path, err := LARSPositive(pr.g, pr.c, 0, 20, it)
		if err != nil {
			t.Fatal(err)
		}
		if path.Steps != it || path.Stop != StopMaxIter {
			t.Errorf("maxIter %d: %d steps, stop %v", it, path.Steps, path.Stop)
		}
		checkPath(t, pr.g, pr.c, 20, path, 1e-8)
	}
}

// withColumns builds a problem whose design has the given columns (each of
// length n) and target y.
func withColumns(cols [][]float64, y []float64) lassoProblem {
	n, p := len(y), len(cols)
	x := make([]float64, n*p)
	for j, col := range cols {
		for r, v := range col {
			x[r*p+j] = v
		}
	}
	return fromDesign(n, p, x, y)
}

func TestLARSPositiveDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	randVec := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		return v
	}
	add := func(a, b []float64, s float64) []float64 {
		v := make([]float64, len(a))
		for i := range v {
			v[i] = a[i] + s*b[i]
		}
		return v
	}
	const n = 20
	x0, x1, x2, x3 := randVec(n), randVec(n), randVec(n), randVec(n)
	y := add(add(x0, x1, 0.7), randVec(n), 0.2)
	zero := make([]float64, n)

	tests := []struct {
		name      string
		pr        lassoProblem
		lambdaMin float64
		maxActive int
		kktTol    float64 // relative KKT tolerance; 0 skips the check
		check     func(t *testing.T, path LassoPath)
	}{
		{
			name: "duplicate columns", pr: withColumns([][]float64{x0, x1, x0, x2}, y),
			maxActive: 4, kktTol: 1e-8,
			check: func(t *testing.T, path LassoPath) {
				if path.Coef[0] > 0 && path.Coef[2] > 0 {
					t.Errorf("both copies of a duplicated column are active: %v", path.Coef)
				}
			},
		},
		{
			name: "duplicate columns, interior λ", pr: withColumns([][]float64{x1, x0, x0, x2, x1}, y),
			lambdaMin: 1, maxActive: 5, kktTol: 1e-8,
		},
		{
			name: "zero column", pr: withColumns([][]float64{x0, zero, x1, x2}, y),
			maxActive: 4, kktTol: 1e-8,
			check: func(t *testing.T, path LassoPath) {
				if path.Coef[1] != 0 {
					t.Errorf("zero column has weight %v", path.Coef[1])
				}
			},
		},
		{
			name: "all-zero target", pr: withColumns([][]float64{x0, x1, x2}, zero),
			maxActive: 3, kktTol: 1e-8,
			check: func(t *testing.T, path LassoPath) {
				if nonzeros(path.Coef) != 0 || path.Stop != StopNoCorrelation || path.Lambda != 0 {
					t.Errorf("got coef %v, stop %v, λ %v; want zero, no-correlation, 0", path.Coef, path.Stop, path.Lambda)
				}
			},
		},
		{
			name: "negatively correlated target", pr: withColumns([][]float64{x0, x1}, add(zero, add(x0, x1, 1), -1)),
			maxActive: 2, kktTol: 1e-8,
			check: func(t *testing.T, path LassoPath) {
				if nonzeros(path.Coef) != 0 {
					t.Errorf("coef %v, want zero", path.Coef)
				}
			},
		},
		{
			name: "p = 1", pr: withColumns([][]float64{x0}, y),
			lambdaMin: 0.5, maxActive: 1, kktTol: 1e-12,
			check: func(t *testing.T, path LassoPath) {
				pr := withColumns([][]float64{x0}, y)
				want := math.Max(0, (pr.c[0]-0.5)/pr.g[0])
				if math.Abs(path.Coef[0]-want) > 1e-12*want {
					t.Errorf("θ = %v, want (c−λ)/G = %v", path.Coef[0], want)
				}
			},
		},
		{
			name: "rank-deficient: x3 = x0 + x1", pr: withColumns([][]float64{x0, x1, x2, add(x0, x1, 1)}, y),
			maxActive: 4, kktTol: 1e-8,
		},
		{
			name: "rank-deficient: x3 = x0 − x1", pr: withColumns([][]float64{x0, x1, x2, add(x0, x1, -1), x3}, add(x0, x3, 1)),
			maxActive: 5, kktTol: 1e-8,
		},
		{
			name: "rank-deficient: p > n", pr: newLassoProblem(rng, 6, 12, 4, 0.1),
			maxActive: 12, kktTol: 1e-7,
		},
		{
			name: "scaled duplicate", pr: withColumns([][]float64{x0, add(zero, x0, 2), x1}, y),
			maxActive: 3, kktTol: 1e-8,
		},
		{
			name: "empty candidate set", pr: lassoProblem{},
			maxActive: 3, kktTol: 1e-8,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, err := LARSPositive(tc.pr.g, tc.pr.c, tc.lambdaMin, tc.maxActive, 0)
			if err != nil {
				t.Fatal(err)
			}
			checkPath(t, tc.pr.g, tc.pr.c, tc.maxActive, path, tc.kktTol)
			if tc.check != nil {
				tc.check(t, path)
			}
			if tc.pr.p == 0 {
				return
			}
			nnls, err := NNLS(tc.pr.g, tc.pr.c, 0)
			if err != nil {
				t.Fatalf("NNLS: %v", err)
			}
			if v := KKTViolation(tc.pr.g, tc.pr.c, 0, nnls); v > 1e-7*math.Max(maxAbs(tc.pr.c), 1e-300) {
				t.Errorf("NNLS KKT violation %g, θ = %v", v, nnls)
			}
		})
	}
}

func TestLARSPositiveErrors(t *testing.T) {
	good := []float64{2, 1, 1, 2}
	c := []float64{1, 0.5}
	with := func(i int, v float64) []float64 {
		g := append([]float64(nil), good...)
		g[i] = v
		return g
	}
	tests := []struct {
		name      string
		g, c      []float64
		lambdaMin float64
		maxActive int
		want      string
	}{
		{"short g", good[:3], c, 0, 2, "len(g)"},
		{"long g", append(good, 0), c, 0, 2, "len(g)"},
		{"NaN in g", with(1, math.NaN()), c, 0, 2, "g[0,1]"},
		{"Inf in g", with(3, math.Inf(1)), c, 0, 2, "g[1,1]"},
		{"NaN in c", good, []float64{math.NaN(), 0}, 0, 2, "c[0]"},
		{"asymmetric g", with(1, 1.5), c, 0, 2, "not symmetric"},
		{"negative diagonal", with(0, -1), c, 0, 2, "negative diagonal"},
		{"negative lambdaMin", good, c, -1, 2, "lambdaMin"},
		{"NaN lambdaMin", good, c, math.NaN(), 2, "lambdaMin"},
		{"maxActive 0", good, c, 0, 0, "maxActive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LARSPositive(tc.g, tc.c, tc.lambdaMin, tc.maxActive, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("LARSPositive error = %v, want one mentioning %q", err, tc.want)
			}
			if tc.lambdaMin != 0 || tc.maxActive == 0 {
				return
			}
			if _, err := NNLS(tc.g, tc.c, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NNLS error = %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestNNLSNotConverged(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	pr := newLassoProblem(rng, 40, 10, 10, 0.1)
	x, err := NNLS(pr.g, pr.c, 1)
	if !errors.Is(err, ErrNotConverged) {
		t.Fatalf("error = %v, want ErrNotConverged", err)
	}
	for j, v := range x {
		if !(v >= 0) {
			t.Errorf("x[%d] = %v, want ≥ 0", j, v)
		}
	}
}

func TestNNLSSupportRefit(t *testing.T) {
	// Refitting on a fixed support: pass the sub-Gram matrix.
	rng := rand.New(rand.NewPCG(6, 6))
	pr := newLassoProblem(rng, 30, 6, 6, 0)
	support := []int{1, 3, 4}
	k := len(support)
	gs := make([]float64, k*k)
	cs := make([]float64, k)
	for i, si := range support {
		cs[i] = pr.c[si]
		for j, sj := range support {
			gs[i*k+j] = pr.g[si*pr.p+sj]
		}
	}
	x, err := NNLS(gs, cs, 0)
	if err != nil {
		t.Fatal(err)
	}
	if v := KKTViolation(gs, cs, 0, x); v > 1e-10*maxAbs(cs) {
		t.Errorf("KKT violation %g on the support, x = %v", v, x)
	}
}

func TestStopReasonString(t *testing.T) {
	for r, want := range map[StopReason]string{
		StopLambdaMin: "lambda-min", StopMaxActive: "max-active",
		StopNoCorrelation: "no-correlation", StopMaxIter: "max-iter", 0: "StopReason(0)",
	} {
		if got := r.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(r), got, want)
		}
	}
}

func ExampleLARSPositive() {
	// Three candidates; the third is anti-correlated with the target and
	// never enters under the positivity constraint.
	g := []float64{
		1.0, 0.5, 0.2,
		0.5, 1.0, 0.3,
		0.2, 0.3, 1.0,
	}
	c := []float64{0.9, 0.6, -0.1}
	path, err := LARSPositive(g, c, 0.1, 3, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("coef    %.4f\n", path.Coef)
	fmt.Printf("active  %v\n", path.Active)
	fmt.Printf("lambdas %.4f\n", path.Lambdas)
	fmt.Printf("stop    %v after %d steps\n", path.Stop, path.Steps)
	fmt.Printf("optimal at λ = %.4f: %v\n", path.Lambda, KKTViolation(g, c, path.Lambda, path.Coef) < 1e-12)
	// Output:
	// coef    [0.7333 0.1333 0.0000]
	// active  [0 1]
	// lambdas [0.9000 0.3000 0.1000]
	// stop    lambda-min after 2 steps
	// optimal at λ = 0.1000: true
}

// TestLARSPositiveDropPath checks paths in which coefficients leave the
// active set (the Lasso modification): at λ between every pair of
// breakpoints, and at each breakpoint, the interpolated solution is the
// exhaustive optimum.
func TestLARSPositiveDropPath(t *testing.T) {
	withDrops := 0
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 2024))
		pr := newLassoProblem(rng, 10, 8, 4, 1)
		full, err := LARSPositive(pr.g, pr.c, 0, pr.p, 0)
		if err != nil {
			t.Fatal(err)
		}
		if full.Steps == len(full.Active) {
			continue // no variable left the active set
		}
		withDrops++
		for i := 1; i < len(full.Lambdas); i++ {
			hi, lo := full.Lambdas[i-1], full.Lambdas[i]
			for _, lam := range []float64{lo, 0.5 * (hi + lo)} {
				path, err := LARSPositive(pr.g, pr.c, lam, pr.p, 0)
				if err != nil {
					t.Fatal(err)
				}
				checkPath(t, pr.g, pr.c, pr.p, path, 1e-8)
				got := Objective(pr.g, pr.c, pr.yy, path.Lambda, path.Coef)
				want := bestSupportObjective(t, pr, path.Lambda)
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("seed %d, λ = %g: LARS objective %.15g, exhaustive %.15g", seed, lam, got, want)
				}
			}
		}
	}
	if withDrops == 0 {
		t.Fatal("no generated path had a drop; the test exercises nothing")
	}
	t.Logf("%d paths with drops", withDrops)
}

// A candidate whose column duplicates another's (two sensors whose
// embeddings are equal on every snapshot, such as two that never read)
// does not end the path at the budget: it ties with the active level, and
// rounding could let it in with a step of zero, which used to stop the
// path with the duplicate at weight zero, the budget one short (with a
// budget of 1, an empty set). The path is the one without the duplicate.
func TestLARSPositiveDuplicateAtBudget(t *testing.T) {
	x1 := []float64{1, 2, 0, -1, 3}
	x2 := []float64{0, 1, 1, 2, -1}
	y := []float64{2, 3, 1, 0, 4}
	dup := withColumns([][]float64{x1, x1, x2}, y)
	one := withColumns([][]float64{x1, x2}, y)
	a, err := LARSPositive(dup.g, dup.c, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LARSPositive(one.g, one.c, 0, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if nonzeros(a.Coef) != 1 || math.Abs(a.Lambda-b.Lambda) > 1e-12*maxAbs(one.c) || math.Abs(a.Coef[0]+a.Coef[1]-b.Coef[0]) > 1e-12 {
		t.Errorf("budget 1 with x1 twice: coef %v, λ %g, stop %v; without the twin coef %v, λ %g", a.Coef, a.Lambda, a.Stop, b.Coef, b.Lambda)
	}

	short, moved, trials := 0, 0, 0
	for seed := uint64(0); seed < 400; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		const n, p = 30, 4
		cols := make([][]float64, p)
		for j := range cols {
			cols[j] = make([]float64, n)
			for i := range cols[j] {
				cols[j][i] = rng.NormFloat64()
			}
		}
		y := make([]float64, n)
		for i := range y {
			y[i] = 2*cols[0][i] + cols[1][i] + 0.5*cols[2][i] + 0.1*rng.NormFloat64()
		}
		without := withColumns(cols, y)
		with := withColumns(append(cols, cols[rng.IntN(3)]), y)
		for _, budget := range []int{1, 2, 3} {
			trials++
			a, err := LARSPositive(with.g, with.c, 0, budget, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := LARSPositive(without.g, without.c, 0, budget, 0)
			if err != nil {
				t.Fatal(err)
			}
			if a.Stop == StopMaxActive && nonzeros(a.Coef) < budget {
				short++
			}
			if math.Abs(a.Lambda-b.Lambda) > 1e-9*maxAbs(without.c) {
				moved++
			}
			checkPath(t, with.g, with.c, budget, a, 1e-9)
		}
	}
	if short > 0 || moved > 0 {
		t.Errorf("of %d paths with a duplicated column, %d stopped at the budget with fewer nonzeros, %d ended at another λ than without it", trials, short, moved)
	}
}
