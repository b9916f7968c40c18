package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/report"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

func cmdReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("report", flag.ContinueOnError)
	flags.SetOutput(stderr)
	f := addReportFlags(flags)
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	budgets, scenario, err := f.check(stderr)
	if err != nil {
		return err
	}
	b, err := sdgnn.LoadBundle(*f.model)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	sensor, err := reportSensor(*f.sensor, b)
	if err != nil {
		return err
	}
	if *f.dataset != "" && *f.dataset != b.Meta.Dataset {
		return fmt.Errorf("the bundle %s was distilled on %s, not %s", *f.model, b.Meta.Dataset, *f.dataset)
	}
	p, err := prepareSaved(*f.dataDir, bundleData(*f.model, &b.Meta), stderr)
	if err != nil {
		return err
	}
	r, err := partOf(p.Split, *f.part)
	if err != nil {
		return err
	}
	in := report.Input{Prepared: p, Part: *f.part, Range: r.Range, Deal: r.Deal, Nodes: r.Nodes, Bundle: b, BundlePath: *f.model, Chunks: *f.chunks, MAPEFloor: *f.mapeFloor,
		Sensor: sensor, Sweep: budgets, SweepScale: *f.scale, Baselines: *f.baselines, Outage: scenario}
	if err := f.loadTeachers(&in, stderr); err != nil {
		return err
	}
	if (len(budgets) > 0 || *f.baselines) && in.Teacher == nil && in.Teacher1 == nil {
		fmt.Fprintln(stderr, "report: -sweep and -baselines need a teacher (-teacher or -teacher1)")
		return errUsage
	}
	if finish := f.showProgress(&in, stderr); finish != nil {
		defer finish()
	}
	start := time.Now()
	d, err := report.Build(ctx, in)
	if err != nil {
		return err
	}
	d.Command = "pems-train report " + strings.Join(args, " ")
	d.Host = hostDescription()
	if err := d.Write(*f.out); err != nil {
		return err
	}
	printReport(d, *f.out, start, stdout)
	return nil
}

// reportFlags are report's flags.
type reportFlags struct {
	fs        *flag.FlagSet
	dataDir   *string
	model     *string
	dataset   *string
	out       *string
	tpath     *string
	t1path    *string
	gpath     *string
	part      *string
	chunks    *int
	mapeFloor *float64
	sensor    *string
	sweep     *string
	scale     *int
	baselines *bool
	outage    *string
	progress  *string
}

// addReportFlags defines report's flags on flags.
func addReportFlags(flags *flag.FlagSet) reportFlags {
	return reportFlags{
		fs:        flags,
		dataDir:   flags.String("data", "", dataDirUsage),
		model:     flags.String("model", "", "SDGNN bundle written by pems-train distill (required)"),
		dataset:   flags.String("dataset", "", "dataset to replay; must be the bundle's (default: the bundle's)"),
		out:       flags.String("out", "", "directory to write the report into (required)"),
		tpath:     flags.String("teacher", "", "the GRU-GCN teacher (default: the teacher recorded in the bundle, if that file exists and is still the one it was distilled from; \"none\" to leave it out)"),
		t1path:    flags.String("teacher1", "", "a GRU-GCN teacher with a 1-layer GCN (pems-train teacher -layers 1), for the sweep's 1-layer targets"),
		gpath:     flags.String("gru", "", "the GRU baseline (pems-train teacher -model gru), for the per-node MAE reductions"),
		part:      flags.String("split-part", "test", "which part of the bundle's split to replay: train, val or test"),
		chunks:    flags.Int("chunks", 10, "chronological chunks for the staleness figure (at most one a snapshot: more are cut to that)"),
		mapeFloor: flags.Float64("mape-floor", 0, "leave truths below this value out of MAPE (not out of MAE/RMSE), as eval -mape-floor"),
		sensor:    flags.String("sensor", "", "sensor of the receptive-field figure and map: its ID where the bundle's sensors have IDs (Los-loop's detectors), else its index (default: the one with the largest receptive set)"),
		sweep:     flags.String("sweep", "", "comma-separated SDGNN budgets to distil for the MAPE-against-receptive-field figure, e.g. 2,4,6,10,20 (needs a teacher; empty: none)"),
		scale:     flags.Int("sweep-scale", 1, "shorten the sweep's and the baselines' schedules this many times (see distill -schedule-scale)"),
		baselines: flags.Bool("baselines", false, "also train GLNN, NOSMOG and PPRGo against the teacher"),
		outage:    flags.String("outage", snapshot.OutageOff, "also score every model under simulated outages (off, standard, or share=S,len=L[:L…],seed=N, as eval -outage), through each model's batched path, and draw MAE against outage length"),
		progress:  flags.String("progress", "auto", "progress on stderr: auto (bars on a terminal, else a line per finished stage), always (bars) or never"),
	}
}

