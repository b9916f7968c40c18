package stream

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/sdgnn"
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
	Log     zerolog.Logger
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
	valid   Validator
	live    *Live

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
		Slots: cfg.LiveSlots, MAPEFloor: floor, ChannelNames: b.Meta.Channels, Part: cfg.LivePart})
	if err != nil {
		return nil, fmt.Errorf("stream service: %w", err)
	}
	s := &Service{cfg: cfg, loop: make(chan struct{}, 1), clientID: newClientID(), since: time.Now(), markerLog: throttle{every: time.Minute}, stateSeen: seen, bundle: b, state: st, emitter: NewEmitter(st, cfg.Lateness), counters: st.Counters, latest: map[int][]byte{}, live: live,
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

// Run consumes until ctx is cancelled, then finishes the batch in hand,
// commits and closes (graceful shutdown).
func (s *Service) Run(ctx context.Context) error {
	cfg := s.cfg
	s.setRunning(true)
	defer s.setRunning(false)
	// The HTTP endpoints come first: an orchestrator's liveness check
	// passes, and /readyz says why, while the brokers are waited for.
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			return fmt.Errorf("http listen %s: %w", cfg.HTTPAddr, err)
		}
		srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: httpReadHeaderTimeout, ReadTimeout: httpReadTimeout,
			WriteTimeout: httpWriteTimeout, IdleTimeout: httpIdleTimeout, ErrorLog: httpErrorLog(cfg.Log)}
		if cfg.HTTPTLS != nil {
			// ServeTLS, not Serve on a TLS listener: it also offers HTTP/2,
			// and answers a plain HTTP request with a 400 that says why.
			srv.TLSConfig = cfg.HTTPTLS
			go srv.ServeTLS(ln, "", "")
		} else {
			go srv.Serve(ln)
		}
		defer srv.Close()
		cfg.Log.Info().Str("http", ln.Addr().String()).Bool("tls", cfg.HTTPTLS != nil).Msg("serving metrics, health and forecasts")
	}
	err := cfg.Security.WaitBrokers(ctx, cfg.Brokers, cfg.WaitBrokers, func(err error, next time.Duration) {
		s.mu.Lock()
		s.health.probeAt, s.health.probeErr = time.Now(), err
		s.mu.Unlock()
		cfg.Log.Warn().Err(err).Stringer("retry_in", next).Stringer("wait", cfg.WaitBrokers).Msg("no broker reached yet: waiting")
	})
	switch {
	case err != nil && ctx.Err() != nil:
		// Stopped while waiting: nothing was read, so nothing is lost.
		cfg.Log.Info().Err(err).Msg("stopped before a broker was reached")
		return nil
	case err != nil:
		return err
	}
	if err := cfg.Security.EnsureTopics(ctx, cfg.Brokers, cfg.Partitions, cfg.ReadingsTopic, cfg.ForecastsTopic, cfg.DeadLetterTopic); err != nil {
		if ctx.Err() != nil {
			// Stopped while asking for the topics: nothing was read yet.
			cfg.Log.Info().Err(err).Msg("stopped before consuming")
			return nil
		}
		return err
	}
	transport := cfg.Security.Transport()
	client := brokerClient(cfg.Brokers, transport)
	if !cfg.NoRebuild {
		s.checkRetention(ctx, transport)
	}
	s.reader = kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, GroupID: cfg.GroupID, Topic: cfg.ReadingsTopic,
		// MaxWait bounds the broker's long poll, which new records end at
		// once (MinBytes 1). kafka-go leaves the answer a quarter of it to
		// travel, so 50 ms timed fetches out on a broker 13 ms away (or a
		// slow one), and each timeout reconnects and backs off.
		MinBytes: 1, MaxBytes: 8 << 20, MaxWait: 500 * time.Millisecond, StartOffset: kafka.FirstOffset,
		// Readings of a transaction still open are not read before it
		// ends (kafka-go still hands over its markers and the readings of
		// an aborted one: see TxnMarker and abortedIn). Without
		// transactional producers this changes nothing.
		IsolationLevel: kafka.ReadCommitted,
		QueueCapacity:  16384, SessionTimeout: cfg.SessionTimeout, Dialer: s.dialer(),
		GroupBalancers: []kafka.GroupBalancer{oneMember{since: s.since, holding: s.heldSettled}},
		// Partitions added to the readings topic are consumed after the
		// next check (a rebalance hands them to the holder).
		WatchPartitionChanges: true, PartitionWatchInterval: 5 * time.Second, HeartbeatInterval: cfg.SessionTimeout / 6,
		RebalanceTimeout: cfg.SessionTimeout,
		ErrorLogger:      readerErrorLogger(cfg.Log)})
	newWriter := func(topic string) *kafka.Writer {
		// RequiredAcks must be set: the zero value does not wait for the
		// broker and so hides its errors.
		return &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: topic, Balancer: &kafka.Hash{}, Transport: roundTripper(transport),
			RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000, BatchBytes: writerBatchBytes}
	}
	s.forecasts, s.letters = newWriter(cfg.ForecastsTopic), newWriter(cfg.DeadLetterTopic)
	defer func() {
		s.reader.Close()
		s.forecasts.Close()
		s.letters.Close()
		closeTransport(transport)
	}()
	s.mu.Lock()
	s.health.started = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.health.started = false
		s.mu.Unlock()
	}()
	// The probe has ended before the transport closes, and writes nothing
	// after Run returns.
	pctx, stopProbe := context.WithCancel(ctx)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		s.probe(pctx, transport)
	}()
	defer func() {
		stopProbe()
		<-probed
	}()
	cfg.Log.Info().Strs("brokers", cfg.Brokers).Str("readings", cfg.ReadingsTopic).Str("forecasts", cfg.ForecastsTopic).
		Str("group", cfg.GroupID).Str("client_id", s.clientID).Stringer("security", cfg.Security).Str("model", s.Bundle().Meta.Version).Msg("consuming")
	if cfg.Security.ClearPassword() {
		cfg.Log.Warn().Msg("SASL PLAIN without TLS: the password crosses the network in clear; add -tls")
	}

	parts, err := partitionsOf(ctx, transport, cfg.Brokers, cfg.ReadingsTopic)
	if err != nil {
		if ctx.Err() != nil {
			// Stopped before the first fetch: nothing was read yet.
			cfg.Log.Info().Err(err).Msg("stopped before consuming")
			return nil
		}
		return err
	}
	// Partitions may run at most half the history apart (see Aligner).
	// s.state is read under s.loop: a reload may replace it meanwhile.
	s.loop <- struct{}{}
	history, newest := s.state.History(), s.state.Newest()
	<-s.loop
	align := NewAligner(parts, int64(max(history/2, 1)), time.Second, 1<<20, time.Now())
	align.BacklogWait = 30 * time.Second
	// A burst far ahead of the newest slot applied is held a second for
	// the other partitions' shares (see Aligner): from the state restored,
	// and from the windows rebuilt once this service holds the partitions.
	align.Hold = cfg.BurstHold
	align.SetBase(newest)
	// The batch in hand is flushed (written, its state saved, committed)
	// while the next is fetched and applied; two jobs' buffers take turns.
	// Before Run returns, and before the writers and reader close, the
	// last one is finished.
	defer func() {
		s.loop <- struct{}{}
		defer func() { <-s.loop }()
		if err := s.finishFlush(); err != nil { // Run returns an earlier error
			cfg.Log.Error().Err(err).Msg("the last batch handed over was not committed either")
		}
	}()
	// Readings are fetched and decoded beside the loop (see fetcher), and
	// the fetcher has stopped before the reader closes.
	fetch := newFetcher(s.reader.FetchMessage, s.valid, cfg.BatchSize)
	fctx, stopFetch := context.WithCancel(ctx)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		fetch.run(fctx)
	}()
	defer func() {
		stopFetch()
		<-fetched
	}()
	var (
		jobs    [2]flushJob
		turn    int
		batch   commitSet
		dead    []kafka.Message
		held    []Held
		order   []int32 // held's indices in slot order
		r       Reading // scratch, for the error of a reading the fetcher could not decode
		taken   []Held  // taken from the fetcher, before the Aligner holds them
		arrived []time.Time
		resumed = map[int]bool{}
		grow    bool // jobs[turn] holds a batch not handed over yet, to grow
		// Fetch errors (the broker gone) are retried: kafka-go's reader
		// reconnects by itself and reports the errors meanwhile.
		fetchWarned  time.Time
		fetchFailing bool
		quiet        []int     // partitions quiet while catching up
		stableAsked  time.Time // when their last stable offsets were last asked
		unknown      []int     // partitions not fetched from, their backlogs unknown
		backlogAsked time.Time // when their backlogs were last asked
		holdingSince time.Time // when this service last began to hold the partitions
	)
	for {
		// One batch, with the model held (see Reload).
		stop, err := func() (bool, error) {
			s.loop <- struct{}{}
			defer func() { <-s.loop }()
			var err error
			j := &jobs[turn] // not pending: its flush ended before the other's began
			held = held[:0]
			if batch, dead, arrived = j.batch, j.dead, j.arrived; !grow {
				batch.reset()
				dead, arrived = dead[:0], arrived[:0]
				j.fc.reset()
			}
			// Block for the first reading until the next forecast deadline.
			wait := cfg.CommitEvery
			if at, ok := s.emitter.NextDeadline(); ok {
				wait = min(wait, max(time.Millisecond, at.Sub(cfg.Now())))
			}
			if align.Len() > 0 {
				wait = min(wait, 50*time.Millisecond) // held readings wait for other partitions
			}
			deadline := time.Now().Add(wait)
			var (
				fetchErr    error
				got         int
				gatherUntil time.Time
			)
			for got < cfg.BatchSize {
				n := len(taken)
				if taken, fetchErr = fetch.take(ctx, taken, cfg.BatchSize-got, deadline); fetchErr != nil {
					fetchErr = fmt.Errorf("fetch readings: %w", fetchErr)
					break
				}
				if len(taken) == n {
					break // the deadline passed, or ctx ended
				}
				more := got == 0
				for i := n; i < len(taken); i++ {
					h := taken[i]
					if !resumed[h.Msg.Partition] {
						resumed[h.Msg.Partition] = true
						cfg.Log.Info().Int("partition", h.Msg.Partition).Int64("offset", h.Msg.Offset).Msg("first reading of partition")
					}
					// The broker said more follows (a backlog; the rest
					// of a transaction, and its marker, fetched together).
					more = more || h.Msg.Offset+1 < h.Msg.HighWaterMark
					align.Add(h)
				}
				if got == 0 {
					gatherUntil = time.Now().Add(wait)
				}
				got += len(taken) - n
				// Gather what is already fetched, and what follows, within
				// the wait.
				if more {
					if deadline = time.Now().Add(2 * time.Millisecond); deadline.After(gatherUntil) {
						deadline = gatherUntil
					}
				}
			}
			clear(taken) // the messages' bytes, until the next batch
			taken = taken[:0]
			// A partition not fetched from yet holds the others back for
			// a second (Aligner.Idle); the broker says whether it has
			// records to read, for which they wait longer (Backlog).
			// Both count from when this service begins to hold the
			// partitions, at start or taking over from another member.
			claims := got > 0 || s.holdsPartitions() // see holding below
			// A holder keeps holding through batches without readings
			// until an assignment check that began since it holds says
			// otherwise. As it starts, the last check's answer may
			// predate its joining the group ("no partitions assigned
			// yet"): taking it would let go and rebuild at every
			// reading until the next check, and the aligner would
			// start over each time.
			if !claims && s.holding && !s.assignmentAskedSince(holdingSince) {
				claims = true
			}
			if !s.holding && claims {
				align.Restart(time.Now())
				backlogAsked = time.Time{}
			}
			if time.Since(backlogAsked) > time.Second {
				if unknown = align.Unknown(unknown[:0]); len(unknown) > 0 {
					backlogAsked = time.Now()
					s.backlogs(ctx, client, unknown, align)
				}
			}
			// A partition that holds others back and has said for a
			// second that more follows may be stopped at a transaction
			// left open: ask the broker where it stops (Aligner.Stable).
			if align.Len() > 0 && time.Since(stableAsked) > time.Second {
				if quiet = align.Quiet(time.Now(), time.Second, quiet[:0]); len(quiet) > 0 {
					stableAsked = time.Now()
					s.stable(ctx, client, quiet, align)
				}
			}
			overflows := align.Overflows
			held = align.Release(time.Now(), held)
			if align.Overflows != overflows {
				cfg.Log.Warn().Int("released", len(held)).Msg("more readings held for slower partitions than allowed: released all")
			}
			// A standby (no partitions, no readings) emits nothing: its
			// state, restored at start, may hold forecasts past their
			// deadline that the holder emits. Once it holds the partitions
			// it first takes the holder's state over, if they share a file.
			holding := claims || len(held) > 0
			if holding {
				if !s.holding {
					holdingSince = time.Now()
					// Taking the partitions over: the file and the
					// committed offsets are read, so finish writing
					// them first.
					if err := s.finishFlush(); err != nil {
						return false, err
					}
					// Only now: a write of the file while this service
					// holds the partitions is a former holder's that lost
					// its session (its commit fails, and what it applied
					// is read again here), not one to go back to.
					s.adoptState()
				}
				if !s.holding && !cfg.NoRebuild {
					s.rebuildLogged(ctx, transport)
				}
				if !s.holding {
					align.SetBase(s.state.Newest())
				}
			}
			s.holding = holding
			aborted := s.abortedIn(ctx, client, held)
			// In slot order, emitting at every new slot, so that no input runs
			// ahead of a pending forecast by more than the partitions' slack.
			// An order of indices is sorted rather than held itself,
			// whose elements are large.
			order = order[:0]
			for i := range held {
				order = append(order, int32(i))
			}
			slices.SortFunc(order, func(a, b int32) int {
				return cmp.Or(cmp.Compare(held[a].Slot, held[b].Slot), cmp.Compare(a, b))
			})
			now := cfg.Now()
			var prev *Held
			for _, hi := range order {
				h := &held[hi]
				if prev != nil && h.OK && prev.OK && h.Slot != prev.Slot {
					if err = s.emitDue(&j.fc); err != nil {
						return false, err
					}
				}
				prev = h
				m := &h.Msg
				batch.add(m.Partition, m.Offset)
				if commit, ok := TxnMarker(m.Key, m.Value); ok {
					if commit {
						s.state.Counters.TxnCommits.Add(1)
					} else {
						s.state.Counters.TxnAborts.Add(1)
					}
					continue
				}
				if aborted[[2]int64{int64(m.Partition), m.Offset}] {
					s.state.Counters.TxnAborted.Add(1)
					continue
				}
				// Decoded and checked when fetched; what was not is
				// decoded and checked again for its error (r is scratch:
				// h.Reading's values are not written to). The fetcher's
				// check stands unless a clock moved on since.
				rd, err := &h.Reading, error(nil)
				if !h.OK {
					rd = &r
					err = DecodeReadingInto(rd, m.Key, m.Value)
				}
				if err == nil && (!h.OK || s.valid.Now != nil) {
					err = s.valid.Check(*rd)
				}
				if err == nil {
					var res ApplyResult
					if res, err = s.state.Apply(*rd); err == nil {
						if res.Changed() { // it may make forecasts due
							arrived = append(arrived, h.Arrived)
						}
						s.emitter.OnApply(res, now)
						if res.Changed() || res.Kind == Duplicate { // the values the state holds
							s.live.Reading(rd.Sensor, rd.TS, rd.Values)
						}
						continue
					}
				}
				s.state.Counters.Reject(err)
				dead = append(dead, deadLetterMessage(NewDeadLetter(err, m.Key, m.Value, cfg.ReadingsTopic, int32(m.Partition), m.Offset)))
			}
			if holding {
				if err = s.emitDue(&j.fc); err != nil { // fresh and past deadline
					return false, err
				}
			}
			j.batch, j.dead, j.arrived = batch, dead, arrived
			// A batch cut at BatchSize (a backlog flows) while the one
			// before is still being written and committed goes on
			// growing rather than waiting for it, up to maxGrow batches:
			// the flush then takes more at each round trip, and the
			// loop waits less.
			grow = got == cfg.BatchSize && holding && fetchErr == nil && ctx.Err() == nil &&
				batch.n < maxGrow*cfg.BatchSize && s.pending != nil && !s.pending.ended()
			handOver := func() error {
				// The batch before is committed before this one is handed over.
				if err := s.finishFlush(); err != nil {
					return err
				}
				if cfg.StateFile != "" && batch.n > 0 {
					j.state = s.state.AppendSnapshot(j.state[:0])
				}
				s.startFlush(ctx, j)
				turn ^= 1
				grow = false
				return nil
			}
			if !grow {
				if err := handOver(); err != nil {
					return false, err
				}
			}
			done := time.Now()
			s.mu.Lock()
			if got > 0 {
				s.health.fetchOKAt = done
			}
			if fetchErr != nil {
				s.health.fetchErr, s.health.fetchErrAt = fetchErr, done
			}
			s.mu.Unlock()
			switch {
			case fetchErr != nil:
				s.counters.FetchErrors.Add(1)
				if !fetchFailing || done.Sub(fetchWarned) > 30*time.Second {
					cfg.Log.Warn().Err(fetchErr).Msg("cannot fetch readings: retrying (see /readyz)")
					fetchWarned = done
				}
				fetchFailing = true
				sleepCtx(ctx, 500*time.Millisecond) // the reader backs off too
			case got > 0 && fetchFailing:
				cfg.Log.Info().Msg("fetching readings again")
				fetchFailing = false
			}
			if ctx.Err() != nil {
				if grow {
					if err := handOver(); err != nil {
						return false, err
					}
				}
				if err := s.finishFlush(); err != nil {
					return false, err
				}
				cfg.Log.Info().Int("held", align.Len()).Msg("shutting down: batch committed (held readings are read again at restart)")
				return true, nil
			}
			return false, nil
		}()
		if stop || err != nil {
			return err
		}
	}
}

