package pems

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestChannelUnits checks that every known dataset gives a unit to each
// channel, and that ChannelUnits gives them only for its channels.
func TestChannelUnits(t *testing.T) {
	for _, in := range Known() {
		if len(in.Units) != len(in.Channels) || slices.Contains(in.Units, "") {
			t.Errorf("%s: units %q for channels %q", in.Name, in.Units, in.Channels)
		}
	}
	for _, tc := range []struct {
		dataset  string
		channels []string
		want     []string
	}{
		{"sz-taxi", []string{"speed"}, []string{"km/h"}},
		{"PEMS08", []string{"flow", "occupancy", "speed"}, []string{"veh/5 min", "fraction", "mph"}},
		{"pems04", []string{"speed", "flow", "occupancy"}, nil}, // not its order
		{"pems04", []string{"flow"}, nil},
		{"own-data", []string{"speed"}, nil},
	} {
		if got := ChannelUnits(tc.dataset, tc.channels); !slices.Equal(got, tc.want) {
			t.Errorf("ChannelUnits(%q, %q) = %q, want %q", tc.dataset, tc.channels, got, tc.want)
		}
	}
	ks := Known()
	ks[0].Units[0] = "changed"
	if in, _ := Lookup(ks[0].Name); in.Units[0] == "changed" {
		t.Error("Known's units are the package's own")
	}
}

func TestKnownLookup(t *testing.T) {
	ks := Known()
	names := []string{"los-loop", "pems04", "pems08", "sz-taxi"}
	if len(ks) != len(names) {
		t.Fatalf("Known has %d entries, want %d", len(ks), len(names))
	}
	for i, k := range ks {
		if k.Name != names[i] {
			t.Errorf("Known()[%d].Name = %q, want %q", i, k.Name, names[i])
		}
	}
	ks[1].Channels[0] = "changed"
	in, err := Lookup("PEMS04")
	if err != nil {
		t.Fatal(err)
	}
	if in.Name != "pems04" || in.Nodes != 307 || in.StepMinutes != 5 || in.Channels[0] != "flow" || in.GraphFormat != FormatDistance {
		t.Errorf("Lookup(PEMS04) = %+v", in)
	}
	if in, _ := Lookup("sz-taxi"); in.Nodes != 156 || in.StepMinutes != 15 || len(in.Channels) != 1 || in.GraphFormat != FormatAdjacency {
		t.Errorf("Lookup(sz-taxi) = %+v", in)
	}
	if in, _ := Lookup(" Los-Loop"); in.Nodes != 207 || in.StepMinutes != 5 || in.SeriesFormat != FormatCSV || in.GraphFormat != FormatWeighted || in.LocationsFile == "" {
		t.Errorf("Lookup(Los-Loop) = %+v", in)
	}
	_, err = Lookup("metr-la")
	if err == nil || !strings.Contains(err.Error(), "los-loop, pems04, pems08, sz-taxi") {
		t.Errorf("Lookup(metr-la) error = %v, want one listing the known names", err)
	}
}

// writePeMSLike writes a small dataset in the PeMS layout under dir and
// returns its Info and paths.
func writePeMSLike(t *testing.T, dir string, steps, nodes int) (Info, string, string) {
	t.Helper()
	sub := filepath.Join(dir, "pems", "pemsxx")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	var csv strings.Builder
	csv.WriteString("from,to,cost\n")
	for i := 0; i+1 < nodes; i++ {
		csv.WriteString(strconv.Itoa(i) + "," + strconv.Itoa(i+1) + ",100.5\n")
		if i%2 == 0 { // the release lists some pairs in both directions
			csv.WriteString(strconv.Itoa(i+1) + "," + strconv.Itoa(i) + ",99.5\n")
		}
	}
	graphPath := writeFile(t, sub, "distance.csv", csv.String())
	seriesPath := filepath.Join(sub, "PEMSXX.npz")
	if err := WriteNPZ(seriesPath, testSeries(steps, nodes, 3)); err != nil {
		t.Fatal(err)
	}
	info := Info{
		Name:        "pemsxx",
		SeriesFile:  "pems/pemsxx/PEMSXX.npz",
		GraphFile:   "pems/pemsxx/distance.csv",
		GraphFormat: FormatDistance,
		StepMinutes: 5,
		Channels:    []string{"flow", "occupancy", "speed"},
		Nodes:       nodes,
	}
	return info, seriesPath, graphPath
}

