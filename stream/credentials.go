package stream

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/segmentio/kafka-go/sasl"
)

// RotatingSASL is a SASL mechanism whose credentials can be replaced while
// the clients holding it run, so that a service takes a rotated password
// without a restart: every connection authenticated after Set uses the new
// ones. Connections already authenticated keep going: a broker checks
// credentials when a connection authenticates, and kafka-go does not
// authenticate a connection again.
type RotatingSASL struct {
	cur atomic.Pointer[saslHolder]
}

type saslHolder struct{ m sasl.Mechanism }

// NewRotatingSASL returns a RotatingSASL that authenticates with m until
// Set replaces it.
func NewRotatingSASL(m sasl.Mechanism) *RotatingSASL {
	r := &RotatingSASL{}
	r.cur.Store(&saslHolder{m})
	return r
}

// Name returns the mechanism's name (PLAIN, SCRAM-SHA-256, ...), which Set
// does not change.
func (r *RotatingSASL) Name() string { return r.cur.Load().m.Name() }

// Start begins an authentication with the mechanism last set.
func (r *RotatingSASL) Start(ctx context.Context) (sasl.StateMachine, []byte, error) {
	return r.cur.Load().m.Start(ctx)
}

// Set has the next authentications use m, which must be the same
// mechanism (its credentials may differ): a connection negotiates the
// mechanism's name before it starts, and Security's description (String,
// ClearPassword) was given for it.
func (r *RotatingSASL) Set(m sasl.Mechanism) error {
	if m == nil || m.Name() != r.Name() {
		name := "none"
		if m != nil {
			name = m.Name()
		}
		return fmt.Errorf("sasl: rotate %s credentials to a %s mechanism: want the same mechanism", r.Name(), name)
	}
	r.cur.Store(&saslHolder{m})
	return nil
}

// KeyPair is a TLS certificate and its key read from PEM files that can be
// read again while the connections using them run (Reload), so that a
// rotated certificate is taken without a restart: a tls.Config whose
// GetClientCertificate (a client's) or GetCertificate (a server's) is the
// KeyPair's presents, at every new handshake, the pair last read well.
// The service presents one to the brokers (-tls-cert) and the forecaster
// serves HTTPS with another (-http-tls-cert).
type KeyPair struct {
	CertFile, KeyFile string
	// CertName and KeyName name the files in errors, such as the flags
	// that gave them; empty, "tls certificate" and "tls key".
	CertName, KeyName string

	mu  sync.Mutex // Reloads take turns (see Reload)
	cur atomic.Pointer[tls.Certificate]
}

// LoadKeyPair reads the certificate and key PEM files; errors name them as
// the flags certName and keyName (see KeyPair).
func LoadKeyPair(certFile, keyFile, certName, keyName string) (*KeyPair, error) {
	k := &KeyPair{CertFile: certFile, KeyFile: keyFile, CertName: certName, KeyName: keyName}
	if _, err := k.Reload(); err != nil {
		return nil, err
	}
	return k, nil
}

// names returns how errors name the two files.
func (k *KeyPair) names() (cert, key string) {
	cert, key = k.CertName, k.KeyName
	if cert == "" {
		cert = "tls certificate"
	}
	if key == "" {
		key = "tls key"
	}
	return cert, key
}

// Reload reads the files again (the certificate first) and, if they hold
// a certificate and its key, presents them from the next handshake on and
// returns the certificate; otherwise it returns why, naming the file, and
// the pair presented is kept. Reloads called at once take turns, so that
// the pair presented is that of the one that read the files last, not of
// one that read them before a rotation but took longer.
func (k *KeyPair) Reload() (*x509.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	certName, keyName := k.names()
	certPEM, err := os.ReadFile(k.CertFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", certName, err)
	}
	keyPEM, err := os.ReadFile(k.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyName, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		// The error says which of the two ("certificate input", "key
		// input") or that they do not match.
		return nil, fmt.Errorf("%s %s, %s %s: %w", certName, k.CertFile, keyName, k.KeyFile, err)
	}
	if pair.Leaf == nil { // set by X509KeyPair unless GODEBUG x509keypairleaf=0
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%s %s: %w", certName, k.CertFile, err)
		}
	}
	k.cur.Store(&pair)
	return pair.Leaf, nil
}

// Leaf returns the certificate presented now; nil before a Reload has
// read one.
func (k *KeyPair) Leaf() *x509.Certificate {
	if p := k.cur.Load(); p != nil {
		return p.Leaf
	}
	return nil
}

