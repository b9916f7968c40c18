package stream

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/evaluation"
)

// DefaultLiveSlots is the number of recent slots per sensor a Live keeps
// when none is configured: twelve hours of 15-minute SZ-taxi slots, four of
// 5-minute PeMS slots.
const DefaultLiveSlots = 48

// livePage is the operations page served at /live: plain HTML and a little
// JavaScript that polls /api/sensors, without external resources. For a
// model whose sensors have locations it draws them on a map (SVG, no
// tiles), coloured by running MAPE, a click showing a sensor. Its script
// and style are inline and its handlers and styles set from the script
// (none in attributes), so that it runs under liveCSP, which allows the
// inline script and style by hash only.
//
//go:embed live.html
var livePage []byte

// Bits of a Live ring entry's state.
const (
	liveReading  uint8 = 1 << iota // the entry holds the slot's reading
	liveForecast                   // the entry holds the slot's forecast
	liveSilent                     // that forecast was made from an empty own window (Forecast.Silent)
)

// LiveConfig configures a Live.
type LiveConfig struct {
	Nodes    int   // sensors, numbered 0..Nodes-1
	Channels int   // values per reading and forecast
	StepMs   int64 // slot length in Unix ms
	// Slots is the number of recent slots kept per sensor; 0 means
	// DefaultLiveSlots.
	Slots int
	// MAPEFloor leaves truths below it out of the running MAPE (not out of
	// MAE), as evaluation.Accumulator does; missing readings (0) are left
	// out of every metric.
	MAPEFloor float64
	// ChannelNames names the channels; missing names are "channel I".
	ChannelNames []string
	// Window is the model's window, whose length the completeness
	// classes' edges depend on (evaluation.OwnClass); 0 leaves the
	// breakdown by completeness out.
	Window int
	// Part, when not nil, is a part of the model's split whose forecasts
	// are also scored on their own (LiveSummary.Part, the sensors'
	// part_metrics): the held-out forecasts of a replay of the data the
	// model was trained on.
	Part *PartScope
}

// Live joins, per sensor, the readings and the forecasts of its last slots
// and keeps the running masked error of every forecast whose reading has
// arrived, for the service's live view. A reading and the forecast of its
// slot may come in either order; they are joined by (sensor, slot), and
// each pair is scored once, when its second half arrives. The first reading
// and the first forecast of a slot are kept, as State keeps the first
// reading.
//
// Storage is allocated once: recording costs a lock and a copy, nothing is
// allocated. Live is safe for concurrent use, so that HTTP handlers read it
// while the service goroutine records. It is not part of the state
// snapshot: a restarted service starts with an empty Live.
type Live struct {
	mu       sync.RWMutex
	n, c, r  int
	stepMs   int64
	floor    float64
	channels []string

	slots     []int64                  // n×r: slot index held at each ring position, noSlot if none
	flags     []uint8                  // n×r: liveReading | liveForecast
	readings  []float64                // n×r×c
	forecasts []float64                // n×r×c
	newest    []int64                  // n: newest slot recorded, noSlot if none
	latestF   []int64                  // n: newest forecast slot, noSlot if none
	latestR   []int64                  // n: newest reading slot, noSlot if none
	acc       []evaluation.Accumulator // n
	channel   []evaluation.Accumulator // c: over all sensors
	total     evaluation.Accumulator
	dropped   uint64 // records refused as invalid or older than the ring
	window    int
	cls       []uint8 // n×r: the completeness class of the forecast held (Forecast.class), 0 if unknown
	byClass   [2 * evaluation.OwnClasses]evaluation.Accumulator
	unscored  uint64 // finite pairs too far apart to score (see score)

	part        *PartScope               // nil: no part scored apart
	partAcc     []evaluation.Accumulator // n, when part is set
	partChannel []evaluation.Accumulator // c
	partTotal   evaluation.Accumulator
}

