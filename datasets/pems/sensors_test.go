package pems

import (
	"strings"
	"testing"
)

func TestSensorNames(t *testing.T) {
	ids, err := NewSensorNames(3, []string{"773869", "767541", "7a"})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := NewSensorNames(3, nil)
	if err != nil {
		t.Fatal(err)
	}
	var unbounded *SensorNames
	for _, tc := range []struct {
		names *SensorNames
		name  string
		want  int
		ok    bool
	}{
		{ids, "773869", 0, true},
		{ids, "7a", 2, true},
		{ids, "0", 0, false}, // with IDs, an index is not a name
		{ids, "77386", 0, false},
		{ids, " 773869", 0, false},
		{idx, "0", 0, true},
		{idx, "2", 2, true},
		{idx, "3", 0, false},
		{idx, "01", 0, false},
		{idx, "+1", 0, false},
		{idx, "-0", 0, false},
		{idx, "", 0, false},
		{idx, "773869", 0, false},
		{unbounded, "773869", 773869, true},
		{unbounded, "2147483647", 2147483647, true},
		{unbounded, "2147483648", 0, false},
		{unbounded, "99999999999", 0, false},
	} {
		i, ok := tc.names.Index(tc.name)
		if ok != tc.ok || ok && i != tc.want {
			t.Errorf("%s Index(%q) = %d, %v; want %d, %v", tc.names.Describe(), tc.name, i, ok, tc.want, tc.ok)
		}
		j, ok2 := tc.names.IndexBytes([]byte(tc.name))
		if ok2 != ok || j != i {
			t.Errorf("%s IndexBytes(%q) = %d, %v; Index gives %d, %v", tc.names.Describe(), tc.name, j, ok2, i, ok)
		}
	}
	if ids.Name(1) != "767541" || ids.ID(1) != "767541" || ids.ID(3) != "" || !ids.HasIDs() {
		t.Errorf("ids: Name(1) %q, ID(1) %q, ID(3) %q, HasIDs %v", ids.Name(1), ids.ID(1), ids.ID(3), ids.HasIDs())
	}
	if idx.Name(2) != "2" || idx.ID(2) != "" || idx.HasIDs() || idx.IDs() != nil {
		t.Errorf("indices: Name(2) %q, ID(2) %q, HasIDs %v", idx.Name(2), idx.ID(2), idx.HasIDs())
	}
	if d := ids.Describe(); d != "3 sensor IDs (773869, 767541, …)" {
		t.Errorf("Describe %q", d)
	}
	if d := idx.Describe(); d != "sensors 0 to 2" {
		t.Errorf("Describe %q", d)
	}
}

func TestIndexBytesAllocates(t *testing.T) {
	ids, err := NewSensorNames(2, []string{"773869", "767541"})
	if err != nil {
		t.Fatal(err)
	}
	key := []byte("767541")
	if n := testing.AllocsPerRun(100, func() {
		if i, ok := ids.IndexBytes(key); !ok || i != 1 {
			t.Fatal(i, ok)
		}
	}); n != 0 {
		t.Errorf("IndexBytes allocates %v times", n)
	}
}

func TestCheckSensors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ids  []string
		locs []Location
		want string
	}{
		{"none", nil, nil, ""},
		{"fine", []string{"a", "b"}, []Location{{34, -118}, {-90, 180}}, ""},
		{"short", []string{"a"}, nil, "1 sensor IDs for 2 sensors"},
		{"empty", []string{"a", ""}, nil, `sensor ID 1 "": empty`},
		{"repeated", []string{"a", "a"}, nil, `"a" names sensors 0 and 1`},
		{"control", []string{"a", "b\n"}, nil, "control character"},
		{"long", []string{"a", strings.Repeat("x", MaxSensorID+1)}, nil, "more than 256"},
		{"locations short", nil, []Location{{1, 2}}, "1 sensor locations for 2 sensors"},
		{"latitude", nil, []Location{{1, 2}, {91, 0}}, "sensor 1: location (91, 0)"},
		{"longitude", nil, []Location{{1, 2}, {0, -180.5}}, "sensor 1: location"},
	} {
		err := CheckSensors(2, tc.ids, tc.locs)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestCompareSensorIDs(t *testing.T) {
	for _, tc := range []struct {
		model, data []string
		want        string
	}{
		{nil, []string{"a"}, ""},
		{nil, nil, ""},
		{[]string{"a", "b"}, []string{"a", "b"}, ""},
		{[]string{"a", "b"}, nil, "by ID (a, …), the data by index"},
		{[]string{"a", "b"}, []string{"a"}, "2 sensor IDs, the data 1"},
		{[]string{"a", "b"}, []string{"a", "c"}, `sensor 1 is "b" in the model, "c" in the data`},
	} {
		err := CompareSensorIDs(tc.model, tc.data)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q against %q: %v", tc.model, tc.data, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q against %q: error %v, want %q", tc.model, tc.data, err, tc.want)
		}
	}
}