func TestLoadFilesPeMSLayout(t *testing.T) {
	dir := t.TempDir()
	info, sp, gp := writePeMSLike(t, dir, 24, 7)
	ds, err := LoadFiles(info, sp, gp)
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Series
	if s.Steps != 24 || s.Nodes != 7 || s.Channels != 3 {
		t.Errorf("series shape (%d, %d, %d), want (24, 7, 3)", s.Steps, s.Nodes, s.Channels)
	}
	if ds.Graph.Nodes != 7 || len(ds.Graph.Edges) != 6 {
		t.Errorf("graph has %d nodes and %d edges, want 7 and 6 (deduplicated)", ds.Graph.Nodes, len(ds.Graph.Edges))
	}
	for _, e := range ds.Graph.Edges {
		want := 100.5
		if e.From%2 == 0 {
			want = 99.5
		}
		if e.Cost != want {
			t.Errorf("edge %v cost %v, want %v", e, e.Cost, want)
		}
	}
	if s.At(23, 6, 2) != testSeries(24, 7, 3).Data[24*7*3-1] {
		t.Error("last value differs")
	}

	// Zero Nodes is filled from the series.
	info.Nodes = 0
	ds, err = LoadFiles(info, sp, gp)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Info.Nodes != 7 {
		t.Errorf("Info.Nodes = %d, want 7", ds.Info.Nodes)
	}
}

func TestLoadFilesMismatch(t *testing.T) {
	dir := t.TempDir()
	info, sp, gp := writePeMSLike(t, dir, 10, 5)
	for _, tc := range []struct {
		name string
		edit func(*Info)
		want string
	}{
		{"nodes", func(in *Info) { in.Nodes = 6 }, "5 nodes, want 6"},
		{"channels", func(in *Info) { in.Channels = in.Channels[:1] }, "3 channels, want 1"},
		{"format", func(in *Info) { in.GraphFormat = "dot" }, `graph format "dot"`},
		{"graph", func(in *Info) { in.GraphFormat = FormatAdjacency }, gp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := info
			in.Channels = append([]string(nil), info.Channels...)
			tc.edit(&in)
			_, err := LoadFiles(in, sp, gp)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "pemsxx") {
				t.Errorf("error = %v, want one containing %q and the dataset name", err, tc.want)
			}
		})
	}
}

// An edge list does not state its node count: one that names fewer nodes
// than the series (another dataset's graph, a file cut short) or no edges
// at all is refused rather than loaded with nodes isolated.
func TestLoadFilesShortGraph(t *testing.T) {
	dir := t.TempDir()
	info, sp, gp := writePeMSLike(t, dir, 10, 5)
	for _, tc := range []struct {
		name, graph, want string
	}{
		{"fewer nodes", "from,to,cost\n0,1,1\n1,2,1\n2,3,1\n", "up to 3 only, but series " + sp + " has 5 nodes"},
		{"header only", "from,to,cost\r\n", "no edges between distinct nodes"},
		{"self loops only", "from,to,cost\n4,4,0\n", "no edges between distinct nodes"},
		{"the last node in a loop only", "from,to,cost\n0,1,1\n4,4,0\n", "up to 1 only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, filepath.Dir(gp), "distance.csv", tc.graph)
			_, err := LoadFiles(info, sp, gp)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), gp) {
				t.Errorf("error = %v, want one containing %q and the graph's path", err, tc.want)
			}
		})
	}
	// The last node named in one direction only is enough.
	writeFile(t, filepath.Dir(gp), "distance.csv", "from,to,cost\n4,0,1\n")
	if ds, err := LoadFiles(info, sp, gp); err != nil || len(ds.Graph.Edges) != 1 {
		t.Errorf("a graph naming node 4: %v", err)
	}
}

func TestLoadMissingSeries(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "pems", "pems04")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sub, "distance.csv", "from,to,cost\n0,1,1\n")
	_, err := Load(dir, "pems04")
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"pems/pems04/PEMS04.npz", dir, "not yet in shared/datasets"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("error does not wrap fs.ErrNotExist")
	}
	if _, err := Load(dir, "nope"); err == nil || !strings.Contains(err.Error(), "sz-taxi") {
		t.Errorf("Load(nope) error = %v", err)
	}
	// A series under another name (case) is named.
	writeFile(t, sub, "pems04.npz", "x")
	if _, err := Load(dir, "pems04"); err == nil || !strings.Contains(err.Error(), "its directory holds pems04.npz: rename the series file to PEMS04.npz") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load with pems04.npz: %v", err)
	}
}

