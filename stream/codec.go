package stream

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Version is the format version this package writes in the "v" field of
// every message and the only one DecodeReading accepts. A consumer that sees
// another version refuses the message with reason ReasonVersion instead of
// guessing at its meaning.
const Version = 1

// MaxChannels bounds the number of values a decoded reading may carry, so
// that a hostile or broken message cannot make the decoder allocate without
// limit before the Validator compares the count with the model's channels.
const MaxChannels = 1024

// Reason codes of a RejectError: what was wrong with a reading. They are
// stable strings, used as the "reason" of dead letters and as a metrics label.
const (
	ReasonMalformed     = "malformed"      // not a JSON object of the reading schema
	ReasonVersion       = "version"        // "v" missing or not Version
	ReasonUnknownSensor = "unknown_sensor" // sensor id negative or not a node of the model
	ReasonChannels      = "channels"       // number of values differs from the model's channels
	ReasonNonFinite     = "non_finite"     // a value is NaN, ±Inf, null or overflows float64
	ReasonOffGrid       = "off_grid"       // ts is not the start of a slot
	ReasonTooOld        = "too_old"        // ts older than the accepted age, or than the sensor's window holds
	ReasonTooNew        = "too_new"        // ts later than the accepted clock skew, or far ahead of the stream
	ReasonKeyMismatch   = "key_mismatch"   // message key is not the sensor id
	ReasonOutOfRange    = "out_of_range"   // a value outside its channel's plausible range
)

// Reasons lists every reason code in a fixed order, so that metrics can
// expose a series for each of them, zero or not.
var Reasons = [...]string{
	ReasonMalformed, ReasonVersion, ReasonUnknownSensor, ReasonChannels,
	ReasonNonFinite, ReasonOffGrid, ReasonTooOld, ReasonTooNew, ReasonKeyMismatch,
	ReasonOutOfRange,
}

// RejectError says why a reading was refused. Reason is one of the Reason
// codes (machine-readable, bounded cardinality); Detail is for humans.
// A refused reading is not retried: the service dead-letters it.
type RejectError struct {
	Reason string
	Detail string
}

// Error returns the reason and the detail, for logs.
func (e *RejectError) Error() string { return "reading rejected (" + e.Reason + "): " + e.Detail }

