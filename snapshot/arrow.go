package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/pemsforecast/sdgnn/checkpoint"
)

// Arrow IPC files written by this package use the Arrow IPC file format,
// which is Feather v2, so they can be opened with pyarrow.feather,
// pandas.read_feather or polars.read_ipc. Rows are written in record
// batches of at most batchRows rows so that large splits never need one
// giant in-memory batch.

// batchRows is the maximum number of rows per record batch. It is a
// variable so that tests can exercise multi-batch files cheaply.
var batchRows = 1 << 16

// Schema metadata keys.
const (
	metaWindow     = "window"
	metaChannels   = "channels"
	metaNodes      = "nodes"
	metaNormalizer = "normalizer"
	metaDataset    = "dataset"
	metaPart       = "split"
	metaPrefix     = "prefix"
	metaDim        = "dim"
	// metaChannelNames and metaChannelUnits are a snapshots file's
	// channel names and units, JSON arrays ("channels" holds their count).
	metaChannelNames = "channel_names"
	metaChannelUnits = "channel_units"
)

// Column names shared by the tables.
const (
	colSnapshot = "snapshot"
	colNode     = "node"
	colStep     = "step"
	colX        = "x"
	colY        = "y"
	predPrefix  = "pred_"
	truePrefix  = "true_"
)

// WriteSnapshots writes the snapshots of r in s to an Arrow IPC file at
// path, one row per (snapshot, node) in snapshot-major order, so that
// analysts can inspect exactly what the model sees. The columns are
//
//	snapshot int64                                    snapshot index
//	node     int32                                    node index
//	sensor   utf8                                     the sensor's ID (only with SnapshotLabels.SensorIDs)
//	x        fixed_size_list<float64>[Window*Inputs]   model inputs, step-major then input (channels, then calendar inputs if any)
//	y        fixed_size_list<float64>[Channels]        raw target (original scale, 0 = missing)
//
// and the schema metadata holds window, channels and nodes as decimal
// strings and the normaliser as JSON under "normalizer" (and, written by
// WriteSnapshotsLabelled, what the channels are).
//
// WriteSnapshots returns an error if r is empty or not within [0, s.Len()).
// The file is written atomically: on error, a file at path is left as it
// was.
func WriteSnapshots(path string, s *Set, r Range) error {
	if s == nil {
		return fmt.Errorf("snapshot: write snapshots %s: %w", path, errNilSet)
	}
	if r.Len() == 0 || r.Start < 0 || r.End > s.Len() {
		return fmt.Errorf("snapshot: write snapshots %s: range [%d, %d) empty or outside [0, %d)", path, r.Start, r.End, s.Len())
	}
	return WriteSnapshotsOf(path, s, Part{Range: r}.Snapshots())
}

// WriteSnapshotsOf is WriteSnapshots for the given snapshot indices (a
// Part's Snapshots, which need not be contiguous), in their order. It
// returns an error if there are none or one is outside [0, s.Len()).
func WriteSnapshotsOf(path string, s *Set, snapshots []int) error {
	return WriteSnapshotsLabelled(path, s, snapshots, SnapshotLabels{})
}

// SnapshotLabels say what a snapshots file holds, for a reader of the
// file alone: each is left out of the file where not given.
type SnapshotLabels struct {
	// Channels and Units are the channel names ("flow", "occupancy",
	// "speed") and the units of their raw values (y), one per channel
	// ("" where unknown), as pems.ChannelUnits gives them: the
	// "channel_names" and "channel_units" metadata, JSON arrays.
	Channels, Units []string
	// Dataset and Part name the dataset and the split's part (train, val
	// or test): the "dataset" and "split" metadata, as a predictions
	// file has them.
	Dataset, Part string
	// SensorIDs are the sensors' IDs in node order, where the dataset
	// has them (pems.Dataset.SensorIDs): a column sensor (utf8) after
	// node names each row's sensor by its ID.
	SensorIDs []string
}

