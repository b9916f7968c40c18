package stream

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestWriteProcessMetrics checks that the process gauges count what they
// say: goroutines started show in go_goroutines, files opened in
// process_open_fds (on Linux, where /proc has them).
func TestWriteProcessMetrics(t *testing.T) {
	read := func(name string) int64 {
		t.Helper()
		var sb strings.Builder
		if err := WriteProcessMetrics(&sb); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(sb.String(), "\n") {
			var v int64
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				if _, err := fmt.Sscan(rest, &v); err != nil {
					t.Fatalf("%s: %q: %v", name, line, err)
				}
				return v
			}
		}
		t.Fatalf("no %s in\n%s", name, sb.String())
		return 0
	}
	// Absolute floors rather than differences: goroutines and files of
	// earlier tests may end meanwhile.
	stop := make(chan struct{})
	const extra = 50
	for range extra {
		go func() { <-stop }()
	}
	got := read("go_goroutines")
	close(stop)
	if got < extra+1 {
		t.Errorf("go_goroutines %d with %d goroutines waiting and the test's", got, extra)
	}
	if runtime.GOOS != "linux" {
		return
	}
	dir := t.TempDir()
	for i := range extra {
		f, err := os.Create(fmt.Sprintf("%s/%d", dir, i))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if got := read("process_open_fds"); got < extra {
		t.Errorf("process_open_fds %d with %d files open", got, extra)
	}
	if rss := read("process_resident_memory_bytes"); rss < 1<<20 {
		t.Errorf("process_resident_memory_bytes %d: less than 1 MiB", rss)
	}
}
