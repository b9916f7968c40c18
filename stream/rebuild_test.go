package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

func TestReplay(t *testing.T) {
	const n, T, C, d, steps, base = 6, 3, 2, 4, 30, 1000
	readings := streamOf(testSeries(steps, n, C, 5), steps, n, C, base)
	half := len(readings) / 2
	// The reference saw every reading once, in order.
	ref, err := NewStateHistory(testBundle(t, n, T, C, d, 1), testStep, 6)
	if err != nil {
		t.Fatal(err)
	}
	mustApply(t, ref, readings)
	shuffled := func(rs []Reading) []Reading {
		rs = slices.Clone(rs)
		rand.New(rand.NewPCG(3, 3)).Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
		return rs
	}
	bad := []Reading{
		{Sensor: n, TS: base * testStep, Values: []float64{1, 2}},                        // unknown sensor
		{Sensor: 1, TS: (base+steps+1)*testStep + 1, Values: []float64{1, 2}},            // off the grid
		{Sensor: 2, TS: (base + steps + 1) * testStep, Values: []float64{math.NaN(), 1}}, // non-finite
		{Sensor: 3, TS: (base + steps + 1) * testStep, Values: []float64{1}},             // one channel
	}
	for _, tc := range []struct {
		name        string
		before      []Reading // applied (and counted) before the replay
		replay      []Reading
		wantChanged int
	}{
		{"empty state, shuffled log", nil, shuffled(readings), len(readings)},
		{"first half held", readings[:half], shuffled(readings), -1},
		{"everything held", readings, shuffled(readings), 0},
		{"refused readings skipped", nil, append(shuffled(readings), bad...), len(readings)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := NewStateHistory(testBundle(t, n, T, C, d, 1), testStep, 6)
			if err != nil {
				t.Fatal(err)
			}
			mustApply(t, st, tc.before)
			counted := st.Counters.Applied.Load()
			changed := st.Replay(tc.replay)
			if tc.wantChanged >= 0 && changed != tc.wantChanged {
				t.Errorf("Replay changed the state with %d readings, want %d", changed, tc.wantChanged)
			}
			if tc.wantChanged < 0 && (changed < len(readings)-half-n || changed > len(readings)-half) {
				t.Errorf("Replay changed the state with %d readings after %d of %d were held", changed, half, len(readings))
			}
			if !bytes.Equal(st.Snapshot(), ref.Snapshot()) {
				t.Error("the replayed state differs from the one that saw every reading in order")
			}
			var total uint64
			for z := 0; z < n; z++ {
				info, _ := st.Node(z)
				total += info.Late + info.Duplicates
			}
			if got := st.Counters.Applied.Load(); got != counted || total != 0 || st.Counters.Rejected[0].Load() != 0 {
				t.Errorf("Replay counted: applied %d (was %d), late and duplicates %d", got, counted, total)
			}
			next := int64(base+steps) * testStep
			for z := 0; z < n; z++ {
				var got, want Forecast
				if err := st.ForecastSlot(z, next, &got); err != nil {
					t.Fatal(err)
				}
				if err := ref.ForecastSlot(z, next, &want); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Values, want.Values) {
					t.Errorf("sensor %d: forecast %v, the reference %v", z, got.Values, want.Values)
				}
			}
		})
	}
}

