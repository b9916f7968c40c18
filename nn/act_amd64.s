#include "textflag.h"

// The constants of exp, Sigmoid and Tanh (exp.go, nn.go), four copies each
// for 256-bit memory operands; their bits are those of the Go constants.
DATA invln2n<>+0(SB)/8, $0x40571547652b82fe
DATA invln2n<>+8(SB)/8, $0x40571547652b82fe
DATA invln2n<>+16(SB)/8, $0x40571547652b82fe
DATA invln2n<>+24(SB)/8, $0x40571547652b82fe
GLOBL invln2n<>(SB), RODATA|NOPTR, $32

DATA shift<>+0(SB)/8, $0x4338000000000000
DATA shift<>+8(SB)/8, $0x4338000000000000
DATA shift<>+16(SB)/8, $0x4338000000000000
DATA shift<>+24(SB)/8, $0x4338000000000000
GLOBL shift<>(SB), RODATA|NOPTR, $32

DATA ln2hi<>+0(SB)/8, $0x3f862e42fefa0000
DATA ln2hi<>+8(SB)/8, $0x3f862e42fefa0000
DATA ln2hi<>+16(SB)/8, $0x3f862e42fefa0000
DATA ln2hi<>+24(SB)/8, $0x3f862e42fefa0000
GLOBL ln2hi<>(SB), RODATA|NOPTR, $32

DATA ln2lo<>+0(SB)/8, $0x3d1cf79abc9e3b3a
DATA ln2lo<>+8(SB)/8, $0x3d1cf79abc9e3b3a
DATA ln2lo<>+16(SB)/8, $0x3d1cf79abc9e3b3a
DATA ln2lo<>+24(SB)/8, $0x3d1cf79abc9e3b3a
GLOBL ln2lo<>(SB), RODATA|NOPTR, $32

DATA half<>+0(SB)/8, $0x3fe0000000000000
DATA half<>+8(SB)/8, $0x3fe0000000000000
DATA half<>+16(SB)/8, $0x3fe0000000000000
DATA half<>+24(SB)/8, $0x3fe0000000000000
GLOBL half<>(SB), RODATA|NOPTR, $32

DATA c6<>+0(SB)/8, $0x3fc5555555555555
DATA c6<>+8(SB)/8, $0x3fc5555555555555
DATA c6<>+16(SB)/8, $0x3fc5555555555555
DATA c6<>+24(SB)/8, $0x3fc5555555555555
GLOBL c6<>(SB), RODATA|NOPTR, $32

DATA c24<>+0(SB)/8, $0x3fa5555555555555
DATA c24<>+8(SB)/8, $0x3fa5555555555555
DATA c24<>+16(SB)/8, $0x3fa5555555555555
DATA c24<>+24(SB)/8, $0x3fa5555555555555
GLOBL c24<>(SB), RODATA|NOPTR, $32

DATA c120<>+0(SB)/8, $0x3f81111111111111
DATA c120<>+8(SB)/8, $0x3f81111111111111
DATA c120<>+16(SB)/8, $0x3f81111111111111
DATA c120<>+24(SB)/8, $0x3f81111111111111
GLOBL c120<>(SB), RODATA|NOPTR, $32

DATA one<>+0(SB)/8, $0x3ff0000000000000
DATA one<>+8(SB)/8, $0x3ff0000000000000
DATA one<>+16(SB)/8, $0x3ff0000000000000
DATA one<>+24(SB)/8, $0x3ff0000000000000
GLOBL one<>(SB), RODATA|NOPTR, $32

DATA two<>+0(SB)/8, $0x4000000000000000
DATA two<>+8(SB)/8, $0x4000000000000000
DATA two<>+16(SB)/8, $0x4000000000000000
DATA two<>+24(SB)/8, $0x4000000000000000
GLOBL two<>(SB), RODATA|NOPTR, $32

DATA sigLo<>+0(SB)/8, $0xc086280000000000
DATA sigLo<>+8(SB)/8, $0xc086280000000000
DATA sigLo<>+16(SB)/8, $0xc086280000000000
DATA sigLo<>+24(SB)/8, $0xc086280000000000
GLOBL sigLo<>(SB), RODATA|NOPTR, $32

