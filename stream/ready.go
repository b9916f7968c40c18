package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// DefaultProbeEvery is how often a running Service asks the brokers for the
// readings topic's metadata, the broker check of its readiness.
const DefaultProbeEvery = 5 * time.Second

// Readiness says whether a Service should be sent traffic now (served on
// /readyz): every check passed. A service that is up but not ready still
// consumes what it can and serves its latest forecasts; a load balancer or
// Kubernetes readiness probe should prefer a ready replica.
type Readiness struct {
	Ready  bool
	Checks []Check
}

// Check is one readiness check: its name, whether it passed and what it
// found.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

// Write writes r as Kubernetes writes /readyz?verbose: one line per check,
// "[+]name ok: detail" or "[-]name failed: detail", then the verdict.
func (r Readiness) Write(w io.Writer) error {
	for _, c := range r.Checks {
		mark, word := "[+]", "ok"
		if !c.OK {
			mark, word = "[-]", "failed"
		}
		if _, err := fmt.Fprintf(w, "%s%s %s: %s\n", mark, c.Name, word, c.Detail); err != nil {
			return err
		}
	}
	verdict := "readyz check passed"
	if !r.Ready {
		verdict = "readyz check failed"
	}
	_, err := fmt.Fprintln(w, verdict)
	return err
}

// health is what a Service's readiness is judged from, kept under its mu.
type health struct {
	running      bool      // Run runs (/healthz), waiting for the brokers included
	started      bool      // Run has connected and is consuming
	probeAt      time.Time // the last broker probe ended (zero: none yet)
	probeOKAt    time.Time // the last probe that succeeded ended
	probeErr     error     // the last probe's error, nil if it succeeded
	assignAt     time.Time // the last assignment check ended (zero: none yet)
	assignAsked  time.Time // when it began: what it found is at least that recent
	assigned     bool      // this service held every partition then
	assignDetail string    // what the assignment check found
	loopAt       time.Time // the consumer loop last finished a batch (zero: none yet)
	fetchOKAt    time.Time // a batch last had readings
	fetchErr     error     // the last fetch error, at fetchErrAt
	fetchErrAt   time.Time
	lag          int64     // offsets the group has yet to consume, summed (see groupLag)
	lagAt        time.Time // when lag was measured (zero: not yet)
	partLag      []int64   // lag by partition, as measured then
}

// readinessLimits are the thresholds of the checks.
type readinessLimits struct {
	probeEvery time.Duration // a probe older than 3 of these is stale
	stallAfter time.Duration // a loop that finished no batch for this long is stalled
	maxLag     int64         // 0: no limit
}

