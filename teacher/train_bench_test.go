package teacher

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gcn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// BenchmarkTrainStep measures one training batch of GRU-GCN (32 snapshots,
// window 12, hidden 16, forward, masked MAE, backward, Adam) on the real road
// graphs of the datasets with their numbers of channels: SZ-taxi's 156 roads
// with one, PeMS08's 170 and PeMS04's 307 sensors with three. The readings are random (a batch
// costs the same whatever they are); an epoch costs a step times the number of
// training batches, so the ratio of two shapes is the ratio of their epochs'
// costs per batch.
func BenchmarkTrainStep(b *testing.B) {
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		b.Skipf("no data directory: %v", err)
	}
	for _, c := range []struct {
		name            string
		graph           string // graph file under dir
		nodes, channels int
	}{
		{"sz-taxi", "sz-taxi/SZ_taxi_adj.csv", 156, 1},
		{"pems08", "pems/pems08/distance.csv", 170, 3},
		{"pems04", "pems/pems04/distance.csv", 307, 3},
	} {
		b.Run(fmt.Sprintf("%s/nodes=%d", c.name, c.nodes), func(b *testing.B) {
			read := func(path string) (*pems.Graph, error) { return pems.ReadDistanceCSV(path, c.nodes) }
			if c.channels == 1 {
				read = pems.ReadAdjacencyCSV
			}
			g, err := read(filepath.Join(dir, c.graph))
			if err != nil {
				b.Skipf("graph: %v", err)
			}
			var adj gcn.Propagator = g.NormalizedAdjacency()
			const steps, window, batch = 200, 12, 32
			rng := rand.New(rand.NewPCG(1, 1))
			data := make([]float64, steps*c.nodes*c.channels)
			for i := range data {
				data[i] = 1 + 100*rng.Float64()
			}
			split, err := snapshot.ChronoSplit(steps-window, [3]float64{6, 2, 2})
			if err != nil {
				b.Fatal(err)
			}
			norm, err := snapshot.FitNormalizer(data, c.nodes, c.channels, split.TrainSteps(window))
			if err != nil {
				b.Fatal(err)
			}
			set, err := snapshot.NewSet(data, steps, c.nodes, c.channels, window, norm)
			if err != nil {
				b.Fatal(err)
			}
			m, err := New(Config{Kind: KindGRUGCN, Window: window, Channels: c.channels, Hidden: 16, NoiseStd: 0.05, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			tr, err := NewTrainer(m, DefaultTrain())
			if err != nil {
				b.Fatal(err)
			}
			idx := split.Train.Snapshots()[:batch]
			noise := rand.New(rand.NewPCG(2, 2))
			ps := m.Params()
			b.ResetTimer()
			for b.Loop() {
				if _, err := tr.step(set, split.Train, idx, adj, noise, ps); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
