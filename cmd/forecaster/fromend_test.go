package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPublishCSVFromPastTheEnd checks that a -from-ts or -from-line that
// leaves out every row of the file is an error naming the flag, not a
// publish of nothing that exits 0 (a typo in a resume would otherwise
// look like a finished publish).
func TestPublishCSVFromPastTheEnd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := os.WriteFile(path, []byte("ts,sensor,speed\n1420070400000,0,8.5\n1420070400000,1,18.4\n1420071300000,0,9.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-from-ts", "2030-01-01T00:00:00Z"}, "-from-ts"},
		{[]string{"-sort", "-from-ts", "1420071300001"}, "-from-ts"},
		{[]string{"-from-line", "5"}, "-from-line"},
	} {
		var out, errOut bytes.Buffer
		args := append([]string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, tc.args...)
		err := cmdPublish(ctx, args, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("publish %s: %v (stdout %q), want an error naming %s", strings.Join(args, " "), err, out.String(), tc.want)
		}
	}
	// Those that leave a row are fine.
	for _, from := range [][]string{{"-from-ts", "1420071300000"}, {"-from-line", "4"}} {
		args := append([]string{"-csv", path, "-dataset", "sz-taxi", "-dry-run"}, from...)
		if err := cmdPublish(ctx, args, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Errorf("publish %s: %v", strings.Join(args, " "), err)
		}
	}
}