func reject(reason, format string, args ...any) *RejectError {
	return &RejectError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the reason code of err if it is or wraps a *RejectError,
// and "" otherwise (an internal error, not the reading's fault).
func ReasonOf(err error) string {
	var re *RejectError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}

// Reading is one sensor's values for one slot: Sensor is the node index,
// TS the slot start in Unix milliseconds and Values one value per channel on
// the original scale (0 = missing, as in training). Its message names the
// sensor by its index or, for a model whose sensors have IDs, by its ID
// (see DecodeReadingFor).
type Reading struct {
	Sensor int
	TS     int64
	Values []float64
}

// Input names a receptive node whose newest reading went into a forecast.
type Input struct {
	Sensor int `json:"sensor"`
	// ID is the sensor's ID where the model names its sensors by ID
	// (sdgnn.BundleMeta.SensorIDs): the message's "sensor" is then this
	// string rather than the index. "" for a model without IDs.
	ID string `json:"-"`
	TS int64  `json:"ts"` // slot of the newest reading of Sensor used, Unix ms
	// Missing is set when the service held no reading of Sensor at all (a
	// sensor out of service since the start): its window went in as
	// missing readings, ending at the slot before the forecast's (TS).
	Missing bool `json:"missing,omitempty"`
	// Gaps counts the slots of Sensor's window used that held no reading:
	// slots before the first reading the service holds (the first
	// forecasts after a fresh start), slots the sensor skipped, and slots
	// whose values are all 0 (missing). The model reads them as missing
	// readings, as the offline evaluation does; the whole window when
	// Missing. StaleSlots says how far a window ends behind, Gaps how
	// much of it is empty.
	Gaps int `json:"gaps,omitempty"`
}

// Forecast is a next-slot forecast for one sensor, with its provenance: the
// model version and the newest slot of each input, so that a consumer can
// judge freshness, and StaleSlots, the largest lag of an input behind the
// slot before the forecast slot (0 when every input had that slot; an
// input without any reading, Input.Missing, counts as a window behind).
type Forecast struct {
	Sensor int `json:"sensor"`
	// ID is the sensor's ID where the model names its sensors by ID: the
	// message's "sensor" (and its key) is then this string rather than
	// the index, and DecodeForecast, which knows no model, gives Sensor
	// −1 (DecodeForecastFor finds the index). "" for a model without IDs.
	ID         string    `json:"-"`
	TS         int64     `json:"ts"` // forecast slot start, Unix ms
	Values     []float64 `json:"values"`
	Model      string    `json:"model"`
	Inputs     []Input   `json:"inputs"`
	StaleSlots int64     `json:"stale_slots"`
	// Silent is set (and written, "silent":true; absent otherwise, so
	// that consumers written before it read the message as ever) when the
	// sensor's own window, the Window slots before the forecast slot, held
	// no reading at all: every slot missing (all values 0) or not
	// received, or the sensor never heard from. The forecast then comes
	// from the other receptive sensors' windows alone, weighed by the
	// model's silent weights where it has them (sdgnn.Theta.Silent) and by
	// its main weights otherwise, as the offline inference forecasts a
	// sensor silent for its whole window. The inputs' Gaps, Missing and
	// StaleSlots say the rest.
	Silent    bool  `json:"silent,omitempty"`
	EmittedMs int64 `json:"emitted_ms"` // wall clock at emission, Unix ms

	// class is the completeness class of the forecast's inputs that
	// State gave it, for the live view's breakdown (Live.RecordForecast):
	// 1 + evaluation.OwnClass×2 + (1 where another receptive window lacked
	// a reading); 0 where unknown (a forecast decoded from a message).
	class uint8
}

// DeadLetter is a refused message with why and where it came from, so that
// it can be inspected and replayed. Key and Value are the original bytes.
type DeadLetter struct {
	Reason    string
	Detail    string
	Key       []byte
	Value     []byte
	Topic     string
	Partition int32
	Offset    int64
}

// NewDeadLetter builds the dead letter of a message refused with err; the
// reason is err's RejectError reason, or "internal" for any other error.
func NewDeadLetter(err error, key, value []byte, topic string, partition int32, offset int64) DeadLetter {
	reason := ReasonOf(err)
	detail := ""
	if err != nil {
		detail = err.Error()
	}
	var re *RejectError
	if errors.As(err, &re) {
		detail = re.Detail
	}
	if reason == "" {
		reason = "internal"
	}
	return DeadLetter{Reason: reason, Detail: detail, Key: key, Value: value, Topic: topic, Partition: partition, Offset: offset}
}

// DecodeReading decodes a reading message and checks what needs no
// configuration: the JSON shape, the version, a non-negative sensor id equal
// to the key (when the key is not empty), at least one value, all values
// finite. Failures are *RejectError. Unknown fields are ignored, so that
// producers may add fields without a version change. Checks against the
// model and the clock are the Validator's.
func DecodeReading(key, value []byte) (Reading, error) {
	var r Reading
	err := DecodeReadingInto(&r, key, value)
	return r, err
}

// DecodeReadingInto is DecodeReading into *dst, reusing dst.Values' storage:
// with a dst kept across calls, decoding allocates nothing. On error *dst is
// unspecified.
func DecodeReadingInto(dst *Reading, key, value []byte) error {
	return DecodeReadingFor(dst, key, value, nil)
}

// DecodeReadingFor is DecodeReadingInto for the sensors names names (a
// model's: sdgnn.Bundle.SensorNames). Where they have IDs, the reading's
// "sensor" is looked up among the IDs only, as a JSON string or a number
// taken as its decimal text (773869 and "773869" are the same detector),
// and the key, when not empty, must be the ID; a sensor that is none of
// them is refused as ReasonUnknownSensor, naming it. Without IDs (or a
// nil names) "sensor" is the node index, a number, and the key its
// decimal digits, as DecodeReadingInto takes them. It allocates nothing on the way to a reading, as
// DecodeReadingInto.
func DecodeReadingFor(dst *Reading, key, value []byte, names *pems.SensorNames) error {
	d := decoder{b: value}
	if err := d.reading(dst, names); err != nil {
		if v, other := versionOf(value); other {
			return reject(ReasonVersion, "version %s, want %d", v, Version)
		}
		return err
	}
	if len(key) > 0 {
		return checkKey(key, dst.Sensor, names)
	}
	return nil
}

// versionOf digs the "v" field out of a message the strict decoder refused,
// so that a message of another version is reported as such, not as
// malformed. It is off the hot path.
func versionOf(value []byte) (v string, other bool) {
	var m struct {
		V *json.Number `json:"v"`
	}
	if json.Unmarshal(value, &m) != nil || m.V == nil {
		return "", false
	}
	return string(*m.V), string(*m.V) != strconv.Itoa(Version)
}

func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// decoder is a strict hand-written JSON scanner for the reading schema; it
// accepts exactly RFC 8259 JSON (plus the tokens NaN, Infinity and -Infinity
// in values, which Python's json module writes, to report them as
// non-finite rather than malformed).
type decoder struct {
	b []byte
	i int
}

const maxDepth = 64

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) malformed(what string) *RejectError {
	return reject(ReasonMalformed, "%s at byte %d", what, d.i)
}

