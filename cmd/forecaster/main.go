// Command forecaster serves SDGNN forecasts over Kafka.
//
//	forecaster serve   -model B.sdgnn [-brokers host:port,...]          consume readings, publish forecasts
//	forecaster publish -brokers host:port,... -dataset NAME [-model B]  replay a part of a dataset (of B's split) into the readings topic
//	forecaster publish -brokers host:port,... -csv FILE [-model B]      publish a CSV file of readings, each checked against B (or -dataset);
//	                                                                    with -dry-run, only checked (no -brokers)
//	forecaster demo    [-model B.sdgnn] [-dataset sz-taxi]              embedded broker + publisher + service + live line
//
// Without -brokers, serve and demo start an embedded Kafka-protocol broker
// (kfake) on 127.0.0.1; with it they talk to any Kafka cluster. SIGHUP has
// serve read its -model file again and forecast with it from the next
// batch on, without losing or repeating a forecast slot; so does POST
// /-/reload on the -http address when serve is started with -http-reload,
// and a change of the file when it is started with -poll-model. With
// -http-tls-cert and -http-tls-key the -http address serves HTTPS only,
// and SIGHUP and POST /-/reload read the certificate again too, and the
// authorities of -http-tls-client-ca (mutual TLS).
//
// A cluster that wants TLS or SASL is reached with -tls, -tls-ca,
// -tls-cert/-tls-key, -sasl, -sasl-user and -sasl-password-file (or
// $SDGNN_SASL_PASSWORD); SIGHUP and POST /-/reload read the password file
// and the client certificate again, for the connections made afterwards.
// A second serve in the same consumer group is a
// hot standby: it holds no partition, /readyz says so, and it takes every
// partition when the first leaves. A service that begins to hold the
// partitions reads its windows back from the readings topic, and what was
// emitted from the forecasts topic (-rebuild), so that it forecasts from
// whole windows at once, and emits nothing twice, also without -state.
//
// Exit status: 0 when done (serve and demo: also after SIGTERM or Ctrl-C,
// the batch in hand committed); 1 on failure; 2 for a usage error (a wrong
// flag); 130 when publish is interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/internal/interrupt"
	"github.com/pemsforecast/sdgnn/internal/runlog"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

const usage = `forecaster: SDGNN next-slot traffic forecasts over Kafka

commands:
  serve    consume the readings topic, keep per-sensor windows, publish forecasts (-model B.sdgnn;
           SIGHUP, POST /-/reload (-http-reload) or a change of the file (-poll-model D) reloads B.sdgnn
           without a restart; -http-tls-cert/-http-tls-key serve -http over HTTPS)
  publish  replay a part of a dataset (of -model's split) into the readings topic, keyed by sensor,
           or publish a CSV file of readings (-csv FILE, - for standard input), each checked first
  demo     the whole loop on one machine: embedded broker, publisher, service, live line

without -brokers, serve and demo run an embedded Kafka-protocol broker on 127.0.0.1;
with it, -tls/-tls-ca and -sasl/-sasl-user/-sasl-password-file reach a secured cluster
run "forecaster COMMAND -h" for its flags
exit status: 0 done (serve and demo also when stopped by SIGTERM or Ctrl-C), 1 failed,
2 usage error (a wrong flag), 130 publish interrupted
`

var errUsage = errors.New("usage")

// usageError is a flag value found wrong after parsing: exit code 2 (it
// is errUsage), with a message naming the flag and what it wants.
type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == errUsage }

