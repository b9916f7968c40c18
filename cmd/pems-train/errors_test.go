package main

import (
	"errors"
	"testing"
)

// TestErrorLine checks that an error already naming the command is not
// prefixed with it twice.
func TestErrorLine(t *testing.T) {
	for _, tc := range []struct {
		cmd, what string
		err       error
		want      string
	}{
		{"report", "", errors.New("report: the GRU baseline is a gru-gcn model, want gru"), "pems-train report: the GRU baseline is a gru-gcn model, want gru"},
		{"distill", "", errors.New("distill: no round reached the final budget 6"), "pems-train distill: no round reached the final budget 6"},
		{"report", "interrupted: ", errors.New("report: replay: context canceled"), "pems-train report: interrupted: replay: context canceled"},
		{"eval", "", errors.New("-model: load model: checkpoint: truncated"), "pems-train eval: -model: load model: checkpoint: truncated"},
		{"report", "", errors.New("reporter: x"), "pems-train report: reporter: x"},
		{"teacher", "", errors.New("report: x"), "pems-train teacher: report: x"},
	} {
		if got := errorLine(tc.cmd, tc.what, tc.err); got != tc.want {
			t.Errorf("errorLine(%q, %q, %q) = %q, want %q", tc.cmd, tc.what, tc.err, got, tc.want)
		}
	}
}
