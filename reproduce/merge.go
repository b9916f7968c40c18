package reproduce

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Merge combines tables of the same comparison run over different seeds, in
// separate processes or on separate machines, into one table over all their
// seeds: every table must be of one dataset with the same configuration but
// for the seeds and the model directory, and no seed may appear twice. The
// cells are recomputed from the runs, so the deviations are over all seeds.
//
// A table written before the receptive field was recorded per seed gives
// each of its runs the table's mean, which keeps the merged mean exact.
func Merge(tables []*Table) (*Table, error) {
	if len(tables) == 0 {
		return nil, fmt.Errorf("merge: no tables")
	}
	first := tables[0]
	want := sharedConfig(first.Config)
	out := &Table{Dataset: first.Dataset, Config: first.Config, MAPEFloor: first.MAPEFloor, Created: time.Now().UTC().Format(time.RFC3339)}
	out.Config.Seeds = nil
	seen := map[uint64]int{}
	for i, t := range tables {
		if t.Dataset != first.Dataset {
			return nil, fmt.Errorf("merge: table %d is of %s, table 1 of %s", i+1, t.Dataset, first.Dataset)
		}
		if !reflect.DeepEqual(sharedConfig(t.Config), want) || t.MAPEFloor != first.MAPEFloor {
			return nil, fmt.Errorf("merge %s: table %d was run with another configuration than table 1 (only the seeds may differ)", t.Dataset, i+1)
		}
		for _, r := range t.Runs {
			if j, ok := seen[r.Seed]; ok {
				return nil, fmt.Errorf("merge %s: seed %d is in table %d and table %d", t.Dataset, r.Seed, j+1, i+1)
			}
			seen[r.Seed] = i
			if r.Receptive == nil {
				r.Receptive = map[string]float64{}
				for name, c := range t.Cells {
					r.Receptive[name] = c.Receptive
				}
			}
			out.Runs = append(out.Runs, r)
		}
	}
	slices.SortFunc(out.Runs, func(a, b Run) int { return cmp.Compare(a.Seed, b.Seed) })
	for _, r := range out.Runs {
		out.Config.Seeds = append(out.Config.Seeds, r.Seed)
	}
	out.Cells = summarise(out.Runs)
	return out, nil
}

// sharedConfig is the part of a configuration that tables to be merged share.
func sharedConfig(c Config) Config {
	c.Seeds, c.ModelDir, c.DataDir = nil, "", ""
	return c
}
