package stream

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"
)

// TxnMarker reports whether a message of the readings topic, as kafka-go's
// Reader delivers it, is a transaction marker rather than a reading, and
// if so whether it commits (true) or aborts (false) its transaction.
//
// A producer that writes transactionally (Kafka Streams or Flink with
// exactly-once delivery, franz-go or librdkafka with a transactional id)
// ends each transaction with a marker in every partition it wrote: a
// control record, which Kafka's own consumer hides. kafka-go's Reader
// hands it over as a message (segmentio/kafka-go#1332), with the control
// record's key (int16 version 0, int16 type: 0 abort, 1 commit) and value
// (int16 version 0, int32 coordinator epoch). No JSON reading has that
// shape, so the service counts such a message as a marker, not as a
// malformed reading for the dead-letter topic.
func TxnMarker(key, value []byte) (commit, ok bool) {
	if len(key) != 4 || len(value) != 6 || binary.BigEndian.Uint16(key) != 0 || binary.BigEndian.Uint16(value) != 0 {
		return false, false
	}
	switch binary.BigEndian.Uint16(key[2:]) {
	case 0:
		return false, true
	case 1:
		return true, true
	}
	return false, false
}

// abortFilter tells the records of aborted transactions in the batches of
// read-committed fetches of one partition, as Kafka's own consumer does:
// a fetch response lists the aborted transactions it overlaps (producer
// id, first offset); from its first offset on, the transactional batches
// of that producer are aborted, until the producer's abort marker.
// kafka-go's Reader ignores the list (segmentio/kafka-go#1332), so the
// service applies this to what it reads with its own fetches.
type abortFilter struct {
	pending []fetchAPI.ResponseTransaction // listed, first offset not reached yet; ascending
	seen    map[fetchAPI.ResponseTransaction]bool
	aborted map[int64]bool // producers inside an aborted transaction
	from    int64          // where the walk began
	earlier bool           // a listed transaction began before from
}