DATA sigHi<>+0(SB)/8, $0x4086200000000000
DATA sigHi<>+8(SB)/8, $0x4086200000000000
DATA sigHi<>+16(SB)/8, $0x4086200000000000
DATA sigHi<>+24(SB)/8, $0x4086200000000000
GLOBL sigHi<>(SB), RODATA|NOPTR, $32

DATA tanhSmall<>+0(SB)/8, $0x3fe4000000000000
DATA tanhSmall<>+8(SB)/8, $0x3fe4000000000000
DATA tanhSmall<>+16(SB)/8, $0x3fe4000000000000
DATA tanhSmall<>+24(SB)/8, $0x3fe4000000000000
GLOBL tanhSmall<>(SB), RODATA|NOPTR, $32

DATA tanhBig<>+0(SB)/8, $0x4046000000000000
DATA tanhBig<>+8(SB)/8, $0x4046000000000000
DATA tanhBig<>+16(SB)/8, $0x4046000000000000
DATA tanhBig<>+24(SB)/8, $0x4046000000000000
GLOBL tanhBig<>(SB), RODATA|NOPTR, $32

DATA p0<>+0(SB)/8, $0xbfeedc5baafd6f4b
DATA p0<>+8(SB)/8, $0xbfeedc5baafd6f4b
DATA p0<>+16(SB)/8, $0xbfeedc5baafd6f4b
DATA p0<>+24(SB)/8, $0xbfeedc5baafd6f4b
GLOBL p0<>(SB), RODATA|NOPTR, $32

DATA p1<>+0(SB)/8, $0xc058d26a0e26682d
DATA p1<>+8(SB)/8, $0xc058d26a0e26682d
DATA p1<>+16(SB)/8, $0xc058d26a0e26682d
DATA p1<>+24(SB)/8, $0xc058d26a0e26682d
GLOBL p1<>(SB), RODATA|NOPTR, $32

DATA p2<>+0(SB)/8, $0xc0993ac030580563
DATA p2<>+8(SB)/8, $0xc0993ac030580563
DATA p2<>+16(SB)/8, $0xc0993ac030580563
DATA p2<>+24(SB)/8, $0xc0993ac030580563
GLOBL p2<>(SB), RODATA|NOPTR, $32

DATA q0<>+0(SB)/8, $0x405c33f28a581b86
DATA q0<>+8(SB)/8, $0x405c33f28a581b86
DATA q0<>+16(SB)/8, $0x405c33f28a581b86
DATA q0<>+24(SB)/8, $0x405c33f28a581b86
GLOBL q0<>(SB), RODATA|NOPTR, $32

DATA q1<>+0(SB)/8, $0x40a176fa0e5535fa
DATA q1<>+8(SB)/8, $0x40a176fa0e5535fa
DATA q1<>+16(SB)/8, $0x40a176fa0e5535fa
DATA q1<>+24(SB)/8, $0x40a176fa0e5535fa
GLOBL q1<>(SB), RODATA|NOPTR, $32

DATA q2<>+0(SB)/8, $0x40b2ec102442040c
DATA q2<>+8(SB)/8, $0x40b2ec102442040c
DATA q2<>+16(SB)/8, $0x40b2ec102442040c
DATA q2<>+24(SB)/8, $0x40b2ec102442040c
GLOBL q2<>(SB), RODATA|NOPTR, $32

DATA sign<>+0(SB)/8, $0x8000000000000000
DATA sign<>+8(SB)/8, $0x8000000000000000
DATA sign<>+16(SB)/8, $0x8000000000000000
DATA sign<>+24(SB)/8, $0x8000000000000000
GLOBL sign<>(SB), RODATA|NOPTR, $32

DATA absmask<>+0(SB)/8, $0x7fffffffffffffff
DATA absmask<>+8(SB)/8, $0x7fffffffffffffff
DATA absmask<>+16(SB)/8, $0x7fffffffffffffff
DATA absmask<>+24(SB)/8, $0x7fffffffffffffff
GLOBL absmask<>(SB), RODATA|NOPTR, $32

