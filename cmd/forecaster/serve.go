package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// SIGHUP asks for a reload from the start, so that one sent while the
	// model loads or the service starts (or stops) does not kill the
	// process, SIGHUP's default action: it is kept, and taken once the
	// service runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bf := addBrokerFlags(fs)
	var (
		model    = fs.String("model", "", "SDGNN bundle written by pems-train distill (required); SIGHUP reads it again and serves it if it fits")
		httpAddr = fs.String("http", "127.0.0.1:8080", "address of /metrics, /healthz, /readyz, /forecast/{sensor}, /forecasts and the live view /live; empty: none")
		maxLag   = fs.Int64("ready-max-lag", 0, "/readyz fails while the consumer is more than this many readings behind (0: no limit); it also fails while no broker answers or no batch is committed")
		// Off by default, as Prometheus's --web.enable-lifecycle: whoever
		// reaches -http could otherwise make the service reread its model.
		httpReload = fs.Bool("http-reload", false, "also serve POST /-/reload on -http: reloads -model (and -http-tls-cert, -http-tls-client-ca, -sasl-password-file, -tls-cert) as SIGHUP does, answering 200 and the version served or 409 and why the model, a certificate or the password was kept")
		tokenFile  = fs.String("http-reload-token-file", "", "with -http-reload: a file holding a secret that POST /-/reload must bring as \"Authorization: Bearer SECRET\" (401 otherwise)")
		https      = addHTTPSFlags(fs)
		pollModel  = fs.Duration("poll-model", 0, "look at -model this often and reload it when the file changed (0: only on SIGHUP or POST /-/reload)")
		state      = fs.String("state", "", "state snapshot file: kill -9 loses nothing when set")
		rebuild    = fs.Bool("rebuild", true, "on taking the partitions (at start, or from a member that left), read the windows back from the readings topic and what was emitted from the forecasts topic, so that forecasts start from whole windows and none is emitted twice, even without -state")
		lateness   = fs.Duration("lateness", 2*time.Minute, "how long after a slot ends a forecast waits for missing inputs")
		maxFuture  = fs.Duration("max-future", 0, "dead-letter (too_new) readings stamped more than this after the current slot of this machine's clock, so that a reading from a clock gone wrong cannot move its sensor's window ahead, leaving its later readings late; 0: off (a rebuild then infers what was emitted, see -rebuild)")
		group      = fs.String("group", "sdgnn-forecaster", "consumer group; a second serve in the group is a hot standby that takes every partition when the first leaves (whole windows at the hand-over: see -rebuild)")
		history    = fs.Int("history", stream.DefaultHistory, "slots of readings kept beyond the window, so that inputs up to this far apart (catching up) still give exact forecasts; each slot of each sensor takes 16 bytes and 8 a channel and a hidden unit, up to 8 GiB in all")
		jsonLogs   = fs.Bool("log-json", false, "JSON log lines")
		// For a replay of the model's own data (forecaster publish -model).
		scorePart = fs.String("score-part", "", "train, val or test: for a replay of the model's data (forecaster publish -model), the live view also scores that part of the model's split on its own; reads the data")
		dataDir   = fs.String("data", "", "with -score-part: data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		start     = fs.String("start", "", "with -score-part: the time of the dataset's first step, as publish -start was given it (default the dataset's real start)")
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := bf.check(); err != nil {
		return err
	}
	if *model == "" {
		return usagef("-model B.sdgnn is required")
	}
	if *scorePart == "" && (flagSet(fs, "data") || flagSet(fs, "start")) {
		return usagef("-data and -start only serve -score-part")
	}
	if *pollModel < 0 {
		return usagef("-poll-model %v: want 0 (off) or more", *pollModel)
	}
	if *httpReload && *httpAddr == "" {
		return usagef("-http-reload needs an -http address")
	}
	if *tokenFile != "" && !*httpReload {
		return usagef("-http-reload-token-file only serves -http-reload")
	}
	if err := https.check(*httpAddr); err != nil {
		return err
	}
	// An address that is no address is said now, as a usage error: not
	// after the model is loaded and the embedded broker started.
	if *httpAddr != "" {
		if err := checkListenAddr(*httpAddr); err != nil {
			return usagef("-http %s: %v", *httpAddr, err)
		}
	}
	if *maxLag < 0 {
		return usagef("-ready-max-lag %d: want 0 (no limit) or more readings", *maxLag)
	}
	if *history < 1 || *history > stream.MaxHistory {
		return usagef("-history %d: want 1 to %d slots", *history, stream.MaxHistory)
	}
	if *state != "" {
		if err := writableDir(*state); err != nil {
			return usagef("-state %s: %v", *state, err)
		}
	}
	if *lateness < 0 {
		return usagef("-lateness %v: want 0 or more", *lateness)
	}
	if *maxFuture < 0 {
		return usagef("-max-future %v: want 0 (off) or more", *maxFuture)
	}
	if strings.TrimSpace(*group) == "" {
		return usagef("-group is empty: want a consumer group name")
	}
	if _, err := (snapshot.Split{}).Part(*scorePart); *scorePart != "" && err != nil {
		return usagef("-score-part %q: want train, val or test", *scorePart)
	}
	sec, creds, err := bf.credentials()
	if err != nil {
		return err
	}
	var token string
	if *tokenFile != "" {
		t, err := readToken(*tokenFile)
		if err != nil {
			return err
		}
		token = t
	}
	httpsCreds, httpTLS, err := https.load()
	if err != nil {
		return err
	}
	log := newLogger(stderr, *jsonLogs)
	runlog.Use(ctx, log, *jsonLogs)
	if httpsCreds != nil {
		leaf := httpsCreds.cert.Leaf()
		ev := log.Info().Str("cert", *https.cert).Str("serial", leaf.SerialNumber.String()).Time("not_after", leaf.NotAfter).
			Bool("client_certs", httpsCreds.clientCAs != nil)
		if cas := httpsCreds.clientCAs; cas != nil {
			ev = ev.Str("client_ca", cas.File).Strs("client_authorities", subjects(cas.Certificates()))
		}
		ev.Msg("-http serves HTTPS")
	}
	if *httpReload && httpsCreds == nil && !loopback(*httpAddr) {
		log.Warn().Str("http", *httpAddr).Msg("POST /-/reload over plain HTTP on an address other hosts may reach: its requests, the bearer token included, cross the network in clear; add -http-tls-cert and -http-tls-key")
	}
	// What -poll-model compares with: the file as it was before it was read,
	// so that a change while it is read is seen at the first look.
	loaded, _ := os.Stat(*model)
	b, err := sdgnn.LoadBundle(*model)
	if err != nil {
		return err
	}
	if need := stream.StateBytes(b, *history); need > stream.MaxStateBytes {
		return usagef("-history %d: %s's %s would keep %.1f GiB of slots, more than the %d GiB a state may take: keep fewer slots of history",
			*history, *model, english.Count(b.Meta.Nodes, "sensor"), float64(need)/(1<<30), stream.MaxStateBytes>>30)
	}
	step, err := stepMs(b.Meta.Dataset)
	if err != nil {
		return err
	}
	var scope *stream.PartScope
	if *scorePart != "" {
		// The part as publish -model replays it: the split remade from the
		// data, refused if it no longer comes out as the bundle records.
		plan, err := replay{dataDir: *dataDir, dataset: b.Meta.Dataset, bundle: b, model: *model, part: *scorePart, start: *start}.plan()
		if err != nil {
			return fmt.Errorf("-score-part: %w", err)
		}
		scope = plan.scope()
		log.Info().Str("part", plan.what).Msg("the live view scores this part apart")
	}
	brokers, closeBroker, err := bf.connect(log)
	if err != nil {
		return err
	}
	defer closeBroker()
	rl := &reloader{path: *model, scored: scope != nil, https: httpsCreds, log: log}
	if creds.rotatable() {
		rl.creds = creds
	}
	cfg := stream.Config{Brokers: brokers, Security: sec, GroupID: *group, StepMs: step, Lateness: *lateness, MaxFutureSlots: futureSlots(*maxFuture, step),
		History: *history, StateFile: *state, NoRebuild: !*rebuild, HTTPAddr: *httpAddr, HTTPTLS: httpTLS, ReadyMaxLag: *maxLag, Log: log, LivePart: scope,
		WaitBrokers: *bf.wait}
	if *httpReload {
		cfg.ReloadModel = func(ctx context.Context) (string, error) { return rl.reloadAll(ctx, "POST /-/reload") }
		cfg.ReloadToken = token
	}
	svc, err := stream.NewService(b, cfg)
	if err != nil {
		return err
	}
	rl.svc = svc
	if *pollModel > 0 {
		go rl.watch(ctx, *pollModel, loaded)
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				rl.reloadAll(ctx, "SIGHUP")
			}
		}
	}()
	return svc.Run(ctx)
}

// readToken reads a secret from path: its content, without surrounding
// white space; an empty one is refused.
func readToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("-http-reload-token-file: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("-http-reload-token-file %s is empty: want a secret", path)
	}
	return token, nil
}

// futureSlots returns d in slots of stepMs, rounded up, so that a reading
// up to d ahead of the clock is taken (0 stays 0: no limit).
func futureSlots(d time.Duration, stepMs int64) int64 {
	ms := d.Milliseconds()
	if d%time.Millisecond != 0 {
		ms++
	}
	return (ms + stepMs - 1) / stepMs
}

// writableDir reports why a file cannot be written at path, checked by
// writing and removing a file beside it: its directory missing or not
// writable. A path that is a directory is an error too.
func writableDir(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return errors.New("is a directory, want a file")
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".write-check-*")
	if err != nil {
		return fmt.Errorf("cannot write beside it: %w", err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
