package stream

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/produce"
)

// freePort returns a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// countTopic returns how many messages partition 0 of topic holds.
func countTopic(ctx context.Context, t *testing.T, addr, topic string) int {
	t.Helper()
	c, err := kafka.DialLeader(ctx, "tcp", addr, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	last, err := c.ReadLastOffset()
	if err != nil {
		t.Fatal(err)
	}
	return int(last)
}

// TestFlushRetrying writes a batch's dead letters to a broker that is up
// and its forecasts to one that is down: flushRetrying tries again until
// the second broker starts, and then every message is in its topic once.
// With no broker coming, it gives up after Config.RetryFor, naming what
// failed; a shutdown request ends the retries at once.
func TestFlushRetrying(t *testing.T) {
	if testing.Short() {
		t.Skip("runs brokers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	up := testBroker(ctx, t, 1, "readings-dead-letter")
	port := freePort(t)
	downAddr := "127.0.0.1:" + strconv.Itoa(port)
	b := testBundle(t, 4, 3, 2, 4, 1)
	svc, err := NewService(b, Config{Brokers: []string{up.Addr}, StepMs: testStep, RetryFor: time.Minute, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	writer := func(addr, topic string) *kafka.Writer {
		return &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond}
	}
	svc.letters, svc.forecasts = writer(up.Addr, "readings-dead-letter"), writer(downAddr, "forecasts")
	defer svc.letters.Close()
	defer svc.forecasts.Close()
	msgs := func(k int) []kafka.Message {
		var ms []kafka.Message
		for i := range k {
			ms = append(ms, kafka.Message{Key: []byte(strconv.Itoa(i)), Value: []byte(`{}`)})
		}
		return ms
	}
	// The forecasts go as the service hands them over, to be encoded by
	// the flush.
	forecasts := func(k int) (fb forecastBatch) {
		for i := range k {
			fb.add(&Forecast{Sensor: i, TS: testStep, Values: []float64{float64(i)}, Inputs: []Input{{Sensor: i, TS: 0}}})
		}
		return fb
	}
	job := &flushJob{dead: msgs(3), fc: forecasts(5)}
	done := make(chan error, 1)
	go func() { done <- svc.flushRetrying(ctx, job) }()
	// Let a few attempts fail, then start the missing broker.
	for svc.counters.FlushRetries.Load() < 2 {
		select {
		case err := <-done:
			t.Fatalf("flush ended before the broker started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	down, err := StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	// kafka-go's transport answers from what it last learnt of the address
	// for a few seconds: "Broker Not Available" meanwhile.
	for err := EnsureTopics(ctx, []string{down.Addr}, 1, "forecasts"); err != nil; err = EnsureTopics(ctx, []string{down.Addr}, 1, "forecasts") {
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatalf("flush after the broker started: %v", err)
	}
	if got := countTopic(ctx, t, up.Addr, "readings-dead-letter"); got != 3 {
		t.Errorf("%d dead letters written, want 3 (written once despite the retries)", got)
	}
	if got := countTopic(ctx, t, down.Addr, "forecasts"); got != 5 {
		t.Errorf("%d forecasts written, want 5", got)
	}
	if len(job.out) != 5 {
		t.Errorf("%d messages encoded for 5 forecasts over the retries, want 5", len(job.out))
	}
	for i := range 5 { // each sensor's latest message is its own forecast's
		f, err := DecodeForecast(svc.latest[i])
		if err != nil || f.Sensor != i || len(f.Values) != 1 || f.Values[0] != float64(i) || len(f.Inputs) != 1 || f.Inputs[0].Sensor != i {
			t.Errorf("sensor %d's latest forecast: %+v, %v", i, f, err)
		}
	}

	// No broker comes: given up after RetryFor.
	svc.cfg.RetryFor = 300 * time.Millisecond
	svc.forecasts.Close()
	svc.forecasts = writer("127.0.0.1:"+strconv.Itoa(freePort(t)), "forecasts")
	start := time.Now()
	err = svc.flushRetrying(ctx, &flushJob{fc: forecasts(1)})
	if err == nil || !strings.Contains(err.Error(), "batch not committed after") || !strings.Contains(err.Error(), "write forecasts") {
		t.Fatalf("flush to no broker: %v", err)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("gave up after %v, with RetryFor 300ms", took)
	}

	// A shutdown request ends the retries.
	svc.cfg.RetryFor = time.Hour
	sctx, stop := context.WithCancel(ctx)
	go func() { done <- svc.flushRetrying(sctx, &flushJob{fc: forecasts(1)}) }()
	time.Sleep(200 * time.Millisecond)
	stop()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "read again at restart") {
			t.Fatalf("flush on shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("flush went on after shutdown")
	}
}

// TestForecastBatch hands over forecasts as the emitter does, every one
// in the same reused buffers, past the size of a chunk: each copy keeps
// its own values and inputs, also in the job's next batch.
func TestForecastBatch(t *testing.T) {
	var fb forecastBatch
	f := Forecast{Values: make([]float64, 3), Inputs: make([]Input, 6)}
	for round := range 2 {
		fb.reset()
		const n = 3000 // 18,000 inputs: several chunks of 4096
		for i := range n {
			f.Sensor, f.TS = i, int64(round)
			for c := range f.Values {
				f.Values[c] = float64(i*10 + c + round)
			}
			for k := range f.Inputs {
				f.Inputs[k] = Input{Sensor: i + k, TS: int64(round)}
			}
			fb.add(&f)
		}
		if len(fb.fcs) != n {
			t.Fatalf("round %d: %d forecasts kept, want %d", round, len(fb.fcs), n)
		}
		for i, g := range fb.fcs {
			if g.Sensor != i || g.TS != int64(round) || len(g.Values) != 3 || len(g.Inputs) != 6 {
				t.Fatalf("round %d, forecast %d: %+v", round, i, g)
			}
			for c, v := range g.Values {
				if v != float64(i*10+c+round) {
					t.Fatalf("round %d, forecast %d: values %v", round, i, g.Values)
				}
			}
			for k, in := range g.Inputs {
				if in != (Input{Sensor: i + k, TS: int64(round)}) {
					t.Fatalf("round %d, forecast %d: inputs %v", round, i, g.Inputs)
				}
			}
		}
	}
}

// failPartitionOnce fails the first produce request that holds partition
// 1 of a topic, as when only that partition's leader is away.
type failPartitionOnce struct {
	kafka.RoundTripper
	mu     sync.Mutex
	failed bool
}

func (f *failPartitionOnce) RoundTrip(ctx context.Context, addr net.Addr, req protocol.Message) (protocol.Message, error) {
	if p, ok := req.(*produce.Request); ok {
		for _, t := range p.Topics {
			for _, pp := range t.Partitions {
				f.mu.Lock()
				fail := pp.Partition == 1 && !f.failed
				f.failed = f.failed || fail
				f.mu.Unlock()
				if fail {
					return nil, errors.New("injected: the leader of partition 1 is away")
				}
			}
		}
	}
	return f.RoundTripper.RoundTrip(ctx, addr, req)
}

// A flush whose writes fail for one partition only writes again only that
// partition's forecasts and dead letters: the others, acknowledged, are
// not written twice.
func TestFlushPartialWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "forecasts", "readings-dead-letter")
	b := testBundle(t, 8, 3, 1, 4, 1)
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, RetryFor: time.Minute, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	writer := func(topic string) *kafka.Writer {
		return &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll,
			MaxAttempts: 1, BatchTimeout: time.Millisecond, Transport: &failPartitionOnce{RoundTripper: kafka.DefaultTransport}}
	}
	svc.forecasts, svc.letters = writer("forecasts"), writer("readings-dead-letter")
	defer svc.forecasts.Close()
	defer svc.letters.Close()
	j := &flushJob{}
	const n = 8
	for z := range n {
		j.fc.add(&Forecast{Sensor: z, TS: testStep, Values: []float64{1}, Inputs: []Input{{Sensor: z}}})
		j.dead = append(j.dead, kafka.Message{Key: []byte(strconv.Itoa(z)), Value: []byte("dead")})
	}
	svc.startFlush(ctx, j)
	if err := svc.finishFlush(); err != nil {
		t.Fatal(err)
	}
	if r := svc.counters.FlushRetries.Load(); r != 2 {
		t.Errorf("%d retries, want 2: the test does not test", r)
	}
	for _, topic := range []string{"forecasts", "readings-dead-letter"} {
		total := 0
		for p := range 2 {
			c, err := kafka.DialLeader(ctx, "tcp", emb.Addr, topic, p)
			if err != nil {
				t.Fatal(err)
			}
			last, err := c.ReadLastOffset()
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			total += int(last)
		}
		if total != n {
			t.Errorf("%s: %d messages for %d, want each once", topic, total, n)
		}
	}
	svc.mu.RLock()
	latest := len(svc.latest)
	svc.mu.RUnlock()
	if latest != n {
		t.Errorf("latest forecasts of %d sensors, want %d", latest, n)
	}
}

// TestFlushRetryDialsAgain checks that a retry after a broker comes back
// dials it again: kafka-go's transport remembers a refused dial for its
// metadata's lifetime (6 s), so without forgetting it the retries in that
// time fail though the broker is up, and forecasts resume seconds late.
// Once the topic is there, the next attempt, or the one after it (one may
// be under way), must commit.
func TestFlushRetryDialsAgain(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	svc, err := NewService(testBundle(t, 4, 3, 2, 4, 1), Config{Brokers: []string{addr}, StepMs: testStep, RetryFor: 10 * time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	// A transport of its own, as a secured service's writers have, so
	// that no other test's dial teaches or clears it, that keeps what it
	// learns of the cluster, a refused dial included, for a random time
	// up to 30 s (kafka-go's default: 6 s).
	tr := &kafka.Transport{MetadataTTL: 30 * time.Second}
	defer tr.CloseIdleConnections()
	svc.forecasts = &kafka.Writer{Addr: kafka.TCP(addr), Topic: "forecasts", RequiredAcks: kafka.RequireAll, MaxAttempts: 1, BatchTimeout: time.Millisecond, Transport: tr}
	defer svc.forecasts.Close()
	var fb forecastBatch
	fb.add(&Forecast{Sensor: 0, TS: testStep, Values: []float64{1}, Inputs: []Input{{Sensor: 0, TS: 0}}})
	done := make(chan error, 1)
	go func() { done <- svc.flushRetrying(ctx, &flushJob{fc: fb}) }()
	for svc.counters.FlushRetries.Load() < 1 { // a refused dial, remembered
		select {
		case err := <-done:
			t.Fatalf("flush ended before the broker started: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	b, err := StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := EnsureTopics(ctx, []string{addr}, 1, "forecasts"); err != nil {
		t.Fatal(err)
	}
	before := svc.counters.FlushRetries.Load()
	if err := <-done; err != nil {
		t.Fatalf("flush after the broker started: %v", err)
	}
	if failed := svc.counters.FlushRetries.Load() - before; failed > 1 {
		t.Errorf("%d attempts failed after the broker was up with the topic, want at most 1", failed)
	}
	if got := countTopic(ctx, t, addr, "forecasts"); got != 1 {
		t.Errorf("%d forecasts written, want 1", got)
	}
}