// check refuses the flags that are wrong whatever the data, and returns
// -sweep's budgets and the -outage scenario; it sets -dataset to the
// dataset's own name.
func (f reportFlags) check(stderr io.Writer) ([]int, snapshot.Outage, error) {
	var none snapshot.Outage
	if *f.model == "" || *f.out == "" || f.fs.NArg() > 0 {
		fmt.Fprintln(stderr, "report: -model BUNDLE and -out DIR are required and it takes no other arguments")
		return nil, none, errUsage
	}
	budgets, err := parseBudgets(*f.sweep)
	if err != nil {
		fmt.Fprintf(stderr, "report: -sweep %q: %v\n", *f.sweep, err)
		return nil, none, errUsage
	}
	if err := checkReportFlags(*f.chunks, *f.mapeFloor); err != nil {
		return nil, none, err
	}
	switch {
	case *f.scale < 1:
		fmt.Fprintf(stderr, "report: -sweep-scale %d: must be at least 1\n", *f.scale)
		return nil, none, errUsage
	case negativeSensor(*f.sensor):
		fmt.Fprintf(stderr, "report: -sensor %s: want a sensor's ID or index, or leave it out for the one with the largest receptive set\n", *f.sensor)
		return nil, none, errUsage
	case *f.progress != "auto" && *f.progress != "always" && *f.progress != "never":
		fmt.Fprintf(stderr, "report: -progress %q: want auto, always or never\n", *f.progress)
		return nil, none, errUsage
	}

	if err := checkPart(*f.part); err != nil {
		return nil, none, err
	}
	scenario, err := snapshot.ParseOutage(*f.outage)
	if err != nil {
		return nil, none, badFlags(fmt.Errorf("-outage: %w", err))
	}
	if err := checkOutDir("out", *f.out); err != nil {
		return nil, none, err
	}
	if *f.dataset != "" {
		name, err := checkDataset(*f.dataset)
		if err != nil {
			return nil, none, err
		}
		*f.dataset = name
	}
	return budgets, scenario, nil
}

// loadTeachers loads into in the teachers the report compares: -teacher
// (by default the bundle's, if that file is still the one it was
// distilled from), -teacher1 and -gru.
func (f reportFlags) loadTeachers(in *report.Input, stderr io.Writer) error {
	b, p := in.Bundle, in.Prepared
	teacherPath, teacherFrom, teacherHint := *f.tpath, "-teacher", ""
	if teacherPath == "" && b.Meta.Teacher != "" {
		if _, err := os.Stat(b.Meta.Teacher); err == nil {
			teacherPath, teacherFrom, teacherHint = b.Meta.Teacher, "the bundle's teacher", " (give -teacher FILE, or -teacher none)"
		} else if errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "report: the bundle's teacher %s is not there; leaving the teacher out (give -teacher)\n", b.Meta.Teacher)
		}
	}
	if teacherPath == "none" {
		teacherPath = ""
	}
	for _, t := range []struct {
		from, hint string // what gave the path and what to do, for errors
		path       string
		dst        **teacher.Saved
		name       *string
	}{{teacherFrom, teacherHint, teacherPath, &in.Teacher, &in.TeacherPath}, {"-teacher1", "", *f.t1path, &in.Teacher1, &in.Teacher1Path}, {"-gru", "", *f.gpath, &in.GRU, &in.GRUPath}} {
		if t.path == "" {
			continue
		}
		s, err := teacher.LoadModel(t.path)
		if err != nil {
			return fmt.Errorf("%s: %w%s", t.from, err, t.hint)
		}
		if t.from == "the bundle's teacher" && !sameGRU(s.Model.GRU, b.GRU) {
			// Another model written to the path since (a teacher trained
			// again): its scores would pass for the bundle's teacher's.
			fmt.Fprintf(stderr, "report: the bundle's teacher %s is not the teacher %s was distilled from (its GRU differs: trained again or replaced since); leaving the teacher out (give -teacher)\n", t.path, *f.model)
			continue
		}
		if s.Meta.Graph == nil && s.Meta.Config.GCNLayers() > 0 { // one that records its graph is checked by report.Build
			warnNoGraph(stderr, t.path, p)
		}
		*t.dst, *t.name = s, t.path
	}
	return nil
}