func (d *decoder) reading(r *Reading, names *pems.SensorNames) error {
	const (
		seenV = 1 << iota
		seenSensor
		seenTS
		seenValues
	)
	var seen int
	var version int64
	var sensor sensorField
	nonFinite := -1
	r.Values = r.Values[:0]
	d.ws()
	if d.peek() != '{' {
		return d.malformed("expected a JSON object")
	}
	d.i++
	d.ws()
	if d.peek() == '}' {
		d.i++
	} else {
		for {
			d.ws()
			key, ok := d.key()
			if !ok {
				return d.malformed("expected a field name")
			}
			d.ws()
			if d.peek() != ':' {
				return d.malformed("expected ':'")
			}
			d.i++
			d.ws()
			var bit int
			var err *RejectError
			switch key {
			case "v":
				bit = seenV
				version, err = d.integer("v")
			case "sensor":
				bit = seenSensor
				err = d.sensor(&sensor)
			case "ts":
				bit = seenTS
				r.TS, err = d.integer("ts")
			case "values":
				bit = seenValues
				err = d.values(r, &nonFinite)
			default:
				if !d.skip(0) {
					err = d.malformed("bad value of field " + strconv.Quote(key))
				}
			}
			if err != nil {
				return err
			}
			if bit != 0 {
				if seen&bit != 0 {
					return d.malformed("duplicate field " + strconv.Quote(key))
				}
				seen |= bit
			}
			d.ws()
			c := d.peek()
			d.i++
			if c == '}' {
				break
			}
			if c != ',' {
				d.i--
				return d.malformed("expected ',' or '}'")
			}
		}
	}
	d.ws()
	if d.i != len(d.b) {
		return d.malformed("data after the object")
	}
	if seen&seenV == 0 {
		return reject(ReasonVersion, "field \"v\" missing, want %d", Version)
	}
	if version != Version {
		return reject(ReasonVersion, "version %d, want %d", version, Version)
	}
	for _, f := range [...]struct {
		bit  int
		name string
	}{{seenSensor, "sensor"}, {seenTS, "ts"}, {seenValues, "values"}} {
		if seen&f.bit == 0 {
			return reject(ReasonMalformed, "field %q missing", f.name)
		}
	}
	z, err := sensor.index(names)
	if err != nil {
		return err
	}
	r.Sensor = z
	if len(r.Values) == 0 {
		return reject(ReasonChannels, "no values")
	}
	if nonFinite >= 0 {
		return reject(ReasonNonFinite, "values[%d] is %g: want a finite number (0 for a missing reading)", nonFinite, r.Values[nonFinite])
	}
	return nil
}

