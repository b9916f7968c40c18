package stream

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
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
}

// publishChunk is how many readings Publish writes per call to the
// writer when not paced: slots are written together up to it, so that a
// fast replay waits for one acknowledgement per few thousand readings,
// not per slot.
const publishChunk = 4096

// Publish replays steps [From, To) of s, slot by slot, one message per
// sensor keyed by its id, with RequiredAcks=RequireAll. Paced (SlotPause
// > 0) each slot is written and acknowledged before the pause; otherwise
// whole slots are written together, up to publishChunk readings at a time
// (a sensor's readings stay in order: they share a partition). It returns
// the number of readings written and acknowledged.
func Publish(ctx context.Context, s Series, cfg PublishConfig) (int, error) {
	if cfg.From < 0 || cfg.To > s.Steps || cfg.From >= cfg.To {
		return 0, fmt.Errorf("publish: steps [%d,%d) outside the series' %d", cfg.From, cfg.To, s.Steps)
	}
	if cfg.StepMs <= 0 || cfg.Start.UnixMilli()%cfg.StepMs != 0 {
		return 0, fmt.Errorf("publish: start %s is not on the %d ms slot grid", cfg.Start.UTC().Format(time.RFC3339), cfg.StepMs)
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
		RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond, BatchSize: batch, BatchBytes: 16 << 20}
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
			msgs = append(msgs, kafka.Message{Key: strconv.AppendInt(nil, int64(i), 10), Value: EncodeReading(nil, &r)})
		}
		if cfg.SlotPause == 0 && t+1 < cfg.To && len(msgs)+s.Nodes <= publishChunk {
			continue // the next slot fits too
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
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