DATA mask63<>+0(SB)/8, $0x000000000000003f
DATA mask63<>+8(SB)/8, $0x000000000000003f
DATA mask63<>+16(SB)/8, $0x000000000000003f
DATA mask63<>+24(SB)/8, $0x000000000000003f
GLOBL mask63<>(SB), RODATA|NOPTR, $32

DATA mantmask<>+0(SB)/8, $0x000fffffffffffff
DATA mantmask<>+8(SB)/8, $0x000fffffffffffff
DATA mantmask<>+16(SB)/8, $0x000fffffffffffff
DATA mantmask<>+24(SB)/8, $0x000fffffffffffff
GLOBL mantmask<>(SB), RODATA|NOPTR, $32

DATA two52<>+0(SB)/8, $0x4330000000000000
DATA two52<>+8(SB)/8, $0x4330000000000000
DATA two52<>+16(SB)/8, $0x4330000000000000
DATA two52<>+24(SB)/8, $0x4330000000000000
GLOBL two52<>(SB), RODATA|NOPTR, $32

DATA c1022<>+0(SB)/8, $0x408ff00000000000
DATA c1022<>+8(SB)/8, $0x408ff00000000000
DATA c1022<>+16(SB)/8, $0x408ff00000000000
DATA c1022<>+24(SB)/8, $0x408ff00000000000
GLOBL c1022<>(SB), RODATA|NOPTR, $32

DATA hsqrt2<>+0(SB)/8, $0x3fe6a09e667f3bcd
DATA hsqrt2<>+8(SB)/8, $0x3fe6a09e667f3bcd
DATA hsqrt2<>+16(SB)/8, $0x3fe6a09e667f3bcd
DATA hsqrt2<>+24(SB)/8, $0x3fe6a09e667f3bcd
GLOBL hsqrt2<>(SB), RODATA|NOPTR, $32

DATA logLn2Hi<>+0(SB)/8, $0x3fe62e42fee00000
DATA logLn2Hi<>+8(SB)/8, $0x3fe62e42fee00000
DATA logLn2Hi<>+16(SB)/8, $0x3fe62e42fee00000
DATA logLn2Hi<>+24(SB)/8, $0x3fe62e42fee00000
GLOBL logLn2Hi<>(SB), RODATA|NOPTR, $32

DATA logLn2Lo<>+0(SB)/8, $0x3dea39ef35793c76
DATA logLn2Lo<>+8(SB)/8, $0x3dea39ef35793c76
DATA logLn2Lo<>+16(SB)/8, $0x3dea39ef35793c76
DATA logLn2Lo<>+24(SB)/8, $0x3dea39ef35793c76
GLOBL logLn2Lo<>(SB), RODATA|NOPTR, $32

DATA L1<>+0(SB)/8, $0x3fe5555555555593
DATA L1<>+8(SB)/8, $0x3fe5555555555593
DATA L1<>+16(SB)/8, $0x3fe5555555555593
DATA L1<>+24(SB)/8, $0x3fe5555555555593
GLOBL L1<>(SB), RODATA|NOPTR, $32

DATA L2<>+0(SB)/8, $0x3fd999999997fa04
DATA L2<>+8(SB)/8, $0x3fd999999997fa04
DATA L2<>+16(SB)/8, $0x3fd999999997fa04
DATA L2<>+24(SB)/8, $0x3fd999999997fa04
GLOBL L2<>(SB), RODATA|NOPTR, $32

DATA L3<>+0(SB)/8, $0x3fd2492494229359
DATA L3<>+8(SB)/8, $0x3fd2492494229359
DATA L3<>+16(SB)/8, $0x3fd2492494229359
DATA L3<>+24(SB)/8, $0x3fd2492494229359
GLOBL L3<>(SB), RODATA|NOPTR, $32

DATA L4<>+0(SB)/8, $0x3fcc71c51d8e78af
DATA L4<>+8(SB)/8, $0x3fcc71c51d8e78af
DATA L4<>+16(SB)/8, $0x3fcc71c51d8e78af
DATA L4<>+24(SB)/8, $0x3fcc71c51d8e78af
GLOBL L4<>(SB), RODATA|NOPTR, $32

