package stream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// retentionProblems returns what in a topic's configuration keeps the
// rebuild from reading back the messages of the last span: a retention.ms
// shorter than span; a retention.bytes below need, the bytes of a
// partition's messages over the span (0: not checked); or, when
// compaction is not enough (the readings topic: compaction keeps one
// message per key, a sensor's newest reading, where the rebuild wants its
// window), a cleanup.policy that compacts without deleting. configs maps a
// configuration name to its value; a name it lacks is the broker's
// default, taken as fine.
func retentionProblems(topic string, configs map[string]string, span time.Duration, need int64, compactionEnough bool) []string {
	var out []string
	if v, ok := configs["retention.ms"]; ok {
		ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("topic %s: retention.ms %q is not a number", topic, v))
		case ms >= 0 && time.Duration(ms)*time.Millisecond < span:
			out = append(out, fmt.Sprintf("topic %s: retention.ms %d is shorter than the %s of window and history the rebuild reads back", topic, ms, span))
		}
	}
	if v, ok := configs["retention.bytes"]; ok && need > 0 {
		b, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		switch {
		case err != nil:
			out = append(out, fmt.Sprintf("topic %s: retention.bytes %q is not a number", topic, v))
		case b >= 0 && b < need:
			out = append(out, fmt.Sprintf("topic %s: retention.bytes %d is below the about %d bytes a partition takes for the %s of window and history the rebuild reads back", topic, b, need, span))
		}
	}
	if v, ok := configs["cleanup.policy"]; ok && !compactionEnough {
		policies := strings.Split(v, ",")
		for i := range policies {
			policies[i] = strings.TrimSpace(policies[i])
		}
		if slices.Contains(policies, "compact") && !slices.Contains(policies, "delete") {
			out = append(out, fmt.Sprintf("topic %s: cleanup.policy %q keeps only each sensor's newest message, not the windows the rebuild reads back", topic, v))
		}
	}
	return out
}

// recordOverhead is about what Kafka adds to a message's key and value in
// a record batch (the record's varint fields, and its share of the batch
// header), for the estimates of spanBytes.
const recordOverhead = 24

// spanBytes estimates the bytes one of parts partitions of a topic takes
// for the messages of st's window and history: a message per sensor and
// slot, spread over the partitions by key, each of the size of msg.
func spanBytes(st *State, msg []byte, parts int) int64 {
	perPart := (int64(st.r)*int64(st.n) + int64(parts) - 1) / int64(max(parts, 1))
	key := len(strconv.Itoa(st.n - 1))
	return perPart * int64(len(msg)+key+recordOverhead)
}

// typicalMessages returns a reading and a forecast message of about the
// size the service reads and writes with st: the largest sensor id, a timestamp of
// today, values of six digits, and the most receptive inputs.
func (s *Service) typicalMessages(st *State) (reading, forecast []byte) {
	b := st.Bundle()
	C := len(b.Meta.Norm.Mean)
	vals := make([]float64, C)
	for c := range vals {
		vals[c] = 1234.56
	}
	ts := time.Now().UnixMilli() / s.cfg.StepMs * s.cfg.StepMs
	r := Reading{Sensor: st.n - 1, TS: ts, Values: vals}
	f := Forecast{Sensor: st.n - 1, TS: ts, Values: vals, Model: b.Meta.Version, EmittedMs: ts}
	most := 0
	for z := 0; z < st.n; z++ {
		ks, _ := b.Receptive(z)
		most = max(most, len(ks))
	}
	for range most {
		f.Inputs = append(f.Inputs, Input{Sensor: st.n - 1, TS: ts})
	}
	return EncodeReading(nil, &r), EncodeForecast(nil, &f)
}

// checkRetention logs, as a warning, what in the readings and forecasts
// topics' configuration keeps the rebuild from working (see
// retentionProblems), and returns it. A broker that does not say (an ACL
// refusing DescribeConfigs) is logged too; the service goes on either way.
func (s *Service) checkRetention(ctx context.Context, t *kafka.Transport) []string {
	cfg := s.cfg
	// The state as it is now: a reload (SIGHUP or POST /-/reload while
	// the service starts) replaces s.state, under s.loop.
	s.loop <- struct{}{}
	st := s.state
	<-s.loop
	client := brokerClient(cfg.Brokers, t)
	span := time.Duration(st.r) * time.Duration(cfg.StepMs) * time.Millisecond
	names := []string{"retention.ms", "retention.bytes", "cleanup.policy"}
	reading, forecast := s.typicalMessages(st)
	size := map[string][]byte{cfg.ReadingsTopic: reading, cfg.ForecastsTopic: forecast}
	resp, err := client.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: cfg.ReadingsTopic, ConfigNames: names},
		{ResourceType: kafka.ResourceTypeTopic, ResourceName: cfg.ForecastsTopic, ConfigNames: names},
	}})
	if err != nil {
		cfg.Log.Warn().Err(err).Msg("cannot read the topics' retention: the rebuild from the log needs the last " + span.String() + " of readings")
		return nil
	}
	var problems []string
	for _, r := range resp.Resources {
		if r.Error != nil {
			cfg.Log.Warn().Err(r.Error).Str("topic", r.ResourceName).Msg("cannot read the topic's retention")
			continue
		}
		configs := map[string]string{}
		for _, e := range r.ConfigEntries {
			configs[e.ConfigName] = e.ConfigValue
		}
		var need int64 // retention.bytes is per partition
		if parts, err := partitionsOf(ctx, t, cfg.Brokers, r.ResourceName); err == nil {
			need = spanBytes(st, size[r.ResourceName], len(parts))
		}
		problems = append(problems, retentionProblems(r.ResourceName, configs, span, need, r.ResourceName != cfg.ReadingsTopic)...)
	}
	for _, p := range problems {
		cfg.Log.Warn().Msg(p + ": a service that takes the partitions forecasts from partial windows until they fill (see -rebuild)")
	}
	return problems
}
