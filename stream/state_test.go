package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestForecastMatchesBundle checks the state's cached forecasts against
// Bundle.Forecast on windows built by hand from the series, and against
// Bundle.ForecastBatch over all nodes for the same window.
func TestForecastMatchesBundle(t *testing.T) {
	const n, T, C, d, steps = 9, 5, 3, 6, 17
	b := testBundle(t, n, T, C, d, 1)
	data := testSeries(steps, n, C, 2)
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	const base = 5_666_666 // slot index of step 0: an arbitrary, realistic epoch
	mustApply(t, st, streamOf(data, steps, n, C, base))

	// Batched path over the same window (steps-T .. steps-1).
	// One more (empty) step as the target of the last snapshot.
	set, err := snapshot.NewSet(append(slices.Clone(data), make([]float64, n*C)...), steps+1, n, C, T, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	var batch snapshot.Batch
	s0 := steps - T
	if err := set.Fill(&batch, []int{s0}); err != nil {
		t.Fatal(err)
	}
	want, err := b.ForecastBatch(batch.X)
	if err != nil {
		t.Fatal(err)
	}

	window := make([]float64, T*C)
	var f Forecast
	for z := 0; z < n; z++ {
		// By hand: each receptive node's window from the series.
		ks, _ := b.Receptive(z)
		embs := make([][]float64, len(ks))
		for i, k := range ks {
			for s := 0; s < T; s++ {
				for c := 0; c < C; c++ {
					window[s*C+c] = set.RawAt(s0+s, k, c)
				}
			}
			embs[i] = make([]float64, d)
			if err := b.Embed(embs[i], window, 0); err != nil {
				t.Fatal(err)
			}
			got, newest, ok := st.Window(nil, k)
			if !ok || newest != (base+steps-1)*testStep || !slices.Equal(got, window) {
				t.Fatalf("node %d: state window %v (newest %d), want %v", k, got, newest, window)
			}
		}
		direct := make([]float64, C)
		if err := b.Forecast(direct, z, embs); err != nil {
			t.Fatal(err)
		}
		if err := st.Forecast(z, &f); err != nil {
			t.Fatal(err)
		}
		if f.TS != (base+steps)*testStep || f.StaleSlots != 0 || f.Sensor != z || f.Model != "test-v1" || len(f.Inputs) != len(ks) {
			t.Fatalf("node %d: forecast header %+v", z, f)
		}
		for c := 0; c < C; c++ {
			if dd := math.Abs(f.Values[c] - direct[c]); dd > 1e-12 {
				t.Errorf("node %d channel %d: state %.15g, direct %.15g", z, c, f.Values[c], direct[c])
			}
			if dd := math.Abs(f.Values[c] - want[z*C+c]); dd > 1e-12*max(1, math.Abs(want[z*C+c])) {
				t.Errorf("node %d channel %d: state %.15g, batched %.15g", z, c, f.Values[c], want[z*C+c])
			}
		}
	}
}

// TestForecastStaleAndNoData checks the inputs and staleness of forecasts
// whose inputs lag, or have no reading at all, and that the embeddings of
// a sensor's windows of missing readings are not kept once it reports.
func TestForecastStaleAndNoData(t *testing.T) {
	b := testBundle(t, 5, 3, 2, 4, 3)
	st, err := NewState(b, testStep)
	if err != nil {
		t.Fatal(err)
	}
	var f Forecast
	// Node 1's receptive nodes are 1, 2 and 4.
	mustApply(t, st, []Reading{{1, 10 * testStep, []float64{1, 2}}, {2, 12 * testStep, []float64{1, 2}}})
	// Node 0 reads only itself, which has no reading: no forecast.
	if err := st.Forecast(0, &f); !errors.Is(err, ErrNoData) {
		t.Fatalf("forecast of node 0 without readings: %v, want ErrNoData", err)
	}
	// Node 4 has no reading: it goes in as a window of missing readings,
	// marked so, a window behind; the forecast is the one of a state to
	// which node 4 gave a missing reading (0).
	if err := st.Forecast(1, &f); err != nil {
		t.Fatalf("forecast without node 4: %v", err)
	}
	// Each window of three slots holds one reading: two slots of gaps.
	wantIn := []Input{{Sensor: 1, TS: 10 * testStep, Gaps: 2}, {Sensor: 2, TS: 12 * testStep, Gaps: 2}, {Sensor: 4, TS: 12 * testStep, Missing: true, Gaps: 3}}
	if f.TS != 13*testStep || f.StaleSlots != 3 || !slices.Equal(f.Inputs, wantIn) {
		t.Fatalf("forecast without node 4: ts %d stale %d inputs %v; want ts %d stale 3 inputs %v", f.TS, f.StaleSlots, f.Inputs, 13*testStep, wantIn)
	}
	blank, _ := NewState(b, testStep)
	mustApply(t, blank, []Reading{{1, 10 * testStep, []float64{1, 2}}, {2, 12 * testStep, []float64{1, 2}}, {4, 12 * testStep, []float64{0, 0}}})
	var bf Forecast
	if err := blank.Forecast(1, &bf); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Values, bf.Values) {
		t.Errorf("forecast without node 4: %v; with node 4's readings missing: %v", f.Values, bf.Values)
	}
	mustApply(t, st, []Reading{{4, 11 * testStep, []float64{3, 4}}})
	if err := st.Forecast(1, &f); err != nil {
		t.Fatal(err)
	}
	wantIn = []Input{{Sensor: 1, TS: 10 * testStep, Gaps: 2}, {Sensor: 2, TS: 12 * testStep, Gaps: 2}, {Sensor: 4, TS: 11 * testStep, Gaps: 2}}
	if f.TS != 13*testStep || f.StaleSlots != 2 || !slices.Equal(f.Inputs, wantIn) {
		t.Fatalf("forecast ts %d stale %d inputs %v; want ts %d stale 2 inputs %v", f.TS, f.StaleSlots, f.Inputs, 13*testStep, wantIn)
	}
	for _, tc := range []struct {
		z    int
		ts   int64
		want bool
	}{
		{1, 12 * testStep, false}, // 1 and 4 lack slot 12
		{1, 10 * testStep, false}, // 2 and 4 lack slot 10
		{2, 12 * testStep, false}, // 3 never seen
		{-1, 0, false},
		{9, 0, false},
	} {
		if got := st.Ready(tc.z, tc.ts); got != tc.want {
			t.Errorf("Ready(%d, %d) = %v, want %v", tc.z, tc.ts, got, tc.want)
		}
	}
	mustApply(t, st, []Reading{{1, 12 * testStep, []float64{1, 2}}, {4, 12 * testStep, []float64{1, 2}}})
	if !st.Ready(1, 12*testStep) {
		t.Error("Ready(1, slot 12) = false with all inputs at slot 12")
	}
	// Node 4's window ending at slot 12 now holds its readings, not the
	// missing ones its embedding was computed from before: the forecast is
	// a fresh state's of the same readings.
	if err := st.Forecast(1, &f); err != nil {
		t.Fatal(err)
	}
	fresh, _ := NewState(b, testStep)
	mustApply(t, fresh, []Reading{{1, 10 * testStep, []float64{1, 2}}, {2, 12 * testStep, []float64{1, 2}}, {4, 11 * testStep, []float64{3, 4}},
		{1, 12 * testStep, []float64{1, 2}}, {4, 12 * testStep, []float64{1, 2}}})
	if err := fresh.Forecast(1, &bf); err != nil {
		t.Fatal(err)
	}
	if f.TS != bf.TS || !slices.Equal(f.Values, bf.Values) {
		t.Errorf("after node 4's readings: slot %d %v; a fresh state of them: slot %d %v", f.TS/testStep, f.Values, bf.TS/testStep, bf.Values)
	}
	if err := st.Forecast(7, &f); err == nil {
		t.Error("forecast of node 7 of 5: no error")
	}
}

