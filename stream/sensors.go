package stream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Sensors are named at the edges of the service, inside they are node
// indices: a reading's "sensor" and key, a forecast's "sensor", its key
// and its inputs', the paths and queries of the HTTP API and the CSV
// files name a sensor by its ID where the model has IDs
// (sdgnn.BundleMeta.SensorIDs), else by its index (pems.SensorNames).

// sensorField is a reading's "sensor" as the decoder found it: a number
// (num, its text raw) or a string (its bytes between the quotes raw, and
// with them quoted, for one with escapes).
type sensorField struct {
	num    int64
	isNum  bool
	raw    []byte
	quoted []byte
}

// sensor reads the "sensor" field's value: an integer or a string.
func (d *decoder) sensor(f *sensorField) *RejectError {
	start := d.i
	if d.peek() == '"' {
		if !d.str() {
			return d.malformed(`field "sensor" is not a valid string`)
		}
		*f = sensorField{raw: d.b[start+1 : d.i-1], quoted: d.b[start:d.i]}
		return nil
	}
	n, err := d.integer("sensor")
	if err != nil {
		return err
	}
	*f = sensorField{num: n, isNum: true, raw: d.b[start:d.i]}
	return nil
}

// index returns the node index f names among names (see
// DecodeReadingFor). Without IDs it is a number, the index, checked
// against the model's sensors by the Validator, as before names were
// kept.
func (f *sensorField) index(names *pems.SensorNames) (int, *RejectError) {
	if !names.HasIDs() {
		if !f.isNum {
			return 0, reject(ReasonMalformed, `field "sensor" is the string %q: the model names its sensors by index, a number`, truncate(f.raw))
		}
		if f.num < 0 || f.num > math.MaxInt32 {
			return 0, reject(ReasonUnknownSensor, "sensor %d", f.num)
		}
		return int(f.num), nil
	}
	name := f.raw
	if bytes.IndexByte(f.raw, '\\') >= 0 { // rare: decoded off the hot path
		var s string
		if json.Unmarshal(f.quoted, &s) != nil {
			return 0, reject(ReasonMalformed, `field "sensor" is not a valid string`)
		}
		name = []byte(s)
	}
	z, ok := names.IndexBytes(name)
	if !ok {
		return 0, unknownSensor(string(name), names)
	}
	return z, nil
}

// unknownSensor is the rejection of a reading of a sensor that names
// does not name.
func unknownSensor(name string, names *pems.SensorNames) *RejectError {
	if len(name) > 64 {
		name = name[:64] + "…"
	}
	return reject(ReasonUnknownSensor, "sensor %q is not one of the model's %s", name, names.Describe())
}

// checkKey reports whether a reading's key names its sensor z: its ID,
// or its index in decimal digits.
func checkKey(key []byte, z int, names *pems.SensorNames) error {
	if names.HasIDs() {
		if id := names.Name(z); string(key) != id {
			return reject(ReasonKeyMismatch, "key %q is not the sensor's ID %q", truncate(key), id)
		}
		return nil
	}
	if k, ok := parseDecimal(key); !ok || k != int64(z) {
		return reject(ReasonKeyMismatch, "key %q is not the sensor id %d", truncate(key), z)
	}
	return nil
}

// appendSensor appends a sensor as messages name it: its ID as a JSON
// string where it has one, else its index.
func appendSensor(dst []byte, index int, id string) []byte {
	if id != "" {
		return appendString(dst, id)
	}
	return strconv.AppendInt(dst, int64(index), 10)
}

// appendKey appends a sensor's message key: its ID, or its index in
// decimal digits.
func appendKey(dst []byte, index int, id string) []byte {
	if id != "" {
		return append(dst, id...)
	}
	return strconv.AppendInt(dst, int64(index), 10)
}

// sensorJSON is a forecast's "sensor" for encoding/json: an index, or an
// ID (index −1).
type sensorJSON struct {
	index int
	id    string
}

// UnmarshalJSON implements json.Unmarshaler.
func (s *sensorJSON) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		s.index = -1
		return json.Unmarshal(b, &s.id)
	}
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &s.index)
}

// inputJSON is a forecast's input for encoding/json, its sensor an index
// or an ID.
type inputJSON struct {
	Input
	Sensor sensorJSON `json:"sensor"`
}

// Name returns the forecast's sensor as its message names it: its ID, or
// its index in decimal digits.
func (f *Forecast) Name() string {
	if f.ID != "" {
		return f.ID
	}
	return strconv.Itoa(f.Sensor)
}

// Name returns the input's sensor as its message names it: its ID, or its
// index in decimal digits.
func (in *Input) Name() string {
	if in.ID != "" {
		return in.ID
	}
	return strconv.Itoa(in.Sensor)
}

// DecodeForecastFor is DecodeForecast for a model whose sensors names
// names: the forecast's sensor and its inputs', named by ID where the
// model has IDs, are given their indices. A sensor named otherwise than
// the model names them (by index where it has IDs, by an ID where it has
// none), or that is none of its sensors, is an error.
func DecodeForecastFor(value []byte, names *pems.SensorNames) (Forecast, error) {
	f, err := DecodeForecast(value)
	if err != nil {
		return Forecast{}, err
	}
	if f.Sensor, err = sensorIndex(f.Sensor, f.ID, names); err != nil {
		return Forecast{}, fmt.Errorf("decode forecast: %w", err)
	}
	for i := range f.Inputs {
		in := &f.Inputs[i]
		if in.Sensor, err = sensorIndex(in.Sensor, in.ID, names); err != nil {
			return Forecast{}, fmt.Errorf("decode forecast: input %d: %w", i, err)
		}
	}
	return f, nil
}

// sensorIndex returns the index of the sensor a decoded forecast names by
// index or id among names.
func sensorIndex(index int, id string, names *pems.SensorNames) (int, error) {
	if names.HasIDs() {
		if id == "" {
			return 0, fmt.Errorf("sensor %d named by index: the model names its sensors by ID", index)
		}
		z, ok := names.Index(id)
		if !ok {
			return 0, fmt.Errorf("sensor %q is not one of the model's %s", id, names.Describe())
		}
		return z, nil
	}
	if id != "" {
		return 0, fmt.Errorf("sensor %q named by ID: the model names its sensors by index", id)
	}
	if index < 0 || names.Len() > 0 && index >= names.Len() {
		return 0, fmt.Errorf("sensor %d: want %s", index, names.Describe())
	}
	return index, nil
}