// usagef returns a usageError with the formatted message.
func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// stdin is what publish -csv - reads; tests feed it through a pipe.
var stdin io.Reader = os.Stdin

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	notes := runlog.New("forecaster", stderr)
	ctx, release := interrupt.ContextFunc(notes.Say)
	defer release()
	ctx = runlog.NewContext(ctx, notes)
	var err error
	switch args[0] {
	case "serve":
		err = cmdServe(ctx, args[1:], stdout, stderr)
	case "publish":
		err = cmdPublish(ctx, args[1:], stdout, stderr)
	case "demo":
		err = cmdDemo(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprintf(stderr, "forecaster: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	switch {
	case errors.Is(err, errHelp):
		return 0
	case errors.Is(err, context.Canceled) && args[0] == "publish":
		// Stopped before every reading was sent (its message, if any,
		// names where to take it up): not a success.
		return 130
	case err == nil || errors.Is(err, context.Canceled):
		return 0
	case errors.Is(err, errUsage):
		var ue *usageError
		if errors.As(err, &ue) { // the flag set has not printed it
			fmt.Fprintf(stderr, "forecaster %s: %v\n", args[0], err)
		}
		return 2
	default:
		notes.Fail(fmt.Sprintf("forecaster %s: %v", args[0], err))
		return 1
	}
}

func newLogger(w io.Writer, jsonLogs bool) zerolog.Logger {
	if !jsonLogs {
		f, ok := w.(*os.File)
		tty := ok && isatty.IsTerminal(f.Fd())
		return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: !tty, TimeFormat: "15:04:05"}).With().Timestamp().Logger()
	}
	return zerolog.New(w).With().Timestamp().Logger()
}

// brokerFlags are the flags that choose the Kafka cluster.
type brokerFlags struct {
	brokers    *string
	port       *int
	brokerData *string
	wait       *time.Duration
	sec        securityFlags
	fs         *flag.FlagSet
}

func addBrokerFlags(fs *flag.FlagSet) brokerFlags {
	return brokerFlags{
		brokers:    fs.String("brokers", "", "Kafka bootstrap addresses host:port,...; empty: start the embedded broker"),
		port:       fs.Int("embedded-port", 0, "port of the embedded broker (0: any free port)"),
		brokerData: fs.String("embedded-data", "", "directory where the embedded broker persists its log (empty: memory only)"),
		wait:       addWaitFlag(fs),
		sec:        addSecurityFlags(fs),
		fs:         fs,
	}
}

// addWaitFlag defines -wait-brokers, the time to wait at start for a
// cluster that cannot be reached yet (see stream.Security.WaitBrokers).
func addWaitFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("wait-brokers", time.Minute, "with -brokers, how long to wait at start while no broker can be reached (connection refused or timed out, name unresolved), asking again with backoff; a broker that refuses the credentials or certificate ends it at once (0: ask once)")
}

// waitBrokers waits for one of brokers to accept sec's connection, as
// -wait-brokers says, writing each failed attempt to w.
func waitBrokers(ctx context.Context, brokers []string, sec stream.Security, wait time.Duration, w io.Writer) error {
	return sec.WaitBrokers(ctx, brokers, wait, func(err error, next time.Duration) {
		fmt.Fprintf(w, "no broker reached yet (waiting up to -wait-brokers %s): %v; asking again in %s\n", wait, err, next)
	})
}

// security returns how to reach -brokers (see securityFlags); the
// embedded broker speaks plaintext only, so the flags need -brokers.
func (b brokerFlags) security() (stream.Security, error) {
	sec, _, err := b.credentials()
	return sec, err
}

// credentials is security, with the credentials serve reads again on a
// reload (nil with the embedded broker).
func (b brokerFlags) credentials() (stream.Security, *kafkaCreds, error) {
	if *b.brokers == "" {
		if b.sec.given(b.fs) {
			return stream.Security{}, nil, usagef("-tls and -sasl flags need -brokers: the embedded broker speaks plaintext")
		}
		return stream.Security{}, nil, nil
	}
	return b.sec.credentials()
}