// NewLive returns an empty Live.
func NewLive(cfg LiveConfig) (*Live, error) {
	if cfg.Slots == 0 {
		cfg.Slots = DefaultLiveSlots
	}
	switch {
	case cfg.Nodes < 1:
		return nil, fmt.Errorf("live view: %d sensors: want at least 1", cfg.Nodes)
	case cfg.Channels < 1:
		return nil, fmt.Errorf("live view: %d channels: want at least 1", cfg.Channels)
	case cfg.StepMs <= 0:
		return nil, fmt.Errorf("live view: slot length %d ms must be positive", cfg.StepMs)
	case cfg.Slots < 1:
		return nil, fmt.Errorf("live view: %d slots per sensor: want at least 1", cfg.Slots)
	case cfg.MAPEFloor < 0 || math.IsNaN(cfg.MAPEFloor):
		return nil, fmt.Errorf("live view: MAPE floor %g: must be ≥ 0", cfg.MAPEFloor)
	}
	if cfg.Part != nil {
		if err := cfg.Part.Check(cfg.StepMs); err != nil {
			return nil, fmt.Errorf("live view: %w", err)
		}
	}
	n, c, r := cfg.Nodes, cfg.Channels, cfg.Slots
	l := &Live{n: n, c: c, r: r, stepMs: cfg.StepMs, floor: cfg.MAPEFloor, channels: make([]string, c),
		slots: make([]int64, n*r), flags: make([]uint8, n*r), readings: make([]float64, n*r*c), forecasts: make([]float64, n*r*c),
		newest: make([]int64, n), latestF: make([]int64, n), latestR: make([]int64, n), window: max(cfg.Window, 0), cls: make([]uint8, n*r),
		acc: make([]evaluation.Accumulator, n), channel: make([]evaluation.Accumulator, c),
		total: evaluation.Accumulator{MAPEFloor: cfg.MAPEFloor}}
	for i := range l.channels {
		if i < len(cfg.ChannelNames) && cfg.ChannelNames[i] != "" {
			l.channels[i] = cfg.ChannelNames[i]
		} else {
			l.channels[i] = "channel " + strconv.Itoa(i)
		}
	}
	for i := range l.slots {
		l.slots[i] = noSlot
	}
	for z := range n {
		l.newest[z], l.latestF[z], l.latestR[z] = noSlot, noSlot, noSlot
		l.acc[z].MAPEFloor = cfg.MAPEFloor
	}
	for i := range l.channel {
		l.channel[i].MAPEFloor = cfg.MAPEFloor
	}
	if cfg.Part != nil {
		sc := *cfg.Part
		l.part = &sc
		l.partAcc, l.partChannel = make([]evaluation.Accumulator, n), make([]evaluation.Accumulator, c)
		l.partTotal.MAPEFloor = cfg.MAPEFloor
		for z := range l.partAcc {
			l.partAcc[z].MAPEFloor = cfg.MAPEFloor
		}
		for i := range l.partChannel {
			l.partChannel[i].MAPEFloor = cfg.MAPEFloor
		}
	}
	return l, nil
}

// Nodes returns the number of sensors.
func (l *Live) Nodes() int { return l.n }

// Reading records the reading of sensor for the slot starting at ts (Unix
// ms). It reports whether it was recorded: false for an unknown sensor, a
// wrong number of values, a ts off the slot grid or older than the slots
// kept, or a slot that already has its reading.
func (l *Live) Reading(sensor int, ts int64, values []float64) bool {
	return l.record(sensor, ts, values, liveReading, 0, false)
}

// Forecast records the forecast of sensor for the slot starting at ts
// (Unix ms), as Reading records a reading.
func (l *Live) Forecast(sensor int, ts int64, values []float64) bool {
	return l.record(sensor, ts, values, liveForecast, 0, false)
}

