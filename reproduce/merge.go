package reproduce

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
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
//
// Errors name a table by its File, or else by its place ("table 2").
func Merge(tables []*Table) (*Table, error) {
	if len(tables) == 0 {
		return nil, fmt.Errorf("merge: no tables")
	}
	name := func(i int) string {
		if f := tables[i].File; f != "" {
			return f
		}
		return fmt.Sprintf("table %d", i+1)
	}
	first := tables[0]
	want := sharedConfig(first.Config)
	out := &Table{Dataset: first.Dataset, Config: first.Config, MAPEFloor: first.MAPEFloor, Created: time.Now().UTC().Format(time.RFC3339)}
	out.Config.Seeds = nil
	seen := map[uint64]int{}
	for i, t := range tables {
		if t.Dataset != first.Dataset {
			return nil, fmt.Errorf("merge: %s is of %s, %s of %s", name(i), t.Dataset, name(0), first.Dataset)
		}
		if !reflect.DeepEqual(sharedConfig(t.Config), want) || t.MAPEFloor != first.MAPEFloor {
			diff := configDiff(want, sharedConfig(t.Config), name(0))
			if t.MAPEFloor != first.MAPEFloor && t.Config.MAPEFloor == first.Config.MAPEFloor {
				diff = append(diff, fmt.Sprintf("mape floor %v, %s %v", t.MAPEFloor, name(0), first.MAPEFloor))
			}
			return nil, fmt.Errorf("merge %s: %s was run with another configuration than %s (only the seeds may differ): %s", t.Dataset, name(i), name(0), strings.Join(diff, "; "))
		}
		for _, r := range t.Runs {
			if j, ok := seen[r.Seed]; ok && j == i {
				return nil, fmt.Errorf("merge %s: seed %d is in %s twice", t.Dataset, r.Seed, name(i))
			} else if ok {
				return nil, fmt.Errorf("merge %s: seed %d is in %s and %s", t.Dataset, r.Seed, name(j), name(i))
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

// configDiff names the settings in which b differs from a, the
// configuration of the table named aName, as the table files spell them
// ("split_by \"nodes\", table 1 \"windows\""), so that a refused merge
// says what to look at.
func configDiff(a, b Config, aName string) []string {
	var ma, mb map[string]any
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil || json.Unmarshal(ja, &ma) != nil || json.Unmarshal(jb, &mb) != nil {
		return []string{"settings that could not be compared"}
	}
	var out []string
	var walk func(prefix string, x, y map[string]any)
	walk = func(prefix string, x, y map[string]any) {
		keys := map[string]bool{}
		for k := range x {
			keys[k] = true
		}
		for k := range y {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			vx, okx := x[k]
			vy, oky := y[k]
			if sx, ok := vx.(map[string]any); ok {
				if sy, ok := vy.(map[string]any); ok {
					walk(prefix+k+".", sx, sy)
					continue
				}
			}
			if okx && oky && reflect.DeepEqual(vx, vy) {
				continue
			}
			show := func(v any, ok bool) string {
				if !ok {
					return "unset"
				}
				j, _ := json.Marshal(v)
				return string(j)
			}
			out = append(out, fmt.Sprintf("%s%s %s, %s %s", prefix, k, show(vy, oky), aName, show(vx, okx)))
		}
	}
	walk("", ma, mb)
	if len(out) == 0 {
		out = append(out, "settings that differ only below what the table files record")
	}
	return out
}

// sharedConfig is the part of a configuration that tables to be merged share.
func sharedConfig(c Config) Config {
	c.Seeds, c.ModelDir, c.DataDir = nil, "", ""
	return c
}
