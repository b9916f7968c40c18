package pems

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// SensorNames names the sensors of a dataset or a model where the system
// meets the outside (messages, URLs, CSV files, tables, figures), while
// everything inside works with node indices: by the IDs the release gives
// them (Los-loop's detector IDs, "773869"), or, where it gives none (PeMS,
// SZ-taxi), by their decimal indices "0" … "N−1". Build one once and
// share it: its methods only read, and are safe for concurrent use.
//
// A nil *SensorNames names sensors by index, with no upper bound: Len is
// 0 and Index takes any index up to math.MaxInt32.
type SensorNames struct {
	n     int
	ids   []string
	index map[string]int
}

// NewSensorNames returns the names of n sensors: ids, one per sensor in
// node order, or their indices where ids is nil. IDs must be as
// CheckSensors wants them.
func NewSensorNames(n int, ids []string) (*SensorNames, error) {
	if n < 1 {
		return nil, fmt.Errorf("sensor names: %d sensors, want at least 1", n)
	}
	if err := CheckSensors(n, ids, nil); err != nil {
		return nil, fmt.Errorf("sensor names: %w", err)
	}
	s := &SensorNames{n: n}
	if ids != nil {
		s.ids = ids
		s.index = make(map[string]int, n)
		for i, id := range ids {
			s.index[id] = i
		}
	}
	return s, nil
}

// CheckSensors reports what is wrong with the sensor IDs and locations
// of n sensors, as model files record them: either may be nil (none
// recorded); otherwise there must be one per sensor, the IDs non-empty,
// distinct, without control characters and at most MaxSensorID bytes,
// the coordinates finite degrees (latitude within ±90, longitude ±180).
func CheckSensors(n int, ids []string, locs []Location) error {
	if ids != nil && len(ids) != n {
		return fmt.Errorf("%d sensor IDs for %d sensors", len(ids), n)
	}
	seen := make(map[string]int, len(ids))
	for i, id := range ids {
		if err := checkID(id); err != nil {
			return fmt.Errorf("sensor ID %d %q: %w", i, id, err)
		}
		if j, ok := seen[id]; ok {
			return fmt.Errorf("sensor ID %q names sensors %d and %d", id, j, i)
		}
		seen[id] = i
	}
	if locs != nil && len(locs) != n {
		return fmt.Errorf("%d sensor locations for %d sensors", len(locs), n)
	}
	for i, l := range locs {
		if !(math.Abs(l.Lat) <= 90) || !(math.Abs(l.Lon) <= 180) {
			return fmt.Errorf("sensor %d: location (%v, %v) is not a latitude within ±90° and a longitude within ±180°", i, l.Lat, l.Lon)
		}
	}
	return nil
}

// MaxSensorID is the longest sensor ID, in bytes, that CheckSensors
// takes: IDs travel as message keys and in URLs.
const MaxSensorID = 256

func checkID(id string) error {
	if id == "" {
		return errors.New("empty")
	}
	if len(id) > MaxSensorID {
		return fmt.Errorf("%d bytes, more than %d", len(id), MaxSensorID)
	}
	for _, c := range []byte(id) {
		if c < 0x20 || c == 0x7f {
			return errors.New("holds a control character")
		}
	}
	return nil
}

// Len returns the number of sensors (0 for a nil s).
func (s *SensorNames) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// HasIDs reports whether the sensors are named by IDs rather than by
// their indices.
func (s *SensorNames) HasIDs() bool { return s != nil && s.ids != nil }

// IDs returns the sensors' IDs in node order (the SensorNames' own: do
// not change them), or nil where they are named by index.
func (s *SensorNames) IDs() []string {
	if s == nil {
		return nil
	}
	return s.ids
}

// Name returns sensor i's name: its ID, or its decimal index. With IDs,
// i must be a sensor, 0 ≤ i < Len(): another panics, as indexing does.
func (s *SensorNames) Name(i int) string {
	if s.HasIDs() {
		return s.ids[i]
	}
	return strconv.Itoa(i)
}

// ID returns sensor i's ID, or "" where the sensors are named by index
// (or i is not a sensor): what a message writes as a string rather than
// as the index.
func (s *SensorNames) ID(i int) string {
	if !s.HasIDs() || i < 0 || i >= s.n {
		return ""
	}
	return s.ids[i]
}

// Index returns the index of the sensor named name, and whether there is
// one. With IDs, name must be one of them, exactly; without, it must be
// an index in decimal digits, without a sign or a leading zero ("0",
// "12"), below Len().
func (s *SensorNames) Index(name string) (int, bool) {
	if s.HasIDs() {
		i, ok := s.index[name]
		return i, ok
	}
	return decimalIndex(name, s.Len())
}

// IndexBytes is Index for a name held in bytes (a message's key or field),
// without allocating.
func (s *SensorNames) IndexBytes(name []byte) (int, bool) {
	if s.HasIDs() {
		i, ok := s.index[string(name)] // no allocation: the compiler looks up the bytes
		return i, ok
	}
	return decimalIndex(name, s.Len())
}

// decimalIndex parses an index in canonical decimal below n (any index
// up to math.MaxInt32 when n is 0).
func decimalIndex[T string | []byte](name T, n int) (int, bool) {
	if len(name) == 0 || len(name) > 10 || len(name) > 1 && name[0] == '0' {
		return 0, false
	}
	v := 0
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if v > math.MaxInt32 || n > 0 && v >= n {
		return 0, false
	}
	return v, true
}

// Describe says how the sensors are named, for messages: "207 sensor IDs
// (773869, 767541, …)" or "sensors 0 to 306".
func (s *SensorNames) Describe() string {
	if !s.HasIDs() {
		if s.Len() == 0 {
			return "sensor indices"
		}
		return fmt.Sprintf("sensors 0 to %d", s.n-1)
	}
	switch s.n {
	case 1:
		return fmt.Sprintf("1 sensor ID (%s)", s.ids[0])
	case 2:
		return fmt.Sprintf("2 sensor IDs (%s, %s)", s.ids[0], s.ids[1])
	}
	return fmt.Sprintf("%d sensor IDs (%s, %s, …)", s.n, s.ids[0], s.ids[1])
}

// Names returns the names of ds's sensors: its IDs, or its indices.
func (ds *Dataset) Names() (*SensorNames, error) {
	return NewSensorNames(ds.Series.Nodes, ds.SensorIDs)
}

// CompareSensorIDs reports how the sensor IDs a model recorded differ from
// those of the data it is used with, naming the first that differs: node
// indices chosen on one set of sensors name others on the other. A model
// that recorded none (written before models kept them, or trained on
// data without IDs) is not checked.
func CompareSensorIDs(model, data []string) error {
	switch {
	case model == nil:
		return nil
	case data == nil:
		return fmt.Errorf("the model names its %d sensors by ID (%s, …), the data by index", len(model), model[0])
	case len(model) != len(data):
		return fmt.Errorf("the model has %d sensor IDs, the data %d", len(model), len(data))
	}
	for i := range model {
		if model[i] != data[i] {
			return fmt.Errorf("sensor %d is %q in the model, %q in the data", i, model[i], data[i])
		}
	}
	return nil
}
