// Command pemsshape writes a scratch data directory for timing a PeMS
// reproduction before the PeMS series arrive: the real PeMS04 and PeMS08
// road graphs and SZ-taxi copied from the data directory, and PEMS04.npz
// and PEMS08.npz of the real shapes (16992 × 307 × 3, 17856 × 170 × 3)
// filled with random readings (flow 50–450, occupancy 0.01–0.21, speed
// 30–70, seeded). Training costs the same whatever the readings are; the
// scores on these files mean nothing, and the directory must never be used
// for anything but timing.
//
//	go run ./bench/pemsshape -out /tmp/shape
//	pems-train teacher -data /tmp/shape -dataset pems04 -prep paper -split-by nodes -epochs 2 -out /tmp/shape-pems04.model
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

func main() {
	out := flag.String("out", "", "scratch data directory to write (required)")
	data := flag.String("data", "", "data directory with the real road graphs (default $PEMS_DATA, then shared/datasets beside the current directory or one of its parents)")
	flag.Parse()
	if err := run(*out, *data); err != nil {
		fmt.Fprintln(os.Stderr, "pemsshape:", err)
		os.Exit(1)
	}
}

func run(out, data string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	dir, err := pems.ResolveDataDir(data)
	if err != nil {
		return err
	}
	// Never the data directory itself: the copies would truncate the real
	// files onto themselves, and the random series would stand where the
	// real ones belong.
	if oi, err := os.Stat(out); err == nil {
		if di, err := os.Stat(dir); err == nil && os.SameFile(oi, di) {
			return fmt.Errorf("-out %s is the data directory %s: give a scratch directory", out, dir)
		}
	}
	copies := []string{"pems/pems04/distance.csv", "pems/pems08/distance.csv", "sz-taxi/SZ_taxi.npz", "sz-taxi/SZ_taxi_adj.csv"}
	for _, f := range copies {
		if err := copyFile(filepath.Join(out, f), filepath.Join(dir, f)); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		file         string
		steps, nodes int
	}{{"pems/pems04/PEMS04.npz", 16992, 307}, {"pems/pems08/PEMS08.npz", 17856, 170}} {
		rng := rand.New(rand.NewPCG(1, 2))
		s := &pems.Series{Steps: d.steps, Nodes: d.nodes, Channels: 3, Data: make([]float64, d.steps*d.nodes*3)}
		for i := range s.Data {
			switch i % 3 {
			case 0:
				s.Data[i] = 50 + 400*rng.Float64()
			case 1:
				s.Data[i] = 0.01 + 0.2*rng.Float64()
			default:
				s.Data[i] = 30 + 40*rng.Float64()
			}
		}
		if err := pems.WriteNPZ(filepath.Join(out, d.file), s); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(dst, src string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	defer in.Close()
	if si, err := in.Stat(); err == nil {
		if di, err := os.Stat(dst); err == nil && os.SameFile(si, di) {
			return fmt.Errorf("copy %s: it is the file it would be copied to (%s)", src, dst)
		}
	}
	o, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return o.Close()
}
