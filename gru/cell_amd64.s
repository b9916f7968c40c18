#include "textflag.h"

// The GRU cell's elementwise steps (cell.go), four lanes at a time, every
// operation rounded on its own: no fused multiply-add, so that each lane
// computes what the Go loop computes. k is a positive multiple of 4.

DATA one<>+0(SB)/8, $0x3ff0000000000000
DATA one<>+8(SB)/8, $0x3ff0000000000000
DATA one<>+16(SB)/8, $0x3ff0000000000000
DATA one<>+24(SB)/8, $0x3ff0000000000000
GLOBL one<>(SB), RODATA|NOPTR, $32

// func mul4(d, a, b *float64, k int)
TEXT ·mul4(SB), NOSPLIT, $0-32
	MOVQ d+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ k+24(FP), CX
	XORQ AX, AX

mloop:
	VMOVUPD (SI)(AX*8), Y0
	VMULPD  (DX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLT     mloop
	VZEROUPPER
	RET

// func blend4(h, z, n, hp *float64, k int)
//
// h = (1−z)·hp + z·n
TEXT ·blend4(SB), NOSPLIT, $0-40
	MOVQ    h+0(FP), DI
	MOVQ    z+8(FP), SI
	MOVQ    n+16(FP), DX
	MOVQ    hp+24(FP), R8
	MOVQ    k+32(FP), CX
	XORQ    AX, AX
	VMOVUPD one<>(SB), Y15

bloop:
	VMOVUPD (SI)(AX*8), Y0      // z
	VSUBPD  Y0, Y15, Y1         // 1−z
	VMULPD  (R8)(AX*8), Y1, Y1  // (1−z)·hp
	VMULPD  (DX)(AX*8), Y0, Y2  // z·n
	VADDPD  Y2, Y1, Y1
	VMOVUPD Y1, (DI)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLT     bloop
	VZEROUPPER
	RET

// func cellBack4(dz, dan, dh, z, n, h *float64, k int)
//
// dz = d·(n−h)·z·(1−z), dan = d·z·(1−n·n), dh = d·(1−z), d the old dh,
// each product taken left to right.
TEXT ·cellBack4(SB), NOSPLIT, $0-56
	MOVQ    dz+0(FP), DI
	MOVQ    dan+8(FP), R9
	MOVQ    dh+16(FP), R10
	MOVQ    z+24(FP), SI
	MOVQ    n+32(FP), DX
	MOVQ    h+40(FP), R8
	MOVQ    k+48(FP), CX
	XORQ    AX, AX
	VMOVUPD one<>(SB), Y15

cloop:
	VMOVUPD (R10)(AX*8), Y0     // d
	VMOVUPD (SI)(AX*8), Y1      // z
	VMOVUPD (DX)(AX*8), Y2      // n
	VSUBPD  Y1, Y15, Y3         // 1−z
	VSUBPD  (R8)(AX*8), Y2, Y4  // n−h
	VMULPD  Y4, Y0, Y4          // d·(n−h)
	VMULPD  Y1, Y4, Y4          // ·z
	VMULPD  Y3, Y4, Y4          // ·(1−z)
	VMOVUPD Y4, (DI)(AX*8)
	VMULPD  Y2, Y2, Y5          // n·n
	VSUBPD  Y5, Y15, Y5         // 1−n·n
	VMULPD  Y1, Y0, Y6          // d·z
	VMULPD  Y5, Y6, Y6          // ·(1−n·n)
	VMOVUPD Y6, (R9)(AX*8)
	VMULPD  Y3, Y0, Y0          // d·(1−z)
	VMOVUPD Y0, (R10)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLT     cloop
	VZEROUPPER
	RET

// func gateBack4(dh, dr, drh, r, h *float64, k int)
//
// dh += d·r, dr = d·h·r·(1−r), d = drh, each product taken left to right.
TEXT ·gateBack4(SB), NOSPLIT, $0-48
	MOVQ    dh+0(FP), DI
	MOVQ    dr+8(FP), R9
	MOVQ    drh+16(FP), R10
	MOVQ    r+24(FP), SI
	MOVQ    h+32(FP), R8
	MOVQ    k+40(FP), CX
	XORQ    AX, AX
	VMOVUPD one<>(SB), Y15

gloop:
	VMOVUPD (R10)(AX*8), Y0     // d
	VMOVUPD (SI)(AX*8), Y1      // r
	VMULPD  Y1, Y0, Y2          // d·r
	VADDPD  (DI)(AX*8), Y2, Y2  // dh + d·r
	VMOVUPD Y2, (DI)(AX*8)
	VMULPD  (R8)(AX*8), Y0, Y3  // d·h
	VMULPD  Y1, Y3, Y3          // ·r
	VSUBPD  Y1, Y15, Y4         // 1−r
	VMULPD  Y4, Y3, Y3          // ·(1−r)
	VMOVUPD Y3, (R9)(AX*8)
	ADDQ    $4, AX
	CMPQ    AX, CX
	JLT     gloop
	VZEROUPPER
	RET
