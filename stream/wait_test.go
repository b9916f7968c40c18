package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/segmentio/kafka-go"
)

// TestUnreachable sorts CheckBrokers' errors into those a cluster still
// starting gives, which WaitBrokers waits out, and the rest.
func TestUnreachable(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	timeout := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("i/o timeout")}
	noName := &net.DNSError{Err: "no such host", Name: "kafka-0", IsNotFound: true}
	read := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	broker := func(addr string, err error) error { return fmt.Errorf("%s: %w", addr, err) }
	check := func(errs ...error) error {
		return fmt.Errorf("connect to the brokers (PLAINTEXT): %w", errors.Join(errs...))
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"one broker refused, through kafka-go's wrapping", check(broker("a:9092", fmt.Errorf("failed to dial: %w", fmt.Errorf("failed to open connection to a:9092: %w", refused)))), true},
		{"every broker refused or timed out", check(broker("a:9092", refused), broker("b:9092", timeout)), true},
		{"a name not resolved yet", check(broker("kafka-0:9092", fmt.Errorf("failed to dial: failed to resolve host: %w", noName))), true},
		{"one refused, one refusing the password", check(broker("a:9092", refused), broker("b:9092", kafka.SASLAuthenticationFailed)), false},
		{"the password refused", check(broker("a:9092", fmt.Errorf("could not successfully authenticate: %w", kafka.SASLAuthenticationFailed))), false},
		{"a connection closed after it opened", check(broker("a:9092", io.EOF)), false},
		{"a read that failed", check(broker("a:9092", read)), false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("%s: unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestWaitBrokers waits for a broker that starts after the first attempts
// failed, and gives up on one that does not start: at once without a wait,
// after the wait otherwise, saying how long it waited.
func TestWaitBrokers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	port := freePort(t)
	addr := []string{"127.0.0.1:" + strconv.Itoa(port)}

	var attempts int
	err := Security{}.WaitBrokers(ctx, addr, 0, func(error, time.Duration) { attempts++ })
	if err == nil || !unreachable(err) || attempts != 0 {
		t.Fatalf("no wait: %v after %d attempts told, want the refusal and none told", err, attempts)
	}
	start := time.Now()
	err = Security{}.WaitBrokers(ctx, addr, 1500*time.Millisecond, func(error, time.Duration) { attempts++ })
	if err == nil || !strings.Contains(err.Error(), "no broker answered in 1.5s") || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("gave up with %v, want the refusal and the wait", err)
	}
	// Two pauses (1 s, then the 0.5 s left), one if the machine stalls.
	if attempts < 1 || attempts > 2 || time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("gave up after %d failed attempts told and %s, want 2 (after 1 s and 0.5 s) and the whole wait", attempts, time.Since(start))
	}

	failed := make(chan error, 16)
	done := make(chan error, 1)
	go func() {
		done <- Security{}.WaitBrokers(ctx, addr, 45*time.Second, func(err error, _ time.Duration) { failed <- err })
	}()
	if err := <-failed; !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("first attempt failed with %v, want a refusal", err)
	}
	emb, err := StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	if err := <-done; err != nil {
		t.Fatalf("waited for a broker that started: %v", err)
	}
}

// TestServiceWaitsForBroker starts the service before its broker: /healthz
// answers and /readyz names the refusal meanwhile, and once the broker
// starts the service consumes what is published. A service stopped while
// it waits returns no error.
func TestServiceWaitsForBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const n, T, C, d = 4, 3, 2, 4
	b := testBundle(t, n, T, C, d, 1)
	port := freePort(t)
	brokers := []string{"127.0.0.1:" + strconv.Itoa(port)}
	httpAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	svc, err := NewService(b, Config{Brokers: brokers, StepMs: testStep, WaitBrokers: time.Minute, HTTPAddr: httpAddr,
		Lateness: 100 * time.Millisecond, ProbeEvery: 100 * time.Millisecond, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case err := <-done:
				t.Fatalf("service stopped while waiting for %s: %v", what, err)
			case <-ctx.Done():
				_, body := get("/readyz")
				t.Fatalf("no %s; /readyz:\n%s", what, body)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	var code int
	var body string
	waitFor("/readyz naming the refusal", func() bool {
		code, body = get("/readyz")
		return strings.Contains(body, "[-]broker failed: ") && strings.Contains(body, "connection refused (never answered)")
	})
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]started failed") {
		t.Fatalf("/readyz while waiting: %d\n%s", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while waiting: %d, want 200 (alive, not ready)", code)
	}

	emb, err := StartEmbedded(port, "")
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	waitFor("consuming", func() bool { return svc.Readiness().Checks[0].OK })
	const steps = 8
	sent, err := Publish(ctx, Series{Steps: steps, Nodes: n, Channels: C, Data: testSeries(steps, n, C, 2)},
		PublishConfig{Brokers: brokers, Topic: "readings", From: 0, To: steps, Start: time.UnixMilli(1000 * testStep), StepMs: testStep})
	if err != nil {
		t.Fatal(err)
	}
	waitFor("every reading applied", func() bool { return svc.Counters().Applied.Load() == uint64(sent) })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run after the broker came: %v", err)
	}

	// Stopped while it waits for a broker that never comes.
	svc, err = NewService(b, Config{Brokers: []string{"127.0.0.1:" + strconv.Itoa(freePort(t))}, StepMs: testStep, WaitBrokers: time.Hour, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done = runService(ctx, svc)
	time.Sleep(1200 * time.Millisecond) // past the first attempt and into the pause
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stopped while waiting: Run returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not stop within 10s of its context's end while waiting for a broker")
	}
}
