package stream

import (
	"context"
	"time"

	"github.com/segmentio/kafka-go"
)

// Run consumes until ctx is cancelled, then finishes the batch in hand,
// commits and closes (graceful shutdown).
//
// Its steps, in order: the HTTP endpoints (serveHTTP), the brokers and
// topics (join), the Kafka clients (openClients), the readiness probe
// (startProbe), the Aligner over the readings partitions (newAligner), the
// fetcher (startFetcher), then one batch after another (consumeLoop.round:
// fetch, hold, apply, emit, hand to a flush that writes, saves and
// commits it while the next batch is fetched). What a step starts is
// stopped by a deferred call, in the reverse order: at shutdown the
// fetcher stops, the last batch handed over is committed (finishLast),
// then the probe, the Kafka clients and the HTTP server stop.
func (s *Service) Run(ctx context.Context) error {
	s.setRunning(true)
	defer s.setRunning(false)
	// The HTTP endpoints come first: an orchestrator's liveness check
	// passes, and /readyz says why, while the brokers are waited for.
	if s.cfg.HTTPAddr != "" {
		srv, err := s.serveHTTP()
		if err != nil {
			return err
		}
		defer srv.Close()
	}
	if ok, err := s.join(ctx); !ok {
		return err
	}
	transport := s.cfg.Security.Transport()
	client := brokerClient(s.cfg.Brokers, transport)
	if !s.cfg.NoRebuild {
		s.checkRetention(ctx, transport)
	}
	s.openClients(transport)
	defer s.closeClients(transport)
	s.setStarted(true)
	defer s.setStarted(false)
	stopProbe := s.startProbe(ctx, transport)
	defer stopProbe()
	s.logConsuming()
	parts, err := partitionsOf(ctx, transport, s.cfg.Brokers, s.cfg.ReadingsTopic)
	if err != nil {
		// Stopped before the first fetch: nothing was read yet.
		return s.orStopped(ctx, err, "stopped before consuming")
	}
	align := s.newAligner(parts)
	// The batch in hand is flushed (written, its state saved, committed)
	// while the next is fetched and applied; two jobs' buffers take turns.
	// Before Run returns, and before the writers and reader close, the
	// last one is finished.
	defer s.finishLast()
	// Readings are fetched and decoded beside the loop (see fetcher), and
	// the fetcher has stopped before the reader closes.
	fetch, stopFetch := s.startFetcher(ctx)
	defer stopFetch()
	c := &consumeLoop{s: s, client: client, transport: transport, align: align, fetch: fetch, resumed: map[int]bool{}}
	for {
		if stop, err := c.round(ctx); stop || err != nil {
			return err
		}
	}
}

// orStopped returns err, a step of Run's start having failed, or nil when
// ctx has ended meanwhile, logging msg: Run was stopped before it read
// anything, so nothing is lost.
func (s *Service) orStopped(ctx context.Context, err error, msg string) error {
	if ctx.Err() != nil {
		s.cfg.Log.Info().Err(err).Msg(msg)
		return nil
	}
	return err
}

// join waits for a broker to be reached (Config.WaitBrokers), saying
// why meanwhile on /readyz, then creates the service's topics where they
// are missing. It returns false when Run is to end: with the error, or
// with nil when ctx ended meanwhile (see orStopped).
func (s *Service) join(ctx context.Context) (bool, error) {
	cfg := &s.cfg
	err := cfg.Security.WaitBrokers(ctx, cfg.Brokers, cfg.WaitBrokers, func(err error, next time.Duration) {
		s.mu.Lock()
		s.health.probeAt, s.health.probeErr = time.Now(), err
		s.mu.Unlock()
		cfg.Log.Warn().Err(err).Stringer("retry_in", next).Stringer("wait", cfg.WaitBrokers).Msg("no broker reached yet: waiting")
	})
	if err != nil {
		return false, s.orStopped(ctx, err, "stopped before a broker was reached")
	}
	if err := cfg.Security.EnsureTopics(ctx, cfg.Brokers, cfg.Partitions, cfg.ReadingsTopic, cfg.ForecastsTopic, cfg.DeadLetterTopic); err != nil {
		// Stopped while asking for the topics: nothing was read yet.
		return false, s.orStopped(ctx, err, "stopped before consuming")
	}
	return true, nil
}

