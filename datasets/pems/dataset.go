package pems

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // Los-loop's start in America/Los_Angeles, on machines without a zoneinfo database

	"github.com/pemsforecast/sdgnn/internal/english"
)

// Graph file formats of Info.GraphFormat.
const (
	FormatDistance  = "distance"  // edge list "from,to,cost", read by ReadDistanceCSV
	FormatAdjacency = "adjacency" // square 0/1 matrix, read by ReadAdjacencyCSV
	// FormatWeighted is a square symmetric matrix of link weights,
	// similarities where higher is closer (Los-loop's Gaussian kernel of
	// road distance), read by ReadWeightedCSV.
	FormatWeighted = "weighted"
)

// Series file formats of Info.SeriesFormat.
const (
	FormatNPZ = "npz" // NumPy archive of the PeMS release, read by ReadNPZ; also the format of an empty SeriesFormat
	// FormatCSV is the T-GCN releases' table: a header row of sensor IDs,
	// then one row of readings per step, one column per sensor, read by
	// ReadSeriesCSV.
	FormatCSV = "csv"
)

// Info describes a known dataset: where its files live under the data
// directory, its time step and its channels, so that Load can find and
// check them.
type Info struct {
	Name         string // "los-loop", "pems04", "pems08", "sz-taxi"
	SeriesFile   string // slash-separated, relative to the data directory
	SeriesFormat string // FormatNPZ (or empty) or FormatCSV
	GraphFile    string // slash-separated, relative to the data directory
	GraphFormat  string // FormatDistance, FormatAdjacency or FormatWeighted
	// LocationsFile, when set, lists the sensors' IDs and coordinates
	// (ReadLocationsCSV), in node order; slash-separated, relative to the
	// data directory.
	LocationsFile string
	StepMinutes   int      // 5 for PeMS and Los-loop, 15 for SZ-taxi
	Channels      []string // channel names in series order
	// Units are the units of the channels' readings, in Channels' order,
	// for labelling errors on the original scale: PeMS's flow in vehicles
	// per 5-minute step over all lanes, occupancy as the fraction of the
	// step a detector was occupied (0 to 1) and speed in miles per hour, as
	// Caltrans PeMS reports them; SZ-taxi's speed in km/h; Los-loop's in
	// miles per hour.
	Units []string
	Nodes int // number of sensors (graph nodes)
	// Start is the time of the series' first step. It places the steps on
	// the calendar for time-of-day and day-of-week inputs, which count
	// from Start's time of day and day. Los-loop's is in the sensors' time
	// zone, America/Los_Angeles, as its release documents. The PeMS and
	// SZ-taxi releases carry no time zone: theirs is the sensors' local
	// time labelled UTC, so that its time of day is the local one.
	Start time.Time
	// WeighLinks is set where the graph convolution weighs the links by
	// the graph's weights (FormatWeighted) unless told otherwise; unset,
	// every link weighs 1. See snapshot.Links.
	WeighLinks bool
}

// Files returns the data files of in: its series, its graph and, where it
// has one, its locations file, slash-separated and relative to the data
// directory.
func (in Info) Files() []string {
	files := []string{in.SeriesFile, in.GraphFile}
	if in.LocationsFile != "" {
		files = append(files, in.LocationsFile)
	}
	return files
}

// losAngeles is the time zone of the Los-loop sensors. The zone database
// is embedded (time/tzdata), so that loading it cannot fail.
var losAngeles = mustLoadLocation("America/Los_Angeles")

func mustLoadLocation(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("pems: time zone %s: %v", name, err))
	}
	return loc
}

// pemsUnits are the units of the PeMS releases' channels.
var pemsUnits = []string{"veh/5 min", "fraction", "mph"}

