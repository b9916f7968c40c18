package fetch_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/datasets/fetch"
)

// A download is checked against the sum known for it before it takes its
// place; one that is present and verified is not downloaded again.
func ExampleFetcher_Download() {
	body := []byte("1,0.5\n0.5,1\n")
	sum := sha256.Sum256(body)
	src := fetch.Source{File: "mine/adj.csv", Size: int64(len(body)), SHA256: hex.EncodeToString(sum[:])}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "fetch")
	defer os.RemoveAll(dir)
	dest := filepath.Join(dir, "adj.csv")
	var f fetch.Fetcher
	if err := f.Download(context.Background(), srv.URL+"/adj.csv", dest, src); err != nil {
		fmt.Println(err)
		return
	}
	st, _ := fetch.Check(dest, src)
	fmt.Println(st, st.Size, "bytes")
	// Output: verified 12 bytes
}
