package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadInvocations checks that wrong commands, flags and model files are
// refused before anything connects, with the exit code (2: usage, 1:
// failure) and a message naming what is wrong.
func TestBadInvocations(t *testing.T) {
	tmp := t.TempDir()
	truncated := filepath.Join(tmp, "cut.sdgnn")
	if err := os.WriteFile(truncated, []byte("PEMSMODL\x01\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "gone.sdgnn")
	blank := filepath.Join(tmp, "blank.token")
	if err := os.WriteFile(blank, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(saslPasswordEnv, "") // none from the environment
	empty := filepath.Join(tmp, "empty.pw")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "commands:"},
		{"exit codes in the usage", []string{"-h"}, 0, "130 publish interrupted"},
		{"help of a command", []string{"serve", "-h"}, 0, "-max-future"},
		{"help of publish", []string{"publish", "-help"}, 0, "-retry-for"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"unknown flag", []string{"serve", "-bogus"}, 2, "flag provided but not defined: -bogus"},
		{"serve without model", []string{"serve"}, 2, "-model B.sdgnn is required"},
		{"zero history", []string{"serve", "-model", missing, "-history", "0"}, 2, "-history 0: want 1 to 1048576 slots"},
		{"huge history", []string{"serve", "-model", missing, "-history", "2000000"}, 2, "-history 2000000: want 1 to 1048576 slots"},
		{"stray argument to serve", []string{"serve", "-model", missing, "stray", "-history", "0"}, 2, `unexpected argument "stray": serve takes flags only`},
		{"stray argument to publish", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "extra.csv", "-dry-run"}, 2, `unexpected argument "extra.csv"`},
		{"stray argument to demo", []string{"demo", "-steps", "5", "now"}, 2, `unexpected argument "now": demo takes flags only`},
		{"state in a missing directory", []string{"serve", "-model", missing, "-state", filepath.Join(tmp, "no", "such", "state")}, 2, "-state " + filepath.Join(tmp, "no", "such", "state") + ": cannot write beside it"},
		{"state that is a directory", []string{"serve", "-model", missing, "-state", tmp}, 2, "is a directory, want a file"},
		{"embedded port out of range", []string{"serve", "-model", missing, "-embedded-port", "70000"}, 2, "-embedded-port 70000: want a port in [0, 65535]"},
		{"embedded data with brokers", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1", "-embedded-data", tmp}, 2, "-embedded-data is for the embedded broker, which -brokers replaces"},
		{"broker list with a space", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1, 127.0.0.1:2"}, 2, `-brokers "127.0.0.1:1, 127.0.0.1:2": want host:port,...`},
		{"negative wait", []string{"serve", "-model", missing, "-wait-brokers", "-5s"}, 2, "-wait-brokers -5s: want 0"},
		{"negative wait of publish", []string{"publish", "-brokers", "127.0.0.1:1", "-wait-brokers", "-5s"}, 2, "-wait-brokers -5s: want 0"},
		{"empty topic", []string{"publish", "-brokers", "127.0.0.1:1", "-topic", ""}, 2, "-topic is empty"},
		{"replay of an unknown dataset", []string{"publish", "-brokers", "127.0.0.1:1", "-dataset", "nope"}, 2, `-dataset: unknown dataset "nope"`},
		{"replay with a bad start", []string{"publish", "-brokers", "127.0.0.1:1", "-start", "2026-01-01"}, 2, `-start "2026-01-01": want RFC 3339`},
		{"replay of an unknown part", []string{"publish", "-brokers", "127.0.0.1:1", "-split-part", "dev"}, 2, `-split-part "dev": want train, val or test`},
		{"NaN speed-up", []string{"publish", "-brokers", "127.0.0.1:1", "-speedup", "NaN"}, 2, "-speedup NaN: want 0"},
		{"demo with negative steps", []string{"demo", "-model", missing, "-steps", "-1"}, 2, "-steps -1: want 0"},
		{"demo with a negative speed-up", []string{"demo", "-speedup", "-1"}, 2, "-speedup -1: want 0"},
		{"demo with a negative MAPE floor", []string{"demo", "-model", missing, "-mape-floor", "-1"}, 2, "-mape-floor -1: want a finite value ≥ 0"},
		{"demo with a NaN MAPE floor", []string{"demo", "-model", missing, "-mape-floor", "NaN"}, 2, "-mape-floor NaN: want a finite value ≥ 0"},
		{"negative max-future", []string{"serve", "-model", missing, "-max-future", "-1h"}, 2, "-max-future -1h0m0s: want 0 (off) or more"},
		{"negative lateness", []string{"serve", "-model", missing, "-lateness", "-5m"}, 2, "-lateness -5m0s: want 0 or more"},
		{"empty value range", []string{"serve", "-model", missing, "-value-range", "5:1"}, 2, `-value-range "5:1": "5:1": the range is empty`},
		{"value range not two numbers", []string{"serve", "-model", missing, "-value-range", "speed=0-120"}, 2, `"speed=0-120": want LO:HI, two numbers`},
		{"value range for all and one", []string{"serve", "-model", missing, "-value-range", "0:100,speed=0:120"}, 2, "LO:HI for every channel and CHANNEL=LO:HI together"},
		{"empty group", []string{"serve", "-model", missing, "-group", " "}, 2, "-group is empty"},
		{"unknown scored part", []string{"serve", "-model", missing, "-score-part", "bogus"}, 2, `-score-part "bogus": want train, val or test`},
		{"negative poll interval", []string{"serve", "-model", missing, "-poll-model", "-1s"}, 2, "-poll-model -1s: want 0 (off) or more"},
		{"negative ready lag", []string{"serve", "-model", missing, "-ready-max-lag", "-1"}, 2, "-ready-max-lag -1: want 0 (no limit) or more"},
		{"reload endpoint without http", []string{"serve", "-model", missing, "-http", "", "-http-reload"}, 2, "-http-reload needs an -http address"},
		{"token without reload endpoint", []string{"serve", "-model", missing, "-http-reload-token-file", blank}, 2, "-http-reload-token-file only serves -http-reload"},
		{"empty token file", []string{"serve", "-model", missing, "-http-reload", "-http-reload-token-file", blank}, 1, blank + " is empty: want a secret"},
		{"missing token file", []string{"serve", "-model", missing, "-http-reload", "-http-reload-token-file", missing + ".token"}, 1, "gone.sdgnn.token: no such file"},
		{"tls with the embedded broker", []string{"serve", "-model", missing, "-tls"}, 2, "-tls flags need -brokers: the embedded broker speaks plaintext"},
		{"sasl with the embedded demo broker, no password", []string{"demo", "-sasl", "PLAIN", "-sasl-user", "u"}, 2, "-sasl PLAIN needs a password"},
		{"unknown sasl mechanism", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1", "-sasl", "GSSAPI", "-sasl-user", "u"}, 2, `-sasl "GSSAPI": want one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{"sasl without user", []string{"publish", "-brokers", "127.0.0.1:1", "-sasl", "PLAIN"}, 2, "-sasl PLAIN needs -sasl-user"},
		{"sasl user without mechanism", []string{"publish", "-brokers", "127.0.0.1:1", "-sasl-user", "u"}, 2, "-sasl-user and -sasl-password-file need -sasl MECHANISM"},
		{"sasl without password", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1", "-sasl", "SCRAM-SHA-512", "-sasl-user", "u"}, 2, "needs a password: -sasl-password-file FILE or $SDGNN_SASL_PASSWORD"},
		{"missing password file", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1", "-sasl", "PLAIN", "-sasl-user", "u", "-sasl-password-file", missing + ".pw"}, 1, "gone.sdgnn.pw: no such file"},
		{"empty password file", []string{"serve", "-model", missing, "-brokers", "127.0.0.1:1", "-sasl", "PLAIN", "-sasl-user", "u", "-sasl-password-file", empty}, 1, "-sasl-password-file " + empty + " is empty"},
		{"client certificate without key", []string{"publish", "-brokers", "127.0.0.1:1", "-tls-cert", blank}, 2, "-tls-cert and -tls-key go together"},
		{"server name without tls", []string{"publish", "-brokers", "127.0.0.1:1", "-tls-server-name", "kafka"}, 2, "-tls-server-name needs -tls"},
		{"missing ca", []string{"publish", "-brokers", "127.0.0.1:1", "-tls-ca", missing + ".pem"}, 1, "gone.sdgnn.pem: no such file"},
		{"data without scored part", []string{"serve", "-model", missing, "-data", tmp}, 2, "-data and -start only serve -score-part"},
		{"missing model", []string{"serve", "-model", missing}, 1, missing},
		{"truncated model", []string{"serve", "-model", truncated}, 1, truncated},
		{"demo of an unknown dataset", []string{"demo", "-dataset", "nope"}, 2, `-dataset: unknown dataset "nope" (known: los-loop, pems04, pems08, sz-taxi)`},
		{"negative speed-up", []string{"publish", "-brokers", "127.0.0.1:1", "-speedup", "-2"}, 2, "-speedup -2: want 0"},
		{"negative steps", []string{"publish", "-brokers", "127.0.0.1:1", "-steps", "-3"}, 2, "-steps -3: want 0"},
		{"bad rows without csv", []string{"publish", "-brokers", "127.0.0.1:1", "-bad-rows", "skip"}, 2, "-bad-rows goes with -csv"},
		{"dry run without csv", []string{"publish", "-dry-run"}, 2, "-dry-run goes with -csv"},
		{"csv with a start", []string{"publish", "-brokers", "127.0.0.1:1", "-csv", blank, "-dataset", "sz-taxi", "-start", "2026-01-01T00:00:00Z"}, 2, "-start is for dataset replays"},
		{"csv with a negative speed-up", []string{"publish", "-brokers", "127.0.0.1:1", "-csv", blank, "-dataset", "sz-taxi", "-speedup", "-1"}, 2, "-speedup -1: want 0"},
		{"paced dry run", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-speedup", "60"}, 2, "a dry run sends nothing to pace"},
		{"csv without model or dataset", []string{"publish", "-csv", blank, "-dry-run"}, 2, "-csv needs -model or -dataset"},
		{"csv without brokers", []string{"publish", "-csv", blank, "-dataset", "sz-taxi"}, 2, "-brokers is required"},
		{"unknown bad-rows", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-bad-rows", "maybe"}, 2, `-bad-rows "maybe": want stop or skip`},
		{"sort without csv", []string{"publish", "-brokers", "127.0.0.1:1", "-sort"}, 2, "-sort goes with -csv"},
		{"from-ts without csv", []string{"publish", "-brokers", "127.0.0.1:1", "-from-ts", "0"}, 2, "-from-ts goes with -csv"},
		{"bad from-ts", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-from-ts", "yesterday"}, 2, `-from-ts: "yesterday" is neither Unix milliseconds nor RFC 3339`},
		{"from-ts before 1970", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-from-ts", "-1"}, 2, `-from-ts "-1" is outside 1970 to 9999`},
		{"from-ts in µs", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-sort", "-from-ts", "1420070400000000"}, 2, `-from-ts "1420070400000000" is outside 1970 to 9999`},
		{"negative retry", []string{"publish", "-brokers", "127.0.0.1:1", "-retry-for", "-1s"}, 2, "-retry-for -1s: want 0 or more"},
		{"negative history", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-history", "-1"}, 2, "-history -1: want 1 to 1048576 slots, as serve's"},
		{"zero history of publish", []string{"publish", "-csv", blank, "-dataset", "sz-taxi", "-dry-run", "-history", "0"}, 2, "-history 0: want 1 to 1048576 slots, as serve's"},
		{"csv of an unknown dataset", []string{"publish", "-csv", blank, "-dataset", "nope", "-dry-run"}, 2, `-dataset: unknown dataset "nope"`},
		{"missing csv", []string{"publish", "-csv", missing + ".csv", "-dataset", "sz-taxi", "-dry-run"}, 1, "gone.sdgnn.csv: no such file"},
		{"csv without header", []string{"publish", "-csv", empty, "-dataset", "sz-taxi", "-dry-run"}, 1, "empty input, want a header row (ts,sensor,speed) (for sz-taxi)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != tc.code || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d (want %d), stderr:\n%s\nwant it to contain %q", code, tc.code, errb.String(), tc.want)
			}
			// A command's refusal is prefixed as all its errors are:
			// "forecaster serve: ", not "serve: " (the flag package's
			// own lines aside).
			if cmd := tc.args; code != 0 && len(cmd) > 0 && slices.Contains([]string{"serve", "publish", "demo"}, cmd[0]) && !strings.HasPrefix(tc.want, "flag provided") {
				for line := range strings.Lines(errb.String()) {
					if strings.Contains(line, tc.want) && !strings.HasPrefix(line, "forecaster "+cmd[0]+": ") {
						t.Errorf("stderr line %q, want it prefixed %q", line, "forecaster "+cmd[0]+": ")
					}
				}
			}
		})
	}
}

// An interrupted publish (Ctrl-C) exits 130, saying what it did, so that
// a script tells it from one that finished; here while it waits for
// brokers that do not answer.
func TestPublishInterruptedExitCode(t *testing.T) {
	var out bytes.Buffer
	errb := &lockedBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"publish", "-brokers", "127.0.0.1:1", "-wait-brokers", "1m", "-steps", "1"}, &out, errb)
	}()
	// The first refused attempt is reported after run has set its
	// signal handler: only then is SIGINT sent.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(errb.String(), "no broker reached yet") {
		if time.Now().After(deadline) {
			t.Fatalf("no attempt reported: %s", errb.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if c := <-code; c != 130 || !strings.Contains(out.String(), "interrupted while waiting for the brokers: nothing published") {
		t.Errorf("exit %d (want 130), stdout %q", c, out.String())
	}
}

// TestHTTPAddrRefused checks that demo says its -http address is taken, and
// demo and serve that it is no address, before anything else (a bundle
// trained for minutes, as it was for demo; for serve, the model loaded
// and the embedded broker started), naming the flag, as a usage error.
func TestHTTPAddrRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(t.TempDir(), "gone.sdgnn")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"demo, address in use", []string{"demo", "-model", missing, "-http", ln.Addr().String()}, "-http " + ln.Addr().String()},
		{"serve, no port", []string{"serve", "-model", missing, "-http", "localhost"}, "-http localhost: "},
		{"serve, port out of range", []string{"serve", "-model", missing, "-http", "127.0.0.1:70000"}, "-http 127.0.0.1:70000: "},
		{"serve, unknown port name", []string{"serve", "-model", missing, "-http", "127.0.0.1:no-such-service"}, "-http 127.0.0.1:no-such-service: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tc.args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), "forecaster "+tc.args[0]+": "+tc.want) || strings.Contains(errb.String(), "gone.sdgnn") {
				t.Fatalf("exit %d, stderr:\n%s\nwant 2 naming %q, before the bundle", code, errb.String(), tc.want)
			}
		})
	}
}

// TestLogJSONToTheEnd checks that serve -log-json ends a failed run with
// a JSON line too, naming the error (it was a plain text line among the
// JSON ones), while a run failing before it has its log says it in text.
func TestLogJSONToTheEnd(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone.sdgnn")
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "-model", missing, "-log-json", "-http", "", "-brokers", "127.0.0.1:1"}, &out, &errb); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("not a JSON line: %q", l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, `"level":"error"`) || !strings.Contains(last, "forecaster serve: ") || !strings.Contains(last, "gone.sdgnn") {
		t.Errorf("last line %q, want the error naming the model file", last)
	}
	errb.Reset()
	if code := run([]string{"serve", "-model", missing, "-log-json", "-http", "localhost"}, &out, &errb); code != 2 || !strings.HasPrefix(errb.String(), "forecaster serve: -http localhost: ") {
		t.Errorf("usage error: exit %d, stderr %q", code, errb.String())
	}
}
