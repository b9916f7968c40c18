// Command pems-train trains and evaluates traffic forecasters on datasets in
// the PeMS release layout.
//
// Usage:
//
//	pems-train teacher   -dataset NAME [flags]                train a GRU-GCN (or GRU) teacher
//	pems-train distill   -teacher FILE [flags]                distil the teacher into an SDGNN bundle
//	pems-train reproduce -dataset NAME [flags]                the paper's comparison table over seeds
//	pems-train eval      -model FILE [flags]                  metrics of a saved model or bundle on a split
//	pems-train export    -model FILE | -dataset NAME [flags]  write snapshots, embeddings or predictions as Arrow IPC
//	pems-train report    -model FILE -out DIR                 replay a split through the online path; metrics, figures, HTML
//	pems-train datasets  [-data DIR] [-fetch NAME [-url URL]] list the known datasets and check the data directory; download one
//
// Run "pems-train CMD -h" for the flags of a command. The data directory is
// the -data flag, else $PEMS_DATA, else the first shared/datasets beside the
// current directory or one of its parents (../shared/datasets from a checkout),
// else the per-user cache (pems.CacheDir, ~/.cache/sdgnn/datasets on Linux),
// where datasets -fetch downloads to when neither -data nor $PEMS_DATA is set.
//
// Exit status: 0 when the command did its work; 1 when it failed (data
// missing or malformed, a model file that cannot be read); 2 for a usage
// error, a flag that is unknown, missing or wrong (an unknown -dataset, a
// negative -epochs), checked before any data are read; 130 when interrupted,
// after saving what can be resumed (teacher and reproduce; distill saves
// nothing).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/interrupt"
	"github.com/pemsforecast/sdgnn/internal/runlog"
)

const usage = `pems-train: train and evaluate traffic forecasters on PeMS-layout datasets

commands:
  teacher   train a GRU-GCN (or GRU baseline) teacher; Ctrl-C saves a resumable state
  distill   distil a GRU-GCN teacher into an SDGNN bundle (six-neighbour sparse decomposition)
  reproduce train the teacher, GRU, SDGNN and the distilled baselines over seeds and write the comparison table
  eval      print the metrics of a saved model on a split (-json for machine-readable)
  report    replay a split through the online path and write an analyst's report: metrics, figures, Markdown, HTML, Arrow
  export    write snapshots, embeddings or predictions of a split as Arrow IPC (Feather v2)
  datasets  list the known datasets, where the data directory is, and verify checksums; -fetch NAME downloads one

run "pems-train COMMAND -h" for its flags
exit status: 0 done, 1 failed, 2 usage error (a wrong flag), 130 interrupted (teacher and reproduce save a resumable state)
`

// exitInterrupted is the exit code after Ctrl-C (128 + SIGINT).
const exitInterrupted = 130

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	notes := runlog.New("pems-train", stderr)
	ctx, release := interrupt.ContextFunc(notes.Say)
	defer release()
	ctx = runlog.NewContext(ctx, notes)
	var err error
	switch args[0] {
	case "teacher":
		err = cmdTeacher(ctx, args[1:], stdout, stderr)
	case "distill":
		err = cmdDistill(ctx, args[1:], stdout, stderr)
	case "reproduce":
		err = cmdReproduce(ctx, args[1:], stdout, stderr)
	case "eval":
		err = cmdEval(ctx, args[1:], stdout, stderr)
	case "export":
		err = cmdExport(ctx, args[1:], stdout, stderr)
	case "report":
		err = cmdReport(ctx, args[1:], stdout, stderr)
	case "datasets":
		err = cmdDatasets(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "pems-train: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case err == nil || errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		if err != errUsage { // a badFlags error: not reported yet
			fmt.Fprintln(stderr, errorLine(args[0], "", err))
		}
		return 2
	case errors.Is(err, context.Canceled):
		notes.Fail(errorLine(args[0], "interrupted: ", err))
		return exitInterrupted
	default:
		notes.Fail(errorLine(args[0], "", err))
		return 1
	}
}

// errorLine returns the line that reports err from command cmd:
// "pems-train cmd: ", then what, then the error. An error that starts
// with the command's name, as those of the package a command is named
// after do ("report: …", "distill: …"), has that prefix left out rather
// than printed twice.
func errorLine(cmd, what string, err error) string {
	return "pems-train " + cmd + ": " + what + strings.TrimPrefix(err.Error(), cmd+": ")
}

