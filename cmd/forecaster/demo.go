package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/datasets/fetch"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/pemsforecast/sdgnn/teacher"
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addDemoFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*f.dataset = datasetName(*f.dataset)
	if err := f.check(); err != nil {
		return err
	}
	sec, err := f.bf.security()
	if err != nil {
		return err
	}
	log := newLogger(stderr, *f.jsonLogs)
	runlog.Use(ctx, log, *f.jsonLogs)
	// A dataset that no data directory holds is downloaded from its public
	// upstream into the per-user cache (or -data, $PEMS_DATA).
	progress := log.With().Str(zerolog.LevelFieldName, zerolog.LevelInfoValue).Logger() // a line a log event
	if *f.dataDir, err = (&fetch.Fetcher{Progress: progress}).Ensure(ctx, *f.dataDir, *f.dataset); err != nil {
		return err
	}
	path := *f.model
	if path == "" {
		path = filepath.Join("runs", "demo-"+*f.dataset+".sdgnn")
	}
	b, err := sdgnn.LoadBundle(path)
	if errors.Is(err, os.ErrNotExist) && *f.model == "" {
		log.Warn().Str("bundle", path).Msg("no model bundle yet: training a quick one first (a few minutes on 2 cores)")
		if b, err = quickBundle(ctx, log, *f.dataDir, *f.dataset, path, *f.floor); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	// The test part of the split the model was trained and selected with.
	plan, err := replay{dataDir: *f.dataDir, dataset: *f.dataset, bundle: b, model: path, part: "test", topic: "readings", speedup: *f.speedup, limit: *f.steps}.plan()
	if err != nil {
		return err
	}
	log.Info().Str("replay", plan.what).Msg("replaying")
	brokers, closeBroker, err := f.bf.connect(log)
	if err != nil {
		return err
	}
	defer closeBroker()
	// The live view and the line below score the test part apart: the
	// training sensors or snapshots of a split by nodes or windows are
	// replayed and forecast too.
	scope := plan.scope()
	svc, err := stream.NewService(b, f.config(plan, scope, brokers, sec, log))
	if err != nil {
		return err
	}
	if err := waitBrokers(ctx, brokers, sec, *f.bf.wait, stderr); err != nil {
		return err
	}
	if err := sec.EnsureTopics(ctx, brokers, 4, "readings", "forecasts", "readings-dead-letter"); err != nil {
		return err
	}
	return runDemo(ctx, svc, plan, scope, brokers, sec, *f.floor, log, stdout)
}

// demoFlags are demo's flags.
type demoFlags struct {
	fs       *flag.FlagSet
	bf       brokerFlags
	model    *string
	dataDir  *string
	dataset  *string
	speedup  *float64
	steps    *int
	httpAddr *string
	floor    *float64
	jsonLogs *bool
}

// addDemoFlags defines demo's flags on fs.
func addDemoFlags(fs *flag.FlagSet) demoFlags {
	return demoFlags{
		fs:       fs,
		bf:       addBrokerFlags(fs),
		model:    fs.String("model", "", "SDGNN bundle (default runs/demo-DATASET.sdgnn, trained quickly first when missing)"),
		dataDir:  fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents, then the per-user cache, where a dataset no directory holds is downloaded from its public upstream)"),
		dataset:  fs.String("dataset", "sz-taxi", "dataset whose test split is replayed"),
		speedup:  fs.Float64("speedup", 3600, "replay speed-up over real time (0: as fast as possible)"),
		steps:    fs.Int("steps", 200, "replay at most this many steps of the test split (0: all)"),
		httpAddr: fs.String("http", "127.0.0.1:8080", "address of /metrics, /healthz, /readyz, /forecast/{sensor}, /forecasts and the live view /live"),
		floor:    fs.Float64("mape-floor", 0, "readings below this value are left out of the live MAPE (default: 1 for sz-taxi, which has near-zero speeds; 0 for PeMS, whose occupancy, a fraction, is always below 1)"),
		jsonLogs: fs.Bool("log-json", false, "JSON log lines"),
	}
}

