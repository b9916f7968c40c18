package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/segmentio/kafka-go/sasl"

	"github.com/pemsforecast/sdgnn/stream"
)

// securityFlags are the flags that say how to reach a Kafka cluster that
// wants TLS, SASL or both (SASL_SSL, as managed clusters do).
type securityFlags struct {
	tls                 *bool
	ca, cert, key, name *string
	mechanism, user     *string
	passwordFile        *string
}

// saslPasswordEnv holds the SASL password when -sasl-password-file is not
// given.
const saslPasswordEnv = "SDGNN_SASL_PASSWORD"

func addSecurityFlags(fs *flag.FlagSet) securityFlags {
	return securityFlags{
		tls:          fs.Bool("tls", false, "reach the brokers over TLS, trusting the system's authorities unless -tls-ca"),
		ca:           fs.String("tls-ca", "", "PEM file of the authorities that sign the brokers' certificates (implies -tls)"),
		cert:         fs.String("tls-cert", "", "PEM file of a client certificate, with -tls-key (implies -tls)"),
		key:          fs.String("tls-key", "", "PEM file of the client certificate's key"),
		name:         fs.String("tls-server-name", "", "name the brokers' certificates must carry (default: each address's host)"),
		mechanism:    fs.String("sasl", "", "SASL mechanism: "+strings.Join(stream.SASLMechanisms, ", ")+" (empty: none); with -sasl-user"),
		user:         fs.String("sasl-user", "", "SASL user name"),
		passwordFile: fs.String("sasl-password-file", "", "file holding the SASL password (default $"+saslPasswordEnv+"); a file or the environment keeps it out of the process list"),
	}
}

// given reports whether any of the flags was set on fs.
func (f securityFlags) given(fs *flag.FlagSet) bool {
	for _, name := range []string{"tls", "tls-ca", "tls-cert", "tls-key", "tls-server-name", "sasl", "sasl-user", "sasl-password-file"} {
		if flagSet(fs, name) {
			return true
		}
	}
	return false
}

// security returns what the flags ask for. Flags that do not go together
// are usage errors; a password file that cannot be read or a certificate
// that does not load are failures naming the file.
func (f securityFlags) security() (stream.Security, error) {
	sec, _, err := f.credentials()
	return sec, err
}

// credentials is security, with the credentials that can be read again
// while the clients run (kafkaCreds.reload).
func (f securityFlags) credentials() (stream.Security, *kafkaCreds, error) {
	sec, creds := stream.Security{}, &kafkaCreds{f: f}
	err := f.check()
	if err == nil {
		err = creds.read(&sec)
	}
	return sec, creds, err
}

// check refuses flags that do not go together.
func (f securityFlags) check() error {
	switch {
	case *f.mechanism == "" && (*f.user != "" || *f.passwordFile != ""):
		return usagef("-sasl-user and -sasl-password-file need -sasl MECHANISM")
	case *f.mechanism != "" && !slices.Contains(stream.SASLMechanisms, strings.ToUpper(*f.mechanism)):
		return usagef("-sasl %q: want one of %s", *f.mechanism, strings.Join(stream.SASLMechanisms, ", "))
	case *f.mechanism != "" && *f.user == "":
		return usagef("-sasl %s needs -sasl-user", *f.mechanism)
	case *f.key != "" && *f.cert == "", *f.cert != "" && *f.key == "":
		return usagef("-tls-cert and -tls-key go together")
	case *f.name != "" && !*f.tls && *f.ca == "" && *f.cert == "":
		return usagef("-tls-server-name needs -tls")
	}
	return nil
}

// kafkaCreds are the credentials of checked securityFlags that serve reads
// again on SIGHUP and POST /-/reload, so that a rotated SASL password or
// client certificate is taken without a restart: each is used from the
// next connection on, the connections open keep theirs.
type kafkaCreds struct {
	f    securityFlags
	sasl *stream.RotatingSASL // nil: no SASL
	cert *stream.KeyPair      // nil: no client certificate

	// mu makes reloads (SIGHUP's and POST /-/reload's may overlap) take
	// turns, so that the credentials used are those of the reload that
	// read the files last: one that read a file before its rotation and
	// stored what it read after another's would otherwise undo that one.
	mu sync.Mutex
}

// read sets sec's SASL mechanism and TLS configuration from the flags.
func (c *kafkaCreds) read(sec *stream.Security) error {
	f := c.f
	if *f.mechanism != "" {
		m, err := f.mechanismNow()
		if err != nil {
			return err
		}
		c.sasl = stream.NewRotatingSASL(m)
		sec.SASL = c.sasl
	}
	if *f.tls || *f.ca != "" || *f.cert != "" {
		t, err := stream.NewTLS(*f.ca, "", "", *f.name)
		if err != nil {
			return err
		}
		if *f.cert != "" {
			if c.cert, err = stream.LoadKeyPair(*f.cert, *f.key, "-tls-cert", "-tls-key"); err != nil {
				return err
			}
			t.GetClientCertificate = c.cert.GetClientCertificate
		}
		sec.TLS = t
	}
	return nil
}

// mechanismNow returns the SASL mechanism of the password as it is now.
func (f securityFlags) mechanismNow() (sasl.Mechanism, error) {
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	m, err := stream.NewSASL(*f.mechanism, *f.user, password)
	switch {
	case err != nil && *f.passwordFile != "":
		// Named, as every other error of a password file that does not
		// read is: the file may be rewritten since the start.
		return nil, fmt.Errorf("-sasl, password of -sasl-password-file %s: %w", *f.passwordFile, err)
	case err != nil:
		return nil, fmt.Errorf("-sasl: %w", err)
	}
	return m, nil
}

// rotatable reports whether c holds anything that reload reads again: a
// password from -sasl-password-file (one from the environment cannot
// change while the process runs), or a client certificate.
func (c *kafkaCreds) rotatable() bool {
	return c != nil && (c.sasl != nil && *c.f.passwordFile != "" || c.cert != nil)
}

// reload reads the password file and the client certificate again. Each
// that reads well is used from the next connection on and named in took;
// one that does not keeps what is used, and err says why, naming the file.
func (c *kafkaCreds) reload() (took []string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []string
	if c.sasl != nil && *c.f.passwordFile != "" {
		m, err := c.f.mechanismNow()
		if err == nil {
			err = c.sasl.Set(m)
		}
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			took = append(took, "-sasl-password-file "+*c.f.passwordFile)
		}
	}
	if c.cert != nil {
		leaf, err := c.cert.Reload()
		if err != nil {
			errs = append(errs, err.Error())
		} else {
			took = append(took, fmt.Sprintf("-tls-cert %s (serial %s)", c.cert.CertFile, leaf.SerialNumber))
		}
	}
	if len(errs) > 0 {
		return took, errors.New(strings.Join(errs, "; "))
	}
	return took, nil
}

// password reads the SASL password from -sasl-password-file, else from
// $SDGNN_SASL_PASSWORD; an empty one is refused.
func (f securityFlags) password() (string, error) {
	if *f.passwordFile == "" {
		p, ok := os.LookupEnv(saslPasswordEnv)
		if !ok || p == "" {
			return "", usagef("-sasl %s needs a password: -sasl-password-file FILE or $%s", *f.mechanism, saslPasswordEnv)
		}
		return p, nil
	}
	data, err := os.ReadFile(*f.passwordFile)
	if err != nil {
		return "", fmt.Errorf("-sasl-password-file: %w", err)
	}
	p := strings.TrimRight(string(data), "\r\n")
	if p == "" {
		return "", fmt.Errorf("-sasl-password-file %s is empty", *f.passwordFile)
	}
	return p, nil
}
