package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/rs/zerolog"
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
	f := addServeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	sec, creds, err := f.bf.credentials()
	if err != nil {
		return err
	}
	var token string
	if *f.tokenFile != "" {
		if token, err = readToken(*f.tokenFile); err != nil {
			return err
		}
	}
	httpsCreds, httpTLS, err := f.https.load()
	if err != nil {
		return err
	}
	log := newLogger(stderr, *f.jsonLogs)
	runlog.Use(ctx, log, *f.jsonLogs)
	f.logHTTP(log, httpsCreds)
	// What -poll-model compares with: the file as it was before it was read,
	// so that a change while it is read is seen at the first look.
	loaded, _ := os.Stat(*f.model)
	b, step, err := f.loadModel()
	if err != nil {
		return err
	}
	scope, err := f.scope(b, log)
	if err != nil {
		return err
	}
	brokers, closeBroker, err := f.bf.connect(log)
	if err != nil {
		return err
	}
	defer closeBroker()
	rl := &reloader{path: *f.model, scored: scope != nil, https: httpsCreds, log: log}
	if creds.rotatable() {
		rl.creds = creds
	}
	cfg := f.config(brokers, sec, step, httpTLS, log, scope)
	if *f.httpReload {
		cfg.ReloadModel = func(ctx context.Context) (string, error) { return rl.reloadAll(ctx, "POST /-/reload") }
		cfg.ReloadToken = token
	}
	svc, err := stream.NewService(b, cfg)
	if err != nil {
		return err
	}
	rl.svc = svc
	if *f.pollModel > 0 {
		go rl.watch(ctx, *f.pollModel, loaded)
	}
	go rl.onSignal(ctx, hup)
	return svc.Run(ctx)
}

// serveFlags are serve's flags.
type serveFlags struct {
	fs         *flag.FlagSet
	bf         brokerFlags
	model      *string
	httpAddr   *string
	maxLag     *int64
	httpMax    *int
	httpReload *bool
	tokenFile  *string
	https      httpsFlags
	pollModel  *time.Duration
	state      *string
	rebuild    *bool
	lateness   *time.Duration
	maxFuture  *time.Duration
	maxAhead   *time.Duration
	valueRange *string
	group      *string
	history    *int
	jsonLogs   *bool
	scorePart  *string
	dataDir    *string
	start      *string
}

// addServeFlags defines serve's flags on fs.
func addServeFlags(fs *flag.FlagSet) serveFlags {
	return serveFlags{
		fs:       fs,
		bf:       addBrokerFlags(fs),
		model:    fs.String("model", "", "SDGNN bundle written by pems-train distill (required); SIGHUP reads it again and serves it if it fits"),
		httpAddr: fs.String("http", "127.0.0.1:8080", "address of /metrics, /healthz, /readyz, /forecast/{sensor}, /forecasts and the live view /live; empty: none"),
		httpMax:  fs.Int("http-max-concurrent", 0, "API requests -http serves at once (forecasts, the live view's); more wait up to a second, then get 503 and Retry-After, so that however many clients poll the forecasts keep their cores; /healthz, /readyz, /metrics and /-/reload are not held; 0: half the cores, at least 1"),
		maxLag:   fs.Int64("ready-max-lag", 0, "/readyz fails while the consumer is more than this many readings behind (0: no limit); it also fails while no broker answers or no batch is committed"),
		// Off by default, as Prometheus's --web.enable-lifecycle: whoever
		// reaches -http could otherwise make the service reread its model.
		httpReload: fs.Bool("http-reload", false, "also serve POST /-/reload on -http: reloads -model (and -http-tls-cert, -http-tls-client-ca, -sasl-password-file, -tls-cert) as SIGHUP does, answering 200 and the version served or 409 and why the model, a certificate or the password was kept"),
		tokenFile:  fs.String("http-reload-token-file", "", "with -http-reload: a file holding a secret that POST /-/reload must bring as \"Authorization: Bearer SECRET\" (401 otherwise)"),
		https:      addHTTPSFlags(fs),
		pollModel:  fs.Duration("poll-model", 0, "look at -model this often and reload it when the file changed (0: only on SIGHUP or POST /-/reload)"),
		state:      fs.String("state", "", "state snapshot file: kill -9 loses nothing when set"),
		rebuild:    fs.Bool("rebuild", true, "on taking the partitions (at start, or from a member that left), read the windows back from the readings topic and what was emitted from the forecasts topic, so that forecasts start from whole windows and none is emitted twice, even without -state"),
		lateness:   fs.Duration("lateness", 2*time.Minute, "how long after a slot ends a forecast waits for missing inputs"),
		maxFuture:  fs.Duration("max-future", 0, "dead-letter (too_new) readings stamped more than this after the current slot of this machine's clock, so that a reading from a clock gone wrong cannot move its sensor's window ahead, leaving its later readings late; 0: off (a rebuild then infers what was emitted, see -rebuild)"),
		maxAhead:   fs.Duration("max-ahead", 0, "dead-letter (too_new) readings stamped more than this after the newest slot a tenth of the sensors have reached together, judged against the stream, not the machine's clock, so that one sensor's clock gone wrong cannot silence it, even in a replay of old data; a jump of the whole stream is followed once that many sensors have made it; 0: the window and -history (3 h at 5-minute slots); negative: off"),
		valueRange: fs.String("value-range", "", "plausible values of the readings, dead-lettered (out_of_range) outside them: LO:HI for every channel, or CHANNEL=LO:HI,... by the model's channel names (the others keep the model's); empty: the model's, fitted on its training readings with a margin; off: any finite value"),
		group:      fs.String("group", "sdgnn-forecaster", "consumer group; a second serve in the group is a hot standby that takes every partition when the first leaves (whole windows at the hand-over: see -rebuild)"),
		history:    fs.Int("history", stream.DefaultHistory, "slots of readings kept beyond the window, so that inputs up to this far apart (catching up) still give exact forecasts; each slot of each sensor takes 36 bytes and 8 a channel and a hidden unit, up to 8 GiB in all"),
		jsonLogs:   fs.Bool("log-json", false, "JSON log lines"),
		// For a replay of the model's own data (forecaster publish -model).
		scorePart: fs.String("score-part", "", "train, val or test: for a replay of the model's data (forecaster publish -model), the live view also scores that part of the model's split on its own; reads the data"),
		dataDir:   fs.String("data", "", "with -score-part: data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)"),
		start:     fs.String("start", "", "with -score-part: the time of the dataset's first step, as publish -start was given it (default the dataset's real start)"),
	}
}

