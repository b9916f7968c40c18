package sdgnn

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestPredictStopsWhenCancelled checks that Predict returns the context's
// error between batches instead of forecasting the whole part first.
func TestPredictStopsWhenCancelled(t *testing.T) {
	b := tinyBundle(t)
	const steps = 40
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]float64, steps*b.Meta.Nodes*len(b.Meta.Channels))
	for i := range data {
		data[i] = 1 + rng.Float64()
	}
	set, err := snapshot.NewSet(data, steps, b.Meta.Nodes, len(b.Meta.Channels), b.Meta.Window, b.Meta.Norm)
	if err != nil {
		t.Fatal(err)
	}
	whole := snapshot.Part{Range: snapshot.Range{Start: 0, End: set.Len()}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Predict(ctx, b, set, whole, 4); !errors.Is(err, context.Canceled) {
		t.Errorf("Predict with a cancelled context: %v, want %v", err, context.Canceled)
	}
	pred, _, err := Predict(context.Background(), b, set, whole, 4)
	if err != nil || len(pred) != set.Len()*b.Meta.Nodes*len(b.Meta.Channels) {
		t.Errorf("Predict: %d forecasts, %v", len(pred), err)
	}
}
