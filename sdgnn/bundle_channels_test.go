package sdgnn

import (
	"strings"
	"testing"
)

// TestDecodeBundleChannelNames gives the decoder a bundle whose metadata
// names another number of channels than its normaliser and decoder have:
// the service's CSV header would then misalign every value after the
// forecasts'. It must be refused, naming channel_names; a bundle without
// names (written before they were kept) still loads.
func TestDecodeBundleChannelNames(t *testing.T) {
	for _, c := range []struct {
		names []string
		ok    bool
	}{
		{[]string{"a", "b"}, true},
		{nil, true},
		{[]string{"a", "b", "c"}, false},
		{[]string{"a"}, false},
	} {
		b := tinyBundle(t)
		b.Meta.Channels = c.names
		f, _, err := b.file()
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeBundle(f)
		if c.ok && err != nil {
			t.Errorf("channel names %q for 2 channels: %v", c.names, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "channel_names")) {
			t.Errorf("channel names %q for 2 channels: got error %v, want one naming channel_names", c.names, err)
		}
	}
}
