package main

import "testing"

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