// current returns the pair last read well, or an error naming the files
// if none has been.
func (k *KeyPair) current() (*tls.Certificate, error) {
	if p := k.cur.Load(); p != nil {
		return p, nil
	}
	certName, _ := k.names()
	return nil, fmt.Errorf("%s %s: not read (KeyPair.Reload)", certName, k.CertFile)
}

// GetClientCertificate returns the pair last read well, for
// tls.Config.GetClientCertificate.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.current()
}

// GetCertificate returns the pair last read well, for
// tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.current()
}

// Authorities are certificate authorities read from a PEM file that can be
// read again while the connections they check run (Reload), so that the
// authorities a server trusts for its clients' certificates are rotated
// without a restart: a server tls.Config that asks for any client
// certificate (tls.RequireAnyClientCert) and checks it with
// VerifyClient checks every new handshake against the authorities last
// read well. crypto/tls's own check reads ClientCAs, which cannot change
// under connections being made.
type Authorities struct {
	File string
	// Name names the file in errors, such as the flag that gave it;
	// empty, "tls authorities".
	Name string

	mu  sync.Mutex // Reloads take turns, as KeyPair's do
	cur atomic.Pointer[authoritySet]
}

type authoritySet struct {
	pool  *x509.CertPool
	certs []*x509.Certificate
}

// LoadAuthorities reads the PEM file of authorities, which errors name as
// name (see Authorities).
func LoadAuthorities(file, name string) (*Authorities, error) {
	a := &Authorities{File: file, Name: name}
	if _, err := a.Reload(); err != nil {
		return nil, err
	}
	return a, nil
}

// Reload reads the file again and, if it holds one certificate or more
// and nothing else (but comments before a block), checks clients against
// them from the next handshake on and returns them; otherwise it returns
// why, naming the file, and the authorities in use are kept. Unlike
// x509.CertPool.AppendCertsFromPEM, which skips what does not parse, a
// block that is not a certificate or does not decode, or text after the
// last block, is an error: a file read while it is being rewritten must
// not silently drop the authorities it was cut before.
func (a *Authorities) Reload() ([]*x509.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	name := a.Name
	if name == "" {
		name = "tls authorities"
	}
	data, err := os.ReadFile(a.File)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	certs, err := parseCertificates(data)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", name, a.File, err)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	a.cur.Store(&authoritySet{pool: pool, certs: certs})
	return certs, nil
}

// parseCertificates returns the certificates of the PEM blocks in data:
// an error for none, for a block of another type, that does not decode or
// does not parse, and for anything but white space after the last block.
// Text before a block (comments, as openssl and CA bundles write) is
// skipped.
func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	rest := data
	for {
		var b *pem.Block
		before := rest
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		// pem.Decode passes over a block that does not decode (its END
		// line lost, a character that is not base64) to the next: that
		// authority would be dropped without a word.
		if bytes.Count(before[:len(before)-len(rest)], []byte("-----BEGIN ")) > 1 {
			return nil, fmt.Errorf("PEM block %d does not decode (its END line or part of its text lost?)", len(certs)+1)
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is a %q, want a CERTIFICATE", len(certs)+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	switch {
	case len(certs) == 0:
		return nil, errors.New("no PEM certificate in it")
	case len(bytes.TrimSpace(rest)) > 0:
		return nil, fmt.Errorf("%d bytes after certificate %d are not a PEM block (cut short?)", len(bytes.TrimSpace(rest)), len(certs))
	}
	return certs, nil
}

// Certificates returns the authorities in use.
func (a *Authorities) Certificates() []*x509.Certificate {
	if s := a.cur.Load(); s != nil {
		return s.certs
	}
	return nil
}

// VerifyClient checks the client certificate of a connection, for a
// server tls.Config's VerifyConnection with ClientAuth
// tls.RequireAnyClientCert: the certificate must chain, through the
// intermediates the client sent, to one of the authorities last read
// well, and be valid now for client authentication, which is the check
// crypto/tls makes against ClientCAs under
// tls.RequireAndVerifyClientCert. It is called on resumed sessions too, so
// that a session of a certificate whose authority was removed is refused.
func (a *Authorities) VerifyClient(cs tls.ConnectionState) error {
	s := a.cur.Load()
	if s == nil {
		return errors.New("tls: client authorities not read (Authorities.Reload)")
	}
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: client sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: s.pool, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tls: client certificate: %w", err)
	}
	return nil
}