// WriteSnapshotsLabelled is WriteSnapshotsOf writing l in the metadata;
// it returns an error if l's channels or units are given but not one per
// channel of s.
func WriteSnapshotsLabelled(path string, s *Set, snapshots []int, l SnapshotLabels) error {
	if s == nil {
		return fmt.Errorf("snapshot: write snapshots %s: %w", path, errNilSet)
	}
	if len(snapshots) == 0 {
		return fmt.Errorf("snapshot: write snapshots %s: no snapshots", path)
	}
	for _, sn := range snapshots {
		if sn < 0 || sn >= s.Len() {
			return fmt.Errorf("snapshot: write snapshots %s: snapshot %d outside [0, %d)", path, sn, s.Len())
		}
	}
	rows, ok := mulSizes(len(snapshots), s.Nodes)
	if !ok {
		return fmt.Errorf("snapshot: write snapshots %s: %d snapshots of %d nodes overflow", path, len(snapshots), s.Nodes)
	}
	normJSON, err := json.Marshal(s.Norm)
	if err != nil {
		return fmt.Errorf("snapshot: write snapshots %s: encode normalizer: %w", path, err)
	}
	xLen := s.Window * s.Inputs()
	if xLen > math.MaxInt32 {
		return fmt.Errorf("snapshot: write snapshots %s: window×channels %d too large for a fixed-size list", path, xLen)
	}
	keys := []string{metaWindow, metaChannels, metaNodes, metaNormalizer}
	vals := []string{strconv.Itoa(s.Window), strconv.Itoa(s.Channels), strconv.Itoa(s.Nodes), string(normJSON)}
	for _, kv := range []struct {
		key  string
		list []string
	}{{metaChannelNames, l.Channels}, {metaChannelUnits, l.Units}} {
		if kv.list == nil {
			continue
		}
		if len(kv.list) != s.Channels {
			return fmt.Errorf("snapshot: write snapshots %s: %d %s for %d channels", path, len(kv.list), kv.key, s.Channels)
		}
		j, err := json.Marshal(kv.list)
		if err != nil {
			return fmt.Errorf("snapshot: write snapshots %s: encode %s: %w", path, kv.key, err)
		}
		keys, vals = append(keys, kv.key), append(vals, string(j))
	}
	keys, vals = withDatasetPart(keys, vals, l.Dataset, l.Part)
	if err := checkSensorIDs(l.SensorIDs, s.Nodes); err != nil {
		return fmt.Errorf("snapshot: write snapshots %s: %w", path, err)
	}
	md := arrow.NewMetadata(keys, vals)
	fields := []arrow.Field{
		{Name: colSnapshot, Type: arrow.PrimitiveTypes.Int64},
		{Name: colNode, Type: arrow.PrimitiveTypes.Int32},
	}
	if l.SensorIDs != nil {
		fields = append(fields, sensorField)
	}
	iX := len(fields)
	fields = append(fields,
		arrow.Field{Name: colX, Type: arrow.FixedSizeListOf(int32(xLen), arrow.PrimitiveTypes.Float64)},
		arrow.Field{Name: colY, Type: arrow.FixedSizeListOf(int32(s.Channels), arrow.PrimitiveTypes.Float64)})
	schema := arrow.NewSchema(fields, &md)

	nodes, ch := s.Nodes, s.Channels
	err = writeTable(path, schema, rows, func(b *array.RecordBuilder, lo, hi int) {
		sb := b.Field(0).(*array.Int64Builder)
		nb := b.Field(1).(*array.Int32Builder)
		xb := b.Field(iX).(*array.FixedSizeListBuilder)
		xv := xb.ValueBuilder().(*array.Float64Builder)
		yb := b.Field(iX + 1).(*array.FixedSizeListBuilder)
		yv := yb.ValueBuilder().(*array.Float64Builder)
		xv.Reserve((hi - lo) * xLen)
		yv.Reserve((hi - lo) * ch)
		step := make([]float64, s.Inputs())
		for k := lo; k < hi; k++ {
			sn, i := snapshots[k/nodes], k%nodes
			sb.Append(int64(sn))
			nb.Append(int32(i))
			if l.SensorIDs != nil {
				b.Field(2).(*array.StringBuilder).Append(l.SensorIDs[i])
			}
			xb.Append(true)
			for t := 0; t < s.Window; t++ {
				s.nodeInputs(step, sn, t, i)
				xv.AppendValues(step, nil)
			}
			yb.Append(true)
			off := ((sn+s.Window)*nodes + i) * ch
			yv.AppendValues(s.raw[off:off+ch], nil)
		}
	})
	if err != nil {
		return fmt.Errorf("snapshot: write snapshots %s: %w", path, err)
	}
	return nil
}

// SnapshotTable is the content of a file written by WriteSnapshots.
type SnapshotTable struct {
	// Window, Channels and Nodes come from the schema metadata.
	Window, Channels, Nodes int
	// Labels are what the file says its channels, dataset and part are;
	// empty (nil) where it does not.
	Labels SnapshotLabels
	// Norm is the normaliser the inputs were scaled with.
	Norm Normalizer
	// Snapshot and Node identify each row.
	Snapshot []int64
	Node     []int32
	// Sensor names each row's sensor by its ID, from the sensor column;
	// nil where the file has none.
	Sensor []string
	// X holds the model inputs, Rows()×(Window*Norm.Inputs()) row-major,
	// step-major then input within a row: the normalised channels, then
	// the calendar inputs where Norm has them.
	X []float64
	// Y holds the raw targets, Rows()×Channels row-major.
	Y []float64
}

// Rows returns the number of rows of t.
func (t *SnapshotTable) Rows() int { return len(t.Snapshot) }

