//go:build !amd64

package gru

// haveAVX is false where no assembly kernel is written: the cell's loops
// run in Go, with the same results.
const haveAVX = false

func mul4(d, a, b *float64, k int) { panic("gru: no assembly kernel") }

func blend4(h, z, n, hp *float64, k int) { panic("gru: no assembly kernel") }

func cellBack4(dz, dan, dh, z, n, h *float64, k int) { panic("gru: no assembly kernel") }

func gateBack4(dh, dr, drh, r, h *float64, k int) { panic("gru: no assembly kernel") }