// RecordForecast records forecast f as Forecast does, with its Silent
// mark: the view marks a sensor whose latest forecast was made from an
// empty own window (LiveSensorSummary.Silent, LiveSlot.Silent). A
// forecast State made also carries the completeness class of its inputs,
// by which its error is scored too (LiveSummary.ByCompleteness).
func (l *Live) RecordForecast(f *Forecast) bool {
	kind := liveForecast
	if f.Silent {
		kind |= liveSilent
	}
	return l.record(f.Sensor, f.TS, f.Values, kind, f.class, false)
}

// liveClass is the code of a forecast's completeness class, as
// Forecast.class holds it: own an evaluation.OwnClass, others whether
// another receptive sensor's window lacked a reading.
func liveClass(own int, others bool) uint8 {
	c := 1 + 2*own
	if others {
		c++
	}
	return uint8(c)
}

// backfill records a reading or forecast read back from the log (the
// rebuild), as Reading and Forecast do, except that one older than the
// slots kept is not counted as dropped: the log holds more than the view
// keeps, and nothing was refused.
func (l *Live) backfill(sensor int, ts int64, values []float64, kind uint8) bool {
	return l.record(sensor, ts, values, kind, 0, true)
}

func (l *Live) record(z int, ts int64, values []float64, kind, cls uint8, backfill bool) bool {
	if z < 0 || z >= l.n || len(values) != l.c || ts%l.stepMs != 0 || ts/l.stepMs == noSlot {
		l.mu.Lock()
		l.dropped++
		l.mu.Unlock()
		return false
	}
	slot := ts / l.stepMs
	l.mu.Lock()
	defer l.mu.Unlock()
	newest := l.newest[z]
	if newest != noSlot && slot <= newest-int64(l.r) {
		if !backfill {
			l.dropped++ // older than the ring
		}
		return false
	}
	i := z*l.r + posIn(slot, l.r)
	if l.slots[i] != slot {
		// The position's previous slot (if any) is older than the ring now.
		l.slots[i], l.flags[i], l.cls[i] = slot, 0, 0
	}
	if l.flags[i]&kind != 0 {
		if kind == liveReading {
			return l.complete(z, slot, i, values)
		}
		return false // first one kept
	}
	vals := l.readings
	if kind&liveForecast != 0 {
		vals = l.forecasts
	}
	copy(vals[i*l.c:(i+1)*l.c], values)
	l.flags[i] |= kind
	if kind&liveForecast != 0 {
		l.cls[i] = cls
	}
	if newest == noSlot || slot > newest {
		l.newest[z] = slot
	}
	latest := &l.latestR[z]
	if kind&liveForecast != 0 {
		latest = &l.latestF[z]
	}
	if *latest == noSlot || slot > *latest {
		*latest = slot
	}
	if both := liveReading | liveForecast; l.flags[i]&both == both { // the second half: score the pair, once
		pred, truth := l.forecasts[i*l.c:(i+1)*l.c], l.readings[i*l.c:(i+1)*l.c]
		for ch, p := range pred {
			l.score(z, slot, l.cls[i], ch, p, truth[ch])
		}
	}
	return true
}

// score adds the pair of sensor z's forecast p and reading truth of
// channel ch at slot to the accumulators, and to its completeness class
// cls's where known (not 0).
func (l *Live) score(z int, slot int64, cls uint8, ch int, p, truth float64) {
	if d := p - truth; math.IsInf(d*d, 0) && !math.IsInf(p, 0) {
		// A finite pair too far apart to square (a reading of 1e300
		// let in with the plausible ranges off): scored, every sum would
		// be infinite until a restart. The counts of non-finite
		// forecasts stay the accumulators' own.
		l.unscored++
		return
	}
	l.acc[z].Add(p, truth)
	l.channel[ch].Add(p, truth)
	l.total.Add(p, truth)
	if cls > 0 && int(cls) <= len(l.byClass) {
		l.byClass[cls-1].Add(p, truth)
	}
	if l.part != nil && l.part.Holds(z, slot*l.stepMs, l.stepMs) {
		l.partAcc[z].Add(p, truth)
		l.partChannel[ch].Add(p, truth)
		l.partTotal.Add(p, truth)
	}
}

