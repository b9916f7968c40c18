package snapshot

import (
	"fmt"

	"github.com/pemsforecast/sdgnn/datasets/pems"
)

// Links says how a new model's graph convolution weighs the road graph's
// links. The choice is recorded in the model's normaliser
// (Normalizer.Edges) and its graph fingerprint, so that every later use
// of the model builds the same propagation matrix.
type Links string

// Ways to weigh links.
const (
	// LinksDefault is the dataset's way: a weighted graph's weights where
	// its Info.WeighLinks says so, scaled distances for PrepPaper on a
	// graph with distances (PeMS), else every link 1.
	LinksDefault Links = ""
	// LinksOnly weighs every link 1: the model reads only which sensors
	// are linked (pems.Graph.NormalizedAdjacency).
	LinksOnly Links = "links"
	// LinksWeights weighs the links by a weighted graph's weights
	// (pems.FormatWeighted, such as Los-loop's Gaussian-kernel
	// similarities; pems.Graph.WeightedAdjacency).
	LinksWeights Links = "weights"
)

// ParseLinks returns the Links named s: "links", "weights", or "" for
// the dataset's default.
func ParseLinks(s string) (Links, error) {
	switch l := Links(s); l {
	case LinksDefault, LinksOnly, LinksWeights:
		return l, nil
	}
	return "", fmt.Errorf("links %q: want %q (every link weighs 1), %q (the graph's weights) or empty for the dataset's default", s, LinksOnly, LinksWeights)
}

// edgeScale returns how a new model of preprocessing prep over ds's graph
// weighs its links, as links says; nil for links of weight 1.
func edgeScale(ds *pems.Dataset, prep Prep, links Links) (*EdgeScale, error) {
	weighted := ds.Info.GraphFormat == pems.FormatWeighted
	switch links {
	case LinksOnly:
		return nil, nil
	case LinksWeights:
		if !weighted {
			return nil, fmt.Errorf("links weighed by the graph's weights: the graph of %s is not a weighted one (format %s, %s): weigh its links 1",
				ds.Info.Name, ds.Info.GraphFormat, costsOf(ds.Info.GraphFormat))
		}
		return WeightScale(), nil
	case LinksDefault:
		if weighted {
			if ds.Info.WeighLinks {
				return WeightScale(), nil
			}
			return nil, nil
		}
		if lo, hi, ok := ds.Graph.CostRange(); ok && prep == PrepPaper {
			return &EdgeScale{Min: lo, Max: hi}, nil
		}
		return nil, nil
	}
	return nil, fmt.Errorf("links %q: want %q, %q or the dataset's default", links, LinksOnly, LinksWeights)
}

// costsOf says what the costs of a graph of the given format are.
func costsOf(format string) string {
	if format == pems.FormatDistance {
		return "its costs are distances"
	}
	return "its entries are 0 or 1"
}
