package pems

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Edge is an undirected edge between nodes From and To with a cost: the
// road distance for graphs read from a distance list, the matrix entry for
// graphs read from an adjacency matrix.
type Edge struct {
	From, To int
	Cost     float64
}

// Graph is an undirected road graph on nodes 0..Nodes-1. Edges holds each
// unordered pair once with From < To, sorted by (From, To), and no self
// loops; the readers in this package guarantee that, and Validate checks it
// for graphs built by hand.
type Graph struct {
	Nodes int
	Edges []Edge
}

// Validate reports whether g satisfies the invariants documented on Graph:
// a positive node count, From < To within range, no repeated pair.
func (g *Graph) Validate() error {
	if g == nil {
		return errors.New("nil graph")
	}
	if g.Nodes <= 0 {
		return fmt.Errorf("graph has %d nodes, want > 0", g.Nodes)
	}
	seen := make(map[[2]int]bool, len(g.Edges))
	for k, e := range g.Edges {
		if e.From < 0 || e.To >= g.Nodes || e.From >= e.To {
			return fmt.Errorf("edge %d (%d, %d): want 0 <= From < To < %d", k, e.From, e.To, g.Nodes)
		}
		p := [2]int{e.From, e.To}
		if seen[p] {
			return fmt.Errorf("edge %d (%d, %d) repeats an earlier pair", k, e.From, e.To)
		}
		seen[p] = true
	}
	return nil
}

// Neighbors returns the adjacency lists of g, one sorted list per node,
// without the node itself. Repeated pairs are listed once, self loops and
// out-of-range ids are ignored.
func (g *Graph) Neighbors() [][]int {
	nb := make([][]int, g.Nodes)
	for _, e := range g.Edges {
		if e.From == e.To || !g.has(e.From) || !g.has(e.To) {
			continue
		}
		nb[e.From] = append(nb[e.From], e.To)
		nb[e.To] = append(nb[e.To], e.From)
	}
	for i := range nb {
		slices.Sort(nb[i])
		nb[i] = slices.Compact(nb[i])
	}
	return nb
}

// Degree returns the number of distinct neighbours of node i, not counting
// i itself; it is 0 for an i outside the graph.
func (g *Graph) Degree(i int) int {
	if !g.has(i) {
		return 0
	}
	seen := make(map[int]bool)
	for _, e := range g.Edges {
		switch {
		case e.From == e.To:
		case e.From == i && g.has(e.To):
			seen[e.To] = true
		case e.To == i && g.has(e.From):
			seen[e.From] = true
		}
	}
	return len(seen)
}

func (g *Graph) has(i int) bool { return 0 <= i && i < g.Nodes }

// graphBuilder collects undirected pairs into a Graph, keeping the smaller
// cost of a pair that appears more than once.
type graphBuilder struct {
	nodes int
	index map[[2]int]int
	edges []Edge
}

func newGraphBuilder(nodes int) *graphBuilder {
	return &graphBuilder{nodes: nodes, index: make(map[[2]int]int)}
}

// add records the pair {i, j}; self loops are ignored.
func (b *graphBuilder) add(i, j int, cost float64) {
	if i == j {
		return
	}
	if i > j {
		i, j = j, i
	}
	p := [2]int{i, j}
	if k, ok := b.index[p]; ok {
		b.edges[k].Cost = min(b.edges[k].Cost, cost)
		return
	}
	b.index[p] = len(b.edges)
	b.edges = append(b.edges, Edge{From: i, To: j, Cost: cost})
}

func (b *graphBuilder) graph() *Graph {
	slices.SortFunc(b.edges, func(x, y Edge) int {
		if x.From != y.From {
			return x.From - y.From
		}
		return x.To - y.To
	})
	return &Graph{Nodes: b.nodes, Edges: b.edges}
}

// newCSVReader returns a reader for the simple comma separated files of the
// release: variable field counts are checked by the callers so that they
// can name the line.
func newCSVReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	return cr
}

// ReadDistanceCSV reads a road graph on nodes 0..nodes-1 from the edge
// list at path, in the release's format: a header "from,to,cost" and one
// line "i,j,distance" per edge. The release lists some pairs in both
// directions; each unordered pair is kept once with the smaller cost. Self
// loops are ignored. Node ids outside [0, nodes), lines that do not have
// three numeric fields and NaN or infinite costs are errors that name the
// line.
func ReadDistanceCSV(path string, nodes int) (*Graph, error) {
	if nodes <= 0 {
		return nil, fmt.Errorf("read %s: node count %d, want > 0", path, nodes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	g, err := readDistance(f, nodes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return g, nil
}

func readDistance(r io.Reader, nodes int) (*Graph, error) {
	cr := newCSVReader(r)
	b := newGraphBuilder(nodes)
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if first {
			first = false
			if isDistanceHeader(rec) {
				continue
			}
			if _, err := strconv.ParseFloat(strings.TrimSpace(rec[0]), 64); err != nil {
				return nil, fmt.Errorf("line %d: header %q, want \"from,to,cost\"", line, strings.Join(rec, ","))
			}
		}
		if len(rec) != 3 {
			return nil, fmt.Errorf("line %d: %d fields, want 3 (from,to,cost)", line, len(rec))
		}
		i, err := parseNode(rec[0], nodes)
		if err != nil {
			return nil, fmt.Errorf("line %d: from: %w", line, err)
		}
		j, err := parseNode(rec[1], nodes)
		if err != nil {
			return nil, fmt.Errorf("line %d: to: %w", line, err)
		}
		cost, err := strconv.ParseFloat(strings.TrimSpace(rec[2]), 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: cost: %w", line, err)
		}
		if math.IsNaN(cost) || math.IsInf(cost, 0) {
			return nil, fmt.Errorf("line %d: cost %v is not finite", line, cost)
		}
		b.add(i, j, cost)
	}
	if first {
		return nil, errors.New("empty file, want header from,to,cost and edges")
	}
	return b.graph(), nil
}

func isDistanceHeader(rec []string) bool {
	if len(rec) != 3 {
		return false
	}
	for k, want := range []string{"from", "to", "cost"} {
		if !strings.EqualFold(strings.TrimSpace(rec[k]), want) {
			return false
		}
	}
	return true
}

// parseNode parses a node id in [0, nodes). Integral floats such as "5.0",
// which pandas writes for float columns, are accepted.
func parseNode(s string, nodes int) (int, error) {
	s = strings.TrimSpace(s)
	i, err := strconv.Atoi(s)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("node id %q is not an integer", s)
		}
		i = int(f)
	}
	if i < 0 || i >= nodes {
		return 0, fmt.Errorf("node id %d outside [0, %d)", i, nodes)
	}
	return i, nil
}

