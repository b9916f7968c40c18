// Package tlstest makes a certificate authority and a server certificate
// for 127.0.0.1 and localhost, and runs a broker that wants them and SASL,
// for tests of clients of a secured Kafka cluster and of servers of
// HTTPS.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Certs is a fresh certificate authority and a certificate it signed for
// 127.0.0.1, ::1 and localhost, valid from an hour ago for a day.
type Certs struct {
	// Server is the listening side's configuration, with the server
	// certificate.
	Server *tls.Config
	// CAFile is the authority's certificate as a PEM file, for clients.
	CAFile string
	// Pool holds the authority's certificate, for clients in process.
	Pool *x509.CertPool
	// ClientCert and ClientKey are PEM files of a client certificate the
	// authority signed, and its key.
	ClientCert, ClientKey string
	// ServerCert and ServerKey are PEM files of Server's certificate
	// (serial 2) and its key, for servers that read them from files.
	ServerCert, ServerKey string

	ca    *x509.Certificate // the authority, to sign more (ServerPair)
	caKey *ecdsa.PrivateKey
}

// ServerPair makes another server certificate of the authority, for the
// same names as Server's but with serial and a key of its own, and
// returns it and its key as PEM files in tb's temporary directory: a
// certificate to rotate to.
func (c Certs) ServerPair(tb testing.TB, serial int64) (certFile, keyFile string) {
	tb.Helper()
	der, key := c.serverCert(tb, serial)
	dir := tb.TempDir()
	return writePEM(tb, dir, "server.pem", "CERTIFICATE", der), writeKey(tb, dir, "server-key.pem", key)
}

// serverCert makes a server certificate of the authority with serial,
// for 127.0.0.1, ::1 and localhost, and returns it (DER) and its key.
func (c Certs) serverCert(tb testing.TB, serial int64) ([]byte, *ecdsa.PrivateKey) {
	tb.Helper()
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		tb.Fatal(err)
	}
	return der, key
}

// ClientPair makes another client certificate of the authority, with
// serial and a key of its own, and returns it and its key as PEM files in
// tb's temporary directory: a client certificate to rotate to.
func (c Certs) ClientPair(tb testing.TB, serial int64) (certFile, keyFile string) {
	tb.Helper()
	der, key := c.clientCert(tb, serial)
	dir := tb.TempDir()
	return writePEM(tb, dir, "client.pem", "CERTIFICATE", der), writeKey(tb, dir, "client-key.pem", key)
}

// clientCert makes a client certificate of the authority with serial,
// and returns it (DER) and its key.
func (c Certs) clientCert(tb testing.TB, serial int64) ([]byte, *ecdsa.PrivateKey) {
	tb.Helper()
	now := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "sdgnn forecaster"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		tb.Fatal(err)
	}
	return der, key
}

// writePEM writes der as a PEM block of typ to the file name in dir, and
// returns its path.
func writePEM(tb testing.TB, dir, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// writeKey writes key as a PEM file (SEC 1) name in dir, and returns its
// path.
func writeKey(tb testing.TB, dir, name string, key *ecdsa.PrivateKey) string {
	tb.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return writePEM(tb, dir, name, "EC PRIVATE KEY", der)
}

// RequireClientCert returns the server configuration of c that also
// wants a client certificate signed by the authority (mutual TLS).
func (c Certs) RequireClientCert() *tls.Config {
	s := c.Server.Clone()
	s.ClientAuth, s.ClientCAs = tls.RequireAndVerifyClientCert, c.Pool
	return s
}

// New makes Certs, the PEM files in tb's temporary directory.
func New(tb testing.TB) Certs {
	tb.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sdgnn test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		tb.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		tb.Fatal(err)
	}
	c := Certs{ca: ca, caKey: caKey}
	der, key := c.serverCert(tb, 2)
	clientDER, clientKey := c.clientCert(tb, 3)
	dir := tb.TempDir()
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	c.Server = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	c.CAFile = writePEM(tb, dir, "ca.pem", "CERTIFICATE", caDER)
	c.Pool = pool
	c.ClientCert = writePEM(tb, dir, "client.pem", "CERTIFICATE", clientDER)
	c.ClientKey = writeKey(tb, dir, "client-key.pem", clientKey)
	c.ServerCert = writePEM(tb, dir, "server.pem", "CERTIFICATE", der)
	c.ServerKey = writeKey(tb, dir, "server-key.pem", key)
	return c
}

// User is a SASL user of Broker: mechanism (PLAIN, SCRAM-SHA-256 or
// SCRAM-SHA-512), name and password.
type User struct{ Mechanism, Name, Password string }

// Broker starts a one-broker kfake cluster that speaks only TLS, with the
// server certificate of c, and, when users are given, SASL with them; it
// is closed when the test ends. It returns the broker's address.
//
// kfake takes SASLHandshake v1 only, which librdkafka 2.0 (Debian's kcat)
// does not recognise as SASL support: kcat reaches this broker over TLS,
// not over SASL.
func Broker(tb testing.TB, c Certs, users ...User) string {
	tb.Helper()
	return BrokerTLS(tb, c.Server, users...)
}

// BrokerTLS is Broker with the server configuration server, such as
// Certs.RequireClientCert.
func BrokerTLS(tb testing.TB, server *tls.Config, users ...User) string {
	tb.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DefaultNumPartitions(4), kfake.TLS(server)}
	if len(users) > 0 {
		opts = append(opts, kfake.EnableSASL())
	}
	for _, u := range users {
		opts = append(opts, kfake.Superuser(u.Mechanism, u.Name, u.Password))
	}
	cl, err := kfake.NewCluster(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl.ListenAddrs()[0]
}
