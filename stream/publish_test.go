package stream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync/atomic"
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

// TestPublishRetry stops the broker in the middle of a paced publish and
// starts it again on the same port and data after kafka-go's own attempts
// have failed: Retry writes the readings not acknowledged again until it
// is back, and then every reading is on the topic, each sensor's in order.
// A write the broker refuses for good (a message over the topic's
// max.message.bytes) is not tried again.
func TestPublishRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, C, steps = 50, 2, 40
	data := testSeries(steps, n, C, 0)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	emb, err := StartEmbedded(0, dir)
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	if err := EnsureTopics(ctx, []string{emb.Addr}, 4, "readings"); err != nil {
		t.Fatal(err)
	}
	addr := emb.Addr
	var retries atomic.Int32
	type result struct {
		sent int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: data}, PublishConfig{Brokers: []string{addr},
			Topic: "readings", From: 0, To: steps, Start: start, StepMs: testStep, SlotPause: 20 * time.Millisecond,
			Retry: Retry{For: time.Minute, OnRetry: func(err error, waiting int, since time.Duration) {
				if waiting < 1 || waiting > n || err == nil {
					t.Errorf("retry: %d readings waiting, want 1 to %d (a slot); error %v", waiting, n, err)
				}
				retries.Add(1)
			}}})
		done <- result{sent, err}
	}()
	time.Sleep(200 * time.Millisecond) // a few slots written
	emb.Close()
	for retries.Load() == 0 {
		select {
		case r := <-done:
			t.Fatalf("publish ended with the broker gone: %d readings, %v", r.sent, r.err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	_, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	if emb, err = StartEmbedded(p, dir); err != nil {
		t.Fatalf("restart the broker on port %d: %v", p, err)
	}
	defer emb.Close()
	r := <-done
	if r.err != nil || r.sent != n*steps {
		t.Fatalf("publish across the restart: %d readings, %v; want %d and no error", r.sent, r.err, n*steps)
	}
	seen := map[[2]int64]int{}
	total := 0
	for part := 0; part < 4; part++ {
		last := map[int]int64{}
		for _, m := range readPartition(ctx, t, emb.Addr, "readings", part) {
			rd, err := DecodeReading(m.Key, m.Value)
			if err != nil {
				t.Fatal(err)
			}
			slot := (rd.TS - start.UnixMilli()) / testStep
			if l, ok := last[rd.Sensor]; ok && slot < l {
				t.Fatalf("sensor %d: slot %d after %d", rd.Sensor, slot, l)
			}
			last[rd.Sensor] = slot
			seen[[2]int64{int64(rd.Sensor), slot}]++
			total++
		}
	}
	// A write acknowledged as the broker went away may be written again:
	// at most a slot's readings twice.
	if len(seen) != n*steps || total > n*steps+n {
		t.Errorf("%d distinct readings of %d on the topic, %d in all (at most %d)", len(seen), n*steps, total, n*steps+n)
	}
	t.Logf("%d retries, %d readings written twice", retries.Load(), total-len(seen))

	// Refused for good: not tried again.
	client := &kafka.Client{Addr: kafka.TCP(emb.Addr)}
	res, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{Topic: "small", NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "max.message.bytes", ConfigValue: "100"}}}}})
	if err == nil {
		err = res.Errors["small"]
	}
	if err != nil {
		t.Fatal(err)
	}
	retries.Store(0)
	began := time.Now()
	sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: data}, PublishConfig{Brokers: []string{emb.Addr},
		Topic: "small", From: 0, To: 2, Start: start, StepMs: testStep,
		Retry: Retry{For: time.Minute, OnRetry: func(error, int, time.Duration) { retries.Add(1) }}})
	if err == nil || sent != 0 || retries.Load() != 0 || !errors.Is(err, kafka.MessageSizeTooLarge) {
		t.Errorf("publish of messages too large: %d readings, %d retries, %v; want none, none and Message Size Too Large", sent, retries.Load(), err)
	}
	if took := time.Since(began); took > 30*time.Second {
		t.Errorf("refused for good after %v", took)
	}
}

// TestRetryDialsAgain checks that Retry's next attempt after the broker is
// back dials it again, rather than meeting, for up to 6 s, the refusal
// kafka-go's transport remembers: once the topic is there, the next
// attempt, or the one after it (one may be under way), must be acknowledged.
func TestRetryDialsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	// A transport of its own, so that no other test teaches or clears
	// it, that keeps what it learns of the cluster, a refused dial
	// included, for a random time up to 30 s (kafka-go's default: 6 s).
	tr := &kafka.Transport{MetadataTTL: 30 * time.Second}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "readings", RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond, Transport: tr}
	defer w.Close()
	var retries atomic.Int32
	type result struct {
		acked int
		err   error
	}
	done := make(chan result, 1)
	go func() {
		acked, err := Retry{For: 10 * time.Second, OnRetry: func(error, int, time.Duration) { retries.Add(1) }}.write(ctx, w,
			[]kafka.Message{{Key: []byte("0"), Value: []byte(`{}`)}})
		done <- result{acked, err}
	}()
	for retries.Load() < 1 { // a refused dial, remembered
		select {
		case r := <-done:
			t.Fatalf("write ended before the broker started: %d acknowledged, %v", r.acked, r.err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	b, err := StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := EnsureTopics(ctx, []string{addr}, 1, "readings"); err != nil {
		t.Fatal(err)
	}
	before := retries.Load()
	if r := <-done; r.err != nil || r.acked != 1 {
		t.Fatalf("write after the broker started: %d of 1 acknowledged, %v", r.acked, r.err)
	}
	if failed := retries.Load() - before; failed > 1 {
		t.Errorf("%d attempts failed after the broker was up with the topic, want at most 1", failed)
	}
}