// stable asks the broker for the last stable offsets of the readings
// partitions ps, read committed, and passes them to align (see
// Aligner.Stable), logging each partition found stopped at an open
// transaction. Errors are warned of (once a minute at most); the
// partitions then stay counted as catching up.
func (s *Service) stable(ctx context.Context, client *kafka.Client, ps []int, align *Aligner) {
	topic := s.cfg.ReadingsTopic
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}, IsolationLevel: kafka.ReadCommitted}
	for _, p := range ps {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := client.ListOffsets(lctx, req)
	if err == nil {
		for _, po := range resp.Topics[topic] {
			if po.Error != nil {
				err = fmt.Errorf("partition %d: %w", po.Partition, po.Error)
				continue
			}
			if align.Stable(po.Partition, po.LastOffset) {
				s.cfg.Log.Info().Int("partition", po.Partition).Int64("offset", po.LastOffset).
					Msg("partition stops at a transaction still open: the others are not held for it")
			}
		}
	}
	if err != nil && ctx.Err() == nil {
		if ok, held := s.markerLog.allow("stable", time.Now()); ok {
			s.cfg.Log.Warn().Err(err).Int("suppressed", held).Ints("partitions", ps).
				Msg("cannot ask where quiet partitions stop: the others are held for them")
		}
	}
}

