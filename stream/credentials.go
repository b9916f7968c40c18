package stream

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
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

// ClientCert is a TLS client certificate read from PEM files that can be
// read again while the clients using it run (Reload), so that a rotated
// certificate is taken without a restart: a tls.Config whose
// GetClientCertificate is its GetClientCertificate presents, at every new
// handshake, the pair last read well.
type ClientCert struct {
	CertFile, KeyFile string

	mu  sync.Mutex // Reloads take turns (see Reload)
	cur atomic.Pointer[tls.Certificate]
}

// LoadClientCert reads the certificate and key PEM files.
func LoadClientCert(certFile, keyFile string) (*ClientCert, error) {
	c := &ClientCert{CertFile: certFile, KeyFile: keyFile}
	if _, err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files again and, if they hold a certificate and its
// key, presents them from the next handshake on and returns the
// certificate; otherwise it returns why, naming the files, and the pair
// presented is kept. Reloads called at once take turns, so that the pair
// presented is that of the one that read the files last, not of one that
// read them before a rotation but took longer.
func (c *ClientCert) Reload() (*x509.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("tls client certificate %s, key %s: %w", c.CertFile, c.KeyFile, err)
	}
	if pair.Leaf == nil { // set by LoadX509KeyPair unless GODEBUG x509keypairleaf=0
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("tls client certificate %s: %w", c.CertFile, err)
		}
	}
	c.cur.Store(&pair)
	return pair.Leaf, nil
}

// Leaf returns the certificate presented now.
func (c *ClientCert) Leaf() *x509.Certificate { return c.cur.Load().Leaf }

// GetClientCertificate returns the pair last read well, for
// tls.Config.GetClientCertificate.
func (c *ClientCert) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return c.cur.Load(), nil
}
