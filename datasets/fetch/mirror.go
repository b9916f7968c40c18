package fetch

import (
	"net/http"
	"path/filepath"
)

// Mirror returns a handler that serves the known files of the data
// directory dir at their upstream paths, /OWNER/REPO/COMMIT/PATH, as
// GitHub's raw-file host serves them, ranges honoured: a machine with the
// data can serve others, which set $PEMS_DATA_MIRROR to its address, and
// tests serve the shared data directory so. Other paths are not found.
func Mirror(dir string) http.Handler {
	paths := make(map[string]string)
	for _, s := range catalog {
		if s.Fetchable() {
			paths["/"+s.Repo+"/"+s.Commit+"/"+s.Path] = filepath.Join(dir, filepath.FromSlash(s.File))
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		file, ok := paths[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, file)
	})
}
