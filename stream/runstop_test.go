package stream

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRunStoppedWhileStarting stops the service after a broker answered
// but before it consumes, while it asks for its topics: as when it is
// stopped waiting for a broker, nothing was read, so Run returns nil (serve
// exits 0 on SIGTERM) rather than the request cut short by the stop.
func TestRunStoppedWhileStarting(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "readings", "forecasts", "readings-dead-letter"))
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	asked, release := make(chan struct{}), make(chan struct{})
	// The first request after the brokers' check (ApiVersions) is held
	// until the service has been stopped.
	cl.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		if req.Key() == int16(kmsg.ApiVersions) {
			cl.KeepControl()
			return nil, nil, false
		}
		close(asked)
		<-release
		return nil, nil, false
	})
	defer cl.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svc, err := NewService(testBundle(t, 4, 3, 2, 4, 1), Config{Brokers: cl.ListenAddrs(), StepMs: testStep, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runService(ctx, svc)
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the service asked the broker nothing past its check")
	}
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run stopped while starting: %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("Run did not return once stopped")
	}
}
