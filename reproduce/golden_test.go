package reproduce

import (
	"math/rand/v2"
	"testing"

	"github.com/pemsforecast/sdgnn/internal/golden"
)

// TestGoldenBits holds the paired comparison over seeds to the bits it
// has on amd64, so that a table merged on another machine (arm64, checked
// under qemu in CI) prints the same: the mean and spread of the
// differences and the paired t-test's p-value, for 2 to 12 seeds and
// differences from clearly signed to centred on zero.
func TestGoldenBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 25))
	var out []float64
	for seeds := 2; seeds <= 12; seeds++ {
		for _, shift := range []float64{0, 0.02, 0.1, 1} {
			d := make([]float64, seeds)
			for i := range d {
				d[i] = shift + float64(golden.Uniform(rng)*0.05)
			}
			r := diffOf(d)
			out = append(out, r.Mean, r.Std, r.P, float64(r.Lower))
		}
	}
	golden.Check(t, map[string]string{"diffOf": golden.Hash(out)})
}