// check refuses flag values out of range and embedded-broker flags given
// with -brokers, before anything starts.
func (b brokerFlags) check() error {
	if *b.brokers != "" {
		for _, f := range []string{"embedded-port", "embedded-data"} {
			if flagSet(b.fs, f) {
				return usagef("-%s is for the embedded broker, which -brokers replaces", f)
			}
		}
		for _, a := range strings.Split(*b.brokers, ",") {
			if strings.TrimSpace(a) == "" || strings.TrimSpace(a) != a {
				return usagef("-brokers %q: want host:port,... without spaces or empty entries", *b.brokers)
			}
		}
	}
	if *b.port < 0 || *b.port > 65535 {
		return usagef("-embedded-port %d: want a port in [0, 65535] (0: any free port)", *b.port)
	}
	if *b.wait < 0 {
		return usagef("-wait-brokers %s: want 0 (ask once) or more", *b.wait)
	}
	return nil
}

// connect returns the broker addresses and, for the embedded broker, a stop
// function.
func (b brokerFlags) connect(log zerolog.Logger) ([]string, func(), error) {
	if *b.brokers != "" {
		return strings.Split(*b.brokers, ","), func() {}, nil
	}
	emb, err := stream.StartEmbedded(*b.port, *b.brokerData)
	if err != nil {
		return nil, nil, err
	}
	log.Info().Str("addr", emb.Addr).Str("data", *b.brokerData).Msg("embedded Kafka-protocol broker started")
	return []string{emb.Addr}, emb.Close, nil
}

func stepMs(dataset string) (int64, error) {
	info, err := pems.Lookup(dataset)
	if err != nil {
		return 0, err
	}
	return int64(info.StepMinutes) * 60 * 1000, nil
}

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

// reloader reads the -model file again and has the service forecast with
// it (on SIGHUP, POST /-/reload with -http-reload, or a change of the file
// with -poll-model): a model rolled out without a restart, one reload at a
// time. An unreadable or incompatible
// file is logged and counted, and the model served is kept. With a scored
// part (-score-part), a new model of another split is warned about: the
// part scored stays the first model's, which the new one may have trained
// on.
type reloader struct {
	once   sync.Once
	turn   chan struct{} // holds a token while a reload runs (see reload)
	svc    *stream.Service
	path   string
	scored bool
	https  *httpsCreds // -http's HTTPS certificate and client authorities, reloaded by reloadAll; nil: plain HTTP
	creds  *kafkaCreds // the Kafka credentials reloadAll reads again; nil: none to read
	log    zerolog.Logger
}

// reloadAll is what SIGHUP and POST /-/reload ask for: it reads -http's
// certificate and client authorities again (with -http-tls-cert and
// -http-tls-client-ca), and the Kafka credentials
// (-sasl-password-file, -tls-cert/-tls-key), then reloads the model (see
// reload). Each is taken or kept on its own, so that a certificate that
// does not read does not hold back a new model, nor a model refused a
// rotated certificate; the error says what was kept and why, and POST
// /-/reload answers 409 with it, as for a model refused (503 when the
// model reload was busy). -poll-model reloads the model alone.
func (r *reloader) reloadAll(ctx context.Context, trigger string) (string, error) {
	var kept error
	if r.https != nil {
		kept = r.reloadHTTPS(trigger)
	}
	if r.creds != nil {
		took, err := r.creds.reload()
		if len(took) > 0 {
			r.log.Info().Strs("took", took).Str("by", trigger).Msg("Kafka credentials reloaded: new connections use them")
		}
		if err != nil {
			r.log.Error().Err(err).Str("by", trigger).Msg("Kafka credentials reload refused: the credentials in use are kept")
			r.svc.Counters().CredentialReloadFailures.Add(1)
			err = fmt.Errorf("the Kafka credentials in use are kept: %w", err)
			if kept != nil {
				err = fmt.Errorf("%w; %w", kept, err)
			}
			kept = err
		}
	}
	version, err := r.reload(ctx, trigger)
	switch {
	case kept == nil:
		return version, err
	case err == nil:
		return version, fmt.Errorf("%w; the model was reloaded", kept)
	}
	return version, fmt.Errorf("%w; and %w", err, kept)
}