// known lists the datasets, sorted by name.
var known = []Info{
	{
		Name:          "los-loop",
		SeriesFile:    "los-loop/los_speed.csv",
		SeriesFormat:  FormatCSV,
		GraphFile:     "los-loop/los_adj.csv",
		GraphFormat:   FormatWeighted,
		LocationsFile: "los-loop/graph_sensor_locations.csv",
		StepMinutes:   5,
		Channels:      []string{"speed"},
		Units:         []string{"mph"},
		Nodes:         207,
		// The first week of METR-LA: 2016 steps to 2012-03-07 23:55, all
		// before the switch to daylight saving time on 2012-03-11 (T-GCN
		// release).
		Start: time.Date(2012, 3, 1, 0, 0, 0, 0, losAngeles),
		// The GCN reads only which detectors are linked: weighing the
		// links by the matrix's weights measured the same (pems-train
		// teacher -links weights against links, 100 epochs, seeds 1-3:
		// validation MAE 2.2717 ± 0.0033 against 2.2721 ± 0.0019 mph,
		// test 2.4136 against 2.4149), and the links are the simpler
		// reading. -links weights chooses the weights.
		WeighLinks: false,
	},
	{
		Name:        "pems04",
		SeriesFile:  "pems/pems04/PEMS04.npz",
		GraphFile:   "pems/pems04/distance.csv",
		GraphFormat: FormatDistance,
		StepMinutes: 5,
		Channels:    []string{"flow", "occupancy", "speed"},
		Units:       pemsUnits,
		Nodes:       307,
		Start:       time.Date(2018, 1, 1, 0, 0, 0, 0, time.UTC), // 59 days to 2018-02-28 (ASTGCN release)
	},
	{
		Name:        "pems08",
		SeriesFile:  "pems/pems08/PEMS08.npz",
		GraphFile:   "pems/pems08/distance.csv",
		GraphFormat: FormatDistance,
		StepMinutes: 5,
		Channels:    []string{"flow", "occupancy", "speed"},
		Units:       pemsUnits,
		Nodes:       170,
		Start:       time.Date(2016, 7, 1, 0, 0, 0, 0, time.UTC), // 62 days to 2016-08-31 (ASTGCN release)
	},
	{
		Name:        "sz-taxi",
		SeriesFile:  "sz-taxi/SZ_taxi.npz",
		GraphFile:   "sz-taxi/SZ_taxi_adj.csv",
		GraphFormat: FormatAdjacency,
		StepMinutes: 15,
		Channels:    []string{"speed"},
		Units:       []string{"km/h"},
		Nodes:       156,
		Start:       time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC), // January 2015, 31 days (T-GCN release)
	},
}

// Known returns the datasets this package knows, sorted by name. The
// result is a copy that the caller may modify.
func Known() []Info {
	out := make([]Info, len(known))
	for i, in := range known {
		in.Channels = slices.Clone(in.Channels)
		in.Units = slices.Clone(in.Units)
		out[i] = in
	}
	return out
}

// Lookup returns the Info of the named dataset; the name is matched
// without regard to case. The error for an unknown name lists the known
// ones.
func Lookup(name string) (Info, error) {
	for _, in := range Known() {
		if strings.EqualFold(in.Name, strings.TrimSpace(name)) {
			return in, nil
		}
	}
	return Info{}, fmt.Errorf("unknown dataset %q (known: %s)", name, strings.Join(knownNames(), ", "))
}

// ChannelUnits returns the units of the named known dataset's channels
// (Info.Units) when channels are its channels, in its order, as a model
// file records them; nil otherwise (a dataset of one's own, whose units
// are not known).
func ChannelUnits(dataset string, channels []string) []string {
	in, err := Lookup(dataset)
	if err != nil || !slices.Equal(in.Channels, channels) || len(in.Units) != len(channels) {
		return nil
	}
	return in.Units
}

func knownNames() []string {
	names := make([]string, len(known))
	for i, in := range known {
		names[i] = in.Name
	}
	return names
}

// Dataset is a loaded dataset: its description, its series and its road
// graph, checked against each other.
type Dataset struct {
	Info   Info
	Series *Series
	Graph  *Graph
	// SensorIDs are the sensors' IDs as the release names them, in node
	// order (Los-loop's detector IDs, from its series' header and its
	// locations file); nil where the release names none (PeMS, SZ-taxi),
	// whose sensors are known by their node indices 0..N−1.
	SensorIDs []string
	// Locations are the sensors' coordinates, in node order; nil where
	// the release gives none.
	Locations []Location
}

