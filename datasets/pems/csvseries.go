package pems

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// ReadSeriesCSV reads a one-channel series from the table at path, in the
// layout of the T-GCN releases (Los-loop's los_speed.csv): a header row of
// the sensors' IDs, one per column in node order, then one row of readings
// per step. It returns the series, of shape (rows, columns, 1), and the IDs.
//
// Errors name the file, the line and, for a cell, the column and its
// sensor: an empty or repeated ID, a row with another number of columns
// than the header (ragged rows), a cell that is not a number, NaN or
// infinite, and a file with no row of readings.
func ReadSeriesCSV(path string) (*Series, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	s, ids, err := readSeriesCSV(f)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return s, ids, nil
}

func readSeriesCSV(r io.Reader) (*Series, []string, error) {
	cr := newCSVReader(r)
	rec, err := cr.Read()
	if err == io.EOF {
		return nil, nil, errors.New("empty file, want a header of sensor IDs and rows of readings")
	}
	if err != nil {
		return nil, nil, err
	}
	ids, err := sensorIDs(rec)
	if err != nil {
		return nil, nil, err
	}
	n := len(ids)
	var data []float64
	steps := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != n {
			return nil, nil, fmt.Errorf("line %d: %d columns, want %d as in the header (line 1)", line, len(rec), n)
		}
		for j, cell := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d, column %d (sensor %s): %q is not a number", line, j+1, ids[j], cell)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, nil, fmt.Errorf("line %d, column %d (sensor %s): reading %v is not finite", line, j+1, ids[j], v)
			}
			data = append(data, v)
		}
		steps++
	}
	if steps == 0 {
		return nil, nil, errors.New("no rows of readings after the header")
	}
	return &Series{Steps: steps, Nodes: n, Channels: 1, Data: data}, ids, nil
}

// sensorIDs checks a header row of sensor IDs and returns a copy: every ID
// present and none repeated. A UTF-8 byte order mark before the first is
// dropped.
func sensorIDs(rec []string) ([]string, error) {
	ids := make([]string, len(rec))
	col := make(map[string]int, len(rec))
	for j, id := range rec {
		if j == 0 {
			id = strings.TrimPrefix(id, "\ufeff")
		}
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, fmt.Errorf("line 1, column %d: empty sensor ID in the header", j+1)
		}
		if k, ok := col[id]; ok {
			return nil, fmt.Errorf("line 1, column %d: sensor ID %q repeats column %d", j+1, id, k+1)
		}
		col[id] = j
		ids[j] = id
	}
	return slices.Clip(ids), nil
}