// TestForecastGaps checks that each input says how many slots of its
// window held no reading: those before its first reading (a fresh start),
// slots skipped, and slots whose values are all 0; a slot with some value
// is a reading.
func TestForecastGaps(t *testing.T) {
	const T = 4
	b := testBundle(t, 5, T, 2, 4, 3) // node 0 reads only itself
	for _, tc := range []struct {
		name  string
		slots []int64     // slots of node 0's readings
		vals  [][]float64 // their values
		want  int
	}{
		{"first reading", []int64{10}, [][]float64{{1, 2}}, 3},
		{"two readings", []int64{9, 10}, [][]float64{{1, 2}, {1, 2}}, 2},
		{"full window", []int64{7, 8, 9, 10}, [][]float64{{1, 2}, {1, 2}, {1, 2}, {1, 2}}, 0},
		{"skipped slot", []int64{5, 6, 7, 8, 10}, [][]float64{{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}}, 1},
		{"all values 0", []int64{7, 8, 9, 10}, [][]float64{{1, 2}, {0, 0}, {1, 2}, {0, 0}}, 2},
		{"one value 0", []int64{7, 8, 9, 10}, [][]float64{{1, 2}, {0, 2}, {1, 0}, {1, 2}}, 0},
		{"reading older than the window", []int64{3, 10}, [][]float64{{1, 2}, {1, 2}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := NewState(b, testStep)
			if err != nil {
				t.Fatal(err)
			}
			for i, sl := range tc.slots {
				mustApply(t, st, []Reading{{0, sl * testStep, tc.vals[i]}})
			}
			var f Forecast
			if err := st.Forecast(0, &f); err != nil {
				t.Fatal(err)
			}
			want := []Input{{Sensor: 0, TS: 10 * testStep, Gaps: tc.want}}
			if f.StaleSlots != 0 || !slices.Equal(f.Inputs, want) {
				t.Errorf("stale %d inputs %+v, want stale 0 inputs %+v", f.StaleSlots, f.Inputs, want)
			}
			// The encoded message says so, only when there are gaps.
			msg := string(EncodeForecast(nil, &f))
			if has := strings.Contains(msg, fmt.Sprintf(`"gaps":%d}`, tc.want)); has != (tc.want > 0) || strings.Contains(msg, `"gaps":0`) {
				t.Errorf("message %s for %d gaps", msg, tc.want)
			}
			// Readings that fill the window afterwards, out of order or
			// completing a slot, count at the next forecast (the count
			// is kept with the window's cached embedding).
			for sl := int64(7); sl <= 10; sl++ {
				mustApply(t, st, []Reading{{0, sl * testStep, []float64{3, 4}}})
			}
			if err := st.Forecast(0, &f); err != nil {
				t.Fatal(err)
			}
			if want := []Input{{Sensor: 0, TS: 10 * testStep}}; !slices.Equal(f.Inputs, want) {
				t.Errorf("window filled: inputs %+v, want %+v", f.Inputs, want)
			}
		})
	}
}

