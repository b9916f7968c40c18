package pems

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadDistanceCSV(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "distance.csv", "from,to,cost\n"+
		"0,1,10.5\n"+
		"1,0,9.5\n"+ // reverse direction, smaller cost wins
		"2,1,3\n"+
		"3,3,1\n"+ // self loop ignored
		"3.0,0,7\n"+ // integral float id
		"1,2,4\n") // reverse of 2,1 with a larger cost
	g, err := ReadDistanceCSV(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{0, 1, 9.5}, {0, 3, 7}, {1, 2, 3}}
	if g.Nodes != 5 || !reflect.DeepEqual(g.Edges, want) {
		t.Errorf("got %+v, want 5 nodes and edges %v", g, want)
	}
	if err := g.Validate(); err != nil {
		t.Error(err)
	}
	wantNb := [][]int{{1, 3}, {0, 2}, {1}, {0}, nil}
	if nb := g.Neighbors(); !reflect.DeepEqual(nb, wantNb) {
		t.Errorf("Neighbors = %v, want %v", nb, wantNb)
	}
	for i, w := range []int{2, 2, 1, 1, 0} {
		if d := g.Degree(i); d != w {
			t.Errorf("Degree(%d) = %d, want %d", i, d, w)
		}
	}
	if d := g.Degree(-1); d != 0 {
		t.Errorf("Degree(-1) = %d, want 0", d)
	}
}

func TestReadDistanceCSVErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		text  string
		nodes int
		want  []string
	}{
		{"id-out-of-range", "from,to,cost\n0,1,1\n1,5,2\n", 5, []string{"line 3", "node id 5 outside [0, 5)"}},
		{"negative-id", "from,to,cost\n0,-1,1\n", 5, []string{"line 2", "node id -1"}},
		{"fields", "from,to,cost\n0,1,1\n1,2\n", 5, []string{"line 3", "2 fields"}},
		{"not-number", "from,to,cost\n0,x,1\n", 5, []string{"line 2", `"x"`}},
		{"fractional-id", "from,to,cost\n0,1.5,1\n", 5, []string{"line 2", `"1.5"`}},
		{"nan-cost", "from,to,cost\n0,1,1\n1,2,NaN\n", 5, []string{"line 3", "not finite"}},
		{"bad-cost", "from,to,cost\n0,1,far\n", 5, []string{"line 2", "cost"}},
		{"bad-header", "a,b\n0,1,1\n", 5, []string{"line 1", "header"}},
		{"empty", "", 5, []string{"empty"}},
		{"nodes", "from,to,cost\n", 0, []string{"node count 0"}},
		{"quote", "from,to,cost\n0,\"1,2\n", 5, []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name+".csv", tc.text)
			_, err := ReadDistanceCSV(p, tc.nodes)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadDistanceCSVNoHeader(t *testing.T) {
	p := writeFile(t, t.TempDir(), "d.csv", "0,1,2\n1,2,3\n")
	g, err := ReadDistanceCSV(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Edges) != 2 {
		t.Errorf("%d edges, want 2", len(g.Edges))
	}
}

func TestReadAdjacencyCSV(t *testing.T) {
	dir := t.TempDir()
	// Directed entries (0,1) and (2,1); (1,3)=2 and (3,1)=5 both set; a
	// diagonal entry that must be ignored.
	p := writeFile(t, dir, "adj.csv", "0,1,0,0\n0,0,0,2\n0,1,1,0\n0,5,0,0\n")
	g, err := ReadAdjacencyCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{0, 1, 1}, {1, 2, 1}, {1, 3, 2}}
	if g.Nodes != 4 || !reflect.DeepEqual(g.Edges, want) {
		t.Errorf("got %+v, want 4 nodes and edges %v", g, want)
	}
	if err := g.Validate(); err != nil {
		t.Error(err)
	}
}

func TestReadAdjacencyCSVErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		text string
		want []string
	}{
		{"short-row", "0,1,0\n1,0\n0,0,0\n", []string{"line 2", "2 columns, want 3"}},
		{"long-row", "0,1\n1,0\n0,0\n", []string{"line 3", "more than 2 rows"}},
		{"too-few-rows", "0,1,0\n1,0,0\n", []string{"2 rows of 3 columns"}},
		{"not-number", "0,1\n1,x\n", []string{"line 2, column 2"}},
		{"nan", "0,NaN\n1,0\n", []string{"line 1, column 2", "NaN"}},
		{"inf", "0,1\n-Inf,0\n", []string{"line 2, column 1", "entry -Inf is not finite"}},
		{"empty", "", []string{"empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name+".csv", tc.text)
			_, err := ReadAdjacencyCSV(p)
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestGraphValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    *Graph
		ok   bool
	}{
		{"ok", &Graph{Nodes: 3, Edges: []Edge{{0, 1, 1}, {1, 2, 1}}}, true},
		{"nil", nil, false},
		{"no-nodes", &Graph{}, false},
		{"reversed", &Graph{Nodes: 3, Edges: []Edge{{1, 0, 1}}}, false},
		{"self-loop", &Graph{Nodes: 3, Edges: []Edge{{1, 1, 1}}}, false},
		{"out-of-range", &Graph{Nodes: 3, Edges: []Edge{{0, 3, 1}}}, false},
		{"repeat", &Graph{Nodes: 3, Edges: []Edge{{0, 1, 1}, {0, 1, 2}}}, false},
	} {
		if err := tc.g.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