// check refuses flag values out of range, and an -http address in use,
// before a bundle is trained; it sets -mape-floor's default by dataset.
func (f demoFlags) check() error {
	if err := f.bf.check(); err != nil {
		return err
	}
	// Checked before a bundle is trained.
	if err := (replay{dataset: *f.dataset, speedup: *f.speedup, limit: *f.steps}).check(); err != nil {
		return err
	}
	if !flagSet(f.fs, "mape-floor") {
		*f.floor = demoMAPEFloor(*f.dataset)
	}
	if !(*f.floor >= 0) || math.IsInf(*f.floor, 0) {
		return usagef("-mape-floor %g: want a finite value ≥ 0, as pems-train's", *f.floor)
	}
	// An address in use (another demo, a serve) is said now, not after a
	// bundle is trained.
	if *f.httpAddr != "" {
		ln, err := net.Listen("tcp", *f.httpAddr)
		if err != nil {
			return usagef("-http %s: %v (another demo or serve running? give another address)", *f.httpAddr, err)
		}
		ln.Close()
	}
	return nil
}

// config is the demo service's configuration: a replay clock, the
// part scope given, a lateness of two slots, and a consumer
// group of its own.
func (f demoFlags) config(plan replayPlan, scope *stream.PartScope, brokers []string, sec stream.Security, log zerolog.Logger) stream.Config {
	step := plan.stepMs
	// A replay clock: slot time advances with the replay, so that the
	// lateness deadline means the same as in real time. The readings carry
	// their real times (the series' first step at the dataset's start), which
	// a bundle with calendar inputs needs.
	start := plan.t0
	first := start.Add(time.Duration(plan.from) * time.Duration(step) * time.Millisecond)
	began := time.Now()
	speedup := *f.speedup
	now := func() time.Time {
		if speedup <= 0 {
			return first
		}
		return first.Add(spedUp(time.Since(began), speedup))
	}
	return stream.Config{Brokers: brokers, Security: sec, StepMs: step, LiveMAPEFloor: f.floor, Lateness: 2 * time.Duration(step) * time.Millisecond,
		HTTPAddr: *f.httpAddr, Now: now, GroupID: fmt.Sprintf("demo-%d", time.Now().UnixNano()), Log: log, LivePart: scope}
}

