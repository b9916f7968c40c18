package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
		clientCA: fs.String("http-tls-client-ca", "", "with -http-tls-cert: PEM file of the authorities that must have signed the clients' certificates (mutual TLS: a client without one is refused); read at start only"),
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

// load reads the certificate, its key and the client authorities, if
// given, and returns the certificate and the TLS configuration of -http;
// nil and nil without -http-tls-cert (plain HTTP). A file that cannot be
// read or does not hold what it should is an error naming it.
func (f httpsFlags) load() (*serverCert, *tls.Config, error) {
	if *f.cert == "" {
		return nil, nil, nil
	}
	c := &serverCert{certFile: *f.cert, keyFile: *f.key}
	if _, err := c.reload(); err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: c.get}
	if *f.clientCA != "" {
		data, err := os.ReadFile(*f.clientCA)
		if err != nil {
			return nil, nil, fmt.Errorf("-http-tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(data) {
			return nil, nil, fmt.Errorf("-http-tls-client-ca %s: no PEM certificate in it", *f.clientCA)
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return c, cfg, nil
}

// serverCert is the certificate -http serves HTTPS with, read from its
// files at start and again at each reload (SIGHUP, POST /-/reload), so
// that a certificate is rotated without a restart: every handshake takes
// the pair last read well (get, the TLS configuration's GetCertificate),
// and a pair that does not read leaves the one served in place.
type serverCert struct {
	certFile, keyFile string
	mu                sync.Mutex // reloads take turns (see reload)
	cur               atomic.Pointer[tls.Certificate]
}

// reload reads the certificate and key files and, if they hold a
// certificate and its key, serves them from the next handshake on and
// returns the certificate; otherwise it returns why, naming the file, and
// the pair served is kept. Reloads called at once (SIGHUP's and POST
// /-/reload's) take turns, so that the pair served is that of the one that
// read the files last.
func (c *serverCert) reload() (*x509.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	certPEM, err := os.ReadFile(c.certFile)
	if err != nil {
		return nil, fmt.Errorf("-http-tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("-http-tls-key: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The error says which of the two ("certificate input", "key
		// input") or that they do not match.
		return nil, fmt.Errorf("-http-tls-cert %s, -http-tls-key %s: %w", c.certFile, c.keyFile, err)
	}
	if pair.Leaf == nil { // filled in by X509KeyPair unless GODEBUG x509keypairleaf=0
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("-http-tls-cert %s: %w", c.certFile, err)
		}
	}
	c.cur.Store(&pair)
	return pair.Leaf, nil
}

// get is the TLS configuration's GetCertificate: the pair last read well.
func (c *serverCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}

// serial returns the serial number of the certificate served, as the
// log lines name it.
func (c *serverCert) serial() string {
	return c.cur.Load().Leaf.SerialNumber.String()
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
