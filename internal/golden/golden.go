// Package golden keeps hashes of results' bits in a test's
// testdata/golden-bits.json, so that a test run on one machine checks the
// bits that another wrote: they are written on amd64, where nn's and gru's
// assembly kernels run, and checked everywhere else (arm64 under qemu in
// CI, amd64 without AVX2, GOAMD64=v3 builds), where the same functions run
// in Go and must give the same bits.
package golden

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

var update = flag.Bool("update-golden", false, "rewrite testdata/golden-bits.json from this machine's results (write it on amd64)")

// Hash returns an FNV-1a hash of the bits of xs, in hexadecimal, every NaN
// counted as one value: a NaN's sign and payload are not part of the
// claim.
func Hash(xs []float64) string {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range xs {
		u := math.Float64bits(x)
		if math.IsNaN(x) {
			u = 0x7ff8000000000001
		}
		for i := range b {
			b[i] = byte(u >> (8 * i))
		}
		h.Write(b[:])
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Check compares got (case name → Hash) with testdata/golden-bits.json of
// the test's package, or rewrites that file when the test runs with
// -update-golden.
func Check(tb testing.TB, got map[string]string) {
	tb.Helper()
	path := filepath.Join("testdata", "golden-bits.json")
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			tb.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			tb.Fatal(err)
		}
		tb.Logf("wrote %s", path)
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read golden bits: %v (write them on amd64 with go test -run Golden -update-golden)", err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	for _, name := range slices.Sorted(maps.Keys(got)) {
		if w, ok := want[name]; !ok {
			tb.Errorf("%s: no golden bits in %s", name, path)
		} else if got[name] != w {
			tb.Errorf("%s: bits hash %s, golden %s (written on amd64)", name, got[name], w)
		}
	}
	if len(want) != len(got) {
		tb.Errorf("%s holds %d cases, the test computes %d", path, len(want), len(got))
	}
}

// Uniform returns a draw from U(−4, 4) that is the same on every machine:
// (2u − 1)·4 from rng.Float64, every step exact. Golden tests draw their
// inputs so, not with rng.NormFloat64, which calls math.Log and math.Exp
// in its rare branches and so may draw differently on another machine.
func Uniform(rng *rand.Rand) float64 {
	return (2*rng.Float64() - 1) * 4
}