// judge runs the checks on h at now: started, broker (the last metadata
// request answered, and recently), assignment (this service holds every
// partition of the readings topic: not a standby), consuming (a batch
// finished recently, not stuck writing or committing, and no fetch failed
// lately without readings since) and lag (at most maxLag readings behind,
// when a limit is set, by the last measure: see groupLag).
func judge(h health, now time.Time, lim readinessLimits) Readiness {
	ago := func(t time.Time) string { return now.Sub(t).Round(time.Millisecond).String() }
	var cs []Check
	add := func(name string, ok bool, format string, args ...any) {
		// One line per check: the errors of several brokers are joined
		// by newlines.
		detail := strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", "; ")
		cs = append(cs, Check{Name: name, OK: ok, Detail: detail})
	}
	if h.started {
		add("started", true, "consuming")
	} else {
		add("started", false, "not consuming yet, or stopped")
	}
	switch {
	case h.probeAt.IsZero():
		add("broker", false, "not asked yet")
	case h.probeErr != nil && h.probeOKAt.IsZero():
		add("broker", false, "%v (never answered)", h.probeErr)
	case h.probeErr != nil:
		add("broker", false, "%v (last answered %s ago)", h.probeErr, ago(h.probeOKAt))
	case now.Sub(h.probeAt) > 3*lim.probeEvery:
		add("broker", false, "no probe ended for %s (every %s expected)", ago(h.probeAt), lim.probeEvery)
	default:
		add("broker", true, "answered %s ago", ago(h.probeOKAt))
	}
	switch {
	case h.assignAt.IsZero():
		add("assignment", false, "not checked yet")
	default:
		add("assignment", h.assigned, "%s", h.assignDetail)
	}
	switch {
	case h.loopAt.IsZero():
		add("consuming", false, "no batch finished yet")
	case now.Sub(h.loopAt) > lim.stallAfter:
		add("consuming", false, "no batch finished for %s (more than %s): waiting on a write or commit", ago(h.loopAt), lim.stallAfter)
	case h.fetchErr != nil && !h.fetchOKAt.After(h.fetchErrAt) && now.Sub(h.fetchErrAt) <= lim.stallAfter:
		add("consuming", false, "%v (%s ago)", h.fetchErr, ago(h.fetchErrAt))
	default:
		add("consuming", true, "last batch finished %s ago", ago(h.loopAt))
	}
	measured := ""
	if !h.lagAt.IsZero() && now.Sub(h.lagAt) > 3*lim.probeEvery {
		measured = " (measured " + ago(h.lagAt) + " ago)"
	}
	switch {
	case h.lagAt.IsZero() && lim.maxLag <= 0:
		add("lag", true, "not measured yet (no limit set)")
	case h.lagAt.IsZero():
		add("lag", false, "not measured yet")
	case lim.maxLag <= 0:
		add("lag", true, "%d readings behind%s (no limit set)", h.lag, measured)
	case h.lag > lim.maxLag:
		add("lag", false, "%d readings behind%s, more than %d: catching up", h.lag, measured, lim.maxLag)
	default:
		add("lag", true, "%d readings behind%s, at most %d", h.lag, measured, lim.maxLag)
	}
	r := Readiness{Ready: true, Checks: cs}
	for _, c := range cs {
		r.Ready = r.Ready && c.OK
	}
	return r
}

// Readiness runs the readiness checks now (see Readiness, Config.ReadyMaxLag).
// Safe to call from any goroutine.
func (s *Service) Readiness() Readiness {
	s.mu.RLock()
	h := s.health
	s.mu.RUnlock()
	return judge(h, time.Now(), s.readinessLimits())
}

func (s *Service) readinessLimits() readinessLimits {
	return readinessLimits{probeEvery: s.cfg.ProbeEvery, stallAfter: max(15*time.Second, 10*s.cfg.CommitEvery), maxLag: s.cfg.ReadyMaxLag}
}

