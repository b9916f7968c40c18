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

// committedOffsets returns the offsets group has committed on topic's
// partitions; a partition without one is left out.
func committedOffsets(ctx context.Context, c *kafka.Client, group, topic string, parts []int) (map[int]int64, error) {
	resp, err := c.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err == nil {
		err = resp.Error
	}
	if errors.Is(err, kafka.GroupIdNotFound) {
		// A group not created yet (before its first member joins) has
		// committed nothing. Kafka answers so with no offsets; kfake
		// with this error.
		return map[int]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %s on %s: %w", group, topic, err)
	}
	out := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("committed offset of group %s on %s/%d: %w", group, topic, p.Partition, p.Error)
		}
		if p.CommittedOffset >= 0 {
			out[p.Partition] = p.CommittedOffset
		}
	}
	return out, nil
}

// offsetBounds returns, per partition of topic, its first offset and its
// end (the offset the next message will have).
func offsetBounds(ctx context.Context, c *kafka.Client, topic string, parts []int) (map[int][2]int64, error) {
	reqs := make([]kafka.OffsetRequest, 0, 2*len(parts))
	for _, p := range parts {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	out := map[int][2]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			return nil, fmt.Errorf("offsets of %s/%d: %w", topic, p.Partition, p.Error)
		}
		out[p.Partition] = [2]int64{p.FirstOffset, p.LastOffset}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("offsets of %s/%d: not in the broker's answer", topic, p)
		}
	}
	return out, nil
}

// readRange calls fn with the key and value of every record of topic's
// partition p at offsets [from, to), in order, read committed and without
// the records of aborted transactions (see walkCommitted).
func readRange(ctx context.Context, c *kafka.Client, topic string, p int, from, to int64, fn func(key, value []byte)) error {
	_, err := walkCommitted(ctx, c, topic, p, from, to, func(_ int64, key, value []byte, aborted bool) {
		if !aborted {
			fn(key, value)
		}
	})
	return err
}
