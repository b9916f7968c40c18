package sdgnn

import (
	"slices"
	"strings"
	"testing"
)

// TestDecodeThetaNamesTensor gives the decoder Θ tensors whose lengths do
// not fit together, the checksum passing: the error must name the tensors
// that disagree, not blame the row pointers when they are right.
func TestDecodeThetaNamesTensor(t *testing.T) {
	good, _, err := tinyBundle(t).file()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		tensor string // its last value is dropped
		want   []string
		not    string
	}{
		{"a weight missing", "theta.val", []string{"theta.val", "theta.col"}, "row pointers"},
		{"a node id missing", "theta.col", []string{"theta.val", "theta.col"}, ""},
		{"a row pointer missing", "theta.rowptr", []string{"theta.rowptr"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := *good
			f.Tensors = slices.Clone(good.Tensors)
			for i := range f.Tensors {
				if f.Tensors[i].Name == c.tensor {
					f.Tensors[i].Data = f.Tensors[i].Data[:len(f.Tensors[i].Data)-1]
					f.Tensors[i].Shape = []int{len(f.Tensors[i].Data)}
				}
			}
			_, err := decodeBundle(&f)
			if err == nil {
				t.Fatal("decoded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got error %q, want one naming %s", err, w)
				}
			}
			if c.not != "" && strings.Contains(err.Error(), c.not) {
				t.Errorf("got error %q, which blames the %s", err, c.not)
			}
		})
	}
}
