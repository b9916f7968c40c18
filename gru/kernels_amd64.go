// The declarations of the cell's assembly kernels (cell_amd64.s) and
// whether this machine can run them; kernels_other.go stands in for them
// elsewhere. Each does what its namesake in cell.go does, to the bit, for
// k elements, k a positive multiple of 4.

package gru

import "golang.org/x/sys/cpu"

// haveAVX says whether the kernels can run: they use AVX's 256-bit
// registers (no fused multiply-add).
var haveAVX = cpu.X86.HasAVX

//go:noescape
func mul4(d, a, b *float64, k int)

//go:noescape
func blend4(h, z, n, hp *float64, k int)

//go:noescape
func cellBack4(dz, dan, dh, z, n, h *float64, k int)

//go:noescape
func gateBack4(dh, dr, drh, r, h *float64, k int)
