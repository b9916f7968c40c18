package main

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/fetch"
	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// TestDemoFetchesData runs the demo as on a fresh clone: no -data, no
// $PEMS_DATA, no shared/datasets beside the working directory. It must
// fetch SZ-taxi from the upstream, saying what and from where, into the
// per-user cache, and replay it. The upstream is unreachable from tests:
// $PEMS_DATA_MIRROR points the fetch at a local server that serves the
// shared data directory's files at their upstream paths (fetch.Mirror).
func TestDemoFetchesData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	shared, _, _, b := szTaxiBundle(t, 12, 8)
	bundlePath := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(bundlePath); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fetch.Mirror(shared))
	defer srv.Close()
	t.Setenv(fetch.EnvMirror, srv.URL)
	t.Setenv(pems.EnvDataDir, "")
	home := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", home)
	t.Setenv("HOME", home)
	clone := filepath.Join(t.TempDir(), "clone", "sdgnn")
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(clone)
	if dir, err := pems.ResolveDataDir(""); err == nil {
		t.Skipf("a data directory is found from %s: %s", clone, dir)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr lockedBuffer // the service's goroutine logs too
	err := cmdDemo(ctx, []string{"-model", bundlePath, "-http", "127.0.0.1:0", "-steps", "24", "-speedup", "0"}, &stdout, &stderr)
	if err != nil || ctx.Err() != nil {
		t.Fatalf("demo: %v (%v)\nstderr:\n%s", err, ctx.Err(), stderr.String())
	}
	cache, _ := pems.CacheDir()
	for _, want := range []string{"sz-taxi is in no data directory: fetching it into " + cache + " from " + srv.URL, "Bounger2/ST-CGCN@9ffcc0ad7e02", "3714310 bytes, verified"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, stderr.String())
		}
	}
	if !strings.Contains(stdout.String(), "done: ") {
		t.Errorf("the demo did not finish its replay:\n%s", stdout.String())
	}
	if _, err := pems.Load(cache, "sz-taxi"); err != nil {
		t.Errorf("the fetched data: %v", err)
	}
}
