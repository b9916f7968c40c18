package teacher

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// TestModelFileSensors saves models with and without their sensors' IDs
// and locations: they come back as written, a model without them has no
// such keys in its header (as files written before they were kept) and
// loads with none, and IDs or locations that do not fit are refused.
func TestModelFileSensors(t *testing.T) {
	m, err := New(Config{Kind: KindGRU, Window: 3, Channels: 1, Hidden: 4, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"773869", "767541", "767542"}
	locs := []pems.Location{{Lat: 34.15497, Lon: -118.31829}, {Lat: 34.11621, Lon: -118.23799}, {Lat: 34.11641, Lon: -118.23819}}
	for _, c := range []struct {
		name string
		ids  []string
		locs []pems.Location
		want string // in the error; "" for none
	}{
		{"IDs and locations", ids, locs, ""},
		{"none", nil, nil, ""},
		{"another count", ids[:2], nil, "2 sensor IDs for 3 sensors"},
		{"empty ID", []string{"a", "", "c"}, nil, `sensor ID 1 "": empty`},
		{"longitude out of range", nil, []pems.Location{{}, {}, {Lat: 0, Lon: 200}}, "sensor 2: location (0, 200)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			meta := Meta{Norm: snapshot.Normalizer{Mean: []float64{0}, Std: []float64{1}}, Nodes: 3, SensorIDs: c.ids, Locations: c.locs}
			path := filepath.Join(t.TempDir(), "m.model")
			if err := SaveModel(path, m, meta); err != nil {
				t.Fatal(err)
			}
			s, err := LoadModel(path)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("error %v, want one with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Meta.SensorIDs, c.ids) || !slices.Equal(s.Meta.Locations, c.locs) {
				t.Errorf("loaded IDs %q and locations %v, saved %q and %v", s.Meta.SensorIDs, s.Meta.Locations, c.ids, c.locs)
			}
			f, err := checkpoint.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if has := bytes.Contains(f.Meta, []byte(`"sensor_ids"`)) || bytes.Contains(f.Meta, []byte(`"locations"`)); has != (c.ids != nil) {
				t.Errorf("header has sensor_ids or locations: %v, saved %q", has, c.ids)
			}
		})
	}
}