// ReadAdjacencyCSV reads a graph from the square numeric matrix at path,
// one comma separated row per line and no header, as in the T-GCN releases.
// A nonzero entry (i, j) or (j, i) makes the edge {i, j}, so a directed
// matrix is symmetrised; the edge's cost is entry (i, j) for i < j if that is
// nonzero, else entry (j, i). The diagonal is ignored. Rows of the wrong
// length, non-numeric, NaN or infinite entries and a row count that
// differs from the column count are errors that name the line.
func ReadAdjacencyCSV(path string) (*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	g, err := readAdjacency(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return g, nil
}

// matrixEntry is a nonzero off-diagonal entry (i, j) of a matrix file,
// with the line it was read from.
type matrixEntry struct {
	i, j, line int
	v          float64
}

// readMatrix reads a square numeric matrix without header, one comma
// separated row per line, and returns its order and its nonzero entries
// off the diagonal, in row order.
func readMatrix(r io.Reader) (int, []matrixEntry, error) {
	var nz []matrixEntry
	cr := newCSVReader(r)
	n, rows, last := 0, 0, 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		line, _ := cr.FieldPos(0)
		last = line
		if rows == 0 {
			n = len(rec)
		}
		if len(rec) != n {
			return 0, nil, fmt.Errorf("line %d: %d columns, want %d as in line 1 (matrix must be square)", line, len(rec), n)
		}
		if rows == n {
			return 0, nil, fmt.Errorf("line %d: more than %d rows (matrix must be square)", line, n)
		}
		for j, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				return 0, nil, fmt.Errorf("line %d, column %d: %w", line, j+1, err)
			}
			if math.IsNaN(v) {
				return 0, nil, fmt.Errorf("line %d, column %d: NaN entry", line, j+1)
			}
			if math.IsInf(v, 0) {
				return 0, nil, fmt.Errorf("line %d, column %d: entry %v is not finite", line, j+1, v)
			}
			if v != 0 && j != rows {
				nz = append(nz, matrixEntry{rows, j, line, v})
			}
		}
		rows++
	}
	if rows == 0 {
		return 0, nil, errors.New("empty file, want a square adjacency matrix")
	}
	if rows != n {
		return 0, nil, fmt.Errorf("file ends after line %d: %d rows of %d columns (matrix must be square)", last, rows, n)
	}
	return n, nz, nil
}

func readAdjacency(r io.Reader) (*Graph, error) {
	n, nz, err := readMatrix(r)
	if err != nil {
		return nil, err
	}
	// Entries above the diagonal come first so that (i, j), i < j, sets
	// the cost when both directions are present.
	b := newGraphBuilder(n)
	for _, e := range nz {
		if e.i < e.j {
			b.add(e.i, e.j, e.v)
		}
	}
	for _, e := range nz {
		if e.i > e.j {
			if _, ok := b.index[[2]int{e.j, e.i}]; !ok {
				b.add(e.j, e.i, e.v)
			}
		}
	}
	return b.graph(), nil
}

// ReadWeightedCSV reads a graph from the square matrix of link weights at
// path, one comma separated row per line and no header, as Los-loop's
// los_adj.csv: entry (i, j) is the weight of the link {i, j}, a
// similarity (higher is closer), 0 where there is none. The edges' costs
// are the weights. The diagonal is ignored (a graph convolution adds its
// own self-loops of weight 1). Besides ReadAdjacencyCSV's errors, a
// negative weight and a matrix that is not symmetric, (i, j) differing
// from (j, i) by more than a relative 1e-9, are errors that name the line
// and column.
func ReadWeightedCSV(path string) (*Graph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	g, err := readWeighted(f)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return g, nil
}

func readWeighted(r io.Reader) (*Graph, error) {
	n, nz, err := readMatrix(r)
	if err != nil {
		return nil, err
	}
	at := make(map[[2]int]float64, len(nz))
	for _, e := range nz {
		if e.v < 0 {
			return nil, fmt.Errorf("line %d, column %d: weight %v is negative (want similarities ≥ 0, 0 for no link)", e.line, e.j+1, e.v)
		}
		at[[2]int{e.i, e.j}] = e.v
	}
	b := newGraphBuilder(n)
	for _, e := range nz {
		mirror := at[[2]int{e.j, e.i}]
		if math.Abs(e.v-mirror) > 1e-9*math.Max(e.v, mirror) {
			return nil, fmt.Errorf("line %d, column %d: weight %v, but row %d, column %d holds %v: the matrix must be symmetric", e.line, e.j+1, e.v, e.j+1, e.i+1, mirror)
		}
		if e.i < e.j {
			b.add(e.i, e.j, e.v)
		}
	}
	return b.graph(), nil
}