// key reads a field name. Names with escapes are decoded by encoding/json
// (rare, off the hot path).
func (d *decoder) key() (string, bool) {
	start := d.i
	if !d.str() {
		return "", false
	}
	raw := d.b[start+1 : d.i-1]
	for _, c := range raw {
		if c == '\\' {
			var s string
			if json.Unmarshal(d.b[start:d.i], &s) != nil {
				return "", false
			}
			return s, true
		}
	}
	// The switch on the result compares without allocating for the known
	// names; unknown names only reach strconv.Quote on the error path.
	switch string(raw) {
	case "v":
		return "v", true
	case "sensor":
		return "sensor", true
	case "ts":
		return "ts", true
	case "values":
		return "values", true
	}
	return "", true // a field this version does not know
}

// str skips a JSON string starting at d.i, checking escapes and control
// characters.
func (d *decoder) str() bool {
	if d.peek() != '"' {
		return false
	}
	d.i++
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			d.i++
			if d.i >= len(d.b) {
				return false
			}
			switch d.b[d.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i++
			case 'u':
				if d.i+5 > len(d.b) {
					return false
				}
				for _, h := range d.b[d.i+1 : d.i+5] {
					if !isHex(h) {
						return false
					}
				}
				d.i += 5
			default:
				return false
			}
		default:
			d.i++
		}
	}
	return false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number scans a JSON number and reports whether it is an integer literal.
func (d *decoder) number() (start int, integer, ok bool) {
	start = d.i
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
			d.i++
		}
	default:
		return start, false, false
	}
	integer = true
	if d.peek() == '.' {
		integer = false
		d.i++
		if !d.digits() {
			return start, false, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		integer = false
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !d.digits() {
			return start, false, false
		}
	}
	return start, integer, true
}

func (d *decoder) digits() bool {
	s := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > s
}

func (d *decoder) integer(name string) (int64, *RejectError) {
	start, integer, ok := d.number()
	if !ok || !integer {
		return 0, d.malformed("field " + strconv.Quote(name) + " is not an integer")
	}
	b := d.b[start:d.i]
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n int64
	for _, c := range b {
		dig := int64(c - '0')
		if n > (math.MaxInt64-dig)/10 {
			return 0, d.malformed("field " + strconv.Quote(name) + " overflows int64")
		}
		n = n*10 + dig
	}
	if neg {
		return -n, nil
	}
	return n, nil
}

func (d *decoder) values(r *Reading, nonFinite *int) *RejectError {
	if d.peek() != '[' {
		return d.malformed("field \"values\" is not an array")
	}
	d.i++
	d.ws()
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		d.ws()
		if len(r.Values) >= MaxChannels {
			return reject(ReasonChannels, "more than %d values", MaxChannels)
		}
		v, ok := d.float()
		if !ok {
			return d.malformed("bad number in \"values\"")
		}
		if (math.IsNaN(v) || math.IsInf(v, 0)) && *nonFinite < 0 {
			*nonFinite = len(r.Values)
		}
		r.Values = append(r.Values, v)
		d.ws()
		c := d.peek()
		d.i++
		if c == ']' {
			return nil
		}
		if c != ',' {
			d.i--
			return d.malformed("expected ',' or ']' in \"values\"")
		}
	}
}

func (d *decoder) literal(s string) bool {
	if len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

func (d *decoder) float() (float64, bool) {
	switch {
	case d.literal("NaN"), d.literal("null"):
		return math.NaN(), true
	case d.literal("Infinity"):
		return math.Inf(1), true
	case d.literal("-Infinity"):
		return math.Inf(-1), true
	}
	start, _, ok := d.number()
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(d.b[start:d.i]), 64)
	if err != nil && !math.IsInf(v, 0) {
		return 0, false
	}
	return v, true // ±Inf on overflow: reported as non-finite
}