func TestMarkEmitted(t *testing.T) {
	const n, T, C, d, steps, base = 4, 3, 2, 4, 10, 1000
	data := make([]float64, steps*n*C)
	for i := range data {
		data[i] = 40 + float64(i%13)
	}
	st, err := NewState(testBundle(t, n, T, C, d, 1), testStep)
	if err != nil {
		t.Fatal(err)
	}
	if changed := st.Replay(streamOf(data, steps, n, C, base)); changed != steps*n {
		t.Fatalf("Replay changed %d readings, want %d", changed, steps*n)
	}
	last := int64(base+steps-1) * testStep // the newest slot: its forecast is of the next one
	for _, tc := range []struct {
		z    int
		ts   int64
		want bool
	}{
		{0, last + testStep, true},
		{1, last - 2*testStep, true},
		{1, last - 4*testStep, true}, // earlier than marked: kept at the later
		{n, last, false},
		{-1, last, false},
		{2, last + 1, false},
	} {
		if got := st.MarkEmitted(tc.z, tc.ts); got != tc.want {
			t.Errorf("MarkEmitted(%d, %d) = %v, want %v", tc.z, tc.ts, got, tc.want)
		}
	}
	e := NewEmitter(st, time.Hour)
	emitted := map[int][]int64{}
	now := time.UnixMilli(last + 10*testStep)
	for {
		due := e.Due(now)
		if len(due) == 0 {
			break
		}
		for _, z := range slices.Clone(due) {
			var f Forecast
			if ok, err := e.Emit(z, now, &f); err != nil || !ok {
				t.Fatalf("Emit(%d): %v %v", z, ok, err)
			}
			emitted[z] = append(emitted[z], f.TS)
		}
	}
	next := last + testStep
	for z, want := range map[int][]int64{
		0: nil,                           // its next slot was emitted
		1: {last - testStep, last, next}, // after the slot marked
		2: nil,                           // filled in below
		3: nil,
	} {
		if z >= 2 {
			// Never marked: from the slot after the first whose inputs are
			// all there (the replay's first) up to the next.
			want = nil
			for ts := int64(base+1) * testStep; ts <= next; ts += testStep {
				want = append(want, ts)
			}
		}
		if !slices.Equal(emitted[z], want) {
			t.Errorf("sensor %d: emitted %v, want %v", z, emitted[z], want)
		}
	}
}

// TestForecastDecodesAsReading checks what the rebuild relies on to read
// the forecasts topic fast: a forecast message decodes as a reading of
// its sensor, slot and values.
func TestForecastDecodesAsReading(t *testing.T) {
	f := Forecast{Sensor: 17, TS: 1_700_000_100_000, Values: []float64{101.5, 0.25, -3}, Model: "m", StaleSlots: 2,
		Inputs: []Input{{Sensor: 3, TS: 1_700_000_000_000}, {Sensor: 17, TS: 1_700_000_000_000}}, EmittedMs: 1_700_000_100_500}
	var r Reading
	if err := DecodeReadingInto(&r, []byte("17"), EncodeForecast(nil, &f)); err != nil {
		t.Fatal(err)
	}
	if r.Sensor != f.Sensor || r.TS != f.TS || !slices.Equal(r.Values, f.Values) {
		t.Errorf("forecast %+v decoded as reading %+v", f, r)
	}
}

