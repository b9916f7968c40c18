package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"net"
	"strings"

	"github.com/pemsforecast/sdgnn/stream"
)

// httpsFlags are serve's flags that have -http serve HTTPS, so that POST
// /-/reload's token, and the forecasts, do not cross the network in
// clear.
type httpsFlags struct {
	cert, key, clientCA *string
}

func addHTTPSFlags(fs *flag.FlagSet) httpsFlags {
	return httpsFlags{
		cert:     fs.String("http-tls-cert", "", "PEM file of the certificate (its chain after it) that -http serves HTTPS with (TLS 1.2 or later; plain HTTP is then refused), with -http-tls-key; SIGHUP and POST /-/reload read both again"),
		key:      fs.String("http-tls-key", "", "PEM file of -http-tls-cert's private key"),
		clientCA: fs.String("http-tls-client-ca", "", "with -http-tls-cert: PEM file of the authorities that must have signed the clients' certificates (mutual TLS: a client without one is refused); SIGHUP and POST /-/reload read it again"),
	}
}

// check refuses flags that do not go together, naming the one missing.
func (f httpsFlags) check(httpAddr string) error {
	switch {
	case *f.cert != "" && *f.key == "":
		return usagef("-http-tls-cert needs -http-tls-key")
	case *f.key != "" && *f.cert == "":
		return usagef("-http-tls-key needs -http-tls-cert")
	case *f.clientCA != "" && *f.cert == "":
		return usagef("-http-tls-client-ca needs -http-tls-cert and -http-tls-key")
	case *f.cert != "" && httpAddr == "":
		return usagef("-http-tls-cert needs an -http address")
	}
	return nil
}

// httpsCreds are -http's certificate and, with -http-tls-client-ca, the
// authorities its clients' certificates must chain to: both are read
// again at each reload (SIGHUP, POST /-/reload), so that either is
// rotated without a restart. Every handshake takes what was last read
// well, and a file that does not read leaves what is in use in place.
type httpsCreds struct {
	cert      *stream.KeyPair
	clientCAs *stream.Authorities // nil: no client certificates asked for
}

// load reads the certificate, its key and the client authorities, if
// given, and returns them and the TLS configuration of -http; nil and nil
// without -http-tls-cert (plain HTTP). A file that cannot be read or does
// not hold what it should is an error naming it.
func (f httpsFlags) load() (*httpsCreds, *tls.Config, error) {
	if *f.cert == "" {
		return nil, nil, nil
	}
	c, err := stream.LoadKeyPair(*f.cert, *f.key, "-http-tls-cert", "-http-tls-key")
	if err != nil {
		return nil, nil, err
	}
	creds := &httpsCreds{cert: c}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.GetCertificate}
	if *f.clientCA != "" {
		if creds.clientCAs, err = stream.LoadAuthorities(*f.clientCA, "-http-tls-client-ca"); err != nil {
			return nil, nil, err
		}
		// crypto/tls's own check (RequireAndVerifyClientCert) reads
		// ClientCAs, fixed once connections are served: the check is
		// VerifyClient's, against the authorities last read. The
		// certificate request then names no authority, which lets a
		// client send any certificate it has (and have it refused).
		cfg.ClientAuth, cfg.VerifyConnection = tls.RequireAnyClientCert, creds.clientCAs.VerifyClient
	}
	return creds, cfg, nil
}

// subjects returns the subjects of certs, as the log names authorities.
func subjects(certs []*x509.Certificate) []string {
	names := make([]string, len(certs))
	for i, c := range certs {
		names[i] = c.Subject.String()
	}
	return names
}

// loopback reports whether the listen address addr (host:port) takes
// connections from this host only: its host is a loopback address or
// localhost. An empty host (every interface) or any other name is taken
// as reachable from the network.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
