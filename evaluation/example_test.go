package evaluation_test

import (
	"fmt"
	"log"
	"os"

	"github.com/pemsforecast/sdgnn/evaluation"
)

func ExampleCompute() {
	// The second reading is missing (0) and is left out.
	m, err := evaluation.Compute([]float64{1, 2, 3}, []float64{2, 0, 4})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("MAE %.2f RMSE %.2f MAPE %.1f%% over %d readings\n", m.MAE, m.RMSE, m.MAPE, m.Count)
	// Output:
	// MAE 1.00 RMSE 1.00 MAPE 37.5% over 2 readings
}

func ExampleReportBuilder() {
	// Four snapshots of two sensors with one channel, in two chunks.
	b, err := evaluation.NewReportBuilder(4, 2, 1, 2)
	if err != nil {
		log.Fatal(err)
	}
	if err := b.SetChannelNames([]string{"flow"}); err != nil {
		log.Fatal(err)
	}
	truth := []float64{100, 200}
	for s := range 4 {
		// The forecast drifts away from the truth as the split goes on.
		pred := []float64{100 + float64(s), 200 - 2*float64(s)}
		if err := b.AddSnapshot(s, pred, truth); err != nil {
			log.Fatal(err)
		}
	}
	if err := b.Report().Table(os.Stdout); err != nil {
		log.Fatal(err)
	}
	// Output:
	// | scope | MAE | RMSE | MAPE (%) | count |
	// |---|---:|---:|---:|---:|
	// | overall | 2.2500 | 2.9580 | 1.50 | 8 |
	// | flow | 2.2500 | 2.9580 | 1.50 | 8 |
	//
	// | chunk | MAE ± std | RMSE | MAPE (%) | count |
	// |---|---:|---:|---:|---:|
	// | 1/2 | 0.7500 ± 0.7500 | 1.1180 | 0.50 | 4 |
	// | 2/2 | 3.7500 ± 0.7500 | 4.0311 | 2.50 | 4 |
}

func ExampleDieboldMariano() {
	// Two forecasts of three sensors over eight snapshots: the second is
	// off by 1 everywhere, the first by 0.5 except at one snapshot.
	truth := make([]float64, 8*3)
	a, b := make([]float64, len(truth)), make([]float64, len(truth))
	for k := range truth {
		truth[k] = 10
		a[k], b[k] = 10.5, 11
	}
	a[3*3] = 12 // snapshot 3, sensor 0
	la, err := evaluation.SnapshotMAE(a, truth, 8, 3)
	if err != nil {
		log.Fatal(err)
	}
	lb, err := evaluation.SnapshotMAE(b, truth, 8, 3)
	if err != nil {
		log.Fatal(err)
	}
	dm, err := evaluation.DieboldMariano(la, lb, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("mean difference %+.3f over %d snapshots, t %.2f with %d df, p %.3f\n", dm.Mean, dm.N, dm.Stat, dm.DF, dm.P)
	// Output:
	// mean difference -0.438 over 8 snapshots, t -7.41 with 2 df, p 0.018
}