// complete fills in the missing values (0) of the reading held at
// position i (sensor z, slot) from a later reading of the slot, as
// State.Apply completes a slot (see Complement), and scores the channels
// filled if the forecast is already paired with it; a later reading with
// other values is not kept. It reports whether the reading was kept.
func (l *Live) complete(z int, slot int64, i int, values []float64) bool {
	held := l.readings[i*l.c : (i+1)*l.c]
	if adds, conflicts := Complement(held, values); !adds || conflicts {
		return false
	}
	paired := l.flags[i]&liveForecast != 0
	for ch, x := range values {
		if held[ch] != 0 || x == 0 {
			continue
		}
		held[ch] = x
		if paired {
			l.score(z, slot, l.cls[i], ch, l.forecasts[i*l.c+ch], x)
		}
	}
	return true
}

// metricsOf returns a's metrics, with NaN errors (null in JSON) rather
// than zeros while no pair has been scored, so that a sensor without
// data does not look perfect.
func metricsOf(a evaluation.Accumulator) evaluation.Metrics {
	m := a.Metrics()
	if m.Count == 0 {
		m.MAE, m.RMSE, m.MAPE = math.NaN(), math.NaN(), math.NaN()
	}
	return m
}

// Metrics returns the running metrics of sensor's forecasts (over all
// channels), and false for an unknown sensor. The errors are NaN while no
// pair has been scored, and from the first pair whose forecast was not
// finite on (evaluation.Accumulator), Count then above 0.
func (l *Live) Metrics(sensor int) (evaluation.Metrics, bool) {
	if sensor < 0 || sensor >= l.n {
		return evaluation.Metrics{}, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return metricsOf(l.acc[sensor]), true
}

// Overall returns the running metrics over every sensor and channel.
func (l *Live) Overall() evaluation.Metrics {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return metricsOf(l.total)
}

// PartOverall returns the running metrics of the forecasts in the part
// scope, over every sensor and channel, and false without a part scope.
func (l *Live) PartOverall() (evaluation.Metrics, bool) {
	if l.part == nil {
		return evaluation.Metrics{}, false
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return metricsOf(l.partTotal), true
}

// Dropped returns the number of records refused as invalid (unknown
// sensor, wrong number of values, off the grid) or older than the slots
// kept; a second record of a slot, normal under at-least-once delivery, is
// not counted.
func (l *Live) Dropped() uint64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.dropped
}

// WritePrometheus writes the live view's running sums in the Prometheus
// text format, labelled scope="all" and, with a part scope, scope="part":
// counters, so that a dashboard or an alert computes the error over any
// window, for example the last hour's MAE as
//
//	rate(sdgnn_stream_live_abs_error_total[1h]) / rate(sdgnn_stream_live_scored_values_total[1h])
//
// and MAPE (in percent) as 100 × the rate of
// sdgnn_stream_live_rel_error_total over that of
// sdgnn_stream_live_mape_values_total. These pool the channels, each in
// its own units (PeMS's flow, occupancy and speed); each sum is also
// written by channel, as sdgnn_stream_live_channel_… with a label
// channel (the bundle's name of it), so that a dashboard shows each
// channel's error, whose sum over the channels is the pooled one.
func (l *Live) WritePrometheus(w io.Writer) error {
	l.mu.RLock()
	scopes := []evaluation.Totals{l.total.Totals()}
	chans := [][]evaluation.Totals{make([]evaluation.Totals, l.c)}
	for ch := range l.c {
		chans[0][ch] = l.channel[ch].Totals()
	}
	if l.part != nil {
		scopes = append(scopes, l.partTotal.Totals())
		chans = append(chans, make([]evaluation.Totals, l.c))
		for ch := range l.c {
			chans[1][ch] = l.partChannel[ch].Totals()
		}
	}
	dropped, unscored := l.dropped, l.unscored
	type classTotals struct {
		own, receptive string
		t              evaluation.Totals
	}
	var byClass []classTotals
	l.classes(func(own, receptive string, j int) {
		byClass = append(byClass, classTotals{own, receptive, l.byClass[j].Totals()})
	})
	l.mu.RUnlock()
	bw := bufio.NewWriter(w)
	scopeNames := [...]string{"all", "part"}
	family := func(name, help string, value func(evaluation.Totals) string) {
		fmt.Fprintf(bw, "# HELP %s%s %s\n# TYPE %s%s counter\n", metricPrefix, name, help, metricPrefix, name)
		for i, t := range scopes {
			fmt.Fprintf(bw, "%s%s{scope=%q} %s\n", metricPrefix, name, scopeNames[i], value(t))
		}
		byChannel := "live_channel_" + strings.TrimPrefix(name, "live_")
		fmt.Fprintf(bw, "# HELP %s%s %s By channel.\n# TYPE %s%s counter\n", metricPrefix, byChannel, help, metricPrefix, byChannel)
		for i, ts := range chans {
			for ch, t := range ts {
				fmt.Fprintf(bw, "%s%s{scope=%q,channel=\"%s\"} %s\n", metricPrefix, byChannel, scopeNames[i], promLabel(l.channels[ch]), value(t))
			}
		}
	}
	float := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	family("live_scored_values_total", "Forecast values scored against the reading of their slot (missing readings and non-finite forecasts left out).",
		func(t evaluation.Totals) string { return strconv.Itoa(t.Count) })
	family("live_abs_error_total", "Sum of the absolute errors of the scored values.", func(t evaluation.Totals) string { return float(t.AbsError) })
	family("live_squared_error_total", "Sum of the squared errors of the scored values.", func(t evaluation.Totals) string { return float(t.SquaredError) })
	family("live_mape_values_total", "Scored values whose reading is at or above the MAPE floor.", func(t evaluation.Totals) string { return strconv.Itoa(t.MAPECount) })
	family("live_rel_error_total", "Sum of |forecast - reading| / |reading| over the values in MAPE (a fraction).", func(t evaluation.Totals) string { return float(t.RelError) })
	family("live_invalid_values_total", "Forecast values that were not finite, against a reading.", func(t evaluation.Totals) string { return strconv.Itoa(t.Invalid) })
	classFamily := func(name, help string, value func(evaluation.Totals) string) {
		if len(byClass) == 0 {
			return
		}
		fmt.Fprintf(bw, "# HELP %s%s %s\n# TYPE %s%s counter\n", metricPrefix, name, help, metricPrefix, name)
		for _, c := range byClass {
			fmt.Fprintf(bw, "%s%s{own=%q,receptive=%q} %s\n", metricPrefix, name, c.own, c.receptive, value(c.t))
		}
	}
	classFamily("live_completeness_scored_values_total", "Forecast values scored, by the completeness of the forecast's inputs (own: the sensor's own window; receptive: the other receptive sensors' windows), as forecasts_by_completeness_total classes them.",
		func(t evaluation.Totals) string { return strconv.Itoa(t.Count) })
	classFamily("live_completeness_abs_error_total", "Sum of the absolute errors of the scored values, by the completeness of the forecast's inputs.", func(t evaluation.Totals) string { return float(t.AbsError) })
	classFamily("live_completeness_squared_error_total", "Sum of the squared errors of the scored values, by the completeness of the forecast's inputs.", func(t evaluation.Totals) string { return float(t.SquaredError) })
	fmt.Fprintf(bw, "# HELP %slive_dropped_total Live-view records refused as invalid or older than the slots kept.\n# TYPE %slive_dropped_total counter\n%slive_dropped_total %d\n",
		metricPrefix, metricPrefix, metricPrefix, dropped)
	fmt.Fprintf(bw, "# HELP %slive_unscored_total Forecast and reading pairs too far apart to square in float64 (values beyond any sensor's, let in with the plausible ranges off), left out of the sums.\n# TYPE %slive_unscored_total counter\n%slive_unscored_total %d\n",
		metricPrefix, metricPrefix, metricPrefix, unscored)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write live metrics: %w", err)
	}
	return nil
}

