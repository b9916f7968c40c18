package snapshot

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
)

// withBatchRows sets the record batch size for the duration of a test so
// that small tables span several batches.
func withBatchRows(t *testing.T, n int) {
	t.Helper()
	old := batchRows
	batchRows = n
	t.Cleanup(func() { batchRows = old })
}

// floatsEqual compares float slices treating NaNs as equal.
func floatsEqual(a, b []float64) bool {
	return slices.EqualFunc(a, b, func(x, y float64) bool {
		return x == y || (math.IsNaN(x) && math.IsNaN(y))
	})
}

func TestSnapshotsRoundTrip(t *testing.T) {
	for _, rows := range []int{1 << 16, 7} {
		withBatchRows(t, rows)
		const steps, nodes, channels, window = 15, 4, 2, 3
		s := newTestSet(t, steps, nodes, channels, window)
		r := Range{2, 9}
		path := filepath.Join(t.TempDir(), "snap.arrow")
		if err := WriteSnapshots(path, s, r); err != nil {
			t.Fatal(err)
		}
		tab, err := ReadSnapshots(path)
		if err != nil {
			t.Fatal(err)
		}
		if tab.Window != window || tab.Channels != channels || tab.Nodes != nodes {
			t.Fatalf("metadata window=%d channels=%d nodes=%d", tab.Window, tab.Channels, tab.Nodes)
		}
		if !floatsEqual(tab.Norm.Mean, s.Norm.Mean) || !floatsEqual(tab.Norm.Std, s.Norm.Std) {
			t.Errorf("normalizer %+v, want %+v", tab.Norm, s.Norm)
		}
		if got, want := tab.Rows(), r.Len()*nodes; got != want {
			t.Fatalf("rows = %d, want %d", got, want)
		}
		if len(tab.Node) != tab.Rows() || len(tab.X) != tab.Rows()*window*channels || len(tab.Y) != tab.Rows()*channels {
			t.Fatalf("column lengths node=%d x=%d y=%d", len(tab.Node), len(tab.X), len(tab.Y))
		}
		for k := 0; k < tab.Rows(); k++ {
			sn, i := int(tab.Snapshot[k]), int(tab.Node[k])
			if sn != r.Start+k/nodes || i != k%nodes {
				t.Fatalf("row %d is (snapshot %d, node %d)", k, sn, i)
			}
			for tt := 0; tt < window; tt++ {
				for c := 0; c < channels; c++ {
					if got, want := tab.X[(k*window+tt)*channels+c], s.NormAt(sn+tt, i, c); got != want {
						t.Fatalf("row %d x[%d,%d] = %v, want %v", k, tt, c, got, want)
					}
				}
			}
			for c := 0; c < channels; c++ {
				if got, want := tab.Y[k*channels+c], s.RawAt(sn+window, i, c); got != want {
					t.Fatalf("row %d y[%d] = %v, want %v", k, c, got, want)
				}
			}
		}
	}
}

// TestSnapshotsLabelled checks that a snapshots file says what its
// channels are (names, units of y), its dataset and part, where given,
// and that a reader gets them back; a file without them reads as before.
func TestSnapshotsLabelled(t *testing.T) {
	s := newTestSet(t, 15, 4, 3, 3)
	dir := t.TempDir()
	l := SnapshotLabels{Channels: []string{"flow", "occupancy", "speed"}, Units: []string{"veh/5 min", "fraction", "mph"}, Dataset: "pems04", Part: "test"}
	path := filepath.Join(dir, "labelled.arrow")
	if err := WriteSnapshotsLabelled(path, s, []int{1, 4}, l); err != nil {
		t.Fatal(err)
	}
	tab, err := ReadSnapshots(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tab.Labels, l) || tab.Channels != 3 || tab.Rows() != 8 {
		t.Errorf("labels %+v, channels %d, rows %d; want %+v, 3, 8", tab.Labels, tab.Channels, tab.Rows(), l)
	}
	plain := filepath.Join(dir, "plain.arrow")
	if err := WriteSnapshotsOf(plain, s, []int{1}); err != nil {
		t.Fatal(err)
	}
	if tab, err := ReadSnapshots(plain); err != nil || !reflect.DeepEqual(tab.Labels, SnapshotLabels{}) {
		t.Errorf("unlabelled file: labels %+v, %v", tab.Labels, err)
	}
	for _, bad := range []SnapshotLabels{{Channels: []string{"flow"}}, {Units: []string{"a", "b", "c", "d"}}} {
		p := filepath.Join(dir, "bad.arrow")
		if err := WriteSnapshotsLabelled(p, s, []int{1}, bad); err == nil || !strings.Contains(err.Error(), "for 3 channels") {
			t.Errorf("labels %+v: %v, want an error naming the 3 channels", bad, err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("labels %+v: file left behind", bad)
		}
	}
}

func TestWriteSnapshotsErrors(t *testing.T) {
	s := newTestSet(t, 10, 2, 1, 3)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		s    *Set
		r    Range
	}{
		{"nil set", nil, Range{0, 1}},
		{"empty range", s, Range{3, 3}},
		{"past end", s, Range{0, s.Len() + 1}},
		{"negative", s, Range{-1, 2}},
	} {
		path := filepath.Join(dir, tc.name+".arrow")
		if err := WriteSnapshots(path, tc.s, tc.r); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("%s: file left behind", tc.name)
		}
	}
}

func TestEmbeddingsRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prefix    string
		snapshots []int
		nodes, d  int
		rows      int
	}{
		{"one batch", "h", []int{5, 6, 7}, 4, 16, 1 << 16},
		{"several batches", "z", []int{9, 1}, 3, 2, 4},
		{"digit prefix", "layer2_", []int{0}, 2, 11, 1 << 16},
		{"no snapshots", "h", nil, 2, 3, 1 << 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withBatchRows(t, tc.rows)
			data := make([]float64, len(tc.snapshots)*tc.nodes*tc.d)
			for k := range data {
				data[k] = float64(k)*0.5 - 3
			}
			path := filepath.Join(t.TempDir(), "emb.arrow")
			if err := WriteEmbeddings(path, tc.prefix, tc.snapshots, tc.nodes, tc.d, data); err != nil {
				t.Fatal(err)
			}
			snaps, nodes, d, got, err := ReadEmbeddings(path)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.d {
				t.Fatalf("d = %d, want %d", d, tc.d)
			}
			if !floatsEqual(got, data) {
				t.Errorf("data = %v, want %v", got, data)
			}
			for k := range snaps {
				if snaps[k] != int64(tc.snapshots[k/tc.nodes]) || nodes[k] != int32(k%tc.nodes) {
					t.Fatalf("row %d is (snapshot %d, node %d)", k, snaps[k], nodes[k])
				}
			}
			if len(snaps) != len(tc.snapshots)*tc.nodes || len(nodes) != len(snaps) {
				t.Errorf("rows snapshot=%d node=%d, want %d", len(snaps), len(nodes), len(tc.snapshots)*tc.nodes)
			}
		})
	}
}

func TestWriteEmbeddingsErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		snaps    []int
		nodes, d int
		n        int
	}{
		{"short data", []int{0, 1}, 2, 3, 11},
		{"zero d", []int{0}, 2, 0, 0},
		{"zero nodes", []int{0}, 0, 2, 0},
	} {
		if err := WriteEmbeddings(filepath.Join(dir, "e.arrow"), "h", tc.snaps, tc.nodes, tc.d, make([]float64, tc.n)); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

func testPredictions() *PredictionTable {
	const rows = 10
	p := &PredictionTable{Channels: []string{"flow", "occupancy", "speed"}}
	for k := 0; k < rows; k++ {
		p.Snapshot = append(p.Snapshot, int64(k/5))
		p.Step = append(p.Step, int64(k/5+12))
		p.Node = append(p.Node, int32(k%5))
		for c := range p.Channels {
			p.Pred = append(p.Pred, float64(k*10+c)+0.25)
			p.True = append(p.True, float64(k*10+c))
		}
	}
	p.True[4] = 0 // missing
	return p
}

// TestPredictionsUnits checks that the channels' units are written as
// their columns' "unit" metadata and read back, and that units that do
// not match the channels are refused.
func TestPredictionsUnits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		units []string
		want  map[string]string // column → unit metadata
		err   string
	}{
		{"none", nil, map[string]string{}, ""},
		{"all", []string{"veh/5 min", "fraction", "mph"}, map[string]string{
			"pred_flow": "veh/5 min", "true_flow": "veh/5 min", "pred_occupancy": "fraction",
			"true_occupancy": "fraction", "pred_speed": "mph", "true_speed": "mph"}, ""},
		{"one unknown", []string{"veh/5 min", "", "mph"}, map[string]string{
			"pred_flow": "veh/5 min", "true_flow": "veh/5 min", "pred_speed": "mph", "true_speed": "mph"}, ""},
		{"too few", []string{"mph"}, nil, "1 units for 3 channels"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPredictions()
			p.Units = tc.units
			path := filepath.Join(t.TempDir(), "pred.arrow")
			err := WritePredictions(path, p)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := NewFileReader(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := map[string]string{}
			for _, fd := range r.Schema().Fields() {
				if u, ok := fieldMeta(fd, MetaUnit); ok {
					got[fd.Name] = u
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("unit metadata %v, want %v", got, tc.want)
			}
			back, err := ReadPredictions(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(back.Units, tc.units) {
				t.Errorf("read back units %q, want %q", back.Units, tc.units)
			}
		})
	}
}

func TestPredictionsRoundTrip(t *testing.T) {
	for _, rows := range []int{1 << 16, 3} {
		withBatchRows(t, rows)
		p := testPredictions()
		p.Dataset, p.Part = "pems08", "val"
		path := filepath.Join(t.TempDir(), "pred.arrow")
		if err := WritePredictions(path, p); err != nil {
			t.Fatal(err)
		}
		got, err := ReadPredictions(path)
		if err != nil {
			t.Fatal(err)
		}
		if got.Dataset != p.Dataset || got.Part != p.Part || !slices.Equal(got.Channels, p.Channels) || !slices.Equal(got.Snapshot, p.Snapshot) ||
			!slices.Equal(got.Step, p.Step) || !slices.Equal(got.Node, p.Node) ||
			!floatsEqual(got.Pred, p.Pred) || !floatsEqual(got.True, p.True) {
			t.Errorf("round trip with %d-row batches:\ngot  %+v\nwant %+v", rows, got, p)
		}
	}
}

func TestWritePredictionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*PredictionTable)
	}{
		{"no channels", func(p *PredictionTable) { p.Channels = nil }},
		{"duplicate channel", func(p *PredictionTable) { p.Channels[1] = p.Channels[0] }},
		{"empty channel", func(p *PredictionTable) { p.Channels[1] = "" }},
		{"short step", func(p *PredictionTable) { p.Step = p.Step[1:] }},
		{"short node", func(p *PredictionTable) { p.Node = p.Node[1:] }},
		{"short pred", func(p *PredictionTable) { p.Pred = p.Pred[1:] }},
		{"long true", func(p *PredictionTable) { p.True = append(p.True, 1) }},
	} {
		p := testPredictions()
		tc.mutate(p)
		if err := WritePredictions(filepath.Join(t.TempDir(), "p.arrow"), p); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if err := WritePredictions(filepath.Join(t.TempDir(), "p.arrow"), nil); err == nil {
		t.Error("nil table: no error")
	}
}

func TestReadTruncated(t *testing.T) {
	dir := t.TempDir()
	s := newTestSet(t, 12, 3, 2, 4)
	snapPath := filepath.Join(dir, "snap.arrow")
	embPath := filepath.Join(dir, "emb.arrow")
	predPath := filepath.Join(dir, "pred.arrow")
	if err := WriteSnapshots(snapPath, s, Range{0, s.Len()}); err != nil {
		t.Fatal(err)
	}
	if err := WriteEmbeddings(embPath, "h", []int{0, 1}, 3, 4, make([]float64, 24)); err != nil {
		t.Fatal(err)
	}
	if err := WritePredictions(predPath, testPredictions()); err != nil {
		t.Fatal(err)
	}
	readers := map[string]func(string) error{
		snapPath: func(p string) error { _, err := ReadSnapshots(p); return err },
		embPath:  func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err },
		predPath: func(p string) error { _, err := ReadPredictions(p); return err },
	}
	for path, read := range readers {
		full, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 8, len(full) / 2, len(full) - 1} {
			bad := filepath.Join(dir, "truncated.arrow")
			if err := os.WriteFile(bad, full[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			err := read(bad)
			if err == nil {
				t.Errorf("%s truncated to %d of %d bytes: no error", filepath.Base(path), n, len(full))
			} else if !strings.Contains(err.Error(), bad) {
				t.Errorf("error %q does not name the file", err)
			}
		}
	}
	if _, err := ReadSnapshots(filepath.Join(dir, "absent.arrow")); err == nil {
		t.Error("missing file: no error")
	}
}

