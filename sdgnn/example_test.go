package sdgnn_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// ExampleScoreZHat scores a student whose every node reads itself alone
// against targets that are its own Ẑ plus 0.1 in every entry, without
// holding its Ẑ of every snapshot: ‖Ẑ − Z‖² is then 0.01 per entry.
func ExampleScoreZHat() {
	const n, snaps, d = 3, 100, 2
	rng := rand.New(rand.NewPCG(1, 2))
	st := sdgnn.NewStudent(n, d, 4, rng)
	self := &sdgnn.Theta{Nodes: [][]int{{0}, {1}, {2}}, Weights: [][]float64{{1}, {1}, {1}}}
	if err := st.SetTheta(self); err != nil {
		panic(err)
	}
	h := mat.NewDense(snaps*n, d, nil)
	for i := range h.RawMatrix().Data {
		h.RawMatrix().Data[i] = rng.NormFloat64()
	}
	z := st.ZHatAll(h)
	for i := range z.RawMatrix().Data {
		z.RawMatrix().Data[i] += 0.1
	}
	t := &sdgnn.Targets{Nodes: n, Dim: d, H: h, Z: z}
	sq, _, _ := sdgnn.ScoreZHat(st.EachZHat, nil, snapshot.Normalizer{}, t, 0)
	fmt.Printf("‖Ẑ − Z‖² per entry: %.4f\n", sq/float64(snaps*n*d))
	// Output: ‖Ẑ − Z‖² per entry: 0.0100
}
