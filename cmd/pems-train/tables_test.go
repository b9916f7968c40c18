package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/snapshot"
)

func TestMergedName(t *testing.T) {
	for _, tc := range []struct {
		paths []string
		want  string
	}{
		{[]string{"runs/q/seed-1/table-quick.json", " runs/q/seed-2/table-quick.json"}, "table-quick-merged"},
		{[]string{"a/table-paper-nodes.json", "b/table-paper-nodes-merged.json"}, "table-paper-nodes-merged"},
		{[]string{"a/table.json", "a/table.json"}, "table-merged"},
		{[]string{"a/table-quick.json", "b/seed1.json"}, "table-quick-merged"},
		{[]string{"a/table-quick.json", "b/table.json"}, ""}, // they disagree: named from the config
		{[]string{"a/one.json", "b/two.json"}, ""},
	} {
		if got := mergedName(tc.paths); got != tc.want {
			t.Errorf("mergedName(%q) = %q, want %q", tc.paths, got, tc.want)
		}
	}
}

// TestMergeNamesFiles checks that reproduce -merge names the table files
// that cannot be merged, not their places in -merge.
func TestMergeNamesFiles(t *testing.T) {
	dir := t.TempDir()
	table := func(dataset string, noise float64, seeds ...uint64) *reproduce.Table {
		tab := &reproduce.Table{Dataset: dataset, Config: reproduce.Quick(dataset)}
		tab.Config.NoiseStd = noise
		for _, s := range seeds {
			tab.Config.Seeds = append(tab.Config.Seeds, s)
			tab.Runs = append(tab.Runs, reproduce.Run{Seed: s})
		}
		return tab
	}
	write := func(name string, tables ...*reproduce.Table) string {
		raw, err := json.Marshal(tables)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	seeds12 := write("seeds-1-2.json", table("pems08", 0.05, 1, 2))
	seed2 := write("seed-2.json", table("pems08", 0.05, 2))
	noisy := write("noisy.json", table("pems08", 0.2, 3))
	both := write("both.json", table("sz-taxi", 0.05, 4), table("pems08", 0.05, 1))
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"seed twice", []string{seeds12, seed2}, "merge pems08: seed 2 is in " + seeds12 + " and " + seed2},
		{"other configuration", []string{seeds12, noisy}, "merge pems08: " + noisy + " was run with another configuration than " + seeds12 + " (only the seeds may differ): noise_std 0.2, " + seeds12 + " 0.05"},
		{"second table of a file", []string{seeds12, both}, "merge pems08: seed 1 is in " + seeds12 + " and " + both + " (table 2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, "reproduce", "-merge", strings.Join(tc.files, ","), "-out", t.TempDir())
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", code, stderr, tc.want)
			}
		})
	}
}

// TestMergeRefusesUnknownSettings checks that reproduce -merge refuses a
// table whose preprocessing or split is none it knows, naming the file:
// the preprocessing names the merged table's files, and one of
// "/../../escaped" wrote them outside -out (beside it, here) where
// -out held a directory table- (a merge of a preprocessing "/x" makes one).
func TestMergeRefusesUnknownSettings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prep    snapshot.Prep
		splitBy string
		want    string
	}{
		{"prep a path", "/../../escaped", "", `table 1: preprocessing "/../../escaped": want "standard" or "paper"`},
		{"prep unknown", "Paper", "", `table 1: preprocessing "Paper"`},
		{"split unknown", "", "nodes/..", `table 1: split by "nodes/.."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out")
			if err := os.MkdirAll(filepath.Join(out, "table-"), 0o755); err != nil {
				t.Fatal(err)
			}
			tab := &reproduce.Table{Dataset: "pems08", Config: reproduce.Quick("pems08"), Runs: []reproduce.Run{{Seed: 1}}}
			tab.Config.Seeds = []uint64{1}
			tab.Config.Prep, tab.Config.SplitBy = tc.prep, tc.splitBy
			raw, err := json.Marshal([]*reproduce.Table{tab})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "seed-1.json")
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runCmd(t, "reproduce", "-merge", path, "-out", out)
			if code != 1 || !strings.Contains(stderr, "merge "+path+": "+tc.want) {
				t.Errorf("exit %d (want 1), stderr:\n%s\nwant it to contain %q", code, stderr, "merge "+path+": "+tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 2 {
				t.Errorf("%s holds %d entries, want only seed-1.json and out", dir, len(entries))
			}
		})
	}
}