// errUsage marks a flag error already reported by the flag package.
var errUsage = errors.New("usage error")

// flagError is a flag value found wrong after parsing, by a configuration
// check whose message names it: exit code 2, as errUsage.
type flagError struct{ err error }

func (e *flagError) Error() string   { return e.err.Error() }
func (e *flagError) Unwrap() []error { return []error{e.err, errUsage} }

// badFlags marks err, from checking a configuration made of flags, as a
// usage error (exit 2); nil stays nil.
func badFlags(err error) error {
	if err == nil {
		return nil
	}
	return &flagError{err}
}

// maxWidth is the widest hidden layer that -hidden and -phi-hidden train:
// 64 times the reference 16, where a batch's activations at PeMS04's size
// already take gigabytes. A wider one was taken, and crashed the process
// as its parameters were allocated (a makeslice panic, or "out of memory",
// which no recover catches) instead of failing as a usage error.
const maxWidth = 1024

// checkWidth refuses a hidden width above maxWidth, before any data are
// read; widths below 1 are left to the configurations' own checks.
func checkWidth(flag string, width int) error {
	if width > maxWidth {
		return badFlags(fmt.Errorf("-%s %d: want at most %d", flag, width, maxWidth))
	}
	return nil
}

// checkReportFlags refuses a -chunks or -mape-floor that the report cannot use,
// before any data are read or model trained.
func checkReportFlags(chunks int, mapeFloor float64) error {
	if chunks < 1 {
		return badFlags(fmt.Errorf("-chunks %d: want at least 1", chunks))
	}
	if !(mapeFloor >= 0) || math.IsInf(mapeFloor, 1) {
		return badFlags(fmt.Errorf("-mape-floor %g: want a finite value ≥ 0", mapeFloor))
	}
	return nil
}

// checkOut refuses an output file path that is an existing directory, or
// the same file as one of inputs (which the output would replace), or
// where no file can be made, before any work; flag names it.
func checkOut(flag, path string, inputs ...string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return checkToMake(flag, path)
	}
	if fi.IsDir() {
		return badFlags(fmt.Errorf("-%s %s is a directory, want a file", flag, path))
	}
	for _, in := range inputs {
		if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
			return badFlags(fmt.Errorf("-%s %s is the input %s, which it would replace", flag, path, in))
		}
	}
	// Replaced atomically: by a new file beside it.
	return checkWritable(flag, path, filepath.Dir(path))
}

// checkOutDir refuses an output directory path that is a file, or where
// no file can be made, before any work; flag names it.
func checkOutDir(flag, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return checkToMake(flag, path)
	case !fi.IsDir():
		return badFlags(fmt.Errorf("-%s %s is a file, want a directory", flag, path))
	}
	return checkWritable(flag, path, path)
}

// checkToMake checks that path, which does not exist, can be made with the
// directories it needs: a file where one of them should be, or a
// directory that takes no new entry (read-only, or /proc), would fail the
// write only after the work is done.
func checkToMake(flag, path string) error {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if di, err := os.Stat(dir); err == nil {
			if !di.IsDir() {
				return badFlags(fmt.Errorf("-%s %s: %s is a file, not a directory", flag, path, dir))
			}
			return checkWritable(flag, path, dir)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

// checkWritable makes and removes a file in dir, on the way to path, to
// learn before any work that the results can be written there.
func checkWritable(flag, path, dir string) error {
	f, err := os.CreateTemp(dir, ".pems-train-probe-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return badFlags(fmt.Errorf("-%s %s: cannot write in %s: %w", flag, path, dir, err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// newLogger returns a zerolog logger: human-readable on a terminal, JSON
// lines otherwise or when jsonLogs is set.
func newLogger(w io.Writer, jsonLogs bool) zerolog.Logger {
	if !jsonLogs {
		f, ok := w.(*os.File)
		tty := ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
		return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: !tty, TimeFormat: "15:04:05"}).With().Timestamp().Logger()
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// errHelp is what parseFlags returns for -h: the flags are printed, and
// the command exits 0.
var errHelp = errors.New("help asked")

// parseFlags parses args into fs: errHelp for -h or -help, errUsage (the
// flag package has said what is wrong) for any other error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsage
	}
	return nil
}
