package stream

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// TestServiceConsumesAddedPartitions grows the readings topic from one
// partition to three under a running service and writes the next slots'
// readings straight to the new partition 2: the service is handed it at
// its next partition check and applies every reading.
func TestServiceConsumesAddedPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour,
		ProbeEvery: 50 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case err := <-done:
				t.Fatalf("service stopped while waiting for %s: %v", what, err)
			case <-ctx.Done():
				t.Fatalf("no %s; applied %d", what, svc.Counters().Applied.Load())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	const steps = 10
	data := make([]float64, steps*n*C)
	for i := range data {
		data[i] = 40 + float64(i%13)
	}
	readings := streamOf(data, steps, n, C, 3000)
	msgs := func(rs []Reading) []kafka.Message {
		var ms []kafka.Message
		for _, r := range rs {
			ms = append(ms, kafka.Message{Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
		}
		return ms
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs(readings[:5*n])...); err != nil {
		t.Fatal(err)
	}
	waitFor("the first five slots applied", func() bool { return svc.Counters().Applied.Load() == 5*n })

	client := &kafka.Client{Addr: kafka.TCP(emb.Addr)}
	resp, err := client.CreatePartitions(ctx, &kafka.CreatePartitionsRequest{Topics: []kafka.TopicPartitionsConfig{{Name: "readings", Count: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range resp.Errors {
		if e != nil {
			t.Fatal(e)
		}
	}
	conn, err := kafka.DialLeader(ctx, "tcp", emb.Addr, "readings", 2)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.WriteMessages(msgs(readings[5*n:])...); err != nil {
		t.Fatal(err)
	}
	waitFor("the slots written to the new partition applied", func() bool { return svc.Counters().Applied.Load() == steps*n })
	waitFor("ready, holding the three partitions", func() bool {
		r := svc.Readiness()
		return r.Ready && strings.HasPrefix(r.Checks[2].Detail, "holds all 3 partitions")
	})
}
