package report

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Predictions is the report's per-snapshot, per-node table: one row per
// (snapshot, node) with the target's series step, the observed values and,
// per model, the prediction and its error.
//
// Columns, in order: snapshot int64, step int64, node int32, sensor utf8
// (the sensor's ID; only where the sensors have IDs), then for each
// channel c true_<c> float64, then for each model m and channel c
// pred_<m>_<c> and err_<m>_<c> (prediction − truth; null where the truth is
// a missing reading, 0). Model names are lower-cased with non-alphanumerics
// as "_" (GRU-GCN → gru_gcn). Where the channel's unit is known, its
// columns carry it as their "unit" metadata (snapshot.MetaUnit), in the
// Parquet file too (its stored Arrow schema).
type Predictions struct {
	Snapshot, Step []int64
	Node           []int32
	// Sensor is each row's sensor's ID, from the sensor column; nil where
	// the file has none (sensors without IDs).
	Sensor []string
	// Columns holds every float column by name; err_ columns hold NaN for
	// null.
	Columns map[string][]float64
	// Names lists the float columns in schema order.
	Names []string
}

// Slug returns the column-name form of a model name.
func Slug(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// schema returns the predictions schema of d.
func (d *Document) schema() *arrow.Schema {
	f64 := arrow.PrimitiveTypes.Float64
	fields := []arrow.Field{
		{Name: "snapshot", Type: arrow.PrimitiveTypes.Int64},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "node", Type: arrow.PrimitiveTypes.Int32},
	}
	if d.SensorIDs != nil {
		fields = append(fields, arrow.Field{Name: "sensor", Type: arrow.BinaryTypes.String})
	}
	unit := make([]arrow.Metadata, len(d.Channels))
	for c := range d.Channels {
		if c < len(d.Units) && d.Units[c] != "" {
			unit[c] = arrow.NewMetadata([]string{snapshot.MetaUnit}, []string{d.Units[c]})
		}
	}
	for i, c := range d.Channels {
		fields = append(fields, arrow.Field{Name: "true_" + c, Type: f64, Metadata: unit[i]})
	}
	for _, m := range d.Models {
		for i, c := range d.Channels {
			fields = append(fields,
				arrow.Field{Name: "pred_" + Slug(m.Name) + "_" + c, Type: f64, Metadata: unit[i]},
				arrow.Field{Name: "err_" + Slug(m.Name) + "_" + c, Type: f64, Nullable: true, Metadata: unit[i]})
		}
	}
	md := arrow.NewMetadata([]string{"dataset", "split"}, []string{d.Dataset, d.Part})
	return arrow.NewSchema(fields, &md)
}

