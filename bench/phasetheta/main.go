// Command phasetheta times Phase Θ's solver (positive LARS-Lasso for every
// node) on real inputs and writes the same inputs, the solutions and the
// time to an .npz file, so that bench/reference/lars_sklearn.py can run
// scikit-learn's lars_path on exactly the same problems and compare.
//
// The problems are those of a distillation round on SZ-taxi: the teacher's
// GRU embeddings H and GCN outputs Z over the training snapshots, φ an MLP,
// candidates = 2-hop neighbourhood plus one sampled hop. With -teacher the
// trained teacher is used, on its own dataset, preprocessing and split;
// without, a freshly initialised one (SZ-taxi, or -dataset, standard
// preprocessing, split 6,2,2 by time, weights untrained).
//
//	go run ./bench/phasetheta -out /tmp/theta.npz [-teacher runs/sz-taxi-gru-gcn.model] [-snapshots 500]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"time"

	"github.com/sbinet/npyio/npz"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "phasetheta:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("phasetheta", flag.ContinueOnError)
	var (
		data      = fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		dataset   = fs.String("dataset", "sz-taxi", "dataset")
		tpath     = fs.String("teacher", "", "trained GRU-GCN model (default: a freshly initialised one)")
		snapshots = fs.Int("snapshots", 0, "training snapshots used (0: all)")
		budget    = fs.Int("budget", 6, "receptive-field budget (LARS stops at this many active nodes)")
		lambda    = fs.Float64("lambda", 1e-4, "λ1, the path's end")
		reps      = fs.Int("reps", 5, "timed repetitions (the best is kept)")
		out       = fs.String("out", "theta.npz", "output .npz")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Checked before the data are read: -reps 0 left every path unsolved
	// and wrote an empty θ with a time of 2⁶² ns.
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	case *reps < 1:
		return fmt.Errorf("-reps %d: at least one timed repetition", *reps)
	case *snapshots < 0:
		return fmt.Errorf("-snapshots %d: want 0 (all) or more", *snapshots)
	}
	var (
		m    *teacher.Model
		prep *snapshot.Prepared
		err  error
	)
	if *tpath != "" {
		// The teacher's own data: its dataset, preprocessing and split.
		saved, err := teacher.LoadModel(*tpath)
		if err != nil {
			return err
		}
		sm := saved.Meta
		if prep, err = snapshot.PrepareSaved(*data, sm.Dataset, sm.Config.Window, sm.Split, &sm.Norm, sm.Graph); err != nil {
			return fmt.Errorf("teacher %s: %w", *tpath, err)
		}
		m = saved.Model
	} else {
		const window = 12
		if prep, err = snapshot.Prepare(*data, *dataset, window, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, nil); err != nil {
			return err
		}
		if m, err = teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: window, Channels: prep.Set.Channels, Hidden: 16, Seed: 1}); err != nil {
			return err
		}
	}
	train := prep.Split.Train
	if *snapshots > 0 && train.Len() > *snapshots {
		if train.Deal.Every > 0 {
			return fmt.Errorf("-snapshots cuts a range of snapshots; the teacher's training part is dealt (%s split)", snapshot.ByWindows)
		}
		train.Range = snapshot.Range{Start: train.Start, End: train.Start + *snapshots}
	}
	tg, err := sdgnn.ComputeTargets(context.Background(), m, prep.Set, train, prep.Adj)
	if err != nil {
		return err
	}
	n := prep.Set.Nodes
	_, d := tg.H.Dims()
	student := sdgnn.NewStudent(n, d, 16, rand.New(rand.NewPCG(1, 2)))
	phi := student.PhiAll(tg.H)
	cands, err := sdgnn.Candidates(prep.Dataset.Graph.Neighbors(), sdgnn.CandidateConfig{K1: 2, K2: 1, Sample: 5, Seed: 1})
	if err != nil {
		return err
	}
	gs, cs, err := sdgnn.ThetaProblems(phi, tg.Z, n, cands)
	if err != nil {
		return err
	}

	// One core, the nodes one after another: the solver's own cost.
	runtime.GOMAXPROCS(1)
	paths := make([]sdgnn.LassoPath, n)
	best := time.Duration(1 << 62)
	for rep := 0; rep < *reps; rep++ {
		t0 := time.Now()
		for z := range gs {
			if paths[z], err = sdgnn.LARSPositive(gs[z], cs[z], *lambda, *budget, 0); err != nil {
				return fmt.Errorf("node %d: %w", z, err)
			}
		}
		best = min(best, time.Since(t0))
	}

	var gFlat, cFlat, theta []float64
	sizes := make([]int64, n)
	steps := make([]int64, n)
	lambdas := make([]float64, n)
	for z := range gs {
		gFlat = append(gFlat, gs[z]...)
		cFlat = append(cFlat, cs[z]...)
		theta = append(theta, paths[z].Coef...)
		sizes[z], steps[z], lambdas[z] = int64(len(cs[z])), int64(paths[z].Steps), paths[z].Lambda
	}
	err = npz.Write(*out, map[string]any{
		"gram":       gFlat,
		"corr":       cFlat,
		"sizes":      sizes,
		"steps":      steps,
		"lambda_end": lambdas,
		"theta":      theta,
		"go_seconds": []float64{best.Seconds()},
		"lambda_min": []float64{*lambda},
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", *out, err)
	}
	fmt.Printf("%d nodes, %d snapshots, %.1f candidates per node, budget %d: Go LARS %.3f ms for all nodes on one core (best of %d) → %s\n",
		n, tg.Snapshots(), float64(len(cFlat))/float64(n), *budget, best.Seconds()*1e3, *reps, *out)
	return nil
}
