package main

import (
	"context"
	"fmt"
	"io"

	"github.com/pemsforecast/sdgnn/evaluation"
	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// breakdown returns the completeness breakdown of forecasts pred of part r
// from the inputs of set: by the gaps of each sensor's own window and
// those of the other sensors in receptive (nil: none read), and, where set
// is silenced by the outage o, by whether o silenced the sensor.
func breakdown(set *snapshot.Set, r snapshot.Part, o snapshot.Outage, pred, truth []float64, receptive [][]int, floor float64) (*evaluation.Breakdown, error) {
	g, err := set.Completeness(r, o, receptive)
	if err != nil {
		return nil, err
	}
	b, err := evaluation.Stratify(pred, truth, set.Nodes, set.Channels, g, floor)
	if err != nil {
		return nil, err
	}
	return &b, nil
}

// scoreOutages scores lm on part r of p under each length of the outage
// scenario o: a pass a length, the sensors o silences silenced for that
// many readings. It returns nil when o silences nothing.
func scoreOutages(ctx context.Context, lm *loaded, p *snapshot.Prepared, r snapshot.Part, o snapshot.Outage, receptive [][]int, floor float64) ([]outageScore, error) {
	if !o.Enabled() {
		return nil, nil
	}
	var out []outageScore
	for _, l := range o.Lengths {
		set := p.Set.Silenced(o.For(l))
		pred, truth, err := lm.predict(ctx, set, p, r)
		if err != nil {
			return nil, fmt.Errorf("outage of %d readings: %w", l, err)
		}
		rep, err := evaluation.Build(pred, truth, r.Len(), p.Set.Nodes, p.Set.Channels, 1, floor)
		if err != nil {
			return nil, err
		}
		rep.Chunks, rep.ChunkMAEStd, rep.PerNode = nil, nil, nil // one pass of many: the overall and classes say it
		if rep.Completeness, err = breakdown(set, r, o, pred, truth, receptive, floor); err != nil {
			return nil, err
		}
		out = append(out, outageScore{Length: l, Report: rep})
	}
	return out, nil
}

// outageTable writes eval's text summary of the passes of the outage
// scenario o (its text form): per length, the MAE of the silenced
// sensors, of the others and of all.
func outageTable(w io.Writer, o string, passes []outageScore, unit string) error {
	if len(passes) == 0 {
		return nil
	}
	u := ""
	if unit != "" {
		u = " (" + unit + ")"
	}
	fmt.Fprintf(w, "\nsimulated outages %s (truths kept; %d readings or more silence the whole window):\n\n", o, passes[0].Report.Completeness.Window)
	fmt.Fprintf(w, "| silenced readings | silenced sensors: MAE%s | count | other sensors: MAE%s | all: MAE%s |\n|---:|---:|---:|---:|---:|\n", u, u, u)
	for _, ps := range passes {
		b := ps.Report.Completeness
		if _, err := fmt.Fprintf(w, "| %d | %.4f | %d | %.4f | %.4f |\n", ps.Length, b.Silenced.MAE, b.Silenced.Count, b.Unsilenced.MAE, ps.Report.Overall.MAE); err != nil {
			return err
		}
	}
	return nil
}

// teacherSets returns the sensors whose windows a teacher's forecast of
// each node reads: for a GRU-GCN with the given number of GCN layers, its
// neighbourhood of that many hops; nil for a GRU (layers 0), which reads
// only the node's own.
func teacherSets(layers int, p *snapshot.Prepared) ([][]int, error) {
	if layers < 1 {
		return nil, nil
	}
	hood, err := sdgnn.Candidates(p.Dataset.Graph.Neighbors(), sdgnn.CandidateConfig{K1: layers})
	if err != nil {
		return nil, fmt.Errorf("receptive sets of a %d-layer GCN: %w", layers, err)
	}
	return hood, nil
}