// ReadSnapshots reads a file written by WriteSnapshots. It returns an error
// naming the file and the offending column or metadata key if the file is
// not a valid Arrow IPC file or lacks the expected columns or metadata.
func ReadSnapshots(path string) (*SnapshotTable, error) {
	var (
		tab                 SnapshotTable
		iS, iN, iX, iY, iID int
	)
	check := func(sc *arrow.Schema) error {
		var err error
		if tab.Window, err = metaInt(sc, metaWindow); err != nil {
			return err
		}
		if tab.Channels, err = metaInt(sc, metaChannels); err != nil {
			return err
		}
		if tab.Nodes, err = metaInt(sc, metaNodes); err != nil {
			return err
		}
		nj, err := metaString(sc, metaNormalizer)
		if err != nil {
			return err
		}
		if err := json.Unmarshal([]byte(nj), &tab.Norm); err != nil {
			return fmt.Errorf("metadata %q: %w", metaNormalizer, err)
		}
		if err := tab.Norm.Validate(tab.Channels); err != nil {
			return fmt.Errorf("metadata %q: %w", metaNormalizer, err)
		}
		md := sc.Metadata()
		for _, kv := range []struct {
			key  string
			list *[]string
		}{{metaChannelNames, &tab.Labels.Channels}, {metaChannelUnits, &tab.Labels.Units}} {
			i := md.FindKey(kv.key)
			if i < 0 {
				continue
			}
			if err := json.Unmarshal([]byte(md.Values()[i]), kv.list); err != nil {
				return fmt.Errorf("metadata %q: %w", kv.key, err)
			}
			if len(*kv.list) != tab.Channels {
				return fmt.Errorf("metadata %q names %d channels, the file has %d", kv.key, len(*kv.list), tab.Channels)
			}
		}
		tab.Labels.Dataset, _ = metaString(sc, metaDataset) // "" where not recorded
		tab.Labels.Part, _ = metaString(sc, metaPart)
		if iS, err = column(sc, colSnapshot, arrow.INT64); err != nil {
			return err
		}
		if iN, err = column(sc, colNode, arrow.INT32); err != nil {
			return err
		}
		if iID, err = optionalSensorColumn(sc); err != nil {
			return err
		}
		// The list of a row's inputs has an int32 length: a window whose
		// product with the inputs exceeds it (or wraps around, to match a
		// short list) is not one this file was written with.
		xLen, ok := mulSizes(tab.Window, tab.Norm.Inputs())
		if !ok || xLen > math.MaxInt32 {
			return fmt.Errorf("metadata %q is %d: %d steps of %d inputs exceed a fixed-size list", metaWindow, tab.Window, tab.Window, tab.Norm.Inputs())
		}
		if iX, err = floatListColumn(sc, colX, xLen); err != nil {
			return err
		}
		iY, err = floatListColumn(sc, colY, tab.Channels)
		return err
	}
	each := func(rec arrow.Record) error {
		var err error
		if tab.Snapshot, err = appendInt64(tab.Snapshot, rec, iS); err != nil {
			return err
		}
		if tab.Node, err = appendInt32(tab.Node, rec, iN); err != nil {
			return err
		}
		if tab.Sensor, err = appendSensors(tab.Sensor, rec, iID); err != nil {
			return err
		}
		tab.X = appendFloatList(tab.X, rec.Column(iX).(*array.FixedSizeList))
		tab.Y = appendFloatList(tab.Y, rec.Column(iY).(*array.FixedSizeList))
		return nil
	}
	if err := readTable(path, check, each); err != nil {
		return nil, fmt.Errorf("snapshot: read snapshots %s: %w", path, err)
	}
	return &tab, nil
}

// WriteEmbeddings writes node embeddings to an Arrow IPC file at path, one
// row per (snapshot, node) in snapshot-major order. The columns are
// snapshot int64, node int32 and then one float64 column per dimension
// named prefix0 … prefix{d-1} (for example h0 … h15), which keeps the file
// directly usable as a data frame. data is row-major
// (len(snapshots)*nodes)×d with row b*nodes+i holding node i of
// snapshots[b]. The prefix and d are also stored in the schema metadata.
//
// WriteEmbeddings returns an error if nodes or d is not positive or the
// length of data does not match. The file is written atomically: on error,
// a file at path is left as it was.
func WriteEmbeddings(path, prefix string, snapshots []int, nodes, d int, data []float64) error {
	return WriteEmbeddingsNamed(path, prefix, snapshots, nil, nodes, d, data)
}

