package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

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
	var sec stream.Security
	switch {
	case *f.mechanism == "" && (*f.user != "" || *f.passwordFile != ""):
		return sec, usagef("-sasl-user and -sasl-password-file need -sasl MECHANISM")
	case *f.mechanism != "" && !slices.Contains(stream.SASLMechanisms, strings.ToUpper(*f.mechanism)):
		return sec, usagef("-sasl %q: want one of %s", *f.mechanism, strings.Join(stream.SASLMechanisms, ", "))
	case *f.mechanism != "" && *f.user == "":
		return sec, usagef("-sasl %s needs -sasl-user", *f.mechanism)
	case *f.key != "" && *f.cert == "", *f.cert != "" && *f.key == "":
		return sec, usagef("-tls-cert and -tls-key go together")
	case *f.name != "" && !*f.tls && *f.ca == "" && *f.cert == "":
		return sec, usagef("-tls-server-name needs -tls")
	}
	if *f.mechanism != "" {
		password, err := f.password()
		if err != nil {
			return sec, err
		}
		if sec.SASL, err = stream.NewSASL(*f.mechanism, *f.user, password); err != nil {
			return sec, fmt.Errorf("-sasl: %w", err)
		}
	}
	if *f.tls || *f.ca != "" || *f.cert != "" {
		c, err := stream.NewTLS(*f.ca, *f.cert, *f.key, *f.name)
		if err != nil {
			return sec, err
		}
		sec.TLS = c
	}
	return sec, nil
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
