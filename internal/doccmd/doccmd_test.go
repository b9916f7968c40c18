package doccmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// texts returns the words of each simple command.
func texts(cmds [][]word) [][]string {
	var out [][]string
	for _, c := range cmds {
		var ws []string
		for _, w := range c {
			ws = append(ws, w.text)
		}
		out = append(out, ws)
	}
	return out
}

func TestLex(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     [][]string
	}{
		{"words", "pems-train eval -model m.sdgnn\n", [][]string{{"pems-train", "eval", "-model", "m.sdgnn"}}},
		{"comment", "# a note\npems-train datasets   # lists them\n", [][]string{{"pems-train", "datasets"}}},
		{"hash inside a word", "echo a#b\n", [][]string{{"echo", "a#b"}}},
		{"continuation", "pems-train distill -teacher t.model \\\n    -budget 6\n", [][]string{{"pems-train", "distill", "-teacher", "t.model", "-budget", "6"}}},
		{"quotes", `pems-train report -sweep '2,4' -out "runs/a b"` + "\n", [][]string{{"pems-train", "report", "-sweep", "2,4", "-out", "runs/a b"}}},
		{"escaped quote", `echo "a\"b" 'c\d'` + "\n", [][]string{{"echo", `a"b`, `c\d`}}},
		{"substitution kept whole", `pems-train reproduce -merge "$(ls a/*.json | paste -sd,)" -out x` + "\n",
			[][]string{{"pems-train", "reproduce", "-merge", "$(ls a/*.json | paste -sd,)", "-out", "x"}}},
		{"unquoted substitution", "X=$(cat f) forecaster serve -model ${M}\n", [][]string{{"X=$(cat f)", "forecaster", "serve", "-model", "${M}"}}},
		{"pipeline and lists", "collector | forecaster publish -csv - && echo ok; echo done &\n",
			[][]string{{"collector"}, {"forecaster", "publish", "-csv", "-"}, {"echo", "ok"}, {"echo", "done"}}},
		{"redirections", "pems-train teacher -dataset sz-taxi > out.log 2>&1 < /dev/null\n", [][]string{{"pems-train", "teacher", "-dataset", "sz-taxi"}}},
		{"redirection without space", "pems-train datasets 2>/dev/null >>log\n", [][]string{{"pems-train", "datasets"}}},
		{"subshell", "(cd dir && sha256sum f >> SUMS)\n", [][]string{{"cd", "dir"}, {"sha256sum", "f"}}},
		{"loop", "for d in a b; do pems-train teacher -dataset $d; done\n",
			[][]string{{"for", "d", "in", "a", "b"}, {"do", "pems-train", "teacher", "-dataset", "$d"}, {"done"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lex(tc.in, 1)
			if err != nil {
				t.Fatal(err)
			}
			if g := texts(got); !reflect.DeepEqual(g, tc.want) {
				t.Errorf("got %q, want %q", g, tc.want)
			}
		})
	}
}

func TestLexRefuses(t *testing.T) {
	for _, in := range []string{"echo 'open\n", "echo \"open\n", "echo $(open\n", "cat <<EOF\nx\nEOF\n"} {
		if got, err := lex(in, 1); err == nil {
			t.Errorf("lex(%q) = %q, want an error", in, texts(got))
		}
	}
}

func TestLexLines(t *testing.T) {
	got, err := lex("a \\\n  b\n\nc 'x\ny' d\ne\n", 10)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, c := range got {
		lines = append(lines, c[len(c)-1].line)
	}
	if want := []int{11, 14, 15}; !reflect.DeepEqual(lines, want) {
		t.Errorf("last words on lines %v, want %v", lines, want)
	}
}

