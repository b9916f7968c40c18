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

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/pemsforecast/sdgnn/internal/interrupt"
	"github.com/pemsforecast/sdgnn/internal/runlog"
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
