#include "textflag.h"

// The mulAdd kernels' common arguments (k, a, ars, aks, b, ldb, c, ldc).
// TILE_C points DX, R11, R12 and R13 at rows 0–3 of c's tile.
#define TILE_C \
	MOVQ c+48(FP), DX; \
	MOVQ ldc+56(FP), R9; \
	SHLQ $3, R9; \
	LEAQ (DX)(R9*1), R11; \
	LEAQ (R11)(R9*1), R12; \
	LEAQ (R12)(R9*1), R13

// TILE_AB points SI, AX, BX and R8 at rows 0–3 of a, R9 at a's step
// along l (bytes), DI at b's tile and R10 at b's row stride (bytes), and
// sets CX to k.
#define TILE_AB \
	MOVQ a+8(FP), SI; \
	MOVQ ars+16(FP), R9; \
	SHLQ $3, R9; \
	LEAQ (SI)(R9*1), AX; \
	LEAQ (AX)(R9*1), BX; \
	LEAQ (BX)(R9*1), R8; \
	MOVQ aks+24(FP), R9; \
	SHLQ $3, R9; \
	MOVQ b+32(FP), DI; \
	MOVQ ldb+40(FP), R10; \
	SHLQ $3, R10; \
	MOVQ k+0(FP), CX

// STEP_4x8 is one step l of a 4×8 tile: it fuses a's four elements of
// column l (broadcast) times b's row l (Y8, Y9) into Y0–Y7 and moves the
// pointers of TILE_AB on to column and row l+1.
#define STEP_4x8 \
	VBROADCASTSD (SI), Y10; \
	VFMADD231PD  Y8, Y10, Y0; \
	VFMADD231PD  Y9, Y10, Y1; \
	VBROADCASTSD (AX), Y11; \
	VFMADD231PD  Y8, Y11, Y2; \
	VFMADD231PD  Y9, Y11, Y3; \
	VBROADCASTSD (BX), Y12; \
	VFMADD231PD  Y8, Y12, Y4; \
	VFMADD231PD  Y9, Y12, Y5; \
	VBROADCASTSD (R8), Y13; \
	VFMADD231PD  Y8, Y13, Y6; \
	VFMADD231PD  Y9, Y13, Y7; \
	ADDQ         R9, SI; \
	ADDQ         R9, AX; \
	ADDQ         R9, BX; \
	ADDQ         R9, R8; \
	ADDQ         R10, DI

// func mulAdd4x8(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int)
//
// Y0–Y7 hold the tile of c (rows 0–3, columns 0–3 and 4–7); each step l
// loads row l of b's tile (Y8, Y9), broadcasts a's four elements of column
// l and fuses their products in. R14, R15 and Y15 are left alone.
TEXT ·mulAdd4x8(SB), NOSPLIT, $0-64
	TILE_C
	VMOVUPD (DX), Y0
	VMOVUPD 32(DX), Y1
	VMOVUPD (R11), Y2
	VMOVUPD 32(R11), Y3
	VMOVUPD (R12), Y4
	VMOVUPD 32(R12), Y5
	VMOVUPD (R13), Y6
	VMOVUPD 32(R13), Y7
	TILE_AB

loop:
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	STEP_4x8
	DECQ         CX
	JNZ          loop

	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	VMOVUPD Y2, (R11)
	VMOVUPD Y3, 32(R11)
	VMOVUPD Y4, (R12)
	VMOVUPD Y5, 32(R12)
	VMOVUPD Y6, (R13)
	VMOVUPD Y7, 32(R13)
	VZEROUPPER
	RET

// func mulAdd4x8m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[8]int64)
//
// mulAdd4x8 on a tile of which only the columns whose mask is negative
// are loaded and stored (VMASKMOVPD reads nothing past them, so the last
// columns of a row need no padding). Y14 and Y15 hold the mask's halves.
TEXT ·mulAdd4x8m(SB), NOSPLIT, $0-72
	MOVQ    mask+64(FP), AX
	VMOVDQU (AX), Y14
	VMOVDQU 32(AX), Y15
	TILE_C
	VMASKMOVPD (DX), Y14, Y0
	VMASKMOVPD 32(DX), Y15, Y1
	VMASKMOVPD (R11), Y14, Y2
	VMASKMOVPD 32(R11), Y15, Y3
	VMASKMOVPD (R12), Y14, Y4
	VMASKMOVPD 32(R12), Y15, Y5
	VMASKMOVPD (R13), Y14, Y6
	VMASKMOVPD 32(R13), Y15, Y7
	TILE_AB