func TestApplyCounts(t *testing.T) {
	b := testBundle(t, 3, 4, 2, 3, 5)
	st, err := NewStateHistory(b, testStep, 0) // the window only
	if err != nil {
		t.Fatal(err)
	}
	v := func(x float64) []float64 { return []float64{x, x + 1} }
	steps := []struct {
		slot int64
		val  float64
		kind ApplyKind
		gap  int64
	}{
		{0, 1, Advanced, 0},
		{1, 2, Advanced, 0},
		{2, 3, Advanced, 0},
		{2, 3, Duplicate, 0},
		{2, 9, Conflict, 0},
		{5, 6, Advanced, 2}, // slots 3, 4 missing; window 2..5
		{4, 5, Filled, 0},
		{3, 4, Filled, 0},
		{3, 4, Duplicate, 0},
		{1, 2, Late, 0}, // before the window
		{11, 7, Advanced, 5},
	}
	for i, s := range steps {
		res, err := st.Apply(Reading{Sensor: 1, TS: s.slot * testStep, Values: v(s.val)})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Kind != s.kind || res.Gap != s.gap || res.TS != s.slot*testStep || res.Sensor != 1 {
			t.Fatalf("step %d (slot %d): %+v, want %v gap %d", i, s.slot, res, s.kind, s.gap)
		}
	}
	c := st.Counters
	for _, tc := range []struct {
		name      string
		got, want uint64
	}{
		{"applied", c.Applied.Load(), 7},
		{"duplicates", c.Duplicates.Load(), 2},
		{"conflicts", c.Conflicts.Load(), 1},
		{"out of order", c.OutOfOrder.Load(), 2},
		{"late", c.Late.Load(), 1},
		{"gaps", c.Gaps.Load(), 7},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	info, _ := st.Node(1)
	if !info.Seen || info.Newest != 11*testStep || info.Applied != 7 || info.Duplicates != 3 || info.OutOfOrder != 2 || info.Late != 1 || info.Gaps != 7 {
		t.Errorf("node info %+v", info)
	}
	// The window after slot 11 is 8..11 with only 11 present; the conflict
	// kept the first values.
	w, _, _ := st.Window(nil, 1)
	if want := []float64{0, 0, 0, 0, 0, 0, 7, 8}; !slices.Equal(w, want) {
		t.Errorf("window %v, want %v", w, want)
	}
}

func TestApplyRejects(t *testing.T) {
	b := testBundle(t, 3, 4, 2, 3, 5)
	st, _ := NewState(b, testStep)
	for _, tc := range []struct {
		r      Reading
		reason string
	}{
		{Reading{3, 0, []float64{1, 2}}, ReasonUnknownSensor},
		{Reading{-1, 0, []float64{1, 2}}, ReasonUnknownSensor},
		{Reading{0, 0, []float64{1}}, ReasonChannels},
		{Reading{0, 0, []float64{1, math.NaN()}}, ReasonNonFinite},
		{Reading{0, 0, []float64{math.Inf(-1), 1}}, ReasonNonFinite},
		{Reading{0, 1, []float64{1, 2}}, ReasonOffGrid},
	} {
		before := st.Snapshot()
		_, err := st.Apply(tc.r)
		if got := ReasonOf(err); got != tc.reason {
			t.Errorf("Apply(%+v): %v, want reason %s", tc.r, err, tc.reason)
		}
		if !bytes.Equal(before, st.Snapshot()) {
			t.Errorf("Apply(%+v) changed the state", tc.r)
		}
	}
}

// TestIdempotence applies a stream, then again, then shuffled within the
// window into a fresh state: same state, same forecasts, right counts.
func TestIdempotence(t *testing.T) {
	const n, T, C, d, steps = 7, 4, 2, 5, 23
	b := testBundle(t, n, T, C, d, 9)
	data := testSeries(steps, n, C, 10)
	rs := streamOf(data, steps, n, C, 1000)

	const history = 3
	st1, _ := NewStateHistory(b, testStep, history)
	mustApply(t, st1, rs)
	snap1 := st1.Snapshot()
	fc1 := allForecasts(t, st1)
	applied := st1.Counters.Applied.Load()
	if applied != uint64(len(rs)) {
		t.Fatalf("applied %d of %d", applied, len(rs))
	}

	// Twice: every reading is a duplicate (inside the final window and
	// history) or late.
	mustApply(t, st1, rs)
	if !bytes.Equal(snap1, st1.Snapshot()) {
		t.Fatal("second application changed the state")
	}
	inWindow := 0
	for _, r := range rs {
		if r.TS/testStep > 1000+steps-1-T-history {
			inWindow++
		}
	}
	c := st1.Counters
	if c.Applied.Load() != applied || c.Duplicates.Load() != uint64(inWindow) || c.Late.Load() != uint64(len(rs)-inWindow) || c.Conflicts.Load() != 0 {
		t.Errorf("second pass: applied %d duplicates %d late %d conflicts %d; want %d, %d, %d, 0",
			c.Applied.Load(), c.Duplicates.Load(), c.Late.Load(), c.Conflicts.Load(), applied, inWindow, len(rs)-inWindow)
	}
	if fc := allForecasts(t, st1); !slices.EqualFunc(fc, fc1, forecastEqual) {
		t.Error("forecasts changed on the second application")
	}

	// Shuffled within blocks of T slots, into a fresh state.
	rng := rand.New(rand.NewPCG(3, 4))
	sh := slices.Clone(rs)
	for lo := 0; lo < len(sh); {
		hi := lo
		for hi < len(sh) && sh[hi].TS/(T*testStep) == sh[lo].TS/(T*testStep) {
			hi++
		}
		rng.Shuffle(hi-lo, func(i, j int) { sh[lo+i], sh[lo+j] = sh[lo+j], sh[lo+i] })
		lo = hi
	}
	st2, _ := NewStateHistory(b, testStep, history)
	mustApply(t, st2, sh)
	if !bytes.Equal(snap1, st2.Snapshot()) {
		t.Error("shuffled stream gives another state")
	}
	if fc := allForecasts(t, st2); !slices.EqualFunc(fc, fc1, forecastEqual) {
		t.Error("shuffled stream gives other forecasts")
	}
	if st2.Counters.OutOfOrder.Load() == 0 {
		t.Error("shuffled stream: no out-of-order readings counted")
	}
}

func allForecasts(t *testing.T, st *State) []Forecast {
	t.Helper()
	fs := make([]Forecast, st.Nodes())
	for z := range fs {
		if err := st.Forecast(z, &fs[z]); err != nil {
			t.Fatal(err)
		}
	}
	return fs
}

func forecastEqual(a, b Forecast) bool {
	return a.Sensor == b.Sensor && a.TS == b.TS && a.StaleSlots == b.StaleSlots && a.Model == b.Model &&
		slices.Equal(a.Values, b.Values) && slices.Equal(a.Inputs, b.Inputs)
}

func TestSnapshotRestore(t *testing.T) {
	const n, T, C, d, steps = 6, 4, 3, 5, 15
	b := testBundle(t, n, T, C, d, 21)
	rs := streamOf(testSeries(steps, n, C, 22), steps, n, C, 77)
	st, _ := NewState(b, testStep)
	mustApply(t, st, rs[:len(rs)/2])
	em := NewEmitter(st, 0)
	var f Forecast
	for _, z := range em.Due(farFuture) {
		if _, err := em.Emit(z, farFuture, &f); err != nil {
			t.Fatal(err)
		}
	}
	mustApply(t, st, rs[len(rs)/2:])
	snap := st.Snapshot()
	fc := allForecasts(t, st)

	st2, _ := NewState(b, testStep)
	if err := st2.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(st2.Snapshot(), snap) {
		t.Fatal("restored state snapshots differently")
	}
	if got := allForecasts(t, st2); !slices.EqualFunc(got, fc, forecastEqual) {
		t.Fatal("restored state forecasts differently")
	}
	for z := 0; z < n; z++ {
		a, _ := st.Node(z)
		b, _ := st2.Node(z)
		if a.Newest != b.Newest || a.Seen != b.Seen || a.LastEmitted != b.LastEmitted || a.Emitted != b.Emitted {
			t.Fatalf("node %d: restored %+v, original %+v", z, b, a)
		}
	}
	// Re-applying everything after the restore changes nothing.
	mustApply(t, st2, rs)
	if !bytes.Equal(st2.Snapshot(), snap) {
		t.Fatal("re-applying the stream after a restore changed the state")
	}

	// Bad bytes are refused and leave the state as it was.
	empty, _ := NewState(b, testStep)
	emptySnap := empty.Snapshot()
	other, _ := NewState(testBundle(t, n+1, T, C, d, 21), testStep)
	bad := map[string][]byte{
		"empty":     nil,
		"truncated": snap[:len(snap)-9],
		"short":     snap[:10],
		"padded":    append(slices.Clone(snap), 0),
		"flipped":   flip(snap, len(snap)/2),
		"checksum":  flip(snap, len(snap)-1),
		"magic":     flip(snap, 0),
		"version":   flip(snap, 4),
		"shape":     other.Snapshot(),
	}
	for name, data := range bad {
		err := empty.Restore(data)
		if !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: %v, want ErrSnapshot", name, err)
		}
		if !bytes.Equal(empty.Snapshot(), emptySnap) {
			t.Errorf("%s: failed restore changed the state", name)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0x40
	return c
}

// TestServiceStateFileCutShort checks that a service refuses a state file
// it cannot restore, naming it and the way out: starting without it, the
// windows rebuilt from the log (or, without a rebuild, filled anew).
func TestServiceStateFileCutShort(t *testing.T) {
	b := testBundle(t, 5, 4, 2, 3, 1)
	path := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(path, []byte("SDGNNSTATE"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		noRebuild bool
		want      string
	}{
		{false, "rebuilt from the log"},
		{true, "rebuilding them from the log is off"},
	} {
		_, err := NewService(b, Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, StateFile: path, NoRebuild: tc.noRebuild})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "move the file aside") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NoRebuild %v: %v, want an error naming %s, moving it aside and %q", tc.noRebuild, err, path, tc.want)
		}
	}
}

