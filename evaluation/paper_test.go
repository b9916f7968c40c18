package evaluation

import (
	"encoding/json"
	"math"
	"testing"
)

func TestPaperMetrics(t *testing.T) {
	// Two channels with ranges [0,10] and [0,100]; two rows.
	min, max := []float64{0, 0}, []float64{10, 100}
	pred := []float64{5, 50, 0, 0}
	truth := []float64{4, 60, 0, 100} // the zero truth is not masked
	got, err := Paper(pred, truth, min, max)
	if err != nil {
		t.Fatal(err)
	}
	row1 := (0.1/1.4 + 0.1/1.6) / 2
	row2 := (0 + 1.0/2) / 2
	if want := 100 * (row1 + row2) / 2; math.Abs(got.MAPE-want) > 1e-12 {
		t.Errorf("MAPE %g, want %g", got.MAPE, want)
	}
	rmse1 := math.Sqrt((0.01 + 0.01) / 2)
	rmse2 := math.Sqrt((0 + 1) / 2.0)
	if want := (rmse1 + rmse2) / 2; math.Abs(got.RMSE-want) > 1e-12 || got.Rows != 2 {
		t.Errorf("RMSE %g rows %d, want %g, 2", got.RMSE, got.Rows, want)
	}
	// A third row of NaN truths (a node outside the scored part) changes
	// nothing.
	nan := math.NaN()
	again, err := Paper(append(pred, 7, 70), append(truth, nan, nan), min, max)
	if err != nil || again != got {
		t.Errorf("with an unscored row: %+v (%v), want %+v", again, err, got)
	}
	if _, err := Paper(pred[:3], truth[:3], min, max); err == nil {
		t.Error("ragged rows accepted")
	}
}

// TestPaperMetricsJSON checks that a broken forecast (NaN) gives NaN paper
// metrics that encode, as Metrics do, as null, and decode back as NaN: the
// reproduce table, its kept scores, eval -json and the report's
// metrics.json all hold PaperMetrics, and a NaN must not stop them being
// written.
func TestPaperMetricsJSON(t *testing.T) {
	got, err := Paper([]float64{math.NaN(), 1}, []float64{2, 3}, []float64{0, 0}, []float64{10, 10})
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(got.MAPE) || !math.IsNaN(got.RMSE) || got.Rows != 1 {
		t.Fatalf("NaN forecast: %+v, want NaN MAPE and RMSE over 1 row", got)
	}
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("marshal %+v: %v", got, err)
	}
	if string(b) != `{"mape":null,"rmse":null,"rows":1}` {
		t.Errorf("JSON %s", b)
	}
	var back PaperMetrics
	if err := json.Unmarshal(b, &back); err != nil || !math.IsNaN(back.MAPE) || !math.IsNaN(back.RMSE) || back.Rows != 1 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	ok := PaperMetrics{MAPE: 3.5, RMSE: 0.25, Rows: 7}
	if b, err := json.Marshal(ok); err != nil || string(b) != `{"mape":3.5,"rmse":0.25,"rows":7}` {
		t.Errorf("finite metrics: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"mape":3.5,"rmse":0.25,"rows":7}`), &back); err != nil || back != ok {
		t.Errorf("finite round trip: %+v, %v", back, err)
	}
}

// TestPaperMetricsNonFiniteTruth checks that a reading that is not a
// number (NaN or ±Inf in the series, which the masked metrics and the
// inputs take as missing) leaves its row out of the paper's metrics rather
// than making them NaN for the whole split, and that the row is not
// counted.
func TestPaperMetricsNonFiniteTruth(t *testing.T) {
	min, max := []float64{0, 0}, []float64{10, 100}
	pred := []float64{5, 50, 0, 0}
	truth := []float64{4, 60, 0, 100}
	want, err := Paper(pred, truth, min, max)
	if err != nil {
		t.Fatal(err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, tc := range []struct {
		name string
		row  []float64 // truths of a third row, forecast 7, 70
	}{
		{"NaN in one channel", []float64{nan, 70}},
		{"NaN in the other", []float64{7, nan}},
		{"+Inf", []float64{inf, 70}},
		{"-Inf", []float64{7, -inf}},
		{"every channel NaN (a sensor outside the part)", []float64{nan, nan}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Paper(append(pred, 7, 70), append(truth, tc.row...), min, max)
			if err != nil || got != want {
				t.Errorf("with truths %v: %+v (%v), want %+v", tc.row, got, err, want)
			}
		})
	}
}
