package evaluation

import (
	"encoding/json"
	"fmt"
	"math"
)

// PaperAccumulator computes the errors as Gao & Ribeiro's time-then-graph
// code does (lib/task/regression.py), which is how the SDGNN paper's PeMS
// table was scored:
//
//   - predictions and truths are min-max scaled per channel to [0, 1] with
//     the training data's minimum and maximum (Min, Max);
//   - nothing is masked, missing readings (0) included; only a row with a
//     truth that is not a number is skipped: a row of NaN truths marks a
//     node outside the scored part of a split by nodes
//     (snapshot.Part.Hide), as their code's node masks leave it out, and a
//     NaN or ±Inf reading in the series (which the masked metrics and the
//     inputs take as missing; their data have none) cannot be scored
//     unmasked, and would make the averages NaN;
//   - per row (one node of one snapshot): MAPE = mean over channels of
//     |p−y| / (|y| + 1), RMSE = sqrt(mean over channels of (p−y)²);
//   - both are averaged over rows; MAPE is reported in percent.
//
// The "+1" keeps the denominator in [1, 2], so this MAPE is close to a scaled
// MAE; it is not comparable with the masked raw-scale MAPE of Accumulator.
type PaperAccumulator struct {
	Min, Max []float64 // per channel, from the training data

	mape, rmse kahan
	rows       int
}

// AddRow records one row: the forecasts and truths of every channel of one
// node in one snapshot, on the original scale. A row with a NaN or ±Inf
// truth is not scored and is skipped.
func (a *PaperAccumulator) AddRow(pred, truth []float64) error {
	if len(pred) != len(truth) || len(pred) != len(a.Min) || len(a.Max) != len(a.Min) {
		return fmt.Errorf("evaluation: paper metrics: %d predictions, %d truths, %d/%d channel ranges", len(pred), len(truth), len(a.Min), len(a.Max))
	}
	for _, y := range truth {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			return nil
		}
	}
	var pct, sq float64
	for c := range pred {
		span := a.Max[c] - a.Min[c]
		if span == 0 {
			span = 1
		}
		p, y := (pred[c]-a.Min[c])/span, (truth[c]-a.Min[c])/span
		pct += math.Abs(p-y) / (math.Abs(y) + 1)
		sq += float64((p - y) * (p - y))
	}
	n := float64(len(pred))
	a.mape.add(pct / n)
	a.rmse.add(math.Sqrt(sq / n))
	a.rows++
	return nil
}

// PaperMetrics are the errors of PaperAccumulator. A NaN forecast in a
// scored row makes MAPE and RMSE NaN, which JSON writes as null.
type PaperMetrics struct {
	MAPE float64 `json:"mape"` // percent
	RMSE float64 `json:"rmse"` // on the [0, 1] scale
	Rows int     `json:"rows"`
}

// paperJSON is the wire form of PaperMetrics.
type paperJSON struct {
	MAPE jsonFloat `json:"mape"`
	RMSE jsonFloat `json:"rmse"`
	Rows int       `json:"rows"`
}

// MarshalJSON implements json.Marshaler, writing NaN and ±Inf as null.
func (m PaperMetrics) MarshalJSON() ([]byte, error) {
	return json.Marshal(paperJSON{jsonFloat(m.MAPE), jsonFloat(m.RMSE), m.Rows})
}

// UnmarshalJSON implements json.Unmarshaler, reading null as NaN.
func (m *PaperMetrics) UnmarshalJSON(data []byte) error {
	var v paperJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return fmt.Errorf("evaluation: decoding paper metrics: %w", err)
	}
	*m = PaperMetrics{MAPE: float64(v.MAPE), RMSE: float64(v.RMSE), Rows: v.Rows}
	return nil
}

// Metrics returns the averages over the rows recorded.
func (a *PaperAccumulator) Metrics() PaperMetrics {
	if a.rows == 0 {
		return PaperMetrics{}
	}
	n := float64(a.rows)
	return PaperMetrics{MAPE: 100 * a.mape.value() / n, RMSE: a.rmse.value() / n, Rows: a.rows}
}

// Paper returns the paper-style metrics of forecasts laid out row-major
// (snapshot, node, channel).
func Paper(pred, truth, min, max []float64) (PaperMetrics, error) {
	C := len(min)
	if C == 0 || len(pred) != len(truth) || len(pred)%C != 0 {
		return PaperMetrics{}, fmt.Errorf("evaluation: paper metrics: %d predictions and %d truths for %d channels", len(pred), len(truth), C)
	}
	a := PaperAccumulator{Min: min, Max: max}
	for i := 0; i < len(pred); i += C {
		if err := a.AddRow(pred[i:i+C], truth[i:i+C]); err != nil {
			return PaperMetrics{}, err
		}
	}
	return a.Metrics(), nil
}
