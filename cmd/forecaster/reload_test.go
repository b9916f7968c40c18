package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestReloadsModel runs the real forecaster binary, replaces its model file
// first by a truncated copy and then by another model, asking for a reload
// after each, by SIGHUP or by POST /-/reload (-http-reload), or leaving it
// to -poll-model to notice the change: the truncated file must be refused
// with a log line naming it (and, over HTTP, a 409 that names it), the
// service must keep running, and the forecasts of readings published after
// the second reload must carry the new model's version.
func TestReloadsModel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a process")
	}
	const T = 12
	_, ds, split, first := szTaxiBundle(t, T, 8)
	bin := buildForecaster(t, t.TempDir())
	for _, by := range []string{"SIGHUP", "POST /-/reload", "model file changed"} {
		t.Run(by, func(t *testing.T) { testReloadsModel(t, bin, by, ds, split, first) })
	}
}

func testReloadsModel(t *testing.T, bin forecasterBin, by string, ds *pems.Dataset, split snapshot.Split, first *sdgnn.Bundle) {
	const T = 12
	tmp := t.TempDir()
	path := filepath.Join(tmp, "b.sdgnn")
	if err := first.Save(path); err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	second := randomBundle(t, ds, split, first.Meta.Norm, T, 8)
	second.Meta.Version = "reloaded"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	emb := startBroker(ctx, t)

	args := []string{"serve", "-model", path, "-brokers", emb.Addr, "-lateness", "1000h", "-log-json", "-http", ""}
	switch by {
	case "POST /-/reload":
		args[len(args)-1] = "127.0.0.1:0"
		token := filepath.Join(tmp, "reload.token")
		if err := os.WriteFile(token, []byte("s3cret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-http-reload", "-http-reload-token-file", token, "-ready-max-lag", "100000")
	case "model file changed":
		args = append(args, "-poll-model", "20ms")
	}
	cmd := bin.command(args...)
	log := startLogged(ctx, t, cmd)
	var addr string
	if by == "POST /-/reload" {
		addr, _ = log.wait("serving metrics, health and forecasts")["http"].(string)
	}
	if m := log.wait("consuming"); m["model"] != first.Meta.Version {
		t.Errorf("consuming logged model %v, want %q", m["model"], first.Meta.Version)
	}
	if by == "POST /-/reload" {
		// Ready once a batch is committed and the broker answered.
		for {
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if !strings.Contains(string(body), "[+]lag ok: 0 readings behind, at most 100000") {
					t.Fatalf("/readyz:\n%s", body)
				}
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("/readyz never passed: %d\n%s", resp.StatusCode, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// reload asks for a reload and returns the HTTP status and answer
	// (none for SIGHUP; nothing to do when the service polls the file).
	reload := func() (int, string) {
		t.Helper()
		switch by {
		case "SIGHUP":
			cmd.Process.Signal(syscall.SIGHUP)
			return 0, ""
		case "model file changed":
			return 0, ""
		}
		return postReload(t, addr, "s3cret")
	}
	if by == "POST /-/reload" {
		if code, body := postReload(t, addr, "guess"); code != http.StatusUnauthorized {
			t.Fatalf("POST /-/reload with a wrong token: %d %s", code, body)
		}
	}

	// A truncated file (a copy cut short, as by a full disk) is refused.
	if err := os.WriteFile(path, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, body := reload()
	if by == "POST /-/reload" && (code != http.StatusConflict || !strings.Contains(body, path) || !strings.Contains(body, "serving crash-test")) {
		t.Errorf("POST /-/reload of a truncated file: %d %q, want 409 naming %s and the model served crash-test", code, body, path)
	}
	if m := log.wait("reloading the model"); m["by"] != by {
		t.Errorf("reload logged %v, want by %q", m, by)
	}
	refused := log.wait("reload refused: the model served is kept")
	if e, _ := refused["error"].(string); !strings.Contains(e, path) || refused["serving"] != "crash-test" {
		t.Errorf("refusal %v: want the error to name %s and the model served crash-test", refused, path)
	}

	// The new model (Save writes atomically, as distill does) is taken.
	if err := second.Save(path); err != nil {
		t.Fatal(err)
	}
	if code, body := reload(); by == "POST /-/reload" && (code != http.StatusOK || body != "serving reloaded\n") {
		t.Errorf("POST /-/reload: %d %q, want 200 \"serving reloaded\"", code, body)
	}
	if m := log.wait("model reloaded"); m["model"] != "reloaded" || m["was"] != "crash-test" {
		t.Errorf("reload logged %v", m)
	}

	const stepMs = 15 * 60 * 1000
	from := split.Test.Start
	t0 := time.Now().UTC().Truncate(stepMs * time.Millisecond).Add(-time.Duration(from) * stepMs * time.Millisecond)
	s := ds.Series
	if _, err := stream.Publish(ctx, stream.Series{Steps: s.Steps, Nodes: s.Nodes, Channels: s.Channels, Data: s.Data},
		stream.PublishConfig{Brokers: []string{emb.Addr}, Topic: "readings", From: from, To: from + T + 2, Start: t0, StepMs: stepMs}); err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "reload-check", Topic: "forecasts", StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
	defer r.Close()
	for i := 0; i < s.Nodes; i++ {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("after %d forecasts: %v", i, err)
		}
		f, err := stream.DecodeForecast(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if f.Model != "reloaded" {
			t.Fatalf("forecast of sensor %d by model %q after the reload, want %q", f.Sensor, f.Model, "reloaded")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := log.exit(); err != nil {
		t.Fatalf("serve after SIGTERM: %v", err)
	}
}

// postReload asks the service at addr to reload over plain HTTP, with the
// bearer token, and returns the HTTP status and answer.
func postReload(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	return postReloadURL(t, http.DefaultClient, "http://"+addr+"/-/reload", token)
}

// postReloadURL is postReload at url through client (HTTPS, say).
func postReloadURL(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}
