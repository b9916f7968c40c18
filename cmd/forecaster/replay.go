package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/csvfeed"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// replay is what publish and demo are asked to replay: a part of a
// dataset's split, the model's when bundle is set.
type replay struct {
	dataDir, dataset string
	// bundle, when not nil, chooses the split and the window: the part
	// replayed is the one the model was scored on. model names its file.
	bundle *sdgnn.Bundle
	model  string
	part   string // train, val or test
	topic  string
	// speedup over real time; 0 publishes as fast as possible.
	speedup float64
	start   string // RFC 3339 time of the first step; "" the dataset's own
	limit   int    // at most this many steps; 0 all
}

// replayPlan is a replay resolved against the data: the series steps
// [from, to) to publish, from time t0 of step 0, and an account of them.
type replayPlan struct {
	p         *snapshot.Prepared
	part      snapshot.Part // the part replayed, of p.Split
	partName  string        // train, val or test
	from, to  int
	t0        time.Time
	stepMs    int64
	slotPause time.Duration
	topic     string
	what      string
	retry     stream.Retry // how long a write not acknowledged is tried again
	// sensors names the sensors as the readings are keyed: by the
	// bundle's IDs, or by index where it has none; without a bundle, by
	// the dataset's IDs where it has them (Los-loop's detectors).
	sensors *pems.SensorNames
}

// datasetName returns the dataset's own name for a -dataset value, which
// pems.Lookup matches without regard to case or surrounding space, so that
// a bundle's dataset, a demo bundle's path and what it records do not
// depend on how the flag was typed; an unknown name is returned as given,
// for check to refuse.
func datasetName(name string) string {
	if in, err := pems.Lookup(name); err == nil {
		return in.Name
	}
	return name
}

// check refuses a request whose flags are out of range, before any data
// is read or model trained.
func (r replay) check() error {
	if r.limit < 0 {
		return usagef("-steps %d: want 0 (all) or more", r.limit)
	}
	if !(r.speedup >= 0) || math.IsInf(r.speedup, 0) {
		return usagef("-speedup %g: want 0 (as fast as possible) or more", r.speedup)
	}
	if _, err := pems.Lookup(r.dataset); err != nil {
		return usagef("-dataset: %v", err)
	}
	if r.part != "" {
		if _, err := (snapshot.Split{}).Part(r.part); err != nil {
			return usagef("-split-part %q: want train, val or test", r.part)
		}
	}
	if r.start != "" {
		if _, err := time.Parse(time.RFC3339, r.start); err != nil {
			return usagef("-start %q: want RFC 3339 (2018-01-01T00:00:00Z): %v", r.start, err)
		}
	}
	return nil
}