// list adds the aborted transactions of a fetch response; those listed
// by an earlier response of the same walk are passed over.
func (f *abortFilter) list(txns []fetchAPI.ResponseTransaction) {
	if f.seen == nil {
		f.seen, f.aborted = map[fetchAPI.ResponseTransaction]bool{}, map[int64]bool{}
	}
	for _, t := range txns {
		if !f.seen[t] {
			f.seen[t] = true
			f.pending = append(f.pending, t)
			f.earlier = f.earlier || t.FirstOffset < f.from
		}
	}
	slices.SortFunc(f.pending, func(a, b fetchAPI.ResponseTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
}

// batch reports whether the records of a batch are to be passed over: a
// control batch (a marker; an abort marker ends its producer's aborted
// transaction), or a transactional batch of a producer inside an aborted
// transaction. base is the batch's first offset.
func (f *abortFilter) batch(base, producer int64, transactional, control, abortMarker bool) bool {
	if f.seen == nil {
		f.list(nil)
	}
	i := 0
	for ; i < len(f.pending) && f.pending[i].FirstOffset <= base; i++ {
		f.aborted[f.pending[i].ProducerID] = true
	}
	f.pending = f.pending[i:]
	if control {
		if abortMarker {
			delete(f.aborted, producer)
		}
		return true
	}
	return transactional && f.aborted[producer]
}

// walk is what walkCommitted met besides the records it passed to fn.
type walk struct {
	// Earlier reports an aborted transaction begun before the walk's
	// start, whose records before it fn did not see.
	Earlier bool
	// Transactional reports a batch written in a transaction, or a marker.
	Transactional bool
}

// walkCommitted calls fn with every record of topic's partition p at
// offsets [from, to), in order, read committed, and whether the record
// belongs to an aborted transaction (see abortFilter); transaction
// markers are not passed. Offsets without a record (markers, records
// removed by compaction) are passed over, also at the end of the range;
// the records of a transaction still open end the range early.
func walkCommitted(ctx context.Context, c *kafka.Client, topic string, p int, from, to int64, fn func(offset int64, key, value []byte, aborted bool)) (w walk, err error) {
	f := abortFilter{from: from}
	defer func() { w.Earlier = f.earlier }()
	for off := from; off < to; {
		part, err := fetchPartition(ctx, c, topic, p, off)
		if err != nil {
			return w, fmt.Errorf("read %s/%d at offset %d: %w", topic, p, off, err)
		}
		f.list(part.AbortedTransactions)
		var batches []protocol.RecordReader
		switch rs := part.RecordSet.Records.(type) {
		case nil:
		case *protocol.RecordStream:
			batches = rs.Records
		default:
			batches = []protocol.RecordReader{rs}
		}
		next := off
	batches:
		for _, b := range batches {
			var skip bool
			switch b := b.(type) {
			case *protocol.RecordBatch:
				if b.BaseOffset >= to {
					next = max(next, to) // nothing lies between
					break batches        // the rest of the answer lies past the range
				}
				skip = f.batch(b.BaseOffset, b.ProducerID, b.Attributes.Transactional(), false, false)
				w.Transactional = w.Transactional || b.Attributes.Transactional()
			case *protocol.ControlBatch:
				if b.BaseOffset >= to {
					next = max(next, to)
					break batches
				}
				w.Transactional = true
				abort := false
				if rec, err := b.ReadRecord(); err == nil {
					key, _ := protocol.ReadAll(rec.Key)
					value, _ := protocol.ReadAll(rec.Value)
					release(rec)
					commit, ok := TxnMarker(key, value)
					abort = ok && !commit
					next = max(next, rec.Offset+1)
				}
				f.batch(b.BaseOffset, b.ProducerID, true, true, abort)
				for { // the rest of the batch (a marker batch holds one record)
					rec, err := b.ReadRecord()
					if err != nil {
						break
					}
					release(rec)
					next = max(next, rec.Offset+1)
				}
				continue
			}
			for {
				rec, err := b.ReadRecord()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					releaseAll(batches)
					return w, fmt.Errorf("read %s/%d at offset %d: %w", topic, p, next, err)
				}
				if rec.Offset < off || rec.Offset >= to { // a batch may begin before the offset asked
					next = max(next, min(rec.Offset+1, to))
					release(rec)
					continue
				}
				next = max(next, rec.Offset+1)
				key, kerr := protocol.ReadAll(rec.Key)
				value, verr := protocol.ReadAll(rec.Value)
				release(rec)
				if err := cmp.Or(kerr, verr); err != nil {
					releaseAll(batches)
					return w, fmt.Errorf("read %s/%d offset %d: %w", topic, p, rec.Offset, err)
				}
				fn(rec.Offset, key, value, skip)
			}
		}
		releaseAll(batches)
		if next == off {
			end := part.HighWatermark
			if part.LastStableOffset > 0 {
				end = min(end, part.LastStableOffset)
			}
			if end <= off {
				return w, nil // the end came sooner: truncated, or an open transaction
			}
			return w, fmt.Errorf("read %s/%d at offset %d: no record returned below offset %d", topic, p, off, end)
		}
		off = next
	}
	return w, nil
}

// release hands the pages that hold a record's key and value back to
// kafka-go's pool; a record set not released leaves its pages (64 KiB
// each, one at least per batch) to the garbage collector.
func release(rec *protocol.Record) {
	if rec.Key != nil {
		rec.Key.Close()
	}
	if rec.Value != nil {
		rec.Value.Close()
	}
}

// releaseAll releases the records of batches not read yet.
func releaseAll(batches []protocol.RecordReader) {
	for _, b := range batches {
		for {
			rec, err := b.ReadRecord()
			if err != nil {
				break
			}
			release(rec)
		}
	}
}

// fetchPartition fetches, read committed, what follows offset off in
// topic's partition p: kafka.Client.Fetch drops the response's aborted
// transactions, so the fetch request is sent through c's transport as
// kafka-go's Client sends it.
func fetchPartition(ctx context.Context, c *kafka.Client, topic string, p int, off int64) (*fetchAPI.ResponsePartition, error) {
	rt := c.Transport
	if rt == nil {
		rt = kafka.DefaultTransport
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	m, err := rt.RoundTrip(ctx, c.Addr, &fetchAPI.Request{ReplicaID: -1, MaxWaitTime: 500, MinBytes: 1, MaxBytes: 1 << 20,
		IsolationLevel: int8(kafka.ReadCommitted), SessionID: -1, SessionEpoch: -1,
		Topics: []fetchAPI.RequestTopic{{Topic: topic, Partitions: []fetchAPI.RequestPartition{{
			Partition: int32(p), CurrentLeaderEpoch: -1, FetchOffset: off, LogStartOffset: -1, PartitionMaxBytes: 1 << 20}}}}})
	if err != nil {
		return nil, err
	}
	res, ok := m.(*fetchAPI.Response)
	if !ok || len(res.Topics) == 0 || len(res.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("fetch: an answer without the partition")
	}
	if res.ErrorCode != 0 {
		return nil, kafka.Error(res.ErrorCode)
	}
	part := &res.Topics[0].Partitions[0]
	if part.ErrorCode != 0 {
		return nil, kafka.Error(part.ErrorCode)
	}
	return part, nil
}
