package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/segmentio/kafka-go"
)

// forecastBatch holds a batch's forecasts from their emission until its
// flush encodes their messages, which so runs beside the next batch's
// fetching and applying rather than before it (on 2 cores, a tenth of
// the service's own work). The forecasts are copies, since the emitter
// reuses its own; their values and inputs are kept in chunks that many
// forecasts share, reused by the job's next batch.
type forecastBatch struct {
	fcs  []Forecast
	vals []float64
	ins  []Input
}

// reset empties fb for the next batch, keeping its last chunks.
func (fb *forecastBatch) reset() {
	clear(fb.fcs) // the strings and old chunks they hold
	fb.fcs, fb.vals, fb.ins = fb.fcs[:0], fb.vals[:0], fb.ins[:0]
}

// add appends a copy of f.
func (fb *forecastBatch) add(f *Forecast) {
	c := *f
	if cap(fb.vals)-len(fb.vals) < len(f.Values) {
		fb.vals = make([]float64, 0, max(4096, 2*cap(fb.vals), len(f.Values)))
	}
	n := len(fb.vals)
	fb.vals = append(fb.vals, f.Values...)
	c.Values = fb.vals[n:len(fb.vals):len(fb.vals)]
	if cap(fb.ins)-len(fb.ins) < len(f.Inputs) {
		fb.ins = make([]Input, 0, max(4096, 2*cap(fb.ins), len(f.Inputs)))
	}
	n = len(fb.ins)
	fb.ins = append(fb.ins, f.Inputs...)
	c.Inputs = fb.ins[n:len(fb.ins):len(fb.ins)]
	fb.fcs = append(fb.fcs, c)
}

// forecastMessage returns f's message, its key and value in one
// allocation of their exact size: the message lives until its batch is
// written, and its value as the sensor's latest forecast until the next.
// The value is encoded into a scratch buffer the service keeps, so that
// encoding grows no slice; only the flush in progress calls it.
func (s *Service) forecastMessage(f *Forecast) kafka.Message {
	s.encoded = EncodeForecast(s.encoded[:0], f)
	var key [20]byte
	k := appendKey(key[:0], f.Sensor, f.ID)
	buf := make([]byte, len(k)+len(s.encoded))
	n := copy(buf, k)
	copy(buf[n:], s.encoded)
	return kafka.Message{Key: buf[:n:n], Value: buf[n:]}
}

// commitSet is what a batch commits: the last offset it holds of each
// partition (Kafka's committed offset is the one after it), and how many
// messages it holds. Only these are needed of the batch's messages, whose
// bytes it so does not keep.
type commitSet struct {
	last  []int64 // by partition: the largest offset held, −1 if none
	parts []int   // the partitions held, in the order first added
	n     int
}

// add counts the message at offset off of partition p.
func (c *commitSet) add(p int, off int64) {
	c.n++
	for len(c.last) <= p {
		c.last = append(c.last, -1)
	}
	if c.last[p] < 0 {
		c.parts = append(c.parts, p)
	}
	c.last[p] = max(c.last[p], off)
}

// reset empties c.
func (c *commitSet) reset() {
	for _, p := range c.parts {
		c.last[p] = -1
	}
	c.parts, c.n = c.parts[:0], 0
}

// messages appends to dst, for kafka-go's CommitMessages, a message of
// topic for each partition held, at its last offset.
func (c *commitSet) messages(dst []kafka.Message, topic string) []kafka.Message {
	for _, p := range c.parts {
		dst = append(dst, kafka.Message{Topic: topic, Partition: p, Offset: c.last[p]})
	}
	return dst
}

// DefaultRetryFor is how long a batch that cannot be written or committed
// is tried again before Run gives up (see Config.RetryFor).
const DefaultRetryFor = 5 * time.Minute

// flushJob is a batch to finish: its dead letters and forecasts to write,
// then the state to save and its offsets to commit. What was written is
// marked, so that a retry does not write it again.
type flushJob struct {
	batch   commitSet
	dead    []kafka.Message // not yet acknowledged, after a write failed for some of them
	fc      forecastBatch   // the forecasts, encoded into out by the flush
	out     []kafka.Message // fc's messages, once encoded
	outLeft []kafka.Message // out's not yet acknowledged, after a write failed for some of them
	arrived []time.Time
	state   []byte // the state's snapshot after the batch, saved before the commit (with Config.StateFile)

	lettersDone, forecastsDone, outTried bool

	done chan struct{} // closed when the flush has ended, err then set
	err  error
}

// startFlush hands j to a goroutine that flushes it (flushRetrying) and
// makes it the pending batch; the caller holds s.loop and has waited for
// the one pending before (finishFlush).
func (s *Service) startFlush(ctx context.Context, j *flushJob) {
	j.lettersDone, j.forecastsDone, j.outTried, j.err = false, false, false, nil
	j.out, j.outLeft = j.out[:0], j.outLeft[:0]
	j.done = make(chan struct{})
	s.pending = j
	go func() {
		defer close(j.done)
		if j.err = s.flushRetrying(ctx, j); j.err == nil {
			s.mu.Lock()
			s.health.loopAt = time.Now()
			s.mu.Unlock()
		}
	}()
}