// plan loads the data and works out the steps to publish: from the first
// input step of the part's first snapshot to the target of its last, so that
// the service's first forecast has a whole window and every snapshot of the
// part is forecast. Without a bundle the split is chronological 6:2:2 over
// 12-step windows. A bundle's split is remade from the data and must come
// out as the bundle records it, and the road graph must be the one the
// bundle records, when it records one (its Θ names nodes of that graph). A
// part dealt by windows or split by nodes
// spans the whole series: every reading is published, since the service
// needs every window, and forecasts outside the part are made too (pems-train
// report scores only the part's).
func (r replay) plan() (replayPlan, error) {
	// The request is checked before any data is read.
	if err := r.check(); err != nil {
		return replayPlan{}, err
	}
	var (
		p   *snapshot.Prepared
		err error
	)
	window := 12
	if b := r.bundle; b != nil {
		if b.Meta.Dataset != r.dataset {
			return replayPlan{}, fmt.Errorf("bundle %s is for %s, not %s", r.model, b.Meta.Dataset, r.dataset)
		}
		if b.Meta.Split.Train.Len() == 0 {
			return replayPlan{}, fmt.Errorf("bundle %s records no split, so none of its parts can be replayed or scored (publish without -model replays a chronological 6:2:2 split)", r.model)
		}
		window = b.Meta.Window
		if p, err = snapshot.PrepareSaved(r.dataDir, r.dataset, window, b.Meta.Split, &b.Meta.Norm, b.Meta.Graph); err != nil {
			return replayPlan{}, fmt.Errorf("bundle %s: %w", r.model, err)
		}
		if err := pems.CompareSensorIDs(b.Meta.SensorIDs, p.Dataset.SensorIDs); err != nil {
			return replayPlan{}, fmt.Errorf("bundle %s: the sensors of %s in %s are not the ones it was distilled on: %w", r.model, r.dataset, p.Dir, err)
		}
	} else if p, err = snapshot.Prepare(r.dataDir, r.dataset, window, snapshot.SplitSpec{Ratios: [3]float64{6, 2, 2}}, nil); err != nil {
		return replayPlan{}, err
	}
	sensors, err := r.sensorNames(p)
	if err != nil {
		return replayPlan{}, err
	}
	pt, err := p.Split.Part(r.part)
	if err != nil {
		return replayPlan{}, usagef("-split-part: %v", err)
	}
	if pt.Len() == 0 {
		return replayPlan{}, fmt.Errorf("-split-part %s: the part is empty", r.part)
	}
	pl := replayPlan{p: p, part: pt, partName: r.part, from: pt.First(), to: pt.Last() + 1 + window, t0: p.Dataset.Info.Start, topic: r.topic, sensors: sensors}
	if r.start != "" {
		if pl.t0, err = time.Parse(time.RFC3339, r.start); err != nil {
			return replayPlan{}, fmt.Errorf("-start %q: %w", r.start, err)
		}
	}
	if pl.stepMs, err = stepMs(r.dataset); err != nil {
		return replayPlan{}, err
	}
	if r.limit > 0 {
		pl.to = min(pl.to, pl.from+r.limit)
	}
	if r.start != "" {
		// A usage error before anything starts, rather than a failure
		// after the brokers (off the grid) or readings published only for
		// the service to dead-letter every one (outside 1970–9999).
		t0 := pl.t0.UnixMilli()
		if t0%pl.stepMs != 0 {
			return replayPlan{}, usagef("-start %s: not on %s's %d-minute slot grid", r.start, r.dataset, pl.stepMs/60000)
		}
		first, last := t0+int64(pl.from)*pl.stepMs, t0+int64(pl.to-1)*pl.stepMs
		if first < 0 || last > stream.MaxTS {
			return replayPlan{}, usagef("-start %s: the readings would be stamped %s to %s, outside 1970–9999, which the service refuses",
				r.start, time.UnixMilli(first).UTC().Format(time.RFC3339), time.UnixMilli(last).UTC().Format(time.RFC3339))
		}
	}
	if r.speedup > 0 {
		pl.slotPause = csvfeed.SlowedDown(pl.stepMs, r.speedup)
	}
	pl.what = fmt.Sprintf("steps %d–%d, the %s part of split %s", pl.from, pl.to-1, r.part, p.Split)
	return pl, nil
}

// sensorNames returns the names the readings of p are keyed by: the
// bundle's sensors' (its IDs, or indices where it records none, as the
// service serving it takes them), or without a bundle the dataset's.
func (r replay) sensorNames(p *snapshot.Prepared) (*pems.SensorNames, error) {
	if r.bundle != nil {
		return r.bundle.SensorNames()
	}
	return p.Dataset.Names()
}

// scope is the live view's part scope of the plan: its part's forecasts,
// scored apart from the others (the training sensors of a split by nodes,
// the training snapshots of a split by windows, the first forecasts before
// the part's first full window).
func (pl replayPlan) scope() *stream.PartScope {
	return &stream.PartScope{Name: pl.partName + " part", Part: pl.part, Window: pl.p.Set.Window, StartMs: pl.t0.UnixMilli()}
}

// publish creates the plan's topic if needed and publishes its steps,
// slot by slot, keyed by sensor; it returns the number of readings. The
// callers have waited for the brokers (waitBrokers).
func publish(ctx context.Context, brokers []string, sec stream.Security, pl replayPlan) (int, error) {
	if err := sec.EnsureTopics(ctx, brokers, 4, pl.topic); err != nil {
		return 0, err
	}
	s := pl.p.Dataset.Series
	return stream.Publish(ctx, stream.Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		stream.PublishConfig{Brokers: brokers, Security: sec, Topic: pl.topic, From: pl.from, To: pl.to, Start: pl.t0, StepMs: pl.stepMs, SlotPause: pl.slotPause, Retry: pl.retry, Sensors: pl.sensors})
}

// retrying returns publish's Retry of -retry-for d, naming each new
// attempt on w.
func retrying(d time.Duration, w io.Writer) stream.Retry {
	return stream.Retry{For: d, OnRetry: func(err error, waiting int, since time.Duration) {
		fmt.Fprintf(w, "forecaster publish: %v; trying again (%d readings waiting, %s of -retry-for %s gone)\n", err, waiting, since.Round(time.Second), d)
	}}
}
