package pems

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Location is a sensor's position in degrees (WGS 84, as the releases
// give it): latitude north, longitude east. Model files record it as
// {"lat": …, "lon": …}.
type Location struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// locationsHeader is the header of a locations file, METR-LA's
// graph_sensor_locations.csv.
var locationsHeader = []string{"index", "sensor_id", "latitude", "longitude"}

// ReadLocationsCSV reads the sensors' IDs and locations from the file at
// path, in the layout of METR-LA's graph_sensor_locations.csv that
// Los-loop ships: a header "index,sensor_id,latitude,longitude" and one row
// per sensor in node order, index counting from 0. Errors name the file,
// the line and the column: a wrong header, a row with other than four
// fields, an index out of order, an empty or repeated ID, a coordinate
// that is not a number or out of range.
func ReadLocationsCSV(path string) ([]string, []Location, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	ids, locs, err := readLocations(f)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ids, locs, nil
}

func readLocations(r io.Reader) ([]string, []Location, error) {
	cr := newCSVReader(r)
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, nil, fmt.Errorf("empty file, want the header %s and a row per sensor", strings.Join(locationsHeader, ","))
	}
	if err != nil {
		return nil, nil, err
	}
	if !isLocationsHeader(rec) {
		return nil, nil, fmt.Errorf("line 1: header %q, want %q", strings.Join(rec, ","), strings.Join(locationsHeader, ","))
	}
	var (
		ids  []string
		locs []Location
		seen = map[string]int{}
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(locationsHeader) {
			return nil, nil, fmt.Errorf("line %d: %d fields, want %d (%s)", line, len(rec), len(locationsHeader), strings.Join(locationsHeader, ","))
		}
		if i, err := strconv.Atoi(strings.TrimSpace(rec[0])); err != nil || i != len(ids) {
			return nil, nil, fmt.Errorf("line %d, column 1: index %q, want %d (rows in node order from 0)", line, rec[0], len(ids))
		}
		id := strings.TrimSpace(rec[1])
		if id == "" {
			return nil, nil, fmt.Errorf("line %d, column 2: empty sensor_id", line)
		}
		if l, ok := seen[id]; ok {
			return nil, nil, fmt.Errorf("line %d, column 2: sensor_id %q repeats line %d", line, id, l)
		}
		seen[id] = line
		lat, err := coordinate(rec[2], 90)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d, column 3: latitude: %w", line, err)
		}
		lon, err := coordinate(rec[3], 180)
		if err != nil {
			return nil, nil, fmt.Errorf("line %d, column 4: longitude: %w", line, err)
		}
		ids = append(ids, id)
		locs = append(locs, Location{Lat: lat, Lon: lon})
	}
	if len(ids) == 0 {
		return nil, nil, errors.New("no sensors after the header")
	}
	return ids, locs, nil
}

func isLocationsHeader(rec []string) bool {
	if len(rec) != len(locationsHeader) {
		return false
	}
	for k, want := range locationsHeader {
		got := strings.TrimSpace(rec[k])
		if k == 0 {
			got = strings.TrimPrefix(got, "\ufeff")
		}
		if !strings.EqualFold(got, want) {
			return false
		}
	}
	return true
}

// coordinate parses a coordinate in degrees within ±limit.
func coordinate(s string, limit float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if !(math.Abs(v) <= limit) {
		return 0, fmt.Errorf("%v outside [−%g, %g] degrees", v, limit, limit)
	}
	return v, nil
}
