package stream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTxnMarker(t *testing.T) {
	reading := Reading{Sensor: 1, TS: testStep, Values: []float64{1, 2}}
	for _, tc := range []struct {
		name         string
		key, value   []byte
		commit, isOK bool
	}{
		{"commit", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0, 7}, true, true},
		{"abort", []byte{0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0}, false, true},
		{"reading", []byte("1"), EncodeReading(nil, &reading), false, false},
		{"other control type", []byte{0, 0, 0, 2}, []byte{0, 0, 0, 0, 0, 0}, false, false},
		{"key version 1", []byte{0, 1, 0, 1}, []byte{0, 0, 0, 0, 0, 0}, false, false},
		{"value version 1", []byte{0, 0, 0, 1}, []byte{0, 1, 0, 0, 0, 0}, false, false},
		{"value too short", []byte{0, 0, 0, 1}, []byte{0, 0, 0, 0, 0}, false, false},
		{"no key", nil, []byte{0, 0, 0, 0, 0, 0}, false, false},
		{"JSON of six bytes", []byte{0, 0, 0, 1}, []byte(`{"v":}`), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			commit, ok := TxnMarker(tc.key, tc.value)
			if commit != tc.commit || ok != tc.isOK {
				t.Errorf("TxnMarker(%q, %q) = %v, %v; want %v, %v", tc.key, tc.value, commit, ok, tc.commit, tc.isOK)
			}
		})
	}
}

// txnProducer returns a franz-go client that writes to topic in
// transactions, as Kafka Streams, Flink or any producer with a
// transactional id does.
func txnProducer(t testing.TB, addr, topic, id string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// inTxn writes records in one transaction and ends it (commit or abort);
// with end false it leaves the transaction open.
func inTxn(ctx context.Context, t testing.TB, cl *kgo.Client, recs []*kgo.Record, end, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if end {
		endTxn(ctx, t, cl, commit)
	}
}

func endTxn(ctx context.Context, t testing.TB, cl *kgo.Client, commit bool) {
	t.Helper()
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatal(err)
	}
}

// TestReadRangeTransactional reads ranges of a partition written by two
// transactional producers, A and B:
//
//	0 a0, 1 a1, 2 commit A; 3 b0, 4 b1 (A); 5 x0 (B), 6 commit B;
//	7 b2 (A), 8 abort A; 9 c0, 10 c1, 11 commit A; 12 open (A, not ended)
//
// The records of A's aborted transaction (3, 4, 7) are left out, B's
// committed one between them is read, markers are passed over also at
// the end of a range, and the open transaction ends the range without an
// error. walkCommitted says when the range begins inside an aborted
// transaction.
func TestReadRangeTransactional(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "tx", "plain"))
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := txnProducer(t, addr, "tx", "a"), txnProducer(t, addr, "tx", "b")
	rec := func(v string) *kgo.Record { return &kgo.Record{Key: []byte("k"), Value: []byte(v)} }
	inTxn(ctx, t, a, []*kgo.Record{rec("a0"), rec("a1")}, true, true)
	inTxn(ctx, t, a, []*kgo.Record{rec("b0"), rec("b1")}, false, false)
	inTxn(ctx, t, b, []*kgo.Record{rec("x0")}, true, true)
	if err := a.ProduceSync(ctx, rec("b2")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	endTxn(ctx, t, a, false)
	inTxn(ctx, t, a, []*kgo.Record{rec("c0"), rec("c1")}, true, true)
	inTxn(ctx, t, a, []*kgo.Record{rec("open")}, false, false)

	client := &kafka.Client{Addr: kafka.TCP(addr)}
	plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, rec("p0"), rec("p1")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		topic         string
		from, to      int64
		want          string // records read
		aborted       string // records of the aborted transaction walked over
		earlier       bool
		transactional bool // a transactional batch or a marker met
	}{
		{"tx", 0, 3, "a0 a1", "", false, true},
		{"tx", 0, 2, "a0 a1", "", false, true},
		{"tx", 2, 3, "", "", false, true},
		{"tx", 3, 9, "x0", "b0 b1 b2", false, true},
		{"tx", 4, 6, "x0", "b1", true, true},
		{"tx", 5, 9, "x0", "b2", true, true},
		{"tx", 8, 9, "", "", true, true}, // the marker of a transaction begun at 3
		{"tx", 1, 10, "a1 x0 c0", "b0 b1 b2", false, true},
		{"tx", 0, 12, "a0 a1 x0 c0 c1", "b0 b1 b2", false, true},
		{"tx", 0, 13, "a0 a1 x0 c0 c1", "b0 b1 b2", false, true},
		{"tx", 9, 13, "c0 c1", "", false, true},
		{"tx", 12, 13, "", "", false, false}, // open: nothing read
		{"plain", 0, 2, "p0 p1", "", false, false},
	} {
		var got, aborted []string
		w, err := walkCommitted(ctx, client, tc.topic, 0, tc.from, tc.to, func(_ int64, _, v []byte, ab bool) {
			if ab {
				aborted = append(aborted, string(v))
			} else {
				got = append(got, string(v))
			}
		})
		if err != nil {
			t.Errorf("%s [%d, %d): %v", tc.topic, tc.from, tc.to, err)
		}
		if s, ab := strings.Join(got, " "), strings.Join(aborted, " "); s != tc.want || ab != tc.aborted || w.Earlier != tc.earlier || w.Transactional != tc.transactional {
			t.Errorf("%s [%d, %d): read %q, aborted %q, earlier %v, transactional %v; want %q, %q, %v, %v",
				tc.topic, tc.from, tc.to, s, ab, w.Earlier, w.Transactional, tc.want, tc.aborted, tc.earlier, tc.transactional)
		}
		var read []string
		if err := readRange(ctx, client, tc.topic, 0, tc.from, tc.to, func(_, v []byte) { read = append(read, string(v)) }); err != nil || strings.Join(read, " ") != tc.want {
			t.Errorf("readRange %s [%d, %d): %q, %v; want %q", tc.topic, tc.from, tc.to, read, err, tc.want)
		}
	}
}