// check refuses flag values out of range or given without the flag they
// serve, before anything is read or started.
func (f serveFlags) check() error {
	if err := f.bf.check(); err != nil {
		return err
	}
	if *f.model == "" {
		return usagef("-model B.sdgnn is required")
	}
	if *f.scorePart == "" && (flagSet(f.fs, "data") || flagSet(f.fs, "start")) {
		return usagef("-data and -start only serve -score-part")
	}
	if *f.pollModel < 0 {
		return usagef("-poll-model %v: want 0 (off) or more", *f.pollModel)
	}
	if *f.httpReload && *f.httpAddr == "" {
		return usagef("-http-reload needs an -http address")
	}
	if *f.tokenFile != "" && !*f.httpReload {
		return usagef("-http-reload-token-file only serves -http-reload")
	}
	if err := f.https.check(*f.httpAddr); err != nil {
		return err
	}
	// An address that is no address is said now, as a usage error: not
	// after the model is loaded and the embedded broker started.
	if *f.httpAddr != "" {
		if err := checkListenAddr(*f.httpAddr); err != nil {
			return usagef("-http %s: %v", *f.httpAddr, err)
		}
	}
	return f.checkService()
}

// checkService is check for the flags of the service's own settings.
func (f serveFlags) checkService() error {
	if *f.httpMax < 0 {
		return usagef("-http-max-concurrent %d: want 0 (half the cores) or more", *f.httpMax)
	}
	if *f.maxLag < 0 {
		return usagef("-ready-max-lag %d: want 0 (no limit) or more readings", *f.maxLag)
	}
	if *f.history < 1 || *f.history > stream.MaxHistory {
		return usagef("-history %d: want 1 to %d slots", *f.history, stream.MaxHistory)
	}
	if *f.state != "" {
		if err := writableDir(*f.state); err != nil {
			return usagef("-state %s: %v", *f.state, err)
		}
	}
	if *f.lateness < 0 {
		return usagef("-lateness %v: want 0 or more", *f.lateness)
	}
	if *f.maxFuture < 0 {
		return usagef("-max-future %v: want 0 (off) or more", *f.maxFuture)
	}
	if _, _, err := parseValueRange(*f.valueRange); err != nil {
		return usagef("-value-range %q: %v", *f.valueRange, err)
	}
	if strings.TrimSpace(*f.group) == "" {
		return usagef("-group is empty: want a consumer group name")
	}
	if _, err := (snapshot.Split{}).Part(*f.scorePart); *f.scorePart != "" && err != nil {
		return usagef("-score-part %q: want train, val or test", *f.scorePart)
	}
	return nil
}

// logHTTP logs the HTTPS certificate and client authorities -http
// serves with, if any, and warns of POST /-/reload over plain HTTP on an
// address other hosts may reach.
func (f serveFlags) logHTTP(log zerolog.Logger, httpsCreds *httpsCreds) {
	if httpsCreds != nil {
		leaf := httpsCreds.cert.Leaf()
		ev := log.Info().Str("cert", *f.https.cert).Str("serial", leaf.SerialNumber.String()).Time("not_after", leaf.NotAfter).
			Bool("client_certs", httpsCreds.clientCAs != nil)
		if cas := httpsCreds.clientCAs; cas != nil {
			ev = ev.Str("client_ca", cas.File).Strs("client_authorities", subjects(cas.Certificates()))
		}
		ev.Msg("-http serves HTTPS")
	}
	if *f.httpReload && httpsCreds == nil && !loopback(*f.httpAddr) {
		log.Warn().Str("http", *f.httpAddr).Msg("POST /-/reload over plain HTTP on an address other hosts may reach: its requests, the bearer token included, cross the network in clear; add -http-tls-cert and -http-tls-key")
	}
}