// records calls each with the predictions table in records of at most
// batch rows; each record is released after the call.
func (d *Document) records(batch int, each func(arrow.Record) error) error {
	sc := d.schema()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	n, c := d.Nodes, len(d.Channels)
	rows := d.Snapshots * n
	first := 3 // the first channel's column
	if d.SensorIDs != nil {
		first = 4
	}
	for lo := 0; lo < rows; lo += batch {
		hi := min(lo+batch, rows)
		for r := lo; r < hi; r++ {
			s := r / n
			b.Field(0).(*array.Int64Builder).Append(d.snaps[s])
			b.Field(1).(*array.Int64Builder).Append(d.snaps[s] + int64(d.window))
			b.Field(2).(*array.Int32Builder).Append(int32(r % n))
			if d.SensorIDs != nil {
				b.Field(3).(*array.StringBuilder).Append(d.SensorIDs[r%n])
			}
			for ch := 0; ch < c; ch++ {
				b.Field(first + ch).(*array.Float64Builder).Append(d.truth[r*c+ch])
			}
			col := first + c
			for _, m := range d.Models {
				for ch := 0; ch < c; ch++ {
					p, y := m.pred[r*c+ch], d.truth[r*c+ch]
					b.Field(col).(*array.Float64Builder).Append(p)
					eb := b.Field(col + 1).(*array.Float64Builder)
					if evaluation.Masked(y) {
						eb.AppendNull()
					} else {
						eb.Append(p - y)
					}
					col += 2
				}
			}
		}
		rec := b.NewRecord()
		err := each(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes path atomically (checkpoint.WriteAtomic) with write:
// a write that fails or is cut short leaves the file that was at path, if
// any, as it was. write gets the temporary file, which it must not close
// (the error names path).
func writeFile(path string, write func(io.WriteSeeker) error) error {
	return checkpoint.WriteAtomic(path, func(w io.Writer) error {
		f, ok := w.(*os.File)
		if !ok {
			return fmt.Errorf("report: %T is not a file", w)
		}
		return write(unclosed{f})
	})
}

// unclosed is a file that its writer cannot close: pqarrow's writer closes
// a sink that can be, and WriteAtomic must still sync and rename it.
// Arrow's file writer asks where it is, so Seek stays.
type unclosed struct{ f *os.File }

func (u unclosed) Write(p []byte) (int, error) { return u.f.Write(p) }

func (u unclosed) Seek(offset int64, whence int) (int64, error) { return u.f.Seek(offset, whence) }

// writeArrow writes the predictions as an Arrow IPC file (Feather v2).
func (d *Document) writeArrow(path string) error {
	return writeFile(path, func(f io.WriteSeeker) error {
		w, err := ipc.NewFileWriter(f, ipc.WithSchema(d.schema()), ipc.WithAllocator(memory.DefaultAllocator))
		if err != nil {
			return err
		}
		if err := d.records(1<<16, w.Write); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	})
}

// writeParquet writes the predictions as a Snappy-compressed Parquet file,
// with the Arrow schema stored (pqarrow.WithStoreSchema) so that Arrow
// readers (pyarrow, pandas, Go's pqarrow) get the columns' units back.
func (d *Document) writeParquet(path string) error {
	return writeFile(path, func(f io.WriteSeeker) error {
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
		w, err := pqarrow.NewFileWriter(d.schema(), f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return err
		}
		if err := d.records(1<<16, w.WriteBuffered); err != nil {
			w.Close()
			return err
		}
		return w.Close()
	})
}

// ReadPredictions reads a predictions file written by Document.Write (the
// Arrow IPC one).
func ReadPredictions(path string) (p *Predictions, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read predictions: %w", err)
	}
	defer f.Close()
	// The IPC reader panics on some corrupt files (see
	// snapshot.NewFileReader).
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("read predictions %s: corrupt Arrow IPC file: %v", path, r)
		}
	}()
	r, err := snapshot.NewFileReader(f)
	if err != nil {
		return nil, fmt.Errorf("read predictions %s: %w", path, err)
	}
	defer r.Close()
	sc := r.Schema()
	if sc.NumFields() < 3 || sc.Field(0).Name != "snapshot" || sc.Field(1).Name != "step" || sc.Field(2).Name != "node" {
		return nil, fmt.Errorf("read predictions %s: want columns snapshot, step, node first, have %v", path, sc)
	}
	p = &Predictions{Columns: map[string][]float64{}}
	first := 3 // the first float column
	if sc.NumFields() > 3 && sc.Field(3).Name == "sensor" {
		if sc.Field(3).Type.ID() != arrow.STRING {
			return nil, fmt.Errorf("read predictions %s: column sensor is %s, want utf8", path, sc.Field(3).Type)
		}
		first = 4
	}
	for i := first; i < sc.NumFields(); i++ {
		if sc.Field(i).Type.ID() != arrow.FLOAT64 {
			return nil, fmt.Errorf("read predictions %s: column %q is %s, want float64", path, sc.Field(i).Name, sc.Field(i).Type)
		}
		if _, dup := p.Columns[sc.Field(i).Name]; dup {
			return nil, fmt.Errorf("read predictions %s: duplicate column %q", path, sc.Field(i).Name)
		}
		p.Columns[sc.Field(i).Name] = nil
		p.Names = append(p.Names, sc.Field(i).Name)
	}
	for k := 0; k < r.NumRecords(); k++ {
		rec, err := r.Record(k)
		if err != nil {
			return nil, fmt.Errorf("read predictions %s: record %d: %w", path, k, err)
		}
		s, ok1 := rec.Column(0).(*array.Int64)
		st, ok2 := rec.Column(1).(*array.Int64)
		nd, ok3 := rec.Column(2).(*array.Int32)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("read predictions %s: snapshot, step and node must be int64, int64, int32", path)
		}
		p.Snapshot = append(p.Snapshot, s.Int64Values()...)
		p.Step = append(p.Step, st.Int64Values()...)
		p.Node = append(p.Node, nd.Int32Values()...)
		if first == 4 {
			ids := rec.Column(3).(*array.String)
			for j := 0; j < ids.Len(); j++ {
				p.Sensor = append(p.Sensor, ids.Value(j))
			}
		}
		for i, name := range p.Names {
			col := rec.Column(first + i).(*array.Float64)
			for j := 0; j < col.Len(); j++ {
				v := col.Value(j)
				if col.IsNull(j) {
					v = nan
				}
				p.Columns[name] = append(p.Columns[name], v)
			}
		}
	}
	if len(p.Snapshot) == 0 {
		return nil, errors.New("read predictions " + path + ": no rows")
	}
	return p, nil
}