// TestTransactionalReadings runs the service on readings written in
// transactions. The markers that end them are neither readings nor
// rejected (no dead letter), the readings of a transaction still open are
// not applied before it commits, those of an aborted one are left out (the
// same slots written again with other values are applied, not taken for
// conflicts), and a service that takes over rebuilds the same windows
// from the transactional topic.
func TestTransactionalReadings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	for _, tc := range []struct {
		name       string
		partitions int
	}{{"one partition", 1}, {"four partitions", 4}} {
		t.Run(tc.name, func(t *testing.T) { testTransactionalReadings(t, tc.partitions) })
	}
}

func testTransactionalReadings(t *testing.T, partitions int) {
	const n, T, C, d = 5, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	emb, err := StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := EnsureTopics(ctx, []string{emb.Addr}, partitions, "readings", "forecasts", "readings-dead-letter"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := Config{Brokers: []string{emb.Addr}, Partitions: partitions, StepMs: testStep, Lateness: time.Hour,
		Now: func() time.Time { return now }, Log: zerolog.Nop()}
	slotOf := func(i int, v float64) []*kgo.Record {
		var recs []*kgo.Record
		for z := 0; z < n; z++ {
			r := Reading{Sensor: z, TS: now.UnixMilli() + int64(i-10)*testStep, Values: []float64{v + float64(i), 60 + float64(z)}}
			recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(z)), Value: EncodeReading(nil, &r)})
		}
		return recs
	}
	slot := func(i int) []*kgo.Record { return slotOf(i, 50) }
	// A transaction ends with a marker in every partition it wrote to.
	touched := map[int]bool{}
	for _, r := range slot(0) {
		touched[kgo.StickyKeyPartitioner(nil).ForTopic("readings").Partition(r, partitions)] = true
	}
	markers := uint64(len(touched))
	t.Logf("a transaction writes to %d partitions", markers)
	run := func(svc *Service) (stop func()) {
		cancel, done := runService(ctx, svc)
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("service: %v", err)
			}
		}
	}
	waitApplied := func(svc *Service, want uint64) {
		t.Helper()
		for svc.Counters().Applied.Load() < want && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if got := svc.Counters().Applied.Load(); got != want {
			t.Fatalf("applied %d readings, want %d", got, want)
		}
	}

	svc, err := NewService(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(svc)
	cl := txnProducer(t, emb.Addr, "readings", "sensors")
	inTxn(ctx, t, cl, slot(0), true, true)
	inTxn(ctx, t, cl, slot(1), true, true)
	waitApplied(svc, 2*n)
	// An open transaction is not read: a read-uncommitted consumer would
	// have applied it within its 50 ms fetch wait.
	inTxn(ctx, t, cl, slot(2), false, false)
	time.Sleep(time.Second)
	if got := svc.Counters().Applied.Load(); got != 2*n {
		t.Fatalf("applied %d readings with a transaction open, want %d", got, 2*n)
	}
	endTxn(ctx, t, cl, true)
	waitApplied(svc, 3*n)
	// An aborted transaction is left out, and the same slot written again
	// with other values is applied.
	inTxn(ctx, t, cl, slotOf(3, 900), true, false)
	inTxn(ctx, t, cl, slot(3), true, true)
	waitApplied(svc, 4*n)
	stop()
	c := svc.Counters()
	if c.TxnCommits.Load() != 4*markers || c.TxnAborts.Load() != markers || c.TxnAborted.Load() != n {
		t.Errorf("counted %d commit and %d abort markers and %d aborted readings, want %d, %d and %d",
			c.TxnCommits.Load(), c.TxnAborts.Load(), c.TxnAborted.Load(), 4*markers, markers, n)
	}
	if c.Conflicts.Load() != 0 || c.Duplicates.Load() != 0 {
		t.Errorf("%d conflicts and %d duplicates: the aborted readings were applied", c.Conflicts.Load(), c.Duplicates.Load())
	}
	for i, reason := range Reasons {
		if got := c.Rejected[i].Load(); got != 0 {
			t.Errorf("%d messages rejected as %s", got, reason)
		}
	}
	if c.Internal.Load() != 0 {
		t.Errorf("%d messages rejected (internal)", c.Internal.Load())
	}
	client := &kafka.Client{Addr: kafka.TCP(emb.Addr)}
	var letters int
	for p := range partitions {
		if err := readRange(ctx, client, "readings-dead-letter", p, 0, 1<<40, func(_, _ []byte) { letters++ }); err != nil {
			t.Fatal(err)
		}
	}
	if letters != 0 {
		t.Errorf("%d dead letters", letters)
	}

	// A second service, without a state file, takes over: it rebuilds its
	// windows from the log, which ends with a commit marker.
	next, err := NewService(b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	stop = run(next)
	for next.Counters().Rebuilds.Load()+next.Counters().RebuildFailures.Load() == 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if c := next.Counters(); c.Rebuilds.Load() != 1 || c.RebuildFailures.Load() != 0 || c.Rebuilt.Load() == 0 {
		t.Errorf("rebuilds %d, failures %d, readings rebuilt %d; want 1, 0 and some", c.Rebuilds.Load(), c.RebuildFailures.Load(), c.Rebuilt.Load())
	}
	if !bytes.Equal(svc.State().Snapshot(), next.State().Snapshot()) {
		t.Error("the rebuilt state differs from the first service's")
	}
}

// TestOpenTransactionHoldsNoPartitionBack catches up on a backlog of two
// partitions while a producer's transaction is open on the first: read
// committed, nothing past its first record can be fetched, so that
// partition is caught up (at its last stable offset) however far its high
// watermark lies, and the second's readings, many slots ahead, are applied
// at once rather than held for it. Once the transaction commits, its
// readings follow.
func TestOpenTransactionHoldsNoPartitionBack(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 4
	const history, ahead = 4, 30 // slack history/2 = 2 slots; the second partition runs 30 ahead
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 2, "readings", "forecasts", "readings-dead-letter")
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	// Sensors 0 and 1 on partition 0, 2 and 3 on partition 1.
	rec := func(z, i int) *kgo.Record {
		r := Reading{Sensor: z, TS: base + int64(i)*testStep, Values: []float64{50 + float64(i), 60 + float64(z)}}
		return &kgo.Record{Key: []byte(strconv.Itoa(z)), Value: EncodeReading(nil, &r), Partition: int32(z / 2)}
	}
	slots := func(p, from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, rec(2*p, i), rec(2*p+1, i))
		}
		return recs
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(emb.Addr), kgo.TransactionalID("sensors-0-1"), kgo.DefaultProduceTopic("readings"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	plain, err := kgo.NewClient(kgo.SeedBrokers(emb.Addr), kgo.DefaultProduceTopic("readings"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	inTxn(ctx, t, txn, slots(0, 0, 5), true, true)
	inTxn(ctx, t, txn, slots(0, 5, 6), false, false) // open, from offset 11 (10: the commit marker)
	if err := plain.ProduceSync(ctx, slots(1, 0, ahead)...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var logs lockedLog
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, Partitions: 2, StepMs: testStep,
		History: history, Lateness: time.Hour, ReadyMaxLag: 1, ProbeEvery: 100 * time.Millisecond, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	stop := serveInTest(ctx, t, svc)
	waitApplied := func(want uint64, within time.Duration) {
		t.Helper()
		until := time.Now().Add(within)
		for svc.Counters().Applied.Load() < want && time.Now().Before(until) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := svc.Counters().Applied.Load(); got != want {
			t.Fatalf("applied %d readings, want %d", got, want)
		}
	}
	// Held back, the second partition would stop at slot 4+2.
	waitApplied(2*5+2*ahead, 10*time.Second)
	// The open transaction's readings (offsets 11 and 12) cannot be read
	// before it ends, so they are not lag: the lag check passes (at most
	// 1). Counted to the high watermark, they would be 2.
	lagOK := func() (bool, string) {
		c := svc.Readiness().Checks[4]
		return c.OK && c.Detail == "0 readings behind, at most 1", c.Detail
	}
	for until := time.Now().Add(5 * time.Second); time.Now().Before(until); time.Sleep(10 * time.Millisecond) {
		if ok, _ := lagOK(); ok {
			break
		}
	}
	if ok, detail := lagOK(); !ok {
		t.Errorf("lag check behind an open transaction: %s, want 0 readings behind", detail)
	}
	// kafka-go reconnects at the open transaction, taking it for a broken
	// connection, once a fetch there has waited out its MaxWait (500 ms):
	// keep the transaction open until that has been logged. Under qemu
	// (SDGNN_EMULATED) one reconnect cycle takes up to 20 s (see
	// TestReaderReconnectsAtOpenTransaction), and a .ci/run of 2026-12-01
	// saw none in the 10 s waited natively: wait longer there, and do not
	// require it, since the native run pins the line.
	emulated := os.Getenv("SDGNN_EMULATED") != ""
	reconnect := `"partition":0,"offset":11,"similar_held_back":0,"message":"a fetch ended without records below the high watermark`
	wait := 10 * time.Second
	if emulated {
		wait = 25 * time.Second
	}
	for until := time.Now().Add(wait); !strings.Contains(logs.String(), reconnect) && time.Now().Before(until); {
		time.Sleep(10 * time.Millisecond)
	}
	endTxn(ctx, t, txn, true)
	waitApplied(2*6+2*ahead, 10*time.Second)
	if err := stop(); err != nil {
		t.Error(err)
	}
	if want := `"partition":0,"offset":11,"message":"partition stops at a transaction still open`; !strings.Contains(logs.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, logs.String())
	}
	// The reconnect is information, not a warning.
	if !strings.Contains(logs.String(), reconnect) {
		if emulated {
			t.Logf("no reconnect at the open transaction in %v under emulation: its line is checked by the native run", wait)
		} else {
			t.Errorf("log lacks %s:\n%s", reconnect, logs.String())
		}
	}
	if strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("warnings logged:\n%s", logs.String())
	}
}

// TestReaderReconnectsAtOpenTransaction pins the kafka-go behaviour that
// readerErrorLogger tells operators about: read committed, a fetch at a
// transaction still open returns no records below the high watermark, and
// kafka-go's reader takes that for a broken connection and reconnects,
// over and over. If an upgrade of kafka-go stops it, this test fails: drop
// the special case in readerErrorLogger and the README's paragraph on it.
func TestReaderReconnectsAtOpenTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	// Under qemu (.ci/run sets SDGNN_EMULATED there) one cycle took from
	// under 2 s to 20 s, and two CI runs of 2026-11-26 failed for want of
	// cycles. What is pinned is kafka-go's Go code, the same on every
	// architecture: the native run pins it.
	if os.Getenv("SDGNN_EMULATED") != "" {
		t.Skip("kafka-go's reconnect cycles are timed; pinned by the native run")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	emb := testBroker(ctx, t, 1, "tx")
	cl := txnProducer(t, emb.Addr, "tx", "p")
	inTxn(ctx, t, cl, []*kgo.Record{{Value: []byte("committed")}}, true, true)
	inTxn(ctx, t, cl, []*kgo.Record{{Value: []byte("open")}}, false, false)
	var inits, eofs atomic.Int64
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, Topic: "tx", Partition: 0, IsolationLevel: kafka.ReadCommitted,
		MaxWait: 500 * time.Millisecond, // the service's; at 50 ms, under qemu, fetches time out before the broker answers
		Logger: kafka.LoggerFunc(func(msg string, _ ...any) {
			if strings.HasPrefix(msg, "initializing kafka reader") {
				inits.Add(1)
			}
		}),
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			if err, ok := args[len(args)-1].(error); ok && errors.Is(err, io.ErrUnexpectedEOF) {
				eofs.Add(1)
			}
		})})
	defer r.Close()
	if m, err := r.FetchMessage(ctx); err != nil || string(m.Value) != "committed" {
		t.Fatalf("first message %q, %v; want the committed record", m.Value, err)
	}
	if m, err := r.FetchMessage(ctx); err != nil {
		t.Fatal(err)
	} else if commit, ok := TxnMarker(m.Key, m.Value); !ok || !commit {
		t.Fatalf("second message %q %q, want the commit marker", m.Key, m.Value)
	}
	i0, e0, start := inits.Load(), eofs.Load(), time.Now()
	// Natively three cycles take about 2 s.
	const want = 3
	for (inits.Load()-i0 < want || eofs.Load()-e0 < want) && time.Since(start) < 30*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	gotInits, gotEOFs := inits.Load()-i0, eofs.Load()-e0
	t.Logf("in %v at an open transaction: %d reconnections, %d unexpected EOFs", time.Since(start).Round(time.Millisecond), gotInits, gotEOFs)
	if gotInits < want || gotEOFs < want {
		t.Errorf("%d reconnections and %d unexpected EOFs in 30 s at an open transaction, want at least %d of each", gotInits, gotEOFs, want)
	}
	endTxn(ctx, t, cl, true)
	if m, err := r.FetchMessage(ctx); err != nil || string(m.Value) != "open" {
		t.Fatalf("after the commit: %q, %v; want the transaction's record", m.Value, err)
	}
}

