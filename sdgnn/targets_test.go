package sdgnn

import (
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestGatherSnapshots(t *testing.T) {
	// Three snapshots of two nodes, two columns: row s·2+i holds (10s+i, −(10s+i)).
	src := mat.NewDense(6, 2, nil)
	for r := range 6 {
		v := float64(10*(r/2) + r%2)
		src.SetRow(r, []float64{v, -v})
	}
	big := mat.NewDense(8, 2, nil)
	for _, tc := range []struct {
		name string
		dst  *mat.Dense
		idx  []int
		want []float64
	}{
		{"two snapshots, reordered", nil, []int{2, 0}, []float64{20, -20, 21, -21, 0, 0, 1, -1}},
		{"one snapshot into a larger dst", big, []int{1}, []float64{10, -10, 11, -11}},
		{"a snapshot twice", nil, []int{1, 1}, []float64{10, -10, 11, -11, 10, -10, 11, -11}},
	} {
		got := GatherSnapshots(tc.dst, src, 2, tc.idx)
		if r, c := got.Dims(); r != 2*len(tc.idx) || c != 2 {
			t.Errorf("%s: dims %d×%d, want %d×2", tc.name, r, c, 2*len(tc.idx))
			continue
		}
		if !mat.Equal(got, mat.NewDense(2*len(tc.idx), 2, tc.want)) {
			t.Errorf("%s: got %v, want %v", tc.name, mat.Formatted(got, mat.FormatMATLAB()), tc.want)
		}
		if tc.dst != nil && got != tc.dst {
			t.Errorf("%s: dst large enough was not reused", tc.name)
		}
	}
}
