package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/reproduce"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// printTables writes the tables and prints them with where they went.
func printTables(tables []*reproduce.Table, base string, stdout io.Writer) error {
	md, err := writeTables(tables, base)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%swrote %s.md and %s.json\n", md, base, base)
	return err
}

// tableBase is the path, without extension, of the table files of a
// comparison: table, then -paper for Gao & Ribeiro's preprocessing, -nodes
// or -windows for their splits, then suffix.
func tableBase(out string, prep snapshot.Prep, splitBy, suffix string) string {
	base := filepath.Join(out, "table")
	if prep != snapshot.PrepStandard && prep != "" {
		base += "-" + string(prep)
	}
	if snapshot.Dealt(splitBy) {
		base += "-" + splitBy
	}
	return base + suffix
}

// writeTables writes the tables as base.md and base.json and returns the
// Markdown.
func writeTables(tables []*reproduce.Table, base string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", filepath.Dir(base), err)
	}
	var md strings.Builder
	for _, t := range tables {
		if err := t.Markdown(&md); err != nil {
			return "", err
		}
		md.WriteString("\n")
	}
	raw, err := json.MarshalIndent(tables, "", "  ")
	if err != nil {
		return "", fmt.Errorf("table JSON: %w", err)
	}
	// Atomic writes: the table is rewritten after every seed of a long run,
	// and an interruption must not leave half a file.
	for path, data := range map[string][]byte{base + ".md": []byte(md.String()), base + ".json": raw} {
		if err := checkpoint.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return "", fmt.Errorf("table: %w", err)
		}
	}
	return md.String(), nil
}

// mergeTables reads the table files written by reproduce runs of one
// comparison over different seeds, merges them per dataset (in the order
// datasets first appear) and writes the result into out as
// table*-merged (mergedName).
func mergeTables(paths []string, out string, stdout io.Writer) error {
	byDataset := map[string][]*reproduce.Table{}
	var order []string
	for _, p := range paths {
		p = strings.TrimSpace(p)
		raw, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		var tables []*reproduce.Table
		if err := json.Unmarshal(raw, &tables); err != nil {
			return fmt.Errorf("merge %s: not a reproduce table file: %w", p, err)
		}
		if len(tables) == 0 {
			return fmt.Errorf("merge %s: no tables in the file", p)
		}
		for i, t := range tables {
			if t == nil || t.Dataset == "" || len(t.Runs) == 0 {
				return fmt.Errorf("merge %s: table %d is not a reproduce table (no dataset or no seeds)", p, i+1)
			}
			// The preprocessing names the merged table's files
			// (tableBase): one the file makes up could name any path.
			if t.Config.Prep != "" {
				if _, err := snapshot.ParsePrep(string(t.Config.Prep)); err != nil {
					return fmt.Errorf("merge %s: table %d: %w", p, i+1, err)
				}
			}
			if t.Config.SplitBy != "" {
				if _, err := snapshot.ParseSplitBy(t.Config.SplitBy); err != nil {
					return fmt.Errorf("merge %s: table %d: %w", p, i+1, err)
				}
			}
			// Merge names the tables by their files in its errors.
			t.File = p
			if len(tables) > 1 {
				t.File = fmt.Sprintf("%s (table %d)", p, i+1)
			}
			if _, ok := byDataset[t.Dataset]; !ok {
				order = append(order, t.Dataset)
			}
			byDataset[t.Dataset] = append(byDataset[t.Dataset], t)
		}
	}
	var merged []*reproduce.Table
	for _, name := range order {
		t, err := reproduce.Merge(byDataset[name])
		if err != nil {
			return err
		}
		merged = append(merged, t)
	}
	c := merged[0].Config
	base := tableBase(out, c.Prep, c.SplitBy, "-merged")
	if name := mergedName(paths); name != "" {
		base = filepath.Join(out, name)
	}
	return printTables(merged, base, stdout)
}

// mergedName names the merged table after the table files merged: the
// name they share, such as table-quick or table-paper-nodes-steps4032
// (a merged file's own -merged left out), with -merged added, so that
// quick or shortened runs merged into the directory of a full one do not
// overwrite its merged table. It is "" when the files that reproduce
// named (table*.json) disagree or there is none; files renamed otherwise
// do not count.
func mergedName(paths []string) string {
	name := ""
	for _, p := range paths {
		b := filepath.Base(strings.TrimSpace(p))
		if !strings.HasPrefix(b, "table") || !strings.HasSuffix(b, ".json") {
			continue
		}
		b = strings.TrimSuffix(strings.TrimSuffix(b, ".json"), "-merged")
		if name != "" && b != name {
			return ""
		}
		name = b
	}
	if name == "" {
		return ""
	}
	return name + "-merged"
}
