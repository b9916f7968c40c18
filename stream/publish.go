package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Series is what Publish replays: row-major (step, node, channel) readings
// on the original scale, as in the PeMS release (0 = missing).
type Series struct {
	Steps, Nodes, Channels int
	Data                   []float64
}

// PublishConfig says how to replay a series into the readings topic.
type PublishConfig struct {
	Brokers  []string
	Security Security // TLS and SASL towards the brokers; zero: plaintext
	Topic    string
	From     int       // first step to publish
	To       int       // end step (exclusive)
	Start    time.Time // timestamp of step 0's slot
	StepMs   int64     // slot length
	// SlotPause is the pause between two slots (0: as fast as possible).
	// A real 5-minute slot at a speed-up of X is 5 min / X.
	SlotPause time.Duration
	// SkipMissing leaves missing readings (all channels 0) out instead of
	// sending zeros, as a sensor that did not report would.
	SkipMissing bool
	// Retry says how long a write the brokers do not acknowledge is tried
	// again (see Retry); zero: not beyond kafka-go's own attempts.
	Retry Retry
	// Sensors names the series' sensors: where they have IDs (a model's
	// or a dataset's), each reading is keyed by its sensor's ID and names
	// it so (EncodeReadingFor); nil, or without IDs: by index.
	Sensors *pems.SensorNames
}

// Retry is how a publisher rides out brokers that do not acknowledge a
// write (restarting, a leader moving, the network away): after kafka-go's
// own attempts (about 7 s with the broker gone), the readings not
// acknowledged are written again, in their order, with a backoff from 1 s
// up to 5 s, until For has passed since the write first failed.
type Retry struct {
	For time.Duration
	// OnRetry, if set, is called before each new attempt with the error,
	// how many readings wait and how long the retries have gone on.
	OnRetry func(err error, waiting int, since time.Duration)
}

// write writes msgs with w and returns how many of them, from the first,
// were acknowledged: len(msgs) when err is nil. A failed write is tried
// again as r says; a message is written again only if it was not
// acknowledged, and a partition's messages stay in their order (kafka-go
// writes or fails them together). ctx's end stops the retries.
func (r Retry) write(ctx context.Context, w *kafka.Writer, msgs []kafka.Message) (int, error) {
	err := w.WriteMessages(ctx, msgs...)
	if err == nil {
		return len(msgs), nil
	}
	acked := make([]bool, len(msgs))
	pending := make([]int, len(msgs)) // indices of msgs not acknowledged
	for i := range pending {
		pending[i] = i
	}
	start := time.Now()
	for attempt := 0; ; attempt++ {
		var we kafka.WriteErrors
		if errors.As(err, &we) && len(we) == len(pending) {
			left := pending[:0]
			for k, i := range pending {
				if we[k] == nil {
					acked[i] = true
				} else {
					left = append(left, i)
				}
			}
			pending = left
		}
		since := time.Since(start)
		if len(pending) == 0 || since >= r.For || ctx.Err() != nil || permanent(err) {
			break
		}
		if r.OnRetry != nil {
			r.OnRetry(briefWriteError(err), len(pending), since)
		}
		if sleepCtx(ctx, min(time.Second<<min(attempt, 3), 5*time.Second)); ctx.Err() != nil {
			break
		}
		forgetConnections(w) // dial again, not meet a refusal remembered
		try := make([]kafka.Message, len(pending))
		for k, i := range pending {
			try[k] = msgs[i]
		}
		if err = w.WriteMessages(ctx, try...); err == nil {
			return len(msgs), nil
		}
	}
	if len(pending) == 0 { // acknowledged after all, though not in one answer
		return len(msgs), nil
	}
	n := 0
	for n < len(msgs) && acked[n] {
		n++
	}
	return n, briefWriteError(err)
}

// publishChunk is how many readings Publish writes per call to the
// writer when not paced: slots are written together up to it, so that a
// fast replay waits for one acknowledgement per few thousand readings,
// not per slot.
const publishChunk = 4096