// showProgress sets in's progress as -progress asks: bars on a terminal
// (or always), else a line per finished stage (auto), or none. It returns
// the function that ends the bars, if any.
func (f reportFlags) showProgress(in *report.Input, stderr io.Writer) (finish func()) {
	file, _ := stderr.(*os.File)
	tty := file != nil && (isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd()))
	switch {
	case *f.progress == "always" || (*f.progress == "auto" && tty):
		bars := newBars(stderr)
		in.Progress = bars.update
		return bars.finish
	case *f.progress == "auto":
		in.Progress = stageLines(stderr)
	}
	return nil
}

// printReport says on stdout what the report written to out holds: each
// model's overall metrics, the figures not drawn and why, and the page
// to open.
func printReport(d *report.Document, out string, start time.Time, stdout io.Writer) {
	fmt.Fprintf(stdout, "report on %s, %s split (%s) in %s (%.0f s):\n", d.Dataset, d.Part, english.Count(d.Snapshots, "snapshot"), out, time.Since(start).Seconds())
	for _, m := range d.Models {
		o := m.Report.Overall
		fmt.Fprintf(stdout, "  %-10s receptive %6.2f  MAE %.4f  RMSE %.4f  MAPE %.3f%%\n", m.Name, m.Receptive, o.MAE, o.RMSE, o.MAPE)
	}
	for _, fg := range d.Figures {
		if fg.Skipped != "" {
			fmt.Fprintf(stdout, "  figure %s not drawn: %s\n", fg.Name, fg.Skipped)
		}
	}
	fmt.Fprintf(stdout, "open %s\n", filepath.Join(out, report.FileHTML))
}

// sameGRU reports whether a and b hold the same parameters: a bundle keeps
// its teacher's GRU as it was, so the teacher a bundle was distilled from
// has the bundle's GRU.
func sameGRU(a, b *gru.GRU) bool {
	pa, pb := a.Params(), b.Params()
	if len(pa) != len(pb) {
		return false
	}
	for i := range pa {
		if !mat.Equal(pa[i].W, pb[i].W) {
			return false
		}
	}
	return true
}

// parseBudgets parses a comma-separated list of positive budgets.
func parseBudgets(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a positive budget", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// bars shows one progress bar per stage of a long report.
type bars struct {
	w     io.Writer
	stage string
	bar   *progressbar.ProgressBar
}

func newBars(w io.Writer) *bars { return &bars{w: w} }

func (b *bars) update(stage string, done, total int) {
	if stage != b.stage || b.bar == nil {
		b.finish()
		b.stage = stage
		b.bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(b.w), progressbar.OptionSetDescription(stage),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(b.w) }))
	}
	b.bar.Set(done)
}

func (b *bars) finish() {
	if b.bar != nil && !b.bar.IsFinished() {
		b.bar.Finish()
	}
	b.bar = nil
}

// stageLines returns a progress function that writes one line per
// finished stage, for logs that are not a terminal.
func stageLines(w io.Writer) func(stage string, done, total int) {
	var (
		current string
		since   = time.Now()
	)
	return func(stage string, done, total int) {
		if stage != current {
			current, since = stage, time.Now()
		}
		if done == total {
			fmt.Fprintf(w, "report: %s: done in %.1f s\n", stage, time.Since(since).Seconds())
			current = ""
		}
	}
}

// hostDescription names the machine a report was made on: host name, CPU
// model and cores.
func hostDescription() string {
	host, cpu := hostNames()
	return describeHost(host, cpu, runtime.NumCPU())
}

// describeHost says "host (CPU model, 2 cores)".
func describeHost(host, cpu string, cores int) string {
	return fmt.Sprintf("%s (%s, %s)", host, cpu, english.Count(cores, "core"))
}

// hostNames returns the host name and the CPU model, or the architecture
// when /proc/cpuinfo does not name it.
func hostNames() (host, cpu string) {
	host, _ = os.Hostname()
	cpu = runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	return host, cpu
}

// reportSensor returns the index of the sensor -sensor names among b's
// sensors (its ID where they have IDs, else its index), or −1 for none
// given ("" or "-1"): the report picks one.
func reportSensor(name string, b *sdgnn.Bundle) (int, error) {
	if name == "" || name == "-1" {
		return -1, nil
	}
	names, err := b.SensorNames()
	if err != nil {
		return 0, err
	}
	z, ok := names.Index(name)
	if !ok {
		return 0, badFlags(fmt.Errorf("-sensor %s: the bundle has %s", name, names.Describe()))
	}
	return z, nil
}

// negativeSensor reports whether -sensor is a negative index other than
// −1 (which picks one), which no bundle has.
func negativeSensor(name string) bool {
	n, err := strconv.Atoi(name)
	return err == nil && n < -1
}
