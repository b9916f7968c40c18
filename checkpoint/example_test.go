package checkpoint_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/checkpoint"
)

func Example() {
	dir, err := os.MkdirTemp("", "checkpoint-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "teacher.model")

	meta, err := json.Marshal(map[string]any{"hidden": 2, "nodes": 307})
	if err != nil {
		log.Fatal(err)
	}
	f := &checkpoint.File{
		Kind: "gru-gcn-teacher",
		Meta: meta,
		Tensors: []checkpoint.Tensor{
			{Name: "out.w", Shape: []int{2, 3}, Data: []float64{1, 2, 3, 4, 5, 6}},
			{Name: "out.b", Shape: []int{3}, Data: []float64{0, 0.5, 1}},
		},
	}
	if err := checkpoint.WriteFile(path, f); err != nil {
		log.Fatal(err)
	}

	g, err := checkpoint.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	w, err := g.Tensor("out.w")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Kind, string(g.Meta))
	fmt.Println(w.Name, w.Shape, w.Data)
	if _, err := g.Tensor("gcn.w"); err != nil {
		fmt.Println(err)
	}
	// Output:
	// gru-gcn-teacher {"hidden":2,"nodes":307}
	// out.w [2 3] [1 2 3 4 5 6]
	// checkpoint: "gru-gcn-teacher" model file has no tensor "gcn.w"
}

// Two writes of the same parameters, with other metadata, have the same
// digest; another value has another.
func ExampleFile_Digest() {
	tensors := func(b float64) []checkpoint.Tensor {
		return []checkpoint.Tensor{{Name: "out.w", Shape: []int{2}, Data: []float64{1, 2}}, {Name: "out.b", Data: []float64{b}}}
	}
	monday := &checkpoint.File{Kind: "sdgnn-bundle", Meta: []byte(`{"created":"2026-11-23T08:00:00Z"}`), Tensors: tensors(0.5)}
	friday := &checkpoint.File{Kind: "sdgnn-bundle", Meta: []byte(`{"created":"2026-11-27T17:00:00Z"}`), Tensors: tensors(0.5)}
	other := &checkpoint.File{Kind: "sdgnn-bundle", Meta: monday.Meta, Tensors: tensors(0.25)}
	fmt.Println(monday.Digest() == friday.Digest(), monday.Digest() == other.Digest())
	// Output: true false
}