// LiveSummary is the live view of every sensor, the body of GET
// /api/sensors. Metrics are evaluation.Metrics: {"mae", "rmse", "mape" (in
// percent), "count", "mape_count"}, errors null while undefined (nothing
// scored yet; for MAPE also when every truth was below the floor) and
// from the first non-finite forecast scored on (count then above 0: see
// evaluation.Accumulator).
type LiveSummary struct {
	StepMs     int64                `json:"step_ms"`
	Channels   []string             `json:"channels"`
	MAPEFloor  float64              `json:"mape_floor"`
	Overall    evaluation.Metrics   `json:"overall"`
	PerChannel []evaluation.Metrics `json:"per_channel"` // over all sensors, by channel
	// Part is the part scope's own running error; nil (absent) without one.
	Part *LivePart `json:"part,omitempty"`
	// Model is the version of the model served, which Service.Handler
	// sets (it changes at Service.Reload); absent from Live.Summary alone.
	Model string `json:"model,omitempty"`
	// ByCompleteness is the running error of every sensor's forecasts by
	// how complete their inputs were, as the offline breakdown classes
	// them (evaluation.Stratify): one entry per class a window of the
	// model's length can fall in; absent for a Live without its window.
	ByCompleteness []LiveClass         `json:"by_completeness,omitempty"`
	Sensors        []LiveSensorSummary `json:"sensors"` // by sensor id
}

