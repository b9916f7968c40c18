package stream

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"
)

// processStart is when this process started, near enough: when the
// package was initialised.
var processStart = time.Now()

// runtimeSamples are the runtime/metrics read for /metrics: read without
// stopping the world, unlike runtime.ReadMemStats.
var runtimeSamples = []struct {
	name, metric, help, kind string
}{
	{"/sched/goroutines:goroutines", "go_goroutines", "Number of goroutines that currently exist.", "gauge"},
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "Bytes of live and not yet swept heap objects.", "gauge"},
	{"/memory/classes/total:bytes", "go_memstats_sys_bytes", "Bytes of memory obtained from the OS by the Go runtime.", "gauge"},
	{"/gc/cycles/total:gc-cycles", "go_gc_cycles_total", "Completed garbage collection cycles.", "counter"},
}

// WriteProcessMetrics writes the process's and the Go runtime's own
// gauges in the Prometheus text format, under the names Prometheus's Go
// client gives them (go_goroutines, go_threads, go_memstats_*,
// process_resident_memory_bytes, process_open_fds,
// process_start_time_seconds, ...), so that an operator's usual
// dashboards and alerts see a leak of goroutines, memory or file
// descriptors in a service that runs for weeks. The process_* figures
// that come from /proc are left out where it cannot be read (other
// systems than Linux).
func WriteProcessMetrics(w io.Writer) error {
	bw := bufio.NewWriter(w)
	samples := make([]metrics.Sample, len(runtimeSamples))
	for i, s := range runtimeSamples {
		samples[i].Name = s.name
	}
	metrics.Read(samples)
	for i, s := range runtimeSamples {
		var v uint64
		switch samples[i].Value.Kind() {
		case metrics.KindUint64:
			v = samples[i].Value.Uint64()
		default:
			continue // not in this Go version
		}
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", s.metric, s.help, s.metric, s.kind, s.metric, v)
	}
	threads, _ := runtime.ThreadCreateProfile(nil)
	fmt.Fprintf(bw, "# HELP go_threads Number of OS threads created.\n# TYPE go_threads gauge\ngo_threads %d\n", threads)
	fmt.Fprintf(bw, "# HELP process_start_time_seconds Start time of the process since the Unix epoch in seconds.\n# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %s\n",
		strconv.FormatFloat(float64(processStart.UnixNano())/1e9, 'f', 3, 64))
	if rss, ok := residentBytes(); ok {
		fmt.Fprintf(bw, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", rss)
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		fmt.Fprintf(bw, "# HELP process_open_fds Number of open file descriptors.\n# TYPE process_open_fds gauge\nprocess_open_fds %d\n", len(fds))
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write process metrics: %w", err)
	}
	return nil
}

// residentBytes reads the process's resident set size from
// /proc/self/statm (its second field, in pages).
func residentBytes() (int64, bool) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
