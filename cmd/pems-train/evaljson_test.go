package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// snakeKey is the form of every key eval -json writes.
var snakeKey = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// jsonKeys calls f with every object key in the decoded JSON value v and
// its path.
func jsonKeys(v any, path string, f func(path, key string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			f(path, k)
			jsonKeys(x, path+"."+k, f)
		}
	case []any:
		for _, x := range v {
			jsonKeys(x, path+"[]", f)
		}
	}
}

// TestEvalJSONKeys checks that every key of eval -json is lower-case, the
// snapshot range and deal included, and that files eval wrote before those
// two were (capitalised "Start", "Lo", ...) read the same.
func TestEvalJSONKeys(t *testing.T) {
	want := evalResult{Model: "m.sdgnn", Kind: "sdgnn", Dataset: "sz-taxi", Split: "test",
		Range: snapshot.Range{Start: 0, End: 2964}, Deal: snapshot.Deal{Every: 10, Lo: 8, Hi: 10},
		Prep: snapshot.PrepPaper, Receptive: 5.5, Trained: provenance{Version: "v", Rounds: 3, Budget: 6},
		Report: evaluation.Report{ChunkMAEStd: []float64{0.5}}, Against: &comparison{Model: "t.model"}}
	cur, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var generic any
	if err := json.Unmarshal(cur, &generic); err != nil {
		t.Fatal(err)
	}
	jsonKeys(generic, "", func(path, key string) {
		if !snakeKey.MatchString(key) {
			t.Errorf("eval -json key %s.%s is not lower-case", path, key)
		}
	})

	for _, tc := range []struct {
		name, json string
	}{
		{"current", string(cur)},
		{"capitalised range and deal, as written before", `{"model":"m.sdgnn","kind":"sdgnn","dataset":"sz-taxi","split":"test",
			"range":{"Start":0,"End":2964},"deal":{"Every":10,"Lo":8,"Hi":10},"prep":"paper","mean_receptive_field":5.5,
			"trained":{"version":"v","rounds":3,"budget":6},"report":{"chunk_mae_std":[0.5]},"against":{"model":"t.model"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got evalResult
			if err := json.Unmarshal([]byte(tc.json), &got); err != nil {
				t.Fatal(err)
			}
			if got.Range != want.Range || got.Deal != want.Deal || got.Trained != want.Trained || got.Against == nil || got.Against.Model != "t.model" {
				t.Errorf("read range %+v, deal %+v, trained %+v; want %+v, %+v, %+v", got.Range, got.Deal, got.Trained, want.Range, want.Deal, want.Trained)
			}
			if s := (snapshot.Part{Range: got.Range, Deal: got.Deal}); s.Len() != 592 || !s.Contains(8) || s.Contains(7) {
				t.Errorf("read part %+v: %d snapshots", s, s.Len())
			}
		})
	}
}
