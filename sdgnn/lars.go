package sdgnn

import (
	"errors"
	"fmt"
	"math"

	"github.com/pemsforecast/sdgnn/internal/portable"
)

// This file holds the per-node solver of phase Θ: the non-negative Lasso
//
//	minimise ½‖y − Xθ‖² + λ‖θ‖₁  subject to θ ≥ 0,
//
// solved by the positive LARS-Lasso homotopy (Efron, Hastie, Johnstone and
// Tibshirani, "Least angle regression", Ann. Statist. 2004, §3 and the
// positive Lasso of §5), working only from the Gram matrix G = XᵀX and the
// correlations c = Xᵀy. It follows scikit-learn's
// lars_path(Gram=G, Xy=c, positive=True, method="lasso") with λ on the raw
// (undivided by n) scale, plus a budget on the number of active variables.
//
// The Cholesky factor of G_AA (A the active set) is updated incrementally: a
// new row is appended by forward substitution when a variable enters and a
// row is removed with Givens rotations when one leaves, so one LARS step costs
// O(|A|² + p·|A|) flops and nothing is re-factorised (except in a ridge
// fallback that only overflow can trigger).

// Numerical thresholds of the solvers.
const (
	// collinearTol: a variable whose squared distance to the span of the
	// active columns is below collinearTol·G_jj (sin² of the angle to that
	// span) is skipped as degenerate, like scikit-learn's "Regressors in
	// active set degenerate" case.
	collinearTol = 1e-10

	// zeroColumnTol: a column with G_jj ≤ zeroColumnTol·max_k G_kk is treated
	// as the zero column and never enters.
	zeroColumnTol = 0x1p-52

	// symmetryTol is the relative asymmetry allowed in G.
	symmetryTol = 1e-9
)

// ErrNotConverged is returned (wrapped) by NNLS when it reaches its iteration
// cap before the optimality conditions hold; the returned solution is then
// feasible (θ ≥ 0) but not necessarily optimal.
var ErrNotConverged = errors.New("not converged")

// StopReason says why LARSPositive ended its path.
type StopReason int

const (
	// StopLambdaMin: λ reached lambdaMin; θ was interpolated to λ = lambdaMin
	// (or λ was already ≤ lambdaMin at the start, with θ = 0).
	StopLambdaMin StopReason = iota + 1
	// StopMaxActive: maxActive variables were active after a step and the next
	// breakpoint would add another one.
	StopMaxActive
	// StopNoCorrelation: no candidate has a positive correlation, so θ = 0 is
	// optimal for every λ ≥ 0.
	StopNoCorrelation
	// StopMaxIter: the iteration cap was reached; θ is still the exact
	// solution at the last breakpoint λ.
	StopMaxIter
)

