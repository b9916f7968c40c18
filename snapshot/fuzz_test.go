package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// FuzzReadArrow gives each of the Arrow IPC readers the fuzzer's file,
// seeded with a small file of each kind and a compressed foreign one. Each
// must return a table whose columns agree in length, or an error naming
// the file: never a panic out of arrow's reader, nor an allocation that
// the file's size does not justify.
func FuzzReadArrow(f *testing.F) {
	dir := f.TempDir()
	s := newTestSet(f, 6, 2, 2, 2)
	for i, write := range []func(string) error{
		func(p string) error { return WriteSnapshots(p, s, Range{0, 2}) },
		func(p string) error { return WriteEmbeddings(p, "h", []int{0, 1}, 2, 2, make([]float64, 8)) },
		func(p string) error { return WritePredictions(p, testPredictions()) },
		writeCompressedPredictions,
	} {
		p := filepath.Join(dir, fmt.Sprintf("seed%d.arrow", i))
		if err := write(p); err != nil {
			f.Fatal(err)
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(dir, "fuzz.arrow")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		named := func(err error) {
			t.Helper()
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the file", err)
			}
		}
		if tab, err := ReadSnapshots(path); err != nil {
			named(err)
		} else if rows := tab.Rows(); len(tab.Node) != rows || len(tab.X) != rows*tab.Window*tab.Norm.Inputs() || len(tab.Y) != rows*tab.Channels {
			t.Fatalf("snapshots: %d rows, %d nodes, %d x (window %d, %d inputs), %d y (%d channels)", rows, len(tab.Node), len(tab.X), tab.Window, tab.Norm.Inputs(), len(tab.Y), tab.Channels)
		}
		if snaps, nodes, d, data, err := ReadEmbeddings(path); err != nil {
			named(err)
		} else if len(nodes) != len(snaps) || len(data) != len(snaps)*d {
			t.Fatalf("embeddings: %d snapshots, %d nodes, %d values of dimension %d", len(snaps), len(nodes), len(data), d)
		}
		if p, err := ReadPredictions(path); err != nil {
			named(err)
		} else if rows, n := p.Rows(), p.Rows()*len(p.Channels); len(p.Step) != rows || len(p.Node) != rows || len(p.Pred) != n || len(p.True) != n {
			t.Fatalf("predictions: %d rows, %d steps, %d nodes, %d pred and %d true of %d channels", rows, len(p.Step), len(p.Node), len(p.Pred), len(p.True), len(p.Channels))
		}
	})
}

// writeCompressedPredictions writes a small LZ4-compressed predictions
// file with a dictionary column, as pyarrow's feather writer might.
func writeCompressedPredictions(path string) error {
	f64 := arrow.PrimitiveTypes.Float64
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64}, {Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "node", Type: arrow.PrimitiveTypes.Int32}, {Name: "pred_speed", Type: f64}, {Name: "true_speed", Type: f64},
		{Name: "road", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}},
	}, nil)
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer file.Close()
	mem := memory.NewGoAllocator()
	w, err := ipc.NewFileWriter(file, ipc.WithLZ4(), ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(1)
		b.Field(1).(*array.Int64Builder).Append(13)
		b.Field(2).(*array.Int32Builder).Append(int32(i))
		b.Field(3).(*array.Float64Builder).Append(60)
		b.Field(4).(*array.Float64Builder).AppendNull()
		b.Field(5).(*array.BinaryDictionaryBuilder).AppendString("I-80")
	}
	rec := b.NewRecord()
	err = w.Write(rec)
	rec.Release()
	if err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return file.Close()
}