func TestResolveDataDir(t *testing.T) {
	root := t.TempDir()
	shared := filepath.Join(root, "shared", "datasets")
	sub := filepath.Join(root, "main", "datasets", "pems")
	flagDir := filepath.Join(root, "flag")
	envDir := filepath.Join(root, "env")
	for _, d := range []string{shared, sub, flagDir, envDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(sub)

	check := func(name, flag, want string) {
		t.Helper()
		got, err := ResolveDataDir(flag)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !sameDir(t, got, want) {
			t.Errorf("%s: ResolveDataDir(%q) = %s, want %s", name, flag, got, want)
		}
	}
	t.Setenv(EnvDataDir, envDir)
	check("flag beats env", flagDir, flagDir)
	check("env beats discovery", "", envDir)
	t.Setenv(EnvDataDir, "")
	check("discovery from subdirectory", "", shared)
	t.Chdir(filepath.Join(root, "main"))
	check("discovery from checkout", "", shared)

	if _, err := ResolveDataDir(filepath.Join(root, "absent")); err == nil || !strings.Contains(err.Error(), "flag") {
		t.Errorf("missing flag directory: error %v", err)
	}
	t.Setenv(EnvDataDir, filepath.Join(root, "absent"))
	if _, err := ResolveDataDir(""); err == nil || !strings.Contains(err.Error(), EnvDataDir) {
		t.Errorf("missing env directory: error %v", err)
	}
	t.Setenv(EnvDataDir, "")

	lone := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(lone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(lone)
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	cache, err := CacheDir()
	if err != nil || !strings.HasPrefix(cache, home) || !strings.HasSuffix(cache, filepath.Join("sdgnn", "datasets")) {
		t.Fatalf("cache directory %s, %v: want sdgnn/datasets under %s", cache, err, home)
	}
	_, err = ResolveDataDir("")
	if err == nil {
		t.Skip("a shared/datasets exists beside an ancestor of the temporary directory")
	}
	for _, w := range []string{filepath.Join(lone, "..", "shared", "datasets"), filepath.Join(filepath.Dir(lone), "..", "shared", "datasets"), cache, "-fetch"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not list %s", err, w)
		}
	}
	// The cache, once it exists, comes last.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	check("the per-user cache", "", cache)
	t.Chdir(sub)
	check("shared/datasets before the cache", "", shared)
}

func sameDir(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.Stat(b)
	if err != nil {
		t.Fatal(err)
	}
	return os.SameFile(fa, fb)
}

func TestVerifyChecksums(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", "hello\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "sub/b.txt", "world\n")
	const (
		sumA = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"
		sumB = "e258d248fda94c63753607f7c4494ee0fcbe92f1a76bfdac795c9d84101eb317"
		zero = "0000000000000000000000000000000000000000000000000000000000000000"
	)
	writeFile(t, dir, ChecksumFile, sumA+"  a.txt\n"+sumB+" *sub/b.txt\n"+zero+"  later/c.npz\n")
	missing, err := VerifyChecksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != "later/c.npz" {
		t.Errorf("missing = %v, want [later/c.npz]", missing)
	}

	writeFile(t, dir, ChecksumFile, zero+"  a.txt\n")
	_, err = VerifyChecksums(dir)
	if err == nil || !strings.Contains(err.Error(), "a.txt") || !strings.Contains(err.Error(), sumA) || !strings.Contains(err.Error(), zero) {
		t.Errorf("mismatch error = %v, want one naming a.txt and both sums", err)
	}

	for _, bad := range []string{"nothex  a.txt\n", sumA + "\n", sumA + "  ../a.txt\n"} {
		writeFile(t, dir, ChecksumFile, bad)
		if _, err := VerifyChecksums(dir); err == nil || !strings.Contains(err.Error(), ":1:") {
			t.Errorf("line %q: error = %v, want one naming line 1", bad, err)
		}
	}
	if _, err := VerifyChecksums(t.TempDir()); err == nil {
		t.Error("no error for a directory without " + ChecksumFile)
	}
}

// A known dataset's file present but not in SHA256SUMS (a series that
// arrived before its line) is named, since VerifyChecksums cannot check it.
func TestUnlisted(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"pems/pems04/distance.csv", "pems/pems04/PEMS04.npz", "sz-taxi/SZ_taxi.npz"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, rel, "x")
	}
	const sum = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881" // of "x"
	writeFile(t, dir, ChecksumFile, sum+"  pems/pems04/distance.csv\n"+sum+"  ./sz-taxi/SZ_taxi.npz\n"+sum+"  pems/pems08/PEMS08.npz\n")
	got, err := Unlisted(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"pems/pems04/PEMS04.npz"}; !slices.Equal(got, want) {
		t.Errorf("Unlisted = %v, want %v", got, want)
	}
	if missing, err := VerifyChecksums(dir); err != nil || !slices.Equal(missing, []string{"pems/pems08/PEMS08.npz"}) {
		t.Errorf("VerifyChecksums = %v, %v", missing, err)
	}
	if _, err := Unlisted(t.TempDir()); err == nil {
		t.Error("no error for a directory without " + ChecksumFile)
	}
}