// TestAbortedBehindOpenTransaction has producer A abort a transaction
// while producer B's, begun after A's, is still open on the same
// partition. Read committed, A's records come at once (they lie below B's
// first record, the last stable offset) but A's abort marker only once B
// commits, in a later batch: the service must tell them aborted without
// their marker, and apply neither them nor a conflict with A's retry.
func TestAbortedBehindOpenTransaction(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	const n, T, C, d = 4, 3, 2, 4
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	emb := testBroker(ctx, t, 1, "readings", "forecasts", "readings-dead-letter")
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	rec := func(z, i int, v float64) *kgo.Record {
		r := Reading{Sensor: z, TS: base + int64(i)*testStep, Values: []float64{v, 60 + float64(z)}}
		return &kgo.Record{Key: []byte(strconv.Itoa(z)), Value: EncodeReading(nil, &r)}
	}
	a := txnProducer(t, emb.Addr, "readings", "a")
	b := txnProducer(t, emb.Addr, "readings", "b")
	var logs bytes.Buffer
	svc, err := NewService(testBundle(t, n, T, C, d, 1), Config{Brokers: []string{emb.Addr}, StepMs: testStep,
		Lateness: time.Hour, Log: zerolog.New(zerolog.SyncWriter(&logs))})
	if err != nil {
		t.Fatal(err)
	}
	stop := serveInTest(ctx, t, svc)
	waitFor := func(what string, ok func(c *Counters) bool) {
		t.Helper()
		until := time.Now().Add(10 * time.Second)
		for !ok(svc.Counters()) && time.Now().Before(until) {
			time.Sleep(10 * time.Millisecond)
		}
		if c := svc.Counters(); !ok(c) {
			t.Fatalf("no %s: applied %d, aborted %d, conflicts %d", what, c.Applied.Load(), c.TxnAborted.Load(), c.Conflicts.Load())
		}
	}
	inTxn(ctx, t, a, []*kgo.Record{rec(0, 0, 50), rec(1, 0, 51), rec(2, 0, 52), rec(3, 0, 53)}, true, true)
	waitFor("first slot", func(c *Counters) bool { return c.Applied.Load() == 4 })
	inTxn(ctx, t, a, []*kgo.Record{rec(0, 1, 900), rec(1, 1, 901)}, false, false)
	inTxn(ctx, t, b, []*kgo.Record{rec(2, 1, 62), rec(3, 1, 63)}, false, false)
	endTxn(ctx, t, a, false) // aborted; its marker lies after B's first record
	waitFor("aborted readings told apart", func(c *Counters) bool { return c.TxnAborted.Load() == 2 || c.Applied.Load() > 4 })
	inTxn(ctx, t, a, []*kgo.Record{rec(0, 1, 60), rec(1, 1, 61)}, true, true)
	endTxn(ctx, t, b, true)
	waitFor("second slot", func(c *Counters) bool { return c.Applied.Load() >= 8 })
	if err := stop(); err != nil {
		t.Error(err)
	}
	c := svc.Counters()
	if c.Applied.Load() != 8 || c.TxnAborted.Load() != 2 || c.Conflicts.Load() != 0 || c.TxnUnchecked.Load() != 0 {
		t.Errorf("applied %d, aborted %d, conflicts %d, unchecked %d; want 8, 2, 0 and 0",
			c.Applied.Load(), c.TxnAborted.Load(), c.Conflicts.Load(), c.TxnUnchecked.Load())
	}
	if strings.Contains(logs.String(), `"level":"warn"`) {
		t.Errorf("warnings logged:\n%s", logs.String())
	}
}
