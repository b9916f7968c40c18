package stream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/pemsforecast/sdgnn/internal/english"
)

// Snapshot format: a fixed header, one record per node, a CRC-32C trailer.
//
//	magic "SDGS" | version u16 | nodes u32 | window u32 | channels u32 | step ms i64 | ring u32
//	per node: newest i64 | last emitted i64 | ring × slot i64 | ring × channels × f64
//	CRC-32C (Castagnoli) of everything before, u32
//
// ring is Window + History. All integers little-endian; absent slots are
// math.MinInt64. Version 1 (no ring field; ring = window) is still read.
// Embeddings are not stored: they are recomputed when needed, so a snapshot
// stays valid across a model update with the same shape, and a snapshot
// taken with another history restores what fits.
const (
	snapMagic    = "SDGS"
	snapVersion  = 2
	snapHeaderV1 = 4 + 2 + 4 + 4 + 4 + 8
	snapHeader   = snapHeaderV1 + 4
)

// ErrSnapshot is wrapped by every error of Restore about the snapshot bytes
// (truncated, corrupted, foreign or of another shape).
var ErrSnapshot = errors.New("bad state snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func snapSize(header, n, ring, c int) int {
	return header + n*(16+ring*8+ring*c*8) + 4
}

// Snapshot returns the whole state (readings held, newest and last emitted
// slot of every node) as versioned, checksummed bytes for durability.
// Counters are process metrics and are not included.
func (s *State) Snapshot() []byte {
	return s.AppendSnapshot(make([]byte, 0, snapSize(snapHeader, s.n, s.r, s.c)))
}

// AppendSnapshot appends the snapshot of s to dst (see Snapshot).
func (s *State) AppendSnapshot(dst []byte) []byte {
	start := len(dst)
	le := binary.LittleEndian
	dst = append(dst, snapMagic...)
	dst = le.AppendUint16(dst, snapVersion)
	dst = le.AppendUint32(dst, uint32(s.n))
	dst = le.AppendUint32(dst, uint32(s.t))
	dst = le.AppendUint32(dst, uint32(s.c))
	dst = le.AppendUint64(dst, uint64(s.stepMs))
	dst = le.AppendUint32(dst, uint32(s.r))
	for z := range s.nodes {
		nd := &s.nodes[z]
		dst = le.AppendUint64(dst, uint64(nd.newest))
		dst = le.AppendUint64(dst, uint64(nd.lastEmitted))
		for _, sl := range nd.slots {
			dst = le.AppendUint64(dst, uint64(sl))
		}
		for _, v := range nd.vals {
			dst = le.AppendUint64(dst, math.Float64bits(v))
		}
	}
	return le.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Restore replaces the state's readings, newest and last emitted slots
// with those of a Snapshot and drops every cached embedding. The snapshot
// must have been taken of a state with the same nodes, window, channels
// and step; of its readings, those within this state's history are kept.
// On error (wrapping ErrSnapshot for bad bytes) s is unchanged. Counters are
// kept. Call Emitter.Rescan afterwards.
func (s *State) Restore(data []byte) error {
	if len(data) < snapHeaderV1+4 {
		return fmt.Errorf("restore: %d bytes, shorter than a header: %w", len(data), ErrSnapshot)
	}
	le := binary.LittleEndian
	if string(data[:4]) != snapMagic {
		return fmt.Errorf("restore: not a state snapshot (magic %q): %w", data[:4], ErrSnapshot)
	}
	header := snapHeader
	switch v := le.Uint16(data[4:]); v {
	case 1:
		header = snapHeaderV1
	case snapVersion:
	default:
		return fmt.Errorf("restore: snapshot version %d, want 1 or %d: %w", v, snapVersion, ErrSnapshot)
	}
	if len(data) < header+4 {
		return fmt.Errorf("restore: %d bytes, shorter than a header: %w", len(data), ErrSnapshot)
	}
	n, t, c := le.Uint32(data[6:]), le.Uint32(data[10:]), le.Uint32(data[14:])
	step := int64(le.Uint64(data[18:]))
	ring := t
	if header == snapHeader {
		ring = le.Uint32(data[26:])
	}
	if int64(n) != int64(s.n) || int64(t) != int64(s.t) || int64(c) != int64(s.c) || step != s.stepMs {
		return fmt.Errorf("restore: snapshot of %s, window %d, %s, step %d ms; the state has %d, %d, %d, %d: %w",
			english.Count(int(n), "node"), t, english.Count(int(c), "channel"), step, s.n, s.t, s.c, s.stepMs, ErrSnapshot)
	}
	if ring < t || ring > t+1<<20 {
		return fmt.Errorf("restore: ring of %d slots for a window of %d: %w", ring, t, ErrSnapshot)
	}
	R, C := int(ring), s.c
	if len(data) != snapSize(header, s.n, R, C) {
		return fmt.Errorf("restore: %d bytes, want %d (truncated or padded): %w", len(data), snapSize(header, s.n, R, C), ErrSnapshot)
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), le.Uint32(data[len(data)-4:]); got != want {
		return fmt.Errorf("restore: checksum %08x, stored %08x: %w", got, want, ErrSnapshot)
	}
	// Decode into fresh storage and check it before touching s.
	newest := make([]int64, s.n)
	last := make([]int64, s.n)
	slots := make([]int64, s.n*R)
	vals := make([]float64, s.n*R*C)
	off := header
	u64 := func() uint64 { v := le.Uint64(data[off:]); off += 8; return v }
	for z := 0; z < s.n; z++ {
		newest[z], last[z] = int64(u64()), int64(u64())
		for i := 0; i < R; i++ {
			slots[z*R+i] = int64(u64())
		}
		for i := 0; i < R*C; i++ {
			vals[z*R*C+i] = math.Float64frombits(u64())
		}
		for i := 0; i < R; i++ {
			sl := slots[z*R+i]
			if sl == noSlot {
				continue
			}
			if newest[z] == noSlot || sl > newest[z] || sl <= newest[z]-int64(R) || posIn(sl, R) != i {
				return fmt.Errorf("restore: node %d holds slot %d at position %d with newest %d: %w", z, sl, i, newest[z], ErrSnapshot)
			}
			for _, v := range vals[(z*R+i)*C : (z*R+i+1)*C] {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("restore: node %d slot %d has value %g: %w", z, sl, v, ErrSnapshot)
				}
			}
		}
		if newest[z] != noSlot && slots[z*R+posIn(newest[z], R)] != newest[z] {
			return fmt.Errorf("restore: node %d lacks its newest slot %d: %w", z, newest[z], ErrSnapshot)
		}
	}
	for z := range s.nodes {
		nd := &s.nodes[z]
		nd.newest, nd.lastEmitted = newest[z], last[z]
		for i := range nd.slots {
			nd.slots[i], nd.embAt[i] = noSlot, noSlot
		}
		nd.first = noSlot
		for i := 0; i < R; i++ {
			sl := slots[z*R+i]
			if sl != noSlot && sl > nd.newest-int64(s.r) {
				s.store(nd, sl, vals[(z*R+i)*C:(z*R+i+1)*C])
				if nd.first == noSlot || sl < nd.first {
					nd.first = sl
				}
			}
		}
	}
	s.resetMark()
	return nil
}

// posIn is State.pos for a ring of r slots.
func posIn(slot int64, r int) int {
	p := slot % int64(r)
	if p < 0 {
		p += int64(r)
	}
	return int(p)
}
