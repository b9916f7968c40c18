package snapshot_test

import (
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/snapshot"
)

func Example() {
	// A toy series: 40 steps, 3 nodes, 2 channels (row-major step, node,
	// channel). Every fifth reading is missing (0).
	const steps, nodes, channels, window = 40, 3, 2, 4
	data := make([]float64, steps*nodes*channels)
	for k := range data {
		if k%5 != 0 {
			data[k] = float64(k%17) + 1
		}
	}

	// Split snapshots chronologically and fit the normaliser only on the
	// steps the training snapshots see.
	split, err := snapshot.ChronoSplit(steps-window, [3]float64{6, 2, 2})
	if err != nil {
		log.Fatal(err)
	}
	norm, err := snapshot.FitNormalizer(data, nodes, channels, split.TrainSteps(window))
	if err != nil {
		log.Fatal(err)
	}
	set, err := snapshot.NewSet(data, steps, nodes, channels, window, norm)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("snapshots:", set.Len(), "train:", split.Train.Range, "val:", split.Val.Range, "test:", split.Test.Range)

	// One training epoch in shuffled batches of 8 snapshots, reusing the
	// batch matrices.
	var b snapshot.Batch
	rng := rand.New(rand.NewPCG(1, 2))
	for _, idx := range snapshot.Batches(split.Train.Range, 8, rng) {
		if err := set.Fill(&b, idx); err != nil {
			log.Fatal(err)
		}
		// ... feed b.X to the model, compare with b.Y, mask where b.Raw == 0.
	}
	r, c := b.X[0].Dims()
	fmt.Printf("last batch: %d snapshots, X[t] is %d×%d\n", len(b.Snapshots), r, c)

	// Save the test snapshots for analysis in Python (pyarrow, pandas, polars).
	dir, err := os.MkdirTemp("", "snapshot-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "test.arrow")
	if err := snapshot.WriteSnapshots(path, set, split.Test.Range); err != nil {
		log.Fatal(err)
	}
	tab, err := snapshot.ReadSnapshots(path)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rows:", tab.Rows(), "x per row:", len(tab.X)/tab.Rows())

	// Output:
	// snapshots: 36 train: {0 22} val: {22 29} test: {29 36}
	// last batch: 6 snapshots, X[t] is 18×2
	// rows: 21 x per row: 8
}

// Gao & Ribeiro's inductive split deals the snapshots round-robin in time
// order: of every ten, seven train, one validates and two test. A Part
// stores the deal, not the list; Snapshots lists it.
func ExampleWindowSplit() {
	s, err := snapshot.WindowSplit(25, [3]float64{7, 1, 2})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("train:", s.Train.Snapshots())
	fmt.Println("val:  ", s.Val.Snapshots())
	fmt.Println("test: ", s.Test.Snapshots(), s.Test.Len(), s.Test.Contains(19))
	// Output:
	// train: [0 1 2 3 4 5 6 10 11 12 13 14 15 16 20 21 22 23 24]
	// val:   [7 17]
	// test:  [8 9 18 19] 4 true
}