// WriteEmbeddingsNamed is WriteEmbeddings for sensors with IDs (in node
// order; nil: none): a column sensor (utf8) after node names each row's
// sensor by its ID.
func WriteEmbeddingsNamed(path, prefix string, snapshots []int, sensorIDs []string, nodes, d int, data []float64) error {
	if err := checkSensorIDs(sensorIDs, nodes); err != nil {
		return fmt.Errorf("snapshot: write embeddings %s: %w", path, err)
	}
	if nodes <= 0 || d <= 0 {
		return fmt.Errorf("snapshot: write embeddings %s: non-positive size (nodes=%d d=%d)", path, nodes, d)
	}
	if nodes > math.MaxInt32 {
		return fmt.Errorf("snapshot: write embeddings %s: %d nodes exceed int32 node ids", path, nodes)
	}
	rows, ok := mulSizes(len(snapshots), nodes)
	if n, ok2 := mulSizes(rows, d); !ok || !ok2 || len(data) != n {
		return fmt.Errorf("snapshot: write embeddings %s: data has %d values, want %d snapshots × %d nodes × %d dims", path, len(data), len(snapshots), nodes, d)
	}
	fields := make([]arrow.Field, 0, 3+d)
	fields = append(fields,
		arrow.Field{Name: colSnapshot, Type: arrow.PrimitiveTypes.Int64},
		arrow.Field{Name: colNode, Type: arrow.PrimitiveTypes.Int32},
	)
	if sensorIDs != nil {
		fields = append(fields, sensorField)
	}
	first := len(fields) // the first dimension's column
	for j := 0; j < d; j++ {
		fields = append(fields, arrow.Field{Name: prefix + strconv.Itoa(j), Type: arrow.PrimitiveTypes.Float64})
	}
	md := arrow.NewMetadata(
		[]string{metaPrefix, metaDim, metaNodes},
		[]string{prefix, strconv.Itoa(d), strconv.Itoa(nodes)},
	)
	schema := arrow.NewSchema(fields, &md)
	err := writeTable(path, schema, rows, func(b *array.RecordBuilder, lo, hi int) {
		sb := b.Field(0).(*array.Int64Builder)
		nb := b.Field(1).(*array.Int32Builder)
		for k := lo; k < hi; k++ {
			sb.Append(int64(snapshots[k/nodes]))
			nb.Append(int32(k % nodes))
			if sensorIDs != nil {
				b.Field(2).(*array.StringBuilder).Append(sensorIDs[k%nodes])
			}
		}
		for j := 0; j < d; j++ {
			fb := b.Field(first + j).(*array.Float64Builder)
			fb.Reserve(hi - lo)
			for k := lo; k < hi; k++ {
				fb.UnsafeAppend(data[k*d+j])
			}
		}
	})
	if err != nil {
		return fmt.Errorf("snapshot: write embeddings %s: %w", path, err)
	}
	return nil
}

// ReadEmbeddings reads a file written by WriteEmbeddings and returns the
// snapshot and node of each row, the embedding dimension d and the
// embeddings, row-major rows×d. The dimension columns are found from the
// "prefix" metadata or, for files rewritten by other tools, from the first
// float64 column whose name ends in 0. Null values read as NaN.
func ReadEmbeddings(path string) (snapshots []int64, nodes []int32, d int, data []float64, err error) {
	var iS, iN int
	var dims []int
	check := func(sc *arrow.Schema) error {
		var err error
		if iS, err = column(sc, colSnapshot, arrow.INT64); err != nil {
			return err
		}
		if iN, err = column(sc, colNode, arrow.INT32); err != nil {
			return err
		}
		prefix, err := metaString(sc, metaPrefix)
		if err != nil {
			found := false
			for _, f := range sc.Fields() {
				if f.Type.ID() == arrow.FLOAT64 && strings.HasSuffix(f.Name, "0") {
					prefix, found = strings.TrimSuffix(f.Name, "0"), true
					break
				}
			}
			if !found {
				return errors.New("no embedding columns (float64 columns named <prefix>0, <prefix>1, ...)")
			}
		}
		want := -1
		if _, err := metaString(sc, metaDim); err == nil {
			if want, err = metaInt(sc, metaDim); err != nil {
				return err
			}
			// The metadata's dimension is the file's: a column past it
			// is not read as one more dimension.
			if name := prefix + strconv.Itoa(want); len(sc.FieldIndices(name)) != 0 {
				return fmt.Errorf("column %q beyond the %d dimensions of metadata %q", name, want, metaDim)
			}
		}
		for j := 0; ; j++ {
			name := prefix + strconv.Itoa(j)
			if len(sc.FieldIndices(name)) == 0 && (want < 0 || j >= want) {
				break
			}
			i, err := column(sc, name, arrow.FLOAT64)
			if err != nil {
				return err
			}
			dims = append(dims, i)
		}
		if len(dims) == 0 {
			return fmt.Errorf("missing column %q", prefix+"0")
		}
		return nil
	}
	each := func(rec arrow.Record) error {
		var err error
		if snapshots, err = appendInt64(snapshots, rec, iS); err != nil {
			return err
		}
		if nodes, err = appendInt32(nodes, rec, iN); err != nil {
			return err
		}
		data = appendInterleaved(data, rec, dims)
		return nil
	}
	if err := readTable(path, check, each); err != nil {
		return nil, nil, 0, nil, fmt.Errorf("snapshot: read embeddings %s: %w", path, err)
	}
	return snapshots, nodes, len(dims), data, nil
}

