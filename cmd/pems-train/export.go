package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		dataDir = fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		dataset = fs.String("dataset", "", "dataset (for -what snapshots without -model)")
		model   = fs.String("model", "", "model file (needed for embeddings and predictions; fixes dataset, split and normaliser)")
		what    = fs.String("what", "snapshots", "snapshots, embeddings (H and Z of the model) or predictions")
		part    = fs.String("split-part", "test", "train, val or test")
		window  = fs.Int("window", 12, "input window when no -model is given")
		split   = fs.String("split", "", "train,val,test ratios when no -model is given (default 6,2,2; 7,1,2 with -split-by nodes or windows)")
		splitBy = fs.String("split-by", snapshot.ByTime, "what the split divides when no -model is given: time (chronological), nodes or windows (Gao & Ribeiro's transductive and inductive splits)")
		out     = fs.String("out", "", "output Arrow IPC file (required); embeddings write OUT with -H and -Z before the extension")
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "export: -out FILE is required and takes no other arguments (got %q)\n", fs.Args())
		return errUsage
	}
	switch *what {
	case "snapshots", "embeddings", "predictions":
	default:
		fmt.Fprintf(stderr, "export: -what %q: want snapshots, embeddings or predictions\n", *what)
		return errUsage
	}
	if *what != "snapshots" && *model == "" {
		return badFlags(fmt.Errorf("-what %s needs -model FILE", *what))
	}
	if *model != "" {
		// The model fixes them: given too, they would be ignored.
		for _, f := range []string{"dataset", "window", "split", "split-by"} {
			if flagSet(fs, f) {
				return badFlags(fmt.Errorf("-%s is fixed by -model (its dataset, window and split)", f))
			}
		}
	}
	if *window < 1 || *window > snapshot.MaxWindow {
		return badFlags(fmt.Errorf("-window %d: want 1 to %d steps", *window, snapshot.MaxWindow))
	}
	if err := checkPart(*part); err != nil {
		return err
	}
	if err := checkOut("out", *out, *model); err != nil {
		return err
	}
	// Made now, as distill and teacher make theirs: a folder missing would
	// fail the write only after the embeddings or forecasts are computed.
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	var (
		p     *snapshot.Prepared
		saved *teacher.Saved
		err   error
	)
	if *model != "" {
		if saved, err = teacher.LoadModel(*model); err != nil {
			if f, ferr := checkpoint.ReadFile(*model); ferr == nil && f.Kind == sdgnn.FileKindBundle {
				// The usual mix-up: say where a bundle's forecasts come from.
				return fmt.Errorf("-model %s is an SDGNN bundle: export takes a teacher's .model; a bundle's forecasts are written by pems-train eval -model %s -predictions F.arrow", *model, *model)
			}
			return fmt.Errorf("-model: %w", err)
		}
		m := saved.Meta
		if p, err = prepareSaved(*dataDir, teacherData(*model, &m), stderr); err != nil {
			return err
		}
	} else {
		if *dataset == "" {
			fmt.Fprintln(stderr, "export: give -model FILE or -dataset NAME")
			return errUsage
		}
		name, err := checkDataset(*dataset)
		if err != nil {
			return err
		}
		*dataset = name
		spec, err := parseSplit(*splitBy, *split)
		if err != nil {
			return badFlags(err)
		}
		if p, err = snapshot.Prepare(*dataDir, *dataset, *window, spec, nil); err != nil {
			return err
		}
	}
	r, err := partOf(p.Split, *part)
	if err != nil {
		return err
	}
	switch *what {
	case "snapshots":
		err = snapshot.WriteSnapshotsLabelled(*out, p.Set, r.Snapshots(), snapshotLabels(p, *part))
	case "predictions":
		if saved == nil {
			return fmt.Errorf("-what predictions needs -model")
		}
		pred, truth, perr := teacher.Predict(ctx, saved.Model, p.Set, r, p.Adj, 64)
		if perr != nil {
			return perr
		}
		err = writePredictions(*out, p, *part, r, saved.Meta.Channels, pred, truth)
	case "embeddings":
		if saved == nil {
			return fmt.Errorf("-what embeddings needs -model")
		}
		err = exportEmbeddings(ctx, *out, saved.Model, p, r)
	default:
		return fmt.Errorf("-what %q: want snapshots, embeddings or predictions", *what)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s of %s (%s split, %s) to %s\n", *what, p.Dataset.Info.Name, *part, english.Count(r.Len(), "snapshot"), *out)
	return nil
}

// exportEmbeddings writes the GRU embeddings H and the GCN outputs Z of every
// snapshot of part r, the student's inputs and targets.
func exportEmbeddings(ctx context.Context, out string, m *teacher.Model, p *snapshot.Prepared, r snapshot.Part) error {
	d := m.Config.Hidden
	var hs, zs []float64
	var snaps []int
	var b snapshot.Batch
	for _, idx := range snapshot.BatchesOf(r.Snapshots(), 64, nil) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.Set.Fill(&b, idx); err != nil {
			return err
		}
		h, z, err := m.Embed(b.X, p.Adj)
		if err != nil {
			return err
		}
		hs = append(hs, h.RawMatrix().Data...)
		zs = append(zs, z.RawMatrix().Data...)
		snaps = append(snaps, idx...)
	}
	ext := filepath.Ext(out)
	base := out[:len(out)-len(ext)]
	if err := snapshot.WriteEmbeddings(base+"-H"+ext, "h", snaps, p.Set.Nodes, d, hs); err != nil {
		return err
	}
	return snapshot.WriteEmbeddings(base+"-Z"+ext, "z", snaps, p.Set.Nodes, d, zs)
}

// snapshotLabels says what a snapshots file of p's part holds: its
// dataset, part, and channels with their units where the dataset's are
// known and the series has them all.
func snapshotLabels(p *snapshot.Prepared, part string) snapshot.SnapshotLabels {
	info := p.Dataset.Info
	l := snapshot.SnapshotLabels{Dataset: info.Name, Part: part}
	if len(info.Channels) == p.Set.Channels {
		l.Channels = slices.Clone(info.Channels)
		l.Units = pems.ChannelUnits(info.Name, info.Channels)
	}
	return l
}
