package nn_test

import (
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/nn"
)

// Fit a two-layer MLP to y = 2x with Adam: forward, gradient of the squared
// error, backward, step.
func ExampleMLP() {
	rng := rand.New(rand.NewPCG(1, 2))
	m := nn.NewMLP("mlp", 1, 8, 1, rng)
	opt := nn.NewAdam(0.01, 0)
	x := mat.NewDense(4, 1, []float64{-1, -0.5, 0.5, 1})
	dy := mat.NewDense(4, 1, nil)
	var loss float64
	for step := 0; step < 2000; step++ {
		out := m.Forward(x)
		loss = 0
		for i := 0; i < 4; i++ {
			e := out.At(i, 0) - 2*x.At(i, 0)
			loss += e * e / 4
			dy.Set(i, 0, e/2)
		}
		nn.ZeroGrad(m.Params())
		m.Backward(dy)
		if err := opt.Step(m.Params()); err != nil {
			panic(err)
		}
	}
	fmt.Printf("loss below 1e-3: %v\n", loss < 1e-3)
	// Output: loss below 1e-3: true
}

// The activations at a few points: Sigmoid is the derivative of Softplus,
// and Tanh(x) = 2·Sigmoid(2x) − 1.
func ExampleSigmoid() {
	for _, x := range []float64{-800, -2, 0, 0.5, 3} {
		h := 1e-6
		slope := (nn.Softplus(x+h) - nn.Softplus(x-h)) / (2 * h)
		fmt.Printf("x=%5g Softplus %.6f Sigmoid %.6f (slope %.6f) Tanh %+.6f (2σ(2x)−1 %+.6f)\n",
			x, nn.Softplus(x), nn.Sigmoid(x), slope, nn.Tanh(x), 2*nn.Sigmoid(2*x)-1)
	}
	// Output:
	// x= -800 Softplus 0.000000 Sigmoid 0.000000 (slope 0.000000) Tanh -1.000000 (2σ(2x)−1 -1.000000)
	// x=   -2 Softplus 0.126928 Sigmoid 0.119203 (slope 0.119203) Tanh -0.964028 (2σ(2x)−1 -0.964028)
	// x=    0 Softplus 0.693147 Sigmoid 0.500000 (slope 0.500000) Tanh +0.000000 (2σ(2x)−1 +0.000000)
	// x=  0.5 Softplus 0.974077 Sigmoid 0.622459 (slope 0.622459) Tanh +0.462117 (2σ(2x)−1 +0.462117)
	// x=    3 Softplus 3.048587 Sigmoid 0.952574 (slope 0.952574) Tanh +0.995055 (2σ(2x)−1 +0.995055)
}
