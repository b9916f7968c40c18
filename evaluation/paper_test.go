package evaluation

import (
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