// String returns the name of the stop reason, for logging.
func (r StopReason) String() string {
	switch r {
	case StopLambdaMin:
		return "lambda-min"
	case StopMaxActive:
		return "max-active"
	case StopNoCorrelation:
		return "no-correlation"
	case StopMaxIter:
		return "max-iter"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// LassoPath is the result of LARSPositive: the non-negative Lasso solution at
// the end of the homotopy and the breakpoints visited on the way.
type LassoPath struct {
	// Coef is the final θ, length p, all ≥ 0, with at most maxActive
	// nonzeros. It solves the non-negative Lasso for λ = Lambda.
	Coef []float64
	// Active lists the indices with θ > 0 in their order of (last) entry.
	Active []int
	// Lambdas holds λ at each breakpoint, non-increasing, starting with
	// max_j c_j (or 0 if no c_j is positive); Lambdas[i] is λ after i steps,
	// so len(Lambdas) == Steps+1.
	Lambdas []float64
	// Lambda is the λ at which Coef is optimal: Lambdas[len(Lambdas)-1].
	Lambda float64
	// Steps is the number of LARS iterations (homotopy steps) taken.
	Steps int
	// Stop says why the path ended.
	Stop StopReason
}

// Variable states inside LARSPositive.
const (
	varFree      int8 = iota // inactive, may enter
	varActive                // in the active set
	varCollinear             // skipped: (numerically) in the span of the active set; retried after a drop
	varZero                  // zero column: never enters
)

// LARSPositive runs the positive LARS-Lasso path on the Gram matrix g (p×p,
// row-major, symmetric positive semidefinite) and the correlations c (length
// p), from λ = max_j c_j down, and returns the solution where it stops:
//
//   - after the step that makes the number of active variables reach
//     maxActive, at the next breakpoint at which a variable would enter (a
//     step that ends by dropping a variable brings the count back below
//     maxActive and the path goes on);
//   - when λ reaches lambdaMin, in which case θ is interpolated exactly to
//     λ = lambdaMin, as scikit-learn does with alpha_min;
//   - when no positive correlation remains; or
//   - after maxIter steps (maxIter ≤ 0 means 8·p).
//
// In every case Coef solves the non-negative Lasso at λ = Lambda, that is
// KKTViolation(g, c, path.Lambda, path.Coef) is zero up to rounding, except
// for candidates skipped as degenerate (see below).
//
// Following the positive variant, only the variable with the largest signed
// correlation enters, the equiangular direction uses the all-ones sign
// vector, the step length only considers inactive correlations catching up
// with the active level from below, and a coefficient that would cross zero
// ends the step and leaves the active set (the Lasso modification).
//
// Degenerate inputs give finite answers: zero columns never enter, and a
// candidate whose column is numerically in the span of the active columns
// (duplicated or collinear candidates, rank-deficient g) is skipped instead of
// being added; it is reconsidered after a variable leaves the active set.
//
// An error is returned for malformed input: len(g) != p*p, NaN or Inf in g or
// c, g not symmetric or with a negative diagonal, lambdaMin negative or not
// finite, maxActive < 1.
func LARSPositive(g, c []float64, lambdaMin float64, maxActive, maxIter int) (LassoPath, error) {
	p := len(c)
	if err := checkGram(g, c); err != nil {
		return LassoPath{}, fmt.Errorf("sdgnn: LARSPositive: %w", err)
	}
	if math.IsNaN(lambdaMin) || math.IsInf(lambdaMin, 0) || lambdaMin < 0 {
		return LassoPath{}, fmt.Errorf("sdgnn: LARSPositive: lambdaMin = %v, want finite and ≥ 0", lambdaMin)
	}
	if maxActive < 1 {
		return LassoPath{}, fmt.Errorf("sdgnn: LARSPositive: maxActive = %d, want ≥ 1", maxActive)
	}
	if maxIter <= 0 {
		maxIter = 8 * p
	}
	m := min(maxActive, p)

	coef := make([]float64, p)
	path := LassoPath{
		Coef:    coef,
		Lambdas: make([]float64, 0, min(maxIter, 2*m+4)+1),
	}
	if p == 0 {
		path.Lambdas = append(path.Lambdas, 0)
		path.Stop = StopNoCorrelation
		return path, nil
	}

	// One allocation for the float workspace, one for the integer one.
	fw := make([]float64, m*m+3*m+2*p)
	chol := cholFactor{l: fw[:m*m], stride: m}
	w := fw[m*m : m*m+m]                // equiangular direction on the active set
	z := fw[m*m+m : m*m+2*m]            // scratch for the triangular solves
	a := fw[m*m+2*m : m*m+2*m+p]        // a_j = (G_{:,A} w)_j
	corr := fw[m*m+2*m+p : m*m+2*m+2*p] // current correlations c − Gθ
	probe := fw[m*m+2*m+2*p:]           // L⁻¹G_{A,j} of a candidate at the budget
	active := make([]int, 0, m)         // active set in order of entry = Cholesky order
	state := make([]int8, p)            // varFree, varActive, …
	scratch := make([]float64, m)       // G_{A,j} for the Cholesky extension

	maxDiag := 0.0
	for j := 0; j < p; j++ {
		maxDiag = math.Max(maxDiag, g[j*p+j])
	}
	for j := 0; j < p; j++ {
		if d := g[j*p+j]; d <= 0 || d <= zeroColumnTol*maxDiag {
			state[j] = varZero
		}
	}
	copy(corr, c)

	// λ (written C, the common correlation of the active set) starts at the
	// largest correlation.
	enter, level := argmaxFree(corr, state)
	if enter < 0 || level <= 0 {
		path.Lambdas = append(path.Lambdas, 0)
		path.Lambda = 0
		path.Stop = StopNoCorrelation
		return path, nil
	}
	path.Lambdas = append(path.Lambdas, level)
	if level <= lambdaMin {
		path.Lambda = level
		path.Stop = StopLambdaMin
		return path, nil
	}

	const (
		eventEnter = iota
		eventDrop
		eventLambda
	)
	steps := 0
	for {
		justEntered := -1
		if enter >= 0 && len(active) >= maxActive {
			// The budget is spent: the path ends here, unless the
			// candidate is collinear with the active set (a duplicated
			// column: its correlation ties with theirs, and rounding
			// let it in with a step of zero), which is passed over as
			// below the budget, so that it does not end the path with a
			// variable that has just entered at zero.
			for i, j := range active {
				scratch[i] = g[j*p+enter]
			}
			if _, ok := chol.residual(len(active), scratch[:len(active)], g[enter*p+enter], probe); ok {
				path.Stop = StopMaxActive
				break
			}
			state[enter] = varCollinear
			enter = -1
		}
		if enter >= 0 {
			if steps >= maxIter {
				path.Stop = StopMaxIter
				break
			}
			k := len(active)
			for i, j := range active {
				scratch[i] = g[j*p+enter]
			}
			if chol.extend(k, scratch[:k], g[enter*p+enter]) {
				active = append(active, enter)
				state[enter] = varActive
				justEntered = enter
			} else {
				state[enter] = varCollinear
			}
			enter = -1
			if len(active) == 0 {
				// Only reachable for inconsistent input; restart from the
				// best remaining candidate.
				enter, level = argmaxFree(corr, state)
				if enter < 0 || level <= lambdaMin {
					path.Stop = StopNoCorrelation
					break
				}
				continue
			}
		}
		if steps >= maxIter {
			path.Stop = StopMaxIter
			break
		}
		k := len(active)

		// Equiangular direction: w = A·G_AA⁻¹1 with A = (1ᵀG_AA⁻¹1)^{-1/2}.
		aa, ok := chol.direction(k, w[:k], z[:k])
		if !ok {
			// Only reachable through overflow: re-factorise G_AA with a
			// growing ridge until the direction is finite.
			ridge := 0.0
			for i := range active {
				ridge += g[active[i]*p+active[i]]
			}
			ridge *= 1e-12 / float64(k)
			for try := 0; try < 40 && !ok; try++ {
				if chol.factor(g, p, active, ridge) {
					aa, ok = chol.direction(k, w[:k], z[:k])
				}
				ridge *= 10
			}
			if !ok {
				return LassoPath{}, fmt.Errorf("sdgnn: LARSPositive: equiangular direction not finite with %d active variables at λ = %g", k, level)
			}
		}

		// a = G_{:,A} w, using the symmetry of g to read rows.
		clear(a)
		for i, j := range active {
			portable.Axpy(w[i], g[j*p:j*p+p], a)
		}

		// Step length: λ reaches lambdaMin, an inactive correlation catches
		// up with the active level (positive variant: only the (C − c_j) /
		// (A − a_j) branch), or an active coefficient hits zero.
		gamma := (level - lambdaMin) / aa
		event := eventLambda
		next := -1
		for j := 0; j < p; j++ {
			if state[j] != varFree {
				continue
			}
			d := aa - a[j]
			if !(d > 0) {
				continue
			}
			num := math.Max(level-corr[j], 0)
			if gj := num / d; gj < gamma {
				gamma, event, next = gj, eventEnter, j
			}
		}
		dropPos := -1
		for i, j := range active {
			if !(w[i] < 0) || j == justEntered {
				continue
			}
			zi := math.Max(coef[j], 0) / -w[i]
			if zi <= gamma {
				gamma, event, dropPos = zi, eventDrop, i
			}
		}

		for i, j := range active {
			coef[j] += float64(gamma * w[i])
		}
		steps++
		if event == eventLambda {
			level = lambdaMin
		} else {
			level = math.Max(level-float64(gamma*aa), lambdaMin)
		}
		if event == eventEnter {
			enter = next
		}
		if event == eventDrop {
			j := active[dropPos]
			coef[j] = 0
			copy(active[dropPos:], active[dropPos+1:])
			active = active[:len(active)-1]
			chol.remove(k, dropPos)
			state[j] = varFree
			for t := range state {
				if state[t] == varCollinear {
					state[t] = varFree
				}
			}
		}
		path.Lambdas = append(path.Lambdas, level)

		// Fresh correlations c − Gθ, so rounding does not accumulate.
		copy(corr, c)
		for _, j := range active {
			portable.Axpy(-coef[j], g[j*p:j*p+p], corr)
		}
		if level <= lambdaMin {
			path.Stop = StopLambdaMin
			break
		}
	}

	for j := range coef {
		if !(coef[j] > 0) {
			coef[j] = 0
		}
	}
	path.Active = make([]int, 0, len(active))
	for _, j := range active {
		if coef[j] > 0 {
			path.Active = append(path.Active, j)
		}
	}
	path.Steps = steps
	path.Lambda = path.Lambdas[len(path.Lambdas)-1]
	return path, nil
}

// argmaxFree returns the free variable with the largest correlation, or -1.
func argmaxFree(corr []float64, state []int8) (int, float64) {
	best, bestV := -1, math.Inf(-1)
	for j, v := range corr {
		if state[j] == varFree && v > bestV {
			best, bestV = j, v
		}
	}
	return best, bestV
}

// cholFactor is a lower-triangular Cholesky factor L of G_AA stored row-major
// with a fixed stride, grown and shrunk one variable at a time.
type cholFactor struct {
	l      []float64
	stride int
}

// extend appends row k to the k×k factor for a variable with Gram column
// gA = G_{A,j} against the current set and diagonal gjj. It reports false,
// leaving the factor unchanged, when the variable is numerically in the span
// of the current columns.
func (f *cholFactor) extend(k int, gA []float64, gjj float64) bool {
	s := f.stride
	row := f.l[k*s : k*s+k+1]
	d2, ok := f.residual(k, gA, gjj, row[:k])
	if !ok {
		return false
	}
	row[k] = math.Sqrt(d2)
	return true
}

// residual solves L·row = gA for the first k rows of the factor and
// returns d2 = gjj − ‖row‖², the squared residual of the candidate's
// column against the active ones, and whether it is independent of them
// (d2 > collinearTol·gjj), without changing the factor.
func (f *cholFactor) residual(k int, gA []float64, gjj float64, row []float64) (float64, bool) {
	s := f.stride
	sq := 0.0
	for i := 0; i < k; i++ {
		v := gA[i]
		ri := f.l[i*s : i*s+i]
		for t, lt := range ri {
			v -= float64(row[t] * lt)
		}
		v /= f.l[i*s+i]
		row[i] = v
		sq += float64(v * v)
	}
	d2 := gjj - sq
	return d2, d2 > collinearTol*gjj
}

// remove deletes variable r from the k×k factor, restoring the triangular
// shape with Givens rotations on adjacent columns (LLᵀ is unchanged by
// orthogonal column operations).
func (f *cholFactor) remove(k, r int) {
	s := f.stride
	for i := r; i < k-1; i++ {
		copy(f.l[i*s:i*s+i+2], f.l[(i+1)*s:(i+1)*s+i+2])
	}
	for i := r; i < k-1; i++ {
		x, y := f.l[i*s+i], f.l[i*s+i+1]
		h := portable.Hypot(x, y)
		if h == 0 {
			continue
		}
		cs, sn := x/h, y/h
		for t := i; t < k-1; t++ {
			u, v := f.l[t*s+i], f.l[t*s+i+1]
			f.l[t*s+i] = float64(cs*u) + float64(sn*v)
			f.l[t*s+i+1] = float64(-sn*u) + float64(cs*v)
		}
		f.l[i*s+i] = h
		f.l[i*s+i+1] = 0
	}
}

// factor re-factorises G_{idx,idx} + ridge·I from scratch. It reports false
// if a pivot is not positive.
func (f *cholFactor) factor(g []float64, p int, idx []int, ridge float64) bool {
	s := f.stride
	for r, jr := range idx {
		for i := 0; i <= r; i++ {
			v := g[jr*p+idx[i]]
			if i == r {
				v += ridge
			}
			for t := 0; t < i; t++ {
				v -= float64(f.l[r*s+t] * f.l[i*s+t])
			}
			if i < r {
				f.l[r*s+i] = v / f.l[i*s+i]
				continue
			}
			if !(v > 0) {
				return false
			}
			f.l[r*s+r] = math.Sqrt(v)
		}
	}
	return true
}

// solve overwrites b with (LLᵀ)⁻¹b for the k×k factor.
func (f *cholFactor) solve(k int, b []float64) {
	f.forward(k, b)
	f.backward(k, b)
}

// forward overwrites b with L⁻¹b.
func (f *cholFactor) forward(k int, b []float64) {
	s := f.stride
	for i := 0; i < k; i++ {
		v := b[i]
		for t, lt := range f.l[i*s : i*s+i] {
			v -= float64(lt * b[t])
		}
		b[i] = v / f.l[i*s+i]
	}
}

// backward overwrites b with L⁻ᵀb.
func (f *cholFactor) backward(k int, b []float64) {
	s := f.stride
	for i := k - 1; i >= 0; i-- {
		v := b[i] / f.l[i*s+i]
		b[i] = v
		for t := 0; t < i; t++ {
			b[t] -= float64(f.l[i*s+t] * v)
		}
	}
}

// direction computes the equiangular direction w = A·G_AA⁻¹1 with
// A = (1ᵀG_AA⁻¹1)^{-1/2}, using z as scratch, and returns A. It reports
// false if the result is not finite.
func (f *cholFactor) direction(k int, w, z []float64) (float64, bool) {
	for i := range z[:k] {
		z[i] = 1
	}
	f.forward(k, z)
	s := 0.0
	for _, v := range z[:k] {
		s += float64(v * v)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return 0, false
	}
	copy(w[:k], z[:k])
	f.backward(k, w)
	aa := 1 / math.Sqrt(s)
	for i := range w[:k] {
		w[i] *= aa
		if math.IsNaN(w[i]) || math.IsInf(w[i], 0) {
			return 0, false
		}
	}
	return aa, true
}

// checkGram validates a Gram matrix g and correlation vector c: sizes,
// finiteness, a non-negative diagonal and symmetry to a relative symmetryTol.
// Exactly symmetric input, the usual case, costs one comparison per entry.
func checkGram(g, c []float64) error {
	p := len(c)
	if len(g) != p*p {
		return fmt.Errorf("len(g) = %d, want p·p = %d for p = len(c) = %d", len(g), p*p, p)
	}
	for j, v := range c {
		if v-v != 0 { // NaN or ±Inf
			return fmt.Errorf("c[%d] = %v, want finite", j, v)
		}
	}
	for i := 0; i < p; i++ {
		row := g[i*p : i*p+p]
		for j, v := range row {
			if v-v != 0 {
				return fmt.Errorf("g[%d,%d] = %v, want finite", i, j, v)
			}
		}
		if row[i] < 0 {
			return fmt.Errorf("g[%d,%d] = %v: negative diagonal, g is not a Gram matrix", i, i, row[i])
		}
		for j, u := range row[:i] {
			v := g[j*p+i]
			if u == v {
				continue
			}
			scale := max(math.Abs(u), math.Abs(v), math.Sqrt(math.Abs(row[i]*g[j*p+j])))
			if math.Abs(u-v) > symmetryTol*scale {
				return fmt.Errorf("g[%d,%d] = %v but g[%d,%d] = %v: g is not symmetric", i, j, u, j, i, v)
			}
		}
	}
	return nil
}

// Objective returns the non-negative Lasso objective written with G = XᵀX,
// c = Xᵀy and yy = yᵀy:
//
//	½θᵀGθ − cᵀθ + ½yy + λΣθ  (= ½‖y − Xθ‖² + λ‖θ‖₁ for θ ≥ 0),
//
// so that solutions can be compared and residuals logged without X. It
// returns NaN if the lengths do not match (len(g) != p², len(theta) != p).
func Objective(g, c []float64, yy, lambda float64, theta []float64) float64 {
	p := len(c)
	if len(g) != p*p || len(theta) != p {
		return math.NaN()
	}
	quad, lin, l1 := 0.0, 0.0, 0.0
	for i, ti := range theta {
		if ti == 0 {
			continue
		}
		row := g[i*p : i*p+p]
		s := 0.0
		for j, tj := range theta {
			s += float64(row[j] * tj)
		}
		quad += float64(ti * s)
		lin += float64(c[i] * ti)
		l1 += ti
	}
	return float64(0.5*quad) - lin + float64(0.5*yy) + float64(lambda*l1)
}

// KKTViolation returns the largest violation of the optimality conditions of
// the non-negative Lasso at θ for λ, with r = c − Gθ the correlations of the
// residual: |r_j − λ| for θ_j > 0 and max(0, r_j − λ) for θ_j = 0. It is zero
// exactly at the solution; compare it with max|c| for a relative measure.
// It returns +Inf if some θ_j is negative (infeasible) and NaN if the lengths
// do not match.
func KKTViolation(g, c []float64, lambda float64, theta []float64) float64 {
	p := len(c)
	if len(g) != p*p || len(theta) != p {
		return math.NaN()
	}
	worst := 0.0
	for j := 0; j < p; j++ {
		if theta[j] < 0 {
			return math.Inf(1)
		}
		row := g[j*p : j*p+p]
		r := c[j]
		for k, tk := range theta {
			r -= float64(row[k] * tk)
		}
		r -= lambda
		var v float64
		if theta[j] > 0 {
			v = math.Abs(r)
		} else {
			v = math.Max(0, r)
		}
		if !(v <= worst) { // also propagates NaN
			worst = v
		}
	}
	return worst
}

// NNLS solves the non-negative least-squares problem min ‖y − Xθ‖², θ ≥ 0,
// from G = XᵀX (p×p, row-major, symmetric) and c = Xᵀy, by the Lawson–Hanson
// active-set method. It serves as a reference for LARSPositive (which reaches
// the NNLS solution at λ = 0) and for refitting weights on a fixed support
// (pass the sub-Gram matrix of that support).
//
// maxIter caps the number of variables moved into the passive set (≤ 0: 3·p
// + 10); when it is reached the feasible iterate is returned with an error
// wrapping ErrNotConverged. Zero columns and columns numerically in the span
// of the passive set are skipped, so rank-deficient G gives a finite answer
// (one of the minimisers). Malformed input (see LARSPositive) is an error.
func NNLS(g, c []float64, maxIter int) ([]float64, error) {
	p := len(c)
	if err := checkGram(g, c); err != nil {
		return nil, fmt.Errorf("sdgnn: NNLS: %w", err)
	}
	if maxIter <= 0 {
		maxIter = 3*p + 10
	}
	x := make([]float64, p)
	if p == 0 {
		return x, nil
	}
	s := make([]float64, p)
	grad := make([]float64, p)
	state := make([]int8, p) // varFree, varActive (passive set), varCollinear, varZero
	idx := make([]int, 0, p)
	chol := cholFactor{l: make([]float64, p*p), stride: p}
	b := make([]float64, p)

	maxDiag, maxC := 0.0, 0.0
	for j := 0; j < p; j++ {
		maxDiag = math.Max(maxDiag, g[j*p+j])
		maxC = math.Max(maxC, math.Abs(c[j]))
	}
	for j := 0; j < p; j++ {
		if d := g[j*p+j]; d <= 0 || d <= zeroColumnTol*maxDiag {
			state[j] = varZero
		}
	}
	tol := 1e-12 * maxC

	// solveOn sets s to the unconstrained least-squares solution on the
	// passive set (zero elsewhere); it reports false if G_PP is singular.
	solveOn := func() bool {
		idx = idx[:0]
		for j := range state {
			if state[j] == varActive {
				idx = append(idx, j)
			}
		}
		if !chol.factor(g, p, idx, 0) {
			return false
		}
		k := len(idx)
		for i, j := range idx {
			b[i] = c[j]
		}
		chol.solve(k, b[:k])
		clear(s)
		for i, j := range idx {
			s[j] = b[i]
		}
		return true
	}

	for iter := 0; ; {
		copy(grad, c)
		for j, v := range x {
			if v != 0 {
				portable.Axpy(-v, g[j*p:j*p+p], grad)
			}
		}
		t, best := -1, tol
		for j, v := range grad {
			if state[j] == varFree && v > best {
				t, best = j, v
			}
		}
		if t < 0 {
			break
		}
		// Reject a column in the span of the passive set.
		k := 0
		for j := range state {
			if state[j] == varActive {
				b[k] = g[j*p+t]
				k++
			}
		}
		idx = idx[:0]
		for j := range state {
			if state[j] == varActive {
				idx = append(idx, j)
			}
		}
		if !chol.factor(g, p, idx, 0) || !chol.extend(k, b[:k], g[t*p+t]) {
			state[t] = varCollinear
			continue
		}
		state[t] = varActive
		if iter >= maxIter {
			return x, fmt.Errorf("sdgnn: NNLS: %d iterations: %w", maxIter, ErrNotConverged)
		}
		iter++

		added := true
		for first := true; ; first = false {
			if !solveOn() {
				// Rounding made G_PP singular: leave t out.
				state[t] = varCollinear
				x[t], added = 0, false
				break
			}
			if first && !(s[t] > 0) {
				// The entering variable would go negative at once (only
				// through rounding): skip it.
				state[t] = varCollinear
				x[t], added = 0, false
				break
			}
			alpha, hit := 1.0, -1
			for j := range state {
				if state[j] != varActive || s[j] > 0 {
					continue
				}
				if r := x[j] / (x[j] - s[j]); hit < 0 || r < alpha {
					alpha, hit = r, j
				}
			}
			if hit < 0 {
				copy(x, s)
				break
			}
			// Move towards s until the first passive coefficient hits zero
			// and return it (and any other non-positive one) to the free set.
			for j := range state {
				if state[j] != varActive {
					continue
				}
				x[j] += float64(alpha * (s[j] - x[j]))
				if j == hit || !(x[j] > 0) {
					x[j] = 0
					state[j] = varFree
				}
			}
		}
		if added {
			// Progress was made: give skipped columns another chance.
			for j := range state {
				if state[j] == varCollinear {
					state[j] = varFree
				}
			}
		}
	}
	for j := range x {
		if !(x[j] > 0) {
			x[j] = 0
		}
	}
	return x, nil
}
