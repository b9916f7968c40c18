package pems_test

import (
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/gonum/mat"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// A graph convolution over two snapshots of a three-sensor road: each
// snapshot's features are mixed along the road by the normalised adjacency.
func ExampleCSR_MulBlocks() {
	g := &pems.Graph{Nodes: 3, Edges: []pems.Edge{{From: 0, To: 1, Cost: 1.2}, {From: 1, To: 2, Cost: 0.8}}}
	a := g.NormalizedAdjacency()
	fmt.Printf("A(0,0)=%.4f A(0,1)=%.4f A(1,1)=%.4f A(0,2)=%.4f\n", a.At(0, 0), a.At(0, 1), a.At(1, 1), a.At(0, 2))

	// Two snapshots of one feature, stacked: rows 0-2 and rows 3-5.
	x := mat.NewDense(6, 1, []float64{1, 0, 0, 0, 0, 6})
	y := mat.NewDense(6, 1, nil)
	a.MulBlocks(y, x)
	fmt.Printf("%.4f\n", mat.Formatted(y.T()))
	// Output:
	// A(0,0)=0.5000 A(0,1)=0.4082 A(1,1)=0.3333 A(0,2)=0.0000
	// [0.5000  0.4082  0.0000  0.0000  2.4495  3.0000]
}

// A dataset in Los-loop's layout: a speed table with a header of sensor
// IDs, a symmetric matrix of link weights, and the sensors' locations.
func ExampleLoadFrom() {
	dir, _ := os.MkdirTemp("", "losloop")
	defer os.RemoveAll(dir)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	files := pems.Files{
		Series:    write("speed.csv", "717447,717446\n64.5,60\n62.25,59.5\n61,58\n"),
		Graph:     write("adj.csv", "1,0.4\n0.4,1\n"),
		Locations: write("loc.csv", "index,sensor_id,latitude,longitude\n0,717447,34.07,-118.27\n1,717446,34.08,-118.26\n"),
	}
	info := pems.Info{Name: "mine", SeriesFormat: pems.FormatCSV, GraphFormat: pems.FormatWeighted, StepMinutes: 5, Channels: []string{"speed"}}
	ds, err := pems.LoadFrom(info, files)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ds.Series.Steps, "steps of", ds.Series.Nodes, "sensors:", ds.SensorIDs, ds.Locations[1])
	fmt.Println("link weight", ds.Graph.Edges[0].Cost)
	// Output:
	// 3 steps of 2 sensors: [717447 717446] {34.08 -118.26}
	// link weight 0.4
}

// Sensors are named by their IDs where the release gives them (Los-loop's
// detectors), by their indices where it does not (PeMS): messages, URLs
// and files use the names, everything inside the indices.
func ExampleSensorNames() {
	losLoop, _ := pems.NewSensorNames(3, []string{"773869", "767541", "767542"})
	i, ok := losLoop.Index("767541")
	fmt.Println(i, ok, losLoop.Name(2))
	_, ok = losLoop.Index("1") // an index is not a name where there are IDs
	fmt.Println(ok)

	pems04, _ := pems.NewSensorNames(307, nil)
	i, ok = pems04.Index("12")
	fmt.Println(i, ok, pems04.Name(306))
	// Output:
	// 1 true 767542
	// false
	// 12 true 306
}
