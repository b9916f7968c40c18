package evaluation

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
)

const tol = 1e-12

func close(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b))
}

func sameMetrics(a, b Metrics) bool {
	return a.Count == b.Count && close(a.MAE, b.MAE) && close(a.RMSE, b.RMSE) && close(a.MAPE, b.MAPE)
}

func TestMasked(t *testing.T) {
	for _, tc := range []struct {
		truth float64
		want  bool
	}{
		{0, true},
		{math.Copysign(0, -1), true},
		{MaskEpsilon, true},
		{-MaskEpsilon / 2, true},
		{math.NaN(), true},
		{math.Inf(1), true},
		{math.Inf(-1), true},
		{2 * MaskEpsilon, false},
		{-3, false},
		{65.5, false},
	} {
		if got := Masked(tc.truth); got != tc.want {
			t.Errorf("Masked(%v) = %v, want %v", tc.truth, got, tc.want)
		}
	}
}

func TestCompute(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name        string
		pred, truth []float64
		want        Metrics
	}{
		{
			name: "zero truth masked",
			pred: []float64{1, 2, 3}, truth: []float64{2, 0, 4},
			// errors 1 and 1; percentage errors 1/2 and 1/4.
			want: Metrics{MAE: 1, RMSE: 1, MAPE: 100 * (0.5 + 0.25) / 2, Count: 2},
		},
		{
			name: "mixed errors",
			pred: []float64{0, 10, 7}, truth: []float64{3, 6, 7},
			// errors 3, 4, 0.
			want: Metrics{MAE: 7.0 / 3, RMSE: math.Sqrt(25.0 / 3), MAPE: 100 * (1 + 4.0/6) / 3, Count: 3},
		},
		{
			name: "negative truth uses magnitude",
			pred: []float64{-1}, truth: []float64{-2},
			want: Metrics{MAE: 1, RMSE: 1, MAPE: 50, Count: 1},
		},
		{
			name: "NaN and Inf truth masked",
			pred: []float64{5, 5, 1}, truth: []float64{nan, math.Inf(1), 2},
			want: Metrics{MAE: 1, RMSE: 1, MAPE: 50, Count: 1},
		},
		{
			name: "all masked gives zeros",
			pred: []float64{5, 5}, truth: []float64{0, nan},
			want: Metrics{},
		},
		{
			name: "empty",
			want: Metrics{},
		},
		{
			name: "NaN prediction poisons",
			pred: []float64{nan, 2}, truth: []float64{1, 2},
			want: Metrics{MAE: nan, RMSE: nan, MAPE: nan, Count: 2},
		},
		{
			name: "Inf prediction poisons",
			pred: []float64{math.Inf(-1), 2}, truth: []float64{1, 2},
			want: Metrics{MAE: nan, RMSE: nan, MAPE: nan, Count: 2},
		},
		{
			name: "NaN prediction on masked truth ignored",
			pred: []float64{nan, 3}, truth: []float64{0, 2},
			want: Metrics{MAE: 1, RMSE: 1, MAPE: 50, Count: 1},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Compute(tc.pred, tc.truth)
			if err != nil {
				t.Fatal(err)
			}
			if !sameMetrics(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestComputeLengthMismatch(t *testing.T) {
	_, err := Compute([]float64{1, 2}, []float64{1})
	if err == nil || !strings.Contains(err.Error(), "2 predictions but 1 truth") {
		t.Errorf("got error %v, want a length mismatch", err)
	}
}

func TestMergeEqualsOneShot(t *testing.T) {
	n := 1000
	pred := make([]float64, n)
	truth := make([]float64, n)
	for i := range n {
		truth[i] = float64(i%17) * 3.5 // some zeros, which are masked
		pred[i] = truth[i] + math.Sin(float64(i))*10
	}
	want, err := Compute(pred, truth)
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range []int{1, 2, 3, 7, 1000} {
		var total Accumulator
		for p := range parts {
			var a Accumulator
			for i := p * n / parts; i < (p+1)*n/parts; i++ {
				a.Add(pred[i], truth[i])
			}
			total.Merge(a)
		}
		if got := total.Metrics(); !sameMetrics(got, want) {
			t.Errorf("%d parts: got %+v, want %+v", parts, got, want)
		}
	}

	// A NaN prediction in one part must survive the merge.
	var a, b Accumulator
	a.Add(1, 2)
	b.Add(math.NaN(), 2)
	a.Merge(b)
	if m := a.Metrics(); !math.IsNaN(m.MAE) || m.Count != 2 {
		t.Errorf("merge lost NaN prediction: %+v", m)
	}
}

func TestAccumulatorTotals(t *testing.T) {
	a := Accumulator{MAPEFloor: 1}
	for _, p := range [][2]float64{
		{12, 10},          // |e| 2, rel 0.2
		{3, 0},            // masked
		{0.5, 0.25},       // |e| 0.25, below the floor
		{math.Inf(1), 10}, // invalid
		{-4, -5},          // |e| 1, rel 0.2
	} {
		a.Add(p[0], p[1])
	}
	want := Totals{AbsError: 3.25, SquaredError: 4 + 0.0625 + 1, RelError: 0.4, Count: 3, MAPECount: 2, Invalid: 1}
	if got := a.Totals(); math.Abs(got.AbsError-want.AbsError) > 1e-12 || math.Abs(got.SquaredError-want.SquaredError) > 1e-12 ||
		math.Abs(got.RelError-want.RelError) > 1e-12 || got.Count != want.Count || got.MAPECount != want.MAPECount || got.Invalid != want.Invalid {
		t.Errorf("totals %+v, want %+v", got, want)
	}
	// Without the invalid pair the totals give the metrics back.
	b := Accumulator{MAPEFloor: 1}
	b.Add(12, 10)
	b.Add(0.5, 0.25)
	b.Add(-4, -5)
	tt, m := b.Totals(), b.Metrics()
	if n := float64(tt.Count); math.Abs(tt.AbsError/n-m.MAE) > 1e-12 || math.Abs(math.Sqrt(tt.SquaredError/n)-m.RMSE) > 1e-12 ||
		math.Abs(100*tt.RelError/float64(tt.MAPECount)-m.MAPE) > 1e-12 {
		t.Errorf("totals %+v do not give metrics %+v", tt, m)
	}
}

func TestAccumulatorCompensated(t *testing.T) {
	// One large error followed by many tiny ones: naive summation loses
	// the tiny ones entirely.
	var a Accumulator
	a.Add(1e16+1, 1) // error 1e16
	const n = 10000
	for range n {
		a.Add(2, 1) // error 1
	}
	want := (1e16 + n) / (n + 1)
	if got := a.Metrics().MAE; got != want {
		t.Errorf("MAE = %v, want %v", got, want)
	}
}

func TestChunkBoundaries(t *testing.T) {
	for _, tc := range []struct {
		snapshots, chunks int
		sizes             []int
	}{
		{25, 10, []int{2, 3, 2, 3, 2, 3, 2, 3, 2, 3}},
		{10, 10, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{7, 1, []int{7}},
		{7, 3, []int{2, 2, 3}},
	} {
		b, err := NewReportBuilder(tc.snapshots, 1, 1, tc.chunks)
		if err != nil {
			t.Fatal(err)
		}
		for s := range tc.snapshots {
			// Truth 1 is never masked; each snapshot adds one pair.
			if err := b.Add(s, 0, 0, 1, 1); err != nil {
				t.Fatal(err)
			}
		}
		r := b.Report()
		if len(r.Chunks) != tc.chunks {
			t.Fatalf("S=%d K=%d: %d chunks", tc.snapshots, tc.chunks, len(r.Chunks))
		}
		for k, m := range r.Chunks {
			lo, hi := k*tc.snapshots/tc.chunks, (k+1)*tc.snapshots/tc.chunks
			if m.Count != tc.sizes[k] || m.Count != hi-lo {
				t.Errorf("S=%d K=%d chunk %d: count %d, want %d", tc.snapshots, tc.chunks, k, m.Count, tc.sizes[k])
			}
		}
	}
}

func TestReportBuilder(t *testing.T) {
	// 4 snapshots, 2 nodes, 2 channels, 2 chunks: chunk 0 = {0,1}, 1 = {2,3}.
	b, err := NewReportBuilder(4, 2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetChannelNames([]string{"flow", "speed"}); err != nil {
		t.Fatal(err)
	}
	// Truth is 10 everywhere except node 1 channel 1 of snapshot 0, which is
	// missing. Prediction error equals the snapshot number + 1 on node 0
	// and 0 on node 1.
	for s := range 4 {
		truth := []float64{10, 10, 10, 10}
		if s == 0 {
			truth[3] = 0
		}
		e := float64(s + 1)
		pred := []float64{10 + e, 10 - e, 10, 10}
		if err := b.AddSnapshot(s, pred, truth); err != nil {
			t.Fatal(err)
		}
	}
	r := b.Report()

	if r.Overall.Count != 15 {
		t.Errorf("overall count %d, want 15", r.Overall.Count)
	}
	// Sum of absolute errors: 2*(1+2+3+4) = 20 over 15 pairs.
	if !close(r.Overall.MAE, 20.0/15) {
		t.Errorf("overall MAE %v, want %v", r.Overall.MAE, 20.0/15)
	}
	// Channel 0: errors 1,2,3,4 on node 0 and zeros on node 1 (8 pairs).
	if m := r.PerChannel[0]; m.Count != 8 || !close(m.MAE, 10.0/8) {
		t.Errorf("channel 0: %+v", m)
	}
	if m := r.PerChannel[1]; m.Count != 7 || !close(m.MAE, 10.0/7) {
		t.Errorf("channel 1: %+v", m)
	}
	if m := r.PerNode[0]; m.Count != 8 || !close(m.MAE, 20.0/8) || !close(m.RMSE, math.Sqrt(2*30.0/8)) {
		t.Errorf("node 0: %+v", m)
	}
	if m := r.PerNode[1]; m.Count != 7 || m.MAE != 0 {
		t.Errorf("node 1: %+v", m)
	}
	// Chunk 0: snapshot 0 MAE 2/3, snapshot 1 MAE 4/4 = 1.
	if m := r.Chunks[0]; m.Count != 7 || !close(m.MAE, 6.0/7) {
		t.Errorf("chunk 0: %+v", m)
	}
	if want := (1 - 2.0/3) / 2; !close(r.ChunkMAEStd[0], want) {
		t.Errorf("chunk 0 MAE std %v, want %v", r.ChunkMAEStd[0], want)
	}
	// Chunk 1: snapshot MAEs 6/4 and 8/4, std 0.25.
	if !close(r.ChunkMAEStd[1], 0.25) {
		t.Errorf("chunk 1 MAE std %v, want 0.25", r.ChunkMAEStd[1])
	}
	if len(r.ChannelNames) != 2 || r.ChannelNames[1] != "speed" {
		t.Errorf("channel names %q", r.ChannelNames)
	}

	// Report must not change the builder.
	if r2 := b.Report(); !sameMetrics(r2.Overall, r.Overall) {
		t.Errorf("second Report differs: %+v vs %+v", r2.Overall, r.Overall)
	}

	var buf bytes.Buffer
	if err := r.Table(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| overall |", "| flow |", "| speed |", "| 2/2 |", "±"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestReportEmptyChunk(t *testing.T) {
	b, err := NewReportBuilder(4, 1, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(0, 0, 0, 3, 1); err != nil {
		t.Fatal(err)
	}
	r := b.Report()
	if r.Chunks[1] != (Metrics{}) || r.ChunkMAEStd[1] != 0 {
		t.Errorf("empty chunk: %+v std %v", r.Chunks[1], r.ChunkMAEStd[1])
	}
	if r.ChunkMAEStd[0] != 0 {
		t.Errorf("one-snapshot chunk std %v, want 0", r.ChunkMAEStd[0])
	}
	// The table shows the empty chunk as a gap, not a perfect 0 ± 0.
	var buf bytes.Buffer
	if err := r.Table(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| 2/2 | — | — | — | 0 |") || strings.Contains(buf.String(), "0.0000 ± 0.0000") {
		t.Errorf("table:\n%s", buf.String())
	}
}

func TestReportBuilderErrors(t *testing.T) {
	for _, tc := range []struct {
		name                               string
		snapshots, nodes, channels, chunks int
	}{
		{"zero snapshots", 0, 1, 1, 1},
		{"negative nodes", 5, -1, 1, 1},
		{"zero channels", 5, 1, 0, 1},
		{"zero chunks", 5, 1, 1, 0},
		{"chunks exceed snapshots", 5, 1, 1, 6},
	} {
		if _, err := NewReportBuilder(tc.snapshots, tc.nodes, tc.channels, tc.chunks); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}

	b, err := NewReportBuilder(3, 2, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                    string
		snapshot, node, channel int
	}{
		{"snapshot high", 3, 0, 0},
		{"snapshot negative", -1, 0, 0},
		{"node high", 0, 2, 0},
		{"channel high", 0, 0, 2},
		{"channel negative", 0, 0, -1},
	} {
		if err := b.Add(tc.snapshot, tc.node, tc.channel, 1, 1); err == nil {
			t.Errorf("Add %s: no error", tc.name)
		}
	}
	four := []float64{1, 1, 1, 1}
	for _, tc := range []struct {
		name        string
		snapshot    int
		pred, truth []float64
	}{
		{"snapshot out of range", 3, four, four},
		{"short pred", 0, four[:3], four},
		{"long truth", 0, four, append(four, 1)},
	} {
		if err := b.AddSnapshot(tc.snapshot, tc.pred, tc.truth); err == nil {
			t.Errorf("AddSnapshot %s: no error", tc.name)
		}
	}
	if err := b.SetChannelNames([]string{"flow"}); err == nil {
		t.Error("SetChannelNames with wrong count: no error")
	}
	if r := b.Report(); r.Overall.Count != 0 {
		t.Errorf("failed adds were recorded: %+v", r.Overall)
	}
}

func TestJSON(t *testing.T) {
	b, err := NewReportBuilder(2, 1, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Add(0, 0, 0, math.NaN(), 5); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(1, 0, 0, 6, 4); err != nil {
		t.Fatal(err)
	}
	r := b.Report()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	s := string(data)
	for _, want := range []string{
		`"overall":{"mae":null,"rmse":null,"mape":null,"count":2,"mape_count":1}`,
		`"per_channel":[`, `"per_node":[`,
		`"chunks":[{"mae":null,"rmse":null,"mape":null,"count":1,"mape_count":0},{"mae":2,"rmse":2,"mape":50,"count":1,"mape_count":1}]`,
		`"chunk_mae_std":[null,0]`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("JSON lacks %s:\n%s", want, s)
		}
	}
	if strings.Contains(s, "channel_names") {
		t.Errorf("nil channel names encoded:\n%s", s)
	}

	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !sameMetrics(back.Overall, r.Overall) || !sameMetrics(back.Chunks[1], r.Chunks[1]) ||
		!math.IsNaN(back.ChunkMAEStd[0]) || back.ChunkMAEStd[1] != 0 {
		t.Errorf("round trip: got %+v, want %+v", back, r)
	}

	if _, err := json.Marshal(Metrics{MAE: math.Inf(1), Count: 1}); err != nil {
		t.Errorf("Marshal Inf: %v", err)
	}
	var m Metrics
	if err := json.Unmarshal([]byte(`{"mae":"x"}`), &m); err == nil {
		t.Error("Unmarshal of bad metrics: no error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTableWriteError(t *testing.T) {
	err := Report{}.Table(failWriter{})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("got %v, want the write error", err)
	}
}

func TestMAPEFloor(t *testing.T) {
	// Truths 0.01 (a near-zero reading, not missing), 2 and 4; errors 1 each.
	pred, truth := []float64{1.01, 3, 5}, []float64{0.01, 2, 4}
	var all, floored Accumulator
	floored.MAPEFloor = 1
	for i := range pred {
		all.Add(pred[i], truth[i])
		floored.Add(pred[i], truth[i])
	}
	a, f := all.Metrics(), floored.Metrics()
	if a.MAE != 1 || f.MAE != 1 || a.Count != 3 || f.Count != 3 {
		t.Fatalf("the floor changed MAE or Count: %+v %+v", a, f)
	}
	if want := 100 * (100 + 0.5 + 0.25) / 3; math.Abs(a.MAPE-want) > 1e-9 || a.MAPECount != 3 {
		t.Fatalf("MAPE without floor %g (n=%d), want %g", a.MAPE, a.MAPECount, want)
	}
	if want := 100 * (0.5 + 0.25) / 2; math.Abs(f.MAPE-want) > 1e-9 || f.MAPECount != 2 {
		t.Fatalf("MAPE with floor %g (n=%d), want %g", f.MAPE, f.MAPECount, want)
	}
	b, err := NewReportBuilder(1, 3, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetMAPEFloor(-1); err == nil {
		t.Fatal("negative floor accepted")
	}
	if err := b.SetMAPEFloor(1); err != nil {
		t.Fatal(err)
	}
	if err := b.AddSnapshot(0, pred, truth); err != nil {
		t.Fatal(err)
	}
	r := b.Report()
	if r.Overall.MAPE != f.MAPE || r.PerNode[0].MAPECount != 0 || !math.IsNaN(r.PerNode[0].MAPE) || r.MAPEFloor != 1 {
		t.Fatalf("report with floor: %+v", r)
	}
}

// TestMetricsEdges covers two edges of Metrics: a non-finite forecast makes
// the errors NaN but leaves MAPECount the number of finite pairs in MAPE,
// as documented; and finite errors whose squares overflow give an infinite
// RMSE, not NaN (which would read as a broken forecast).
func TestMetricsEdges(t *testing.T) {
	m, err := Compute([]float64{math.NaN(), 2, 3}, []float64{1, 2.5, 4})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(m.MAE) || m.Count != 3 || m.MAPECount != 2 {
		t.Errorf("a NaN forecast: %+v, want NaN errors, Count 3, MAPECount 2", m)
	}
	m, err = Compute([]float64{1e200, 2}, []float64{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsInf(m.RMSE, 1) || m.MAE != 5e199 || m.Count != 2 {
		t.Errorf("an error of 1e200: %+v, want RMSE +Inf, MAE 5e199", m)
	}
}

// TestReportTableUnits checks that the table labels MAE and RMSE with the
// readings' units: in the heading when every channel has the same one, per
// channel (and the overall row as pooling them) when they differ, and not
// at all when they are not known.
func TestReportTableUnits(t *testing.T) {
	for _, tc := range []struct {
		name        string
		names       []string
		units       []string
		want, avoid []string
	}{
		{"one channel", []string{"speed"}, []string{"km/h"},
			[]string{"| scope | MAE (km/h) | RMSE (km/h) |", "| overall |", "| speed |", "| chunk | MAE ± std (km/h) | RMSE (km/h) |"}, []string{"pooled"}},
		{"channels of other units", []string{"flow", "occupancy", "speed"}, []string{"veh/5 min", "fraction", "mph"},
			[]string{"| scope | MAE | RMSE |", "| overall (channels' units pooled) |", "| flow (veh/5 min) |", "| occupancy (fraction) |", "| speed (mph) |"}, []string{"MAE ("}},
		{"channels of one unit", []string{"a", "b"}, []string{"m", "m"},
			[]string{"| scope | MAE (m) | RMSE (m) |", "| overall |", "| a |", "| b |"}, []string{"pooled", "| a (m) |"}},
		{"units not known", []string{"flow", "speed"}, nil,
			[]string{"| scope | MAE | RMSE |", "| overall |", "| flow |", "| speed |"}, []string{"pooled", "MAE ("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(tc.names)
			pred, truth := make([]float64, 2*n), make([]float64, 2*n)
			for i := range truth {
				truth[i], pred[i] = float64(i+1), float64(i+2)
			}
			r, err := Build(pred, truth, 2, 1, n, 2, 0)
			if err != nil {
				t.Fatal(err)
			}
			r.ChannelNames, r.ChannelUnits = tc.names, tc.units
			var buf bytes.Buffer
			if err := r.Table(&buf); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("table lacks %q:\n%s", w, buf.String())
				}
			}
			for _, a := range tc.avoid {
				if strings.Contains(buf.String(), a) {
					t.Errorf("table has %q:\n%s", a, buf.String())
				}
			}
		})
	}
}
