package stream

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWritePrometheus(t *testing.T) {
	var c Counters
	c.Applied.Add(5)
	c.TxnAborts.Add(2)
	c.Reject(&RejectError{Reason: ReasonOffGrid})
	c.Reject(errors.Join(errors.New("ctx"), &RejectError{Reason: ReasonOffGrid}))
	c.Reject(errors.New("disk full"))
	for _, d := range []time.Duration{0, 3 * time.Microsecond, 5 * time.Microsecond, 2 * time.Millisecond, time.Hour} {
		c.ForecastLatency.Observe(d)
	}
	var sb strings.Builder
	if err := c.WritePrometheus(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{
		"# TYPE sdgnn_stream_readings_applied_total counter\nsdgnn_stream_readings_applied_total 5\n",
		`sdgnn_stream_readings_rejected_total{reason="off_grid"} 2`,
		`sdgnn_stream_readings_rejected_total{reason="too_new"} 0`,
		`sdgnn_stream_readings_rejected_total{reason="internal"} 1`,
		"# TYPE sdgnn_stream_forecast_latency_seconds histogram\n",
		`sdgnn_stream_forecast_latency_seconds_bucket{le="1e-06"} 1`,
		`sdgnn_stream_forecast_latency_seconds_bucket{le="5e-06"} 3`,
		`sdgnn_stream_forecast_latency_seconds_bucket{le="0.002"} 4`,
		`sdgnn_stream_forecast_latency_seconds_bucket{le="100"} 4`,
		`sdgnn_stream_forecast_latency_seconds_bucket{le="+Inf"} 5`,
		"sdgnn_stream_forecast_latency_seconds_count 5\n",
		"sdgnn_stream_emit_delay_seconds_count 0\n",
		`sdgnn_stream_transaction_markers_total{kind="commit"} 0`,
		`sdgnn_stream_transaction_markers_total{kind="abort"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// Every sample line is "name{labels} value" or "name value".
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "# ") && len(strings.Fields(line)) != 2 {
			t.Errorf("bad sample line %q", line)
		}
	}
	if err := c.WritePrometheus(failWriter{}); err == nil {
		t.Error("write to a failing writer: no error")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestHistogramObserveAllocs(t *testing.T) {
	var h Histogram
	if n := testing.AllocsPerRun(100, func() { h.Observe(time.Millisecond) }); n != 0 {
		t.Errorf("Observe allocates %v times", n)
	}
}

// Label values are escaped as the Prometheus text format wants: only
// backslash, double quote and newline; a tab or any other rune is written
// as it is (Go's %q would write \t, which fails the whole scrape).
func TestPromLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"sdgnn-pems04-3f9a1c0e7b2d", "sdgnn-pems04-3f9a1c0e7b2d"},
		{"v\t1\u00a0x", "v\t1\u00a0x"},
		{`a"b\c`, `a\"b\\c`},
		{"two\nlines", `two\nlines`},
		{"é,=}", "é,=}"},
	} {
		if got := promLabel(tc.in); got != tc.want {
			t.Errorf("promLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
