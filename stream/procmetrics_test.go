package stream

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestWriteProcessMetrics checks that the process gauges move with what
// they count: goroutines started show in go_goroutines, files opened in
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
	before := read("go_goroutines")
	stop := make(chan struct{})
	const extra = 50
	for range extra {
		go func() { <-stop }()
	}
	after := read("go_goroutines")
	close(stop)
	if after-before < extra {
		t.Errorf("go_goroutines %d with %d more goroutines, %d before", after, extra, before)
	}
	if runtime.GOOS != "linux" {
		return
	}
	fds := read("process_open_fds")
	f1, f2 := t.TempDir()+"/a", t.TempDir()+"/b"
	for _, p := range []string{f1, f2} {
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	if got := read("process_open_fds"); got < fds+2 {
		t.Errorf("process_open_fds %d with 2 more files open, %d before", got, fds)
	}
	if rss := read("process_resident_memory_bytes"); rss < 1<<20 {
		t.Errorf("process_resident_memory_bytes %d: less than 1 MiB", rss)
	}
}