// realDir returns the shared data directory or skips the test.
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := ResolveDataDir("")
	if err != nil {
		t.Skipf("no data directory: %v", err)
	}
	return dir
}

func TestRealGraphs(t *testing.T) {
	dir := realDir(t)
	for _, tc := range []struct {
		name         string
		nodes, pairs int
	}{
		{"pems04", 307, 340},
		{"pems08", 170, 274},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Lookup(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ReadDistanceCSV(filepath.Join(dir, filepath.FromSlash(in.GraphFile)), in.Nodes)
			if err != nil {
				t.Fatal(err)
			}
			if g.Nodes != tc.nodes || len(g.Edges) != tc.pairs {
				t.Errorf("%d nodes and %d pairs, want %d and %d", g.Nodes, len(g.Edges), tc.nodes, tc.pairs)
			}
			if err := g.Validate(); err != nil {
				t.Error(err)
			}
			if m := g.NormalizedAdjacency(); !m.IsSymmetric(1e-15) || m.NNZ() != tc.nodes+2*tc.pairs {
				t.Errorf("normalised adjacency: symmetric %v, NNZ %d, want %d", m.IsSymmetric(1e-15), m.NNZ(), tc.nodes+2*tc.pairs)
			}
		})
	}
}

func TestRealSZTaxi(t *testing.T) {
	dir := realDir(t)
	ds, err := Load(dir, "sz-taxi")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := ds.Series
	if s.Steps != 2976 || s.Nodes != 156 || s.Channels != 1 {
		t.Fatalf("shape (%d, %d, %d), want (2976, 156, 1)", s.Steps, s.Nodes, s.Channels)
	}
	zeros := 0
	for _, v := range s.Data {
		if v == 0 {
			zeros++
		}
		if math.IsNaN(v) {
			t.Fatal("NaN in SZ-taxi series")
		}
	}
	if frac := float64(zeros) / float64(len(s.Data)); math.Abs(frac-0.248) > 0.001 {
		t.Errorf("fraction of zeros %.4f, want about 0.248", frac)
	}
	if ds.Graph.Nodes != 156 || len(ds.Graph.Edges) == 0 {
		t.Errorf("graph has %d nodes and %d edges", ds.Graph.Nodes, len(ds.Graph.Edges))
	}
	if err := ds.Graph.Validate(); err != nil {
		t.Error(err)
	}
	t.Logf("SZ-taxi graph: %d undirected edges", len(ds.Graph.Edges))
}

func TestRealChecksums(t *testing.T) {
	dir := realDir(t)
	missing, err := VerifyChecksums(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Logf("listed but not present: %v", missing)
	}
}

// TestLoadFilesMismatchOne checks that a mismatch counting one node or
// channel says "1 node", "1 channel", not "1 nodes".
func TestLoadFilesMismatchOne(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.npz") // 1 node, 1 channel
	if err := WriteNPZ(one, testSeries(10, 1, 1)); err != nil {
		t.Fatal(err)
	}
	two := filepath.Join(dir, "two.npz") // 2 nodes, 1 channel
	if err := WriteNPZ(two, testSeries(10, 2, 1)); err != nil {
		t.Fatal(err)
	}
	edges := writeFile(t, dir, "distance.csv", "from,to,cost\n")
	adj1 := writeFile(t, dir, "adj1.csv", "0\n")
	for _, tc := range []struct {
		name          string
		info          Info
		series, graph string
		want          string
	}{
		{"nodes", Info{Nodes: 2, GraphFormat: FormatDistance}, one, edges, "series has 1 node, want 2"},
		{"channels", Info{Channels: []string{"flow", "speed"}, GraphFormat: FormatDistance}, one, edges, "series has 1 channel, want 2 (flow, speed)"},
		{"no edges", Info{GraphFormat: FormatDistance}, one, edges, "want the road graph of the series' 1 node"},
		{"graph nodes", Info{GraphFormat: FormatAdjacency}, two, adj1, "graph has 1 node but series " + two + " has 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.info.Name = "one"
			_, err := LoadFiles(tc.info, tc.series, tc.graph)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.want+"s") {
				t.Errorf("error = %v, want one containing %q (not followed by an s)", err, tc.want)
			}
		})
	}
}
