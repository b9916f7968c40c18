package stream

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Benchmark sizes as the shipped PeMS04 models: window 12, 3 channels,
// hidden 16, 307 nodes, |θ_z| = 6.
const benchN, benchT, benchC, benchD = 307, 12, 3, 16

func benchState(b *testing.B) *State {
	b.Helper()
	bd := testBundle6(b, benchN, benchT, benchC, benchD, 1)
	st, err := NewState(bd, testStep)
	if err != nil {
		b.Fatal(err)
	}
	mustApply(b, st, streamOf(testSeries(benchT, benchN, benchC, 2), benchT, benchN, benchC, 5_000_000))
	return st
}

func BenchmarkDecodeReading(b *testing.B) {
	key := []byte("12")
	value := []byte(`{"v":1,"sensor":12,"ts":1700000000000,"values":[123.0,0.05,64.2]}`)
	b.Run("handwritten", func(b *testing.B) {
		var r Reading
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if err := DecodeReadingInto(&r, key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same reading of a model whose sensors have IDs (Los-loop's),
	// keyed and named by its ID: a map lookup more.
	b.Run("handwritten-id", func(b *testing.B) {
		ids := make([]string, benchN)
		for i := range ids {
			ids[i] = strconv.Itoa(700000 + 97*i)
		}
		names, err := pems.NewSensorNames(benchN, ids)
		if err != nil {
			b.Fatal(err)
		}
		key := []byte(ids[12])
		value := []byte(`{"v":1,"sensor":"` + ids[12] + `","ts":1700000000000,"values":[123.0,0.05,64.2]}`)
		var r Reading
		b.ReportAllocs()
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if err := DecodeReadingFor(&r, key, value, names); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handwritten-fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeReading(key, value); err != nil {
				b.Fatal(err)
			}
		}
	})
	// encoding/json into a struct, for comparison (no validation at all).
	b.Run("encoding-json", func(b *testing.B) {
		var m struct {
			V      int       `json:"v"`
			Sensor int       `json:"sensor"`
			TS     int64     `json:"ts"`
			Values []float64 `json:"values"`
		}
		b.ReportAllocs()
		for b.Loop() {
			m.Values = m.Values[:0]
			if err := json.Unmarshal(value, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeForecast(b *testing.B) {
	f := Forecast{Sensor: 12, TS: 1700000300000, Values: []float64{123.456789, 0.0523, 64.2}, Model: "pems04-sdgnn-v3",
		Inputs:    []Input{{Sensor: 11, TS: 1700000000000}, {Sensor: 12, TS: 1700000000000}, {Sensor: 40, TS: 1700000000000}, {Sensor: 77, TS: 1700000000000}, {Sensor: 101, TS: 1700000000000}, {Sensor: 300, TS: 1700000000000}},
		EmittedMs: 1700000301234}
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = EncodeForecast(buf[:0], &f)
	}
}

// BenchmarkForecastCached is the per-forecast hot path: cached embeddings of
// the receptive nodes → decoder.
func BenchmarkForecastCached(b *testing.B) {
	st := benchState(b)
	var f Forecast
	if err := st.Forecast(0, &f); err != nil { // size dst once
		b.Fatal(err)
	}
	z := 0
	b.ReportAllocs()
	for b.Loop() {
		if err := st.Forecast(z, &f); err != nil {
			b.Fatal(err)
		}
		z++
		if z == benchN {
			z = 0
		}
	}
}

// BenchmarkForecastSlots forecasts every node of the graph for one slot
// from cached embeddings, node by node (ForecastSlot) and in one batch
// (ForecastSlots, as EmitMany does), in one run so that the two compare;
// ns/forecast is per node.
func BenchmarkForecastSlots(b *testing.B) {
	st := benchState(b)
	zs := make([]int, benchN)
	ts := make([]int64, benchN)
	for z := range zs {
		zs[z], ts[z] = z, (5_000_000+benchT)*testStep
	}
	fs := make([]Forecast, benchN)
	for _, err := range st.ForecastSlots(zs, ts, fs) { // embeddings cached, dst sized
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Run("one-by-one", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for z := range zs {
				if err := st.ForecastSlot(z, ts[z], &fs[z]); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchN), "ns/forecast")
	})
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, err := range st.ForecastSlots(zs, ts, fs) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchN), "ns/forecast")
	})
}

// BenchmarkApplyReading applies readings that each advance a node's window:
// ring bookkeeping only, as embeddings are computed when a forecast needs
// them (in batches, see BenchmarkPipeline and the bench package).
func BenchmarkApplyReading(b *testing.B) {
	// plain: no checks beyond the reading's form (State's default);
	// guarded: the service's, a stream mark of the ring's slots and the
	// channels' plausible ranges.
	for _, guarded := range []bool{false, true} {
		name := "plain"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			st := benchState(b)
			if guarded {
				st.SetMaxAhead(int64(st.r))
				if err := st.SetBounds([]snapshot.Bounds{{Lo: 0, Hi: 3000}, {Lo: 0, Hi: 1.5}, {Lo: 0, Hi: 120}}); err != nil {
					b.Fatal(err)
				}
			}
			r := Reading{Values: []float64{120, 0.05, 64}}
			slot := int64(5_000_000 + benchT)
			z := 0
			b.ReportAllocs()
			for b.Loop() {
				r.Sensor, r.TS = z, slot*testStep
				if _, err := st.Apply(r); err != nil {
					b.Fatal(err)
				}
				z++
				if z == benchN {
					z, slot = 0, slot+1
				}
			}
		})
	}
}