// writeRaw writes a one-record Arrow IPC file with the given columns.
func writeRaw(t *testing.T, path string, md map[string]string, fields []arrow.Field, build func(*array.RecordBuilder)) {
	t.Helper()
	meta := arrow.MetadataFrom(md)
	schema := arrow.NewSchema(fields, &meta)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mem := memory.NewGoAllocator()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	build(b)
	rec := b.NewRecord()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadSchemaErrors(t *testing.T) {
	dir := t.TempDir()
	i64 := arrow.PrimitiveTypes.Int64
	i32 := arrow.PrimitiveTypes.Int32
	f64 := arrow.PrimitiveTypes.Float64
	noop := func(*array.RecordBuilder) {}
	for _, tc := range []struct {
		name   string
		md     map[string]string
		fields []arrow.Field
		read   func(string) error
		want   string
	}{
		{
			name:   "predictions missing true column",
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "step", Type: i64}, {Name: "node", Type: i32}, {Name: "pred_flow", Type: f64}},
			read:   func(p string) error { _, err := ReadPredictions(p); return err },
			want:   `missing column "true_flow"`,
		},
		{
			name:   "predictions mistyped node",
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "step", Type: i64}, {Name: "node", Type: i64}, {Name: "pred_flow", Type: f64}, {Name: "true_flow", Type: f64}},
			read:   func(p string) error { _, err := ReadPredictions(p); return err },
			want:   `column "node" has type int64, want int32`,
		},
		{
			name:   "embeddings without dims",
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32}},
			read:   func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err },
			want:   "no embedding columns",
		},
		{
			name:   "embeddings missing dim column",
			md:     map[string]string{"prefix": "h", "dim": "3"},
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32}, {Name: "h0", Type: f64}, {Name: "h2", Type: f64}},
			read:   func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err },
			want:   `missing column "h1"`,
		},
		{
			// Read as 3 dimensions, where the file says 2.
			name:   "embeddings column past dim",
			md:     map[string]string{"prefix": "h", "dim": "2"},
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32}, {Name: "h0", Type: f64}, {Name: "h1", Type: f64}, {Name: "h2", Type: f64}},
			read:   func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err },
			want:   `column "h2" beyond the 2 dimensions`,
		},
		{
			name:   "embeddings dim not positive",
			md:     map[string]string{"prefix": "h", "dim": "-1"},
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32}, {Name: "h0", Type: f64}},
			read:   func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err },
			want:   `metadata "dim" is -1`,
		},
		{
			name:   "snapshots without metadata",
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32}},
			read:   func(p string) error { _, err := ReadSnapshots(p); return err },
			want:   `missing metadata key "window"`,
		},
		{
			name: "snapshots wrong list size",
			md:   map[string]string{"window": "2", "channels": "1", "nodes": "1", "normalizer": `{"mean":[0],"std":[1]}`},
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32},
				{Name: "x", Type: arrow.FixedSizeListOf(3, f64)}, {Name: "y", Type: arrow.FixedSizeListOf(1, f64)}},
			read: func(p string) error { _, err := ReadSnapshots(p); return err },
			want: `column "x" has type`,
		},
		{
			// A window whose product with the 3 inputs wraps around to the
			// list's size of 2 (3·6148914691236517206 = 2⁶⁴ + 2): the
			// table would claim a window of 6e18 steps over 2 values.
			name: "snapshots window overflowing",
			md:   map[string]string{"window": "6148914691236517206", "channels": "3", "nodes": "1", "normalizer": `{"mean":[0,0,0],"std":[1,1,1]}`},
			fields: []arrow.Field{{Name: "snapshot", Type: i64}, {Name: "node", Type: i32},
				{Name: "x", Type: arrow.FixedSizeListOf(2, f64)}, {Name: "y", Type: arrow.FixedSizeListOf(3, f64)}},
			read: func(p string) error { _, err := ReadSnapshots(p); return err },
			want: `metadata "window"`,
		},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".arrow")
		writeRaw(t, path, tc.md, tc.fields, noop)
		err := tc.read(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want it to name %s and contain %q", tc.name, err, path, tc.want)
		}
	}
}

