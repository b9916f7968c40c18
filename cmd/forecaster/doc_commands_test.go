package main

import (
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/internal/doccmd"
)

// TestDocumentedCommands checks every forecaster command that README.md,
// RESULTS.md and docs/*.md show in their sh blocks against the
// subcommand's real flags (forecaster COMMAND -h): a document showing a
// flag or a subcommand that does not exist fails here.
func TestDocumentedCommands(t *testing.T) {
	cmds, err := doccmd.Load("../..", doccmd.Forecaster)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 10 {
		t.Fatalf("%d forecaster commands in the documents, want many: is the reader broken?", len(cmds))
	}
	k := &doccmd.Checker{Program: doccmd.Forecaster, Run: run}
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
		{"correct", "forecaster serve -model b.sdgnn -brokers k:9092 -lateness 2m -http-reload", ""},
		{"unknown flag", "go run ./cmd/forecaster serve -modle b.sdgnn", "flag -modle is not defined"},
		{"unknown subcommand", "forecaster consume -model b.sdgnn", `"consume" is not a forecaster command`},
		{"flag of another subcommand", "forecaster demo -csv readings.csv", "flag -csv is not defined"},
		{"duration without a unit", "forecaster serve -model b.sdgnn -lateness 120", "-lateness 120: not a duration"},
		{"in a pipeline", "collector | forecaster publish -brokers k:9092 -csv - -bad-row skip", "flag -bad-row is not defined"},
		{"word after the flags", "forecaster publish -brokers k:9092 -csv readings.csv extra", `"extra" is not a flag`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmds, err := doccmd.Parse("bad.md", []byte("```sh\n"+tc.sh+"\n```\n"))
			if err != nil || len(cmds) != 1 {
				t.Fatalf("%v, %d commands, want one", err, len(cmds))
			}
			k := &doccmd.Checker{Program: doccmd.Forecaster, Run: run}
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
