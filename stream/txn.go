package stream

import "encoding/binary"

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
