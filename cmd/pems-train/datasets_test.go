package main

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/datasets/fetch"
	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// sharedData returns the shared data directory, or skips the test.
func sharedData(t *testing.T) string {
	t.Helper()
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		t.Skipf("no data directory: %v", err)
	}
	return dir
}

// statusOf returns the STATUS column of dataset name in `datasets`'
// output.
func statusOf(t *testing.T, out, name string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s.*?\s{2}(\S[^\n]*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no line for %s in:\n%s", name, out)
	}
	fields := regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(m[0]), -1)
	return fields[len(fields)-1]
}

// TestDatasetsListsLosLoop: the shared directory's Los-loop is present and
// matches the sums shipped in the program.
func TestDatasetsListsLosLoop(t *testing.T) {
	dir := sharedData(t)
	code, out, stderr := runCmd(t, "datasets", "-data", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st := statusOf(t, out, "los-loop"); st != "verified" || !strings.Contains(out, "los-loop/graph_sensor_locations.csv  ") {
		t.Errorf("los-loop: status %q:\n%s", st, out)
	}
	if st := statusOf(t, out, "sz-taxi"); st != "verified" {
		t.Errorf("sz-taxi: status %q", st)
	}
}

// TestDatasetsStatus: a file that differs from the release is named
// unverified with both sums; a PeMS series of one's own is unverified,
// not an error; what is missing says how to get it.
func TestDatasetsStatus(t *testing.T) {
	dir := writePeMS08Layout(t, 20) // a series of the layout, not the release's
	code, out, stderr := runCmd(t, "datasets", "-data", dir, "-verify=false")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st := statusOf(t, out, "pems08"); !strings.HasPrefix(st, "unverified: pems/pems08/PEMS08.npz (") || !strings.Contains(st, "want f5f3e84a0041)") {
		t.Errorf("pems08 of one's own: %q", st)
	}
	if st := statusOf(t, out, "los-loop"); st != "missing (-fetch los-loop)" {
		t.Errorf("los-loop absent: %q", st)
	}
	if st := statusOf(t, out, "pems04"); st != "missing (download the ASTGCN release, or -fetch pems04 -url URL)" {
		t.Errorf("pems04 absent: %q", st)
	}
}

// TestDatasetsFetch downloads Los-loop with -fetch from a mirror of the
// shared files (the upstream is not reachable from tests), lists it
// verified, and refuses -url where it does not belong.
func TestDatasetsFetch(t *testing.T) {
	srv := httptest.NewServer(fetch.Mirror(sharedData(t)))
	defer srv.Close()
	t.Setenv(fetch.EnvMirror, srv.URL)
	dir := filepath.Join(t.TempDir(), "data")
	code, out, stderr := runCmd(t, "datasets", "-fetch", "Los-Loop", "-data", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st := statusOf(t, out, "los-loop"); st != "verified" || !strings.Contains(out, "data directory: "+dir) {
		t.Errorf("after -fetch: status %q:\n%s", st, out)
	}
	if !strings.Contains(stderr, "downloading "+srv.URL+"/lehaifeng/T-GCN/") || !strings.Contains(stderr, "3402125 bytes, verified") {
		t.Errorf("progress:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "los-loop", "los_speed.csv"+fetch.PartSuffix)); !os.IsNotExist(err) {
		t.Errorf("a part is left: %v", err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"datasets", "-url", srv.URL + "/x"}, 2, "-url is the URL of a series for -fetch"},
		{[]string{"datasets", "-fetch", "sz-taxi", "-url", srv.URL + "/x", "-data", dir}, 2, "every file of sz-taxi has a known upstream"},
		{[]string{"datasets", "-fetch", "metr-la", "-data", dir}, 2, `unknown dataset "metr-la"`},
		{[]string{"datasets", "-fetch", "pems08", "-data", dir}, 1, "no public URL is known for pems/pems08/PEMS08.npz"},
		{[]string{"datasets", "-fetch", "pems08", "-data", dir, "-url", srv.URL + "/nothing/here.npz"}, 1, "404 Not Found"},
	} {
		code, _, stderr := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}
