package main

import (
	"math"
	"testing"

	"github.com/pemsforecast/sdgnn/evaluation"
)

// TestScoreText checks the demo's scores: no value scored is said so, not
// shown as errors of 0 (a perfect score) over 0 values.
// TestDoneText checks the demo's last line, also where nothing was
// scored ("live no value scored yet whose reading arrived" before).
func TestDoneText(t *testing.T) {
	m := evaluation.Metrics{MAE: 3.21449, MAPE: 12.345, Count: 1000, MAPECount: 1000}
	for _, tc := range []struct {
		r, f  uint64
		m, pm evaluation.Metrics
		want  string
	}{
		{2000, 1000, m, m, "done: 2000 readings, 1000 forecasts; live scored where the reading arrived, MAE 3.2145, MAPE 12.35% over 1000 values; test alone: MAE 3.2145, MAPE 12.35% over 1000 values"},
		{1, 0, evaluation.Metrics{}, evaluation.Metrics{}, "done: 1 reading, 0 forecasts; live none scored: no forecast's reading arrived; test alone: no value scored yet"},
	} {
		if got := doneText(tc.r, tc.f, tc.m, tc.pm, "test"); got != tc.want {
			t.Errorf("doneText = %q\nwant      %q", got, tc.want)
		}
	}
}

func TestScoreText(t *testing.T) {
	for _, tc := range []struct {
		m      evaluation.Metrics
		digits int
		want   string
	}{
		{evaluation.Metrics{}, 3, "no value scored yet"},
		{evaluation.Metrics{MAE: 3.21449, MAPE: 12.345, Count: 1, MAPECount: 1}, 3, "MAE 3.214, MAPE 12.35% over 1 value"},
		{evaluation.Metrics{MAE: 3.21449, MAPE: 12.345, Count: 1000, MAPECount: 1000}, 4, "MAE 3.2145, MAPE 12.35% over 1000 values"},
		// Truths under the floor are in MAE, not in MAPE: each count said.
		{evaluation.Metrics{MAE: 3.21449, MAPE: 12.345, Count: 1000, MAPECount: 950}, 4, "MAE 3.2145 over 1000 values, MAPE 12.35% over 950"},
		{evaluation.Metrics{MAE: 0.01, MAPE: math.NaN(), Count: 10}, 2, "MAE 0.01 over 10 values, no MAPE (every truth under the floor)"},
	} {
		if got := scoreText(tc.m, tc.digits, ", "); got != tc.want {
			t.Errorf("scoreText(%+v, %d) = %q, want %q", tc.m, tc.digits, got, tc.want)
		}
	}
}
