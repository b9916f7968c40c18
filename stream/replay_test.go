package stream

import (
	"math"
	"testing"

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
		want, _, err := sdgnn.Predict(b, set, r, 8)
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
