package stream

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/segmentio/kafka-go"
)

// MaxDeadLetterBytes is the most a dead letter's message (its key and
// value) takes, well within writerBatchBytes: a refused message near the
// topic's limit, whose letter (escaped, base64-encoded, with the reason)
// is larger, would otherwise be refused by the broker, retried until
// Config.RetryFor and end Run, and stop the service at every restart. A
// larger letter keeps the first bytes of the message's key, value and
// reason, and says so in its detail.
const MaxDeadLetterBytes = 256 << 10

// deadLetterMessage returns the message of the dead-letter topic for l:
// keyed by l.Key, l encoded, both cut to fit MaxDeadLetterBytes.
func deadLetterMessage(l DeadLetter) kafka.Message {
	v := EncodeDeadLetter(nil, &l)
	if len(l.Key)+len(v) <= MaxDeadLetterBytes {
		return kafka.Message{Key: l.Key, Value: v}
	}
	// Escaped, a byte takes at most 6 (\u00XX): 1 KiB of key (twice:
	// the message's key and the letter's), 1 KiB of detail and 32 KiB of
	// value fit with room to spare.
	prefix := func(b []byte, n int) []byte {
		if len(b) <= n {
			return b
		}
		if utf8.Valid(b) { // kept readable: cut at a character's start
			for n > 0 && !utf8.RuneStart(b[n]) {
				n--
			}
		}
		return b[:n]
	}
	key, value := prefix(l.Key, 1<<10), prefix(l.Value, MaxDeadLetterBytes/8)
	l.Detail = fmt.Sprintf("%s (this dead letter keeps the first %d of the key's %d bytes and %d of the value's %d)",
		strings.ToValidUTF8(string(prefix([]byte(l.Detail), 1<<10)), ""), len(key), len(l.Key), len(value), len(l.Value))
	l.Key, l.Value = key, value
	return kafka.Message{Key: key, Value: EncodeDeadLetter(nil, &l)}
}