// runDemo runs svc, publishes the plan's readings beside it, and writes a
// line a second of readings, forecasts, latency and live scores to
// stdout, until the replay is done and the last forecasts are in (a last
// line, then), the publisher fails, or ctx ends.
func runDemo(ctx context.Context, svc *stream.Service, plan replayPlan, scope *stream.PartScope, brokers []string, sec stream.Security, floor float64, log zerolog.Logger, stdout io.Writer) error {
	runCtx, stopSvc := context.WithCancel(ctx)
	defer stopSvc()
	svcDone := make(chan error, 1)
	go func() { svcDone <- svc.Run(runCtx) }()

	live := newScorer(floor, plan.stepMs, scope, plan.sensors)
	go live.consume(runCtx, brokers, sec, "forecasts", true)
	go live.consume(runCtx, brokers, sec, "readings", false)

	pubDone := make(chan error, 1)
	var published atomic.Int64
	go func() {
		n, err := publish(ctx, brokers, sec, plan)
		published.Store(int64(n))
		pubDone <- err
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastF, lastR uint64
	var pubErr error
	pubFinished := false
	for {
		select {
		case err := <-svcDone:
			return err
		case pubErr = <-pubDone:
			pubFinished = true
			if pubErr != nil {
				// The service stops before the broker closes (deferred),
				// whether the publisher failed or was interrupted (ctx
				// ended: it may report that before ctx.Done is picked).
				stopSvc()
				<-svcDone
				if ctx.Err() != nil {
					return nil
				}
				return pubErr
			}
			log.Info().Int64("readings", published.Load()).Msg("replay finished; waiting for the last forecasts")
		case <-tick.C:
			c := svc.Counters()
			f, r := c.Emitted.Load(), c.Applied.Load()
			m, pm := live.metrics()
			fmt.Fprintf(stdout, "readings %7d (%6d/s)  forecasts %7d (%6d/s)  latency p50 %-7v p99 %-7v  live %s; %s %s\n",
				r, r-lastR, f, f-lastF, c.ForecastLatency.Quantile(0.5), c.ForecastLatency.Quantile(0.99), scoreText(m, 3, "  "), scope.Name, scoreText(pm, 3, "  "))
			if pubFinished && f == lastF && r == lastR {
				stopSvc()
				<-svcDone
				fmt.Fprintln(stdout, doneText(r, f, m, pm, scope.Name))
				return nil
			}
			lastF, lastR = f, r
		case <-ctx.Done():
			stopSvc()
			<-svcDone
			return nil
		}
	}
}

// demoMAPEFloor is the demo's -mape-floor when none is given: 1 for
// SZ-taxi, whose speeds go down to near zero, and 0 otherwise. One floor
// holds for every channel, and PeMS's occupancy is a fraction: a floor of
// 1 would leave that whole channel out of the live MAPE.
func demoMAPEFloor(dataset string) float64 {
	if strings.EqualFold(strings.TrimSpace(dataset), "sz-taxi") { // named as pems.Lookup matches names
		return 1
	}
	return 0
}

// quickBundle trains a GRU-GCN teacher briefly and distils it with the quick
// schedule, logging progress, and saves the bundle at path; the bundle
// keeps floor as its MAPE floor, which serve's live view takes.
func quickBundle(ctx context.Context, log zerolog.Logger, dataDir, dataset, path string, floor float64) (*sdgnn.Bundle, error) {
	p, err := snapshot.Prepare(dataDir, dataset, 12, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, nil)
	if err != nil {
		return nil, err
	}
	noise := 0.01
	if dataset == "pems08" {
		noise = 0.05
	}
	m, err := teacher.New(teacher.Config{Kind: teacher.KindGRUGCN, Window: 12, Channels: p.Set.Channels, Hidden: 16, NoiseStd: noise, Seed: 1})
	if err != nil {
		return nil, err
	}
	tc := teacher.DefaultTrain()
	tc.MaxEpochs, tc.LR = 8, 5e-3
	tr, err := teacher.NewTrainer(m, tc)
	if err != nil {
		return nil, err
	}
	if err := tr.Run(ctx, p.Set, p.Split, p.Adj, func(e teacher.Epoch) {
		log.Info().Int("epoch", e.Epoch).Int("of", tc.MaxEpochs).Float64("val_mae", e.Val.MAE).Msg("quick teacher")
	}); err != nil {
		return nil, err
	}
	tg, err := sdgnn.PartTargets(ctx, tr.Best, p.Set, p.Adj, p.Split.Train, p.Split.Val)
	if err != nil {
		return nil, err
	}
	train, val := tg[0], tg[1]
	cfg := sdgnn.DefaultConfig()
	cfg.Epochs, cfg.ThetaEvery, cfg.BudgetStart, cfg.BudgetEvery, cfg.FineTuneEpochs, cfg.LR = 60, 5, 16, 5, 5, 5e-3
	cfg.Select, cfg.MAPEFloor = "mae", floor
	cands, err := sdgnn.Candidates(p.Dataset.Graph.Neighbors(), cfg.Candidates)
	if err != nil {
		return nil, err
	}
	res, err := sdgnn.Distill(ctx, tr.Best, p.Set.Norm, cands, train, val, cfg, func(r sdgnn.Round) {
		log.Info().Int("epoch", r.Epoch).Int("of", cfg.Epochs).Int("budget", r.Budget).Float64("val_mae", r.Val.MAE).Msg("quick SDGNN")
	})
	if err != nil {
		return nil, err
	}
	graph := p.GraphFingerprint()
	bounds, err := p.Bounds()
	if err != nil {
		return nil, err
	}
	meta := sdgnn.BundleMeta{Dataset: dataset, Nodes: p.Set.Nodes, Channels: p.Dataset.Info.Channels, Window: 12, Hidden: 16,
		Norm: p.Set.Norm, Split: p.Split, Graph: &graph, Bounds: bounds, Config: cfg, Rounds: res.Rounds, Version: "demo-quick-" + dataset, Created: time.Now().UTC().Format(time.RFC3339),
		SensorIDs: p.Dataset.SensorIDs, Locations: p.Dataset.Locations}
	b, err := sdgnn.NewBundle(meta, tr.Best.GRU, res.Student.Phi, res.Student.Theta, res.Decoder)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := b.Save(path); err != nil {
		return nil, err
	}
	log.Info().Str("bundle", path).Float64("val_mae", res.Val.MAE).Msg("quick bundle saved")
	return b, nil
}

// spedUp returns d of real time as replay time at speedup (> 0),
// saturated at the longest Duration: a huge speed-up such as 1e9 gives,
// after some seconds, a time beyond what a Duration holds, whose
// conversion gave a negative one, and so a replay clock some 292 years
// behind, under which no deadline ever passed.
func spedUp(d time.Duration, speedup float64) time.Duration {
	x := float64(d) * speedup
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(x)
}
