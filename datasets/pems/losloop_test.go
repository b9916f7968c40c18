package pems

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadSeriesCSV(t *testing.T) {
	p := writeFile(t, t.TempDir(), "speed.csv", "\ufeff101,102, 7a\n64.5,60,1\n 62.25,59.5,70\n\n61,58,2.5\n")
	s, ids, err := ReadSeriesCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"101", "102", "7a"}) {
		t.Errorf("IDs %q, want 101, 102, 7a", ids)
	}
	if s.Steps != 3 || s.Nodes != 3 || s.Channels != 1 {
		t.Fatalf("shape (%d, %d, %d), want (3, 3, 1)", s.Steps, s.Nodes, s.Channels)
	}
	if s.At(1, 0, 0) != 62.25 || s.At(2, 2, 0) != 2.5 || s.At(0, 1, 0) != 60 {
		t.Errorf("values %v", s.Data)
	}
}

// TestReadSeriesCSVErrors: every bad table is refused with the file, the
// line and, for a cell, the column and its sensor.
func TestReadSeriesCSVErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"ragged short", "1,2,3\n4,5,6\n7,8\n", []string{"line 3", "2 columns, want 3 as in the header"}},
		{"ragged long", "1,2\n4,5,6\n", []string{"line 2", "3 columns, want 2"}},
		{"not a number", "11,12,13\n1,2,3\n4,fast,6\n", []string{"line 3, column 2 (sensor 12)", `"fast" is not a number`}},
		{"empty cell", "11,12\n1,\n", []string{"line 2, column 2 (sensor 12)", `"" is not a number`}},
		{"NaN", "11,12\nNaN,1\n", []string{"line 2, column 1 (sensor 11)", "not finite"}},
		{"infinite", "11,12\n1,+Inf\n", []string{"line 2, column 2 (sensor 12)", "not finite"}},
		{"repeated ID", "11,12,11\n1,2,3\n", []string{"line 1, column 3", `"11" repeats column 1`}},
		{"empty ID", "11,,13\n1,2,3\n", []string{"line 1, column 2", "empty sensor ID"}},
		{"header only", "11,12\n", []string{"no rows of readings"}},
		{"empty", "", []string{"empty file"}},
		{"bad quoting", "11,12\n1,\"2\n", []string{"line 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".csv", tc.text)
			_, _, err := ReadSeriesCSV(p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadLocationsCSV(t *testing.T) {
	p := writeFile(t, t.TempDir(), "loc.csv", "index,sensor_id,latitude,longitude\n0,101,34.1,-118.3\n1,102,34.2,-118.25") // no final newline, as shipped
	ids, locs, err := ReadLocationsCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"101", "102"}) || !slices.Equal(locs, []Location{{34.1, -118.3}, {34.2, -118.25}}) {
		t.Errorf("got %q %v", ids, locs)
	}
}

func TestReadLocationsCSVErrors(t *testing.T) {
	dir := t.TempDir()
	const head = "index,sensor_id,latitude,longitude\n"
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"header", "i,id,lat,lon\n0,1,2,3\n", []string{"line 1", "want \"index,sensor_id,latitude,longitude\""}},
		{"fields", head + "0,101,34.1\n", []string{"line 2", "3 fields, want 4"}},
		{"index order", head + "0,101,34,-118\n2,102,34,-118\n", []string{"line 3, column 1", `index "2", want 1`}},
		{"repeated id", head + "0,101,34,-118\n1,101,34,-118\n", []string{"line 3, column 2", `"101" repeats line 2`}},
		{"empty id", head + "0, ,34,-118\n", []string{"line 2, column 2", "empty sensor_id"}},
		{"latitude", head + "0,101,north,-118\n", []string{"line 2, column 3", "latitude", `"north" is not a number`}},
		{"longitude range", head + "0,101,34,-218\n", []string{"line 2, column 4", "longitude", "outside"}},
		{"no sensors", head, []string{"no sensors"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".csv", tc.text)
			_, _, err := ReadLocationsCSV(p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestReadWeightedCSV(t *testing.T) {
	p := writeFile(t, t.TempDir(), "adj.csv", "1,0.5,0\n0.5,1,0.25\n0,0.25,1\n")
	g, err := ReadWeightedCSV(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Edge{{0, 1, 0.5}, {1, 2, 0.25}}
	if g.Nodes != 3 || !slices.Equal(g.Edges, want) {
		t.Errorf("got %+v, want 3 nodes and edges %v", g, want)
	}
	// The propagation matrix weighs the links: row 1 has degree
	// 1 + 0.5 + 0.25, row 0 1 + 0.5, row 2 1 + 0.25.
	a := g.WeightedAdjacency()
	d := []float64{1.5, 1.75, 1.25}
	for _, c := range []struct {
		i, j int
		w    float64
	}{{0, 0, 1}, {0, 1, 0.5}, {1, 1, 1}, {1, 2, 0.25}, {2, 1, 0.25}, {0, 2, 0}} {
		if got, w := a.At(c.i, c.j), c.w/math.Sqrt(d[c.i]*d[c.j]); math.Abs(got-w) > 1e-15 {
			t.Errorf("A(%d,%d) = %v, want %v", c.i, c.j, got, w)
		}
	}
	if !a.IsSymmetric(0) || a.NNZ() != g.NormalizedAdjacency().NNZ() {
		t.Errorf("symmetric %v, NNZ %d, want the links' %d", a.IsSymmetric(0), a.NNZ(), g.NormalizedAdjacency().NNZ())
	}
}

func TestReadWeightedCSVErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"not square", "1,0.5,0\n0.5,1,0\n", []string{"2 rows of 3 columns", "must be square"}},
		{"ragged", "1,0.5\n0.5\n", []string{"line 2", "1 columns, want 2"}},
		{"not a number", "1,0.5\n0.5,x\n", []string{"line 2, column 2"}},
		{"asymmetric", "1,0.5,0\n0.5,1,0.3\n0,0.25,1\n", []string{"line 2, column 3", "row 3, column 2 holds 0.25", "symmetric"}},
		{"one direction", "1,0.5\n0,1\n", []string{"line 1, column 2", "symmetric"}},
		{"negative", "1,-0.5\n-0.5,1\n", []string{"line 1, column 2", "negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".csv", tc.text)
			_, err := ReadWeightedCSV(p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, p) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// losLike writes a tiny dataset in Los-loop's layout under dir/los-loop,
// 3 sensors and 4 steps, and returns its Info (Los-loop's, but for the
// node count) and files.
func losLike(t *testing.T, dir string) (Info, Files) {
	t.Helper()
	sub := filepath.Join(dir, "los-loop")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	files := Files{
		Series:    writeFile(t, sub, "los_speed.csv", "101,102,103\n60,61,62\n59,60,61\n58,59,60\n57,58,59\n"),
		Graph:     writeFile(t, sub, "los_adj.csv", "1,0.5,0\n0.5,1,0.2\n0,0.2,1\n"),
		Locations: writeFile(t, sub, "graph_sensor_locations.csv", "index,sensor_id,latitude,longitude\n0,101,34.1,-118.3\n1,102,34.2,-118.2\n2,103,34.3,-118.1"),
	}
	in, err := Lookup("los-loop")
	if err != nil {
		t.Fatal(err)
	}
	in.Nodes = 3
	return in, files
}

func TestLoadLosLoopLayout(t *testing.T) {
	in, files := losLike(t, t.TempDir())
	ds, err := LoadFrom(in, files)
	if err != nil {
		t.Fatal(err)
	}
	if s := ds.Series; s.Steps != 4 || s.Nodes != 3 || s.Channels != 1 || s.At(3, 2, 0) != 59 {
		t.Errorf("series (%d, %d, %d) ending %v", s.Steps, s.Nodes, s.Channels, s.Data[len(s.Data)-1])
	}
	if !slices.Equal(ds.SensorIDs, []string{"101", "102", "103"}) || len(ds.Locations) != 3 || ds.Locations[2] != (Location{34.3, -118.1}) {
		t.Errorf("sensors %q at %v", ds.SensorIDs, ds.Locations)
	}
	if !slices.Equal(ds.Graph.Edges, []Edge{{0, 1, 0.5}, {1, 2, 0.2}}) {
		t.Errorf("edges %v", ds.Graph.Edges)
	}
	// Without its locations file, the IDs come from the header alone.
	files.Locations = ""
	if ds, err := LoadFrom(in, files); err != nil || len(ds.SensorIDs) != 3 || ds.Locations != nil {
		t.Errorf("without locations: %v, IDs %q, locations %v", err, ds.SensorIDs, ds.Locations)
	}
}

// TestLoadLosLoopBadFiles: each bad file of the layout is refused with an
// error naming the dataset, the file, and where in it.
func TestLoadLosLoopBadFiles(t *testing.T) {
	for _, tc := range []struct {
		name string
		file func(Files) string // the file the case rewrites
		text string
		want []string
	}{
		{"ragged series row", func(f Files) string { return f.Series }, "101,102,103\n60,61,62\n59,60\n", []string{"line 3", "2 columns, want 3"}},
		{"non-numeric reading", func(f Files) string { return f.Series }, "101,102,103\n60,61,62\n59,n/a,61\n", []string{"line 3, column 2 (sensor 102)", `"n/a"`}},
		{"series of other sensors", func(f Files) string { return f.Series }, "101,102\n60,61\n", []string{"series has 2 nodes, want 3"}},
		{"ID mismatch", func(f Files) string { return f.Locations }, "index,sensor_id,latitude,longitude\n0,101,34.1,-118.3\n1,103,34.2,-118.2\n2,102,34.3,-118.1\n",
			[]string{"line 3", `sensor_id "103"`, "column 2 of", `header is "102"`}},
		{"locations of fewer sensors", func(f Files) string { return f.Locations }, "index,sensor_id,latitude,longitude\n0,101,34.1,-118.3\n", []string{"1 sensor,", "has 3 sensors"}},
		{"non-square matrix", func(f Files) string { return f.Graph }, "1,0.5,0\n0.5,1,0.2\n", []string{"2 rows of 3 columns", "square"}},
		{"matrix of other sensors", func(f Files) string { return f.Graph }, "1,0.5\n0.5,1\n", []string{"graph has 2 nodes but series"}},
		{"non-numeric weight", func(f Files) string { return f.Graph }, "1,0.5,0\n0.5,1,0.2\n0,near,1\n", []string{"line 3, column 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, files := losLike(t, t.TempDir())
			bad := tc.file(files)
			if err := os.WriteFile(bad, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadFrom(in, files)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range append(tc.want, "los-loop", bad) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoadLosLoopMissingSeries(t *testing.T) {
	dir := t.TempDir()
	_, files := losLike(t, dir)
	if err := os.Remove(files.Series); err != nil {
		t.Fatal(err)
	}
	_, err := Load(dir, "los-loop")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "los-loop/los_speed.csv not found") ||
		!strings.Contains(err.Error(), "-fetch los-loop") || strings.Contains(err.Error(), "rename") {
		t.Errorf("error %v, want the missing file and how to fetch it, not a rename of its other files", err)
	}
}

// TestLosLoopStart: the series starts at midnight in Los Angeles, which in
// that week (before daylight saving time began on 2012-03-11) is 08:00
// UTC, and ends on 2012-03-07 at 23:55 local time.
func TestLosLoopStart(t *testing.T) {
	in, err := Lookup("los-loop")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2012, 3, 1, 8, 0, 0, 0, time.UTC); !in.Start.Equal(want) {
		t.Errorf("start %v, want %v", in.Start, want)
	}
	last := in.Start.Add(2015 * time.Duration(in.StepMinutes) * time.Minute)
	if got := last.Format("2006-01-02 15:04 MST"); got != "2012-03-07 23:55 PST" {
		t.Errorf("last step at %s, want 2012-03-07 23:55 PST", got)
	}
	if in.Start.Weekday() != time.Thursday {
		t.Errorf("2012-03-01 is a %v, want Thursday", in.Start.Weekday())
	}
}

func TestRealLosLoop(t *testing.T) {
	dir := realDir(t)
	ds, err := Load(dir, "los-loop")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Series
	if s.Steps != 2016 || s.Nodes != 207 || s.Channels != 1 {
		t.Fatalf("shape (%d, %d, %d), want (2016, 207, 1)", s.Steps, s.Nodes, s.Channels)
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, v := range s.Data {
		lo, hi, sum = min(lo, v), max(hi, v), sum+v
	}
	if lo != 1 || hi != 70 || math.Abs(sum/float64(len(s.Data))-58.9) > 0.05 {
		t.Errorf("speeds %v to %v, mean %v; want 1 to 70, mean 58.9", lo, hi, sum/float64(len(s.Data)))
	}
	if len(ds.SensorIDs) != 207 || ds.SensorIDs[0] != "773869" || ds.SensorIDs[206] != "769373" {
		t.Errorf("sensor IDs %d, first %q, last %q", len(ds.SensorIDs), ds.SensorIDs[0], ds.SensorIDs[len(ds.SensorIDs)-1])
	}
	if len(ds.Locations) != 207 || ds.Locations[0] != (Location{34.15497, -118.31829}) {
		t.Errorf("locations %d, first %v", len(ds.Locations), ds.Locations[0])
	}
	g := ds.Graph
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	wlo, whi, _ := g.CostRange()
	if len(g.Edges) != (2833-207)/2 || wlo < 0.1 || whi > 1 {
		t.Errorf("%d links weighing %v to %v, want %d in [0.1, 1]", len(g.Edges), wlo, whi, (2833-207)/2)
	}
	if a := g.WeightedAdjacency(); !a.IsSymmetric(1e-15) || a.NNZ() != 2833 {
		t.Errorf("weighted adjacency: symmetric %v, NNZ %d, want 2833", a.IsSymmetric(1e-15), a.NNZ())
	}
}