func TestReadForeignPredictions(t *testing.T) {
	// A file written by another tool: no metadata, reordered columns and a
	// null prediction.
	path := filepath.Join(t.TempDir(), "foreign.arrow")
	f64 := arrow.PrimitiveTypes.Float64
	writeRaw(t, path, nil, []arrow.Field{
		{Name: "true_speed", Type: f64, Nullable: true},
		{Name: "node", Type: arrow.PrimitiveTypes.Int32},
		{Name: "pred_speed", Type: f64, Nullable: true},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64},
	}, func(b *array.RecordBuilder) {
		b.Field(0).(*array.Float64Builder).AppendValues([]float64{60, 0}, nil)
		b.Field(1).(*array.Int32Builder).AppendValues([]int32{0, 1}, nil)
		b.Field(2).(*array.Float64Builder).AppendValues([]float64{59, 0}, []bool{true, false})
		b.Field(3).(*array.Int64Builder).AppendValues([]int64{12, 12}, nil)
		b.Field(4).(*array.Int64Builder).AppendValues([]int64{0, 0}, nil)
	})
	p, err := ReadPredictions(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Channels, []string{"speed"}) || !slices.Equal(p.Node, []int32{0, 1}) ||
		!floatsEqual(p.Pred, []float64{59, math.NaN()}) || !floatsEqual(p.True, []float64{60, 0}) {
		t.Errorf("got %+v", p)
	}
}

