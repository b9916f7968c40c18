package snapshot

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
)

// colSensor is the column of the tables that names each row's sensor by
// its ID (Los-loop's detector IDs), beside its node index, where the
// sensors have IDs; the tables of sensors without IDs have none.
const colSensor = "sensor"

// sensorField is the sensor column's field.
var sensorField = arrow.Field{Name: colSensor, Type: arrow.BinaryTypes.String}

// checkSensorIDs reports what is wrong with ids as the IDs of nodes
// sensors: nil (none) or one per sensor.
func checkSensorIDs(ids []string, nodes int) error {
	if ids != nil && len(ids) != nodes {
		return fmt.Errorf("%d sensor IDs for %d nodes", len(ids), nodes)
	}
	return nil
}

// optionalSensorColumn returns the index of the sensor column of sc, −1
// where it has none; one of another type is an error.
func optionalSensorColumn(sc *arrow.Schema) (int, error) {
	if len(sc.FieldIndices(colSensor)) == 0 {
		return -1, nil
	}
	return column(sc, colSensor, arrow.STRING)
}

// appendSensors appends the IDs of column i of rec (−1: none) to dst.
func appendSensors(dst []string, rec arrow.Record, i int) ([]string, error) {
	if i < 0 {
		return dst, nil
	}
	col := rec.Column(i).(*array.String)
	if col.NullN() > 0 {
		return dst, fmt.Errorf("column %q has %d nulls", colSensor, col.NullN())
	}
	for j := 0; j < col.Len(); j++ {
		dst = append(dst, col.Value(j))
	}
	return dst, nil
}