// LiveClass is the running error of the forecasts of one completeness
// class: Own the class of the sensor's own window (evaluation.OwnClassLabel:
// complete, 1-3, 4-11, whole for a 12-slot window), Receptive whether
// every other receptive sensor's window was complete
// (evaluation.OthersComplete) or not (OthersIncomplete).
type LiveClass struct {
	Own       string             `json:"own"`
	Receptive string             `json:"receptive"`
	Metrics   evaluation.Metrics `json:"metrics"`
}

// classes calls f with each completeness class a window of the Live's
// length can fall in, its labels and its index in byClass.
func (l *Live) classes(f func(own, receptive string, j int)) {
	if l.window < 1 {
		return
	}
	completenessClasses(l.window, func(own int, ownLabel string, others int, receptive string) {
		f(ownLabel, receptive, int(liveClass(own, others == 1))-1)
	})
}

// LivePart is the running error of the forecasts in the live view's part
// scope alone: for a replay, the error on what the model was not trained
// on.
type LivePart struct {
	Name       string               `json:"name"`
	Overall    evaluation.Metrics   `json:"overall"`
	PerChannel []evaluation.Metrics `json:"per_channel"`
}

// LiveSensorSummary is one sensor's line of a LiveSummary.
type LiveSensorSummary struct {
	Sensor int `json:"sensor"`
	// ID and Location are the sensor's ID and coordinates where the model
	// has them (absent otherwise), which Service.Handler sets; the paths
	// /api/sensors/{sensor} and /forecast/{sensor} take the ID then.
	ID       string             `json:"id,omitempty"`
	Location *pems.Location     `json:"location,omitempty"`
	Metrics  evaluation.Metrics `json:"metrics"`
	// PartMetrics are the sensor's metrics in the part scope alone; nil
	// (absent) without one, errors null while none of its forecasts there
	// has been scored (always, for a sensor outside a split by nodes' part).
	PartMetrics *evaluation.Metrics `json:"part_metrics,omitempty"`
	// LatestForecastTS and LatestReadingTS are the newest slots (Unix ms)
	// with a forecast and with a reading, nil (null) while there is none.
	LatestForecastTS *int64 `json:"latest_forecast_ts"`
	LatestReadingTS  *int64 `json:"latest_reading_ts"`
	// Silent is set when the sensor's latest forecast was made from an
	// empty own window (Forecast.Silent): it has been silent for a whole
	// window, and is forecast from its neighbours alone. Absent
	// otherwise, and after a restart until its next forecast (the rebuild
	// reads the forecasts' values only).
	Silent bool `json:"silent,omitempty"`
}

