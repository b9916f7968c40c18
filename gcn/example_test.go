package gcn_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/gcn"
)

// pathAdjacency returns Â = D^-1/2 (A+I) D^-1/2 of the path 0 – 1 – 2 … n−1.
func pathAdjacency(n int) gcn.Dense {
	a := mat.NewDense(n, n, nil)
	deg := make([]float64, n)
	for i := range n {
		for j := max(i-1, 0); j <= min(i+1, n-1); j++ {
			a.Set(i, j, 1)
			deg[i]++
		}
	}
	for i := range n {
		for j := range n {
			a.Set(i, j, a.At(i, j)/math.Sqrt(deg[i]*deg[j]))
		}
	}
	return gcn.Dense{A: a}
}

// A node's mixed embedding depends on the nodes within Layers() hops of it:
// on a path of four sensors, changing sensor 3's embedding moves sensor 1's
// output under two graph convolutions, and not under one.
func ExampleGCN_Layers() {
	const n, d = 4, 3
	adj := pathAdjacency(n)
	h := mat.NewDense(n, d, nil)
	for i := range n {
		for j := range d {
			h.Set(i, j, float64(i+j)/10)
		}
	}
	for _, layers := range []int{1, 2} {
		g := gcn.NewLayers(layers, d, 8, d, rand.New(rand.NewPCG(1, 2)))
		before := mat.Row(nil, 1, g.Forward(h, adj))
		h2 := mat.DenseCopyOf(h)
		h2.Set(3, 0, 5) // sensor 3 lies two hops from sensor 1
		after := mat.Row(nil, 1, g.Forward(h2, adj))
		moved := false
		for j := range before {
			moved = moved || before[j] != after[j]
		}
		fmt.Printf("%d layer(s): sensor 1 sees sensor 3: %v\n", layers, moved)
	}
	// Output:
	// 1 layer(s): sensor 1 sees sensor 3: false
	// 2 layer(s): sensor 1 sees sensor 3: true
}