// Files names the files a dataset is loaded from. Locations is optional.
type Files struct {
	Series, Graph, Locations string
}

// Load reads the named known dataset from the data directory dir (see
// ResolveDataDir) and checks it as LoadFrom does. If the series file is
// missing, the error names the file and dir and, for PeMS04 and PeMS08,
// says that their series are not yet in shared/datasets; it wraps
// fs.ErrNotExist.
func Load(dir, name string) (*Dataset, error) {
	info, err := Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	seriesPath := filepath.Join(dir, filepath.FromSlash(info.SeriesFile))
	if _, err := os.Stat(seriesPath); errors.Is(err, fs.ErrNotExist) {
		note := ""
		if others := strayFiles(dir, info); len(others) > 0 {
			note = fmt.Sprintf(" (its directory holds %s: rename the series file to %s)", strings.Join(others, ", "), filepath.Base(seriesPath))
		} else if strings.HasPrefix(info.Name, "pems") {
			note = "; the PeMS04 and PeMS08 series are not yet in shared/datasets (see its README.md): develop on sz-taxi or on small files of the same layout"
		} else {
			note = fmt.Sprintf(" (pems-train datasets -fetch %s downloads it)", info.Name)
		}
		return nil, fmt.Errorf("load %s: series file %s not found under %s%s: %w", info.Name, info.SeriesFile, dir, note, fs.ErrNotExist)
	}
	files := Files{Series: seriesPath, Graph: filepath.Join(dir, filepath.FromSlash(info.GraphFile))}
	if info.LocationsFile != "" {
		files.Locations = filepath.Join(dir, filepath.FromSlash(info.LocationsFile))
	}
	return LoadFrom(info, files) // LoadFrom names the dataset
}

// strayFiles returns the names of the files beside in's series file, in
// dir, with the series file's extension that are none of in's files: a
// series under another name.
func strayFiles(dir string, in Info) []string {
	series := filepath.Join(dir, filepath.FromSlash(in.SeriesFile))
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(series), "*"+path.Ext(in.SeriesFile)))
	var out []string
	for _, m := range matches {
		rel, err := filepath.Rel(dir, m)
		if err == nil && slices.Contains(in.Files(), filepath.ToSlash(rel)) {
			continue
		}
		out = append(out, filepath.Base(m))
	}
	return out
}

// LoadFiles is LoadFrom without a locations file.
func LoadFiles(info Info, seriesPath, graphPath string) (*Dataset, error) {
	return LoadFrom(info, Files{Series: seriesPath, Graph: graphPath})
}

