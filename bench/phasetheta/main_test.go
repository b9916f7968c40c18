package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRejectsBadFlags holds phasetheta to refusing, before it reads any
// data, flags that would time nothing or be ignored: -reps 0 solved no
// node and wrote an empty θ with a Go time of 2⁶² ns, which bench/run
// would have turned into a ratio.
func TestRejectsBadFlags(t *testing.T) {
	data := t.TempDir() // empty: a run that got as far as the data fails there instead
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-reps", "0"}, "-reps"},
		{[]string{"-reps", "-1"}, "-reps"},
		{[]string{"-snapshots", "-5"}, "-snapshots"},
		{[]string{"theta.npz"}, "unexpected arguments"},
	} {
		out := filepath.Join(t.TempDir(), "theta.npz")
		args := append([]string{"-data", data, "-out", out}, c.args...)
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run(%q) = %v, want an error about %s", c.args, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("run(%q) wrote %s", c.args, out)
		}
	}
}
