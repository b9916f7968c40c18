package stream

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/gru"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/nn"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

const testStep = 5 * 60000 // 5-minute slots, as PeMS

// testBundle builds a bundle of freshly initialised layers: n nodes, window
// T, C channels, hidden d; node z's receptive nodes are z, z+1 and z+3
// (mod n), except for node 0, which only has itself.
func testBundle(tb testing.TB, n, T, C, d int, seed uint64) *sdgnn.Bundle {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	theta := &sdgnn.Theta{Nodes: make([][]int, n), Weights: make([][]float64, n)}
	for z := 0; z < n; z++ {
		ks := []int{z}
		if z > 0 {
			ks = append(ks, (z+1)%n, (z+3)%n)
		}
		slices.Sort(ks)
		ks = slices.Compact(ks)
		theta.Nodes[z] = ks
		for range ks {
			theta.Weights[z] = append(theta.Weights[z], 0.1+rng.Float64())
		}
	}
	norm := snapshot.Normalizer{Mean: make([]float64, C), Std: make([]float64, C)}
	for c := 0; c < C; c++ {
		norm.Mean[c], norm.Std[c] = 50+10*float64(c), 5+float64(c)
	}
	meta := sdgnn.BundleMeta{Dataset: "test", Nodes: n, Window: T, Hidden: d, Norm: norm, Version: "test-v1"}
	meta.Config.PhiHidden = d + 1
	b, err := sdgnn.NewBundle(meta, gru.New(C, d, rng), nn.NewMLP("phi", d, d+1, d, rng), theta, nn.NewMLP("dec", d, d+2, C, rng))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// testSeries returns a series of steps×n×C raw values around the normaliser's
// means, with about one reading in ten missing (all channels 0), except in
// the last step, where every node has a reading.
func testSeries(steps, n, C int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	data := make([]float64, steps*n*C)
	for s := 0; s < steps; s++ {
		for i := 0; i < n; i++ {
			if rng.IntN(10) == 0 && s < steps-1 {
				continue
			}
			for c := 0; c < C; c++ {
				data[(s*n+i)*C+c] = 50 + 10*float64(c) + 5*rng.NormFloat64()
			}
		}
	}
	return data
}

// streamOf returns the readings of the series, slot-major, starting at slot
// base; missing readings (all zero) are left out of the stream, so that the
// state sees them as gaps.
func streamOf(data []float64, steps, n, C int, base int64) []Reading {
	var rs []Reading
	for s := 0; s < steps; s++ {
		for i := 0; i < n; i++ {
			v := data[(s*n+i)*C : (s*n+i+1)*C]
			if v[0] == 0 {
				continue
			}
			rs = append(rs, Reading{Sensor: i, TS: (base + int64(s)) * testStep, Values: slices.Clone(v)})
		}
	}
	return rs
}

func mustApply(tb testing.TB, st *State, rs []Reading) {
	tb.Helper()
	for _, r := range rs {
		if _, err := st.Apply(r); err != nil {
			tb.Fatal(err)
		}
	}
}

// testBundle6 is testBundle with six receptive nodes per node (z, z+1,
// z+2, z+3, z+5, z+8 mod n), the budget of the shipped models.
func testBundle6(tb testing.TB, n, T, C, d int, seed uint64) *sdgnn.Bundle {
	tb.Helper()
	b := testBundle(tb, n, T, C, d, seed)
	rng := rand.New(rand.NewPCG(seed, 8))
	for z := 0; z < n; z++ {
		ks := []int{z, (z + 1) % n, (z + 2) % n, (z + 3) % n, (z + 5) % n, (z + 8) % n}
		slices.Sort(ks)
		ks = slices.Compact(ks)
		b.Theta.Nodes[z], b.Theta.Weights[z] = ks, nil
		for range ks {
			b.Theta.Weights[z] = append(b.Theta.Weights[z], 0.1+rng.Float64())
		}
	}
	return b
}

// szTaxiSet loads SZ-taxi, splits its windows of T steps 6:2:2 in time and
// returns the split and the snapshots, normalised on the training steps
// (datatest.Chrono over the whole series).
func szTaxiSet(tb testing.TB, T int) (*pems.Dataset, snapshot.Split, *snapshot.Set) {
	tb.Helper()
	ds := datatest.SZTaxi(tb)
	split, set := datatest.Chrono(tb, ds, 0, T)
	return ds, split, set
}

// testBroker starts an embedded broker, closed when the test ends, and
// creates topics of the given partitions on it.
func testBroker(ctx context.Context, tb testing.TB, partitions int, topics ...string) *Embedded {
	tb.Helper()
	emb, err := StartEmbedded(0, "")
	if err != nil {
		tb.Fatal(err)
	}
	forgetBrokers()
	tb.Cleanup(emb.Close)
	if err := EnsureTopics(ctx, []string{emb.Addr}, partitions, topics...); err != nil {
		tb.Fatal(err)
	}
	return emb
}

// runService runs svc in the background until ctx ends or stop is called;
// done then receives what Run returned.
func runService(ctx context.Context, svc *Service) (stop context.CancelFunc, done <-chan error) {
	runCtx, stop := context.WithCancel(ctx)
	ch := make(chan error, 1)
	go func() { ch <- svc.Run(runCtx) }()
	return stop, ch
}

// serveInTest runs svc in the background like runService and returns a
// stop that ends it and returns what Run returned; stop may be called more
// than once, and is called at the test's end if the test has not.
func serveInTest(ctx context.Context, tb testing.TB, svc *Service) (stop func() error) {
	cancel, done := runService(ctx, svc)
	stop = sync.OnceValue(func() error {
		cancel()
		return <-done
	})
	tb.Cleanup(func() { stop() })
	return stop
}

// lockedLog is a log sink that a test may read while the service writes
// to it.
type lockedLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// forgetBrokers clears kafka-go's shared default transport, which the
// plaintext writers and clients of the service and of the tests use, of
// what it learnt of the brokers of earlier tests. Its pools, one per
// address, outlive their brokers and remember a refused dial for the
// metadata's lifetime: a broker started at a port an earlier test used
// would meet that refusal (TestForgetBrokers). Tests call it as their
// broker starts.
func forgetBrokers() {
	if t, ok := kafka.DefaultTransport.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}