// Publish replays steps [From, To) of s, slot by slot, one message per
// sensor keyed by its name (its ID where cfg.Sensors has IDs, else its
// index), with RequiredAcks=RequireAll. Paced (SlotPause
// > 0) each slot is written and acknowledged before the pause; otherwise
// whole slots are written together, up to publishChunk readings at a time
// (a sensor's readings stay in order: they share a partition). It returns
// the number of readings written and acknowledged; after a failed write,
// those before the first one not acknowledged.
func Publish(ctx context.Context, s Series, cfg PublishConfig) (int, error) {
	if cfg.From < 0 || cfg.To > s.Steps || cfg.From >= cfg.To {
		return 0, fmt.Errorf("publish: steps [%d,%d) outside the series' %d", cfg.From, cfg.To, s.Steps)
	}
	if cfg.StepMs <= 0 || cfg.Start.UnixMilli()%cfg.StepMs != 0 {
		return 0, fmt.Errorf("publish: start %s is not on the %d ms slot grid", cfg.Start.UTC().Format(time.RFC3339), cfg.StepMs)
	}
	if cfg.Sensors.HasIDs() && cfg.Sensors.Len() != s.Nodes {
		return 0, fmt.Errorf("publish: %s for a series of %d sensors", cfg.Sensors.Describe(), s.Nodes)
	}
	if err := cfg.Security.CheckBrokers(ctx, cfg.Brokers); err != nil {
		return 0, fmt.Errorf("publish: %w", err)
	}
	t := cfg.Security.Transport()
	// kafka-go allocates BatchSize messages for every batch, even one
	// that a paced slot fills with a few dozen: paced, a batch is sized
	// for a slot.
	batch := 1000
	if cfg.SlotPause > 0 {
		batch = min(batch, max(s.Nodes, 1))
	}
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.Topic, Balancer: &kafka.Hash{}, Transport: roundTripper(t),
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: batch, BatchBytes: writerBatchBytes}
	defer func() {
		w.Close()
		closeTransport(t)
	}()
	base := cfg.Start.UnixMilli()
	var (
		n     int
		msgs  []kafka.Message
		r     = Reading{Values: make([]float64, s.Channels)}
		first = cfg.From // the first slot in msgs
	)
	for t := cfg.From; t < cfg.To; t++ {
		for i := 0; i < s.Nodes; i++ {
			off := (t*s.Nodes + i) * s.Channels
			r.Sensor, r.TS = i, base+int64(t)*cfg.StepMs
			copy(r.Values, s.Data[off:off+s.Channels])
			if cfg.SkipMissing && allZero(r.Values) {
				continue
			}
			msgs = append(msgs, kafka.Message{Key: appendKey(nil, i, cfg.Sensors.ID(i)), Value: EncodeReadingFor(nil, &r, cfg.Sensors)})
		}
		if cfg.SlotPause == 0 && t+1 < cfg.To && len(msgs)+s.Nodes <= publishChunk {
			continue // the next slot fits too
		}
		if k, err := cfg.Retry.write(ctx, w, msgs); err != nil {
			n += k
			if first == t {
				return n, fmt.Errorf("publish step %d: %w", t, err)
			}
			return n, fmt.Errorf("publish steps %d-%d: %w", first, t, err)
		}
		n += len(msgs)
		msgs, first = msgs[:0], t+1
		if cfg.SlotPause > 0 {
			select {
			case <-ctx.Done():
				return n, ctx.Err()
			case <-time.After(cfg.SlotPause):
			}
		}
	}
	return n, nil
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// FeedConfig says where PublishReadings writes.
type FeedConfig struct {
	Brokers  []string
	Security Security // TLS and SASL towards the brokers; zero: plaintext
	Topic    string
	// Linger is the longest a reading waits for others to share its
	// write, so that a source that pauses (a pipe fed as sensors report)
	// has what it gave published within about Linger (0: 50 ms). A source
	// that does not pause is written publishChunk readings at a time.
	Linger time.Duration
	// Retry says how long a write the brokers do not acknowledge is tried
	// again; zero: not beyond kafka-go's own attempts.
	Retry Retry
	// Sensors names the readings' sensors, as PublishConfig.Sensors.
	Sensors *pems.SensorNames
}

// feedItem is a reading encoded for the topic, or the error that ended the
// source.
type feedItem struct {
	msg kafka.Message
	err error
}

