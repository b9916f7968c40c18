package stream

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestReplayMatchesPredict checks that the online replay gives the batched
// offline forecasts of every snapshot of a range, missing readings
// included, and refuses ranges and data it cannot replay.
func TestReplayMatchesPredict(t *testing.T) {
	const n, T, C, d, steps = 11, 4, 2, 5, 40
	b := testBundle6(t, n, T, C, d, 3)
	data := testSeries(steps, n, C, 4)
	set, err := snapshot.NewSet(data, steps, n, C, T, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []snapshot.Range{{Start: 0, End: set.Len()}, {Start: 7, End: 19}, {Start: set.Len() - 1, End: set.Len()}} {
		want, _, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: r}, 8)
		if err != nil {
			t.Fatal(err)
		}
		calls := 0
		got, err := Replay(b, set, r, func(done int) {
			calls++
			if done != calls {
				t.Errorf("range %+v: progress %d at call %d", r, done, calls)
			}
		})
		if err != nil {
			t.Fatalf("range %+v: %v", r, err)
		}
		if len(got) != len(want) || calls != r.Len() {
			t.Fatalf("range %+v: %d values and %d progress calls, want %d and %d", r, len(got), calls, len(want), r.Len())
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-9*max(1, math.Abs(want[i])) {
				t.Fatalf("range %+v value %d (snapshot %d node %d): replay %.15g, batched %.15g",
					r, i, r.Start+i/(n*C), i/C%n, got[i], want[i])
			}
		}
	}
	for _, r := range []snapshot.Range{{Start: -1, End: 3}, {Start: 0, End: set.Len() + 1}, {Start: 5, End: 5}} {
		if _, err := Replay(b, set, r, nil); err == nil {
			t.Errorf("range %+v: no error", r)
		}
	}
	other, err := snapshot.NewSet(data, steps, n, C, T+1, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(b, other, snapshot.Range{Start: 0, End: 1}, nil); err == nil {
		t.Error("data with another window: no error")
	}
}

// TestReplayMatchesPredictPaperPrep checks, for a bundle trained with the
// paper's preprocessing, that the calendar inputs the online path computes
// from each reading's timestamp equal those the offline path computes from
// the step index: across a day boundary, with missing readings (fed as
// zeros under min-max scaling), replay and batched forecasts agree.
func TestReplayMatchesPredictPaperPrep(t *testing.T) {
	const n, T, C, d, steps = 7, 4, 2, 5, 2*288 + 20
	data := testSeries(steps, n, C, 5)
	origin := time.Date(2016, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	norm, err := snapshot.FitPaper(data, n, C, 300, origin, testStep)
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle6(t, n, T, C, d, 9)
	b.Meta.Norm = norm
	b.GRU = gru.New(C+snapshot.TimeInputCount, d, rand.New(rand.NewPCG(9, 1)))
	set, err := snapshot.NewSet(data, steps, n, C, T, norm)
	if err != nil {
		t.Fatal(err)
	}
	r := snapshot.Range{Start: 280, End: 292} // windows spanning midnight of day 1
	want, _, err := sdgnn.Predict(context.Background(), b, set, snapshot.Part{Range: r}, 5)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Replay(b, set, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9*max(1, math.Abs(want[i])) {
			t.Fatalf("value %d (snapshot %d node %d): replay %.15g, batched %.15g", i, r.Start+i/(n*C), i/C%n, got[i], want[i])
		}
	}

	// The calendar inputs come from the timestamps: the first snapshot's
	// readings stamped with their own times give the batched forecasts,
	// stamped a day later (another weekday input) they give others.
	for _, shift := range []int64{0, 24 * 3600 * 1000} {
		st, err := NewStateHistory(b, testStep, 1)
		if err != nil {
			t.Fatal(err)
		}
		for step := r.Start; step < r.Start+T; step++ {
			for z := 0; z < n; z++ {
				rd := Reading{Sensor: z, TS: norm.Time.StepTime(step) + shift, Values: data[(step*n+z)*C : (step*n+z+1)*C]}
				if _, err := st.Apply(rd); err != nil {
					t.Fatal(err)
				}
			}
		}
		target := norm.Time.StepTime(r.Start+T) + shift
		diff := 0.0
		var f Forecast
		for z := 0; z < n; z++ {
			if err := st.ForecastSlot(z, target, &f); err != nil {
				t.Fatal(err)
			}
			for c, v := range f.Values {
				diff = math.Max(diff, math.Abs(v-want[z*C+c]))
			}
		}
		if shift == 0 && diff > 1e-9 {
			t.Errorf("readings at their own times: forecasts differ from the batched ones by %g", diff)
		}
		if shift != 0 && diff < 1e-6 {
			t.Errorf("readings a day later: forecasts differ from the batched ones by only %g", diff)
		}
	}

	// The stream's slots must be the steps the calendar was fitted on.
	if _, err := NewState(b, 2*testStep); err == nil {
		t.Error("a 10-minute stream for a bundle fitted on 5-minute steps: no error")
	}
	// Data prepared without the calendar inputs do not fit the bundle.
	plain, err := snapshot.NewSet(data, steps, n, C, T, snapshot.Normalizer{Kind: snapshot.KindMinMax, Mean: norm.Mean, Std: norm.Std})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(b, plain, r, nil); err == nil {
		t.Error("data without calendar inputs: no error")
	}
}
