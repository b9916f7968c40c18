package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/xdg-go/stringprep"
)

// Security says how clients reach the brokers: over TLS or not, and with a
// SASL mechanism or not, as a managed Kafka cluster asks (SASL_SSL). The
// zero value is plaintext without authentication, as the embedded broker
// speaks.
type Security struct {
	TLS  *tls.Config    // nil: plaintext
	SASL sasl.Mechanism // nil: no authentication
}

// IsZero reports whether s is plaintext without authentication.
func (s Security) IsZero() bool { return s.TLS == nil && s.SASL == nil }

// ClearPassword reports whether s sends a password the network can read:
// SASL PLAIN without TLS (SCRAM never sends the password itself).
func (s Security) ClearPassword() bool {
	return s.TLS == nil && s.SASL != nil && s.SASL.Name() == "PLAIN"
}

// String names the protocol as Kafka's security.protocol does:
// PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (with the mechanism).
func (s Security) String() string {
	switch {
	case s.TLS == nil && s.SASL == nil:
		return "PLAINTEXT"
	case s.SASL == nil:
		return "SSL"
	case s.TLS == nil:
		return "SASL_PLAINTEXT/" + s.SASL.Name()
	}
	return "SASL_SSL/" + s.SASL.Name()
}

// Dialer returns the dialer of a kafka.Reader (ReaderConfig.Dialer) that
// reaches the brokers with s: nil, kafka-go's default, for plaintext.
func (s Security) Dialer() *kafka.Dialer {
	if s.IsZero() {
		return nil
	}
	return &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: s.TLS, SASLMechanism: s.SASL}
}

// Transport returns the transport of a kafka.Writer or kafka.Client that
// reaches the brokers with s: nil, kafka-go's shared default, for
// plaintext. A non-nil one holds connections until its
// CloseIdleConnections.
func (s Security) Transport() *kafka.Transport {
	if s.IsZero() {
		return nil
	}
	return &kafka.Transport{TLS: s.TLS, SASL: s.SASL, DialTimeout: 10 * time.Second}
}

// roundTripper is t as the interface kafka.Client and kafka.Writer take:
// a nil *kafka.Transport must become a nil interface (kafka-go's default
// transport), not a non-nil one holding nil.
func roundTripper(t *kafka.Transport) kafka.RoundTripper {
	if t == nil {
		return nil
	}
	return t
}

// brokerClient returns a client of the brokers through t (nil: kafka-go's
// default transport), whose requests give up after 10 s.
func brokerClient(brokers []string, t *kafka.Transport) *kafka.Client {
	return &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: roundTripper(t)}
}

// closeTransport releases t's connections and background work, if any.
func closeTransport(t *kafka.Transport) {
	if t != nil {
		t.CloseIdleConnections()
	}
}

// SASLMechanisms are the SASL mechanisms NewSASL knows, as Kafka names them.
var SASLMechanisms = []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}

// NewSASL returns the SASL mechanism named (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512, in any case) for user and password.
func NewSASL(mechanism, user, password string) (sasl.Mechanism, error) {
	if user == "" {
		return nil, errors.New("sasl: no user name")
	}
	switch strings.ToUpper(mechanism) {
	case "PLAIN":
		return plain.Mechanism{Username: user, Password: password}, nil
	case "SCRAM-SHA-256", "SCRAM-SHA-512":
		// SCRAM normalises the password with SASLprep, and xdg-go/scram's
		// error for one SASLprep refuses quotes it whole: it is checked
		// here first, so that the error says what is wrong but not the
		// password (the whole file, were the wrong one given).
		if err := checkSASLprep(password); err != nil {
			return nil, fmt.Errorf("sasl %s: the password is not valid SASLprep (RFC 4013) text: %w (the password is not shown)", strings.ToUpper(mechanism), err)
		}
		if strings.EqualFold(mechanism, "SCRAM-SHA-512") {
			return scram.Mechanism(scram.SHA512, user, password)
		}
		return scram.Mechanism(scram.SHA256, user, password)
	}
	return nil, fmt.Errorf("sasl mechanism %q: want one of %s", mechanism, strings.Join(SASLMechanisms, ", "))
}

// checkSASLprep returns why SASLprep refuses secret, naming the
// character only when it is a control character (a line break, a tab),
// so that no part of secret is shown.
func checkSASLprep(secret string) error {
	_, err := stringprep.SASLprep.Prepare(secret)
	var se stringprep.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		return errors.New("refused")
	case unicode.IsControl(se.Rune):
		return fmt.Errorf("%s %U", se.Msg, se.Rune)
	}
	return errors.New(se.Msg)
}