func TestFind(t *testing.T) {
	for _, tc := range []struct {
		in      string
		program string // "" for none
		args    []string
		via     string
	}{
		{"pems-train teacher -dataset sz-taxi", PemsTrain, []string{"teacher", "-dataset", "sz-taxi"}, ""},
		{"bin/forecaster serve -model m", Forecaster, []string{"serve", "-model", "m"}, ""},
		{"/tmp/bin/pems-train datasets", PemsTrain, []string{"datasets"}, ""},
		{"go run ./cmd/forecaster demo", Forecaster, []string{"demo"}, ""},
		{"go run -race ./cmd/pems-train/ eval -json", PemsTrain, []string{"eval", "-json"}, ""},
		{"go run github.com/pemsforecast/sdgnn/cmd/pems-train eval", PemsTrain, []string{"eval"}, ""},
		{"PEMS_DATA=/d nice -n 19 pems-train reproduce -quick", PemsTrain, []string{"reproduce", "-quick"}, ""},
		{"timeout -s INT 75 pems-train reproduce -quick", PemsTrain, []string{"reproduce", "-quick"}, ""},
		{"/usr/bin/time -v pems-train reproduce -quick", PemsTrain, []string{"reproduce", "-quick"}, ""},
		{"scripts/reproduce-seeds runs/q 1-2 2 -dataset sz-taxi -quick", PemsTrain, []string{"reproduce", "-dataset", "sz-taxi", "-quick"}, "scripts/reproduce-seeds"},
		{"go build -o bin/ ./cmd/pems-train", "", nil, ""},
		{"go run ./bench/pemsshape -out /tmp/shape", "", nil, ""},
		{"qemu-aarch64 /tmp/pt-arm64 report -model b", "", nil, ""},
		{"echo pems-train", "", nil, ""},
	} {
		cmds, err := lex(tc.in+"\n", 1)
		if err != nil || len(cmds) != 1 {
			t.Fatalf("lex(%q): %v, %d commands", tc.in, err, len(cmds))
		}
		c, ok := find(cmds[0])
		if tc.program == "" {
			if ok {
				t.Errorf("%q: found %v, want no command", tc.in, c)
			}
			continue
		}
		if !ok || c.Program != tc.program || !reflect.DeepEqual(c.Args, tc.args) || c.Via != tc.via {
			t.Errorf("%q: found %v (%v, via %q), want %s %q via %q", tc.in, c, ok, c.Via, tc.program, tc.args, tc.via)
		}
	}
}

func TestParse(t *testing.T) {
	md := "# Title\n\n```sh\npems-train datasets\n```\n\n```json\n{\"pems-train\": 1}\n```\n\n" +
		"- a list item:\n\n  ```sh\n  forecaster serve -model m \\\n      -http :8080\n  ```\n\n" +
		"<!-- doccmd: a marker -->\n```bash\necho x | pems-train eval -model m\n```\n"
	cmds, err := Parse("doc.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cmds {
		got = append(got, c.String())
	}
	want := []string{
		"doc.md:4: pems-train datasets",
		"doc.md:14: forecaster serve -model m -http :8080",
		"doc.md:20: pems-train eval -model m",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	blocks := Blocks([]byte(md))
	if len(blocks) != 4 || blocks[3].Marker != "doccmd: a marker" || blocks[2].Marker != "" || blocks[1].Info != "json" {
		t.Errorf("blocks %+v", blocks)
	}
}

const help = `Usage of teacher:
  -data string
    	data directory
  -epochs int
    	maximum epochs (default 500)
  -log-json
    	log JSON lines instead of text
  -lr float
    	Adam learning rate (default 0.001)
  -q	quiet
  -seed uint
    	seed (default 1)
  -wait duration
    	how long (default 1m0s)
`

func TestParseHelp(t *testing.T) {
	f, err := ParseHelp(help)
	if err != nil {
		t.Fatal(err)
	}
	want := Flags{"data": "string", "epochs": "int", "log-json": "", "lr": "float", "q": "", "seed": "uint", "wait": "duration"}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %v, want %v", f, want)
	}
	if _, err := ParseHelp("pems-train: unknown command \"x\"\n"); err == nil {
		t.Error("a help without flags was read as flags")
	}
}

