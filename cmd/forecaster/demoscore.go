package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/internal/english"
	"github.com/pemsforecast/sdgnn/stream"
	"github.com/segmentio/kafka-go"
)

// scoreText is m as the demo's lines give it, MAE to digits decimals:
// "MAE 3.214, MAPE 12.34% over 1000 values"; with no value scored (none
// paired yet, or a part without readings) it says so, rather than give the
// zero errors of no value as if they were perfect.
func scoreText(m evaluation.Metrics, digits int, sep string) string {
	if m.Count == 0 {
		return "no value scored yet"
	}
	if m.MAPECount != m.Count { // truths under the MAPE floor, or none at all
		if m.MAPECount == 0 {
			return fmt.Sprintf("MAE %.*f over %s%sno MAPE (every truth under the floor)", digits, m.MAE, english.Count(m.Count, "value"), sep)
		}
		return fmt.Sprintf("MAE %.*f over %s%sMAPE %.2f%% over %d", digits, m.MAE, english.Count(m.Count, "value"), sep, m.MAPE, m.MAPECount)
	}
	return fmt.Sprintf("MAE %.*f%sMAPE %.2f%% over %s", digits, m.MAE, sep, m.MAPE, english.Count(m.Count, "value"))
}

// doneText is the demo's last line: r readings and f forecasts, scored
// live over all (m) and over the part named alone (pm).
func doneText(r, f uint64, m, pm evaluation.Metrics, part string) string {
	live := "none scored: no forecast's reading arrived"
	if m.Count > 0 {
		live = "scored where the reading arrived, " + scoreText(m, 4, ", ")
	}
	return fmt.Sprintf("done: %s, %s; live %s; %s alone: %s",
		english.Count(int(r), "reading"), english.Count(int(f), "forecast"), live, part, scoreText(pm, 4, ", "))
}

// scorer pairs forecasts with the readings of their slot as both arrive,
// read back from the topics: every pair, and the pairs in part alone.
type scorer struct {
	mu        sync.Mutex
	step      int64
	names     *pems.SensorNames // the sensors' names in the messages
	part      *stream.PartScope
	forecasts map[[2]int64][]float64
	readings  map[[2]int64][]float64
	acc       evaluation.Accumulator
	partAcc   evaluation.Accumulator
}

func newScorer(floor float64, step int64, part *stream.PartScope, names *pems.SensorNames) *scorer {
	return &scorer{step: step, part: part, names: names, forecasts: map[[2]int64][]float64{}, readings: map[[2]int64][]float64{},
		acc: evaluation.Accumulator{MAPEFloor: floor}, partAcc: evaluation.Accumulator{MAPEFloor: floor}}
}

func (s *scorer) consume(ctx context.Context, brokers []string, sec stream.Security, topic string, forecasts bool) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: fmt.Sprintf("demo-score-%s-%d", topic, time.Now().UnixNano()),
		Topic: topic, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond, Dialer: sec.Dialer()})
	defer r.Close()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			return
		}
		var key [2]int64
		var vals []float64
		if forecasts {
			f, err := stream.DecodeForecastFor(m.Value, s.names)
			if err != nil {
				continue
			}
			key, vals = [2]int64{int64(f.Sensor), f.TS}, f.Values
		} else {
			var rd stream.Reading
			if err := stream.DecodeReadingFor(&rd, m.Key, m.Value, s.names); err != nil {
				continue
			}
			key, vals = [2]int64{int64(rd.Sensor), rd.TS}, rd.Values
		}
		s.mu.Lock()
		mine, other := s.readings, s.forecasts
		if forecasts {
			mine, other = s.forecasts, s.readings
		}
		if o, ok := other[key]; ok {
			pred, truth := vals, o
			if !forecasts {
				pred, truth = o, vals
			}
			in := s.part.Holds(int(key[0]), key[1], s.step)
			for c := range pred {
				s.acc.Add(pred[c], truth[c])
				if in {
					s.partAcc.Add(pred[c], truth[c])
				}
			}
			delete(other, key)
		} else {
			mine[key] = vals
		}
		s.mu.Unlock()
	}
}

// metrics returns the metrics of every pair and of the part's.
func (s *scorer) metrics() (all, part evaluation.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acc.Metrics(), s.partAcc.Metrics()
}
