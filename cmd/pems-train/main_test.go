package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
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