// loadModel loads -model, refuses a -history its state could not hold,
// and returns it with its dataset's slot length in ms.
func (f serveFlags) loadModel() (*sdgnn.Bundle, int64, error) {
	b, err := sdgnn.LoadBundle(*f.model)
	if err != nil {
		return nil, 0, err
	}
	if need := stream.StateBytes(b, *f.history); need > stream.MaxStateBytes {
		return nil, 0, usagef("-history %d: %s's %s would keep %.1f GiB of slots, more than the %d GiB a state may take: keep fewer slots of history",
			*f.history, *f.model, english.Count(b.Meta.Nodes, "sensor"), float64(need)/(1<<30), stream.MaxStateBytes>>30)
	}
	step, err := stepMs(b.Meta.Dataset)
	if err != nil {
		return nil, 0, err
	}
	ranges, _, _ := parseValueRange(*f.valueRange) // checked
	for name := range ranges {
		if i, err := strconv.Atoi(name); name != "*" && !slices.Contains(b.Meta.Channels, name) && (err != nil || i < 0 || i >= len(b.Meta.Norm.Mean)) {
			return nil, 0, usagef("-value-range: %s has no channel %q: its channels are %s", *f.model, name, strings.Join(b.Meta.Channels, ", "))
		}
	}
	return b, step, nil
}

// scope returns the part of b's split that -score-part asks the live
// view to score apart (nil without it): the part as publish -model
// replays it, the split remade from the data, refused if it no longer
// comes out as the bundle records.
func (f serveFlags) scope(b *sdgnn.Bundle, log zerolog.Logger) (*stream.PartScope, error) {
	if *f.scorePart == "" {
		return nil, nil
	}
	plan, err := replay{dataDir: *f.dataDir, dataset: b.Meta.Dataset, bundle: b, model: *f.model, part: *f.scorePart, start: *f.start}.plan()
	if err != nil {
		return nil, fmt.Errorf("-score-part: %w", err)
	}
	scope := plan.scope()
	log.Info().Str("part", plan.what).Msg("the live view scores this part apart")
	return scope, nil
}

// config is the service's configuration the flags give.
func (f serveFlags) config(brokers []string, sec stream.Security, step int64, httpTLS *tls.Config, log zerolog.Logger, scope *stream.PartScope) stream.Config {
	ranges, off, _ := parseValueRange(*f.valueRange) // checked
	ahead := futureSlots(*f.maxAhead, step)
	if *f.maxAhead < 0 {
		ahead = -1
	}
	return stream.Config{Brokers: brokers, Security: sec, GroupID: *f.group, StepMs: step, Lateness: *f.lateness, MaxFutureSlots: futureSlots(*f.maxFuture, step),
		MaxAheadSlots: ahead, ValueRanges: ranges, NoValueRanges: off, History: *f.history, StateFile: *f.state, NoRebuild: !*f.rebuild, HTTPAddr: *f.httpAddr, HTTPTLS: httpTLS, HTTPMaxConcurrent: *f.httpMax, ReadyMaxLag: *f.maxLag, Log: log, LivePart: scope,
		WaitBrokers: *f.bf.wait}
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

// parseValueRange reads -value-range: "" (the model's ranges: nil),
// "off", "LO:HI" (every channel, as "*") or "CHANNEL=LO:HI,...".
func parseValueRange(v string) (ranges map[string]snapshot.Bounds, off bool, err error) {
	switch v = strings.TrimSpace(v); v {
	case "":
		return nil, false, nil
	case "off":
		return nil, true, nil
	}
	ranges = map[string]snapshot.Bounds{}
	for _, item := range strings.Split(v, ",") {
		name, span, named := strings.Cut(strings.TrimSpace(item), "=")
		if !named {
			name, span = "*", name
		}
		if name = strings.TrimSpace(name); name == "" {
			return nil, false, fmt.Errorf("%q: no channel before =", item)
		}
		lo, hi, ok := strings.Cut(span, ":")
		b, errLo := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		h, errHi := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		switch {
		case !ok || errLo != nil || errHi != nil:
			return nil, false, fmt.Errorf("%q: want LO:HI, two numbers", item)
		case math.IsNaN(b) || math.IsNaN(h) || b > h:
			return nil, false, fmt.Errorf("%q: the range is empty", item)
		}
		if _, dup := ranges[name]; dup {
			return nil, false, fmt.Errorf("%s given twice", name)
		}
		ranges[name] = snapshot.Bounds{Lo: b, Hi: h}
	}
	if _, all := ranges["*"]; all && len(ranges) > 1 {
		return nil, false, errors.New("LO:HI for every channel and CHANNEL=LO:HI together")
	}
	return ranges, false, nil
}
