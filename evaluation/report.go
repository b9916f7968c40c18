package evaluation

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Report holds the metrics of a forecast over a split: overall, per channel,
// per node, and per chronological chunk of the split.
//
// The chunks form the staleness report: with S snapshots and K chunks, chunk
// k holds the snapshots [k*S/K, (k+1)*S/K) (integer division), so a model
// trained on older data can be seen to degrade over the split.
type Report struct {
	Overall    Metrics   `json:"overall"`
	PerChannel []Metrics `json:"per_channel"` // index = channel
	// ChannelNames optionally names the channels, in channel order; nil
	// when the channels were not named.
	ChannelNames []string `json:"channel_names,omitempty"`
	// ChannelUnits optionally gives the units of the channels' readings,
	// in channel order, in which MAE and RMSE are; nil when not known.
	ChannelUnits []string  `json:"channel_units,omitempty"`
	PerNode      []Metrics `json:"per_node"` // index = node
	Chunks       []Metrics `json:"chunks"`   // index = chunk, chronological
	// ChunkMAEStd holds, per chunk, the population standard deviation over
	// that chunk's snapshots of the per-snapshot MAE: the spread about the
	// chunk's MAE, which pools its readings (and so weighs a snapshot by its
	// unmasked pairs), in staleness plots. Snapshots without any unmasked pair are left out; a chunk with
	// no such snapshot has 0. It is NaN (JSON null) when a snapshot of the
	// chunk had a non-finite prediction.
	ChunkMAEStd []float64 `json:"chunk_mae_std"`
	// MAPEFloor is the floor below which truths were left out of MAPE (0:
	// none); see Accumulator.MAPEFloor.
	MAPEFloor float64 `json:"mape_floor"`
	// Completeness breaks the metrics down by how complete the forecasts'
	// inputs were (Stratify); absent where the caller did not compute it
	// (Build does not: it needs the windows' gaps).
	Completeness *Breakdown `json:"completeness,omitempty"`
}

// reportPlain is Report without its methods, so that MarshalJSON and
// UnmarshalJSON can use the default encoding for all other fields.
type reportPlain Report

// reportJSON shadows ChunkMAEStd with a NaN-safe element type.
type reportJSON struct {
	reportPlain
	ChunkMAEStd []jsonFloat `json:"chunk_mae_std"`
}

// MarshalJSON implements json.Marshaler. NaN and ±Inf, which JSON cannot
// represent, are written as null.
func (r Report) MarshalJSON() ([]byte, error) {
	v := reportJSON{reportPlain: reportPlain(r)}
	if r.ChunkMAEStd != nil {
		v.ChunkMAEStd = make([]jsonFloat, len(r.ChunkMAEStd))
		for i, s := range r.ChunkMAEStd {
			v.ChunkMAEStd[i] = jsonFloat(s)
		}
	}
	return json.Marshal(v)
}

// UnmarshalJSON implements json.Unmarshaler. Null numbers are read as NaN,
// the inverse of MarshalJSON.
func (r *Report) UnmarshalJSON(data []byte) error {
	var v reportJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("evaluation: decoding report: %w", err)
	}
	*r = Report(v.reportPlain)
	r.ChunkMAEStd = nil
	if v.ChunkMAEStd != nil {
		r.ChunkMAEStd = make([]float64, len(v.ChunkMAEStd))
		for i, s := range v.ChunkMAEStd {
			r.ChunkMAEStd[i] = float64(s)
		}
	}
	return nil
}

// ReportBuilder accumulates the predictions of a split snapshot by snapshot
// and produces its Report. Predictions may be added in any order.
type ReportBuilder struct {
	snapshots, nodes, channels, chunks int

	overall    Accumulator
	perChannel []Accumulator
	perNode    []Accumulator
	perChunk   []Accumulator
	perSnap    []Accumulator
	chunkOf    []int // chunk index of each snapshot
	names      []string
	mapeFloor  float64
}

// NewReportBuilder returns a builder for a split of the given number of
// snapshots, nodes and channels, reported in the given number of
// chronological chunks. All sizes must be positive and chunks must not
// exceed snapshots, so that every chunk holds at least one snapshot.
func NewReportBuilder(snapshots, nodes, channels, chunks int) (*ReportBuilder, error) {
	switch {
	case snapshots <= 0 || nodes <= 0 || channels <= 0 || chunks <= 0:
		return nil, fmt.Errorf("evaluation: report sizes must be positive: snapshots=%d nodes=%d channels=%d chunks=%d",
			snapshots, nodes, channels, chunks)
	case chunks > snapshots:
		return nil, fmt.Errorf("evaluation: %d chunks exceed %d snapshots", chunks, snapshots)
	}
	b := &ReportBuilder{
		snapshots:  snapshots,
		nodes:      nodes,
		channels:   channels,
		chunks:     chunks,
		perChannel: make([]Accumulator, channels),
		perNode:    make([]Accumulator, nodes),
		perChunk:   make([]Accumulator, chunks),
		perSnap:    make([]Accumulator, snapshots),
		chunkOf:    make([]int, snapshots),
	}
	for k := range chunks {
		lo, hi := chunkBounds(k, snapshots, chunks)
		for s := lo; s < hi; s++ {
			b.chunkOf[s] = k
		}
	}
	return b, nil
}