// MetaUnit is the key of a column's metadata that gives the unit of its
// values ("veh/5 min", "km/h"), in the prediction files written here and
// by package report.
const MetaUnit = "unit"

// withDatasetPart appends to the metadata keys and vals the "dataset" and
// "split" of a file's rows, each where given.
func withDatasetPart(keys, vals []string, dataset, part string) ([]string, []string) {
	for _, kv := range [][2]string{{metaDataset, dataset}, {metaPart, part}} {
		if kv[1] != "" {
			keys, vals = append(keys, kv[0]), append(vals, kv[1])
		}
	}
	return keys, vals
}

// fieldMeta returns the value of f's metadata key, if f has it.
func fieldMeta(f arrow.Field, key string) (string, bool) {
	if i := f.Metadata.FindKey(key); i >= 0 {
		return f.Metadata.Values()[i], true
	}
	return "", false
}

// PredictionTable holds model predictions and ground truth in the original
// scale, one row per (snapshot, node).
type PredictionTable struct {
	// Channels are the channel names, e.g. "flow", "occupancy", "speed";
	// they name the pred_<c> and true_<c> columns.
	Channels []string
	// Units, if given, are the units of the channels' values, one per
	// channel ("" where unknown), as pems.ChannelUnits gives them; they
	// are stored as the "unit" metadata of the channel's columns, so that
	// a reader of the file alone knows what a value of 250 is.
	Units []string
	// Dataset and Part, if given, name the dataset and the split's part
	// (train, val or test) the rows come from; they are stored as the
	// "dataset" and "split" metadata, as the report's predictions have them.
	Dataset, Part string
	// Snapshot is the snapshot index and Step the series step of the
	// target of each row.
	Snapshot, Step []int64
	// Node is the node index of each row.
	Node []int32
	// Sensor, if given, is the ID of each row's sensor (where the sensors
	// have IDs: Los-loop's detectors): a column sensor (utf8) after node.
	Sensor []string
	// Pred and True are Rows()×len(Channels) row-major predictions and
	// observed values; a true value of 0 means missing.
	Pred, True []float64
}

// Rows returns the number of rows of p.
func (p *PredictionTable) Rows() int { return len(p.Snapshot) }

// validate checks that the fields of p have consistent lengths and that
// the channel names give distinct column names.
func (p *PredictionTable) validate() error {
	if p == nil {
		return errors.New("nil PredictionTable")
	}
	if len(p.Channels) == 0 {
		return errors.New("no channels")
	}
	seen := make(map[string]bool, len(p.Channels))
	for _, c := range p.Channels {
		if c == "" {
			return errors.New("empty channel name")
		}
		if seen[c] {
			return fmt.Errorf("duplicate channel %q", c)
		}
		seen[c] = true
	}
	if len(p.Units) != 0 && len(p.Units) != len(p.Channels) {
		return fmt.Errorf("%d units for %d channels", len(p.Units), len(p.Channels))
	}
	rows := len(p.Snapshot)
	if len(p.Step) != rows || len(p.Node) != rows || p.Sensor != nil && len(p.Sensor) != rows {
		return fmt.Errorf("column lengths differ: snapshot %d, step %d, node %d, sensor %d", rows, len(p.Step), len(p.Node), len(p.Sensor))
	}
	n, ok := mulSizes(rows, len(p.Channels))
	if !ok || len(p.Pred) != n || len(p.True) != n {
		return fmt.Errorf("pred has %d and true %d values, want %d rows × %d channels", len(p.Pred), len(p.True), rows, len(p.Channels))
	}
	return nil
}

