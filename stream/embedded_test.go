package stream

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// TestEmbeddedRetention checks that the embedded broker drops messages
// older than Kafka's default retention (7 days), as a Kafka broker does
// and as its topics' configuration says: kfake applies retention only to
// topics given one of their own, so the broker of a service that ran for
// weeks kept every reading and forecast in memory (about 350 bytes each,
// without end). Newer messages are kept.
func TestEmbeddedRetention(t *testing.T) {
	was := embeddedRetentionEvery
	embeddedRetentionEvery = 10 * time.Millisecond
	t.Cleanup(func() { embeddedRetentionEvery = was })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings")
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	old, recent := time.Now().Add(-8*24*time.Hour), time.Now()
	for _, at := range []time.Time{old, recent} {
		msgs := make([]kafka.Message, 50)
		for i := range msgs {
			msgs[i] = kafka.Message{Key: []byte("1"), Value: []byte("v"), Time: at}
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	client := brokerClient([]string{emb.Addr}, nil)
	var first, last int64
	for first < 50 { // the retention pass runs every 10 ms: wait for it, up to ctx
		resp, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			"readings": {kafka.FirstOffsetOf(0), kafka.LastOffsetOf(0)}}})
		if err != nil {
			t.Fatal(err)
		}
		po := resp.Topics["readings"][0]
		if first, last = po.FirstOffset, po.LastOffset; first >= 50 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the messages of 8 days ago are still there (offsets %d to %d): no retention", first, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
	if first != 50 || last != 100 {
		t.Errorf("offsets %d to %d after retention, want 50 to 100: the messages of 8 days ago dropped, the recent ones kept", first, last)
	}
}

// TestEmbeddedSASL starts the embedded broker with one SCRAM-SHA-512 user:
// a client that authenticates as that user creates topics and writes, one
// without SASL or with another password is refused, so that on a host
// shared with others only who knows the password reaches the topics.
func TestEmbeddedSASL(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	emb, err := StartEmbeddedConfig(EmbeddedConfig{Users: []EmbeddedUser{{Mechanism: "scram-sha-512", Name: "forecaster", Password: "s3cret"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	forgetBrokers()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	brokers := []string{emb.Addr}
	security := func(password string) Security {
		m, err := NewSASL("SCRAM-SHA-512", "forecaster", password)
		if err != nil {
			t.Fatal(err)
		}
		return Security{SASL: m}
	}
	if err := (Security{}).EnsureTopics(ctx, brokers, 1, "readings"); err == nil {
		t.Error("a client without SASL created a topic")
	}
	if err := security("wrong").EnsureTopics(ctx, brokers, 1, "readings"); err == nil {
		t.Error("a client with another password created a topic")
	}
	sec := security("s3cret")
	if err := sec.EnsureTopics(ctx, brokers, 1, "readings"); err != nil {
		t.Fatalf("the user: %v", err)
	}
	tr := sec.Transport()
	defer closeTransport(tr)
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Transport: roundTripper(tr), RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("1"), Value: []byte("v")}); err != nil {
		t.Fatalf("the user writes: %v", err)
	}
	if _, err := StartEmbeddedConfig(EmbeddedConfig{Users: []EmbeddedUser{{Mechanism: "GSSAPI", Name: "x"}}}); err == nil {
		t.Error("a user of an unknown mechanism was taken")
	}
}