// reloadHTTPS reads -http's certificate and client authorities again
// for reloadAll, logging what it took and what it kept and why; the error
// says what was kept.
func (r *reloader) reloadHTTPS(trigger string) error {
	var kept []error
	cert := r.https.cert
	was := cert.Leaf().SerialNumber.String()
	if leaf, err := cert.Reload(); err != nil {
		kept = append(kept, fmt.Errorf("the HTTPS certificate served is kept: %w", err))
		r.log.Error().Err(err).Str("serving", was).Str("by", trigger).Msg("certificate reload refused: the certificate served is kept")
		r.svc.Counters().CredentialReloadFailures.Add(1)
	} else {
		r.log.Info().Str("cert", cert.CertFile).Str("serial", leaf.SerialNumber.String()).Str("was", was).
			Time("not_after", leaf.NotAfter).Str("by", trigger).Msg("HTTPS certificate reloaded")
	}
	if cas := r.https.clientCAs; cas != nil {
		if got, err := cas.Reload(); err != nil {
			kept = append(kept, fmt.Errorf("the HTTPS client authorities in use are kept: %w", err))
			r.log.Error().Err(err).Strs("using", subjects(cas.Certificates())).Str("by", trigger).
				Msg("client authorities reload refused: the authorities in use are kept")
			r.svc.Counters().CredentialReloadFailures.Add(1)
		} else {
			r.log.Info().Str("client_ca", cas.File).Strs("client_authorities", subjects(got)).Str("by", trigger).
				Msg("HTTPS client authorities reloaded: new handshakes are checked against them")
		}
	}
	if len(kept) == 2 {
		return fmt.Errorf("%w; %w", kept[0], kept[1])
	} else if len(kept) == 1 {
		return kept[0]
	}
	return nil
}

// reload reloads the model on behalf of trigger (named in the log) and
// returns the version served afterwards, or why the model served was kept;
// it waits for the batch in hand until ctx ends (see
// stream.Service.ReloadContext).
func (r *reloader) reload(ctx context.Context, trigger string) (string, error) {
	// One reload at a time, waited for only until ctx ends: a SIGHUP or a
	// poll that waits for the batch in hand (the broker away) must not
	// hold POST /-/reload past its own deadline.
	r.once.Do(func() { r.turn = make(chan struct{}, 1) })
	start := time.Now()
	select {
	case r.turn <- struct{}{}:
	case <-ctx.Done():
		r.svc.Counters().ReloadFailures.Add(1)
		old := r.svc.Bundle().Meta.Version
		err := fmt.Errorf("reload model: %w: another reload has waited for it %s (is the broker reachable? see /readyz): %w",
			stream.ErrReloadBusy, time.Since(start).Round(time.Millisecond), ctx.Err())
		r.log.Error().Err(err).Str("model", r.path).Str("serving", old).Str("by", trigger).Msg("reload refused: the model served is kept")
		return old, err
	}
	defer func() { <-r.turn }()
	r.log.Info().Str("model", r.path).Str("by", trigger).Msg("reloading the model")
	old := r.svc.Bundle().Meta
	b, err := sdgnn.LoadBundle(r.path)
	if err != nil {
		r.svc.Counters().ReloadFailures.Add(1)
	} else {
		err = r.svc.ReloadContext(ctx, b)
	}
	if err != nil {
		r.log.Error().Err(err).Str("model", r.path).Str("serving", old.Version).Msg("reload refused: the model served is kept")
		return old.Version, err
	}
	if r.scored && !reflect.DeepEqual(b.Meta.Split, old.Split) {
		r.log.Warn().Str("model", b.Meta.Version).Str("was", old.Version).
			Msg("the new model was trained on another split: the live view still scores the part of the first model's split, which the new model may have trained on")
	}
	return b.Meta.Version, nil
}

