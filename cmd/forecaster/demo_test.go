package main

import (
	"math"
	"testing"
	"time"
)

// TestSpedUp checks the demo's replay clock: real time times the speed-up,
// saturated where a huge speed-up goes beyond what a Duration holds
// (-speedup 1e9 passed it after 9.2 s, and the clock went 292 years back).
func TestSpedUp(t *testing.T) {
	for _, tc := range []struct {
		d       time.Duration
		speedup float64
		want    time.Duration
	}{
		{time.Second, 3600, time.Hour},
		{250 * time.Millisecond, 1, 250 * time.Millisecond},
		{10 * time.Second, 1e9, math.MaxInt64},
		{time.Second, math.MaxFloat64, math.MaxInt64},
		{0, 1e9, 0},
	} {
		if got := spedUp(tc.d, tc.speedup); got != tc.want {
			t.Errorf("spedUp(%v, %g) = %v, want %v", tc.d, tc.speedup, got, tc.want)
		}
	}
}

// TestDemoMAPEFloorByDataset checks the demo's MAPE floor when -mape-floor
// is not given: 1 for SZ-taxi's near-zero speeds, but 0 for PeMS, whose
// occupancy (a fraction) a floor of 1 left out of the live MAPE entirely,
// with nothing said (on a replay of a PeMS04-shaped file, MAPE 4.51%
// against 5.14% over every channel).
func TestDemoMAPEFloorByDataset(t *testing.T) {
	for _, tc := range []struct {
		dataset string
		want    float64
	}{{"sz-taxi", 1}, {"SZ-taxi", 1}, {" sz-taxi", 1}, {"pems04", 0}, {"pems08", 0}} {
		if got := demoMAPEFloor(tc.dataset); got != tc.want {
			t.Errorf("demoMAPEFloor(%q) = %g, want %g", tc.dataset, got, tc.want)
		}
	}
}
