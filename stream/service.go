package stream

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Config configures a Service. Fields left zero take defaults: the
// topics readings, forecasts and readings-dead-letter, the group
// sdgnn-forecaster, 4 partitions, BatchSize 4096, CommitEvery 200 ms,
// BurstHold a second, SessionTimeout 10 s, and those named below.
type Config struct {
	Brokers         []string // Kafka bootstrap addresses
	Security        Security // TLS and SASL towards them; zero: plaintext
	ReadingsTopic   string   // sensor readings, keyed by sensor id
	ForecastsTopic  string   // next-slot forecasts, keyed by sensor id
	DeadLetterTopic string   // rejected readings with the reason
	GroupID         string   // consumer group of the readings topic
	Partitions      int      // partitions of topics this service creates

	StepMs         int64         // slot length in Unix ms (5 min for PeMS)
	Lateness       time.Duration // how long after a slot ends a forecast waits for missing inputs
	MaxAgeSlots    int64         // readings older than this many slots before now are rejected (0: no limit)
	MaxFutureSlots int64         // readings this many slots after now are rejected (0: no limit)
	// MaxAheadSlots is how many slots after the newest slot a tenth of
	// the sensors have reached a reading may be stamped; later ones are
	// rejected (too_new), so that a sensor's clock gone wrong cannot
	// silence it (see State.SetMaxAhead). It judges a reading against the
	// stream, not the machine's clock, and so protects a replay of old
	// data too. 0 means the state's ring (window and History); negative:
	// no limit.
	MaxAheadSlots int64
	// ValueRanges overrides the plausible ranges of the bundle's channels
	// (sdgnn.BundleMeta.Bounds), by channel name or index, "*" for every
	// channel: a reading with a value outside its channel's range is
	// rejected (out_of_range). NoValueRanges turns the check off.
	ValueRanges   map[string]snapshot.Bounds
	NoValueRanges bool
	// Now is the clock of the forecast deadlines and of the checks above;
	// it is called from more than one goroutine. Nil: time.Now.
	Now func() time.Time
	// History is the number of slots kept beyond the window, so that a
	// forecast is still made from exact windows when its inputs arrive up
	// to this many slots apart (catching up on a backlog); 0 means
	// DefaultHistory.
	History int

	// StateFile, when set, holds the state snapshot written before every
	// offset commit, so that a restarted service (even after kill -9)
	// continues from it: at-least-once, with idempotent effects.
	StateFile string
	// NoRebuild turns off the rebuild from the log: by default, as the
	// service begins to hold the readings partitions (at start, or taking
	// over from another member of the group), it reads back the last
	// (Window+History)×sensors readings of each partition before the
	// group's committed offset into its windows, and the last forecasts
	// of the forecasts topic to know what was emitted, so that it
	// forecasts from whole windows at once, and emits nothing again, even
	// without a StateFile (a restart without one, a standby on another
	// host). What a restored state holds already is skipped. It needs the
	// topics' retention to cover Window+History slots.
	NoRebuild bool
	// BatchSize caps the readings applied between two forecast flushes and
	// commits; CommitEvery caps the time between them.
	BatchSize   int
	CommitEvery time.Duration
	// BurstHold is how long a burst of readings far ahead of the newest
	// slot applied is held for the other partitions' shares of it (see
	// Aligner); 0: a second.
	BurstHold time.Duration

	// SessionTimeout is the consumer-group session: how long the group
	// waits for a member that died (kill -9) before handing its partitions
	// to the restarted service.
	SessionTimeout time.Duration

	HTTPAddr string // metrics, health, latest forecasts and the live view; empty: none
	// HTTPTLS, when set, has HTTPAddr serve HTTPS only, with it: a plain
	// HTTP request is answered 400 and reaches no endpoint, so that the
	// reload token and the forecasts do not cross the network in clear.
	// Its GetCertificate may return another certificate from one
	// handshake to the next (a certificate rotated without a restart).
	HTTPTLS *tls.Config
	// HTTPMaxConcurrent is how many API requests HTTPAddr serves at once
	// (the others wait up to a second, then get 503 and Retry-After), so
	// that a flood of requests cannot take the cores the forecasts need;
	// health, readiness, metrics and reload are not held. 0 means
	// DefaultHTTPMaxConcurrent.
	HTTPMaxConcurrent int
	Log               zerolog.Logger
	// ReadyMaxLag fails the readiness check (/readyz) while the group is
	// more than this many readings behind, catching up on a backlog: from
	// its committed offsets to the last stable offsets, as the brokers
	// last said (asked every ProbeEvery); 0: no limit.
	ReadyMaxLag int64
	// ProbeEvery is how often the brokers are asked for the readings
	// topic's metadata, the group's assignment and its lag, for the
	// readiness check; 0 means DefaultProbeEvery.
	ProbeEvery time.Duration
	// WaitBrokers is how long Run waits at start for a broker to be
	// reached at all, asking again with backoff (see
	// Security.WaitBrokers), so that a service started before its cluster
	// waits for it; /healthz answers meanwhile, and /readyz says what the
	// brokers gave. A broker that answers but refuses (authentication,
	// certificates) ends Run at once. 0: ask once.
	WaitBrokers time.Duration
	// RetryFor is how long a batch whose forecasts or dead letters cannot
	// be written, or whose offsets cannot be committed, is tried again
	// (the broker restarting) before Run gives up and returns the error;
	// the batch, not committed, is then read again at restart. 0 means
	// DefaultRetryFor.
	RetryFor time.Duration
	// ReloadModel, when set, is served as POST /-/reload on HTTPAddr, for
	// orchestrators that can call a URL but not send a signal (a sidecar
	// that watches a mounted model file). It should read the model again
	// and ReloadContext it with ctx (which ends after ReloadWait, or when
	// the caller goes away), returning the version served afterwards, or
	// why the model served was kept. Calls are not serialised here.
	ReloadModel func(ctx context.Context) (version string, err error)
	// ReloadToken, when set, is the secret POST /-/reload must bring as
	// "Authorization: Bearer TOKEN"; a request without it is answered 401
	// and does not reload. Without it, whoever reaches HTTPAddr may
	// reload.
	ReloadToken string

	// LiveSlots is the number of recent slots per sensor in the live view
	// (/live, /api/sensors); 0 means DefaultLiveSlots.
	LiveSlots int
	// LiveMAPEFloor, when not nil, leaves readings below it out of the
	// live view's MAPE; nil means the floor the bundle was validated with
	// (its Meta.Config.MAPEFloor). A pointer, so that a floor of 0 can be
	// asked of a bundle validated with another.
	LiveMAPEFloor *float64
	// LivePart, when not nil, is the part of the model's split (of a
	// replay of its data) whose forecasts the live view also scores on
	// their own; see PartScope.
	LivePart *PartScope
}