// watch looks at the model file every interval until ctx ends and reloads
// it when it changed since last seen (another file, as after an atomic
// rename, or another size or modification time), as TensorFlow Serving
// polls its model directory. loaded is the file as it was when the model
// served was read (nil: unknown, so the first look reloads). A file
// copied in place may be seen mid-copy, refused as truncated, and taken
// at the next look; a file unchanged since a refusal is not tried again.
// A file that cannot be looked at (gone, say) is reported once, until it
// can be again.
func (r *reloader) watch(ctx context.Context, every time.Duration, loaded os.FileInfo) {
	last, missing := loaded, false
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur, err := os.Stat(r.path)
		if err != nil {
			if !missing { // once per disappearance, not at every look
				r.log.Warn().Err(err).Msg("-poll-model: cannot look at the model file: the model served is kept")
			}
			missing = true
			continue
		}
		missing = false
		if last != nil && os.SameFile(last, cur) && cur.Size() == last.Size() && cur.ModTime().Equal(last.ModTime()) {
			continue
		}
		last = cur
		r.reload(ctx, "model file changed")
	}
}

func cmdPublish(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		brokers = fs.String("brokers", "", "Kafka bootstrap addresses host:port,... (required)")
		dataDir = fs.String("data", "", "data directory (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
		dataset = fs.String("dataset", "sz-taxi", "dataset to replay (default with -model: the bundle's)")
		model   = fs.String("model", "", "SDGNN bundle whose split and window choose the part (default: a chronological 6:2:2 split of 12-step windows)")
		part    = fs.String("split-part", "test", "train, val or test")
		topic   = fs.String("topic", "readings", "readings topic")
		speedup = fs.Float64("speedup", 0, "replay speed-up over real time (0: as fast as possible); with -csv, rows are sent as their ts comes, from the first row's")
		start   = fs.String("start", "", "timestamp of the dataset's first step (RFC 3339, on the slot grid; default the dataset's real start, which a bundle trained with -prep paper needs for its calendar inputs)")
		limit   = fs.Int("steps", 0, "publish at most this many steps (0: the whole part)")
		csvPath = fs.String("csv", "", "publish the readings of this CSV file (- for standard input) instead of a dataset's: a header ts,sensor,CHANNEL... (the dataset's channel names, any order), one reading per row; checked against -model's sensors, channels and slot, else -dataset's")
		badRows = fs.String("bad-rows", "stop", "with -csv, at a row that is not a reading the model takes: stop (the rows before it are published) or skip (name it on stderr and go on)")
		dryRun  = fs.Bool("dry-run", false, "with -csv, check every row and publish nothing (needs no -brokers); exit status 1 if any row is bad, gives a sensor's slot other values than an earlier row (the service keeps the first), or (without -sort) comes more than -history slots after a later one, which would skip forecasts")
		from    = fs.Int("from-line", 0, "with -csv, skip the rows before this line (the header is line 1): take up a publish that stopped where its message says")
		fromTS  = fs.String("from-ts", "", "with -csv, skip the rows of an earlier ts (Unix ms or RFC 3339): take up a -sort publish that stopped where its message says")
		history = fs.Int("history", stream.DefaultHistory, "with -csv, the history the service keeps (serve -history): a row that comes more slots than this after a later one is named, as its forecasts would be skipped")
		sortCSV = fs.Bool("sort", false, "with -csv, read every row first (about 50 bytes a reading in memory) and publish them in time order, as the service needs them (a file exported sensor by sensor, say); a bad row then stops before anything is published")
		retry   = fs.Duration("retry-for", time.Minute, "how long a write the brokers do not acknowledge (a broker restarting) is tried again, after kafka-go's own attempts (about 7 s); 0: not at all")
		wait    = addWaitFlag(fs)
		secf    = addSecurityFlags(fs)
	)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	*dataset = datasetName(*dataset)
	if *retry < 0 {
		return usagef("-retry-for %s: want 0 or more", *retry)
	}
	if *wait < 0 {
		return usagef("-wait-brokers %s: want 0 (ask once) or more", *wait)
	}
	if strings.TrimSpace(*topic) == "" {
		return usagef("-topic is empty: want the readings topic's name")
	}
	if *csvPath == "" {
		for _, f := range []string{"bad-rows", "dry-run", "from-line", "from-ts", "sort", "history"} {
			if flagSet(fs, f) {
				return usagef("-%s goes with -csv", f)
			}
		}
	} else {
		for _, f := range []string{"split-part", "start", "steps"} {
			if flagSet(fs, f) {
				return usagef("-%s is for dataset replays; -csv publishes the file's readings as they are", f)
			}
		}
		if *model == "" && !flagSet(fs, "dataset") {
			return usagef("-csv needs -model or -dataset: they say which sensors, channels and slot the readings must fit")
		}
	}
	if *brokers == "" && !*dryRun {
		return usagef("-brokers is required (forecaster demo runs its own broker)")
	}
	sec, err := secf.security()
	if err != nil {
		return err
	}
	if sec.ClearPassword() {
		fmt.Fprintln(stderr, "forecaster publish: warning: SASL PLAIN without TLS: the password crosses the network in clear; add -tls")
	}
	job := replay{dataDir: *dataDir, dataset: *dataset, part: *part, topic: *topic, speedup: *speedup, start: *start, limit: *limit}
	if err := job.check(); err != nil {
		return err
	}
	if *model != "" {
		b, err := sdgnn.LoadBundle(*model)
		if err != nil {
			return err
		}
		job.bundle, job.model = b, *model
		if !flagSet(fs, "dataset") {
			job.dataset = b.Meta.Dataset // the bundle's, unless asked otherwise
		}
	}
	addrs := strings.Split(*brokers, ",")
	if *csvPath != "" {
		cj, err := newCSVJob(csvFlags{path: *csvPath, topic: *topic, badRows: *badRows, dryRun: *dryRun, speedup: *speedup,
			fromLine: *from, fromLineSet: flagSet(fs, "from-line"), fromTS: *fromTS, sort: *sortCSV, history: *history}, job.dataset, job.bundle)
		if err != nil {
			return err
		}
		cj.Retry = retrying(*retry, stderr)
		if !*dryRun {
			if err := waitBrokers(ctx, addrs, sec, *wait, stderr); err != nil {
				if errors.Is(err, context.Canceled) {
					fmt.Fprintln(stdout, "interrupted while waiting for the brokers: nothing published")
				}
				return err
			}
		}
		return cj.Run(ctx, stdin, addrs, sec, stdout, stderr)
	}
	plan, err := job.plan()
	if err != nil {
		return err
	}
	if err := waitBrokers(ctx, addrs, sec, *wait, stderr); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(stdout, "interrupted while waiting for the brokers: nothing published")
		}
		return err
	}
	plan.retry = retrying(*retry, stderr)
	n, err := publish(ctx, addrs, sec, plan)
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stdout, "interrupted: published %d readings of %s (%s) to %s\n", n, job.dataset, plan.what, *topic)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "published %d readings of %s (%s) to %s\n", n, job.dataset, plan.what, *topic)
	return nil
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

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// errHelp is what parseFlags returns for -h: the flags are printed, and
// the command exits 0.
var errHelp = errors.New("help asked")

// checkListenAddr reports whether addr is a TCP address to listen on:
// host:port (the host may be empty, for every interface), the port a
// number in [0, 65535] or a service name. It does not listen: whether
// the address is free is known only when the service starts.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port (:port for every interface): %w", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("want a port in [0, 65535] or a service name: %w", err)
	}
	return nil
}

// parseFlags parses args into fs: errHelp for -h or -help, errUsage (the
// flag package has said what is wrong) for any other error, and a usage
// error naming a word left after the flags: the flag package stops at the
// first, and would silently ignore every flag after it.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q: %s takes flags only (any flags after it would be ignored)", fs.Arg(0), fs.Name())
	}
	return nil
}
