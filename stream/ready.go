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
	assigned     bool      // this service held every partition then
	assignDetail string    // what the assignment check found
	loopAt       time.Time // the consumer loop last finished a batch (zero: none yet)
	fetchOKAt    time.Time // a batch last had readings
	fetchErr     error     // the last fetch error, at fetchErrAt
	fetchErrAt   time.Time
	lag          int64 // readings not yet consumed, as last reported
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
// when a limit is set).
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
	switch {
	case lim.maxLag <= 0:
		add("lag", true, "%d readings behind (no limit set)", h.lag)
	case h.lag > lim.maxLag:
		add("lag", false, "%d readings behind, more than %d: catching up", h.lag, lim.maxLag)
	default:
		add("lag", true, "%d readings behind, at most %d", h.lag, lim.maxLag)
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

// probe asks the brokers for the readings topic's metadata, and the group
// coordinator for the group's assignment, every Config.ProbeEvery until
// ctx ends, recording the answers for the broker and assignment checks. A
// reader that cannot reach its broker retries without telling its caller,
// so the service would otherwise look healthy while idle; and a standby
// consumes nothing without an error. While a check fails (the service
// joining its group, a standby, the broker away) it asks at least every
// half second, so that readiness follows a hand-over promptly. t is the
// service's transport (nil: kafka-go's default).
func (s *Service) probe(ctx context.Context, t *kafka.Transport) {
	every := s.cfg.ProbeEvery
	for {
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
		s.health.assignAt, s.health.assigned, s.health.assignDetail = now, assigned, detail
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
		wait := every
		if err != nil || !assigned {
			wait = min(every, 500*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// lagMeter measures the consumer lag: per partition, the high watermark
// that came with the last message handled from it less the next offset,
// summed over partitions. A kafka-go group reader's own Stats().Lag is the
// lag of whichever partition it fetched last, not counting what waits in
// its queue.
type lagMeter struct {
	parts map[int]partitionLag
}

type partitionLag struct {
	lag int64
	at  time.Time
}

// observe records that the message m (with its HighWaterMark) was handled
// at now.
func (l *lagMeter) observe(partition int, offset, highWaterMark int64, now time.Time) {
	if l.parts == nil {
		l.parts = map[int]partitionLag{}
	}
	l.parts[partition] = partitionLag{lag: max(highWaterMark-offset-1, 0), at: now}
}

// total returns the summed lag of the partitions observed within maxAge
// of now. Older entries are dropped: a partition this consumer still owns
// and is behind on yields messages at every batch, so an old entry is of
// a partition handed to another member of the group.
func (l *lagMeter) total(now time.Time, maxAge time.Duration) int64 {
	var sum int64
	for p, e := range l.parts {
		if now.Sub(e.at) > maxAge {
			delete(l.parts, p)
			continue
		}
		sum += e.lag
	}
	return sum
}
