package stream

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pemsforecast/sdgnn/internal/tlstest"
)

// TestServiceLeastPrivilege runs the service as a user of a cluster with
// ACLs, as a production cluster has them: its topics made by the cluster's
// operators beforehand, and the service's principal allowed to read the
// readings, write the forecasts and dead letters, read the forecasts back
// (rebuild) and use its consumer group, but not to create topics; its
// publisher only to write the readings.
func TestServiceLeastPrivilege(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	certs := tlstest.New(t)
	lit := kmsg.ACLResourcePatternTypeLiteral
	allow := func(res kmsg.ACLResourceType, name string, ops ...kmsg.ACLOperation) []kfake.ACL {
		var acls []kfake.ACL
		for _, op := range ops {
			acls = append(acls, kfake.ACL{Resource: res, Name: name, Pattern: lit, Operation: op, Allow: true})
		}
		return acls
	}
	topic, group := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup
	R, W, D := kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe
	var acls []kfake.ACL
	acls = append(acls, allow(topic, "readings", R, D)...)
	acls = append(acls, allow(topic, "forecasts", R, W, D)...)
	acls = append(acls, allow(topic, "readings-dead-letter", W, D)...)
	acls = append(acls, allow(group, "sdgnn-forecaster", R, D)...)
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(certs.Server), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.SeedTopics(4, "readings", "forecasts", "readings-dead-letter"),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("SCRAM-SHA-512", "forecaster", "pw-512", acls...),
		kfake.User("SCRAM-SHA-256", "publisher", "pw-256", allow(topic, "readings", W, D)...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addr := cl.ListenAddrs()[0]
	client, err := NewTLS(certs.CAFile, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	secure := func(mech, user, pass string) Security {
		t.Helper()
		m, err := NewSASL(mech, user, pass)
		if err != nil {
			t.Fatal(err)
		}
		return Security{TLS: client, SASL: m}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const n, T, C, d = 4, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	svc, err := NewService(b, Config{Brokers: []string{addr}, Security: secure("SCRAM-SHA-512", "forecaster", "pw-512"), StepMs: testStep,
		Lateness: 100 * time.Millisecond, ProbeEvery: 100 * time.Millisecond, Log: zerolog.New(zerolog.NewTestWriter(t))})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer stop()
	const steps = 12
	data := testSeries(steps, n, C, 5)
	publisher := secure("SCRAM-SHA-256", "publisher", "pw-256")
	if err := publisher.EnsureTopics(ctx, []string{addr}, 4, "readings"); err != nil { // as forecaster publish does
		t.Fatal(err)
	}
	// A topic the principal may not describe: named, with what it needs.
	if err := publisher.EnsureTopics(ctx, []string{addr}, 4, "forecasts"); err == nil || !strings.Contains(err.Error(), "topic forecasts: not visible to this principal and not created: it needs Describe") {
		t.Errorf("ensuring a topic the publisher cannot describe: %v", err)
	}
	sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: data}, PublishConfig{Brokers: []string{addr},
		Security: publisher, Topic: "readings", From: 0, To: steps, Start: time.UnixMilli(1000 * testStep), StepMs: testStep, SkipMissing: true})
	if err != nil {
		t.Fatal(err)
	}
	for svc.Counters().Applied.Load() < uint64(sent) || !svc.Readiness().Ready {
		select {
		case err := <-done:
			t.Fatalf("service stopped: %v", err)
		case <-ctx.Done():
			var text strings.Builder
			svc.Readiness().Write(&text)
			t.Fatalf("applied %d of %d readings; readiness:\n%s", svc.Counters().Applied.Load(), sent, text.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, GroupID: "acl-check", Topic: "forecasts", StartOffset: kafka.FirstOffset,
		MaxWait: 50 * time.Millisecond, Dialer: secure("PLAIN", "admin", "admin-pw").Dialer()})
	defer r.Close()
	if _, err := r.ReadMessage(ctx); err != nil {
		t.Fatal(err)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestEnsureTopicsBrokerDefaultReplication checks that the topics the
// service creates on a cluster of three brokers get the cluster's
// replication factor (kfake's default: 3), not a single replica, which a
// broker's loss would lose and which min.insync.replicas 2 would refuse
// every acknowledged write to.
func TestEnsureTopicsBrokerDefaultReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	cl, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addrs := cl.ListenAddrs()
	if err := EnsureTopics(ctx, addrs, 2, "readings", "forecasts"); err != nil {
		t.Fatal(err)
	}
	client := &kafka.Client{Addr: kafka.TCP(addrs...), Transport: &kafka.Transport{}}
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"readings", "forecasts"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range meta.Topics {
		if tp.Error != nil || len(tp.Partitions) != 2 {
			t.Fatalf("%s: %d partitions, %v", tp.Name, len(tp.Partitions), tp.Error)
		}
		for _, p := range tp.Partitions {
			if len(p.Replicas) != 3 {
				t.Errorf("%s partition %d: %d replicas, want the cluster's default, 3", tp.Name, p.ID, len(p.Replicas))
			}
		}
	}
}