// Summary returns the live view of every sensor.
func (l *Live) Summary() LiveSummary {
	s := LiveSummary{StepMs: l.stepMs, Channels: l.channels, MAPEFloor: l.floor,
		PerChannel: make([]evaluation.Metrics, l.c), Sensors: make([]LiveSensorSummary, l.n)}
	l.mu.RLock()
	defer l.mu.RUnlock()
	s.Overall = metricsOf(l.total)
	l.classes(func(own, receptive string, j int) {
		s.ByCompleteness = append(s.ByCompleteness, LiveClass{Own: own, Receptive: receptive, Metrics: metricsOf(l.byClass[j])})
	})
	for ch := range s.PerChannel {
		s.PerChannel[ch] = metricsOf(l.channel[ch])
	}
	if l.part != nil {
		s.Part = &LivePart{Name: l.part.Name, Overall: metricsOf(l.partTotal), PerChannel: make([]evaluation.Metrics, l.c)}
		for ch := range s.Part.PerChannel {
			s.Part.PerChannel[ch] = metricsOf(l.partChannel[ch])
		}
	}
	for z := range s.Sensors {
		s.Sensors[z] = LiveSensorSummary{Sensor: z, Metrics: metricsOf(l.acc[z]), PartMetrics: l.partMetrics(z),
			LatestForecastTS: l.msOf(l.latestF[z]), LatestReadingTS: l.msOf(l.latestR[z]), Silent: l.latestSilent(z)}
	}
	return s
}

// Inputs returns the LiveInputs of the given sensors and θ weights (one
// per sensor), with the newest slot read from each. Sensors outside
// 0..Nodes-1 are refused.
func (l *Live) Inputs(sensors []int, weights []float64) ([]LiveInput, error) {
	if len(sensors) != len(weights) {
		return nil, fmt.Errorf("live inputs: %d sensors, %d weights", len(sensors), len(weights))
	}
	out := make([]LiveInput, len(sensors))
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i, k := range sensors {
		if k < 0 || k >= l.n {
			return nil, fmt.Errorf("live inputs: sensor %d outside 0..%d", k, l.n-1)
		}
		out[i] = LiveInput{Sensor: k, Weight: weights[i], LatestReadingTS: l.msOf(l.latestR[k])}
	}
	return out, nil
}

// latestSilent reports whether sensor z's latest forecast was marked
// silent; l.mu is held.
func (l *Live) latestSilent(z int) bool {
	slot := l.latestF[z]
	if slot == noSlot {
		return false
	}
	i := z*l.r + posIn(slot, l.r)
	return l.slots[i] == slot && l.flags[i]&liveSilent != 0
}

// partMetrics returns sensor z's metrics in the part scope, nil without
// one; l.mu is held.
func (l *Live) partMetrics(z int) *evaluation.Metrics {
	if l.part == nil {
		return nil
	}
	m := metricsOf(l.partAcc[z])
	return &m
}

func (l *Live) msOf(slot int64) *int64 {
	if slot == noSlot {
		return nil
	}
	ms := slot * l.stepMs
	return &ms
}

// LiveSensor is one sensor's recent slots and running metrics, the body of
// GET /api/sensors/{sensor}.
type LiveSensor struct {
	Sensor int `json:"sensor"`
	// ID and Location are as LiveSensorSummary's.
	ID        string             `json:"id,omitempty"`
	Location  *pems.Location     `json:"location,omitempty"`
	StepMs    int64              `json:"step_ms"`
	Channels  []string           `json:"channels"`
	MAPEFloor float64            `json:"mape_floor"`
	Metrics   evaluation.Metrics `json:"metrics"` // the sensor's, over all channels
	Overall   evaluation.Metrics `json:"overall"` // every sensor's
	// PartMetrics and PartOverall are Metrics and Overall in the part
	// scope alone; nil (absent) without one.
	PartMetrics *evaluation.Metrics `json:"part_metrics,omitempty"`
	PartOverall *evaluation.Metrics `json:"part_overall,omitempty"`
	Slots       []LiveSlot          `json:"slots"` // the recent slots with a record, oldest first
	// Inputs are the sensors whose windows the sensor's forecast reads
	// (its SDGNN receptive set), by sensor id, so that an operator can see
	// which sensors a poor or late forecast depends on. Set by the service
	// from its bundle; absent from Live.Sensor alone.
	Inputs []LiveInput `json:"inputs,omitempty"`
}

