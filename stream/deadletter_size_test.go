package stream

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

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
