package main

import "testing"

// TestProvenanceString: eval's line on a model's training names the
// parameters' digest once: after a teacher's figures, after a bundle's
// own version, and not again after a version that already ends in it.
func TestProvenanceString(t *testing.T) {
	const digest = "66eb0f98eb64c2a7d1a64dfc9e7f0c3b5bbf2a1f4e0e7a8c1d2e3f4a5b6c7d8e"
	for _, c := range []struct {
		p    provenance
		want string
	}{
		{provenance{Epochs: 8, BestEpoch: 7, BestValMAE: 3.5, Digest: digest},
			"trained 8 epochs, saved epoch 7 (validation MAE 3.5000), parameters 66eb0f98eb64"},
		{provenance{Teacher: "t.model", Rounds: 13, Budget: 6, Version: "ops-2026-11", Digest: digest},
			"distilled from t.model in 13 rounds, budget 6, version ops-2026-11, parameters 66eb0f98eb64"},
		{provenance{Teacher: "t.model", Rounds: 13, Budget: 6, Version: "sdgnn-sz-taxi-66eb0f98eb64", Digest: digest, Created: "2026-11-25T22:30:25Z"},
			"distilled from t.model in 13 rounds, budget 6, version sdgnn-sz-taxi-66eb0f98eb64, created 2026-11-25T22:30:25Z"},
		{provenance{Epochs: 2, BestEpoch: 2, BestValMAE: 4},
			"trained 2 epochs, saved epoch 2 (validation MAE 4.0000)"},
		{provenance{Epochs: 1, BestEpoch: 1, BestValMAE: 4},
			"trained 1 epoch, saved epoch 1 (validation MAE 4.0000)"},
		{provenance{Teacher: "t.model", Rounds: 1, Budget: 6},
			"distilled from t.model in 1 round, budget 6"},
	} {
		if got := c.p.String(); got != c.want {
			t.Errorf("%+v:\n got %s\nwant %s", c.p, got, c.want)
		}
	}
}
