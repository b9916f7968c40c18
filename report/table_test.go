package report

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/pemsforecast/sdgnn/snapshot"
)

// readParquet reads the predictions Parquet file at path as an Arrow
// table, the way a data frame library reads it.
func readParquet(t *testing.T, path string) arrow.Table {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tab.Release)
	return tab
}

// TestPredictionFilesAgree checks that the Parquet predictions hold what
// the Arrow IPC ones hold, column by column (a missing truth's error null
// in both), and that in both every column of a channel whose unit is
// known carries it as its "unit" metadata.
func TestPredictionFilesAgree(t *testing.T) {
	d := tinyDocument([]string{"flow", "speed"}, SDGNN, "GRU-GCN")
	d.Units = []string{"veh/5 min", ""} // the second not known
	d.truth[3] = 0                      // a missing reading: null errors
	dir := t.TempDir()
	if err := d.Write(dir); err != nil {
		t.Fatal(err)
	}
	ipc, err := ReadPredictions(filepath.Join(dir, FilePredictions))
	if err != nil {
		t.Fatal(err)
	}
	tab := readParquet(t, filepath.Join(dir, FileParquet))
	if got, want := int(tab.NumRows()), len(ipc.Snapshot); got != want {
		t.Fatalf("Parquet file has %d rows, the Arrow file %d", got, want)
	}
	wantUnit := map[string]string{"true_flow": "veh/5 min", "pred_sdgnn_flow": "veh/5 min", "err_sdgnn_flow": "veh/5 min",
		"pred_gru_gcn_flow": "veh/5 min", "err_gru_gcn_flow": "veh/5 min"}
	f, err := os.Open(filepath.Join(dir, FilePredictions))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := snapshot.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for name, sc := range map[string]*arrow.Schema{"Arrow": r.Schema(), "Parquet": tab.Schema()} {
		got := map[string]string{}
		for _, fd := range sc.Fields() {
			if i := fd.Metadata.FindKey(snapshot.MetaUnit); i >= 0 {
				got[fd.Name] = fd.Metadata.Values()[i]
			}
		}
		if len(got) != len(wantUnit) {
			t.Errorf("%s file's unit metadata %v, want %v", name, got, wantUnit)
		}
		for k, v := range wantUnit {
			if got[k] != v {
				t.Errorf("%s file: column %s has unit %q, want %q", name, k, got[k], v)
			}
		}
	}
	nulls := 0
	for i, fd := range tab.Schema().Fields() {
		var vals []float64
		for _, chunk := range tab.Column(i).Data().Chunks() {
			switch a := chunk.(type) {
			case *array.Float64:
				for j := range a.Len() {
					v := a.Value(j)
					if a.IsNull(j) {
						v, nulls = math.NaN(), nulls+1
					}
					vals = append(vals, v)
				}
			case *array.Int64:
				for _, v := range a.Int64Values() {
					vals = append(vals, float64(v))
				}
			case *array.Int32:
				for _, v := range a.Int32Values() {
					vals = append(vals, float64(v))
				}
			default:
				t.Fatalf("Parquet column %s is %s", fd.Name, a.DataType())
			}
		}
		var want []float64
		switch fd.Name {
		case "snapshot":
			for _, v := range ipc.Snapshot {
				want = append(want, float64(v))
			}
		case "step":
			for _, v := range ipc.Step {
				want = append(want, float64(v))
			}
		case "node":
			for _, v := range ipc.Node {
				want = append(want, float64(v))
			}
		default:
			want = ipc.Columns[fd.Name]
		}
		if !slices.EqualFunc(vals, want, func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }) {
			t.Errorf("column %s: Parquet %v, Arrow %v", fd.Name, vals, want)
		}
	}
	if nulls != 2 { // one missing truth, two models
		t.Errorf("%d nulls in the Parquet file, want 2", nulls)
	}
}

// TestReadPredictionsDuplicateColumn checks that a predictions file with
// a float column name twice is refused naming it: its values were read
// into one column of twice the rows.
func TestReadPredictionsDuplicateColumn(t *testing.T) {
	f64 := arrow.PrimitiveTypes.Float64
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64}, {Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "node", Type: arrow.PrimitiveTypes.Int32}, {Name: "true_flow", Type: f64}, {Name: "true_flow", Type: f64},
	}, nil)
	path := filepath.Join(t.TempDir(), "dup.arrow")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(sc), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range 3 {
		b.Field(0).(*array.Int64Builder).Append(0)
		b.Field(1).(*array.Int64Builder).Append(3)
		b.Field(2).(*array.Int32Builder).Append(int32(i))
		b.Field(3).(*array.Float64Builder).Append(1)
		b.Field(4).(*array.Float64Builder).Append(2)
	}
	rec := b.NewRecord()
	defer rec.Release()
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := ReadPredictions(path)
	if err == nil {
		t.Fatalf("read columns %v, %d values of true_flow for %d rows; want an error", p.Names, len(p.Columns["true_flow"]), len(p.Snapshot))
	}
	if want := `read predictions ` + path + `: duplicate column "true_flow"`; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want it to contain %q", err, want)
	}
}

// TestReadPredictionsBuffersRetargeted reads the predictions of a small
// document with one byte of its record batch's metadata changed, found by
// FuzzReadPredictions: the offset of the buffers vector, which then reads
// as empty, so that the footer checks had no buffer to check while arrow's
// reader, which reads buffers by index without the vector's length, took
// their lengths from the bytes beyond and allocated 256 MiB for a 3 KB
// file. The read must fail without allocating more than the file
// justifies.
func TestReadPredictionsBuffersRetargeted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pred.arrow")
	if err := tinyDocument([]string{"flow", "speed"}, SDGNN, "GRU-GCN").writeArrow(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const at = 1008 // the record batch's buffers offset: 944 + 8 + 56
	if len(raw) != 3050 || raw[at] != 0x14 {
		t.Fatalf("file of %d bytes, byte %d %#x: the layout changed; find the buffers offset anew", len(raw), at, raw[at])
	}
	raw[at] = 0x51
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = ReadPredictions(path)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want one naming %s", err, path)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
		t.Errorf("allocated %d MiB for a file of %d bytes", n>>20, len(raw))
	}
}