DATA L5<>+0(SB)/8, $0x3fc7466496cb03de
DATA L5<>+8(SB)/8, $0x3fc7466496cb03de
DATA L5<>+16(SB)/8, $0x3fc7466496cb03de
DATA L5<>+24(SB)/8, $0x3fc7466496cb03de
GLOBL L5<>(SB), RODATA|NOPTR, $32

DATA L6<>+0(SB)/8, $0x3fc39a09d078c69f
DATA L6<>+8(SB)/8, $0x3fc39a09d078c69f
DATA L6<>+16(SB)/8, $0x3fc39a09d078c69f
DATA L6<>+24(SB)/8, $0x3fc39a09d078c69f
GLOBL L6<>(SB), RODATA|NOPTR, $32

DATA L7<>+0(SB)/8, $0x3fc2f112df3e5244
DATA L7<>+8(SB)/8, $0x3fc2f112df3e5244
DATA L7<>+16(SB)/8, $0x3fc2f112df3e5244
DATA L7<>+24(SB)/8, $0x3fc2f112df3e5244
GLOBL L7<>(SB), RODATA|NOPTR, $32

DATA forty<>+0(SB)/8, $0x4044000000000000
DATA forty<>+8(SB)/8, $0x4044000000000000
DATA forty<>+16(SB)/8, $0x4044000000000000
DATA forty<>+24(SB)/8, $0x4044000000000000
GLOBL forty<>(SB), RODATA|NOPTR, $32

// EXP sets Y1 = exp(Y1), as exp (exp.go) computes it, operation for
// operation: k and r by the shift, e^r − 1 by the polynomial, 2^(i/64) from
// expTable by a gather (R8 holds its address), then s + s·p. It clobbers
// Y2–Y8.
#define EXP \
	VMULPD     invln2n<>(SB), Y1, Y2; \
	VADDPD     shift<>(SB), Y2, Y2; \
	VSUBPD     shift<>(SB), Y2, Y3; \
	VMULPD     ln2hi<>(SB), Y3, Y4; \
	VSUBPD     Y4, Y1, Y4; \
	VMULPD     ln2lo<>(SB), Y3, Y3; \
	VSUBPD     Y3, Y4, Y4; \
	VMULPD     Y4, Y4, Y5; \
	VMULPD     c6<>(SB), Y4, Y6; \
	VADDPD     half<>(SB), Y6, Y6; \
	VMULPD     Y6, Y5, Y6; \
	VADDPD     Y6, Y4, Y6; \
	VMULPD     c120<>(SB), Y4, Y7; \
	VADDPD     c24<>(SB), Y7, Y7; \
	VMULPD     Y5, Y5, Y5; \
	VMULPD     Y7, Y5, Y5; \
	VADDPD     Y5, Y6, Y6; \
	VPAND      mask63<>(SB), Y2, Y3; \
	VPCMPEQQ   Y8, Y8, Y8; \
	VPGATHERQQ Y8, (R8)(Y3*8), Y4; \
	VPSLLQ     $46, Y2, Y2; \
	VPADDQ     Y2, Y4, Y4; \
	VMULPD     Y6, Y4, Y6; \
	VADDPD     Y6, Y4, Y1;

