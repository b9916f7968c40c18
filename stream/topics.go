package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnsureTopics creates the service's topics when they do not exist, on
// brokers that speak plaintext (see Security.EnsureTopics).
func EnsureTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	return Security{}.EnsureTopics(ctx, brokers, partitions, topics...)
}

// EnsureTopics creates topics of the given partitions, and of the
// cluster's default replication factor, on brokers reached with s, when
// they do not exist. Only the topics the brokers do not show
// are asked for: a cluster with ACLs refuses CreateTopics (Topic
// Authorization Failed) to a principal without the Create permission even
// for a topic that exists, and the service's principal, on a production
// cluster, rarely has it.
func (s Security) EnsureTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	t := s.Transport()
	if t == nil {
		// Not kafka-go's shared default, whose metadata may be older
		// than a topic's deletion.
		t = &kafka.Transport{DialTimeout: 10 * time.Second}
	}
	defer closeTransport(t)
	client := brokerClient(brokers, t)
	meta, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return fmt.Errorf("metadata of topics %v on %v: %w", topics, brokers, err)
	}
	exists := map[string]bool{}
	for _, m := range meta.Topics {
		exists[m.Name] = m.Error == nil
	}
	req := &kafka.CreateTopicsRequest{}
	for _, t := range topics {
		if !exists[t] {
			// -1: the cluster's default.replication.factor (Kafka 2.4+,
			// KIP-464); one replica would be lost with its broker, and
			// refused every write under min.insync.replicas 2.
			req.Topics = append(req.Topics, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: -1})
		}
	}
	if len(req.Topics) == 0 {
		return nil
	}
	resp, err := client.CreateTopics(ctx, req)
	if err != nil {
		return fmt.Errorf("create topics %v on %v: %w", topics, brokers, err)
	}
	for t, e := range resp.Errors {
		switch {
		case errors.Is(e, kafka.TopicAuthorizationFailed):
			// The brokers did not show it, and may not create it: the
			// principal lacks Describe on it, or it is missing and the
			// principal lacks Create.
			return fmt.Errorf("topic %s: not visible to this principal and not created: it needs Describe on the topic if it exists (or an operator to create it): %w", t, e)
		case e != nil && !errors.Is(e, kafka.TopicAlreadyExists):
			return fmt.Errorf("create topic %s: %w", t, e)
		}
	}
	return nil
}

// partitionsOf returns the partition ids of topic, asked over t (nil:
// kafka-go's default transport).
func partitionsOf(ctx context.Context, t *kafka.Transport, brokers []string, topic string) ([]int, error) {
	client := brokerClient(brokers, t)
	resp, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, t.Error)
		}
		ps := make([]int, 0, len(t.Partitions))
		for _, p := range t.Partitions {
			ps = append(ps, p.ID)
		}
		slices.Sort(ps)
		return ps, nil
	}
	return nil, fmt.Errorf("metadata of %s: topic not found", topic)
}
