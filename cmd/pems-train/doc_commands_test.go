package main

import (
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/internal/doccmd"
)

// TestDocumentedCommands checks every pems-train command that README.md,
// RESULTS.md and docs/*.md show in their sh blocks against the
// subcommand's real flags (pems-train COMMAND -h): a document showing a
// flag or a subcommand that does not exist fails here.
func TestDocumentedCommands(t *testing.T) {
	cmds, err := doccmd.Load("../..", doccmd.PemsTrain)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 20 {
		t.Fatalf("%d pems-train commands in the documents, want many: is the reader broken?", len(cmds))
	}
	k := &doccmd.Checker{Program: doccmd.PemsTrain, Run: run}
	for _, c := range cmds {
		if err := k.Check(c); err != nil {
			t.Errorf("%v\n\t%v", c, err)
		}
	}
}

// TestDocumentedCommandsRefuseMistakes plants mistakes in a document's
// commands, each of which the check must catch, beside a correct one.
func TestDocumentedCommandsRefuseMistakes(t *testing.T) {
	for _, tc := range []struct {
		name, sh, err string
	}{
		{"correct", "go run ./cmd/pems-train teacher -dataset sz-taxi -epochs 5 -out runs/t.model -mape-floor 1", ""},
		{"unknown flag", "go run ./cmd/pems-train teacher -dataset sz-taxi -epoch 5", "flag -epoch is not defined"},
		{"unknown subcommand", "bin/pems-train train -dataset sz-taxi", `"train" is not a pems-train command`},
		{"flag of another subcommand", "pems-train eval -model m.sdgnn -teacher t.model", "flag -teacher is not defined"},
		{"value of another type", "pems-train distill -teacher t.model -budget six", "-budget six: not a int"},
		{"missing value", "pems-train eval -json -model", "flag -model needs a value"},
		{"word after the flags", "pems-train datasets extra", `"extra" is not a flag`},
		{"behind a continuation", "pems-train distill -teacher t.model \\\n    -budjet 6", "flag -budjet is not defined"},
		{"through reproduce-seeds", "scripts/reproduce-seeds runs/q 1-2 2 -dataset sz-taxi -quik", "flag -quik is not defined"},
		{"a flag reproduce-seeds sets", "scripts/reproduce-seeds runs/q 1-2 2 -dataset sz-taxi -out x", "sets -out itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := doccmd.Parse("bad.md", []byte("```sh\n"+tc.sh+"\n```\n"))
			if err != nil || len(cmds) != 1 {
				t.Fatalf("%v, %d commands, want one", err, len(cmds))
			}
			k := &doccmd.Checker{Program: doccmd.PemsTrain, Run: run}
			err = k.Check(cmds[0])
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("%v: %v", cmds[0], err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Errorf("%v: %v, want an error containing %q", cmds[0], err, tc.err)
			}
		})
	}
}
