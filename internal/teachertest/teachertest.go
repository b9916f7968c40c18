// Package teachertest trains the small GRU-GCN teacher that the students'
// tests (sdgnn, baseline) distil: three epochs on the first 600 steps of
// the real SZ-taxi data, hidden size 16, windows of 12 steps. It is apart
// from datatest because it imports the teacher, whose own tests use
// datatest.
package teachertest

import (
	"context"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/teacher"
)

// Quick returns the trained teacher (its best epoch by validation MAE),
// the snapshots it was trained on, their split and the dataset. It skips
// or fails as datatest.SZTaxi does without the data.
func Quick(tb testing.TB) (*teacher.Model, *snapshot.Set, snapshot.Split, *pems.Dataset) {
	tb.Helper()
	ds := datatest.SZTaxi(tb)
	split, set := datatest.Chrono(tb, ds, 600, 12)
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 12, Channels: set.Channels, Hidden: 16, NoiseStd: 0.01, Seed: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tc := teacher.DefaultTrain()
	tc.MaxEpochs, tc.LR = 3, 5e-3
	tr, err := teacher.NewTrainer(m, tc)
	if err != nil {
		tb.Fatal(err)
	}
	if err := tr.Run(context.Background(), set, split, ds.Graph.NormalizedAdjacency(), nil); err != nil {
		tb.Fatal(err)
	}
	return tr.Best, set, split, ds
}
