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

// TestOldModelFileWithoutSensors loads a teacher committed under results/,
// written before model files recorded their sensors: it loads, without
// IDs or locations (its sensors named by index), and its header has
// neither key.
func TestOldModelFileWithoutSensors(t *testing.T) {
	path := filepath.Join("..", "results", "sz-taxi-paper-windows", "first-step-scaling", "models", "sz-taxi-gru-gcn-paper-windows-seed1.model")
	s, err := LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	if s.Meta.SensorIDs != nil || s.Meta.Locations != nil || s.Meta.Nodes != 156 {
		t.Errorf("%s: %d nodes, IDs %q, locations %v; want SZ-taxi's 156 without either", path, s.Meta.Nodes, s.Meta.SensorIDs, s.Meta.Locations)
	}
	f, err := checkpoint.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(f.Meta, []byte(`"sensor_ids"`)) || bytes.Contains(f.Meta, []byte(`"locations"`)) {
		t.Errorf("%s was written with sensor IDs or locations: not a file of before", path)
	}
}
