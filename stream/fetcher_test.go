package stream

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// source hands out msgs in order, then errs[i] where i is past msgs
// (nil: blocks until ctx ends), counting the calls.
type source struct {
	mu    sync.Mutex
	msgs  []kafka.Message
	errAt map[int]error
	calls int
}

func (s *source) fetch(ctx context.Context) (kafka.Message, error) {
	s.mu.Lock()
	i := s.calls
	s.calls++
	s.mu.Unlock()
	if err, ok := s.errAt[i]; ok {
		return kafka.Message{}, err
	}
	if i >= len(s.msgs) {
		<-ctx.Done()
		return kafka.Message{}, ctx.Err()
	}
	return s.msgs[i], nil
}

func (s *source) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// readingMsgs returns n messages of readings of 3 sensors, one slot after
// another, at offsets 0…n−1.
func readingMsgs(n int) []kafka.Message {
	var ms []kafka.Message
	for i := range n {
		r := Reading{Sensor: i % 3, TS: int64(i/3) * testStep, Values: []float64{float64(i), -float64(i)}}
		ms = append(ms, kafka.Message{Partition: i % 2, Offset: int64(i), HighWaterMark: int64(n),
			Key: []byte(strconv.Itoa(r.Sensor)), Value: EncodeReading(nil, &r)})
	}
	return ms
}

func startFetcher(t *testing.T, src *source, max int) (*fetcher, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	f := newFetcher(src.fetch, Validator{StepMs: testStep}, max)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done // run ends with its context
	})
	return f, ctx
}

// TestFetcherOrder takes 5,000 readings from a fetcher in chunks of at
// most 97: every one arrives once, in the order fetched, decoded (its
// slot and values) where it is a reading at a slot's start and not where
// it is not.
func TestFetcherOrder(t *testing.T) {
	msgs := readingMsgs(5000)
	msgs[10].Value = []byte(`{"sensor":1`) // cut
	r := Reading{Sensor: 2, TS: 3*testStep + 1, Values: []float64{1, 2}}
	msgs[11].Value = EncodeReading(nil, &r) // not at a slot's start
	f, ctx := startFetcher(t, &source{msgs: msgs}, 128)
	var got []Held
	for len(got) < len(msgs) {
		n := len(got)
		var err error
		if got, err = f.take(ctx, got, 97, time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if k := len(got) - n; k == 0 || k > 97 {
			t.Fatalf("took %d readings after %d, want 1 to 97", k, n)
		}
	}
	for i, h := range got {
		m := msgs[i]
		if h.Msg.Offset != m.Offset || string(h.Msg.Value) != string(m.Value) {
			t.Fatalf("reading %d is offset %d", i, h.Msg.Offset)
		}
		if i == 10 || i == 11 {
			if h.OK {
				t.Errorf("offset %d taken for a reading at a slot's start: %+v", i, h.Reading)
			}
			continue
		}
		if !h.OK || h.Slot != int64(i/3) || h.Reading.Sensor != i%3 || len(h.Reading.Values) != 2 ||
			h.Reading.Values[0] != float64(i) || h.Reading.Values[1] != -float64(i) || h.Arrived.IsZero() {
			t.Fatalf("offset %d decoded as %+v (slot %d, ok %v)", i, h.Reading, h.Slot, h.OK)
		}
	}
}

// TestFetcherHoldsAtMost: a fetcher nobody takes from stops fetching
// once it holds max readings, and goes on when they are taken.
func TestFetcherHoldsAtMost(t *testing.T) {
	src := &source{msgs: readingMsgs(100)}
	f, ctx := startFetcher(t, src, 7)
	time.Sleep(100 * time.Millisecond)
	if n := src.count(); n > 8 { // 7 held, the 8th fetched and waiting
		t.Fatalf("%d fetches with none taken, want at most 8", n)
	}
	got, err := f.take(ctx, nil, 100, time.Now().Add(5*time.Second))
	if err != nil || len(got) != 7 {
		t.Fatalf("took %d (%v), want the 7 held", len(got), err)
	}
	for len(got) < 100 {
		if got, err = f.take(ctx, got, 100, time.Now().Add(5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if got[99].Msg.Offset != 99 {
		t.Errorf("last taken is offset %d", got[99].Msg.Offset)
	}
}

// TestFetcherError: a fetch error is taken once, after the readings
// fetched before it and before those after; a take that waits for
// nothing returns at its deadline.
func TestFetcherError(t *testing.T) {
	msgs := readingMsgs(5)
	boom := errors.New("broker gone")
	// Calls 0–2 readings, 3 the error, 4… the readings after.
	src := &source{msgs: append(append(msgs[:3:3], kafka.Message{}), msgs[3:]...), errAt: map[int]error{3: boom}}
	f, ctx := startFetcher(t, src, 100)
	time.Sleep(50 * time.Millisecond) // the error fetched too
	var got []Held
	var err error
	for len(got) < 3 && err == nil {
		got, err = f.take(ctx, got, 100, time.Now().Add(5*time.Second))
	}
	if len(got) != 3 || err != nil {
		t.Fatalf("took %d readings (%v) before the error, want 3 and no error", len(got), err)
	}
	if got, err = f.take(ctx, got, 100, time.Now().Add(5*time.Second)); !errors.Is(err, boom) || len(got) != 3 {
		t.Fatalf("then took %d readings and error %v, want none and %v", len(got)-3, err, boom)
	}
	for len(got) < 5 {
		if got, err = f.take(ctx, got, 100, time.Now().Add(5*time.Second)); err != nil {
			t.Fatalf("error again after it was taken: %v", err)
		}
	}
	if got[3].Msg.Offset != 3 || got[4].Msg.Offset != 4 {
		t.Errorf("after the error: offsets %d, %d", got[3].Msg.Offset, got[4].Msg.Offset)
	}
	start := time.Now()
	if got, err = f.take(ctx, got, 100, start.Add(30*time.Millisecond)); err != nil || len(got) != 5 {
		t.Fatalf("took %d more (%v) from an empty source", len(got)-5, err)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Errorf("returned after %v, before its deadline", waited)
	}
}
