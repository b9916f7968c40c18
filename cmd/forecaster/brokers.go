package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/rs/zerolog"
)

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
// embedded broker speaks plaintext, and SASL with -sasl: it then accepts
// that user only (see connect).
func (b brokerFlags) security() (stream.Security, error) {
	sec, _, err := b.credentials()
	return sec, err
}

// credentials is security, with the credentials serve reads again on a
// reload (nil with the embedded broker, whose user is fixed at its start).
func (b brokerFlags) credentials() (stream.Security, *kafkaCreds, error) {
	if *b.brokers == "" {
		if b.embeddedSASL() {
			sec, _, err := b.sec.credentials()
			return sec, nil, err
		}
		if b.sec.given(b.fs) {
			return stream.Security{}, nil, usagef("-tls flags need -brokers: the embedded broker speaks plaintext (with -sasl, SASL too)")
		}
		return stream.Security{}, nil, nil
	}
	return b.sec.credentials()
}

// embeddedSASL reports whether the embedded broker is to require SASL:
// no -brokers, -sasl given, and no TLS flag.
func (b brokerFlags) embeddedSASL() bool {
	if *b.brokers != "" || *b.sec.mechanism == "" {
		return false
	}
	for _, name := range []string{"tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name"} {
		if flagSet(b.fs, name) {
			return false
		}
	}
	return true
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
	cfg := stream.EmbeddedConfig{Port: *b.port, DataDir: *b.brokerData}
	if b.embeddedSASL() {
		password, err := b.sec.password()
		if err != nil {
			return nil, nil, err
		}
		cfg.Users = []stream.EmbeddedUser{{Mechanism: *b.sec.mechanism, Name: *b.sec.user, Password: password}}
	}
	emb, err := stream.StartEmbeddedConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	log.Info().Str("addr", emb.Addr).Str("data", *b.brokerData).Bool("sasl", len(cfg.Users) > 0).Msg("embedded Kafka-protocol broker started")
	return []string{emb.Addr}, emb.Close, nil
}

func stepMs(dataset string) (int64, error) {
	info, err := pems.Lookup(dataset)
	if err != nil {
		return 0, err
	}
	return int64(info.StepMinutes) * 60 * 1000, nil
}