// skip skips any JSON value (of a field this version does not know).
func (d *decoder) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch c := d.peek(); c {
	case '"':
		return d.str()
	case '{', '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		d.i++
		d.ws()
		if d.peek() == end {
			d.i++
			return true
		}
		for {
			d.ws()
			if c == '{' {
				if !d.str() {
					return false
				}
				d.ws()
				if d.peek() != ':' {
					return false
				}
				d.i++
				d.ws()
			}
			if !d.skip(depth + 1) {
				return false
			}
			d.ws()
			n := d.peek()
			d.i++
			if n == end {
				return true
			}
			if n != ',' {
				return false
			}
		}
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	default:
		_, _, ok := d.number()
		return ok
	}
}

// EncodeReading appends the JSON message of r to dst. Non-finite values are
// written as null, which DecodeReading refuses as non-finite.
func EncodeReading(dst []byte, r *Reading) []byte {
	return EncodeReadingFor(dst, r, nil)
}

// EncodeReadingFor is EncodeReading for the sensors names names: where
// they have IDs, "sensor" is r's sensor's ID, as a JSON string.
func EncodeReadingFor(dst []byte, r *Reading, names *pems.SensorNames) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"sensor":`...)
	dst = appendSensor(dst, r.Sensor, names.ID(r.Sensor))
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, r.TS, 10)
	dst = append(dst, `,"values":`...)
	dst = appendFloats(dst, r.Values)
	return append(dst, '}')
}

// EncodeForecast appends the JSON message of f to dst; with a dst of enough
// capacity it allocates nothing. Non-finite values are written as null
// (State.Forecast never produces them).
func EncodeForecast(dst []byte, f *Forecast) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"sensor":`...)
	dst = appendSensor(dst, f.Sensor, f.ID)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, f.TS, 10)
	dst = append(dst, `,"values":`...)
	dst = appendFloats(dst, f.Values)
	dst = append(dst, `,"model":`...)
	dst = appendString(dst, f.Model)
	dst = append(dst, `,"inputs":[`...)
	for i, in := range f.Inputs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"sensor":`...)
		dst = appendSensor(dst, in.Sensor, in.ID)
		dst = append(dst, `,"ts":`...)
		dst = strconv.AppendInt(dst, in.TS, 10)
		if in.Missing {
			dst = append(dst, `,"missing":true`...)
		}
		if in.Gaps != 0 {
			dst = append(dst, `,"gaps":`...)
			dst = strconv.AppendInt(dst, int64(in.Gaps), 10)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"stale_slots":`...)
	dst = strconv.AppendInt(dst, f.StaleSlots, 10)
	if f.Silent {
		dst = append(dst, `,"silent":true`...)
	}
	dst = append(dst, `,"emitted_ms":`...)
	dst = strconv.AppendInt(dst, f.EmittedMs, 10)
	return append(dst, '}')
}

// DecodeForecast decodes a forecast message (for consumers, tests and
// tools; it is not on the service's hot path). A value written as null,
// which EncodeForecast writes for a non-finite one, decodes as NaN, not as
// a forecast of 0.
//
// A sensor named by ID (a JSON string) is given as Forecast.ID and
// Input.ID, with Sensor −1: which index it is, only its model knows (see
// DecodeForecastFor).
func DecodeForecast(value []byte) (Forecast, error) {
	var m struct {
		V *int `json:"v"`
		Forecast
		Sensor sensorJSON  `json:"sensor"` // shadows Forecast.Sensor: an index or an ID
		Values []*float64  `json:"values"` // shadows Forecast.Values: null kept apart
		Inputs []inputJSON `json:"inputs"` // shadows Forecast.Inputs: their sensors too
	}
	if err := json.Unmarshal(value, &m); err != nil {
		return Forecast{}, fmt.Errorf("decode forecast: %w", err)
	}
	if err := checkVersion(m.V); err != nil {
		return Forecast{}, fmt.Errorf("decode forecast: %w", err)
	}
	m.Forecast.Sensor, m.Forecast.ID = m.Sensor.index, m.Sensor.id
	if m.Inputs != nil {
		m.Forecast.Inputs = make([]Input, len(m.Inputs))
		for i, in := range m.Inputs {
			m.Forecast.Inputs[i] = in.Input
			m.Forecast.Inputs[i].Sensor, m.Forecast.Inputs[i].ID = in.Sensor.index, in.Sensor.id
		}
	}
	if m.Values != nil {
		m.Forecast.Values = make([]float64, len(m.Values))
		for i, v := range m.Values {
			m.Forecast.Values[i] = math.NaN()
			if v != nil {
				m.Forecast.Values[i] = *v
			}
		}
	}
	return m.Forecast, nil
}

