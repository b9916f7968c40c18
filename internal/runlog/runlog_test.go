package runlog

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestNotes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		use     bool
		json    bool
		wantSay string // JSON message, or the plain line
		sayJSON bool
		failOut string
		failJS  bool
	}{
		{"no logger", false, false, "cmd: stopping\n", false, "cmd x: broken\n", false},
		{"console logger", true, false, "stopping", true, "cmd x: broken\n", false},
		{"JSON logger", true, true, "stopping", true, "cmd x: broken", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr, logged bytes.Buffer
			n := New("cmd", &stderr)
			ctx := NewContext(context.Background(), n)
			if tc.use {
				Use(ctx, zerolog.New(&logged), tc.json)
			}
			n.Say("stopping")
			n.Fail("cmd x: broken")
			check := func(what, want string, asJSON bool, level string) {
				t.Helper()
				if !asJSON {
					if !strings.Contains(stderr.String(), want) {
						t.Errorf("%s: stderr %q, want %q in it", what, stderr.String(), want)
					}
					return
				}
				for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
					var m map[string]any
					if err := json.Unmarshal([]byte(line), &m); err != nil {
						t.Fatalf("log line %q: %v", line, err)
					}
					if m["message"] == want && m["level"] == level {
						return
					}
				}
				t.Errorf("%s: log %q, want a %s line %q", what, logged.String(), level, want)
			}
			check("notice", tc.wantSay, tc.sayJSON, "info")
			check("failure", tc.failOut, tc.failJS, "error")
			if tc.json && stderr.Len() != 0 {
				t.Errorf("JSON log, yet plain stderr %q", stderr.String())
			}
		})
	}
	Use(context.Background(), zerolog.Nop(), true) // no notes: nothing happens
}