// chunkBounds returns the half-open snapshot range [lo, hi) of chunk k of
// the given number of chunks over the given number of snapshots.
func chunkBounds(k, snapshots, chunks int) (lo, hi int) {
	return k * snapshots / chunks, (k + 1) * snapshots / chunks
}

// SetMAPEFloor leaves truths below floor out of every MAPE of the report
// (see Accumulator.MAPEFloor). Call it before adding predictions.
func (b *ReportBuilder) SetMAPEFloor(floor float64) error {
	if floor < 0 || math.IsNaN(floor) || math.IsInf(floor, 0) {
		return fmt.Errorf("evaluation: MAPE floor %g: must be a finite number ≥ 0", floor)
	}
	b.overall.MAPEFloor = floor
	for _, acc := range [][]Accumulator{b.perChannel, b.perNode, b.perChunk, b.perSnap} {
		for i := range acc {
			acc[i].MAPEFloor = floor
		}
	}
	b.mapeFloor = floor
	return nil
}

// SetChannelNames names the channels in the Report, for example
// "flow", "occupancy", "speed". The number of names must equal the number of
// channels; nil removes the names.
func (b *ReportBuilder) SetChannelNames(names []string) error {
	if names != nil && len(names) != b.channels {
		return fmt.Errorf("evaluation: %d channel names for %d channels", len(names), b.channels)
	}
	b.names = append([]string(nil), names...)
	if names == nil {
		b.names = nil
	}
	return nil
}

// Add records one prediction. snapshot is the ordinal 0..snapshots-1 of the
// snapshot within the split; node and channel index the sensor and the
// channel. Masking follows Accumulator.Add.
func (b *ReportBuilder) Add(snapshot, node, channel int, pred, truth float64) error {
	switch {
	case snapshot < 0 || snapshot >= b.snapshots:
		return fmt.Errorf("evaluation: snapshot %d out of range [0, %d)", snapshot, b.snapshots)
	case node < 0 || node >= b.nodes:
		return fmt.Errorf("evaluation: node %d out of range [0, %d)", node, b.nodes)
	case channel < 0 || channel >= b.channels:
		return fmt.Errorf("evaluation: channel %d out of range [0, %d)", channel, b.channels)
	}
	b.add(snapshot, node, channel, pred, truth)
	return nil
}

func (b *ReportBuilder) add(snapshot, node, channel int, pred, truth float64) {
	b.overall.Add(pred, truth)
	b.perChannel[channel].Add(pred, truth)
	b.perNode[node].Add(pred, truth)
	b.perChunk[b.chunkOf[snapshot]].Add(pred, truth)
	b.perSnap[snapshot].Add(pred, truth)
}

// AddSnapshot records a whole snapshot. pred and truth are row-major
// (node, channel) and must both have length nodes*channels.
func (b *ReportBuilder) AddSnapshot(snapshot int, pred, truth []float64) error {
	if snapshot < 0 || snapshot >= b.snapshots {
		return fmt.Errorf("evaluation: snapshot %d out of range [0, %d)", snapshot, b.snapshots)
	}
	want := b.nodes * b.channels
	if len(pred) != want || len(truth) != want {
		return fmt.Errorf("evaluation: snapshot %d: got %d predictions and %d truth values, want %d (%d nodes × %d channels)",
			snapshot, len(pred), len(truth), want, b.nodes, b.channels)
	}
	for i, p := range pred {
		b.add(snapshot, i/b.channels, i%b.channels, p, truth[i])
	}
	return nil
}

// Report returns the metrics of everything recorded so far. It does not
// change the builder, so it may be called repeatedly.
func (b *ReportBuilder) Report() Report {
	r := Report{
		Overall:     b.overall.Metrics(),
		PerChannel:  metricsOf(b.perChannel),
		PerNode:     metricsOf(b.perNode),
		Chunks:      metricsOf(b.perChunk),
		ChunkMAEStd: make([]float64, b.chunks),
	}
	if b.names != nil {
		r.ChannelNames = append([]string(nil), b.names...)
	}
	r.MAPEFloor = b.mapeFloor
	for k := range b.chunks {
		lo, hi := chunkBounds(k, b.snapshots, b.chunks)
		r.ChunkMAEStd[k] = maeStd(b.perSnap[lo:hi])
	}
	return r
}

func metricsOf(acc []Accumulator) []Metrics {
	m := make([]Metrics, len(acc))
	for i, a := range acc {
		m[i] = a.Metrics()
	}
	return m
}