// EncodeDeadLetter appends the JSON message of l to dst. Key and value are
// written as JSON strings when they are valid UTF-8 (readable by an
// operator, and exact: JSON escaping is lossless), else base64-encoded with
// "key_encoding" / "value_encoding" set to "base64".
func EncodeDeadLetter(dst []byte, l *DeadLetter) []byte {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, l.Reason)
	dst = append(dst, `,"detail":`...)
	dst = appendString(dst, l.Detail)
	dst = appendBytes(dst, "key", l.Key)
	dst = appendBytes(dst, "value", l.Value)
	dst = append(dst, `,"topic":`...)
	dst = appendString(dst, l.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(l.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, l.Offset, 10)
	return append(dst, '}')
}

func appendBytes(dst []byte, name string, b []byte) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	if utf8.Valid(b) {
		return appendString(dst, string(b))
	}
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	dst = append(dst, `","`...)
	dst = append(dst, name...)
	return append(dst, `_encoding":"base64"`...)
}

// DecodeDeadLetter decodes a dead-letter message, restoring the original
// key and value bytes (for replay tools and tests).
func DecodeDeadLetter(value []byte) (DeadLetter, error) {
	var m struct {
		V             *int   `json:"v"`
		Reason        string `json:"reason"`
		Detail        string `json:"detail"`
		Key           string `json:"key"`
		KeyEncoding   string `json:"key_encoding"`
		Value         string `json:"value"`
		ValueEncoding string `json:"value_encoding"`
		Topic         string `json:"topic"`
		Partition     int32  `json:"partition"`
		Offset        int64  `json:"offset"`
	}
	if err := json.Unmarshal(value, &m); err != nil {
		return DeadLetter{}, fmt.Errorf("decode dead letter: %w", err)
	}
	if err := checkVersion(m.V); err != nil {
		return DeadLetter{}, fmt.Errorf("decode dead letter: %w", err)
	}
	l := DeadLetter{Reason: m.Reason, Detail: m.Detail, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	var err error
	if l.Key, err = fromEncoding(m.Key, m.KeyEncoding); err != nil {
		return DeadLetter{}, fmt.Errorf("decode dead letter key: %w", err)
	}
	if l.Value, err = fromEncoding(m.Value, m.ValueEncoding); err != nil {
		return DeadLetter{}, fmt.Errorf("decode dead letter value: %w", err)
	}
	return l, nil
}

// checkVersion says what is wrong with a message's "v" field, or nil.
func checkVersion(v *int) error {
	if v == nil {
		return fmt.Errorf("field \"v\" missing, want %d", Version)
	}
	if *v != Version {
		return fmt.Errorf("version %d, want %d", *v, Version)
	}
	return nil
}

func fromEncoding(s, enc string) ([]byte, error) {
	switch enc {
	case "", "text":
		return []byte(s), nil
	case "base64":
		return base64.StdEncoding.DecodeString(s)
	}
	return nil, fmt.Errorf("unknown encoding %q", enc)
}

func appendFloats(dst []byte, vs []float64) []byte {
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			dst = append(dst, "null"...)
			continue
		}
		dst = strconv.AppendFloat(dst, v, 'g', -1, 64)
	}
	return append(dst, ']')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+n]...)
		}
		i += n
	}
	return append(dst, '"')
}
