package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeScorePart checks serve's -score-part flags: they are refused
// before any broker is started when they do not fit.
func TestServeScorePart(t *testing.T) {
	dir, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		err  string // in the error or on stderr
	}{
		{[]string{"-data", dir}, "-data and -start only serve -score-part"},
		{[]string{"-start", "2015-01-01T00:00:00Z"}, "-data and -start only serve -score-part"},
		{[]string{"-score-part", "tests", "-data", dir}, `-score-part "tests": want train, val or test`},
		{[]string{"-score-part", "test", "-data", dir, "-start", "yesterday"}, `-start "yesterday"`},
		{[]string{"-score-part", "test", "-data", filepath.Join(dir, "nowhere")}, "-score-part"},
	} {
		var errOut bytes.Buffer
		err := cmdServe(context.Background(), append([]string{"-model", path, "-http", ""}, tc.args...), io.Discard, &errOut)
		if err == nil || !strings.Contains(err.Error()+errOut.String(), tc.err) {
			t.Errorf("serve %v: %v (%s), want %q", tc.args, err, errOut.String(), tc.err)
		}
	}
}

// TestServeHistoryMemory checks that a -history whose slots would not fit
// in memory (the largest allowed, 1048576 slots: 16.5 GiB for SZ-taxi's 156
// sensors and hidden size 8) is a usage error, given before any broker
// is started, where the state's allocation ended the process.
func TestServeHistoryMemory(t *testing.T) {
	_, _, _, b := szTaxiBundle(t, 12, 8)
	path := filepath.Join(t.TempDir(), "b.sdgnn")
	if err := b.Save(path); err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	code := run([]string{"serve", "-model", path, "-http", "", "-history", "1048576"}, io.Discard, &stderr)
	if want := "-history 1048576: " + path + "'s 156 sensors would keep 16.5 GiB"; code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr.String(), want)
	}
}

func TestFutureSlots(t *testing.T) {
	const step = 5 * 60 * 1000
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{{0, 0}, {time.Nanosecond, 1}, {5 * time.Minute, 1}, {5*time.Minute + time.Millisecond, 2}, {time.Hour, 12}, {24 * time.Hour, 288}} {
		if got := futureSlots(tc.d, step); got != tc.want {
			t.Errorf("futureSlots(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}