// openClients makes the readings topic's group reader and the writers
// of the forecasts and dead letters, over transport; closeClients
// closes them and transport.
func (s *Service) openClients(transport *kafka.Transport) {
	cfg := &s.cfg
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
}

// closeClients closes what openClients made, and transport.
func (s *Service) closeClients(transport *kafka.Transport) {
	s.reader.Close()
	s.forecasts.Close()
	s.letters.Close()
	closeTransport(transport)
}

// setStarted records whether Run has its Kafka clients, for /readyz.
func (s *Service) setStarted(on bool) {
	s.mu.Lock()
	s.health.started = on
	s.mu.Unlock()
}

// startProbe runs the readiness probe (see probe) beside Run until the
// function it returns is called, which waits for it to end: it has
// ended before the transport closes, and writes nothing after Run
// returns.
func (s *Service) startProbe(ctx context.Context, transport *kafka.Transport) (stop func()) {
	pctx, stopProbe := context.WithCancel(ctx)
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		s.probe(pctx, transport)
	}()
	return func() {
		stopProbe()
		<-probed
	}
}

// logConsuming says where the service consumes from and with which
// model, and warns of a password sent in clear.
func (s *Service) logConsuming() {
	cfg := &s.cfg
	cfg.Log.Info().Strs("brokers", cfg.Brokers).Str("readings", cfg.ReadingsTopic).Str("forecasts", cfg.ForecastsTopic).
		Str("group", cfg.GroupID).Str("client_id", s.clientID).Stringer("security", cfg.Security).Str("model", s.Bundle().Meta.Version).Msg("consuming")
	if cfg.Security.ClearPassword() {
		cfg.Log.Warn().Msg("SASL PLAIN without TLS: the password crosses the network in clear; add -tls")
	}
	s.loop <- struct{}{} // s.state is read under s.loop: a reload may replace it
	unbounded := s.state.Bounds() == nil
	<-s.loop
	if unbounded && !cfg.NoValueRanges {
		cfg.Log.Info().Str("model", s.Bundle().Meta.Version).Msg("the bundle carries no plausible ranges (distilled before they were kept): readings are only checked to be finite; distil it again or set -value-range")
	}
}

// newAligner returns the Aligner of the readings partitions parts, based
// at the newest slot the state holds.
func (s *Service) newAligner(parts []int) *Aligner {
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
	align.Hold = s.cfg.BurstHold
	align.SilentAfter = 10 * time.Second
	align.SetBase(newest)
	return align
}

// finishLast finishes the last batch handed to a flush, as Run returns,
// logging its error: Run returns an earlier one.
func (s *Service) finishLast() {
	s.loop <- struct{}{}
	defer func() { <-s.loop }()
	if err := s.finishFlush(); err != nil { // Run returns an earlier error
		s.cfg.Log.Error().Err(err).Msg("the last batch handed over was not committed either")
	}
}

// startFetcher starts the fetcher of the readings beside Run (see
// fetcher) until the function it returns is called, which waits for it
// to end.
func (s *Service) startFetcher(ctx context.Context) (*fetcher, func()) {
	fetch := newFetcher(s.reader.FetchMessage, s.valid, s.cfg.BatchSize)
	fetch.names = s.names
	fctx, stopFetch := context.WithCancel(ctx)
	fetched := make(chan struct{})
	go func() {
		defer close(fetched)
		fetch.run(fctx)
	}()
	return fetch, func() {
		stopFetch()
		<-fetched
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

// writerBatchBytes caps the bytes of the messages the service's and the
// publishers' writers send to a partition in one record batch: under the 1 MB a Kafka broker
// takes in one by default (max.message.bytes, 1,048,588 bytes with the
// batch's header), which it refuses whole (Message Size Too Large) and a
// retry would only send again.
const writerBatchBytes = 1_000_000
