package figure_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
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

// Where a model errs, on the ground: three of Los-loop's detectors at
// their coordinates, coloured by their test MAE, and the first one's
// receptive set, lines as wide as θ.
func ExampleSensorMap() {
	sites := []figure.Site{
		{Name: "773869", Lat: 34.15497, Lon: -118.31829, Value: 2.41},
		{Name: "767541", Lat: 34.11621, Lon: -118.23799, Value: 3.87},
		{Name: "717447", Lat: 34.07248, Lon: -118.26772, Value: 2.95},
	}
	p, err := figure.SensorMap("test MAE per sensor", "MAE (mph)", sites)
	if err != nil {
		log.Fatal(err)
	}
	r, err := figure.ReceptiveMap("receptive set of sensor 773869", sites, 0, []figure.Spoke{{Site: 0, Theta: 0.6}, {Site: 2, Theta: 0.25}})
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range []*plot.Plot{p, r} {
		b, err := figure.PNG(p, 6*vg.Inch, 5*vg.Inch)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: PNG header %q\n", p.Title.Text, b[:4])
	}

	// Output:
	// test MAE per sensor: PNG header "\x89PNG"
	// receptive set of sensor 773869: PNG header "\x89PNG"
}