// WritePredictions writes p to an Arrow IPC file at path with columns
// snapshot int64, step int64, node int32, sensor utf8 (where p.Sensor is
// given) and then pred_<c>, true_<c>
// float64 for each channel c, so that errors can be analysed per node, step
// and channel in a data frame. The channel order is also stored as JSON in
// the "channels" metadata, and each channel's unit, where p.Units gives
// one, as the "unit" metadata of its two columns; p.Dataset and p.Part,
// where given, as the "dataset" and "split" metadata.
//
// WritePredictions returns an error if the lengths of p's fields are
// inconsistent or channel names are empty or repeated. The file is written
// atomically: on error, a file at path is left as it was.
func WritePredictions(path string, p *PredictionTable) error {
	if err := p.validate(); err != nil {
		return fmt.Errorf("snapshot: write predictions %s: %w", path, err)
	}
	ch := len(p.Channels)
	fields := []arrow.Field{
		{Name: colSnapshot, Type: arrow.PrimitiveTypes.Int64},
		{Name: colStep, Type: arrow.PrimitiveTypes.Int64},
		{Name: colNode, Type: arrow.PrimitiveTypes.Int32},
	}
	if p.Sensor != nil {
		fields = append(fields, sensorField)
	}
	first := len(fields) // the first channel's columns
	for i, c := range p.Channels {
		var md arrow.Metadata
		if len(p.Units) > 0 && p.Units[i] != "" {
			md = arrow.NewMetadata([]string{MetaUnit}, []string{p.Units[i]})
		}
		fields = append(fields,
			arrow.Field{Name: predPrefix + c, Type: arrow.PrimitiveTypes.Float64, Metadata: md},
			arrow.Field{Name: truePrefix + c, Type: arrow.PrimitiveTypes.Float64, Metadata: md},
		)
	}
	names := make(map[string]bool, len(fields))
	for _, f := range fields {
		if names[f.Name] {
			return fmt.Errorf("snapshot: write predictions %s: duplicate column %q", path, f.Name)
		}
		names[f.Name] = true
	}
	chJSON, err := json.Marshal(p.Channels)
	if err != nil {
		return fmt.Errorf("snapshot: write predictions %s: encode channels: %w", path, err)
	}
	keys, vals := withDatasetPart([]string{metaChannels}, []string{string(chJSON)}, p.Dataset, p.Part)
	md := arrow.NewMetadata(keys, vals)
	schema := arrow.NewSchema(fields, &md)
	err = writeTable(path, schema, p.Rows(), func(b *array.RecordBuilder, lo, hi int) {
		b.Field(0).(*array.Int64Builder).AppendValues(p.Snapshot[lo:hi], nil)
		b.Field(1).(*array.Int64Builder).AppendValues(p.Step[lo:hi], nil)
		b.Field(2).(*array.Int32Builder).AppendValues(p.Node[lo:hi], nil)
		if p.Sensor != nil {
			b.Field(3).(*array.StringBuilder).AppendValues(p.Sensor[lo:hi], nil)
		}
		for c := 0; c < ch; c++ {
			pb := b.Field(first + 2*c).(*array.Float64Builder)
			tb := b.Field(first + 1 + 2*c).(*array.Float64Builder)
			pb.Reserve(hi - lo)
			tb.Reserve(hi - lo)
			for k := lo; k < hi; k++ {
				pb.UnsafeAppend(p.Pred[k*ch+c])
				tb.UnsafeAppend(p.True[k*ch+c])
			}
		}
	})
	if err != nil {
		return fmt.Errorf("snapshot: write predictions %s: %w", path, err)
	}
	return nil
}

// ReadPredictions reads a file written by WritePredictions, its sensor
// column, where it has one, into Sensor. The channels
// come from the "channels" metadata or, if it is absent, from the pred_<c>
// columns in schema order; each needs a matching true_<c> column. The
// units come from the pred_<c> columns' "unit" metadata (nil where no
// column has one), the dataset and part from the "dataset" and "split"
// metadata ("" where absent). Null values read as NaN.
func ReadPredictions(path string) (*PredictionTable, error) {
	var (
		p               PredictionTable
		iS, iT, iN, iID int
		iPred, iTrue    []int
	)
	check := func(sc *arrow.Schema) error {
		var err error
		if iS, err = column(sc, colSnapshot, arrow.INT64); err != nil {
			return err
		}
		if iT, err = column(sc, colStep, arrow.INT64); err != nil {
			return err
		}
		if iN, err = column(sc, colNode, arrow.INT32); err != nil {
			return err
		}
		if iID, err = optionalSensorColumn(sc); err != nil {
			return err
		}
		if cj, err := metaString(sc, metaChannels); err == nil {
			if err := json.Unmarshal([]byte(cj), &p.Channels); err != nil {
				return fmt.Errorf("metadata %q: %w", metaChannels, err)
			}
		} else {
			for _, f := range sc.Fields() {
				if c, ok := strings.CutPrefix(f.Name, predPrefix); ok {
					p.Channels = append(p.Channels, c)
				}
			}
		}
		if len(p.Channels) == 0 {
			return fmt.Errorf("no %s<channel> columns", predPrefix)
		}
		for _, c := range p.Channels {
			i, err := column(sc, predPrefix+c, arrow.FLOAT64)
			if err != nil {
				return err
			}
			j, err := column(sc, truePrefix+c, arrow.FLOAT64)
			if err != nil {
				return err
			}
			iPred, iTrue = append(iPred, i), append(iTrue, j)
		}
		p.Units = make([]string, len(p.Channels))
		known := false
		for k, i := range iPred {
			if u, ok := fieldMeta(sc.Field(i), MetaUnit); ok {
				p.Units[k], known = u, true
			}
		}
		if !known {
			p.Units = nil
		}
		p.Dataset, _ = metaString(sc, metaDataset) // "" where not recorded
		p.Part, _ = metaString(sc, metaPart)
		return nil
	}
	each := func(rec arrow.Record) error {
		var err error
		if p.Snapshot, err = appendInt64(p.Snapshot, rec, iS); err != nil {
			return err
		}
		if p.Step, err = appendInt64(p.Step, rec, iT); err != nil {
			return err
		}
		if p.Node, err = appendInt32(p.Node, rec, iN); err != nil {
			return err
		}
		if p.Sensor, err = appendSensors(p.Sensor, rec, iID); err != nil {
			return err
		}
		p.Pred = appendInterleaved(p.Pred, rec, iPred)
		p.True = appendInterleaved(p.True, rec, iTrue)
		return nil
	}
	if err := readTable(path, check, each); err != nil {
		return nil, fmt.Errorf("snapshot: read predictions %s: %w", path, err)
	}
	return &p, nil
}