// NewTLS returns a TLS client configuration: the system's roots, or those
// of the PEM file caFile when it is not empty; a client certificate from
// the PEM files certFile and keyFile when they are given (both or neither);
// serverName, when not empty, as the name the brokers' certificates must
// carry (else the host of each address).
func NewTLS(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca %s: no PEM certificate in it", caFile)
		}
		c.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("tls client certificate: give both the certificate and the key file (have %q and %q)", certFile, keyFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls client certificate %s, key %s: %w", certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// CheckBrokers connects to the brokers with s (TLS handshake and SASL
// authentication included) and returns nil as soon as one accepts, else
// what each said: an error that names a wrong password or an untrusted
// certificate, where kafka-go's Client and Writer only say "Broker Not
// Available".
func (s Security) CheckBrokers(ctx context.Context, brokers []string) error {
	// A round trip, since under TLS 1.3 a server that refuses the client's
	// certificate says so only after the client's handshake has ended.
	err := eachBroker(ctx, s, brokers, func(conn *kafka.Conn) error {
		_, err := conn.ApiVersions()
		return err
	})
	if err != nil {
		return fmt.Errorf("connect to the brokers (%s): %w", s, err)
	}
	return nil
}

// WaitBrokers is CheckBrokers asked again while no broker can be reached
// at all (every connection refused or timed out, every name unresolved)
// and wait has not passed: a service or a replay started before its
// cluster, from one compose file or deployment, waits for it instead of
// failing. It asks again after a second, then twice as long each time, up
// to 15 seconds between attempts. An answer that waiting does not change
// (a password refused, a certificate not trusted, a broker that speaks
// something else) ends the wait at once with its error, as does the end
// of ctx. failed, when not nil, is told of each failed attempt and the
// pause before the next. With wait <= 0 the brokers are asked once.
func (s Security) WaitBrokers(ctx context.Context, brokers []string, wait time.Duration, failed func(err error, next time.Duration)) error {
	start := time.Now()
	pause := time.Second
	for {
		err := s.CheckBrokers(ctx, brokers)
		if err == nil || ctx.Err() != nil || !unreachable(err) {
			return err
		}
		left := wait - time.Since(start)
		if left <= 0 {
			if wait > 0 {
				return fmt.Errorf("%w (no broker answered in %s)", err, wait)
			}
			return err
		}
		next := min(pause, left)
		if failed != nil {
			failed(err, next)
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (stopped waiting: %w)", err, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 15*time.Second)
	}
}

// unreachable reports whether err, of CheckBrokers, says of every broker
// only that it could not be reached: no connection (refused, timed out,
// no route) or no address for its name. Those are what a cluster still
// starting gives; anything a broker answered is not.
func unreachable(err error) bool {
	switch e := err.(type) {
	case *net.OpError:
		return e.Op == "dial"
	case *net.DNSError:
		return true
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		for _, e := range errs {
			if !unreachable(e) {
				return false
			}
		}
		return len(errs) > 0
	case interface{ Unwrap() error }:
		return unreachable(e.Unwrap())
	}
	return false
}

// eachBroker dials the brokers with sec, one after the other, and returns
// nil as soon as fn succeeds on one's connection, else every error met.
func eachBroker(ctx context.Context, sec Security, brokers []string, fn func(*kafka.Conn) error) error {
	d := sec.Dialer()
	if d == nil {
		d = &kafka.Dialer{Timeout: 10 * time.Second}
	}
	var errs []error
	for _, addr := range brokers {
		err := func() error {
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			defer conn.Close()
			if dl, ok := ctx.Deadline(); ok {
				conn.SetDeadline(dl)
			}
			return fn(conn)
		}()
		if err == nil {
			return nil
		}
		if sec.TLS != nil && errors.Is(err, context.DeadlineExceeded) && !unreachable(err) && strings.HasPrefix(err.Error(), "failed to dial: ") {
			// Connected (not a dial error), but the handshake, the rest
			// of kafka-go's "dial" (SASL comes after it, with errors of
			// its own), had no answer: a plaintext Kafka listener reads
			// the client hello as the start of a request and waits for
			// the rest.
			err = fmt.Errorf("%w: no answer to the TLS handshake: a plaintext listener? (-tls wants the brokers' TLS listener)", err)
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return errors.Join(errs...)
}

// presentedCert returns the leaf of the certificate that the TLS
// configuration c presents now, as a client (its GetClientCertificate's
// answer) or as a server (its GetCertificate's, which may change from one
// handshake to the next), else its first certificate; nil without one.
func presentedCert(c *tls.Config, client bool) *x509.Certificate {
	if c == nil {
		return nil
	}
	var cert *tls.Certificate
	var err error
	switch {
	case client && c.GetClientCertificate != nil:
		cert, err = c.GetClientCertificate(&tls.CertificateRequestInfo{})
	case !client && c.GetCertificate != nil:
		cert, err = c.GetCertificate(&tls.ClientHelloInfo{})
	case len(c.Certificates) > 0:
		cert = &c.Certificates[0]
	}
	if err != nil {
		return nil
	}
	return leafOf(cert)
}

// leafOf returns cert's leaf, parsed when cert does not hold it; nil
// without a certificate or with one that does not parse.
func leafOf(cert *tls.Certificate) *x509.Certificate {
	if cert == nil || len(cert.Certificate) == 0 {
		return nil
	}
	if cert.Leaf != nil {
		return cert.Leaf
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil
	}
	return leaf
}