// TestReadCorruptBufferLength: one corrupt byte in a buffer's length in
// the record batch's metadata asked the IPC reader for a 4 GB (and, one
// byte further, a 1 TB) buffer, which it allocates before checking
// anything: "fatal error: out of memory", which no recover catches. The
// read now fails naming the file: checkMessage refuses a buffer outside
// its body, and the reader's allocator any buffer over its bound
// (TestReadAllocatorBound).
func TestReadCorruptBufferLength(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pred.arrow")
	if err := WritePredictions(path, testPredictions()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The first buffer of ten int64 values is described by an
	// 8-byte-aligned length of 80, after its offset, in the first record
	// batch's metadata.
	at := -1
	for k := 8; k+8 <= len(raw); k += 8 {
		if binary.LittleEndian.Uint64(raw[k:]) == 80 {
			at = k
			break
		}
	}
	if at < 0 {
		t.Fatal("no buffer length of 80 in the file: arrow's layout changed")
	}
	for _, b := range []int{3, 4} { // 0xff000050, 0xff00000050
		bad := append([]byte(nil), raw...)
		bad[at+b] = 0xff
		p := filepath.Join(t.TempDir(), "bad.arrow")
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadPredictions(p)
		if err == nil || !strings.Contains(err.Error(), "buffer 1 at byte") || !strings.Contains(err.Error(), p) {
			t.Errorf("byte %d of the length at %d set to 0xff: error %v", b, at, err)
		}
	}
}

// TestReadAllocatorBound: the reader's allocator, the bound on what
// checkMessage cannot check (a compressed buffer's uncompressed length),
// refuses one allocation over
// 64 times the file or 1 GiB, whichever is more, by a panic that names
// the sizes.
func TestReadAllocatorBound(t *testing.T) {
	for _, tc := range []struct {
		file, n    int64
		compressed bool
		refused    bool
	}{
		{2578, 1 << 30, true, false},
		{2578, 1<<30 + 1, true, true},
		{1 << 30, 64 << 30, true, false},
		{1 << 30, 64<<30 + 1, true, true},
		{2578, 1 << 20, false, false},
		{2578, 1<<20 + 1, false, true},
		{8 << 20, 8<<20 + 64, false, false},
		{8 << 20, 8<<20 + 65, false, true},
	} {
		func() {
			defer func() {
				r := recover()
				if got := r != nil; got != tc.refused || (got && !strings.Contains(fmt.Sprint(r), "a buffer of")) {
					t.Errorf("allocating %d bytes for a file of %d (compressed %v): recovered %v, want refused %v", tc.n, tc.file, tc.compressed, r, tc.refused)
				}
			}()
			a := readAllocator(tc.file, tc.compressed).(boundedAllocator)
			a.check(int(tc.n)) // the bound alone: nothing is allocated
		}()
	}
}

// TestReadMutatedFiles sets every byte of a small file of each kind, one
// at a time, to 0x00, 0xff and itself with the top bit flipped, and reads
// it: each must come back as data or as an error, never as a panic out of
// the reader or an allocation that ends the process. Before the footer
// check and the bounded allocator, 51 of the predictions file's bytes set
// to 0xff ended it ("fatal error: out of memory").
func TestReadMutatedFiles(t *testing.T) {
	dir := t.TempDir()
	s := newTestSet(t, 12, 3, 2, 4)
	files := map[string]func(string) error{}
	snap := filepath.Join(dir, "snap.arrow")
	if err := WriteSnapshots(snap, s, Range{0, s.Len()}); err != nil {
		t.Fatal(err)
	}
	files[snap] = func(p string) error { _, err := ReadSnapshots(p); return err }
	emb := filepath.Join(dir, "emb.arrow")
	if err := WriteEmbeddings(emb, "h", []int{0, 1}, 3, 4, make([]float64, 24)); err != nil {
		t.Fatal(err)
	}
	files[emb] = func(p string) error { _, _, _, _, err := ReadEmbeddings(p); return err }
	pred := filepath.Join(dir, "pred.arrow")
	if err := WritePredictions(pred, testPredictions()); err != nil {
		t.Fatal(err)
	}
	files[pred] = func(p string) error { _, err := ReadPredictions(p); return err }
	bad := filepath.Join(dir, "bad.arrow")
	for path, read := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		refused := 0
		for i := range raw {
			for _, v := range []byte{0, 0xff, raw[i] ^ 0x80} {
				b := append([]byte(nil), raw...)
				b[i] = v
				if err := os.WriteFile(bad, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := read(bad); err != nil {
					refused++
					if !strings.Contains(err.Error(), bad) {
						t.Fatalf("%s byte %d = %#x: error %q does not name the file", filepath.Base(path), i, v, err)
					}
				}
			}
		}
		t.Logf("%s: %d bytes, %d of %d mutants refused", filepath.Base(path), len(raw), refused, 3*len(raw))
	}
}

// TestReadBlockBeyondFile: the footer's record batch blocks give where
// each batch's message lies in the file and how long its metadata and
// body are (File.fbs); the IPC reader allocates both lengths before it
// reads. A body length of a gigabyte in a 2 KB file was a gigabyte
// allocated; a block beyond the file is now refused from the footer.
func TestReadBlockBeyondFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pred.arrow")
	if err := WritePredictions(path, testPredictions()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint32(raw[len(raw)-10:]))
	footer := raw[len(raw)-10-n : len(raw)-10]
	tab := flatbuffers.Table{Bytes: footer, Pos: flatbuffers.GetUOffsetT(footer)}
	o := flatbuffers.UOffsetT(tab.Offset(10)) // Footer.recordBatches: [Block]
	if o == 0 || tab.VectorLen(o) != 1 {
		t.Fatal("no record batch block in the footer: arrow's layout changed")
	}
	blk := len(raw) - 10 - n + int(tab.Vector(o)) // Block{offset int64, metaDataLength int32, pad, bodyLength int64}
	for _, tc := range []struct {
		name string
		at   int
		v    uint64
		size int
	}{
		{"body of a gigabyte", 16, 1<<30 - 8, 8},
		{"metadata of a gigabyte", 8, 1<<30 - 8, 4},
		{"offset past the end", 0, uint64(len(raw)) &^ 7, 8},
		{"negative body", 16, 1<<64 - 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]byte(nil), raw...)
			if tc.size == 4 {
				binary.LittleEndian.PutUint32(bad[blk+tc.at:], uint32(tc.v))
			} else {
				binary.LittleEndian.PutUint64(bad[blk+tc.at:], tc.v)
			}
			readRefused(t, bad, "record batch 0")
		})
	}
}

