package reproduce_test

import (
	"fmt"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/reproduce"
)

// ExampleMerge combines the tables of two runs of one comparison, seeds 1–2
// on one machine and seed 3 on another, into the table over three seeds.
func ExampleMerge() {
	cfg := reproduce.Quick("pems08")
	run := func(seed uint64, mae float64) reproduce.Run {
		r := reproduce.Run{Seed: seed, Metrics: map[string]evaluation.Metrics{}, Receptive: map[string]float64{}}
		for _, m := range reproduce.Models {
			r.Metrics[m] = evaluation.Metrics{MAE: mae}
			r.Receptive[m] = 5
		}
		return r
	}
	a := &reproduce.Table{Dataset: "pems08", Config: cfg, Runs: []reproduce.Run{run(1, 15.0), run(2, 15.2)}}
	b := &reproduce.Table{Dataset: "pems08", Config: cfg, Runs: []reproduce.Run{run(3, 15.4)}}
	t, err := reproduce.Merge([]*reproduce.Table{b, a})
	if err != nil {
		fmt.Println(err)
		return
	}
	c := t.Cells[reproduce.SDGNN]
	fmt.Printf("seeds %v: SDGNN MAE %.2f ± %.2f\n", t.Config.Seeds, c.MAE, c.MAEStd)
	// Output: seeds [1 2 3]: SDGNN MAE 15.20 ± 0.20
}
