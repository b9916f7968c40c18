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
