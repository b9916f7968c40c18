package figure_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gonum.org/v1/plot/vg"

	"github.com/pemsforecast/sdgnn/figure"
)

func Example() {
	dir, err := os.MkdirTemp("", "figure")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	tenths := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	p, err := figure.Staleness([]figure.Line{
		{
			Name: "SDGNN",
			X:    tenths,
			Y:    []float64{1.62, 1.63, 1.65, 1.66, 1.68, 1.70, 1.71, 1.73, 1.75, 1.78},
			Err:  []float64{0.10, 0.11, 0.10, 0.12, 0.11, 0.12, 0.13, 0.12, 0.14, 0.15},
		},
		{
			Name: "GRU",
			X:    tenths,
			Y:    []float64{1.70, 1.74, 1.77, 1.80, 1.85, 1.88, 1.92, 1.95, 2.00, 2.04},
		},
	}, "chronological tenth of the test split", nil)
	if err != nil {
		log.Fatal(err)
	}
	paths, err := figure.Save(p, dir, "staleness", 6*vg.Inch, 4*vg.Inch)
	if err != nil {
		log.Fatal(err)
	}
	for _, path := range paths {
		fmt.Println(filepath.Base(path))
	}

	// Output:
	// staleness.png
	// staleness.svg
}

func ExampleReceptiveField() {
	p, err := figure.ReceptiveField(figure.Field{
		Center: 17,
		Hop:    map[int]int{17: 0, 3: 1, 8: 1, 40: 2, 41: 2},
		Edges:  [][2]int{{17, 3}, {17, 8}, {3, 40}, {8, 41}, {41, 8}},
		Theta:  map[int]float64{17: 0.4, 8: 0.35, 41: 0.15, 112: 0.1},
	})
	if err != nil {
		log.Fatal(err)
	}
	b, err := figure.PNG(p, 5*vg.Inch, 5*vg.Inch)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Title.Text)
	fmt.Printf("PNG header %q\n", b[:4])

	// Output:
	// receptive field of sensor 17
	// PNG header "\x89PNG"
}
