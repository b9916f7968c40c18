package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Without clock checks (serve's default), a reading whose timestamp is
// near the end of int64 or in µs is refused as too new, rather than
// overflowing the next slot's start and stopping Run (which a restart,
// reading the same batch again, would repeat), and a reading the model
// turns into a non-finite forecast passes that slot by: the service goes
// on forecasting the readings after both.
func TestServiceRefusesTimestampsBeyondRange(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
	const n, C = 6, 3
	b := testBundle(t, n, 4, C, 8, 1)
	for c := range C {
		b.Meta.Norm.Std[c] = 0.01
	}
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour, Log: zerolog.Nop(), NoRebuild: true})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	reading := func(z int, ts int64, v string) kafka.Message {
		return kafka.Message{Key: []byte(strconv.Itoa(z)), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":[%s]}`, z, ts, v))}
	}
	var msgs []kafka.Message
	const slots = 12
	for s := int64(1); s <= slots; s++ {
		for z := range n {
			v := "50,60,70"
			if z == 2 && s == 5 {
				v = "1.7976931348623157e308,-1.7976931348623157e308,1.7976931348623157e308"
			}
			msgs = append(msgs, reading(z, s*testStep, v))
		}
		if s == 3 {
			msgs = append(msgs,
				reading(0, math.MaxInt64-math.MaxInt64%testStep, "1,2,3"),
				reading(1, 1_700_000_000_000_000-1_700_000_000_000_000%testStep, "1,2,3")) // µs
		}
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	c := svc.Counters()
	for c.Applied.Load() < n*slots && ctx.Err() == nil {
		select {
		case err := <-done:
			t.Fatalf("Run returned: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	tooNew := c.Rejected[reasonIndex(t, ReasonTooNew)].Load()
	// Every slot's forecast up to the last is emitted or passed by.
	for c.Emitted.Load()+c.NonFinite.Load() < n*slots && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if tooNew != 2 || c.Applied.Load() != n*slots || c.NonFinite.Load() == 0 {
		t.Errorf("too new %d (want 2), applied %d (want %d), non-finite %d (want > 0)", tooNew, c.Applied.Load(), n*slots, c.NonFinite.Load())
	}
	t.Logf("emitted %d, passed by %d", c.Emitted.Load(), c.NonFinite.Load())
}

func reasonIndex(t *testing.T, reason string) int {
	t.Helper()
	for i, r := range Reasons {
		if r == reason {
			return i
		}
	}
	t.Fatalf("no reason %q", reason)
	return -1
}

// szTaxiBundle returns the real SZ-taxi series and a random bundle of its
// shape (window 12, hidden 16) scaled on its first half.
func szTaxiBundle(t *testing.T) (*pems.Series, *sdgnn.Bundle) {
	t.Helper()
	s := datatest.SZTaxi(t).Series
	norm, err := snapshot.FitNormalizer(s.Data, s.Nodes, s.Channels, s.Steps/2)
	if err != nil {
		t.Fatal(err)
	}
	b := testBundle6(t, s.Nodes, 12, s.Channels, 16, 3)
	b.Meta.Norm = norm
	return s, b
}

// A backlog of SZ-taxi readings on four partitions, one of which begins
// with a reading to be refused (an unknown sensor, at a slot far ahead):
// the refused reading does not count as its partition's progress, so the
// partitions are still applied within the history of each other and no
// forecast slot is lost. (It did count, once: the other partitions were
// applied whole before that one, and 36,391 and 38,929 of the 46,800
// slots were lost in two runs.)
func TestServiceBogusReadingKeepsAlignment(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const slots = 300
	s, b := szTaxiBundle(t)
	const stepMs = 15 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings", "forecasts", "readings-dead-letter")
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	far := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("9999"), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":9999,"ts":%d,"values":[1]}`, far))}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	n, err := Publish(ctx, Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: 0, To: slots, Start: start, StepMs: stepMs})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	c := svc.Counters()
	stop := serveInTest(ctx, t, svc)
	for c.Applied.Load()+c.Late.Load() < uint64(n) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	for c.Emitted.Load()+c.Skipped.Load() < slots*uint64(s.Nodes) && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("readings %d: applied %d, late %d, unknown sensor %d; forecasts emitted %d, skipped %d, stale %d",
		n, c.Applied.Load(), c.Late.Load(), c.Rejected[reasonIndex(t, ReasonUnknownSensor)].Load(), c.Emitted.Load(), c.Skipped.Load(), c.Stale.Load())
	if c.Skipped.Load() != 0 || c.Late.Load() != 0 || c.Rejected[reasonIndex(t, ReasonUnknownSensor)].Load() != 1 {
		t.Errorf("%d forecast slots skipped, %d readings late (want none), %d unknown sensors (want 1)", c.Skipped.Load(), c.Late.Load(), c.Rejected[reasonIndex(t, ReasonUnknownSensor)].Load())
	}
}

// A bad message the readings topic accepted goes to the dead-letter topic
// and does not stop the service, even when its dead letter, or a batch of
// dead letters, would be larger than a broker takes in one record batch
// (max.message.bytes, 1 MB by default): a value that escapes to twice its
// size, and a thousand-odd refused readings of a kilobyte each. Before,
// the broker refused the write (Message Size Too Large), the batch was
// retried until RetryFor and Run returned, and a restart read the same
// batch again: the service stopped for good.
func TestServiceDeadLettersLargeMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	big := func() []kafka.Message {
		// Valid UTF-8, each byte escaped in the dead letter: 1.2 MB.
		return []kafka.Message{{Key: []byte("1"), Value: bytes.Repeat([]byte{'"'}, 600_000)}}
	}
	many := func() []kafka.Message {
		var ms []kafka.Message
		for i := range 1500 {
			ms = append(ms, kafka.Message{Key: []byte("1"), Value: []byte(fmt.Sprintf(`{"v":2,"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 1000)))})
		}
		return ms
	}
	for _, tc := range []struct {
		name string
		bad  func() []kafka.Message
	}{{"one large", big}, {"many", many}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
			const n, C, slots = 4, 1, 6
			b := testBundle(t, n, 3, C, 4, 1)
			svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour,
				Log: zerolog.Nop(), NoRebuild: true, RetryFor: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", RequiredAcks: kafka.RequireAll}
			defer w.Close()
			reading := func(z int, s int64) kafka.Message {
				return kafka.Message{Key: []byte(strconv.Itoa(z)), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":[50]}`, z, s*testStep))}
			}
			var msgs []kafka.Message
			for s := int64(1); s <= slots; s++ {
				for z := range n {
					msgs = append(msgs, reading(z, s))
				}
			}
			bad := tc.bad()
			// Written in turn, so that a test batch stays within the broker's limit.
			for _, part := range [][]kafka.Message{msgs[:n], bad, msgs[n:]} {
				for len(part) > 0 {
					k := min(len(part), 100)
					if err := w.WriteMessages(ctx, part[:k]...); err != nil {
						t.Fatal(err)
					}
					part = part[k:]
				}
			}
			stop, done := runService(ctx, svc)
			c := svc.Counters()
			for (c.Applied.Load() < n*slots || c.BatchMessages.Load() < uint64(len(msgs)+len(bad))) && ctx.Err() == nil {
				select {
				case err := <-done:
					t.Fatalf("Run returned with %d readings applied of %d, %d messages committed of %d: %v",
						c.Applied.Load(), n*slots, c.BatchMessages.Load(), len(msgs)+len(bad), err)
				case <-time.After(20 * time.Millisecond):
				}
			}
			stop()
			if err := <-done; err != nil {
				t.Fatalf("Run: %v", err)
			}
			letters := readPartition(ctx, t, emb.Addr, "readings-dead-letter", 0)
			if len(letters) != len(bad) {
				t.Fatalf("%d dead letters, want %d", len(letters), len(bad))
			}
			for i, m := range letters {
				l, err := DecodeDeadLetter(m.Value)
				if err != nil {
					t.Fatalf("dead letter %d: %v", i, err)
				}
				if l.Offset != int64(n+i) || l.Topic != "readings" || len(l.Value) == 0 || !bytes.HasPrefix(bad[i].Value, l.Value) {
					t.Errorf("dead letter %d: %s offset %d, %d bytes of value; want readings offset %d, a prefix of the %d bytes",
						i, l.Topic, l.Offset, len(l.Value), n+i, len(bad[i].Value))
				}
				if len(m.Key)+len(m.Value) > MaxDeadLetterBytes {
					t.Errorf("dead letter %d: %d bytes, more than %d", i, len(m.Key)+len(m.Value), MaxDeadLetterBytes)
				}
			}
		})
	}
}

// TestServiceBurstAfterCaughtUp publishes, to a service whose partitions
// are all caught up at slot 5, slots 6 to 60 of every sensor the way an
// unpaced file publish reaches it: one partition's share first, the
// others' half a second later. Applied as it came, the first share ran 55
// slots ahead of the others, past the 36 slots of history, and the
// forecasts that read both were skipped (2,002 and 2,128 of 8,580 in two
// of five restarts of a CSV publish). The aligner now holds such a burst
// for the other shares (Config.BurstHold): no forecast is lost.
func TestServiceBurstAfterCaughtUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const parts = 4
	s, b := szTaxiBundle(t)
	const stepMs = 15 * 60 * 1000
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, parts, "readings", "forecasts", "readings-dead-letter")
	// Five seconds rather than one: under the race detector or qemu the
	// others' shares may take longer than a second to come.
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: stepMs, Lateness: time.Hour,
		Now: func() time.Time { return start }, Log: zerolog.Nop(), BurstHold: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := svc.Counters()
	stop := serveInTest(ctx, t, svc)
	msgs := func(from, to int) (byPart [parts][]kafka.Message) {
		var h kafka.Hash
		for slot := from; slot <= to; slot++ {
			for z := 0; z < s.Nodes; z++ {
				vals := s.Data[(slot*s.Nodes+z)*s.Channels : (slot*s.Nodes+z+1)*s.Channels]
				v, _ := json.Marshal(vals)
				m := kafka.Message{Key: []byte(strconv.Itoa(z)),
					Value: []byte(fmt.Sprintf(`{"v":1,"sensor":%d,"ts":%d,"values":%s}`, z, start.UnixMilli()+int64(slot)*stepMs, v))}
				p := h.Balance(m, 0, 1, 2, 3)
				byPart[p] = append(byPart[p], m)
			}
		}
		return byPart
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchSize: 10000, BatchTimeout: time.Millisecond}
	defer w.Close()
	write := func(ms []kafka.Message) {
		if err := w.WriteMessages(ctx, ms...); err != nil {
			t.Fatal(err)
		}
	}
	waitFor := func(applied, forecasts uint64) {
		for (c.Applied.Load()+c.Late.Load() < applied || c.Emitted.Load()+c.Skipped.Load() < forecasts) && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var n uint64
	for _, ms := range msgs(0, 5) {
		write(ms)
		n += uint64(len(ms))
	}
	waitFor(n, 6*uint64(s.Nodes))
	burst := msgs(6, 60)
	write(burst[0])
	time.Sleep(500 * time.Millisecond)
	for _, ms := range burst[1:] {
		write(ms)
	}
	for _, ms := range burst {
		n += uint64(len(ms))
	}
	waitFor(n, 61*uint64(s.Nodes))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("readings %d: applied %d, late %d; forecasts emitted %d, skipped %d", n, c.Applied.Load(), c.Late.Load(), c.Emitted.Load(), c.Skipped.Load())
	if c.Skipped.Load() != 0 || c.Late.Load() != 0 {
		t.Errorf("%d forecast slots skipped, %d readings late; want none", c.Skipped.Load(), c.Late.Load())
	}
}
