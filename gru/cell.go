package gru

// The cell's elementwise steps, forward and back. They run four at a time
// in assembly (cell_amd64.s) where the machine has AVX, and in Go elsewhere
// and on the tails, with the same bits: every operation is rounded on its
// own, as the assembly does. The explicit float64 conversions in the Go
// loops forbid the compiler to fuse a product into the addition that takes
// it (the Go specification allows such fusing otherwise, and does it where
// GOAMD64 or the architecture allows FMA), so that these steps give the
// same bits whether the kernels run or not, on any build (TestGoldenBits,
// run on arm64 in CI). (Other Go code of the project, gonum's included, is
// not so guarded: a GOAMD64=v3 build prints the same tables, with figures
// that differ from the default build's in the 15th digit; RESULTS.md.)

// mulTo sets d[k] = a[k]·b[k]: r⊙h, the input of the candidate's recurrent
// product.
func mulTo(d, a, b []float64) {
	a, b = a[:len(d)], b[:len(d)]
	k := 0
	if haveAVX && len(d) >= 4 {
		k = len(d) &^ 3
		mul4(&d[0], &a[0], &b[0], k)
	}
	for ; k < len(d); k++ {
		d[k] = a[k] * b[k]
	}
}

// blend sets h[k] = (1−z[k])·hp[k] + z[k]·n[k]: the new hidden state from
// the update gate z, the candidate n and the previous state hp.
func blend(h, z, n, hp []float64) {
	z, n, hp = z[:len(h)], n[:len(h)], hp[:len(h)]
	k := 0
	if haveAVX && len(h) >= 4 {
		k = len(h) &^ 3
		blend4(&h[0], &z[0], &n[0], &hp[0], k)
	}
	for ; k < len(h); k++ {
		h[k] = float64((1-z[k])*hp[k]) + float64(z[k]*n[k])
	}
}

// cellBack takes the gradient dh of the new state back through
// h' = (1−z)⊙h + z⊙n and n = tanh(a_n): it sets dz to the gradient of z's
// pre-activation, dan to that of n's, and dh to the part of the previous
// state's gradient that flows through (1−z)⊙h. dz and dan must not share
// memory with z, n or h: the Go loop reads z after writing dz, the
// assembly reads all before it writes, and the two would differ.
func cellBack(dz, dan, dh, z, n, h []float64) {
	dz, dan, z, n, h = dz[:len(dh)], dan[:len(dh)], z[:len(dh)], n[:len(dh)], h[:len(dh)]
	k := 0
	if haveAVX && len(dh) >= 4 {
		k = len(dh) &^ 3
		cellBack4(&dz[0], &dan[0], &dh[0], &z[0], &n[0], &h[0], k)
	}
	for ; k < len(dh); k++ {
		d := dh[k]
		dz[k] = d * (n[k] - h[k]) * z[k] * (1 - z[k])
		dan[k] = d * z[k] * (1 - float64(n[k]*n[k]))
		dh[k] = d * (1 - z[k])
	}
}

// gateBack takes drh, the gradient of r⊙h, back to the previous state and
// to the reset gate: dh[k] += drh[k]·r[k], and dr is set to the gradient
// of r's pre-activation.
func gateBack(dh, dr, drh, r, h []float64) {
	dr, drh, r, h = dr[:len(dh)], drh[:len(dh)], r[:len(dh)], h[:len(dh)]
	k := 0
	if haveAVX && len(dh) >= 4 {
		k = len(dh) &^ 3
		gateBack4(&dh[0], &dr[0], &drh[0], &r[0], &h[0], k)
	}
	for ; k < len(dh); k++ {
		d := drh[k]
		dh[k] += float64(d * r[k])
		dr[k] = d * h[k] * r[k] * (1 - r[k])
	}
}
