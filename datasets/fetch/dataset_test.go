package fetch

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// sharedDir returns the shared data directory, or skips the test.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := pems.ResolveDataDir("")
	if err != nil {
		t.Skipf("no data directory: %v", err)
	}
	return dir
}

// mirror is an httptest server of Mirror(shared) that counts the requests
// per file.
func mirror(t *testing.T, shared string) (*server, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	hits := map[string]int{}
	files := map[string]string{}
	for _, s := range catalog {
		files["/"+s.Repo+"/"+s.Commit+"/"+s.Path] = s.File
	}
	h := Mirror(shared)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
		if f, ok := files[r.URL.Path]; ok {
			mu.Lock()
			hits[f]++
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
	return srv, hits
}

// TestCatalog: every known dataset's files are in the catalog, in its
// order, each with a sum; the fetchable ones with a size and a pinned
// commit; the shared directory's SHA256SUMS agrees with the sums shipped.
func TestCatalog(t *testing.T) {
	for _, in := range pems.Known() {
		srcs, err := Sources(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		var files []string
		for _, s := range srcs {
			files = append(files, s.File)
			if s.SHA256 == "" && s.GitBlob == "" {
				t.Errorf("%s: no sum", s.File)
			}
			if s.Fetchable() && (s.Size <= 0 || len(s.Commit) != 40 || s.SHA256 == "") {
				t.Errorf("%s: fetchable without size, commit or sha256: %+v", s.File, s)
			}
		}
		if strings.Join(files, " ") != strings.Join(in.Files(), " ") {
			t.Errorf("%s: catalog %q, dataset files %q", in.Name, files, in.Files())
		}
	}
	if !Fetchable("los-loop") || !Fetchable("sz-taxi") || Fetchable("pems04") {
		t.Error("fetchable: want los-loop and sz-taxi, not pems04")
	}
	if got := (Source{Repo: "o/r", Commit: "c", Path: "d/f.csv"}).URL(GitHubRaw + "/"); got != "https://raw.githubusercontent.com/o/r/c/d/f.csv" {
		t.Errorf("URL %s", got)
	}
	dir := sharedDir(t)
	list, err := os.ReadFile(filepath.Join(dir, pems.ChecksumFile))
	if err != nil {
		t.Skip(err)
	}
	for _, s := range catalog {
		if s.SHA256 != "" && !strings.Contains(string(list), s.SHA256+"  "+s.File) {
			t.Errorf("%s: sha256 %s is not the one %s lists", s.File, s.SHA256, pems.ChecksumFile)
		}
	}
}

// TestCheckShared: every file of the shared directory verifies against
// the sums shipped in the code.
func TestCheckShared(t *testing.T) {
	dir := sharedDir(t)
	for _, s := range catalog {
		st, err := Check(filepath.Join(dir, filepath.FromSlash(s.File)), s)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == Unverified || (st.State == Missing && s.Fetchable()) {
			t.Errorf("%s: %v", s.File, st)
		}
	}
}

// TestDatasetFromMirror fetches Los-loop and SZ-taxi from a mirror of the
// shared files into an empty directory, then again (nothing requested),
// then with a file damaged (that one alone again).
func TestDatasetFromMirror(t *testing.T) {
	srv, hits := mirror(t, sharedDir(t))
	dir := t.TempDir()
	var log bytes.Buffer
	f := &Fetcher{Progress: &log, Stall: 5 * time.Second, Retries: -1}
	for _, name := range []string{"los-loop", "sz-taxi"} {
		if err := f.Dataset(context.Background(), dir, name, srv.URL, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := pems.Load(dir, name); err != nil {
			t.Fatalf("load the fetched %s: %v", name, err)
		}
	}
	if len(hits) != 5 || !strings.Contains(log.String(), srv.URL+"/lehaifeng/T-GCN/219a2346f5bf68d54d91a948e7a41a08f9edc46b/T-GCN/T-GCN-PyTorch/data/los_speed.csv") {
		t.Errorf("requests %v; progress:\n%s", hits, log.String())
	}
	if err := f.Dataset(context.Background(), dir, "los-loop", srv.URL, ""); err != nil {
		t.Fatal(err)
	}
	adj := filepath.Join(dir, "los-loop", "los_adj.csv")
	if err := os.WriteFile(adj, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.Dataset(context.Background(), dir, "los-loop", srv.URL, ""); err != nil {
		t.Fatal(err)
	}
	if hits["los-loop/los_adj.csv"] != 2 || hits["los-loop/los_speed.csv"] != 1 {
		t.Errorf("requests %v, want los_adj.csv twice and the others once", hits)
	}
}

// TestDatasetPeMS: PeMS's graph is fetched, its series is not (no URL is
// known): the error says where to put it and by which ID it is known; a
// URL given for it is verified by that ID.
func TestDatasetPeMS(t *testing.T) {
	srv, _ := mirror(t, sharedDir(t))
	dir := t.TempDir()
	f := &Fetcher{Stall: 5 * time.Second, Retries: -1}
	err := f.Dataset(context.Background(), dir, "pems08", srv.URL, "")
	if err == nil {
		t.Fatal("no error without the series")
	}
	for _, w := range []string{"no public URL", "ASTGCN release", filepath.Join(dir, "pems", "pems08", "PEMS08.npz"), "f5f3e84a00417573aa8487fe1e9e8cd13c6026c8", "-url"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pems", "pems08", "distance.csv")); err != nil {
		t.Errorf("the graph was not fetched: %v", err)
	}
	// A URL that serves another file (SZ-taxi's series) is refused.
	err = f.Dataset(context.Background(), dir, "pems08", srv.URL, srv.URL+"/Bounger2/ST-CGCN/9ffcc0ad7e024c3c1dbcabdb05c1853059d399bd/data/SZ_taxi/SZ_taxi.npz")
	if err == nil || !strings.Contains(err.Error(), "git blob ID") {
		t.Errorf("another file as PEMS08.npz: %v", err)
	}
}

// TestEnsure: with no data directory anywhere, Ensure fetches the dataset
// into the per-user cache, saying from where, and finds it there next
// time without a request; a directory that holds it is used as it is.
func TestEnsure(t *testing.T) {
	srv, hits := mirror(t, sharedDir(t))
	t.Setenv(EnvMirror, srv.URL)
	t.Setenv(pems.EnvDataDir, "")
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache) // os.UserCacheDir on macOS
	lone := filepath.Join(t.TempDir(), "a", "b")
	if err := os.MkdirAll(lone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(lone)
	if _, err := pems.ResolveDataDir(""); err == nil {
		t.Skip("a shared/datasets exists beside an ancestor of the temporary directory")
	}
	var log bytes.Buffer
	f := &Fetcher{Progress: &log, Stall: 5 * time.Second, Retries: -1}
	dir, err := f.Ensure(context.Background(), "", "sz-taxi")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := pems.CacheDir()
	if dir != want || !strings.HasPrefix(dir, cache) {
		t.Errorf("dir %s, want the cache %s", dir, want)
	}
	if !strings.Contains(log.String(), "sz-taxi is in no data directory: fetching it into "+dir+" from "+srv.URL+" (Bounger2/ST-CGCN@9ffcc0ad7e02)") {
		t.Errorf("progress does not say what it fetches from where:\n%s", log.String())
	}
	log.Reset()
	if again, err := f.Ensure(context.Background(), "", "sz-taxi"); err != nil || again != dir || len(hits) != 2 || log.Len() != 0 {
		t.Errorf("second Ensure: %s, %v, requests %v, progress %q", again, err, hits, log.String())
	}
	// PeMS cannot be fetched whole: the flag comes back as it is.
	if got, err := f.Ensure(context.Background(), "", "pems04"); err != nil || got != "" {
		t.Errorf("Ensure(pems04) = %q, %v", got, err)
	}
	// An explicit directory that lacks the dataset receives it.
	own := filepath.Join(t.TempDir(), "own")
	if got, err := f.Ensure(context.Background(), own, "los-loop"); err != nil || got != own {
		t.Errorf("Ensure into %s: %q, %v", own, got, err)
	}
}