// LoadFrom reads a dataset described by info from explicit paths, so that
// user datasets in a release layout can be loaded: the series as
// info.SeriesFormat says (ReadNPZ or ReadSeriesCSV), the graph as
// info.GraphFormat says, and the locations, when files.Locations is set,
// with ReadLocationsCSV. It checks that the series has info.Nodes nodes
// (when info.Nodes > 0; otherwise the series sets it), len(info.Channels)
// channels (when Channels is not empty) and that the graph has as many
// nodes as the series: for an edge list (FormatDistance), which does not
// state its node count, that it has edges and that they name the series'
// last node. The locations must list the series' sensors, and where the
// series names its sensors (a CSV header), the same IDs in the same order.
func LoadFrom(info Info, files Files) (*Dataset, error) {
	ds, err := loadFrom(info, files)
	if err != nil {
		name := info.Name
		if name == "" {
			name = "dataset"
		}
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	return ds, nil
}

func loadFrom(info Info, files Files) (*Dataset, error) {
	switch info.GraphFormat {
	case FormatDistance, FormatAdjacency, FormatWeighted:
	default:
		return nil, fmt.Errorf("graph format %q, want %q, %q or %q", info.GraphFormat, FormatDistance, FormatAdjacency, FormatWeighted)
	}
	s, ids, err := readSeries(info.SeriesFormat, files.Series)
	if err != nil {
		return nil, err
	}
	seriesPath := files.Series
	if info.Nodes > 0 && s.Nodes != info.Nodes {
		return nil, fmt.Errorf("%s: series has %s, want %d", seriesPath, english.Count(s.Nodes, "node"), info.Nodes)
	}
	if len(info.Channels) > 0 && s.Channels != len(info.Channels) {
		return nil, fmt.Errorf("%s: series has %s, want %d (%s)", seriesPath, english.Count(s.Channels, "channel"), len(info.Channels), strings.Join(info.Channels, ", "))
	}
	info.Nodes = s.Nodes
	info.Channels = slices.Clone(info.Channels)

	g, err := readGraph(info.GraphFormat, files.Graph, info.Nodes)
	if err != nil {
		return nil, err
	}
	if err := checkGraph(info.GraphFormat, g, files.Graph, s.Nodes, seriesPath); err != nil {
		return nil, err
	}
	ds := &Dataset{Info: info, Series: s, Graph: g, SensorIDs: ids}
	if files.Locations != "" {
		locIDs, locs, err := ReadLocationsCSV(files.Locations)
		if err != nil {
			return nil, err
		}
		if err := matchSensors(files.Locations, locIDs, seriesPath, ids, s.Nodes); err != nil {
			return nil, err
		}
		ds.SensorIDs, ds.Locations = locIDs, locs
	}
	return ds, nil
}

// readSeries reads the series at path in the given format, with the
// sensor IDs the format names (nil for an npz archive).
func readSeries(format, path string) (*Series, []string, error) {
	switch format {
	case "", FormatNPZ:
		s, err := ReadNPZ(path)
		return s, nil, err
	case FormatCSV:
		return ReadSeriesCSV(path)
	}
	return nil, nil, fmt.Errorf("series format %q, want %q or %q", format, FormatNPZ, FormatCSV)
}

// readGraph reads the graph at path in the given format; nodes is the
// series' node count, which an edge list does not state.
func readGraph(format, path string, nodes int) (*Graph, error) {
	switch format {
	case FormatDistance:
		return ReadDistanceCSV(path, nodes)
	case FormatWeighted:
		return ReadWeightedCSV(path)
	}
	return ReadAdjacencyCSV(path)
}

// checkGraph reports a graph g read from graphPath whose nodes are not the
// series' nodes.
func checkGraph(format string, g *Graph, graphPath string, nodes int, seriesPath string) error {
	if g.Nodes != nodes {
		return fmt.Errorf("%s: graph has %s but series %s has %d", graphPath, english.Count(g.Nodes, "node"), seriesPath, nodes)
	}
	if format != FormatDistance {
		return nil
	}
	// An edge list takes its node count from the series, so a list
	// written for fewer nodes (another dataset's graph, or a file cut
	// short) would load with the nodes it does not name isolated.
	if len(g.Edges) == 0 {
		return fmt.Errorf("%s: no edges between distinct nodes, want the road graph of the series' %s", graphPath, english.Count(nodes, "node"))
	}
	if top := maxNode(g); top+1 < nodes {
		return fmt.Errorf("%s: the edges name nodes up to %d only, but series %s has %d nodes (another dataset's graph, or a file cut short?)", graphPath, top, seriesPath, nodes)
	}
	return nil
}

// matchSensors reports locations (locIDs, read from locPath) that do not
// list the series' nodes sensors, or, where the series names its sensors
// (ids, from seriesPath's header), not the same IDs in the same order.
func matchSensors(locPath string, locIDs []string, seriesPath string, ids []string, nodes int) error {
	if len(locIDs) != nodes {
		return fmt.Errorf("%s: %s, but series %s has %d sensors", locPath, english.Count(len(locIDs), "sensor"), seriesPath, nodes)
	}
	for i, id := range ids {
		if locIDs[i] != id {
			return fmt.Errorf("%s: line %d: sensor_id %q, but column %d of %s's header is %q: the locations must list the series' sensors in its column order",
				locPath, i+2, locIDs[i], i+1, seriesPath, id)
		}
	}
	return nil
}

// maxNode returns the largest node id of g's edges, −1 if it has none.
func maxNode(g *Graph) int {
	top := -1
	for _, e := range g.Edges {
		top = max(top, e.From, e.To)
	}
	return top
}
