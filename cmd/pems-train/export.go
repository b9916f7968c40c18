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
	f := addExportFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(stderr); err != nil {
		return err
	}
	p, saved, err := f.load(stderr)
	if err != nil {
		return err
	}
	r, err := partOf(p.Split, *f.part)
	if err != nil {
		return err
	}
	if err := f.write(ctx, p, saved, r); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s of %s (%s split, %s) to %s\n", *f.what, p.Dataset.Info.Name, *f.part, english.Count(r.Len(), "snapshot"), *f.out)
	return nil
}

// exportFlags are export's flags.
type exportFlags struct {
	fs      *flag.FlagSet
	dataDir *string
	dataset *string
	model   *string
	what    *string
	part    *string
	window  *int
	split   *string
	splitBy *string
	out     *string
}

// addExportFlags defines export's flags on fs.
func addExportFlags(fs *flag.FlagSet) exportFlags {
	return exportFlags{
		fs:      fs,
		dataDir: fs.String("data", "", dataDirUsage),
		dataset: fs.String("dataset", "", "dataset (for -what snapshots without -model)"),
		model:   fs.String("model", "", "model file (needed for embeddings and predictions; fixes dataset, split and normaliser)"),
		what:    fs.String("what", "snapshots", "snapshots, embeddings (H and Z of the model) or predictions"),
		part:    fs.String("split-part", "test", "train, val or test"),
		window:  fs.Int("window", 12, "input window when no -model is given"),
		split:   fs.String("split", "", "train,val,test ratios when no -model is given (default 6,2,2; 7,1,2 with -split-by nodes or windows)"),
		splitBy: fs.String("split-by", snapshot.ByTime, "what the split divides when no -model is given: time (chronological), nodes or windows (Gao & Ribeiro's transductive and inductive splits)"),
		out:     fs.String("out", "", "output Arrow IPC file (required); embeddings write OUT with -H and -Z before the extension"),
	}
}

// check refuses the flags that are wrong whatever the data, and makes
// -out's directory.
func (f exportFlags) check(stderr io.Writer) error {
	if *f.out == "" || f.fs.NArg() > 0 {
		fmt.Fprintf(stderr, "export: -out FILE is required and takes no other arguments (got %q)\n", f.fs.Args())
		return errUsage
	}
	switch *f.what {
	case "snapshots", "embeddings", "predictions":
	default:
		fmt.Fprintf(stderr, "export: -what %q: want snapshots, embeddings or predictions\n", *f.what)
		return errUsage
	}
	if *f.what != "snapshots" && *f.model == "" {
		return badFlags(fmt.Errorf("-what %s needs -model FILE", *f.what))
	}
	if *f.model != "" {
		// The model fixes them: given too, they would be ignored.
		for _, name := range []string{"dataset", "window", "split", "split-by"} {
			if flagSet(f.fs, name) {
				return badFlags(fmt.Errorf("-%s is fixed by -model (its dataset, window and split)", name))
			}
		}
	}
	if *f.window < 1 || *f.window > snapshot.MaxWindow {
		return badFlags(fmt.Errorf("-window %d: want 1 to %d steps", *f.window, snapshot.MaxWindow))
	}
	if err := checkPart(*f.part); err != nil {
		return err
	}
	if err := checkOut("out", *f.out, *f.model); err != nil {
		return err
	}
	// Made now, as distill and teacher make theirs: a folder missing would
	// fail the write only after the embeddings or forecasts are computed.
	if err := os.MkdirAll(filepath.Dir(*f.out), 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	return nil
}

// load reads the data: -model's teacher and its data and split, or
// -dataset's with -window and -split.
func (f exportFlags) load(stderr io.Writer) (*snapshot.Prepared, *teacher.Saved, error) {
	if *f.model != "" {
		saved, err := teacher.LoadModel(*f.model)
		if err != nil {
			if file, ferr := checkpoint.ReadFile(*f.model); ferr == nil && file.Kind == sdgnn.FileKindBundle {
				// The usual mix-up: say where a bundle's forecasts come from.
				return nil, nil, fmt.Errorf("-model %s is an SDGNN bundle: export takes a teacher's .model; a bundle's forecasts are written by pems-train eval -model %s -predictions F.arrow", *f.model, *f.model)
			}
			return nil, nil, fmt.Errorf("-model: %w", err)
		}
		m := saved.Meta
		p, err := prepareSaved(*f.dataDir, teacherData(*f.model, &m), stderr)
		if err != nil {
			return nil, nil, err
		}
		return p, saved, nil
	}
	if *f.dataset == "" {
		fmt.Fprintln(stderr, "export: give -model FILE or -dataset NAME")
		return nil, nil, errUsage
	}
	name, err := checkDataset(*f.dataset)
	if err != nil {
		return nil, nil, err
	}
	*f.dataset = name
	spec, err := parseSplit(*f.splitBy, *f.split)
	if err != nil {
		return nil, nil, badFlags(err)
	}
	p, err := snapshot.Prepare(*f.dataDir, *f.dataset, *f.window, spec, nil)
	if err != nil {
		return nil, nil, err
	}
	return p, nil, nil
}

// write writes what -what asks of the part r of p to -out.
func (f exportFlags) write(ctx context.Context, p *snapshot.Prepared, saved *teacher.Saved, r snapshot.Part) error {
	switch *f.what {
	case "snapshots":
		return snapshot.WriteSnapshotsLabelled(*f.out, p.Set, r.Snapshots(), snapshotLabels(p, *f.part))
	case "predictions":
		if saved == nil {
			return fmt.Errorf("-what predictions needs -model")
		}
		pred, truth, err := teacher.Predict(ctx, saved.Model, p.Set, r, p.Adj, 64)
		if err != nil {
			return err
		}
		return writePredictions(*f.out, p, *f.part, r, saved.Meta.Channels, pred, truth)
	case "embeddings":
		if saved == nil {
			return fmt.Errorf("-what embeddings needs -model")
		}
		return exportEmbeddings(ctx, *f.out, saved.Model, p, r)
	}
	return fmt.Errorf("-what %q: want snapshots, embeddings or predictions", *f.what)
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
	ids := p.Dataset.SensorIDs
	if err := snapshot.WriteEmbeddingsNamed(base+"-H"+ext, "h", snaps, ids, p.Set.Nodes, d, hs); err != nil {
		return err
	}
	return snapshot.WriteEmbeddingsNamed(base+"-Z"+ext, "z", snaps, ids, p.Set.Nodes, d, zs)
}

// snapshotLabels says what a snapshots file of p's part holds: its
// dataset, part, its sensors' IDs where it has them, and channels with
// their units where the dataset's are known and the series has them all.
func snapshotLabels(p *snapshot.Prepared, part string) snapshot.SnapshotLabels {
	info := p.Dataset.Info
	l := snapshot.SnapshotLabels{Dataset: info.Name, Part: part, SensorIDs: p.Dataset.SensorIDs}
	if len(info.Channels) == p.Set.Channels {
		l.Channels = slices.Clone(info.Channels)
		l.Units = pems.ChannelUnits(info.Name, info.Channels)
	}
	return l
}
