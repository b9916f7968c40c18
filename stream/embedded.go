package stream

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Embedded is an in-process Kafka-protocol broker (kfake) on 127.0.0.1, the
// zero-setup default.
type Embedded struct {
	Cluster *kfake.Cluster
	Addr    string

	stop, stopped chan struct{} // end retain, and retain has ended
	closing       sync.Once
}

// embeddedRetentionEvery is how often the embedded broker drops what its
// topics' retention no longer keeps (Kafka's
// log.retention.check.interval.ms). A variable for tests.
var embeddedRetentionEvery = 5 * time.Minute

// StartEmbedded starts the embedded broker on the given port (0: any free
// port); with dataDir set, its log persists there across restarts. Its
// topics keep their messages for Kafka's default retention (retention.ms,
// 7 days, by the messages' timestamps), as a Kafka broker does: kfake
// enforces it only on topics given a retention of their own, and the
// broker of a service that runs for weeks would otherwise keep every
// reading and forecast in memory.
func StartEmbedded(port int, dataDir string) (*Embedded, error) {
	return StartEmbeddedConfig(EmbeddedConfig{Port: port, DataDir: dataDir})
}

// EmbeddedConfig configures an embedded broker (StartEmbeddedConfig).
type EmbeddedConfig struct {
	Port    int    // 0: any free port
	DataDir string // where its log persists; empty: memory only
	// Users, when any, are the only clients the broker serves: every
	// connection must authenticate with SASL as one of them, so that on a
	// host shared with others only who knows a password can read the
	// forecasts or write readings (and forecasts) to the topics. The
	// broker is reached in plaintext all the same: over loopback only.
	Users []EmbeddedUser
}

// EmbeddedUser is a client the embedded broker accepts: Mechanism is
// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (see SASLMechanisms).
type EmbeddedUser struct {
	Mechanism, Name, Password string
}

// StartEmbeddedConfig starts the embedded broker as cfg says (see
// StartEmbedded).
func StartEmbeddedConfig(cfg EmbeddedConfig) (*Embedded, error) {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(cfg.Port), kfake.DefaultNumPartitions(4), kfake.AllowAutoTopicCreation()}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("embedded broker data dir: %w", err)
		}
		opts = append(opts, kfake.DataDir(cfg.DataDir))
	}
	if len(cfg.Users) > 0 {
		opts = append(opts, kfake.EnableSASL())
		for _, u := range cfg.Users {
			m := strings.ToUpper(u.Mechanism)
			if !slices.Contains(SASLMechanisms, m) || u.Name == "" {
				return nil, fmt.Errorf("start embedded broker: user %q of mechanism %q: want a name and one of %s", u.Name, u.Mechanism, strings.Join(SASLMechanisms, ", "))
			}
			opts = append(opts, kfake.Superuser(m, u.Name, u.Password))
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("start embedded broker: %w", err)
	}
	addrs := c.ListenAddrs()
	e := &Embedded{Cluster: c, Addr: strings.Join(addrs, ","), stop: make(chan struct{}), stopped: make(chan struct{})}
	go e.retain(embeddedRetentionEvery)
	return e, nil
}

// retain applies the topics' retention every interval until Close.
func (e *Embedded) retain(every time.Duration) {
	defer close(e.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.Cluster.ApplyRetention()
		}
	}
}

// Close stops the embedded broker.
func (e *Embedded) Close() {
	e.closing.Do(func() {
		if e.stop != nil {
			close(e.stop)
			<-e.stopped
		}
	})
	e.Cluster.Close()
}
