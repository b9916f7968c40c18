package pems

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
)

// GraphFingerprint identifies a road graph as a model reads it, so that a
// model file can record the graph it was trained on and a later use of the
// model can tell a graph file that changed since (another distance.csv, a
// ring instead of the road network) from the same one: a graph
// convolution over another graph gives other forecasts without failing, and
// node ids chosen on one graph name other roads on another.
//
// SHA256 is the hex SHA-256 of the bytes "sdgnn road graph v1" followed by
// little-endian 64-bit words: 1 if Costs is set (else 0), the node count,
// the edge count, then each edge's From and To (From < To, edges sorted by
// them) and, when Costs is set, its cost's IEEE 754 bits (−0 as 0). A
// model that weighs links by their distance (ScaledAdjacency) reads the
// costs; one that weighs every link 1 reads only which pairs are linked,
// and its fingerprint leaves the costs out. Nodes and Edges repeat the
// counts so that a mismatch can say what differs.
type GraphFingerprint struct {
	Nodes  int    `json:"nodes"`
	Edges  int    `json:"edges"`
	Costs  bool   `json:"costs,omitempty"`
	SHA256 string `json:"sha256"`
}

// fingerprintTag starts every fingerprint's hashed bytes: a later way of
// hashing graphs takes another tag, so that its digests never equal these.
const fingerprintTag = "sdgnn road graph v1"

// Fingerprint returns g's fingerprint, over its edges' costs too when costs
// is set. Two graphs with the same nodes and the same edges (and costs)
// have the same fingerprint whatever the order of their Edges.
func (g *Graph) Fingerprint(costs bool) GraphFingerprint {
	edges := make([]Edge, len(g.Edges))
	for k, e := range g.Edges {
		if e.From > e.To {
			e.From, e.To = e.To, e.From
		}
		if e.Cost == 0 {
			e.Cost = 0 // −0 weighs a link as 0 does
		}
		edges[k] = e
	}
	slices.SortStableFunc(edges, func(a, b Edge) int {
		if c := cmp.Compare(a.From, b.From); c != 0 {
			return c
		}
		if c := cmp.Compare(a.To, b.To); c != 0 {
			return c
		}
		return cmp.Compare(a.Cost, b.Cost)
	})
	h := sha256.New()
	var buf [8]byte
	word := func(v uint64) {
		binary.LittleEndian.PutUint64(buf[:], v)
		h.Write(buf[:])
	}
	h.Write([]byte(fingerprintTag))
	var flag uint64
	if costs {
		flag = 1
	}
	word(flag)
	word(uint64(g.Nodes))
	word(uint64(len(edges)))
	for _, e := range edges {
		word(uint64(e.From))
		word(uint64(e.To))
		if costs {
			word(math.Float64bits(e.Cost))
		}
	}
	return GraphFingerprint{Nodes: g.Nodes, Edges: len(edges), Costs: costs, SHA256: hex.EncodeToString(h.Sum(nil))}
}

// Validate reports whether f can be the fingerprint of a graph of nodes
// nodes (of any when nodes is 0): a positive node count, no negative link
// count and a SHA-256 of 64 lower-case hex digits. A model file's checksum
// refuses a damaged fingerprint; this refuses one that no writer makes.
func (f GraphFingerprint) Validate(nodes int) error {
	switch {
	case f.Nodes <= 0 || f.Edges < 0:
		return fmt.Errorf("graph fingerprint of %d nodes and %d links, want a positive node count", f.Nodes, f.Edges)
	case nodes > 0 && f.Nodes != nodes:
		return fmt.Errorf("graph fingerprint of %d nodes for a model of %d", f.Nodes, nodes)
	case len(f.SHA256) != 2*sha256.Size || strings.Trim(f.SHA256, "0123456789abcdef") != "":
		return fmt.Errorf("graph fingerprint sha256 %q, want %d lower-case hex digits", f.SHA256, 2*sha256.Size)
	}
	return nil
}

// String describes f in a few words, for errors and logs:
// "307 nodes, 340 links with their costs, sha256 1a2b3c4d5e6f".
func (f GraphFingerprint) String() string {
	costs := ""
	if f.Costs {
		costs = " with their costs"
	}
	return fmt.Sprintf("%d nodes, %d links%s, sha256 %s", f.Nodes, f.Edges, costs, short(f.SHA256))
}

// Diff says how the graph fingerprinted as got differs from the one f
// fingerprints (the one expected), "" when they are the same: the node
// count, the link count, or, with both the same, the links or their costs.
func (f GraphFingerprint) Diff(got GraphFingerprint) string {
	switch {
	case f == got:
		return ""
	case f.Costs != got.Costs:
		return fmt.Sprintf("fingerprints not comparable: one covers the links' costs, the other not (%s against %s)", got, f)
	case got.Nodes != f.Nodes:
		return fmt.Sprintf("%d nodes, want %d", got.Nodes, f.Nodes)
	case got.Edges != f.Edges:
		return fmt.Sprintf("%d links, want %d", got.Edges, f.Edges)
	case f.Costs:
		return fmt.Sprintf("the same %d nodes and %d links, but other links or costs (sha256 %s, want %s)", got.Nodes, got.Edges, short(got.SHA256), short(f.SHA256))
	}
	return fmt.Sprintf("the same %d nodes and %d links, but other links (sha256 %s, want %s)", got.Nodes, got.Edges, short(got.SHA256), short(f.SHA256))
}

// short is the first 12 hex digits of a digest, enough to tell two apart
// in a message.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
