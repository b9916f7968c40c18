package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/stream"
)

func cmdPublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := addPublishFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*f.dataset = datasetName(*f.dataset)
	if err := f.check(); err != nil {
		return err
	}
	sec, err := f.secf.security()
	if err != nil {
		return err
	}
	if sec.ClearPassword() {
		fmt.Fprintln(stderr, "forecaster publish: warning: SASL PLAIN without TLS: the password crosses the network in clear; add -tls")
	}
	job := replay{dataDir: *f.dataDir, dataset: *f.dataset, part: *f.part, topic: *f.topic, speedup: *f.speedup, start: *f.start, limit: *f.limit}
	if err := job.check(); err != nil {
		return err
	}
	if *f.model != "" {
		b, err := sdgnn.LoadBundle(*f.model)
		if err != nil {
			return err
		}
		job.bundle, job.model = b, *f.model
		if !flagSet(fs, "dataset") {
			job.dataset = b.Meta.Dataset // the bundle's, unless asked otherwise
		}
	}
	addrs := strings.Split(*f.brokers, ",")
	if *f.csvPath != "" {
		return f.publishCSV(ctx, job, addrs, sec, stdout, stderr)
	}
	return f.publishReplay(ctx, job, addrs, sec, stdout, stderr)
}

// publishFlags are publish's flags.
type publishFlags struct {
	fs      *flag.FlagSet
	brokers *string
	dataDir *string
	dataset *string
	model   *string
	part    *string
	topic   *string
	speedup *float64
	start   *string
	limit   *int
	csvPath *string
	badRows *string
	dryRun  *bool
	from    *int
	fromTS  *string
	history *int
	sortCSV *bool
	retry   *time.Duration
	wait    *time.Duration
	secf    securityFlags
}

// addPublishFlags defines publish's flags on fs.
func addPublishFlags(fs *flag.FlagSet) publishFlags {
	return publishFlags{
		fs:      fs,
		brokers: fs.String("brokers", "", "Kafka bootstrap addresses host:port,... (required)"),
		dataDir: fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)"),
		dataset: fs.String("dataset", "sz-taxi", "dataset to replay (default with -model: the bundle's)"),
		model:   fs.String("model", "", "SDGNN bundle whose split and window choose the part (default: a chronological 6:2:2 split of 12-step windows)"),
		part:    fs.String("split-part", "test", "train, val or test"),
		topic:   fs.String("topic", "readings", "readings topic"),
		speedup: fs.Float64("speedup", 0, "replay speed-up over real time (0: as fast as possible); with -csv, rows are sent as their ts comes, from the first row's"),
		start:   fs.String("start", "", "timestamp of the dataset's first step (RFC 3339, on the slot grid; default the dataset's real start, which a bundle trained with -prep paper needs for its calendar inputs)"),
		limit:   fs.Int("steps", 0, "publish at most this many steps (0: the whole part)"),
		csvPath: fs.String("csv", "", "publish the readings of this CSV file (- for standard input) instead of a dataset's: a header ts,sensor,CHANNEL... (the dataset's channel names, any order), one reading per row, sensor the sensor's ID where the model (or dataset) has IDs, as Los-loop's detectors, else its index; checked against -model's sensors, channels and slot, else -dataset's"),
		badRows: fs.String("bad-rows", "stop", "with -csv, at a row that is not a reading the model takes: stop (the rows before it are published) or skip (name it on stderr and go on)"),
		dryRun:  fs.Bool("dry-run", false, "with -csv, check every row and publish nothing (needs no -brokers); exit status 1 if any row is bad, gives a sensor's slot other values than an earlier row (the service keeps the first), or (without -sort) comes more than -history slots after a later one, which would skip forecasts"),
		from:    fs.Int("from-line", 0, "with -csv, skip the rows before this line (the header is line 1): take up a publish that stopped where its message says"),
		fromTS:  fs.String("from-ts", "", "with -csv, skip the rows of an earlier ts (Unix ms or RFC 3339): take up a -sort publish that stopped where its message says"),
		history: fs.Int("history", stream.DefaultHistory, "with -csv, the history the service keeps (serve -history): a row that comes more slots than this after a later one is named, as its forecasts would be skipped"),
		sortCSV: fs.Bool("sort", false, "with -csv, read every row first (about 50 bytes a reading in memory) and publish them in time order, as the service needs them (a file exported sensor by sensor, say); a bad row then stops before anything is published"),
		retry:   fs.Duration("retry-for", time.Minute, "how long a write the brokers do not acknowledge (a broker restarting) is tried again, after kafka-go's own attempts (about 7 s); 0: not at all"),
		wait:    addWaitFlag(fs),
		secf:    addSecurityFlags(fs),
	}
}

