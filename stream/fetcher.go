package stream

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// fetcher fetches readings on a goroutine of its own and decodes them, so
// that the service's goroutine, the critical path of its throughput, takes
// them many at a time, decoded, rather than fetching and decoding each
// itself (on 2 cores about a seventh of its work). It holds at most max
// readings not yet taken: a service behind its readings stops fetching
// rather than growing. A fetch error is handed over in its turn, after
// the readings fetched before it, and the fetcher waits for it to be taken
// before it fetches again, so that errors come no faster than the
// service takes them.
//
// What a fetcher holds when the service stops was not applied, nor so
// committed: it is read again at restart, as kafka-go's own queue is.
type fetcher struct {
	fetch func(context.Context) (kafka.Message, error)
	valid Validator
	names *pems.SensorNames // the model's sensors' names; nil: by index
	max   int

	mu     sync.Mutex
	held   []Held
	err    error
	ready  chan struct{} // a signal: readings or an error to take
	space  chan struct{} // a signal: some were taken
	values []float64     // owned by run: the current chunk of decoded values
	r      Reading       // owned by run: scratch
}

// newFetcher returns a fetcher of fetch's messages (a kafka-go Reader's
// FetchMessage) holding at most max, decoding the readings that valid
// accepts (it must check the grid: StepMs > 0); run starts it.
func newFetcher(fetch func(context.Context) (kafka.Message, error), valid Validator, max int) *fetcher {
	return &fetcher{fetch: fetch, valid: valid, max: max,
		ready: make(chan struct{}, 1), space: make(chan struct{}, 1)}
}

// run fetches until ctx ends.
func (f *fetcher) run(ctx context.Context) {
	for {
		m, err := f.fetch(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			f.mu.Lock()
			f.err = err
			f.mu.Unlock()
			signal(f.ready)
			// Until the error is taken.
			for {
				f.mu.Lock()
				taken := f.err == nil
				f.mu.Unlock()
				if taken {
					break
				}
				select {
				case <-ctx.Done():
					return
				case <-f.space:
				}
			}
			continue
		}
		h := f.decode(m)
		for {
			f.mu.Lock()
			if len(f.held) < f.max {
				f.held = append(f.held, h)
				first := len(f.held) == 1
				f.mu.Unlock()
				if first {
					signal(f.ready)
				}
				break
			}
			f.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-f.space:
			}
		}
	}
}

// decode returns m held, arrived now, with its reading decoded when it is
// one the validator accepts (Held.OK); what is not is decoded and checked
// again by the service, for its error. Only such readings move their
// partition's frontier in the Aligner: one that is to be refused, at a
// slot far ahead say, would let the other partitions run ahead of it.
func (f *fetcher) decode(m kafka.Message) Held {
	h := Held{Msg: RecordOf(m), Arrived: time.Now()}
	r := &f.r
	if DecodeReadingFor(r, m.Key, m.Value, f.names) == nil && f.valid.Check(*r) == nil {
		h.Slot, h.OK = r.TS/f.valid.StepMs, true
		// Its values in chunks shared by many readings, not one each.
		if cap(f.values)-len(f.values) < len(r.Values) {
			f.values = make([]float64, 0, max(4096, len(r.Values)))
		}
		n := len(f.values)
		f.values = append(f.values, r.Values...)
		h.Reading = *r
		h.Reading.Values = f.values[n:len(f.values):len(f.values)]
	}
	return h
}

// take appends to dst up to n of the readings fetched, in their order,
// waiting for one until deadline or until ctx ends; it returns dst
// unchanged then. A fetch error is returned, once, after the readings
// fetched before it have been taken.
func (f *fetcher) take(ctx context.Context, dst []Held, n int, deadline time.Time) ([]Held, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		f.mu.Lock()
		k := min(n, len(f.held))
		if k > 0 {
			dst = append(dst, f.held[:k]...)
			rest := copy(f.held, f.held[k:])
			clear(f.held[rest:]) // the messages' bytes
			f.held = f.held[:rest]
			f.mu.Unlock()
			signal(f.space)
			return dst, nil
		}
		if err := f.err; err != nil {
			f.err = nil
			f.mu.Unlock()
			signal(f.space)
			return dst, err
		}
		f.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 || ctx.Err() != nil {
			return dst, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		}
		select {
		case <-f.ready:
		case <-timer.C:
			timer = nil // fired
			return dst, nil
		case <-ctx.Done():
			return dst, nil
		}
	}
}

// signal wakes whoever waits on c (capacity 1) or, if none, the next to
// wait; it never blocks.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
