package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/pemsforecast/sdgnn/internal/datatest"
	"github.com/pemsforecast/sdgnn/stream"
)

// TestPublishByDetectorID publishes Los-loop's first steps into the
// embedded broker, from the dataset and from a CSV file of rows keyed by
// detector ID, and reads both topics back: every reading is keyed and
// named by its detector's ID and carries the series' value; a CSV row of
// an index is refused as a bad row naming it; and without the data
// directory a CSV for Los-loop without -model cannot know the IDs.
func TestPublishByDetectorID(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker")
	}
	ds := datatest.LosLoop(t)
	names, err := ds.Names()
	if err != nil {
		t.Fatal(err)
	}
	dir := datatest.Dir(t)
	s := ds.Series
	const stepMs = 5 * 60 * 1000
	start := ds.Info.Start.UnixMilli()
	var rows bytes.Buffer
	rows.WriteString("ts,sensor,speed\n")
	for i := range s.Nodes {
		fmt.Fprintf(&rows, "%d,%s,%v\n", start, ds.SensorIDs[i], s.Data[i])
	}
	csvPath := filepath.Join(t.TempDir(), "ll.csv")
	if err := os.WriteFile(csvPath, rows.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	emb, err := stream.StartEmbedded(0, "")
	if err != nil {
		t.Fatal(err)
	}
	forgetBrokers()
	defer emb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-data", dir, "-dataset", "los-loop", "-split-part", "train", "-steps", "2", "-topic", "ll"}, &out, &errOut); err != nil {
		t.Fatalf("publish: %v\n%s", err, errOut.String())
	}
	if err := cmdPublish(ctx, []string{"-brokers", emb.Addr, "-data", dir, "-dataset", "los-loop", "-csv", csvPath, "-topic", "llcsv"}, &out, &errOut); err != nil {
		t.Fatalf("publish -csv: %v\n%s", err, errOut.String())
	}
	for topic, n := range map[string]int{"ll": 2 * s.Nodes, "llcsv": s.Nodes} {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{emb.Addr}, GroupID: "check-" + topic, Topic: topic, StartOffset: kafka.FirstOffset, MaxWait: 50 * time.Millisecond})
		for k := 0; k < n; k++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatalf("%s: after %d of %d readings: %v", topic, k, n, err)
			}
			var rd stream.Reading
			if err := stream.DecodeReadingFor(&rd, m.Key, m.Value, names); err != nil {
				t.Fatalf("%s: %s: %v", topic, m.Value, err)
			}
			step := int((rd.TS - start) / stepMs)
			if string(m.Key) != ds.SensorIDs[rd.Sensor] || !bytes.Contains(m.Value, []byte(`"sensor":"`+ds.SensorIDs[rd.Sensor]+`"`)) || rd.Values[0] != s.Data[step*s.Nodes+rd.Sensor] {
				t.Fatalf("%s: reading keyed %q: %s, want sensor %s's of step %d, %v", topic, m.Key, m.Value, ds.SensorIDs[rd.Sensor], step, s.Data[step*s.Nodes+rd.Sensor])
			}
		}
		r.Close()
	}

	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte(fmt.Sprintf("ts,sensor,speed\n%d,5,60\n", start)), 0o644); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	err = cmdPublish(ctx, []string{"-data", dir, "-dataset", "los-loop", "-csv", bad, "-dry-run"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error()+errOut.String(), `"5" is not one of the 207 sensor IDs`) {
		t.Errorf("a row keyed by index: %v\n%s", err, errOut.String())
	}
	err = cmdPublish(ctx, []string{"-data", filepath.Join(t.TempDir(), "none"), "-dataset", "los-loop", "-csv", csvPath, "-dry-run"}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "los-loop") || !strings.Contains(err.Error(), "-model") {
		t.Errorf("without the data directory: %v", err)
	}
}