// check refuses flag values out of range, and flags given without the
// source (-csv or a dataset) they serve.
func (f publishFlags) check() error {
	if *f.retry < 0 {
		return usagef("-retry-for %s: want 0 or more", *f.retry)
	}
	if *f.wait < 0 {
		return usagef("-wait-brokers %s: want 0 (ask once) or more", *f.wait)
	}
	if strings.TrimSpace(*f.topic) == "" {
		return usagef("-topic is empty: want the readings topic's name")
	}
	if *f.csvPath == "" {
		for _, name := range []string{"bad-rows", "dry-run", "from-line", "from-ts", "sort", "history"} {
			if flagSet(f.fs, name) {
				return usagef("-%s goes with -csv", name)
			}
		}
	} else {
		for _, name := range []string{"split-part", "start", "steps"} {
			if flagSet(f.fs, name) {
				return usagef("-%s is for dataset replays; -csv publishes the file's readings as they are", name)
			}
		}
		if *f.model == "" && !flagSet(f.fs, "dataset") {
			return usagef("-csv needs -model or -dataset: they say which sensors, channels and slot the readings must fit")
		}
	}
	if *f.brokers == "" && !*f.dryRun {
		return usagef("-brokers is required (forecaster demo runs its own broker)")
	}
	return nil
}

// publishCSV publishes -csv's readings (or, with -dry-run, only checks
// them), each checked against job's model or dataset (see csvfeed.Job).
func (f publishFlags) publishCSV(ctx context.Context, job replay, addrs []string, sec stream.Security, stdout, stderr io.Writer) error {
	cj, err := newCSVJob(csvFlags{path: *f.csvPath, topic: *f.topic, dataDir: *f.dataDir, badRows: *f.badRows, dryRun: *f.dryRun, speedup: *f.speedup,
		fromLine: *f.from, fromLineSet: flagSet(f.fs, "from-line"), fromTS: *f.fromTS, sort: *f.sortCSV, history: *f.history}, job.dataset, job.bundle)
	if err != nil {
		return err
	}
	cj.Retry = retrying(*f.retry, stderr)
	if !*f.dryRun {
		if err := waitBrokers(ctx, addrs, sec, *f.wait, stderr); err != nil {
			if errors.Is(err, context.Canceled) {
				fmt.Fprintln(stdout, "interrupted while waiting for the brokers: nothing published")
			}
			return err
		}
	}
	return cj.Run(ctx, stdin, addrs, sec, stdout, stderr)
}

// publishReplay publishes job's part of a dataset (see replay.plan).
func (f publishFlags) publishReplay(ctx context.Context, job replay, addrs []string, sec stream.Security, stdout, stderr io.Writer) error {
	plan, err := job.plan()
	if err != nil {
		return err
	}
	if err := waitBrokers(ctx, addrs, sec, *f.wait, stderr); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stdout, "interrupted while waiting for the brokers: nothing published")
		}
		return err
	}
	plan.retry = retrying(*f.retry, stderr)
	n, err := publish(ctx, addrs, sec, plan)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdout, "interrupted: published %d readings of %s (%s) to %s\n", n, job.dataset, plan.what, *f.topic)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "published %d readings of %s (%s) to %s\n", n, job.dataset, plan.what, *f.topic)
	return nil
}