loopm:
	VMASKMOVPD   (DI), Y14, Y8
	VMASKMOVPD   32(DI), Y15, Y9
	STEP_4x8
	DECQ         CX
	JNZ          loopm

	VMASKMOVPD Y0, Y14, (DX)
	VMASKMOVPD Y1, Y15, 32(DX)
	VMASKMOVPD Y2, Y14, (R11)
	VMASKMOVPD Y3, Y15, 32(R11)
	VMASKMOVPD Y4, Y14, (R12)
	VMASKMOVPD Y5, Y15, 32(R12)
	VMASKMOVPD Y6, Y14, (R13)
	VMASKMOVPD Y7, Y15, 32(R13)
	VZEROUPPER
	RET

// func mulAdd4x4m(k int, a *float64, ars, aks int, b *float64, ldb int, c *float64, ldc int, mask *[4]int64)
//
// mulAdd4x8 on a tile of 4×4, of which only the columns whose mask is
// negative are loaded and stored (VMASKMOVPD reads nothing past them, so
// the last columns of a row need no padding). Y0–Y3 hold the tile's rows,
// Y14 the mask.
TEXT ·mulAdd4x4m(SB), NOSPLIT, $0-72
	MOVQ    mask+64(FP), AX
	VMOVDQU (AX), Y14
	TILE_C
	VMASKMOVPD (DX), Y14, Y0
	VMASKMOVPD (R11), Y14, Y1
	VMASKMOVPD (R12), Y14, Y2
	VMASKMOVPD (R13), Y14, Y3
	TILE_AB

loop4:
	VMASKMOVPD   (DI), Y14, Y8
	VBROADCASTSD (SI), Y10
	VFMADD231PD  Y8, Y10, Y0
	VBROADCASTSD (AX), Y11
	VFMADD231PD  Y8, Y11, Y1
	VBROADCASTSD (BX), Y12
	VFMADD231PD  Y8, Y12, Y2
	VBROADCASTSD (R8), Y13
	VFMADD231PD  Y8, Y13, Y3
	ADDQ         R9, SI
	ADDQ         R9, AX
	ADDQ         R9, BX
	ADDQ         R9, R8
	ADDQ         R10, DI
	DECQ         CX
	JNZ          loop4

	VMASKMOVPD Y0, Y14, (DX)
	VMASKMOVPD Y1, Y14, (R11)
	VMASKMOVPD Y2, Y14, (R12)
	VMASKMOVPD Y3, Y14, (R13)
	VZEROUPPER
	RET

// func dot4x2(k4 int, a *float64, lda int, b *float64, ldb int, lanes *[32]float64)
//
// Y0–Y7 hold the four chains of the eight dot products (a row r, b row q)
// in the order 2r+q; each step loads four elements of each row.
TEXT ·dot4x2(SB), NOSPLIT, $0-48
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R9
	SHLQ $3, R9
	LEAQ (SI)(R9*1), AX
	LEAQ (AX)(R9*1), BX
	LEAQ (BX)(R9*1), R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R10
	SHLQ $3, R10
	LEAQ (DI)(R10*1), DX
	MOVQ k4+0(FP), CX
	SHRQ $2, CX
	XORQ R11, R11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7

dotloop:
	VMOVUPD     (DI)(R11*1), Y8
	VMOVUPD     (DX)(R11*1), Y9
	VMOVUPD     (SI)(R11*1), Y10
	VFMADD231PD Y8, Y10, Y0
	VFMADD231PD Y9, Y10, Y1
	VMOVUPD     (AX)(R11*1), Y11
	VFMADD231PD Y8, Y11, Y2
	VFMADD231PD Y9, Y11, Y3
	VMOVUPD     (BX)(R11*1), Y12
	VFMADD231PD Y8, Y12, Y4
	VFMADD231PD Y9, Y12, Y5
	VMOVUPD     (R8)(R11*1), Y13
	VFMADD231PD Y8, Y13, Y6
	VFMADD231PD Y9, Y13, Y7
	ADDQ        $32, R11
	DECQ        CX
	JNZ         dotloop

	MOVQ    lanes+40(FP), R12
	VMOVUPD Y0, (R12)
	VMOVUPD Y1, 32(R12)
	VMOVUPD Y2, 64(R12)
	VMOVUPD Y3, 96(R12)
	VMOVUPD Y4, 128(R12)
	VMOVUPD Y5, 160(R12)
	VMOVUPD Y6, 192(R12)
	VMOVUPD Y7, 224(R12)
	VZEROUPPER
	RET
