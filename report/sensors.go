package report

import (
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/pemsforecast/sdgnn/datasets/pems"
	"github.com/pemsforecast/sdgnn/figure"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// Size of the maps.
const mapW, mapH = 8 * vg.Inch, 6.5 * vg.Inch

// sensorsOf returns the IDs and locations of the sensors of b's report
// on p: the bundle's, or, for a bundle that records none (written before
// bundles kept them), the data's. A bundle whose IDs are not the data's
// is an error: its node indices would name other sensors.
func sensorsOf(p *snapshot.Prepared, b *sdgnn.Bundle) ([]string, []pems.Location, error) {
	if err := pems.CompareSensorIDs(b.Meta.SensorIDs, p.Dataset.SensorIDs); err != nil {
		return nil, nil, fmt.Errorf("the sensors of %s are not the ones the bundle was distilled on: %w", p.Dataset.Info.Name, err)
	}
	ids, locs := b.Meta.SensorIDs, b.Meta.Locations
	if ids == nil {
		ids = p.Dataset.SensorIDs
	}
	if locs == nil {
		locs = p.Dataset.Locations
	}
	return ids, locs, nil
}

// sensorName returns sensor z's name: its ID, or its index.
func (d *Document) sensorName(z int) string {
	if z >= 0 && z < len(d.SensorIDs) {
		return d.SensorIDs[z]
	}
	return strconv.Itoa(z)
}

// addFigure is drawFigures' add: it draws one figure, or notes why not.
type addFigure = func(name, title, caption string, w, h vg.Length, make func() (*plot.Plot, error), skip string) error

// mapFigures adds the maps of the sensors at their coordinates: SDGNN's
// MAE per sensor over the part replayed, and the receptive set of the
// receptive-field figure's sensor with θ as line width. A dataset without
// the sensors' locations (PeMS, SZ-taxi) has no maps, and its report
// does not list them.
func (d *Document) mapFigures(add addFigure) error {
	if len(d.Locations) != d.Nodes {
		return nil
	}
	sites := func(value func(z int) float64) []figure.Site {
		out := make([]figure.Site, len(d.Locations))
		for z, l := range d.Locations {
			out[z] = figure.Site{Name: d.sensorName(z), Lat: l.Lat, Lon: l.Lon, Value: value(z)}
		}
		return out
	}
	if d.Field != nil {
		name := d.sensorName(d.Field.Sensor)
		err := add("receptive-map", "Receptive set of sensor "+name+" on the map",
			fmt.Sprintf("The sensors at their coordinates (equirectangular), sensor %s in black, a line to each sensor its SDGNN forecast reads, its width ∝ θ; a ring about the sensor is its weight on its own readings. Beside the receptive-field figure, which places the same sensors by hop distance.", name),
			mapW, mapH, func() (*plot.Plot, error) {
				var spokes []figure.Spoke
				for _, s := range d.Field.Selected {
					spokes = append(spokes, figure.Spoke{Site: s.Node, Theta: s.Theta})
				}
				return figure.ReceptiveMap("receptive set of sensor "+name, sites(func(int) float64 { return math.NaN() }), d.Field.Sensor, spokes)
			}, "")
		if err != nil {
			return err
		}
	}
	sd := d.Model(SDGNN)
	if sd == nil || len(sd.Report.PerNode) != d.Nodes {
		return nil
	}
	return add("sensor-map", fmt.Sprintf("SDGNN's %s per sensor on the map", d.maeLabel()),
		fmt.Sprintf("Each sensor at its coordinates (equirectangular), coloured by the MAE of SDGNN's forecasts over the %s split (online replay), the five largest named; grey: no reading scored there%s.", d.Part, d.pooledNote()),
		mapW, mapH, func() (*plot.Plot, error) {
			return figure.SensorMap(fmt.Sprintf("SDGNN %s per sensor, %s split", d.maeLabel(), d.Part), d.maeLabel(), sites(func(z int) float64 {
				if m := sd.Report.PerNode[z]; m.Count > 0 {
					return m.MAE
				}
				return math.NaN()
			}))
		}, "")
}
