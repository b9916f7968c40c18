package sdgnn

import "github.com/pemsforecast/sdgnn/datasets/pems"

// SensorNames returns the names of the bundle's sensors: the IDs it
// records (Meta.SensorIDs), or the node indices where it records none.
// It builds a lookup table: call it once and keep the result.
func (b *Bundle) SensorNames() (*pems.SensorNames, error) {
	return pems.NewSensorNames(b.Meta.Nodes, b.Meta.SensorIDs)
}
