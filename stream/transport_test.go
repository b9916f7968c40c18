package stream

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestForgetBrokers poisons kafka-go's shared default transport as an
// earlier test can: a write to an address where nothing listens leaves the
// refused dial in the transport's pool for that address, answered to every
// request there for the metadata's lifetime (6 s), even once a broker
// listens. A broker of a later test that gets that port (the kernel hands
// freed ports out again) then failed its test's first write at once with
// "connection refused", at random. forgetBrokers, which the tests' brokers
// call as they start, clears the pools.
func TestForgetBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr, port := ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	write := func(ctx context.Context) error {
		w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "readings", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
		defer w.Close()
		return w.WriteMessages(ctx, kafka.Message{Key: []byte("1"), Value: []byte("{}")})
	}
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	err = write(short)
	cancelShort()
	if err == nil {
		t.Fatal("a write with no broker: no error")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(2, "readings"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	short, cancelShort = context.WithTimeout(ctx, 500*time.Millisecond)
	t.Logf("before forgetBrokers, a write to the broker started: %v", write(short))
	cancelShort()
	forgetBrokers()
	if err := write(ctx); err != nil {
		t.Fatalf("after forgetBrokers, a write to the broker started: %v", err)
	}
}
