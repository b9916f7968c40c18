package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// writePeMS08Layout writes a small data directory in the PeMS08 release
// layout: the real PeMS08 road graph (copied from the shared data when it is
// there, else a ring) and a short three-channel series that the test makes
// up, since the real PEMS08.npz is not available here.
func writePeMS08Layout(t *testing.T, steps int) string {
	t.Helper()
	dir := t.TempDir()
	sub := filepath.Join(dir, "pems", "pems08")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	const nodes = 170
	graph := []byte("from,to,cost\n")
	if shared, err := pems.ResolveDataDir(""); err == nil {
		if b, err := os.ReadFile(filepath.Join(shared, "pems", "pems08", "distance.csv")); err == nil {
			graph = b
		}
	}
	if len(graph) < 20 {
		for i := 0; i < nodes; i++ {
			graph = append(graph, []byte(strings.Join([]string{strconv.Itoa(i), strconv.Itoa((i + 1) % nodes), "1.5"}, ",")+"\n")...)
		}
	}
	if err := os.WriteFile(filepath.Join(sub, "distance.csv"), graph, 0o644); err != nil {
		t.Fatal(err)
	}
	s := &pems.Series{Steps: steps, Nodes: nodes, Channels: 3, Data: make([]float64, steps*nodes*3)}
	for ts := 0; ts < steps; ts++ {
		for i := 0; i < nodes; i++ {
			day := math.Sin(2 * math.Pi * float64(ts) / 288)
			base := s.Data[(ts*nodes+i)*3:]
			base[0] = 200 + 100*day + float64(i%7)*10 // flow
			base[1] = 0.05 + 0.02*day                 // occupancy
			base[2] = 65 - 5*day + float64(i%3)       // speed
		}
	}
	s.Data[(5*nodes+3)*3] = 0 // a missing reading
	if err := pems.WriteNPZ(filepath.Join(sub, "PEMS08.npz"), s); err != nil {
		t.Fatal(err)
	}
	return dir
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// trainTeacher runs `pems-train teacher` on dir with args, writing a model
// file in a temporary directory, and returns the file's path and contents.
func trainTeacher(t *testing.T, dir string, args ...string) (string, *teacher.Saved) {
	t.Helper()
	model := filepath.Join(t.TempDir(), "teacher.model")
	args = append([]string{"teacher", "-data", dir, "-out", model}, args...)
	if code, _, stderr := runCmd(t, args...); code != 0 {
		t.Fatalf("%v exited %d:\n%s", args, code, stderr)
	}
	saved, err := teacher.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	return model, saved
}

// TestTeacherThenEvalOnPeMSLayout runs the PeMS path end to end: train a
// GRU-GCN for two epochs on a PeMS08-layout directory, then eval -json, and
// checks that eval's figures equal an in-process evaluation of the saved
// model.
func TestTeacherThenEvalOnPeMSLayout(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model := filepath.Join(t.TempDir(), "m.model")
	code, stdout, stderr := runCmd(t, "teacher", "-data", dir, "-dataset", "pems08", "-epochs", "2", "-batch", "16", "-out", model, "-log-json")
	if code != 0 {
		t.Fatalf("teacher exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "overall") || !strings.Contains(stderr, `"message":"epoch"`) {
		t.Fatalf("teacher output lacks the report or epoch lines:\n%s\n%s", stdout, stderr)
	}
	// Each epoch line gives its time in seconds as a number, for programs
	// (bench/run), besides took for people.
	for _, line := range strings.Split(stderr, "\n") {
		if !strings.Contains(line, `"message":"epoch"`) {
			continue
		}
		var e struct{ Seconds *float64 }
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Seconds == nil || !(*e.Seconds > 0) {
			t.Errorf("epoch line without seconds > 0 (%v): %s", err, line)
		}
	}
	code, stdout, stderr = runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("eval -json output is not JSON: %v\n%s", err, stdout)
	}
	if res.Dataset != "pems08" || res.Kind != teacher.KindGRUGCN || len(res.Report.PerChannel) != 3 || len(res.Report.Chunks) != 10 || len(res.Report.PerNode) != 170 {
		t.Fatalf("eval result: %+v", res)
	}
	if tr := res.Trained; tr.Epochs != 2 || tr.BestEpoch < 1 || tr.BestEpoch > 2 || !(tr.BestValMAE > 0) || tr.Created == "" || tr.Teacher != "" {
		t.Fatalf("eval -json trained = %+v, want the two epochs of the run", tr)
	}
	if code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", model); code != 0 || !strings.Contains(stdout, "(trained 2 epochs, saved epoch") {
		t.Fatalf("eval text lacks the training line (exit %d):\n%s%s", code, stdout, stderr)
	}
	saved, err := teacher.LoadModel(model)
	if err != nil {
		t.Fatal(err)
	}
	p, err := snapshot.Prepare(dir, "pems08", 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, &saved.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := teacher.Evaluate(context.Background(), saved.Model, p.Set, p.Split.Test, p.Adj, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.Overall.MAPE-res.Report.Overall.MAPE) > 1e-9 || rep.Overall.Count != res.Report.Overall.Count {
		t.Fatalf("eval -json MAPE %g (n=%d), in-process %g (n=%d)", res.Report.Overall.MAPE, res.Report.Overall.Count, rep.Overall.MAPE, rep.Overall.Count)
	}
	// The made-up missing reading is masked.
	if want := p.Split.Test.Len() * 170 * 3; res.Report.Overall.Count > want {
		t.Fatalf("count %d above %d", res.Report.Overall.Count, want)
	}

	// Arrow exports of the same model, into a folder yet to be made (as
	// distill and teacher make theirs).
	arrow := filepath.Join(t.TempDir(), "new", "emb.arrow")
	if code, _, stderr := runCmd(t, "export", "-data", dir, "-model", model, "-what", "embeddings", "-out", arrow); code != 0 {
		t.Fatalf("export embeddings exited %d: %s", code, stderr)
	}
	for _, f := range []string{"emb-H.arrow", "emb-Z.arrow"} {
		if st, err := os.Stat(filepath.Join(filepath.Dir(arrow), f)); err != nil || st.Size() == 0 {
			t.Fatalf("export wrote no %s: %v", f, err)
		}
	}
	preds := filepath.Join(t.TempDir(), "new", "p.arrow")
	if code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", model, "-predictions", preds); code != 0 {
		t.Fatalf("eval -predictions into a new folder exited %d: %s", code, stderr)
	}
	pt, err := snapshot.ReadPredictions(preds)
	if err != nil {
		t.Fatalf("eval wrote no predictions: %v", err)
	}
	// The file says what its values are in, and where they come from.
	if want := pems.ChannelUnits("pems08", pt.Channels); len(want) != 3 || !slices.Equal(pt.Units, want) {
		t.Errorf("eval -predictions units %q, want %q", pt.Units, want)
	}
	if pt.Dataset != "pems08" || pt.Part != "test" {
		t.Errorf("eval -predictions: dataset %q, part %q; want pems08, test", pt.Dataset, pt.Part)
	}
}

func TestBadInvocations(t *testing.T) {
	dir := writePeMS08Layout(t, 60)
	nowhere := filepath.Join(dir, "nowhere")
	nullTable, foreignTable := filepath.Join(dir, "null.json"), filepath.Join(dir, "foreign.json")
	for path, text := range map[string]string{nullTable: "[null]", foreignTable: `[{"foo":1}]`} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.model")
	if err := os.WriteFile(bad, []byte("PEMSMODL\x01\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "commands:"},
		{"help of a command", []string{"eval", "-h"}, 0, "-mape-floor"},
		{"help of datasets", []string{"datasets", "-help"}, 0, "-verify"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"unknown flag", []string{"teacher", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{"unknown selection", []string{"teacher", "-data", dir, "-dataset", "pems08", "-select", "mape"}, 2, `-select "mape": want mae or scaled`},
		{"unknown teacher selection", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-teacher-select", "rmse"}, 2, `-teacher-select "rmse": want mae or scaled`},
		{"no dataset", []string{"teacher", "-data", dir}, 2, "-dataset is required"},
		{"unknown dataset", []string{"teacher", "-data", dir, "-dataset", "pems99"}, 2, `-dataset: unknown dataset "pems99" (known: los-loop, pems04, pems08, sz-taxi)`},
		{"unknown dataset before reading data", []string{"teacher", "-data", filepath.Join(dir, "nowhere"), "-dataset", "pems99"}, 2, `unknown dataset "pems99"`},
		{"unknown reproduce dataset", []string{"reproduce", "-data", dir, "-dataset", "pems08,pems99", "-quick"}, 2, `unknown dataset "pems99"`},
		{"unknown export dataset", []string{"export", "-data", dir, "-dataset", "pems99", "-out", filepath.Join(dir, "x.arrow")}, 2, `unknown dataset "pems99"`},
		{"unknown report dataset", []string{"report", "-data", dir, "-model", bad, "-dataset", "pems99", "-out", filepath.Join(dir, "r")}, 2, `unknown dataset "pems99"`},
		{"missing series", []string{"teacher", "-data", dir, "-dataset", "pems04"}, 1, "PEMS04.npz"},
		{"bad split", []string{"teacher", "-data", dir, "-dataset", "pems08", "-split", "6,2"}, 2, "three ratios"},
		{"unknown links", []string{"teacher", "-data", dir, "-dataset", "pems08", "-links", "distance"}, 2, `-links: links "distance": want "links"`},
		{"weights of a distance graph", []string{"teacher", "-data", dir, "-dataset", "pems08", "-links", "weights", "-epochs", "1"}, 1, "the graph of pems08 is not a weighted one (format distance, its costs are distances)"},
		{"bad model kind", []string{"teacher", "-data", dir, "-dataset", "pems08", "-model", "gat", "-epochs", "1"}, 2, `model kind "gat"`},
		{"bad model kind before reading data", []string{"teacher", "-data", filepath.Join(dir, "nowhere"), "-dataset", "pems08", "-model", "gat"}, 2, `model kind "gat"`},
		{"zero batch before reading data", []string{"teacher", "-data", filepath.Join(dir, "nowhere"), "-dataset", "pems08", "-batch", "0"}, 2, "batch"},
		{"zero layers", []string{"teacher", "-data", dir, "-dataset", "pems08", "-layers", "0"}, 2, "-layers 0: want 1 or 2"},
		{"three layers", []string{"teacher", "-data", dir, "-dataset", "pems08", "-layers", "3"}, 2, "-layers 3: want 1 or 2"},
		{"negative layers", []string{"teacher", "-data", dir, "-dataset", "pems08", "-layers", "-1"}, 2, "-layers -1: want 1 or 2"},
		{"unknown preprocessing", []string{"teacher", "-data", dir, "-dataset", "pems08", "-prep", "gao"}, 2, `preprocessing "gao": want "standard" or "paper"`},
		{"unknown reproduce preprocessing", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-prep", "zscore"}, 2, `preprocessing "zscore"`},
		{"negative teacher patience", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-patience", "-2"}, 2, "-patience -2"},
		{"negative teacher noise", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-noise", "-0.5"}, 2, "-noise -0.5"},
		{"negative steps", []string{"teacher", "-data", dir, "-dataset", "pems08", "-steps", "-1"}, 2, "-steps -1: want a number of steps"},
		{"negative reproduce steps", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-steps", "-3"}, 2, "-steps -3: want a number of steps"},
		{"steps within the window", []string{"teacher", "-data", dir, "-dataset", "pems08", "-steps", "12"}, 1, "pems08 cut to its first 12 steps: not more than the window 12"},
		{"negative distill epochs", []string{"distill", "-teacher", filepath.Join(dir, "nope.model"), "-epochs", "-1"}, 2, "epochs -1"},
		{"unknown selection metric", []string{"reproduce", "-data", dir, "-dataset", "pems08", "-select", "rmse"}, 2, `select "rmse": want mape or mae`},
		{"unknown export split", []string{"export", "-data", dir, "-dataset", "pems08", "-split-by", "bogus", "-out", filepath.Join(dir, "x.arrow")}, 2, `split by "bogus"`},
		{"truncated model", []string{"eval", "-data", dir, "-model", bad}, 1, "truncated"},
		{"missing model", []string{"eval", "-data", dir, "-model", filepath.Join(dir, "nope.model")}, 1, "nope.model"},
		{"eval without model", []string{"eval"}, 2, "-model FILE is required"},
		{"unknown export", []string{"export", "-what", "graphs", "-model", bad, "-out", filepath.Join(dir, "x.arrow")}, 2, `-what "graphs": want snapshots, embeddings or predictions`},
		{"bad data dir", []string{"teacher", "-data", filepath.Join(dir, "nowhere"), "-dataset", "pems08"}, 1, "nowhere"},
		// Refused before any data are read or model trained (the data
		// directory does not exist: reaching it would exit 1).
		{"NaN teacher noise", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-noise", "NaN"}, 2, "-noise NaN: want a finite σ ≥ 0"},
		{"negative teacher noise of teacher", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-noise", "-5"}, 2, "-noise -5"},
		{"NaN reproduce noise", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-noise", "NaN"}, 2, "-noise NaN"},
		{"negative mape floor of teacher", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-mape-floor", "-1"}, 2, "-mape-floor -1: want a finite value ≥ 0"},
		{"zero chunks of teacher", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-chunks", "0"}, 2, "-chunks 0: want at least 1"},
		{"NaN weight decay", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-weight-decay", "NaN"}, 2, "weight decay NaN"},
		{"negative max batches", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-max-batches", "-3"}, 2, "-max-batches -3: want"},
		{"negative clip", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-clip", "-1"}, 2, "gradient clip -1"},
		{"hidden width beyond allocation", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-hidden", "100000000"}, 2, "-hidden 100000000: want at most 1024"},
		{"distill φ width beyond allocation", []string{"distill", "-teacher", bad, "-phi-hidden", "100000000"}, 2, "-phi-hidden 100000000: want at most 1024"},
		{"NaN split ratio", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-split", "NaN,1,1"}, 2, `ratio "NaN" is not a positive number`},
		{"infinite split ratio", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-split", "Inf,1,1"}, 2, `ratio "Inf" is not a positive number`},
		{"resume of a state not named .state", []string{"teacher", "-resume", bad}, 2, "name the model file to write with -out"},
		{"out is a directory", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-out", dir}, 2, "-out " + dir + " is a directory, want a file"},
		{"distill into a file's directory", []string{"distill", "-teacher", bad, "-out", filepath.Join(bad, "sub", "b.sdgnn")}, 2, "-out " + filepath.Join(bad, "sub", "b.sdgnn") + ": " + bad + " is a file, not a directory"},
		{"eval predictions into a file's directory", []string{"eval", "-model", bad, "-predictions", filepath.Join(bad, "p.arrow")}, 2, bad + " is a file, not a directory"},
		{"distill onto its teacher", []string{"distill", "-teacher", bad, "-out", bad}, 2, "is the input " + bad + ", which it would replace"},
		{"distill schedule scale", []string{"distill", "-teacher", bad, "-schedule-scale", "0"}, 2, "-schedule-scale 0: want 1"},
		{"distill schedule scale with quick", []string{"distill", "-teacher", bad, "-quick", "-schedule-scale", "10"}, 2, "-quick has its own"},
		{"distill NaN lambda", []string{"distill", "-teacher", bad, "-lambda1", "NaN"}, 2, "λ1 NaN"},
		{"distill infinite learning rate", []string{"distill", "-teacher", bad, "-lr", "Inf"}, 2, "lr +Inf"},
		{"distill infinite mape floor", []string{"distill", "-teacher", bad, "-mape-floor", "Inf"}, 2, "-mape-floor +Inf"},
		{"distill negative hops", []string{"distill", "-teacher", bad, "-k1", "-1"}, 2, "-k1 -1"},
		{"distill zero chunks", []string{"distill", "-teacher", bad, "-chunks", "0"}, 2, "-chunks 0"},
		{"eval unknown part", []string{"eval", "-model", bad, "-split-part", "bogus"}, 2, `-split-part "bogus": want train, val or test`},
		{"eval NaN mape floor", []string{"eval", "-model", bad, "-mape-floor", "NaN"}, 2, "-mape-floor NaN"},
		{"eval zero chunks", []string{"eval", "-model", bad, "-chunks", "0"}, 2, "-chunks 0"},
		{"eval predictions onto its model", []string{"eval", "-model", bad, "-predictions", bad}, 2, "-predictions " + bad + " is the input " + bad + ", which it would replace"},
		{"eval predictions onto the model compared", []string{"eval", "-model", filepath.Join(dir, "nope.model"), "-against", bad, "-predictions", bad}, 2, "is the input " + bad},
		{"eval predictions into a directory", []string{"eval", "-model", bad, "-predictions", dir}, 2, "-predictions " + dir + " is a directory, want a file"},
		{"export predictions without model", []string{"export", "-data", nowhere, "-dataset", "pems08", "-what", "predictions", "-out", filepath.Join(dir, "x.arrow")}, 2, "-what predictions needs -model FILE"},
		{"export zero window", []string{"export", "-data", nowhere, "-dataset", "pems08", "-window", "0", "-out", filepath.Join(dir, "x.arrow")}, 2, "-window 0: want 1 to"},
		{"export dataset beside a model", []string{"export", "-model", bad, "-dataset", "pems08", "-out", filepath.Join(dir, "x.arrow")}, 2, "-dataset is fixed by -model"},
		{"export unknown part", []string{"export", "-data", nowhere, "-dataset", "pems08", "-split-part", "dev", "-out", filepath.Join(dir, "x.arrow")}, 2, `-split-part "dev"`},
		{"datasets with a stray word", []string{"datasets", "extra", "-data", nowhere}, 2, `takes no arguments (got ["extra" "-data"`},
		{"report out under a file", []string{"report", "-model", bad, "-out", filepath.Join(bad, "r")}, 2, "-out " + filepath.Join(bad, "r") + ": " + bad + " is a file, not a directory"},
		{"report out is a file", []string{"report", "-model", bad, "-out", bad}, 2, "-out " + bad + " is a file, want a directory"},
		{"report NaN mape floor", []string{"report", "-model", bad, "-out", filepath.Join(dir, "r"), "-mape-floor", "NaN"}, 2, "-mape-floor NaN"},
		{"report negative sensor", []string{"report", "-model", bad, "-out", filepath.Join(dir, "r"), "-sensor", "-5"}, 2, "-sensor -5"},
		{"merge of a null table", []string{"reproduce", "-merge", nullTable, "-out", t.TempDir()}, 1, nullTable + ": table 1 is not a reproduce table"},
		{"merge of foreign JSON", []string{"reproduce", "-merge", foreignTable, "-out", t.TempDir()}, 1, foreignTable + ": table 1 is not a reproduce table"},
		{"merge with training flags", []string{"reproduce", "-merge", nullTable, "-out", t.TempDir(), "-seeds", "1-2", "-quick"}, 2, "[-quick -seeds] do not apply to -merge"},
		{"reproduce out is a file", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-quick", "-out", bad}, 2, "-out " + bad + " is a file, want a directory"},
		// Where nothing can be written (/proc takes no new file, even
		// from root): refused before the work, not after it.
		{"teacher out where nothing is written", []string{"teacher", "-data", nowhere, "-dataset", "pems08", "-out", "/proc/sdgnn-test/m.model"}, 2, "-out /proc/sdgnn-test/m.model: cannot write in /proc"},
		{"eval predictions where nothing is written", []string{"eval", "-model", bad, "-predictions", "/proc/p.arrow"}, 2, "-predictions /proc/p.arrow: cannot write in /proc"},
		{"report out where nothing is written", []string{"report", "-model", bad, "-out", "/proc/sdgnn-report"}, 2, "-out /proc/sdgnn-report: cannot write in /proc"},
		{"report out in a directory that takes nothing", []string{"report", "-model", bad, "-out", "/proc"}, 2, "-out /proc: cannot write in /proc"},
		{"reproduce out where nothing is written", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-quick", "-out", "/proc/sdgnn-runs"}, 2, "-out /proc/sdgnn-runs: cannot write in /proc"},
		{"merge out where nothing is written", []string{"reproduce", "-merge", nullTable, "-out", "/proc/sdgnn-merged"}, 2, "-out /proc/sdgnn-merged: cannot write in /proc"},
		{"reproduce out under a file", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-quick", "-out", filepath.Join(bad, "r")}, 2, bad + " is a file, not a directory"},
		{"merge out is a file", []string{"reproduce", "-merge", nullTable, "-out", bad}, 2, "-out " + bad + " is a file, want a directory"},
		{"merge with a dataset", []string{"reproduce", "-merge", nullTable, "-dataset", "sz-taxi", "-out", t.TempDir()}, 2, "[-dataset] do not apply to -merge"},
		{"merge with a comma too many", []string{"reproduce", "-merge", nullTable + ",", "-out", t.TempDir()}, 2, `-merge "` + nullTable + `,": an empty file name`},
		{"merge with an empty name between", []string{"reproduce", "-merge", nullTable + ",," + foreignTable, "-out", t.TempDir()}, 2, "an empty file name"},
		// mergeTables trims the names: one of blanks is empty too.
		{"merge with a blank name", []string{"reproduce", "-merge", " ," + nullTable, "-out", t.TempDir()}, 2, `-merge " ,` + nullTable + `": an empty file name`},
		{"reproduce dataset twice", []string{"reproduce", "-data", nowhere, "-dataset", "pems08,PeMS08", "-quick"}, 2, "-dataset pems08,PeMS08: pems08 twice"},
		{"reproduce huge seeds", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-seeds", "1-100000000000"}, 2, "more than 10000 seeds"},
		{"reproduce largest seed", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-seeds", "18446744073709551615"}, 2, "more than 10000 seeds"},
		{"reproduce NaN mape floor", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-mape-floor", "NaN"}, 2, "-mape-floor NaN"},
		{"reproduce schedule scale", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-schedule-scale", "0"}, 2, "-schedule-scale 0"},
		{"reproduce schedule scale with quick", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-quick", "-schedule-scale", "10"}, 2, "-quick has its own"},
		{"reproduce negative sdgnn epochs", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-sdgnn-epochs", "-3"}, 2, "-sdgnn-epochs -3"},
		{"reproduce zero teacher epochs", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-teacher-epochs", "0"}, 2, "-teacher-epochs 0: want at least 1"},
		{"reproduce zero teacher patience", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-patience", "0"}, 2, "-patience 0: want at least 1"},
		{"reproduce zero baseline epochs", []string{"reproduce", "-data", nowhere, "-dataset", "pems08", "-baseline-epochs", "0"}, 2, "-baseline-epochs 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, stderr, tc.want)
			}
		})
	}
}

// TestDistillThenEvalBundle distils a two-epoch teacher on the PeMS08-layout
// directory with a tiny schedule and evaluates the bundle with eval -json.
func TestDistillThenEvalBundle(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	model, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "2")
	bundle := filepath.Join(t.TempDir(), "m.sdgnn")
	code, stdout, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", bundle, "-quick", "-epochs", "6", "-budget-start", "8", "-budget-every", "2", "-theta-every", "2", "-finetune", "1")
	if code != 0 {
		t.Fatalf("distill exited %d:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "mean receptive field") || !strings.Contains(stderr, "round") {
		t.Fatalf("distill output:\n%s\n%s", stdout, stderr)
	}
	distilled := stdout
	code, stdout, stderr = runCmd(t, "eval", "-data", dir, "-model", bundle, "-json")
	if code != 0 {
		t.Fatalf("eval exited %d:\n%s", code, stderr)
	}
	var res evalResult
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if res.Kind != "sdgnn" || res.Receptive <= 0 || res.Receptive > 6 || res.Report.Overall.Count == 0 {
		t.Fatalf("bundle eval: kind %q receptive %g count %d", res.Kind, res.Receptive, res.Report.Overall.Count)
	}
	if tr := res.Trained; tr.Teacher != model || tr.Rounds < 1 || tr.Budget != 6 || tr.Epochs != 0 ||
		!regexp.MustCompile(`^sdgnn-pems08-[0-9a-f]{12}$`).MatchString(tr.Version) {
		t.Fatalf("bundle eval trained = %+v, want teacher %s, rounds, budget 6 and a version from the parameters", tr, model)
	}
	if d := res.Trained.Digest; len(d) != 64 || !strings.HasSuffix(res.Trained.Version, "-"+d[:12]) {
		t.Errorf("bundle eval: digest %q, version %q: want the version to end in the digest's first 12 digits", d, res.Trained.Version)
	}
	if !strings.Contains(distilled, "(version "+res.Trained.Version+")") {
		t.Errorf("distill did not print the bundle's version %s:\n%s", res.Trained.Version, distilled)
	}
	named := filepath.Join(t.TempDir(), "named.sdgnn")
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-out", named, "-quick", "-epochs", "2", "-budget-start", "6", "-theta-every", "2", "-finetune", "0", "-version", "ops-2026-11"); code != 0 {
		t.Fatalf("distill -version exited %d:\n%s", code, stderr)
	}
	if b, err := sdgnn.LoadBundle(named); err != nil {
		t.Fatal(err)
	} else if b.Meta.Version != "ops-2026-11" {
		t.Fatalf("distill -version ops-2026-11: bundle version %q", b.Meta.Version)
	}
	code, stdout, _ = runCmd(t, "eval", "-data", dir, "-model", model, "-json")
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res.Receptive <= 1 || len(res.Trained.Digest) != 64 {
		t.Fatalf("teacher eval: code %d, err %v, receptive %g, digest %q", code, err, res.Receptive, res.Trained.Digest)
	}
	// export takes a teacher: given the bundle, it says where a bundle's
	// forecasts come from.
	if code, _, stderr := runCmd(t, "export", "-data", dir, "-what", "predictions", "-model", bundle, "-out", filepath.Join(t.TempDir(), "p.arrow")); code != 1 || !strings.Contains(stderr, "is an SDGNN bundle: export takes a teacher's .model; a bundle's forecasts are written by pems-train eval -model "+bundle+" -predictions F.arrow") {
		t.Fatalf("export of a bundle: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "distill", "-data", dir, "-teacher", model, "-budget", "0"); code != 2 || !strings.Contains(stderr, "budget") {
		t.Fatalf("bad budget: exit %d, %s", code, stderr)
	}

	// The bundle against its teacher: the teacher's figures are eval's own,
	// and the test covers every test snapshot.
	teacherMAE := res.Report.Overall.MAE
	code, stdout, stderr = runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", model, "-json")
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil {
		t.Fatalf("eval -against: code %d, err %v\n%s", code, err, stderr)
	}
	a := res.Against
	if a == nil || a.Kind != "gru-gcn" || a.Overall.MAE != teacherMAE || a.DM.N != res.Range.Len() || !(a.DM.P >= 0 && a.DM.P <= 1) || (a.DM.Stat < 0) != (a.DM.Mean < 0) {
		t.Fatalf("eval -against: %+v (teacher MAE %g)", a, teacherMAE)
	}
	code, stdout, _ = runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", model)
	if code != 0 || !strings.Contains(stdout, "Diebold–Mariano over") || !strings.Contains(stdout, "against gru-gcn") {
		t.Fatalf("eval -against, text: code %d\n%s", code, stdout)
	}
	other, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-window", "6")
	if code, _, stderr := runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", other); code != 1 || !strings.Contains(stderr, "not the same snapshots") {
		t.Fatalf("eval -against a model of another window: exit %d, %s", code, stderr)
	}
	// Another split with the same test part is compared on it; one whose
	// test part differs is not.
	for _, tc := range []struct {
		split string
		code  int
	}{{"7,1,2", 0}, {"5,2,3", 1}} {
		other, _ := trainTeacher(t, dir, "-dataset", "pems08", "-epochs", "1", "-split", tc.split)
		code, stdout, stderr := runCmd(t, "eval", "-data", dir, "-model", bundle, "-against", other)
		if code != tc.code || (code == 0) != strings.Contains(stdout, "Diebold–Mariano over") || (code != 0) != strings.Contains(stderr, "its test part is not the same snapshots") {
			t.Errorf("eval -against a model of split %s: exit %d (want %d)\n%s%s", tc.split, code, tc.code, stdout, stderr)
		}
	}
}

// TestReproduceQuick runs the comparison on the PeMS08-layout directory with
// two seeds and checks that every model of the table is scored, that the
// files are written, and that a second run reuses the saved teachers (same
// GRU-GCN and GRU figures).
func TestReproduceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("trains every model twice")
	}
	dir := writePeMS08Layout(t, 120)
	out := t.TempDir()
	code, stdout, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2", "-out", out)
	if code != 0 {
		t.Fatalf("reproduce exited %d:\n%s", code, stderr)
	}
	for _, m := range reproduce.Models {
		if !strings.Contains(stdout, m) {
			t.Errorf("table lacks %s:\n%s", m, stdout)
		}
	}
	raw, err := os.ReadFile(filepath.Join(out, "table-quick.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []struct {
		Runs []reproduce.Run `json:"runs"`
	}
	if err := json.Unmarshal(raw, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || len(tables[0].Runs) != 2 {
		t.Fatalf("JSON holds %d tables", len(tables))
	}
	first := tables[0].Runs
	for _, r := range first {
		for _, m := range reproduce.Models {
			if v := r.Metrics[m]; !(v.MAE > 0) || math.IsNaN(v.MAPE) {
				t.Errorf("seed %d %s: %+v", r.Seed, m, v)
			}
		}
	}
	if first[0].Metrics[reproduce.GRUGCN] == first[1].Metrics[reproduce.GRUGCN] {
		t.Error("two seeds gave the same teacher")
	}
	both := filepath.Join(t.TempDir(), "both.json")
	if err := os.WriteFile(both, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	// Seed 2 alone, as on a second machine: its teacher is reused.
	if code, _, stderr := runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2-2", "-out", out); code != 0 {
		t.Fatalf("second reproduce exited %d:\n%s", code, stderr)
	}
	second := filepath.Join(out, "table-quick.json")
	raw, _ = os.ReadFile(second)
	var seed2 []struct {
		Runs []reproduce.Run `json:"runs"`
	} // a new variable: decoding into tables would overwrite first's runs
	if err := json.Unmarshal(raw, &seed2); err != nil {
		t.Fatal(err)
	}
	again := seed2[0].Runs[0]
	if again.Seed != 2 || len(seed2[0].Runs) != 1 {
		t.Fatalf("-seeds 2-2 ran seeds %v", seed2[0].Runs)
	}
	for _, m := range []string{reproduce.GRUGCN, reproduce.GRU} {
		if again.Metrics[m] != first[1].Metrics[m] {
			t.Errorf("%s: reused teacher scored %+v, first run %+v", m, again.Metrics[m], first[1].Metrics[m])
		}
	}
	// Merging: seed 2 twice is refused; seed 1 of the first run with seed
	// 2 of the second gives the table over both.
	if code, _, stderr := runCmd(t, "reproduce", "-merge", both+","+second, "-out", out); code != 1 || !strings.Contains(stderr, "seed 2 is in "+both+" and "+second) {
		t.Errorf("merge with a seed twice: exit %d, %s", code, stderr)
	}
	var full []*reproduce.Table
	raw, _ = os.ReadFile(both)
	if err := json.Unmarshal(raw, &full); err != nil {
		t.Fatal(err)
	}
	full[0].Runs = full[0].Runs[:1]
	one := filepath.Join(t.TempDir(), "seed1.json")
	if raw, err = json.Marshal(full); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(one, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runCmd(t, "reproduce", "-merge", second+","+one, "-out", out)
	if code != 0 || !strings.Contains(stdout, "2 seed(s)") {
		t.Fatalf("merge exited %d:\n%s%s", code, stdout, stderr)
	}
	var merged []*reproduce.Table
	// Named after the quick table merged, not a full run's table-merged.
	raw, _ = os.ReadFile(filepath.Join(out, "table-quick-merged.json"))
	if err := json.Unmarshal(raw, &merged); err != nil {
		t.Fatal(err)
	}
	if len(merged) != 1 || len(merged[0].Runs) != 2 || merged[0].Runs[0].Seed != 1 || merged[0].Runs[1].Seed != 2 {
		t.Fatalf("merged table: %+v", merged)
	}
	for _, m := range reproduce.Models {
		a, b := first[0].Metrics[m].MAE, again.Metrics[m].MAE
		mean, std := (a+b)/2, math.Abs(a-b)/math.Sqrt2
		if c := merged[0].Cells[m]; math.Abs(c.MAE-mean) > 1e-12*mean || math.Abs(c.MAEStd-std) > 1e-9*mean {
			t.Errorf("%s: merged MAE %g ± %g, want %g ± %g", m, c.MAE, c.MAEStd, mean, std)
		}
	}
	// A saved teacher trained with other settings is not silently reused.
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "1", "-teacher-epochs", "3", "-out", out)
	if code != 1 || !strings.Contains(stderr, "reuse") || !strings.Contains(stderr, "remove the file") {
		t.Errorf("reuse with other teacher epochs: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "1", "-noise", "0.2", "-out", out)
	if code != 1 || !strings.Contains(stderr, "noise 0.05") || !strings.Contains(stderr, "noise 0.2") {
		t.Errorf("reuse with another teacher noise: exit %d, %s", code, stderr)
	}
	// A run that fails at a later seed (here seed 3's saved teacher is
	// truncated) keeps the table of the seeds it finished.
	good, err := os.ReadFile(filepath.Join(out, "models-quick", "pems08-gru-gcn-seed2.model"))
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(out, "models-quick", "pems08-gru-gcn-seed3.model")
	if err := os.WriteFile(bad, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCmd(t, "reproduce", "-data", dir, "-dataset", "pems08", "-quick", "-seeds", "2,3", "-out", out)
	if code != 1 || !strings.Contains(stderr, "seed3.model") || !strings.Contains(stderr, "table written") {
		t.Errorf("run with a truncated seed-3 teacher: exit %d, %s", code, stderr)
	}
	var kept []struct {
		Runs []reproduce.Run `json:"runs"`
	}
	raw, _ = os.ReadFile(filepath.Join(out, "table-quick.json"))
	if err := json.Unmarshal(raw, &kept); err != nil || len(kept) != 1 || len(kept[0].Runs) != 1 || kept[0].Runs[0].Seed != 2 {
		t.Errorf("table after the failed seed 3 (%v): %s", err, raw)
	}
}

// TestProvenanceString: eval's line on a model's training names the
// parameters' digest once: after a teacher's figures, after a bundle's
// own version, and not again after a version that already ends in it.
func TestProvenanceString(t *testing.T) {
	const digest = "66eb0f98eb64c2a7d1a64dfc9e7f0c3b5bbf2a1f4e0e7a8c1d2e3f4a5b6c7d8e"
	for _, c := range []struct {
		p    provenance
		want string
	}{
		{provenance{Epochs: 8, BestEpoch: 7, BestValMAE: 3.5, Digest: digest},
			"trained 8 epochs, saved epoch 7 (validation MAE 3.5000), parameters 66eb0f98eb64"},
		{provenance{Teacher: "t.model", Rounds: 13, Budget: 6, Version: "ops-2026-11", Digest: digest},
			"distilled from t.model in 13 rounds, budget 6, version ops-2026-11, parameters 66eb0f98eb64"},
		{provenance{Teacher: "t.model", Rounds: 13, Budget: 6, Version: "sdgnn-sz-taxi-66eb0f98eb64", Digest: digest, Created: "2026-11-25T22:30:25Z"},
			"distilled from t.model in 13 rounds, budget 6, version sdgnn-sz-taxi-66eb0f98eb64, created 2026-11-25T22:30:25Z"},
		{provenance{Epochs: 2, BestEpoch: 2, BestValMAE: 4},
			"trained 2 epochs, saved epoch 2 (validation MAE 4.0000)"},
		{provenance{Epochs: 1, BestEpoch: 1, BestValMAE: 4},
			"trained 1 epoch, saved epoch 1 (validation MAE 4.0000)"},
		{provenance{Teacher: "t.model", Rounds: 1, Budget: 6},
			"distilled from t.model in 1 round, budget 6"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.p, got, c.want)
		}
	}
}

// `datasets` lists the files, checks those SHA256SUMS lists and names the
// known files it cannot check because the list does not name them.
func TestDatasetsCommand(t *testing.T) {
	dir := writePeMS08Layout(t, 20)
	graph, err := os.ReadFile(filepath.Join(dir, "pems", "pems08", "distance.csv"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(graph)
	list := filepath.Join(dir, pems.ChecksumFile)
	if err := os.WriteFile(list, []byte(hex.EncodeToString(sum[:])+"  pems/pems08/distance.csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCmd(t, "datasets", "-data", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"pems/pems08/PEMS08.npz  ", "pems/pems04/PEMS04.npz (missing)",
		"all listed files present match", "not verified: [pems/pems08/PEMS08.npz] are not listed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A file that differs from its listed sum fails, naming it.
	if err := os.WriteFile(list, []byte(strings.Repeat("0", 64)+"  pems/pems08/distance.csv\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "datasets", "-data", dir); code != 1 || !strings.Contains(stderr, "checksum mismatch for pems/pems08/distance.csv") {
		t.Errorf("mismatch: exit %d, stderr %q", code, stderr)
	}
	// A directory without the list (one's own data) is listed, unverified.
	if err := os.Remove(list); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := runCmd(t, "datasets", "-data", dir); code != 0 || !strings.Contains(out, "no SHA256SUMS in "+dir+": nothing verified") {
		t.Errorf("without SHA256SUMS: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestDatasetNameAnyCase trains with -dataset spelt as README writes it in
// prose (PeMS08): the name is accepted without regard to case, so what the
// run records and derives from it must be the dataset's own name, else the
// model is refused beside one trained with -dataset pems08 and PeMS08's
// default noise σ 0.05 silently becomes 0.01.
func TestDatasetNameAnyCase(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	_, saved := trainTeacher(t, dir, "-dataset", " PeMS08", "-epochs", "1", "-batch", "16")
	if saved.Meta.Dataset != "pems08" || saved.Meta.Config.NoiseStd != 0.05 {
		t.Fatalf("-dataset \" PeMS08\": model records dataset %q, noise σ %g; want \"pems08\", 0.05", saved.Meta.Dataset, saved.Meta.Config.NoiseStd)
	}
}

// TestTeacherDefaultOutWhereNothingIsWritten checks that teacher's default
// output (runs/DATASET-MODEL.model, beside the current directory) is
// probed before the training as an -out given is: runs leading where no
// file can be made (/proc, which even root cannot write) failed only when
// the model trained was saved.
func TestTeacherDefaultOutWhereNothingIsWritten(t *testing.T) {
	dir := writePeMS08Layout(t, 120)
	cwd := t.TempDir()
	if err := os.Symlink("/proc", filepath.Join(cwd, "runs")); err != nil {
		t.Skip(err)
	}
	t.Chdir(cwd)
	code, stdout, stderr := runCmd(t, "teacher", "-data", dir, "-dataset", "pems08", "-epochs", "1", "-batch", "16")
	want := "-out " + filepath.Join("runs", "pems08-gru-gcn.model") + ": cannot write in runs"
	if code != 2 || !strings.Contains(stderr, want) || strings.Contains(stdout, "overall") {
		t.Errorf("exit %d (want 2), stdout:\n%s\nstderr:\n%s\nwant it to contain %q, before any training", code, stdout, stderr, want)
	}
}