// writeTable writes rows rows to a new Arrow IPC file at path in record
// batches of at most batchRows rows; fill appends rows [lo, hi) to the
// builder. The file is written atomically (checkpoint.WriteAtomic): a
// write that fails or is cut short leaves the file that was at path, if
// any, as it was, and no partial file.
func writeTable(path string, schema *arrow.Schema, rows int, fill func(b *array.RecordBuilder, lo, hi int)) error {
	return checkpoint.WriteAtomic(path, func(f io.Writer) error {
		// arrow's file writer asks where it is; WriteAtomic's temporary
		// file can say.
		ws, ok := f.(io.WriteSeeker)
		if !ok {
			return fmt.Errorf("%T cannot seek, as arrow's file writer needs", f)
		}
		mem := memory.NewGoAllocator()
		w, err := ipc.NewFileWriter(ws, ipc.WithSchema(schema), ipc.WithAllocator(mem))
		if err != nil {
			return err
		}
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		for lo := 0; lo < rows; lo += batchRows {
			hi := min(lo+batchRows, rows)
			b.Reserve(hi - lo)
			fill(b, lo, hi)
			rec := b.NewRecord()
			err := w.Write(rec)
			rec.Release()
			if err != nil {
				w.Close()
				return err
			}
		}
		return w.Close()
	})
}

// readTable opens the Arrow IPC file at path, validates its schema with
// check and passes each record batch to each. Records are only valid during
// the call to each.
func readTable(path string, check func(*arrow.Schema) error, each func(arrow.Record) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// The IPC reader trusts the flatbuffer metadata of the file and may
	// panic on a corrupt one; report that as an error instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt Arrow IPC file: %v", r)
		}
	}()
	rd, err := NewFileReader(f)
	if err != nil {
		return err
	}
	defer rd.Close()
	if err := check(rd.Schema()); err != nil {
		return err
	}
	for i := 0; i < rd.NumRecords(); i++ {
		rec, err := rd.Record(i)
		if err != nil {
			return fmt.Errorf("record batch %d: %w", i, err)
		}
		if err := each(rec); err != nil {
			return fmt.Errorf("record batch %d: %w", i, err)
		}
	}
	return nil
}

// NewFileReader returns arrow's IPC file reader for f, guarded against the
// corrupt files that made it allocate more than the machine has, which
// ends the process whatever recovers ("fatal error: out of memory"): the
// footer's schema, its blocks and their batches' buffers are checked
// first (checkFooter), and the reader's
// allocator refuses any one buffer over 64 times the file or 1 GiB,
// whichever is more, by a panic. arrow/go v15's reader panics on other
// corrupt files too, so the caller must recover panics from it and from
// its records, as an error about the file.
func NewFileReader(f *os.File) (*ipc.FileReader, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	compressed, err := checkFooter(f, fi.Size())
	if err != nil {
		return nil, err
	}
	rd, err := ipc.NewFileReader(f, ipc.WithAllocator(readAllocator(fi.Size(), compressed)))
	if err != nil {
		return nil, fmt.Errorf("not a valid Arrow IPC (Feather v2) file: %w", err)
	}
	return rd, nil
}

// readAllocator returns the allocator for an Arrow IPC reader of a file of
// size bytes. It panics, with a message naming the sizes, on any one
// allocation larger than 64 times the file or 1 GiB, whichever is more,
// for a file with compressed batches, and larger than the file (or 1 MiB)
// for one without. The IPC reader allocates each buffer at the length the
// file's metadata gives, before it checks anything: one corrupt byte there
// asked for a terabyte, and one that moved a batch's buffers vector (which
// the reader reads by index, past its length) 256 MiB for a 3 KB file. An
// uncompressed buffer is never larger than its file; the factor leaves
// room for compressed ones.
func readAllocator(size int64, compressed bool) memory.Allocator {
	limit := max(size+64, 1<<20) // 64: the allocator's alignment
	if compressed {
		limit = max(64*size, 1<<30)
	}
	return boundedAllocator{Allocator: memory.NewGoAllocator(), limit: limit, file: size}
}