// func sigmoid4(dst, x *float64, n int) int
//
// Sigmoid of x[0:n], four at a time, n a multiple of 4; it stops before the
// first four with an argument outside (−709, 708), where exp(−x) would not
// take its main path, and returns how many it did.
TEXT ·sigmoid4(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	XORQ AX, AX
	LEAQ ·expTable(SB), R8
	TESTQ CX, CX
	JZ   sdone

sloop:
	VMOVUPD   (SI)(AX*8), Y0
	VCMPPD    $0x1e, sigLo<>(SB), Y0, Y9
	VCMPPD    $0x11, sigHi<>(SB), Y0, Y10
	VANDPD    Y10, Y9, Y9
	VMOVMSKPD Y9, BX
	CMPQ      BX, $15
	JNE       sdone
	VXORPD    sign<>(SB), Y0, Y1
	EXP
	VADDPD    one<>(SB), Y1, Y1
	VMOVUPD   one<>(SB), Y2
	VDIVPD    Y1, Y2, Y1
	VMOVUPD   Y1, (DI)(AX*8)
	ADDQ      $4, AX
	DECQ      CX
	JNZ       sloop

sdone:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// TANH_LARGE sets Y1 = tanh(Y0) by the branch above 0.625, 1 − 2/(e^2|x| + 1)
// with x's sign, from Y11 = |Y0|. It clobbers Y2–Y8.
#define TANH_LARGE \
	VADDPD Y11, Y11, Y1; \
	EXP; \
	VADDPD one<>(SB), Y1, Y1; \
	VMOVUPD two<>(SB), Y2; \
	VDIVPD Y1, Y2, Y1; \
	VMOVUPD one<>(SB), Y2; \
	VSUBPD Y1, Y2, Y1; \
	VANDPD sign<>(SB), Y0, Y2; \
	VORPD  Y2, Y1, Y1

// TANH_SMALL sets Y6 = tanh(Y0) by the rational branch below 0.625, ±0
// kept. It clobbers Y3–Y8.
#define TANH_SMALL \
	VMULPD    Y0, Y0, Y3; \
	VMULPD    p0<>(SB), Y3, Y4; \
	VADDPD    p1<>(SB), Y4, Y4; \
	VMULPD    Y3, Y4, Y4; \
	VADDPD    p2<>(SB), Y4, Y4; \
	VADDPD    q0<>(SB), Y3, Y5; \
	VMULPD    Y3, Y5, Y5; \
	VADDPD    q1<>(SB), Y5, Y5; \
	VMULPD    Y3, Y5, Y5; \
	VADDPD    q2<>(SB), Y5, Y5; \
	VMULPD    Y3, Y0, Y6; \
	VMULPD    Y4, Y6, Y6; \
	VDIVPD    Y5, Y6, Y6; \
	VADDPD    Y6, Y0, Y6; \
	VXORPD    Y7, Y7, Y7; \
	VCMPPD    $0x00, Y7, Y0, Y8; \
	VBLENDVPD Y8, Y0, Y6, Y6

// func tanh4(dst, x *float64, n int) int
//
// Tanh of x[0:n], four at a time, n a multiple of 4: the rational branch
// where all four are below 0.625 (±0 kept), the one by exp where none is,
// and both, blended, where the four straddle 0.625; it stops before the
// first four with an argument beyond ±44 or NaN, and returns how many it
// did. Neighbouring values of a GRU gate are mostly on one side, so most
// fours take one branch only.
TEXT ·tanh4(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	XORQ AX, AX
	LEAQ ·expTable(SB), R8
	TESTQ CX, CX
	JZ   tdone

tloop:
	VMOVUPD   (SI)(AX*8), Y0
	VANDPD    absmask<>(SB), Y0, Y11
	VCMPPD    $0x12, tanhBig<>(SB), Y11, Y9
	VMOVMSKPD Y9, BX
	CMPQ      BX, $15
	JNE       tdone
	VCMPPD    $0x11, tanhSmall<>(SB), Y11, Y9
	VMOVMSKPD Y9, BX
	TESTQ     BX, BX
	JZ        tlarge
	CMPQ      BX, $15
	JEQ       tsmall
	TANH_LARGE
	TANH_SMALL
	VCMPPD    $0x11, tanhSmall<>(SB), Y11, Y8
	VBLENDVPD Y8, Y6, Y1, Y1
	VMOVUPD   Y1, (DI)(AX*8)
	JMP       tnext

tlarge:
	TANH_LARGE
	VMOVUPD Y1, (DI)(AX*8)
	JMP     tnext

tsmall:
	TANH_SMALL
	VMOVUPD Y6, (DI)(AX*8)

tnext:
	ADDQ $4, AX
	DECQ CX
	JNZ  tloop

tdone:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET

// func softplus4(dst, x *float64, n int) int
//
// Softplus of x[0:n], four at a time, n a multiple of 4: e = exp(−|x|),
// log(1+e) as math.Log's assembly (log_amd64.s) computes it, operation for
// operation, Goldberg's correction, max(x, 0) added, x itself above 40; it
// stops before the first four with |x| ≥ 708 or NaN, and returns how many
// it did.
TEXT ·softplus4(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $2, CX
	XORQ AX, AX
	LEAQ ·expTable(SB), R8
	TESTQ CX, CX
	JZ   pdone

ploop:
	VMOVUPD   (SI)(AX*8), Y0
	VANDPD    absmask<>(SB), Y0, Y11
	VCMPPD    $0x11, sigHi<>(SB), Y11, Y9
	VMOVMSKPD Y9, BX
	CMPQ      BX, $15
	JNE       pdone
	VXORPD    sign<>(SB), Y11, Y1
	EXP
	VMOVAPD   Y1, Y12
	VADDPD    one<>(SB), Y12, Y13

	// log(u), u = 1+e in [1, 2]: f1, k = frexp(u); below √2/2, f1·2, k−1.
	VANDPD    mantmask<>(SB), Y13, Y2
	VORPD     half<>(SB), Y2, Y2
	VPSRLQ    $52, Y13, Y3
	VPOR      two52<>(SB), Y3, Y3
	VSUBPD    two52<>(SB), Y3, Y3
	VSUBPD    c1022<>(SB), Y3, Y3
	VMOVUPD   hsqrt2<>(SB), Y4
	VCMPPD    $0x05, Y2, Y4, Y4
	VANDPD    one<>(SB), Y4, Y4
	VSUBPD    Y4, Y3, Y3
	VADDPD    one<>(SB), Y4, Y4
	VMULPD    Y4, Y2, Y2
	VSUBPD    one<>(SB), Y2, Y2
	VADDPD    two<>(SB), Y2, Y4
	VDIVPD    Y4, Y2, Y4
	VMULPD    Y4, Y4, Y5
	VMULPD    Y5, Y5, Y6
	VMULPD    L7<>(SB), Y6, Y7
	VADDPD    L5<>(SB), Y7, Y7
	VMULPD    Y6, Y7, Y7
	VADDPD    L3<>(SB), Y7, Y7
	VMULPD    Y6, Y7, Y7
	VADDPD    L1<>(SB), Y7, Y7
	VMULPD    Y7, Y5, Y5
	VMULPD    L6<>(SB), Y6, Y7
	VADDPD    L4<>(SB), Y7, Y7
	VMULPD    Y6, Y7, Y7
	VADDPD    L2<>(SB), Y7, Y7
	VMULPD    Y7, Y6, Y6
	VADDPD    Y6, Y5, Y5
	VMULPD    half<>(SB), Y2, Y6
	VMULPD    Y2, Y6, Y6
	VADDPD    Y6, Y5, Y5
	VMULPD    Y5, Y4, Y5
	VMULPD    logLn2Lo<>(SB), Y3, Y7
	VADDPD    Y7, Y5, Y5
	VSUBPD    Y5, Y6, Y6
	VSUBPD    Y2, Y6, Y6
	VMULPD    logLn2Hi<>(SB), Y3, Y3
	VSUBPD    Y6, Y3, Y3

	// l = log(u)·e/(u−1), e where u is 1; max(x, 0) + l; x above 40.
	VMULPD    Y12, Y3, Y3
	VSUBPD    one<>(SB), Y13, Y4
	VDIVPD    Y4, Y3, Y3
	VCMPPD    $0x00, one<>(SB), Y13, Y5
	VBLENDVPD Y5, Y12, Y3, Y3
	VXORPD    Y6, Y6, Y6
	VMAXPD    Y6, Y0, Y7
	VADDPD    Y3, Y7, Y7
	VCMPPD    $0x1e, forty<>(SB), Y0, Y5
	VBLENDVPD Y5, Y0, Y7, Y7
	VMOVUPD   Y7, (DI)(AX*8)
	ADDQ      $4, AX
	DECQ      CX
	JNZ       ploop

pdone:
	MOVQ AX, ret+24(FP)
	VZEROUPPER
	RET