func (c *Config) defaults() {
	if c.ReadingsTopic == "" {
		c.ReadingsTopic = "readings"
	}
	if c.ForecastsTopic == "" {
		c.ForecastsTopic = "forecasts"
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = "readings-dead-letter"
	}
	if c.GroupID == "" {
		c.GroupID = "sdgnn-forecaster"
	}
	if c.Partitions < 1 {
		c.Partitions = 4
	}
	if c.BatchSize < 1 {
		c.BatchSize = 4096
	}
	if c.CommitEvery <= 0 {
		c.CommitEvery = 200 * time.Millisecond
	}
	if c.BurstHold <= 0 {
		c.BurstHold = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.ProbeEvery <= 0 {
		c.ProbeEvery = DefaultProbeEvery
	}
	if c.RetryFor <= 0 {
		c.RetryFor = DefaultRetryFor
	}
}

// Service consumes readings, keeps the per-node windows, and publishes
// forecasts. One goroutine owns the state: a node's receptive nodes may be on
// any partition, so all partitions feed one State.
//
// Delivery: a batch of readings is applied, the forecasts it made due are
// written with RequiredAcks=RequireAll, the state snapshot is saved, and only
// then are the batch's offsets committed. A crash at any point replays
// readings that the (idempotent) state has either not seen or ignores, and
// may publish a forecast again (at least once), never lose one. The
// writes, the save and the commit of one batch run while the next batch is
// fetched and applied (its snapshot is taken before), so that the broker's
// answers do not leave the state's goroutine idle; batches are committed
// in order, one at a time.
type Service struct {
	cfg     Config
	bundle  *sdgnn.Bundle
	state   *State
	emitter *Emitter
	skips   []Skip // logSkips' scratch
	valid   Validator
	live    *Live
	// names are the sensors' names (see DecodeReadingFor): the model's
	// IDs, or their indices. A reload keeps them (see compatible).
	names *pems.SensorNames

	reader             *kafka.Reader
	forecasts, letters *kafka.Writer
	counters           *Counters        // the state's, kept across reloads
	clientID           string           // this service's, to find itself in its group
	stateMu            sync.Mutex       // held while the state file is written or compared with stateSeen
	stateSeen          os.FileInfo      // the state file as last read or written here (nil: none); stateMu
	since              time.Time        // when it started: the group's oldest member holds the partitions
	holding            bool             // owned by Run: the last batch found this service holding the partitions
	markerLog          throttle         // warnings about transactions
	txnKind            map[int]partKind // owned by Run: what abortedIn knows of each readings partition's producers
	txnUnchecked       map[int]bool     // owned by Run: transactional partitions some of whose readings were applied unchecked
	txnBefore          map[int]uint64   // owned by Run: readings applied from each partition not known to be transactional

	// loop is held by Run while it handles a batch (fetch, apply, emit,
	// hand the batch to a flush) and by Reload while it swaps the model,
	// so that a model changes only between two batches. A channel of one
	// slot rather than a mutex, so that ReloadContext can stop waiting.
	loop chan struct{}
	// pending is the batch last handed to a flush (nil: none), which
	// writes and commits it while Run fetches and applies the next
	// batch. Run waits for it before handing over the next one, so that
	// batches are committed in order, one at a time; Reload waits for it
	// too. Set and read holding loop.
	pending *flushJob

	encoded []byte          // owned by the flush in progress: scratch for a forecast's message (forecastMessage)
	commits []kafka.Message // owned by the flush in progress: scratch for the offsets it commits

	mu     sync.RWMutex   // guards what the HTTP handlers read: bundle and below
	latest map[int][]byte // sensor → last forecast message
	health health         // what /healthz and /readyz report
	held   bool           // the partitions held when the group was last settled
}

// NewService builds a service for the bundle; it connects nothing yet.
func NewService(b *sdgnn.Bundle, cfg Config) (*Service, error) {
	cfg.defaults()
	if len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("stream service: no brokers")
	}
	if cfg.StepMs <= 0 {
		return nil, fmt.Errorf("stream service: slot length %d ms must be positive", cfg.StepMs)
	}
	if t := cfg.HTTPTLS; t != nil && len(t.Certificates) == 0 && t.GetCertificate == nil && t.GetConfigForClient == nil {
		// ServeTLS would fail in Run's background, and -http serve nothing.
		return nil, errors.New("stream service: HTTPTLS has no certificate (Certificates, GetCertificate or GetConfigForClient)")
	}
	if cfg.History == 0 {
		cfg.History = DefaultHistory
	}
	st, err := NewStateHistory(b, cfg.StepMs, cfg.History)
	if err != nil {
		return nil, err
	}
	if err := guardState(st, b, cfg); err != nil {
		return nil, fmt.Errorf("stream service: %w", err)
	}
	var seen os.FileInfo // the state file as read, before reading it
	if cfg.StateFile != "" {
		seen, _ = os.Stat(cfg.StateFile)
		data, err := os.ReadFile(cfg.StateFile)
		switch {
		case err == nil:
			if err := st.Restore(data); err != nil {
				// Say the way out: the state is a cache of the log.
				way := "the windows are then rebuilt from the log"
				if cfg.NoRebuild {
					way = "the windows then fill from the readings to come (rebuilding them from the log is off)"
				}
				return nil, fmt.Errorf("restore state %s: %w (move the file aside to start without it: %s)", cfg.StateFile, err, way)
			}
			cfg.Log.Info().Str("state", cfg.StateFile).Msg("state restored")
		case !errors.Is(err, os.ErrNotExist):
			return nil, fmt.Errorf("read state: %w", err)
		}
	}
	floor := b.Meta.Config.MAPEFloor
	if cfg.LiveMAPEFloor != nil {
		floor = *cfg.LiveMAPEFloor
	}
	live, err := NewLive(LiveConfig{Nodes: b.Meta.Nodes, Channels: len(b.Meta.Norm.Mean), StepMs: cfg.StepMs,
		Slots: cfg.LiveSlots, MAPEFloor: floor, ChannelNames: b.Meta.Channels, Window: b.Meta.Window, Part: cfg.LivePart})
	if err != nil {
		return nil, fmt.Errorf("stream service: %w", err)
	}
	s := &Service{cfg: cfg, loop: make(chan struct{}, 1), clientID: newClientID(), since: time.Now(), markerLog: throttle{every: time.Minute}, stateSeen: seen, bundle: b, state: st, emitter: NewEmitter(st, cfg.Lateness), counters: st.Counters, latest: map[int][]byte{}, live: live, names: st.Names(),
		valid: Validator{Nodes: b.Meta.Nodes, Channels: len(b.Meta.Norm.Mean), StepMs: cfg.StepMs,
			MaxAgeSlots: cfg.MaxAgeSlots, MaxFutureSlots: cfg.MaxFutureSlots}}
	if cfg.MaxAgeSlots > 0 || cfg.MaxFutureSlots > 0 {
		s.valid.Now = cfg.Now
	}
	warnWithoutSelf(cfg.Log, b)
	return s, nil
}

