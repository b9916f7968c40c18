// Package portable computes the few functions of math, math/rand/v2 and
// gonum whose last bits depend on the machine, so that they give the same
// bits on every machine: those that an amd64 machine with FMA gets from
// the standard library's and gonum's assembly.
//
// Three things make them differ. On amd64 math.Exp, math.Log and
// math.Hypot are assembly, and elsewhere they are Go (arm64 has its own
// assembly for math.Exp); math.Exp's amd64 assembly itself takes another
// path on machines without FMA; and the Go compiler fuses a product into
// the addition that takes it wherever the code lets it (arm64 always,
// amd64 at GOAMD64=v3), while the assembly rounds every product. The
// functions here write the amd64 computation out in Go, every product
// rounded on its own (an explicit float64 conversion stops the compiler
// from fusing it) or fused with math.FMA where the assembly fuses it.
//
// On amd64 they call the standard library or gonum wherever that gives
// the same bits (the tests check it, value by value), so that nothing
// there changes; elsewhere they run their Go. Log runs its Go everywhere,
// the same bits as math.Log's assembly and faster than its call. The models' training and
// scoring use them where a value would otherwise depend on the machine:
// the training noise (NormFloat64), the graph convolutions' sparse
// product and scaled matrix products (Axpy), the Gram products of SDGNN's
// Phase Θ (Dot), the LARS solver's Givens rotations (Hypot), NOSMOG's positional
// encodings (Exp, Pow), the Diebold–Mariano variance (Cos) and the
// p-values of the Diebold–Mariano and paired t-tests (StudentsTSurvival,
// through RegIncBeta and Lgamma).
// TestGoldenBits holds them to hashes of the bits amd64 computes, and CI
// runs it on arm64 under qemu.
package portable