// backlogs asks the broker how many records the readings partitions ps,
// of which nothing has been fetched yet, hold for this consumer: from the
// group's committed offset (or the first offset, where none is committed
// or it has been deleted) to the last stable offset. It passes them to
// align (see Aligner.Backlog). Errors are warned of (once a minute at
// most); the partitions then stay unknown, and are asked again.
func (s *Service) backlogs(ctx context.Context, client *kafka.Client, ps []int, align *Aligner) {
	topic := s.cfg.ReadingsTopic
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lag, err := groupLag(lctx, client, s.cfg.GroupID, topic, ps)
	for p, n := range lag {
		align.Backlog(p, n)
	}
	if err != nil && ctx.Err() == nil {
		if ok, held := s.markerLog.allow("backlog", time.Now()); ok {
			s.cfg.Log.Warn().Err(err).Int("suppressed", held).Ints("partitions", ps).
				Msg("cannot ask what partitions not fetched from yet hold: the others wait a second for them")
		}
	}
}

// dialer returns the reader's dialer: the security's, with the service's
// client id.
func (s *Service) dialer() *kafka.Dialer {
	d := s.cfg.Security.Dialer()
	if d == nil {
		d = &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true}
	}
	d.ClientID = s.clientID
	return d
}

// emitDue adds the forecasts due now to fb, round after round (a node's
// next slot may be due as soon as one is emitted, as when catching up),
// each round's embeddings and decoders computed in one batch each. Their
// messages are encoded by the batch's flush (see forecastBatch).
func (s *Service) emitDue(fb *forecastBatch) error {
	now := s.cfg.Now()
	nonFinite := s.counters.NonFinite.Load()
	defer func() {
		if n := s.counters.NonFinite.Load() - nonFinite; n > 0 {
			if ok, held := s.markerLog.allow("non-finite", time.Now()); ok {
				s.cfg.Log.Warn().Uint64("slots", n).Int("suppressed", held).
					Msg("forecasts came out NaN or infinite (readings beyond the model's scale?): their slots are passed by (sdgnn_stream_forecasts_non_finite_total)")
			}
		}
	}()
	for {
		fs, err := s.emitter.EmitMany(s.emitter.Due(now), now)
		for i := range fs {
			f := &fs[i]
			s.live.Forecast(f.Sensor, f.TS, f.Values)
			fb.add(f)
		}
		if err != nil {
			return fmt.Errorf("forecast: %w", err)
		}
		if len(fs) == 0 {
			return nil
		}
	}
}

// writerBatchBytes caps the bytes of the messages the service's and the
// publishers' writers send to a partition in one record batch: under the 1 MB a Kafka broker
// takes in one by default (max.message.bytes, 1,048,588 bytes with the
// batch's header), which it refuses whole (Message Size Too Large) and a
// retry would only send again.
const writerBatchBytes = 1_000_000

// maxGrow is how many times BatchSize readings a batch may grow to while
// the batch before is being committed (see Run).
const maxGrow = 4
