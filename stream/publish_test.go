package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/internal/datatest"
)

// TestPublish replays a series into four partitions, as fast as possible
// (several slots per write) and paced (a slot per write), with missing
// readings left out, and reads every partition back: each reading once,
// keyed by its sensor, with its values; each sensor on one partition, its
// slots in order; the count returned the count written.
func TestPublish(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, C, steps = 150, 2, 70 // 27 slots of 150 readings fit in one write
	data := testSeries(steps, n, C, 5)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		from, to int
		pause    time.Duration
	}{{"fast", 3, steps, 0}, {"paced", 60, steps, time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			emb := testBroker(ctx, t, 4, "readings")
			sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: data}, PublishConfig{Brokers: []string{emb.Addr},
				Topic: "readings", From: tc.from, To: tc.to, Start: start, StepMs: testStep, SlotPause: tc.pause, SkipMissing: true})
			if err != nil {
				t.Fatal(err)
			}
			want := map[[2]int64][]float64{} // (sensor, slot) → values
			for s := tc.from; s < tc.to; s++ {
				for i := 0; i < n; i++ {
					if v := data[(s*n+i)*C : (s*n+i+1)*C]; !allZero(v) {
						want[[2]int64{int64(i), int64(s)}] = v
					}
				}
			}
			if sent != len(want) {
				t.Fatalf("Publish says %d readings, want %d", sent, len(want))
			}
			got := 0
			partOf := map[int]int{}
			for p := 0; p < 4; p++ {
				last := map[int]int64{}
				for _, m := range readPartition(ctx, t, emb.Addr, "readings", p) {
					r, err := DecodeReading(m.Key, m.Value)
					if err != nil {
						t.Fatal(err)
					}
					slot := (r.TS - start.UnixMilli()) / testStep
					v, ok := want[[2]int64{int64(r.Sensor), slot}]
					if !ok || !slices.Equal(v, r.Values) || string(m.Key) != strconv.Itoa(r.Sensor) {
						t.Fatalf("partition %d offset %d: sensor %d (key %q) slot %d %v, want %v", p, m.Offset, r.Sensor, m.Key, slot, r.Values, v)
					}
					delete(want, [2]int64{int64(r.Sensor), slot})
					if q, seen := partOf[r.Sensor]; seen && q != p {
						t.Fatalf("sensor %d on partitions %d and %d", r.Sensor, q, p)
					}
					partOf[r.Sensor] = p
					if l, seen := last[r.Sensor]; seen && slot <= l {
						t.Fatalf("sensor %d: slot %d after %d", r.Sensor, slot, l)
					}
					last[r.Sensor] = slot
					got++
				}
			}
			if got != sent || len(want) != 0 {
				t.Errorf("read back %d readings of %d; %d never arrived", got, sent, len(want))
			}
		})
	}
}

// readPartition returns every message of partition p of topic.
func readPartition(ctx context.Context, t *testing.T, addr, topic string, p int) []kafka.Message {
	t.Helper()
	c, err := kafka.DialLeader(ctx, "tcp", addr, topic, p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	end, err := c.ReadLastOffset()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Seek(0, kafka.SeekAbsolute); err != nil {
		t.Fatal(err)
	}
	var ms []kafka.Message
	for int64(len(ms)) < end {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := c.ReadBatch(1, 16<<20)
		for {
			m, err := b.ReadMessage()
			if err != nil {
				break
			}
			ms = append(ms, m)
		}
		if err := b.Close(); err != nil {
			t.Fatalf("partition %d after %d of %d messages: %v", p, len(ms), end, err)
		}
	}
	return ms
}

// TestPublishReadings feeds PublishReadings from a source that pauses, as
// a pipe fed by sensors does, then fails: what the source gave before its
// pause is on the topic while it waits (the linger, not the end of the
// input, sends it), and what it gave before failing is published before
// the failure is returned, each sensor's readings in order on one
// partition. The readings are SZ-taxi's first slots.
func TestPublishReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	s := datatest.SZTaxi(t).Series
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, 4, "readings")
	const before, after = 40, 300 // readings before the pause, and after it
	var all []Reading
	for i := range before + after {
		all = append(all, Reading{Sensor: i % s.Nodes, TS: int64(i/s.Nodes) * testStep, Values: s.Data[i : i+1]})
	}
	resume := make(chan struct{})
	i := 0
	next := func() (Reading, error) {
		if i == before {
			<-resume
		}
		if i == len(all) {
			return Reading{}, errDisk
		}
		i++
		return all[i-1], nil
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := PublishReadings(ctx, next, FeedConfig{Brokers: []string{emb.Addr}, Topic: "readings", Linger: 20 * time.Millisecond})
		done <- result{n, err}
	}()
	count := func() int {
		n := 0
		for p := range 4 {
			n += len(readPartition(ctx, t, emb.Addr, "readings", p))
		}
		return n
	}
	for got := 0; got < before; got = count() {
		select {
		case r := <-done:
			t.Fatalf("PublishReadings returned (%d, %v) while its source waited", r.n, r.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(resume)
	r := <-done
	if r.n != len(all) || !errors.Is(r.err, errDisk) {
		t.Fatalf("PublishReadings: (%d, %v), want (%d, the source's error)", r.n, r.err, len(all))
	}
	seen := 0
	for p := range 4 {
		last := map[int]int64{}
		for _, m := range readPartition(ctx, t, emb.Addr, "readings", p) {
			rd, err := DecodeReading(m.Key, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			k := int(rd.TS/testStep)*s.Nodes + rd.Sensor
			if k >= len(all) || rd.Values[0] != all[k].Values[0] {
				t.Fatalf("partition %d: reading %+v was not published", p, rd)
			}
			if ts, ok := last[rd.Sensor]; ok && ts >= rd.TS {
				t.Errorf("partition %d: sensor %d at %d after %d", p, rd.Sensor, rd.TS, ts)
			}
			last[rd.Sensor] = rd.TS
			seen++
		}
	}
	if seen != len(all) {
		t.Errorf("%d readings on the topic, want %d", seen, len(all))
	}
}

// TestBriefWriteError checks that kafka-go's WriteErrors, one per
// message, is shortened to a count and the first error, which it still
// wraps, and that other errors pass unchanged.
func TestBriefWriteError(t *testing.T) {
	refused := errors.New("connection refused")
	other := errors.New("other")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{kafka.WriteErrors{nil, refused, refused}, "2 of 3 messages not acknowledged, the first: connection refused"},
		{fmt.Errorf("wrapped: %w", kafka.WriteErrors{refused}), "1 of 1 messages not acknowledged, the first: connection refused"},
		{other, "other"},
	} {
		got := briefWriteError(tc.err)
		if got.Error() != tc.want {
			t.Errorf("briefWriteError(%v) = %q, want %q", tc.err, got, tc.want)
		}
		if !errors.Is(got, refused) && !errors.Is(got, other) {
			t.Errorf("briefWriteError(%v) = %v wraps neither error", tc.err, got)
		}
	}
}
