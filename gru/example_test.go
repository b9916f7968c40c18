package gru_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gru"
)

// Encode turns each sensor's window of readings into an embedding. The
// window is given step by step: xs[t] holds every sensor's reading at step
// t, one row per sensor. The GRU is shared, so sensors with equal windows
// get equal embeddings.
func ExampleGRU_Encode() {
	const sensors, steps, features, hidden = 3, 12, 1, 4
	g := gru.New(features, hidden, rand.New(rand.NewPCG(1, 2)))
	xs := make([]*mat.Dense, steps)
	for t := range xs {
		xs[t] = mat.NewDense(sensors, features, []float64{
			0.1 * float64(t), // sensor 0: rising
			0.1 * float64(t), // sensor 1: the same window
			0.5,              // sensor 2: flat
		})
	}
	h, err := g.Encode(xs)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, c := h.Dims()
	fmt.Printf("embeddings: %d sensors × %d\n", r, c)
	fmt.Println("sensors 0 and 1 equal:", mat.Equal(h.RowView(0), h.RowView(1)))
	fmt.Println("sensors 0 and 2 equal:", mat.Equal(h.RowView(0), h.RowView(2)))

	// A window of the wrong width is refused, not misread.
	xs[5] = mat.NewDense(sensors, 2, nil)
	_, err = g.Encode(xs)
	fmt.Println(err)
	// Output:
	// embeddings: 3 sensors × 4
	// sensors 0 and 1 equal: true
	// sensors 0 and 2 equal: false
	// gru forward: step 5 input is 3x2, want 3x1
}