// LiveInput is one sensor that a forecast reads, with its weight θ in the
// forecast's embedding (Ẑ_z = Σ_k θ_zk φ(H_k)) and the newest slot with a
// reading from it: a stale input leaves the forecast waiting (see Emitter).
type LiveInput struct {
	Sensor int `json:"sensor"`
	// ID and Location are as LiveSensorSummary's.
	ID              string         `json:"id,omitempty"`
	Location        *pems.Location `json:"location,omitempty"`
	Weight          float64        `json:"weight"`
	LatestReadingTS *int64         `json:"latest_reading_ts"` // Unix ms; nil (null) while none
}

// LiveSlot is one slot of a sensor: its reading and its forecast, each one
// value per channel, nil (null) until it arrives. Non-finite values are
// written as null.
type LiveSlot struct {
	TS       int64      `json:"ts"` // slot start, Unix ms
	Reading  liveValues `json:"reading"`
	Forecast liveValues `json:"forecast"`
	// InPart is whether the slot's forecast belongs to the part scope
	// (false, absent, without one).
	InPart bool `json:"in_part,omitempty"`
	// Silent is whether the slot's forecast was made from an empty own
	// window (Forecast.Silent); false, absent, otherwise.
	Silent bool `json:"silent,omitempty"`
}

// liveValues are values that marshal non-finite elements as null, so that
// a broken forecast shows instead of failing the response.
type liveValues []float64

// MarshalJSON implements json.Marshaler.
func (v liveValues) MarshalJSON() ([]byte, error) {
	if v == nil {
		return []byte("null"), nil
	}
	return appendFloats(make([]byte, 0, 2+len(v)*12), v), nil
}

var _ json.Marshaler = liveValues(nil)

// Sensor returns sensor's recent slots and metrics, and false for an
// unknown sensor. A sensor without records has no slots.
func (l *Live) Sensor(sensor int) (LiveSensor, bool) {
	if sensor < 0 || sensor >= l.n {
		return LiveSensor{}, false
	}
	v := LiveSensor{Sensor: sensor, StepMs: l.stepMs, Channels: l.channels, MAPEFloor: l.floor, Slots: []LiveSlot{}}
	l.mu.RLock()
	defer l.mu.RUnlock()
	v.Metrics, v.Overall = metricsOf(l.acc[sensor]), metricsOf(l.total)
	if l.part != nil {
		po := metricsOf(l.partTotal)
		v.PartMetrics, v.PartOverall = l.partMetrics(sensor), &po
	}
	newest := l.newest[sensor]
	if newest == noSlot {
		return v, true
	}
	for slot := newest - int64(l.r) + 1; slot <= newest; slot++ {
		i := sensor*l.r + posIn(slot, l.r)
		if l.slots[i] != slot {
			continue
		}
		s := LiveSlot{TS: slot * l.stepMs, InPart: l.part != nil && l.part.Holds(sensor, slot*l.stepMs, l.stepMs)}
		if l.flags[i]&liveReading != 0 {
			s.Reading = append(liveValues(nil), l.readings[i*l.c:(i+1)*l.c]...)
		}
		if l.flags[i]&liveForecast != 0 {
			s.Forecast = append(liveValues(nil), l.forecasts[i*l.c:(i+1)*l.c]...)
			s.Silent = l.flags[i]&liveSilent != 0
		}
		v.Slots = append(v.Slots, s)
	}
	return v, true
}
