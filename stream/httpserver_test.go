package stream

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestHTTPServerDropsSlowAndIdleClients checks that the HTTP server does
// not hold a connection for ever: a keep-alive connection left idle after
// its answer, and a request whose body never comes, are closed once the
// server's idle and read timeouts pass (lowered here), so that clients
// that stall cannot pile up connections until the process runs out of
// file descriptors.
func TestHTTPServerDropsSlowAndIdleClients(t *testing.T) {
	defer func(idle, read time.Duration) { httpIdleTimeout, httpReadTimeout = idle, read }(httpIdleTimeout, httpReadTimeout)
	httpIdleTimeout, httpReadTimeout = 300*time.Millisecond, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := testBundle(t, 4, 3, 2, 4, 1)
	httpAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	// No broker: the HTTP endpoints serve while the service waits for one.
	svc, err := NewService(b, Config{Brokers: []string{"127.0.0.1:" + strconv.Itoa(freePort(t))}, StepMs: testStep,
		WaitBrokers: time.Minute, HTTPAddr: httpAddr, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	dial := func() net.Conn {
		for {
			c, err := net.Dial("tcp", httpAddr)
			if err == nil {
				return c
			}
			select {
			case <-ctx.Done():
				t.Fatal(err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	for _, tc := range []struct{ name, request string }{
		{"idle keep-alive connection", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"},
		// The server reads a small body the handler left before it
		// answers, to keep the connection.
		{"request body never sent", "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab"},
	} {
		c := dial()
		if _, err := io.WriteString(c, tc.request); err != nil {
			t.Fatal(err)
		}
		// Whatever the server answers, then its end of the connection.
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Errorf("%s: still open 5 s after the request (%v); read %q", tc.name, err, got)
		}
		c.Close()
	}
}