// maeStd returns the population standard deviation of the MAE of the
// accumulators that hold at least one unmasked pair.
func maeStd(snaps []Accumulator) float64 {
	var sum float64
	n := 0
	for _, a := range snaps {
		m := a.Metrics()
		if m.Count == 0 {
			continue
		}
		sum += m.MAE
		n++
	}
	if n == 0 {
		return 0
	}
	mean := sum / float64(n)
	var ss float64
	for _, a := range snaps {
		m := a.Metrics()
		if m.Count == 0 {
			continue
		}
		d := m.MAE - mean
		ss += float64(d * d)
	}
	return math.Sqrt(ss / float64(n))
}

// Table writes a short human-readable Markdown summary of r to w: the
// overall and per-channel metrics, then the per-chunk metrics with the MAE
// standard deviation. Per-node metrics are left out; they are available in
// the Report itself.
func (r Report) Table(w io.Writer) error {
	ew := &errWriter{w: w}
	unit := r.Unit()
	ew.printf("| scope | MAE%s | RMSE%s | MAPE (%%) | count |\n", unitSuffix(unit), unitSuffix(unit))
	ew.printf("|---|---:|---:|---:|---:|\n")
	row := func(name string, m Metrics) {
		ew.printf("| %s | %.4f | %.4f | %.2f | %d |\n", name, m.MAE, m.RMSE, m.MAPE, m.Count)
	}
	overall := "overall"
	if unit == "" && len(r.ChannelUnits) > 1 {
		overall = "overall (channels' units pooled)"
	}
	row(overall, r.Overall)
	for c, m := range r.PerChannel {
		name := fmt.Sprintf("channel %d", c)
		if c < len(r.ChannelNames) && r.ChannelNames[c] != "" {
			name = r.ChannelNames[c]
		}
		if unit == "" && c < len(r.ChannelUnits) && r.ChannelUnits[c] != "" {
			name += " (" + r.ChannelUnits[c] + ")"
		}
		row(name, m)
	}
	if len(r.Chunks) > 0 {
		ew.printf("\n| chunk | MAE ± std%s | RMSE%s | MAPE (%%) | count |\n", unitSuffix(unit), unitSuffix(unit))
		ew.printf("|---|---:|---:|---:|---:|\n")
		for k, m := range r.Chunks {
			if m.Count == 0 { // no reading to score: not a perfect 0
				ew.printf("| %d/%d | — | — | — | 0 |\n", k+1, len(r.Chunks))
				continue
			}
			std := math.NaN()
			if k < len(r.ChunkMAEStd) {
				std = r.ChunkMAEStd[k]
			}
			ew.printf("| %d/%d | %.4f ± %.4f | %.4f | %.2f | %d |\n",
				k+1, len(r.Chunks), m.MAE, std, m.RMSE, m.MAPE, m.Count)
		}
	}
	if ew.err != nil {
		return fmt.Errorf("evaluation: writing report table: %w", ew.err)
	}
	if r.Completeness != nil {
		if _, err := fmt.Fprintln(w); err != nil {
			return fmt.Errorf("evaluation: writing report table: %w", err)
		}
		return r.Completeness.Table(w, unit)
	}
	return nil
}

// Unit returns the unit of every channel's readings when the channels
// share one (so that the pooled figures have it too), and "" when the
// units are not known or differ.
func (r Report) Unit() string {
	if len(r.ChannelUnits) == 0 {
		return ""
	}
	for _, u := range r.ChannelUnits[1:] {
		if u != r.ChannelUnits[0] {
			return ""
		}
	}
	return r.ChannelUnits[0]
}

// unitSuffix returns " (unit)", or "" for no unit.
func unitSuffix(unit string) string {
	if unit == "" {
		return ""
	}
	return " (" + unit + ")"
}

// errWriter remembers the first write error so that a sequence of writes
// needs one check.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

// Build returns the report of forecasts laid out row-major (snapshot, node,
// channel), as models' Predict functions return them, with truths below
// mapeFloor left out of MAPE. More chunks than snapshots are cut to one
// chunk a snapshot.
func Build(pred, truth []float64, snapshots, nodes, channels, chunks int, mapeFloor float64) (Report, error) {
	if snapshots > 0 {
		chunks = min(chunks, snapshots)
	}
	b, err := NewReportBuilder(snapshots, nodes, channels, chunks)
	if err != nil {
		return Report{}, err
	}
	if err := b.SetMAPEFloor(mapeFloor); err != nil {
		return Report{}, err
	}
	nc := nodes * channels
	if len(pred) != snapshots*nc || len(truth) != snapshots*nc {
		return Report{}, fmt.Errorf("evaluation: %d predictions and %d truths for %d snapshots × %d nodes × %d channels", len(pred), len(truth), snapshots, nodes, channels)
	}
	for s := 0; s < snapshots; s++ {
		if err := b.AddSnapshot(s, pred[s*nc:(s+1)*nc], truth[s*nc:(s+1)*nc]); err != nil {
			return Report{}, err
		}
	}
	return b.Report(), nil
}
