package snapshot

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// writeRingLayout writes a PeMS08-layout data directory: a made-up series
// of steps steps and the graph whose distance list is graph.
func writeRingLayout(t *testing.T, steps int, graph string) string {
	t.Helper()
	dir := t.TempDir()
	sub := filepath.Join(dir, "pems", "pems08")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	const nodes = 170
	s := &pems.Series{Steps: steps, Nodes: nodes, Channels: 3, Data: make([]float64, steps*nodes*3)}
	for i := range s.Data {
		s.Data[i] = 50 + 40*math.Sin(float64(i)/7)
	}
	if err := pems.WriteNPZ(filepath.Join(sub, "PEMS08.npz"), s); err != nil {
		t.Fatal(err)
	}
	writeGraph(t, dir, graph)
	return dir
}

func writeGraph(t *testing.T, dir, graph string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "pems", "pems08", "distance.csv"), []byte(graph), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ringGraph is a distance list of a ring over PeMS08's 170 nodes, link i
// from i to i+1 of cost cost(i); a negative cost leaves the link out.
func ringGraph(cost func(i int) float64) string {
	var b strings.Builder
	b.WriteString("from,to,cost\n")
	for i := range 170 {
		if c := cost(i); c >= 0 {
			fmt.Fprintf(&b, "%d,%d,%g\n", i, (i+1)%170, c)
		}
	}
	return b.String()
}

// TestPrepareSavedChecksGraph prepares a model's data after its graph file
// changed: PrepareSaved refuses a graph other than the recorded one, saying
// what differs, and takes a change the model does not read (the costs of a
// model whose links weigh 1) and a model that records no graph.
func TestPrepareSavedChecksGraph(t *testing.T) {
	spec := SplitSpec{Ratios: [3]float64{6, 2, 2}}
	distances := func(i int) float64 { return float64(100 + i%9) }
	for _, tc := range []struct {
		name  string
		prep  Prep
		graph string // the changed graph file
		want  string // in the error; "" for none
	}{
		{"same graph", PrepPaper, ringGraph(distances), ""},
		{"same graph, standard", PrepStandard, ringGraph(distances), ""},
		{"a link fewer", PrepPaper, ringGraph(func(i int) float64 { return map[bool]float64{true: -1, false: distances(i)}[i == 5] }), "169 links, want 170"},
		{"another link", PrepStandard, ringGraph(distances) + "0,2,100\n", "171 links, want 170"},
		{"a link moved", PrepStandard, strings.Replace(ringGraph(distances), "\n5,6,", "\n5,7,", 1), "the same 170 nodes and 170 links, but other links (sha256"},
		{"another distance", PrepPaper, strings.Replace(ringGraph(distances), "\n5,6,105\n", "\n5,6,106\n", 1), "but other links or costs"},
		{"another distance, standard", PrepStandard, strings.Replace(ringGraph(distances), "\n5,6,105\n", "\n5,6,106\n", 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeRingLayout(t, 60, ringGraph(distances))
			p, err := PrepareFit(dir, "pems08", 12, spec, tc.prep)
			if err != nil {
				t.Fatal(err)
			}
			fp := p.GraphFingerprint()
			if fp.Costs != (tc.prep == PrepPaper) || fp.Nodes != 170 || fp.Edges != 170 {
				t.Fatalf("fingerprint %v of a %s model", fp, tc.prep)
			}
			writeGraph(t, dir, tc.graph)
			norm := p.Set.Norm
			_, err = PrepareSaved(dir, "pems08", 12, p.Split, &norm, &fp)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("PrepareSaved: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("PrepareSaved took a changed graph; want an error with %q", tc.want)
			case tc.want != "":
				for _, s := range []string{tc.want, filepath.Join(dir, "pems", "pems08", "distance.csv"), "not the one the model was trained on"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q lacks %q", err, s)
					}
				}
			}
			// A model file written before fingerprints were kept: not checked.
			if _, err := PrepareSaved(dir, "pems08", 12, p.Split, &norm, nil); err != nil {
				t.Errorf("PrepareSaved without a fingerprint: %v", err)
			}
		})
	}
}