// probeBrokers asks the brokers, one after the other, for the partitions
// of topic over a new connection, and returns nil as soon as one answers
// with some. (kafka-go's Client answers metadata requests from a cache
// that outlives the brokers, so it cannot tell whether they are there.)
func probeBrokers(ctx context.Context, sec Security, brokers []string, topic string) (partitions int, err error) {
	err = eachBroker(ctx, sec, brokers, func(conn *kafka.Conn) error {
		ps, err := conn.ReadPartitions(topic)
		if err == nil && len(ps) == 0 {
			err = errors.New("no partitions")
		}
		partitions = len(ps)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	return partitions, nil
}

// probe asks the brokers for the readings topic's metadata, the group
// coordinator for the group's assignment, and both for the group's lag
// (measureLag), every Config.ProbeEvery until ctx ends, recording the
// answers for the broker, assignment and lag checks. A
// reader that cannot reach its broker retries without telling its caller,
// so the service would otherwise look healthy while idle; and a standby
// consumes nothing without an error. While the broker check fails or the
// service holds nothing in a group not yet settled (joining, a rebalance)
// it asks at least every half second, so that readiness follows promptly;
// a standby of a settled group asks every ProbeEvery. t is the
// service's transport (nil: kafka-go's default).
func (s *Service) probe(ctx context.Context, t *kafka.Transport) {
	every := s.cfg.ProbeEvery
	client := brokerClient(s.cfg.Brokers, t)
	for {
		asked := time.Now()
		pctx, cancel := context.WithTimeout(ctx, every)
		partitions, err := probeBrokers(pctx, s.cfg.Security, s.cfg.Brokers, s.cfg.ReadingsTopic)
		var (
			assigned, stable bool
			detail           string
		)
		if err == nil {
			var aerr error
			if assigned, detail, stable, aerr = checkAssignment(pctx, t, s.cfg.Brokers, s.cfg.GroupID, s.clientID, s.cfg.ReadingsTopic, partitions); aerr != nil {
				detail = aerr.Error()
			}
			s.measureLag(pctx, client, partitions)
		} else {
			detail = "no broker answered"
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		now := time.Now()
		s.mu.Lock()
		was, wasAssigned := s.health.probeErr, s.health.assigned
		s.health.probeAt, s.health.probeErr = now, err
		if err == nil {
			s.health.probeOKAt = now
		}
		s.health.assignAt, s.health.assignAsked, s.health.assigned, s.health.assignDetail = now, asked, assigned, detail
		// What this member tells the group as it joins: the assignment of
		// the last settled group (a rebalance empties everyone's), none
		// once the broker is out of reach (the session will be lost).
		switch {
		case err != nil:
			s.held = false
		case stable:
			s.held = assigned
		}
		s.mu.Unlock()
		switch {
		case err != nil && was == nil:
			s.cfg.Log.Warn().Err(err).Msg("broker check failed: not ready")
		case err == nil && was != nil:
			s.cfg.Log.Info().Msg("broker check passes again")
		}
		if err == nil && assigned != wasAssigned {
			s.cfg.Log.Info().Bool("holds_partitions", assigned).Str("assignment", detail).Msg("assignment changed")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(probeWait(every, err, assigned, stable)):
		}
	}
}

// probeWait is how long probe waits after a probe: at most half a second
// while the broker check fails or the service holds nothing in a group
// that is not settled (joining, a rebalance), else every. A settled
// standby (stable, holding nothing) waits the whole interval: asking every
// half second, it opened two broker connections a second, each a TLS
// handshake and a SASL exchange on a secured cluster, for nothing; a
// hand-over goes through a rebalance, which it then meets within one
// interval.
func probeWait(every time.Duration, err error, assigned, stable bool) time.Duration {
	if err != nil || !assigned && !stable {
		return min(every, 500*time.Millisecond)
	}
	return every
}

// groupLag asks the broker, per partition of topic in ps, how many offsets
// group has yet to consume there: from its committed offset (or the
// partition's first offset, where none is committed or it has been
// deleted) to the last stable offset. Read committed, that is where a
// consumer can read to: the records of a transaction still open are not
// behind until it ends (a lag up to the high watermark, as
// kafka-consumer-groups.sh reports it, would count them). Transaction
// markers count as offsets to consume: kafka-go hands them over as
// messages, and the service commits past them. It returns the answers of
// the partitions that had one and an error naming those that did not.
func groupLag(ctx context.Context, client *kafka.Client, group, topic string, ps []int) (map[int]int64, error) {
	committed, err := committedOffsets(ctx, client, group, topic, ps)
	if err != nil {
		return nil, err
	}
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{}, IsolationLevel: kafka.ReadCommitted}
	for _, p := range ps {
		req.Topics[topic] = append(req.Topics[topic], kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := client.ListOffsets(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	lag := make(map[int]int64, len(ps))
	var errs []error
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			errs = append(errs, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error))
			continue
		}
		start := po.FirstOffset
		if c, ok := committed[po.Partition]; ok {
			start = max(start, c)
		}
		lag[po.Partition] = max(po.LastOffset-start, 0)
	}
	return lag, errors.Join(errs...)
}

// measureLag asks the broker for the group's lag on the readings topic's
// partitions (see groupLag) and records it for the lag check and
// /metrics. A failure keeps the last measure, with its age, and is warned
// of once a minute at most.
func (s *Service) measureLag(ctx context.Context, client *kafka.Client, partitions int) {
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	lag, err := groupLag(ctx, client, s.cfg.GroupID, s.cfg.ReadingsTopic, ps)
	if err != nil {
		if ctx.Err() == nil {
			if ok, held := s.markerLog.allow("lag", time.Now()); ok {
				s.cfg.Log.Warn().Err(err).Int("suppressed", held).Msg("cannot measure the consumer lag: the last measure stands")
			}
		}
		return
	}
	parts := make([]int64, partitions)
	var sum int64
	for p, n := range lag {
		parts[p] = n
		sum += n
	}
	s.mu.Lock()
	s.health.lag, s.health.lagAt, s.health.partLag = sum, time.Now(), parts
	s.mu.Unlock()
}