// BenchmarkPipeline is one reading through decode, validation, apply,
// emission and encoding of the forecasts it makes due, on average.
func BenchmarkPipeline(b *testing.B) {
	benchPipeline(b, benchState(b))
}

// BenchmarkPipelineByID is BenchmarkPipeline for a model whose sensors
// have IDs: readings keyed and named by ID, forecasts and their inputs
// named so.
func BenchmarkPipelineByID(b *testing.B) {
	bd := testBundle6(b, benchN, benchT, benchC, benchD, 1)
	bd.Meta.SensorIDs = make([]string, benchN)
	for i := range bd.Meta.SensorIDs {
		bd.Meta.SensorIDs[i] = strconv.Itoa(700000 + 97*i)
	}
	st, err := NewState(bd, testStep)
	if err != nil {
		b.Fatal(err)
	}
	mustApply(b, st, streamOf(testSeries(benchT, benchN, benchC, 2), benchT, benchN, benchC, 5_000_000))
	benchPipeline(b, st)
}

func benchPipeline(b *testing.B, st *State) {
	names := st.Names()
	em := NewEmitter(st, time.Minute)
	v := &Validator{Nodes: benchN, Channels: benchC, StepMs: testStep}
	var r Reading
	var f Forecast
	var key, msg, out []byte
	slot := int64(5_000_000 + benchT)
	z := 0
	b.ReportAllocs()
	for b.Loop() {
		msg = EncodeReadingFor(msg[:0], &Reading{Sensor: z, TS: slot * testStep, Values: []float64{120, 0.05, 64}}, names)
		key = appendKey(key[:0], z, names.ID(z))
		if err := DecodeReadingFor(&r, key, msg, names); err != nil {
			b.Fatal(err)
		}
		if err := v.Check(r); err != nil {
			b.Fatal(err)
		}
		now := time.UnixMilli((slot + 1) * testStep)
		res, err := st.Apply(r)
		if err != nil {
			b.Fatal(err)
		}
		em.OnApply(res, now)
		for _, d := range em.Due(now) {
			if _, err := em.Emit(d, now, &f); err != nil {
				b.Fatal(err)
			}
			out = EncodeForecast(out[:0], &f)
		}
		z++
		if z == benchN {
			z, slot = 0, slot+1
		}
	}
}
