package sdgnn

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pemsforecast/sdgnn/checkpoint"
	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// TestBundleSensors saves bundles with and without their sensors' IDs
// and locations: they come back as written; a bundle without them
// (as every bundle written before they were kept) has no such keys in its
// header, loads with none and names its sensors by index; the version,
// a digest of the tensors, does not depend on them; and IDs or
// locations that do not fit are refused.
func TestBundleSensors(t *testing.T) {
	ids := []string{"773869", "767541", "767542", "717447"}
	locs := []pems.Location{{Lat: 34.15497, Lon: -118.31829}, {Lat: 34.11621, Lon: -118.23799}, {Lat: 34.11641, Lon: -118.23819}, {Lat: 34.07248, Lon: -118.26772}}
	for _, c := range []struct {
		name string
		ids  []string
		locs []pems.Location
		want string // in the error; "" for none
	}{
		{"IDs and locations", ids, locs, ""},
		{"IDs only", ids, nil, ""},
		{"none", nil, nil, ""},
		{"too few IDs", ids[:3], nil, "3 sensor IDs for 4 sensors"},
		{"repeated ID", []string{"a", "b", "a", "c"}, nil, `sensor ID "a" names sensors 0 and 2`},
		{"latitude out of range", ids, []pems.Location{{Lat: 134, Lon: 0}, {}, {}, {}}, "sensor 0: location (134, 0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := tinyBundle(t)
			b.Meta.Version = "" // the digest's
			b.Meta.SensorIDs, b.Meta.Locations = c.ids, c.locs
			path := filepath.Join(t.TempDir(), "b.sdgnn")
			if err := b.Save(path); c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("Save: %v, want an error with %q", err, c.want)
			}
			if c.want != "" {
				return
			}
			f, err := checkpoint.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if has := bytes.Contains(f.Meta, []byte(`"sensor_ids"`)); has != (c.ids != nil) {
				t.Errorf("header has sensor_ids: %v, saved %q", has, c.ids)
			}
			if has := bytes.Contains(f.Meta, []byte(`"locations"`)); has != (c.locs != nil) {
				t.Errorf("header has locations: %v, saved %v", has, c.locs)
			}
			l, err := LoadBundle(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(l.Meta.SensorIDs, c.ids) || !slices.Equal(l.Meta.Locations, c.locs) {
				t.Errorf("loaded IDs %q and locations %v, saved %q and %v", l.Meta.SensorIDs, l.Meta.Locations, c.ids, c.locs)
			}
			plain := tinyBundle(t)
			plain.Meta.Version = ""
			if _, v, _ := plain.file(); l.Meta.Version != v {
				t.Errorf("version %s, without sensors %s: the IDs changed the digest", l.Meta.Version, v)
			}
			names, err := l.SensorNames()
			if err != nil {
				t.Fatal(err)
			}
			want := "3"
			if c.ids != nil {
				want = c.ids[3]
			}
			if got := names.Name(3); got != want {
				t.Errorf("sensor 3 named %q, want %q", got, want)
			}
			c2, err := l.Clone()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c2.Meta.SensorIDs, c.ids) || !slices.Equal(c2.Meta.Locations, c.locs) {
				t.Errorf("clone has IDs %q and locations %v", c2.Meta.SensorIDs, c2.Meta.Locations)
			}
		})
	}
}

// TestOldBundleNamesByIndex loads a bundle committed under results/,
// written before bundles recorded their sensors: it loads without IDs or
// locations, and its sensors are named by index (its teacher:
// teacher.TestOldModelFileWithoutSensors).
func TestOldBundleNamesByIndex(t *testing.T) {
	dir := filepath.Join("..", "results", "sz-taxi-paper-windows", "first-step-scaling", "models")
	b, err := LoadBundle(filepath.Join(dir, "sz-taxi-sdgnn-paper-windows-seed1.sdgnn"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.ReadFile(filepath.Join(dir, "sz-taxi-sdgnn-paper-windows-seed1.sdgnn"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(f.Meta, []byte("sensor_ids")) || b.Meta.SensorIDs != nil || b.Meta.Locations != nil {
		t.Fatalf("a bundle written before IDs were kept has IDs %q, locations %v", b.Meta.SensorIDs, b.Meta.Locations)
	}
	names, err := b.SensorNames()
	if err != nil {
		t.Fatal(err)
	}
	if names.HasIDs() || names.Name(155) != "155" || names.Len() != b.Meta.Nodes {
		t.Errorf("names: %s, sensor 155 %q", names.Describe(), names.Name(155))
	}
	if z, ok := names.Index("12"); !ok || z != 12 {
		t.Errorf("Index(12) = %d, %v", z, ok)
	}
}