// readRefused writes the corrupt predictions file bad and checks that
// ReadPredictions refuses it with an error naming the file and want,
// allocating no more than 64 MB on the way.
func readRefused(t *testing.T, bad []byte, want string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "bad.arrow")
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadPredictions(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one naming %s and %s", err, p, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("reading a %d-byte file allocated %d MB", len(bad), got>>20)
	}
}

// TestReadBufferBeyondBody: a buffer's length in a record batch's
// metadata is allocated by the IPC reader before it reads the buffer from
// the batch's body. The reader's allocator refuses only more than 1 GiB
// (TestReadCorruptBufferLength), so a length just under it cost a
// gigabyte for a 2.5 KB file; a buffer outside its body is now refused
// before the reader sees it.
func TestReadBufferBeyondBody(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pred.arrow")
	if err := WritePredictions(path, testPredictions()); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// As in TestReadCorruptBufferLength: the first buffer, ten int64
	// values, has the 8-byte length 80 after its 8-byte offset.
	at := -1
	for k := 8; k+8 <= len(raw); k += 8 {
		if binary.LittleEndian.Uint64(raw[k:]) == 80 {
			at = k
			break
		}
	}
	if at < 0 {
		t.Fatal("no buffer length of 80 in the file: arrow's layout changed")
	}
	for _, tc := range []struct {
		name  string
		at    int
		value uint64
	}{
		{"length just under a gigabyte", at, 1<<30 - 64},
		{"length past the body", at, 4096},
		{"negative length", at, 1<<64 - 8},
		{"offset past the body", at - 8, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]byte(nil), raw...)
			binary.LittleEndian.PutUint64(bad[tc.at:], tc.value)
			readRefused(t, bad, "record batch 0: buffer 1")
		})
	}
}

// TestReadCompressedForeign reads predictions written compressed, as
// pyarrow's feather writer does by default (LZ4), with a dictionary
// column the readers ignore, over several batches: the footer and message
// checks must take every such valid file.
func TestReadCompressedForeign(t *testing.T) {
	f64 := arrow.PrimitiveTypes.Float64
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64}, {Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "node", Type: arrow.PrimitiveTypes.Int32}, {Name: "pred_speed", Type: f64}, {Name: "true_speed", Type: f64},
		{Name: "road", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	for _, tc := range []struct {
		name  string
		codec []ipc.Option
	}{{"lz4", []ipc.Option{ipc.WithLZ4()}}, {"zstd", []ipc.Option{ipc.WithZstd()}}, {"uncompressed", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "foreign.arrow")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			mem := memory.NewGoAllocator()
			w, err := ipc.NewFileWriter(f, append(tc.codec, ipc.WithSchema(schema), ipc.WithAllocator(mem))...)
			if err != nil {
				t.Fatal(err)
			}
			b := array.NewRecordBuilder(mem, schema)
			defer b.Release()
			const batches, rows = 3, 4000
			for k := 0; k < batches; k++ {
				for i := 0; i < rows; i++ {
					b.Field(0).(*array.Int64Builder).Append(int64(k))
					b.Field(1).(*array.Int64Builder).Append(int64(k + 12))
					b.Field(2).(*array.Int32Builder).Append(int32(i))
					b.Field(3).(*array.Float64Builder).Append(60)
					b.Field(4).(*array.Float64Builder).Append(float64(i % 7))
					b.Field(5).(*array.BinaryDictionaryBuilder).AppendString("I-80")
				}
				rec := b.NewRecord()
				err := w.Write(rec)
				rec.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			p, err := ReadPredictions(path)
			if err != nil {
				t.Fatal(err)
			}
			if p.Rows() != batches*rows || p.Node[rows+5] != 5 || p.True[rows+5] != 5 || p.Pred[0] != 60 {
				t.Errorf("read %d rows, node %d, true %v, pred %v", p.Rows(), p.Node[rows+5], p.True[rows+5], p.Pred[0])
			}
		})
	}
}