// A slot held with missing values (0) is completed by a later reading of
// it that gives them, its other values agreeing, whichever of the two
// comes first; the node's embedding then follows the completed window.
func TestApplyCompletes(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, later  []float64
		kind          ApplyKind
		want, reverse []float64 // the slot's values after both; in the other order
	}{
		{"all missing, then a reading", []float64{0, 0}, []float64{3, 4}, Completed, []float64{3, 4}, []float64{3, 4}},
		{"one channel missing", []float64{3, 0}, []float64{3, 4}, Completed, []float64{3, 4}, []float64{3, 4}},
		{"each lacks the other's", []float64{3, 0}, []float64{0, 4}, Completed, []float64{3, 4}, []float64{3, 4}},
		{"the later lacks what is held", []float64{3, 4}, []float64{0, 4}, Duplicate, []float64{3, 4}, []float64{3, 4}},
		{"the later missing", []float64{3, 4}, []float64{0, 0}, Duplicate, []float64{3, 4}, []float64{3, 4}},
		{"a fill and a conflict", []float64{0, 4}, []float64{3, 5}, Conflict, []float64{0, 4}, []float64{3, 5}},
		{"other values", []float64{3, 4}, []float64{3, 5}, Conflict, []float64{3, 4}, []float64{3, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i, order := range []struct {
				a, b, want []float64
			}{{tc.first, tc.later, tc.want}, {tc.later, tc.first, tc.reverse}} {
				st, err := NewState(testBundle(t, 3, 4, 2, 3, 5), testStep)
				if err != nil {
					t.Fatal(err)
				}
				// Node 0 reads itself alone: slots 0, 1 and 3, then slot 2.
				mustApply(t, st, []Reading{{0, 0, []float64{1, 2}}, {0, testStep, []float64{1, 2}}, {0, 3 * testStep, []float64{1, 2}}, {0, 2 * testStep, order.a}})
				var before, after Forecast
				if err := st.Forecast(0, &before); err != nil {
					t.Fatal(err)
				}
				before.Values = slices.Clone(before.Values)
				res, err := st.Apply(Reading{0, 2 * testStep, order.b})
				if err != nil {
					t.Fatal(err)
				}
				w, _, _ := st.Window(nil, 0)
				if got := w[4:6]; !slices.Equal(got, order.want) {
					t.Fatalf("%v then %v: slot 2 holds %v (%v), want %v", order.a, order.b, got, res.Kind, order.want)
				}
				if err := st.Forecast(0, &after); err != nil {
					t.Fatal(err)
				}
				changed := !slices.Equal(before.Values, after.Values)
				if changed != (res.Kind == Completed) || changed != res.Changed() {
					t.Fatalf("%v then %v (%v): forecast moved %v, Changed %v", order.a, order.b, res.Kind, changed, res.Changed())
				}
				if i == 0 {
					if res.Kind != tc.kind {
						t.Fatalf("%v then %v: %v, want %v", order.a, order.b, res.Kind, tc.kind)
					}
					if n := st.Counters.Completed.Load(); (n == 1) != (tc.kind == Completed) || n > 1 {
						t.Fatalf("completed counter %d after %v", n, res.Kind)
					}
				}
			}
		})
	}
}