// PublishReadings publishes the readings that next returns, in order, each
// keyed by its sensor's name (see FeedConfig.Sensors), so that a sensor's
// readings stay in order on one partition, with RequiredAcks=RequireAll,
// until next returns io.EOF. It
// returns how many readings were written and acknowledged. When a write
// fails (after kafka-go's own retries), the count is of the readings
// before the first one not acknowledged, in next's order: the source can
// be given again from that reading on. Some readings after it may be on
// the topic too (those of other partitions in the same write); giving
// them again is safe, since the service takes a repeated reading as a
// duplicate and applies it once. With cfg.Retry, a failed write is first
// tried again for up to Retry.For.
//
// next is called on a goroutine of its own, so that a source that blocks
// does not hold back what it gave; a reading is encoded before next is
// called again, so next may reuse its Values. When next returns another
// error, the readings before it are published first and the error is
// returned with their number: a caller that stops at a bad row loses
// none of the rows it accepted. When ctx ends, what was read is still
// published (for up to 10 s), then ctx's error is returned; a call of
// next in progress is left to finish on its own.
func PublishReadings(ctx context.Context, next func() (Reading, error), cfg FeedConfig) (int, error) {
	if err := cfg.Security.CheckBrokers(ctx, cfg.Brokers); err != nil {
		return 0, fmt.Errorf("publish: %w", err)
	}
	linger := cfg.Linger
	if linger <= 0 {
		linger = 50 * time.Millisecond
	}
	t := cfg.Security.Transport()
	w := &kafka.Writer{Addr: kafka.TCP(cfg.Brokers...), Topic: cfg.Topic, Balancer: &kafka.Hash{}, Transport: roundTripper(t),
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: 1000, BatchBytes: writerBatchBytes}
	defer func() {
		w.Close()
		closeTransport(t)
	}()
	items, done := make(chan feedItem, publishChunk), make(chan struct{})
	defer close(done)
	go func() {
		for {
			r, err := next()
			it := feedItem{err: err}
			if err == nil {
				it.msg = kafka.Message{Key: appendKey(nil, r.Sensor, cfg.Sensors.ID(r.Sensor)), Value: EncodeReadingFor(nil, &r, cfg.Sensors)}
			}
			select {
			case items <- it:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var (
		n    int
		msgs []kafka.Message
		due  <-chan time.Time // the linger of the oldest reading in msgs
	)
	flush := func(ctx context.Context) error {
		if len(msgs) == 0 {
			return nil
		}
		if k, err := cfg.Retry.write(ctx, w, msgs); err != nil {
			n += k
			return fmt.Errorf("publish %d readings: %w", len(msgs), err)
		}
		n += len(msgs)
		msgs, due = msgs[:0], nil
		return nil
	}
	for {
		select {
		case it := <-items:
			if it.err != nil {
				if err := flush(ctx); err != nil {
					return n, err
				}
				if it.err == io.EOF {
					return n, nil
				}
				return n, it.err
			}
			if len(msgs) == 0 {
				due = time.After(linger)
			}
			if msgs = append(msgs, it.msg); len(msgs) >= publishChunk {
				if err := flush(ctx); err != nil {
					return n, err
				}
			}
		case <-due:
			if err := flush(ctx); err != nil {
				return n, err
			}
		case <-ctx.Done():
			for drained := false; !drained; { // what next gave but the loop has not taken
				select {
				case it := <-items:
					if it.err == nil {
						msgs = append(msgs, it.msg)
					}
				default:
					drained = true
				}
			}
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := flush(fctx); err != nil {
				return n, fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			return n, ctx.Err()
		}
	}
}

// permanent reports whether err, a write's, is one that writing again
// cannot mend: a Kafka error code that is not temporary (a message too
// large, authorisation refused), as the first message's that failed.
func permanent(err error) bool {
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil {
				err = e
				break
			}
		}
	}
	var ke kafka.Error
	return errors.As(err, &ke) && !ke.Temporary()
}

// briefWriteError shortens kafka-go's WriteErrors, which holds one error
// per message and prints them all (thousands of copies of one refused
// connection), to how many were not acknowledged and the first error.
// Other errors are returned as they are.
func briefWriteError(err error) error {
	var we kafka.WriteErrors
	if !errors.As(err, &we) {
		return err
	}
	for _, e := range we {
		if e != nil {
			return fmt.Errorf("%d of %d messages not acknowledged, the first: %w", we.Count(), len(we), e)
		}
	}
	return err
}
