package english

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "channel", "1 channel"},
		{-1, "step", "-1 step"},
		{0, "channel", "0 channels"},
		{2, "node", "2 nodes"},
		{156, "sensor", "156 sensors"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
}