// TestStateBytes checks the memory a state's slots take, and that a
// history that would take more than MaxStateBytes is refused before any
// of it is allocated.
func TestStateBytes(t *testing.T) {
	small := testBundle(t, 5, 4, 2, 3, 1)
	if got, want := StateBytes(small, 10), int64(5*14*(36+8*(2+3))); got != want {
		t.Errorf("StateBytes = %d, want %d", got, want)
	}
	huge := &sdgnn.Bundle{Meta: sdgnn.BundleMeta{Nodes: 1 << 40, Window: 12, Hidden: 16, Norm: snapshot.Normalizer{Mean: make([]float64, 3)}}}
	if got := StateBytes(huge, MaxHistory); got != math.MaxInt64 {
		t.Errorf("StateBytes of 2^40 sensors = %d, want math.MaxInt64", got)
	}
	wide := testBundle(t, 200, 4, 1, 4, 1) // 200 × (4+2^20) slots of 76 bytes: 14.8 GiB
	for _, tc := range []struct {
		history int
		err     string
	}{
		{DefaultHistory, ""},
		{MaxHistory, "200 sensors × 1048580 slots (window 4, history 1048576) take 14.8 GiB, more than the 8 GiB"},
	} {
		_, err := NewStateHistory(wide, testStep, tc.history)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("history %d: %v, want %q", tc.history, err, tc.err)
		}
	}
}
