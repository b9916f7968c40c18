package stream

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/pemsforecast/sdgnn/sdgnn"
	"github.com/pemsforecast/sdgnn/snapshot"
)

// guardState sets the checks st makes of a reading beyond its form, as
// cfg asks: how far ahead of the stream it may be stamped
// (Config.MaxAheadSlots, State.SetMaxAhead) and the plausible ranges of
// its values (Config.ValueRanges, State.SetBounds), for a state of
// bundle b made at start or by a reload.
func guardState(st *State, b *sdgnn.Bundle, cfg Config) error {
	switch {
	case cfg.MaxAheadSlots == 0:
		st.SetMaxAhead(int64(st.r))
	case cfg.MaxAheadSlots > 0:
		st.SetMaxAhead(cfg.MaxAheadSlots)
	}
	bounds, err := plausibleRanges(b, cfg)
	if err != nil {
		return err
	}
	return st.SetBounds(bounds)
}

// plausibleRanges returns the ranges of b's channels a reading's values
// must lie in: b's, but where cfg.ValueRanges names a channel (by name or
// index) or "*" (every channel), and none with NoValueRanges.
func plausibleRanges(b *sdgnn.Bundle, cfg Config) ([]snapshot.Bounds, error) {
	if cfg.NoValueRanges {
		return nil, nil
	}
	if len(cfg.ValueRanges) == 0 {
		return b.Meta.Bounds, nil
	}
	C := len(b.Meta.Norm.Mean)
	bounds := slices.Clone(b.Meta.Bounds)
	if bounds == nil {
		bounds = make([]snapshot.Bounds, C)
		for c := range bounds {
			bounds[c] = snapshot.Bounds{Lo: -math.MaxFloat64, Hi: math.MaxFloat64}
		}
	}
	if bd, ok := cfg.ValueRanges["*"]; ok {
		for c := range bounds {
			bounds[c] = bd
		}
	}
	for name, bd := range cfg.ValueRanges {
		if !(bd.Lo <= bd.Hi) {
			return nil, fmt.Errorf("value range of %s: %v is empty", name, bd)
		}
		if name == "*" {
			continue
		}
		c := slices.Index(b.Meta.Channels, name)
		if i, err := strconv.Atoi(name); c < 0 && err == nil && 0 <= i && i < C {
			c = i
		}
		if c < 0 {
			return nil, fmt.Errorf("value range of channel %q: the model's channels are %v", name, b.Meta.Channels)
		}
		bounds[c] = bd
	}
	return bounds, nil
}