// BenchmarkRebuild measures what a service taking the partitions spends
// reading its windows back: PeMS04's shape (307 sensors, window 12,
// history 36, so 48 slots), the readings of 48 slots on 4 partitions and
// a forecast per sensor and slot. "from-broker" is Service.rebuild through
// the embedded broker on a fresh state; "replay" applies the same readings
// to a fresh state, decoded already (the part that is not I/O).
func BenchmarkRebuild(b *testing.B) {
	const slots, base = benchT + DefaultHistory, 6_000_000
	ctx := context.Background()
	emb := testBroker(ctx, b, 4, "readings", "forecasts", "readings-dead-letter")
	bd := testBundle6(b, benchN, benchT, benchC, benchD, 1)
	readings := streamOf(testSeries(slots, benchN, benchC, 2), slots, benchN, benchC, base)
	write := func(topic string, msgs []kafka.Message) {
		w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchSize: 5000}
		defer w.Close()
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	var rmsgs, fmsgs []kafka.Message
	for _, r := range readings {
		key := []byte(strconv.Itoa(r.Sensor))
		rmsgs = append(rmsgs, kafka.Message{Key: key, Value: EncodeReading(nil, &r)})
		// As the holder wrote them: this model's version and inputs, so
		// that the rebuild also infers what was emitted (markFresh), here
		// for the last three slots, whose forecasts are left out.
		if r.TS >= (base+slots-3)*testStep {
			continue
		}
		f := Forecast{Sensor: r.Sensor, TS: r.TS + testStep, Values: r.Values, Model: bd.Meta.Version}
		ks, _ := bd.Receptive(r.Sensor)
		for _, k := range ks {
			f.Inputs = append(f.Inputs, Input{Sensor: k, TS: r.TS})
		}
		fmsgs = append(fmsgs, kafka.Message{Key: key, Value: EncodeForecast(nil, &f)})
	}
	write("readings", rmsgs)
	write("forecasts", fmsgs)
	svc, err := NewService(bd, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	commitAll(ctx, b, emb.Addr, svc.cfg.GroupID, "readings", 4)
	fresh := func(b *testing.B) {
		b.StopTimer()
		st, err := NewStateHistory(bd, testStep, DefaultHistory)
		if err != nil {
			b.Fatal(err)
		}
		svc.state, svc.emitter = st, NewEmitter(st, 0)
		b.StartTimer()
	}
	b.Run("from-broker", func(b *testing.B) {
		var r rebuilt
		for b.Loop() {
			fresh(b)
			if r, err = svc.rebuild(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
		if r.Readings != len(readings) || r.Applied != len(readings) || r.Sensors != benchN || r.Inferred == 0 {
			b.Fatalf("rebuilt %+v from %d readings of %d sensors", r, len(readings), benchN)
		}
		b.ReportMetric(float64(r.Readings+r.Forecasts), "msgs/op")
	})
	b.Run("replay", func(b *testing.B) {
		rs := make([]Reading, len(readings))
		for b.Loop() {
			fresh(b)
			copy(rs, readings)
			if n := svc.state.Replay(rs); n != len(readings) {
				b.Fatalf("replayed %d of %d", n, len(readings))
			}
		}
	})
}

func TestRetentionProblems(t *testing.T) {
	const span = 4 * time.Hour
	for _, tc := range []struct {
		name    string
		configs map[string]string
		compact bool // compaction is enough (the forecasts topic)
		want    int
	}{
		{"defaults", nil, false, 0},
		{"a week", map[string]string{"retention.ms": "604800000", "cleanup.policy": "delete"}, false, 0},
		{"forever", map[string]string{"retention.ms": "-1"}, false, 0},
		{"exactly the span", map[string]string{"retention.ms": "14400000"}, false, 0},
		{"an hour", map[string]string{"retention.ms": "3600000"}, false, 1},
		{"not a number", map[string]string{"retention.ms": "4h"}, false, 1},
		{"compacted readings", map[string]string{"cleanup.policy": "compact"}, false, 1},
		{"compacted and deleted", map[string]string{"cleanup.policy": "compact, delete"}, false, 0},
		{"compacted forecasts", map[string]string{"cleanup.policy": "compact"}, true, 0},
		{"both wrong", map[string]string{"retention.ms": "60000", "cleanup.policy": "compact"}, false, 2},
		{"bytes unlimited", map[string]string{"retention.bytes": "-1"}, false, 0},
		{"bytes enough", map[string]string{"retention.bytes": "1073741824"}, false, 0},
		{"bytes exactly", map[string]string{"retention.bytes": "500000"}, false, 0},
		{"bytes too few", map[string]string{"retention.bytes": "499999"}, false, 1},
		{"bytes too few for forecasts", map[string]string{"retention.bytes": "1000", "cleanup.policy": "compact"}, true, 1},
		{"bytes not a number", map[string]string{"retention.bytes": "1G"}, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := retentionProblems("readings", tc.configs, span, 500000, tc.compact)
			if len(got) != tc.want {
				t.Errorf("problems %q, want %d", got, tc.want)
			}
		})
	}
}

// TestCheckRetention reads the topics' configuration from a real broker.
func TestCheckRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings-dead-letter")
	client := &kafka.Client{Addr: kafka.TCP(emb.Addr), Timeout: 10 * time.Second}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: "readings", NumPartitions: 2, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{
			{ConfigName: "retention.ms", ConfigValue: "60000"}, {ConfigName: "cleanup.policy", ConfigValue: "compact"}}},
		{Topic: "forecasts", NumPartitions: 2, ReplicationFactor: 1, ConfigEntries: []kafka.ConfigEntry{
			{ConfigName: "cleanup.policy", ConfigValue: "compact"}, {ConfigName: "retention.bytes", ConfigValue: "1000"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for topic, err := range resp.Errors {
		if err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}
	var logs bytes.Buffer
	svc, err := NewService(testBundle(t, 4, 3, 2, 4, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	got := svc.checkRetention(ctx, nil)
	all := strings.Join(got, "\n")
	if len(got) != 3 || !strings.Contains(all, "readings: retention.ms 60000") || !strings.Contains(all, `readings: cleanup.policy "compact"`) ||
		!strings.Contains(all, "forecasts: retention.bytes 1000 ") {
		t.Errorf("problems %q: want the readings topic's retention.ms and cleanup.policy, and the forecasts topic's retention.bytes", got)
	}
	if n := strings.Count(logs.String(), `"level":"warn"`); n != 3 {
		t.Errorf("%d warnings logged, want 3:\n%s", n, logs.String())
	}
}

func TestSpanBytes(t *testing.T) {
	const n, T = 4, 3
	svc, err := NewService(testBundle(t, n, T, 2, 4, 1), Config{Brokers: []string{"127.0.0.1:1"}, StepMs: testStep, History: 5})
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 100)
	// 8 slots of 4 sensors: 32 messages, of 100 + 1 (key "3") + overhead.
	for _, tc := range []struct{ parts, perPart int64 }{{1, 32}, {4, 8}, {3, 11}, {64, 1}} {
		if got, want := spanBytes(svc.state, msg, int(tc.parts)), tc.perPart*(100+1+recordOverhead); got != want {
			t.Errorf("%d partitions: %d bytes, want %d", tc.parts, got, want)
		}
	}
	reading, forecast := svc.typicalMessages(svc.state)
	if _, err := DecodeReading([]byte(strconv.Itoa(n-1)), reading); err != nil {
		t.Errorf("typical reading %s: %v", reading, err)
	}
	f, err := DecodeForecast(forecast)
	if err != nil || len(f.Inputs) != 3 {
		t.Errorf("typical forecast %s: %d inputs (want 3, the most receptive nodes of the test bundle), %v", forecast, len(f.Inputs), err)
	}
}

// commitAll commits, for group, the end of every partition of topic, as a
// service that consumed them all would have.
func commitAll(ctx context.Context, tb testing.TB, addr, group, topic string, partitions int) {
	tb.Helper()
	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	parts := make([]int, partitions)
	for p := range parts {
		parts[p] = p
	}
	bounds, err := offsetBounds(ctx, client, topic, parts)
	if err != nil {
		tb.Fatal(err)
	}
	var commits []kafka.OffsetCommit
	for _, p := range parts {
		commits = append(commits, kafka.OffsetCommit{Partition: p, Offset: bounds[p][1]})
	}
	resp, err := client.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: group, GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{topic: commits}})
	if err != nil {
		tb.Fatal(err)
	}
	for _, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error != nil {
				tb.Fatal(p.Error)
			}
		}
	}
}

