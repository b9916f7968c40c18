package snapshot

import (
	"fmt"
	"math"
)

// Prep names a preprocessing: how readings become model inputs.
type Prep string

// Preprocessings.
const (
	// PrepStandard z-scores every channel by the mean and standard deviation
	// of the training steps' valid (non-zero, finite) readings; missing
	// readings enter as 0, the channel mean.
	PrepStandard Prep = "standard"
	// PrepPaper is the input preprocessing of Gao & Ribeiro (2022, "On the
	// equivalence between temporal and static graph representations", the
	// time-then-graph code the SDGNN paper uses): every channel min-max
	// scaled by the training steps (zeros included, nothing masked), and
	// two calendar inputs appended to every step, minute of the day and day
	// of the week counted from the series' first day, both min-max scaled
	// by the training steps too. Targets stay the readings' channels.
	PrepPaper Prep = "paper"
)

// ParsePrep returns the preprocessing named s.
func ParsePrep(s string) (Prep, error) {
	switch p := Prep(s); p {
	case PrepStandard, PrepPaper:
		return p, nil
	}
	return "", fmt.Errorf("preprocessing %q: want %q or %q", s, PrepStandard, PrepPaper)
}

// Normalizer kinds.
const (
	KindZScore = ""       // (v − mean) / std; zero means missing
	KindMinMax = "minmax" // (v − min) / (max − min): Mean holds min, Std max − min; zero is a value
)

// TimeInputCount is the number of calendar inputs TimeInputs adds to every
// step: minute of the day and day of the week.
const TimeInputCount = 2

const (
	minuteMs = int64(60_000)
	dayMs    = 24 * 60 * minuteMs
)

// TimeInputs places steps on the calendar and turns a time into the two
// calendar inputs of Gao & Ribeiro's preprocessing: the minute of the day
// (0, 5, …, 1435 for 5-minute steps) and the day of the week counted from
// the first step's day (0 to 6), each divided by its largest value over the
// training steps (their minimum there is 0), as their min-max scaling does.
//
// Times are Unix milliseconds. Both inputs are functions of the time alone,
// so that the streaming service computes them from a reading's timestamp
// exactly as training computed them from the step index.
type TimeInputs struct {
	OriginMs   int64   `json:"origin_ms"`   // time of step 0; minutes of the day count from its time of day
	StepMs     int64   `json:"step_ms"`     // length of a step
	MinuteMax  float64 `json:"minute_max"`  // largest minute of the day among the training steps
	WeekdayMax float64 `json:"weekday_max"` // largest day of the week among the training steps
}

// FitTimeInputs returns the calendar inputs of a series whose step 0 is at
// originMs and whose steps are stepMs apart, scaled by its first
// trainSteps steps.
func FitTimeInputs(originMs, stepMs int64, trainSteps int) (TimeInputs, error) {
	if stepMs <= 0 || trainSteps < 1 {
		return TimeInputs{}, fmt.Errorf("snapshot: time inputs: step %d ms, %d training steps: both must be positive", stepMs, trainSteps)
	}
	ti := TimeInputs{OriginMs: originMs, StepMs: stepMs}
	var minute, weekday float64
	for s := 0; s < trainSteps; s++ {
		m, w := ti.raw(ti.StepTime(s))
		minute, weekday = math.Max(minute, m), math.Max(weekday, w)
	}
	ti.MinuteMax, ti.WeekdayMax = minute, weekday
	return ti, ti.Validate()
}

// FitTimeInputsAt is FitTimeInputs scaled by the given steps instead of
// the leading ones: the steps a split by windows fits on (Split.FitSteps).
func FitTimeInputsAt(originMs, stepMs int64, steps []int) (TimeInputs, error) {
	if stepMs <= 0 || len(steps) == 0 {
		return TimeInputs{}, fmt.Errorf("snapshot: time inputs: step %d ms, %d steps to scale by: both must be positive", stepMs, len(steps))
	}
	ti := TimeInputs{OriginMs: originMs, StepMs: stepMs}
	var minute, weekday float64
	for _, s := range steps {
		m, w := ti.raw(ti.StepTime(s))
		minute, weekday = math.Max(minute, m), math.Max(weekday, w)
	}
	ti.MinuteMax, ti.WeekdayMax = minute, weekday
	return ti, ti.Validate()
}

// StepTime returns the time of step s.
func (ti TimeInputs) StepTime(s int) int64 { return ti.OriginMs + int64(s)*ti.StepMs }

// raw returns the unscaled minute of the day and day of the week of ms.
func (ti TimeInputs) raw(ms int64) (minute, weekday float64) {
	d := ms - ti.OriginMs
	day := floorDiv(d, dayMs)
	return float64((d - day*dayMs) / minuteMs), float64(day - floorDiv(day, 7)*7)
}

// At writes the scaled calendar inputs of time ms into dst[:TimeInputCount].
func (ti TimeInputs) At(dst []float64, ms int64) {
	m, w := ti.raw(ms)
	dst[0], dst[1] = m/nonZero(ti.MinuteMax), w/nonZero(ti.WeekdayMax)
}

// Validate reports what is wrong with ti, if anything.
func (ti TimeInputs) Validate() error {
	switch {
	case ti.StepMs <= 0:
		return fmt.Errorf("snapshot: time inputs: step %d ms must be positive", ti.StepMs)
	case !(ti.MinuteMax >= 0) || ti.MinuteMax >= 24*60:
		return fmt.Errorf("snapshot: time inputs: minute scale %v outside [0, 1440)", ti.MinuteMax)
	case !(ti.WeekdayMax >= 0) || ti.WeekdayMax > 6:
		return fmt.Errorf("snapshot: time inputs: weekday scale %v outside [0, 6]", ti.WeekdayMax)
	}
	return nil
}

// nonZero returns v, or 1 where v is 0 (a constant input stays 0, as min-max
// scaling with a zero range leaves it).
func nonZero(v float64) float64 {
	if v == 0 {
		return 1
	}
	return v
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// FitPaper returns the normaliser of PrepPaper for data laid out (step,
// node, channel): per channel min-max scaling over the first trainSteps
// steps, every finite reading included, and the calendar inputs of a
// series starting at originMs with steps stepMs apart.
func FitPaper(data []float64, nodes, channels, trainSteps int, originMs, stepMs int64) (Normalizer, error) {
	lo, hi, err := FitMinMax(data, nodes, channels, trainSteps)
	if err != nil {
		return Normalizer{}, fmt.Errorf("snapshot: paper preprocessing: %w", err)
	}
	ti, err := FitTimeInputs(originMs, stepMs, trainSteps)
	if err != nil {
		return Normalizer{}, err
	}
	size := make([]float64, channels)
	for c := range size {
		size[c] = nonZero(hi[c] - lo[c])
	}
	return Normalizer{Kind: KindMinMax, Mean: lo, Std: size, Time: &ti}, nil
}

// Fit returns the normaliser of preprocessing p for data laid out (step,
// node, channel), fitted on its first trainSteps steps; originMs and stepMs
// place step 0 and the steps on the calendar (used by PrepPaper).
func Fit(p Prep, data []float64, nodes, channels, trainSteps int, originMs, stepMs int64) (Normalizer, error) {
	switch p {
	case PrepStandard, "":
		return FitNormalizer(data, nodes, channels, trainSteps)
	case PrepPaper:
		return FitPaper(data, nodes, channels, trainSteps, originMs, stepMs)
	}
	return Normalizer{}, fmt.Errorf("snapshot: unknown preprocessing %q", p)
}