func TestFlagsCheck(t *testing.T) {
	f, err := ParseHelp(help)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args string
		err  string // "" for none
	}{
		{"", ""},
		{"-data /d -epochs 5 -lr 1e-3 -log-json -seed 0x10 -wait 30s", ""},
		{"--data=/d -epochs=5 -log-json=false -q", ""},
		{"-epochs $N -data $(pwd)", ""},
		{"-h", ""},
		{"-epoch 5", "flag -epoch is not defined"},
		{"-epochs five", "-epochs five: not a int"},
		{"-seed -1", "-seed -1: not a uint"},
		{"-wait 30", "-wait 30: not a duration"},
		{"-lr fast", "-lr fast: not a float"},
		{"-data", "flag -data needs a value"},
		{"-log-json=maybe", "a boolean flag takes true or false"},
		{"-data /d extra", `"extra" is not a flag`},
		{"-data /d -- -epochs 5", `"-epochs" after --`},
		{"---data /d", "bad flag syntax"},
	} {
		err := f.Check(strings.Fields(tc.args))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Check(%q): %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Check(%q) = %v, want an error containing %q", tc.args, err, tc.err)
		}
	}
}

// fakeRun stands for a command's run: "teacher" with the flags of help,
// anything else unknown.
func fakeRun(args []string, _, stderr io.Writer) int {
	if len(args) == 2 && args[0] == "teacher" && args[1] == "-h" {
		fmt.Fprint(stderr, help)
		return 0
	}
	fmt.Fprintf(stderr, "pems-train: unknown command %q\n", args[0])
	return 2
}

func TestCheckerCheck(t *testing.T) {
	k := &Checker{Program: PemsTrain, Run: fakeRun}
	for _, tc := range []struct {
		md, err string
	}{
		{"pems-train teacher -epochs 5", ""},
		{"pems-train -h", ""},
		{"pems-train train -epochs 5", `"train" is not a pems-train command`},
		{"pems-train", "no subcommand"},
		{"pems-train -epochs 5 teacher", "before the subcommand"},
		{"pems-train teacher -epochs 5 -nope", "flag -nope is not defined"},
		{"scripts/reproduce-seeds o 1-2 2 -epochs 5", `"reproduce" is not a pems-train command`},
		{"scripts/reproduce-seeds o 1", "wants OUT SEEDS JOBS"},
	} {
		cmds, err := Parse("t.md", []byte("```sh\n"+tc.md+"\n```\n"))
		if err != nil || len(cmds) != 1 {
			t.Fatalf("%q: %v, %d commands", tc.md, err, len(cmds))
		}
		err = k.Check(cmds[0])
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.md, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %v, want an error containing %q", tc.md, err, tc.err)
		}
	}
}

// TestDocumentsRead reads every document checked: each must parse, and
// between them they must show commands of both programs.
func TestDocumentsRead(t *testing.T) {
	for _, p := range []string{PemsTrain, Forecaster} {
		cmds, err := Load("../..", p)
		if err != nil {
			t.Fatal(err)
		}
		if len(cmds) < 5 {
			t.Errorf("%d %s commands in the documents, want many", len(cmds), p)
		}
	}
}

// ciMarker marks a document's sh block whose every command line must be a
// line of .ci/run, so that the developers' guide shows what CI runs.
const ciMarker = "doccmd: lines of .ci/run"

func TestCIBlocksAreCIRunLines(t *testing.T) {
	ci, err := os.ReadFile(filepath.Join("..", "..", ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(ci), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	files, err := Documents("../..")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		md, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range Blocks(md) {
			if b.Marker != ciMarker {
				continue
			}
			for i, l := range strings.Split(b.Text, "\n") {
				l = strings.TrimSpace(l)
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				n++
				if !lines[l] {
					t.Errorf("%s:%d: %q is not a line of .ci/run", f, b.Line+i, l)
				}
			}
		}
	}
	if n == 0 {
		t.Errorf("no block marked %q in the documents", ciMarker)
	}
}

func ExampleParse() {
	md := "Train, then look:\n\n```sh\ngo run ./cmd/pems-train teacher -dataset sz-taxi \\\n    -epochs 5   # a minute\ncurl -s localhost:8080/metrics | grep sdgnn\n```\n"
	cmds, err := Parse("guide.md", []byte(md))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cmds {
		fmt.Println(c)
	}
	// Output: guide.md:4: pems-train teacher -dataset sz-taxi -epochs 5
}
