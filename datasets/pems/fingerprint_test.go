package pems

import (
	"math"
	"strings"
	"testing"
)

func TestGraphFingerprint(t *testing.T) {
	base := &Graph{Nodes: 4, Edges: []Edge{{0, 1, 2.5}, {1, 2, 4}, {2, 3, 1}}}
	for _, tc := range []struct {
		name  string
		g     *Graph
		costs bool
		same  bool   // fingerprint equal to base's with the same costs flag
		diff  string // in base's Diff when not same
	}{
		{"itself", base, false, true, ""},
		{"itself with costs", base, true, true, ""},
		{"edges in another order", &Graph{Nodes: 4, Edges: []Edge{{2, 3, 1}, {0, 1, 2.5}, {2, 1, 4}}}, true, true, ""},
		{"another cost, costs ignored", &Graph{Nodes: 4, Edges: []Edge{{0, 1, 2.5}, {1, 2, 5}, {2, 3, 1}}}, false, true, ""},
		{"negative zero cost", &Graph{Nodes: 4, Edges: []Edge{{0, 1, math.Copysign(0, -1)}}}, true, false, "1 links, want 3"},
		{"another cost", &Graph{Nodes: 4, Edges: []Edge{{0, 1, 2.5}, {1, 2, 5}, {2, 3, 1}}}, true, false, "other links or costs"},
		{"another link", &Graph{Nodes: 4, Edges: []Edge{{0, 1, 2.5}, {1, 3, 4}, {2, 3, 1}}}, false, false, "the same 4 nodes and 3 links, but other links"},
		{"another node count", &Graph{Nodes: 5, Edges: base.Edges}, false, false, "5 nodes, want 4"},
		{"a ring", &Graph{Nodes: 4, Edges: []Edge{{0, 1, 1}, {1, 2, 1}, {2, 3, 1}, {0, 3, 1}}}, false, false, "4 links, want 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := base.Fingerprint(tc.costs), tc.g.Fingerprint(tc.costs)
			if len(got.SHA256) != 64 || got.Nodes != tc.g.Nodes || got.Edges != len(tc.g.Edges) || got.Costs != tc.costs {
				t.Fatalf("Fingerprint = %+v, want %d nodes, %d edges, costs %v and a SHA-256", got, tc.g.Nodes, len(tc.g.Edges), tc.costs)
			}
			d := want.Diff(got)
			if (got == want) != tc.same || (d == "") != tc.same {
				t.Fatalf("fingerprint %v against %v, Diff %q: want same %v", got, want, d, tc.same)
			}
			if !strings.Contains(d, tc.diff) {
				t.Errorf("Diff = %q, want it to contain %q", d, tc.diff)
			}
		})
	}
	// A fingerprint with costs is not one without.
	if a, b := base.Fingerprint(true), base.Fingerprint(false); a.SHA256 == b.SHA256 || !strings.Contains(a.Diff(b), "not comparable") {
		t.Errorf("with and without costs: %v and %v, Diff %q", a, b, a.Diff(b))
	}
	// The negative zero is zero.
	z := &Graph{Nodes: 2, Edges: []Edge{{0, 1, 0}}}
	nz := &Graph{Nodes: 2, Edges: []Edge{{0, 1, math.Copysign(0, -1)}}}
	if a, b := z.Fingerprint(true), nz.Fingerprint(true); a != b {
		t.Errorf("cost 0 and −0: %v and %v", a, b)
	}
}

// TestGraphFingerprintStable holds the fingerprint of a small graph to its
// value: model files record fingerprints, so a change of how they are
// computed would refuse every model file written before it. The values
// are those of the definition on GraphFingerprint, computed apart from
// this package (Python's hashlib and struct).
func TestGraphFingerprintStable(t *testing.T) {
	g := &Graph{Nodes: 3, Edges: []Edge{{0, 1, 1.5}, {1, 2, 2}}}
	for _, tc := range []struct {
		costs bool
		want  string
	}{
		{false, "26e9700d4eff823c309078ef410ad48bfdc4cb0011e1dea0b04397a9126ec8a2"},
		{true, "2261fba2d2c80f3fc840e9a73c772029c0ed8e5550ed1fdb66ca59e112a24d0c"},
	} {
		if got := g.Fingerprint(tc.costs).SHA256; got != tc.want {
			t.Errorf("Fingerprint(%v) = %s, want %s", tc.costs, got, tc.want)
		}
	}
}

func TestGraphFingerprintValidate(t *testing.T) {
	good := (&Graph{Nodes: 3, Edges: []Edge{{0, 1, 1}}}).Fingerprint(false)
	for _, tc := range []struct {
		name  string
		edit  func(f *GraphFingerprint)
		nodes int
		want  string // in the error; "" for none
	}{
		{"good", func(*GraphFingerprint) {}, 3, ""},
		{"any node count", func(*GraphFingerprint) {}, 0, ""},
		{"another node count", func(*GraphFingerprint) {}, 4, "3 nodes for a model of 4"},
		{"no nodes", func(f *GraphFingerprint) { f.Nodes = 0 }, 0, "positive node count"},
		{"negative links", func(f *GraphFingerprint) { f.Edges = -1 }, 3, "positive node count"},
		{"short digest", func(f *GraphFingerprint) { f.SHA256 = f.SHA256[:12] }, 3, "64 lower-case hex digits"},
		{"upper case", func(f *GraphFingerprint) { f.SHA256 = strings.ToUpper(f.SHA256) }, 3, "64 lower-case hex digits"},
		{"no digest", func(f *GraphFingerprint) { f.SHA256 = "" }, 3, "64 lower-case hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := good
			tc.edit(&f)
			err := f.Validate(tc.nodes)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate(%d) of %+v = %v, want an error with %q", tc.nodes, f, err, tc.want)
			}
		})
	}
}