// ended reports whether j's flush has ended.
func (j *flushJob) ended() bool {
	select {
	case <-j.done:
		return true
	default:
		return false
	}
}

// finishFlush waits until the pending batch is written and committed, or
// its flush has given up, and returns the flush's error; nil when none is
// pending. The caller holds s.loop.
func (s *Service) finishFlush() error {
	j := s.pending
	if j == nil {
		return nil
	}
	<-j.done
	s.pending = nil
	return j.err
}

// flushRetrying flushes j, trying again with backoff while a write, the
// state save or the commit fails, for up to Config.RetryFor or until ctx
// ends. Writes and commits use a context that outlives a shutdown
// request, so that the batch in hand is finished when the broker answers.
func (s *Service) flushRetrying(ctx context.Context, j *flushJob) error {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := s.flush(wctx, j)
		cancel()
		if err == nil {
			if attempt > 1 {
				s.cfg.Log.Info().Int("attempts", attempt).Msg("batch committed after retries")
			}
			return nil
		}
		if ctx.Err() != nil || time.Since(start) >= s.cfg.RetryFor {
			return fmt.Errorf("batch not committed after %d attempts in %s (it is read again at restart): %w", attempt, time.Since(start).Round(time.Millisecond), err)
		}
		s.counters.FlushRetries.Add(1)
		s.cfg.Log.Warn().Err(err).Int("attempt", attempt).Msg("batch not committed: trying again (see /readyz)")
		sleepCtx(ctx, min(100*time.Millisecond<<min(attempt, 6), 5*time.Second))
		forgetConnections(s.forecasts)
		forgetConnections(s.letters)
	}
}

// forgetConnections drops the idle connections of w's transport (kafka-go's
// default one where w has none), and with them what it remembers of each
// broker: a refused dial is answered again, without dialling, for the
// metadata's lifetime (6 s), so a retry would fail for that long after
// the broker is back. Requests under way keep their connections.
func forgetConnections(w *kafka.Writer) {
	if w == nil {
		return
	}
	rt := w.Transport
	if rt == nil {
		rt = kafka.DefaultTransport
	}
	if t, ok := rt.(*kafka.Transport); ok {
		t.CloseIdleConnections()
	}
}

// unacked appends to dst the messages of msgs that err, returned by a
// kafka-go Writer's WriteMessages(msgs...), does not say were written: the
// failed ones of kafka.WriteErrors, or all of them. dst may be msgs[:0].
func unacked(dst, msgs []kafka.Message, err error) []kafka.Message {
	var we kafka.WriteErrors
	if !errors.As(err, &we) || len(we) != len(msgs) {
		return append(dst, msgs...)
	}
	for i, e := range we {
		if e != nil {
			dst = append(dst, msgs[i])
		}
	}
	return dst
}

// sleepCtx waits for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (s *Service) flush(ctx context.Context, j *flushJob) error {
	// A write that fails for some messages only (one partition's leader
	// away) is retried for those: the others are not written twice.
	if len(j.dead) > 0 && !j.lettersDone {
		if err := s.letters.WriteMessages(ctx, j.dead...); err != nil {
			j.dead = unacked(j.dead[:0], j.dead, err)
			return fmt.Errorf("write dead letters: %w", briefWriteError(err))
		}
		j.lettersDone = true
	}
	if len(j.out) < len(j.fc.fcs) { // encoded once, not at every retry
		for i := len(j.out); i < len(j.fc.fcs); i++ {
			j.out = append(j.out, s.forecastMessage(&j.fc.fcs[i]))
		}
	}
	if len(j.out) > 0 && !j.forecastsDone {
		left := j.out
		if j.outTried {
			left = j.outLeft
		}
		j.outTried = true
		if err := s.forecasts.WriteMessages(ctx, left...); err != nil {
			j.outLeft = unacked(j.outLeft[:0], left, err)
			return fmt.Errorf("write forecasts: %w", briefWriteError(err))
		}
		j.forecastsDone = true
		done := time.Now()
		for _, t := range j.arrived {
			s.counters.ForecastLatency.Observe(done.Sub(t))
		}
		s.mu.Lock()
		for i, m := range j.out {
			s.latest[j.fc.fcs[i].Sensor] = m.Value
		}
		s.mu.Unlock()
	}
	if j.batch.n == 0 {
		return nil
	}
	if s.cfg.StateFile != "" {
		s.stateMu.Lock()
		err := writeAtomic(s.cfg.StateFile, j.state)
		if err == nil {
			s.stateSeen, _ = os.Stat(s.cfg.StateFile)
		}
		s.stateMu.Unlock()
		if err != nil {
			return fmt.Errorf("save state: %w", err)
		}
	}
	s.commits = j.batch.messages(s.commits[:0], s.cfg.ReadingsTopic)
	if err := s.reader.CommitMessages(ctx, s.commits...); err != nil {
		return fmt.Errorf("commit offsets: %w", err)
	}
	s.counters.Batches.Add(1)
	s.counters.BatchMessages.Add(uint64(j.batch.n))
	return nil
}

// writeAtomic writes data to path so that a crash leaves either the old or
// the new file (checkpoint.WriteAtomic).
func writeAtomic(path string, data []byte) error {
	return checkpoint.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