// TestRebuildKeepsDeadlines checks that a rebuild that finds nothing new
// (the holder, after a rebalance) leaves the emitter's deadlines alone: a
// rescan would count them from the slots alone, and emit stale forecasts
// at once while the holder catches up on a backlog.
func TestRebuildKeepsDeadlines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d, steps, base = 4, 3, 2, 4, 10, 2000
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "readings", "forecasts", "readings-dead-letter")
	data := make([]float64, steps*n*C)
	for i := range data {
		data[i] = 40 + float64(i%17)
	}
	for c := 0; c < C; c++ {
		data[((steps-1)*n+3)*C+c] = 0 // sensor 3's last reading missing: its dependents wait
	}
	readings := streamOf(data, steps, n, C, base)
	var msgs []kafka.Message
	for _, r := range readings {
		msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	w.Close()
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	commitAll(ctx, t, emb.Addr, svc.cfg.GroupID, "readings", 2)
	// The holder: every reading applied as it came, what was due emitted.
	now := time.Now()
	for _, r := range readings {
		res, err := svc.state.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		svc.emitter.OnApply(res, now)
	}
	var f Forecast
	for due := svc.emitter.Due(now); len(due) > 0; due = svc.emitter.Due(now) {
		for _, z := range slices.Clone(due) {
			if _, err := svc.emitter.Emit(z, now, &f); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, ok := svc.emitter.NextDeadline()
	if !ok || before.Before(now.Add(59*time.Minute)) {
		t.Fatalf("next deadline %v (%v), want an hour after %v", before, ok, now)
	}
	r, err := svc.rebuild(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Readings != len(readings) || r.Applied != 0 || r.Moved != 0 {
		t.Fatalf("rebuilt %+v, want all %d readings read back and nothing new", r, len(readings))
	}
	if after, ok := svc.emitter.NextDeadline(); !ok || !after.Equal(before) {
		t.Errorf("next deadline %v (%v) after a rebuild that found nothing new, was %v", after, ok, before)
	}
}

// TestRebuildInfersEmitted rebuilds where the tail of the forecasts topic
// no longer holds most sensors' forecasts, as when a sensor has been
// silent for long or the forecasts topic is busier than the readings: the
// holder's forecasts are followed by more of sensor 1's than the rebuild
// reads back. Every target whose inputs the replayed windows hold was
// emitted by the holder, so the new service has nothing due. The control
// turns the inference off (the clock check of MaxFutureSlots, which the
// replay ignores, so a reading the holder refused might be replayed): the
// sensors not found are forecast again from their earliest slot. A
// holder that ran another model (a version the forecasts do not carry)
// turns it off too.
func TestRebuildInfersEmitted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d, steps, base, history = 4, 3, 2, 4, 12, 2000, 5
	for _, tc := range []struct {
		name          string
		maxFuture     int64
		version       string // of the new service's bundle; "" the holder's
		wantInferred  bool
		wantDueSensor []int // sensors with a forecast due after the rebuild
	}{
		{"inferred", 0, "", true, nil},
		{"clock checks on (control)", 1 << 40, "", false, []int{0, 2, 3}},
		{"another model (control)", 0, "test-v2", false, []int{0, 2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
			data := make([]float64, steps*n*C)
			for i := range data {
				data[i] = 40 + float64(i%17)
			}
			readings := streamOf(data, steps, n, C, base)
			write := func(topic string, msgs []kafka.Message) {
				t.Helper()
				w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
				defer w.Close()
				if err := w.WriteMessages(ctx, msgs...); err != nil {
					t.Fatal(err)
				}
			}
			var msgs []kafka.Message
			for _, r := range readings {
				msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
			}
			write("readings", msgs)
			cfg := Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour, History: history, Log: zerolog.Nop()}
			holder, err := NewService(testBundle(t, n, T, C, d, 1), cfg)
			if err != nil {
				t.Fatal(err)
			}
			commitAll(ctx, t, emb.Addr, holder.cfg.GroupID, "readings", 1)
			// The holder applies every reading and emits what is due.
			now := time.Now()
			var out []kafka.Message
			var f Forecast
			for _, r := range readings {
				res, err := holder.state.Apply(r)
				if err != nil {
					t.Fatal(err)
				}
				holder.emitter.OnApply(res, now)
				for _, z := range slices.Clone(holder.emitter.Due(now)) {
					if ok, err := holder.emitter.Emit(z, now, &f); err != nil || !ok {
						t.Fatalf("emit %d: %v, %v", z, ok, err)
					}
					out = append(out, kafka.Message{Key: []byte(strconv.Itoa(z)), Value: EncodeForecast(nil, &f)})
				}
			}
			// Then more of sensor 1's last forecast than the rebuild reads.
			span := (T + history) * n
			var one kafka.Message
			for _, m := range out {
				if string(m.Key) == "1" {
					one = m
				}
			}
			for range span + 5 {
				out = append(out, one)
			}
			write("forecasts", out)

			b := testBundle(t, n, T, C, d, 1)
			if tc.version != "" {
				b.Meta.Version = tc.version
			}
			cfg.MaxFutureSlots = tc.maxFuture
			svc, err := NewService(b, cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := svc.rebuild(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Sensors != 1 || (r.Inferred > 0) != tc.wantInferred {
				t.Fatalf("rebuilt %+v: want sensor 1's forecasts found, inferred %v", r, tc.wantInferred)
			}
			due := slices.Clone(svc.emitter.Due(now))
			if !slices.Equal(due, tc.wantDueSensor) {
				t.Errorf("sensors due after the rebuild %v, want %v", due, tc.wantDueSensor)
			}
			if tc.wantInferred {
				for z := range n {
					if got, want := svc.state.nodes[z].lastEmitted, holder.state.nodes[z].lastEmitted; got != want {
						t.Errorf("sensor %d: last emitted slot %d after the rebuild, the holder's %d", z, got, want)
					}
				}
			}
		})
	}
}

// TestStartRebuildsOnce starts a service on readings that come a slot at
// a time, as from live sensors (the demo's pace, faster): batches without
// readings come between them while the group coordinator still describes
// the group as joining. The service rebuilt its windows from the log at
// its first readings, then again after every such batch until the
// readiness probe asked again (up to half a second), taking an answer
// asked before it held the partitions for a hand-over. It rebuilds once;
// and so does a standby that takes over, whose last answer said it was
// the standby.
func TestStartRebuildsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d, slots = 4, 3, 2, 4, 60
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "readings", "forecasts", "readings-dead-letter")
	data := make([]float64, slots*n*C)
	for i := range data {
		data[i] = 40 + float64(i%17) // none missing: every forecast is fresh
	}
	readings := streamOf(data, slots, n, C, 0)
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: time.Millisecond}
	defer w.Close()
	publish := func(slot int) {
		var msgs []kafka.Message
		for _, r := range readings[slot*n : (slot+1)*n] {
			msgs = append(msgs, kafka.Message{Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	newService := func() *Service {
		svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Lateness: time.Hour,
			CommitEvery: 10 * time.Millisecond, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		return svc
	}
	// The slots [from, to) a slot every 40 ms, then svc's forecasts up to
	// the one after slot to−1, emitted once each, and one rebuild.
	paced := func(name string, svc *Service, from, to int) {
		t.Helper()
		for slot := from; slot < to; slot++ {
			if slot > from {
				time.Sleep(40 * time.Millisecond)
			}
			publish(slot)
		}
		want := uint64((to - from) * n)
		for svc.Counters().Emitted.Load() < want && ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
		}
		c := svc.Counters()
		if c.Emitted.Load() != want {
			t.Fatalf("%s: emitted %d forecasts, want %d (applied %d, duplicates %d, skipped %d, stale %d, late %d)", name, c.Emitted.Load(), want,
				c.Applied.Load(), c.Duplicates.Load(), c.Skipped.Load(), c.Stale.Load(), c.Late.Load())
		}
		if got := c.Rebuilds.Load(); got != 1 {
			t.Errorf("%s: rebuilt %d times, want once", name, got)
		}
	}
	first := newService()
	stopFirst := serveInTest(ctx, t, first)
	paced("at start", first, 0, slots/2)

	second := newService()
	serveInTest(ctx, t, second)
	for r := second.Readiness(); !strings.Contains(r.Checks[2].Detail, "standby in group"); r = second.Readiness() {
		if ctx.Err() != nil {
			t.Fatalf("no standby: %s", r.Checks[2].Detail)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	paced("the standby taking over", second, slots/2, slots)
}

// A message in the forecasts topic that the reading decoder takes but that
// is not a whole forecast (another writer's: a model field that is a
// number) is not kept as a sensor's latest forecast by the rebuild, where
// /forecasts?format=csv failed on it with a 500 for every client.
func TestRebuildLeavesOutForeignForecasts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 1, 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
	// Readings up to slot 9, applied and committed: forecasts of slot 10
	// can have come from them.
	writeReadings(ctx, t, emb.Addr, streamOf(rampSeries(10, n, C), 10, n, C, 0))
	commitAll(ctx, t, emb.Addr, "sdgnn-forecaster", "readings", 1)
	good := Forecast{Sensor: 1, TS: 10 * testStep, Values: []float64{1.5}, Model: "m"}
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "forecasts", RequiredAcks: kafka.RequireAll}
	err := w.WriteMessages(ctx,
		kafka.Message{Key: []byte("1"), Value: EncodeForecast(nil, &good)},
		kafka.Message{Key: []byte("3"), Value: []byte(fmt.Sprintf(`{"v":1,"sensor":3,"ts":%d,"values":[1.5],"model":5,"inputs":[],"stale_slots":0,"emitted_ms":1}`, 10*testStep))})
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.rebuild(ctx, nil); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecasts?format=csv", nil))
	if rec.Code != http.StatusOK || strings.Count(rec.Body.String(), "\n") != 2 {
		t.Errorf("GET /forecasts?format=csv after the rebuild: %d\n%s\nwant a header and sensor 1's row", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecast/3", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /forecast/3: %d %q, want 404", rec.Code, rec.Body.String())
	}
}

// TestRebuildDistrustsForgedForecasts writes to the forecasts topic, beside
// the forecasts of the readings committed (up to slot 9), one forecast of
// sensor 2 a hundred slots ahead, as anyone who may write to the topic
// can. Trusted by the rebuild of a service restarted without a state
// file, it made slot 109 sensor 2's last emitted one: the sensor got no
// forecast until its readings reached it, and /forecast/2 served the
// forged value. The rebuild now leaves out a forecast of a slot that no
// reading held could have made due, says so, and sensor 2's next forecast
// is due as its inputs of slot 10 come. So for a model whose sensors have
// IDs, its readings and forecasts keyed and named by them, the forecast
// left out named by its ID.
func TestRebuildDistrustsForgedForecasts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	for _, ids := range [][]string{nil, {"773869", "767541", "767542", "717447"}} {
		t.Run(fmt.Sprintf("ids=%v", ids), func(t *testing.T) {
			rebuildDistrustsForged(t, ids)
		})
	}
}

func rebuildDistrustsForged(t *testing.T, ids []string) {
	const n, T, C, d = 4, 3, 1, 4
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := testBundle(t, n, T, C, d, 1)
	b.Meta.SensorIDs = ids
	names, err := b.SensorNames()
	if err != nil {
		t.Fatal(err)
	}
	emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
	data := rampSeries(11, n, C)
	writeReadingsFor(ctx, t, emb.Addr, streamOf(data[:10*n*C], 10, n, C, 0), names)
	commitAll(ctx, t, emb.Addr, "sdgnn-forecaster", "readings", 1)
	var msgs []kafka.Message
	for z := range n {
		f := Forecast{Sensor: z, ID: names.ID(z), TS: 10 * testStep, Values: []float64{1.5}, Model: "m"}
		msgs = append(msgs, kafka.Message{Key: []byte(names.Name(z)), Value: EncodeForecast(nil, &f)})
	}
	forged := Forecast{Sensor: 2, ID: names.ID(2), TS: 109 * testStep, Values: []float64{-999}, Model: "m"}
	msgs = append(msgs, kafka.Message{Key: []byte(names.Name(2)), Value: EncodeForecast(nil, &forged)})
	w := &kafka.Writer{Addr: kafka.TCP(emb.Addr), Topic: "forecasts", RequiredAcks: kafka.RequireAll}
	err = w.WriteMessages(ctx, msgs...)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	svc, err := NewService(b, Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.New(&logged)})
	if err != nil {
		t.Fatal(err)
	}
	svc.rebuildLogged(ctx, nil)
	if want := `"forecasts":1,"first":["` + names.Name(2) + `@`; !strings.Contains(logged.String(), want) {
		t.Errorf("log lacks the forecast left out (%s):\n%s", want, logged.String())
	}
	if strings.Contains(logged.String(), "name sensors this model does not") {
		t.Errorf("the model's own forecasts taken for another model's:\n%s", logged.String())
	}
	for z := range n {
		if got := svc.state.nodes[z].lastEmitted; got != 10 {
			t.Errorf("sensor %d: last emitted slot %d after the rebuild, want 10", z, got)
		}
	}
	rec := httptest.NewRecorder()
	svc.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/forecast/"+names.Name(2), nil))
	if f, err := DecodeForecast(rec.Body.Bytes()); err != nil || f.TS != 10*testStep || f.Name() != names.Name(2) {
		t.Errorf("GET /forecast/%s: %d %s, want the forecast of slot 10", names.Name(2), rec.Code, rec.Body.String())
	}
	// Slot 10's readings make every sensor's slot-11 forecast due, sensor 2's too.
	now := time.Now()
	for _, r := range streamOf(data[10*n*C:], 1, n, C, 10) {
		res, err := svc.state.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		svc.emitter.OnApply(res, now)
	}
	if due := slices.Sorted(slices.Values(svc.emitter.Due(now))); !slices.Equal(due, []int{0, 1, 2, 3}) {
		t.Errorf("due after slot 10's readings: %v, want every sensor", due)
	}
}

// rampSeries returns steps×n×C readings, none missing.
func rampSeries(steps, n, C int) []float64 {
	data := make([]float64, steps*n*C)
	for i := range data {
		data[i] = 40 + float64(i%17)
	}
	return data
}

// writeReadings writes rs to the readings topic, keyed by sensor.
func writeReadings(ctx context.Context, t *testing.T, addr string, rs []Reading) {
	t.Helper()
	writeReadingsFor(ctx, t, addr, rs, nil)
}

// writeReadingsFor writes rs to the readings topic, keyed and named by
// the sensors' names: their IDs, or (names nil or without IDs) indices.
func writeReadingsFor(ctx context.Context, t *testing.T, addr string, rs []Reading, names *pems.SensorNames) {
	t.Helper()
	var msgs []kafka.Message
	for _, r := range rs {
		msgs = append(msgs, kafka.Message{Key: appendKey(nil, r.Sensor, names.ID(r.Sensor)), Value: EncodeReadingFor(nil, &r, names)})
	}
	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "readings", Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildLogsDuration checks that the rebuild's log line gives how
// long it took with its unit ("took":"1.234ms"), as the service's other
// durations are logged (retry_in, wait), not as a bare number of
// milliseconds ("took":1.234), which reads as seconds as readily.
func TestRebuildLogsDuration(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "readings", "forecasts")
	var logs bytes.Buffer
	svc, err := NewService(testBundle(t, 4, 3, 1, 2, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	svc.rebuildLogged(ctx, nil)
	var line struct {
		Message string `json:"message"`
		Took    any    `json:"took"`
	}
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	took, ok := line.Took.(string)
	if !strings.HasPrefix(line.Message, "rebuilt from the log") || !ok {
		t.Fatalf("log %q: want the rebuild's line with took as a duration string", logs.String())
	}
	if _, err := time.ParseDuration(took); err != nil {
		t.Errorf("took %q: %v", took, err)
	}
}