// warnWithoutSelf logs the sensors whose forecasts do not read their own
// readings under b, if any.
func warnWithoutSelf(log zerolog.Logger, b *sdgnn.Bundle) {
	if out := b.Theta.WithoutSelf(); len(out) > 0 {
		log.Warn().Int("sensors", len(out)).Ints("first", out[:min(len(out), 10)]).
			Msg("these sensors' forecasts do not read their own readings (a bundle distilled with -keep-self=false or before it existed): see /api/sensors/{sensor} inputs")
	}
}

// setRunning records whether Run runs, for /healthz.
func (s *Service) setRunning(on bool) {
	s.mu.Lock()
	s.health.running = on
	s.mu.Unlock()
}

// Bundle returns the model the service forecasts with now (it changes at
// Reload). The bundle is the state's: read it, do not run it.
func (s *Service) Bundle() *sdgnn.Bundle {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bundle
}

// State returns the service's state (for tests and inspection; not safe for
// use while Run is running, and replaced by Reload).
func (s *Service) State() *State { return s.state }

// Live returns the service's live view: recent readings against forecasts
// and their running error, per sensor. It is safe to read while Run is
// running.
func (s *Service) Live() *Live { return s.live }

// Counters returns the service's metrics.
func (s *Service) Counters() *Counters { return s.counters }