type boundedAllocator struct {
	memory.Allocator
	limit, file int64
}

func (a boundedAllocator) check(n int) {
	if int64(n) > a.limit || n < 0 {
		panic(fmt.Sprintf("a buffer of %d bytes in a file of %d", n, a.file))
	}
}

func (a boundedAllocator) Allocate(n int) []byte {
	a.check(n)
	return a.Allocator.Allocate(n)
}

func (a boundedAllocator) Reallocate(n int, b []byte) []byte {
	a.check(n)
	return a.Allocator.Reallocate(n, b)
}

// column returns the index of the single column called name, checking
// that its type has the given ID.
func column(sc *arrow.Schema, name string, want arrow.Type) (int, error) {
	idx := sc.FieldIndices(name)
	switch {
	case len(idx) == 0:
		return 0, fmt.Errorf("missing column %q", name)
	case len(idx) > 1:
		return 0, fmt.Errorf("duplicate column %q", name)
	}
	if got := sc.Field(idx[0]).Type; got.ID() != want {
		return 0, fmt.Errorf("column %q has type %s, want %s", name, got, strings.ToLower(want.String()))
	}
	return idx[0], nil
}

// floatListColumn returns the index of the column called name, checking
// that it is a fixed_size_list<float64> of size n.
func floatListColumn(sc *arrow.Schema, name string, n int) (int, error) {
	i, err := column(sc, name, arrow.FIXED_SIZE_LIST)
	if err != nil {
		return 0, err
	}
	t := sc.Field(i).Type.(*arrow.FixedSizeListType)
	if int(t.Len()) != n || t.Elem().ID() != arrow.FLOAT64 {
		return 0, fmt.Errorf("column %q has type %s, want fixed_size_list<float64>[%d]", name, t, n)
	}
	return i, nil
}

// metaString returns the schema metadata value of key.
func metaString(sc *arrow.Schema, key string) (string, error) {
	md := sc.Metadata()
	i := md.FindKey(key)
	if i < 0 {
		return "", fmt.Errorf("missing metadata key %q", key)
	}
	return md.Values()[i], nil
}

// metaInt returns the schema metadata value of key as a positive integer.
func metaInt(sc *arrow.Schema, key string) (int, error) {
	s, err := metaString(sc, key)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("metadata %q: %w", key, err)
	}
	if v <= 0 {
		return 0, fmt.Errorf("metadata %q is %d, want positive", key, v)
	}
	return v, nil
}

// appendInt64 appends the int64 column i of rec to dst; nulls are an error
// because the column identifies rows.
func appendInt64(dst []int64, rec arrow.Record, i int) ([]int64, error) {
	col := rec.Column(i).(*array.Int64)
	if col.NullN() > 0 {
		return dst, fmt.Errorf("column %q has %d nulls", rec.ColumnName(i), col.NullN())
	}
	return append(dst, col.Int64Values()...), nil
}

// appendInt32 appends the int32 column i of rec to dst; nulls are an error
// because the column identifies rows.
func appendInt32(dst []int32, rec arrow.Record, i int) ([]int32, error) {
	col := rec.Column(i).(*array.Int32)
	if col.NullN() > 0 {
		return dst, fmt.Errorf("column %q has %d nulls", rec.ColumnName(i), col.NullN())
	}
	return append(dst, col.Int32Values()...), nil
}

// appendFloatList appends the flattened values of a fixed_size_list<float64>
// array to dst; null lists and null elements become NaN.
func appendFloatList(dst []float64, a *array.FixedSizeList) []float64 {
	n := a.Len()
	if n == 0 {
		return dst
	}
	vals := a.ListValues().(*array.Float64)
	start, _ := a.ValueOffsets(0)
	_, end := a.ValueOffsets(n - 1)
	size := int(end-start) / n
	base := len(dst)
	dst = append(dst, vals.Float64Values()[start:end]...)
	if a.NullN() == 0 && vals.NullN() == 0 {
		return dst
	}
	for k := 0; k < n; k++ {
		for j := 0; j < size; j++ {
			if a.IsNull(k) || vals.IsNull(int(start)+k*size+j) {
				dst[base+k*size+j] = math.NaN()
			}
		}
	}
	return dst
}

// appendInterleaved appends the float64 columns cols of rec to dst as a
// row-major rows×len(cols) block; nulls become NaN.
func appendInterleaved(dst []float64, rec arrow.Record, cols []int) []float64 {
	n := int(rec.NumRows())
	base := len(dst)
	dst = append(dst, make([]float64, n*len(cols))...)
	for j, ci := range cols {
		col := rec.Column(ci).(*array.Float64)
		vals := col.Float64Values()
		for k := 0; k < n; k++ {
			v := vals[k]
			if col.IsNull(k) {
				v = math.NaN()
			}
			dst[base+k*len(cols)+j] = v
		}
	}
	return dst
}
