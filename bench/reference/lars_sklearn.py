#!/usr/bin/env python3
"""Runs scikit-learn's positive LARS-Lasso on the Phase-Theta problems that
bench/phasetheta exported (same Gram blocks, same correlations), times it
for all nodes on one core, and compares the solutions with Go's.

Each node is solved with lars_path_gram(positive=True, method='lasso'),
n_samples=1 (the Gram and correlations are already averaged over the
snapshots, so sklearn's alphas are our lambdas), alpha_min = lambda_min and
max_iter = the number of steps Go's path took, so that both stop at the same
point. Both solutions are also checked against the optimality (KKT)
conditions at the lambda where Go's path ended: where the path ends at
alpha_min with no variable left to enter, scikit-learn's positive mode takes
alpha from the largest inactive correlation and its interpolation then misses
the solution at alpha_min, so the comparison that matters is on the nodes
where both are optimal.

usage: lars_sklearn.py theta.npz [reps]
prints one line of JSON.
"""
import json
import os
import sys
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from sklearn.linear_model import lars_path_gram


def kkt(g, c, theta, lam):
    """Violation of the non-negative Lasso's optimality conditions at lam:
    the gradient c - g theta must equal lam where theta > 0 and be at most
    lam elsewhere."""
    r = c - g @ theta
    act = theta > 0
    v = np.abs(r[act] - lam).max() if act.any() else 0.0
    if (~act).any():
        v = max(v, max(0.0, (r[~act] - lam).max()))
    return float(v)


def main():
    path = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    f = np.load(path)
    sizes = f["sizes"].astype(int)
    steps = f["steps"].astype(int)
    gram, corr, theta_go = f["gram"], f["corr"], f["theta"]
    lam = float(f["lambda_min"][0])
    problems = []
    go_off = c_off = 0
    for p, k in zip(sizes, steps):
        g = np.ascontiguousarray(gram[go_off:go_off + p * p].reshape(p, p))
        c = np.ascontiguousarray(corr[c_off:c_off + p])
        problems.append((g, c, int(k), theta_go[c_off:c_off + p]))
        go_off += p * p
        c_off += p

    def solve_all():
        out = []
        for g, c, k, _ in problems:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, _, coef = lars_path_gram(c, g, n_samples=1, max_iter=k, alpha_min=lam,
                                            method="lasso", positive=True, return_path=False)
            out.append(np.ravel(coef))
        return out

    best = float("inf")
    sols = None
    for _ in range(reps):
        t0 = time.perf_counter()
        sols = solve_all()
        best = min(best, time.perf_counter() - t0)
    lam_end = f["lambda_end"]
    diffs, kkt_go, kkt_sk = [], [], []
    for s, (g, c, _, tg), le in zip(sols, problems, lam_end):
        diffs.append(float(np.max(np.abs(s - tg))) if len(s) else 0.0)
        kkt_go.append(kkt(g, c, tg, le))
        kkt_sk.append(kkt(g, c, s, le))
    diffs, kkt_go, kkt_sk = np.array(diffs), np.array(kkt_go), np.array(kkt_sk)
    both = (kkt_go <= 1e-9) & (kkt_sk <= 1e-9)
    support = sum(int(np.array_equal(s > 0, tg > 0)) for s, (_, _, _, tg) in zip(sols, problems))
    print(json.dumps({
        "nodes": len(problems),
        "sklearn_seconds": best,
        "go_seconds": float(f["go_seconds"][0]),
        "max_abs_diff": float(diffs.max()),
        "max_abs_diff_where_both_optimal": float(diffs[both].max()) if both.any() else None,
        "nodes_both_optimal": int(both.sum()),
        "max_kkt_go": float(kkt_go.max()),
        "max_kkt_sklearn": float(kkt_sk.max()),
        "same_support": support,
        "sklearn": __import__("sklearn").__version__,
    }))


if __name__ == "__main__":
    main()
