//===- AttentionAvx2.h - the f32 attention's kernels on AVX2 -----*- C++ -*-===//
//
// What hosts without AVX-512 run for the f32 attention (runtime/AttentionStep.cpp)
// where they have AVX2 + FMA: the GEMM tile and the softmax of
// AttentionKernels.h, same arguments, as compiled AVX2 intrinsics (8 lanes).
// Their scalar twins (attentionGemmReference, attentionSoftmaxReference) stay
// the references the tests hold every form to, and the path of hosts without
// AVX2.
//
//  - attentionGemmAvx2: C = A · B in strips of 16 columns (two ymm) by up to
//    6 rows: 12 accumulators, two B vectors and an A broadcast in the 16 ymm
//    registers, the column tail through masked loads and stores (nothing past
//    `columns` is read or written). FMA, as the zmm tile.
//  - attentionSoftmaxAvx2: the zmm kernel's three passes (z = scale x + mask
//    and the max; e = exp(z - max) and its sum; e / sum), the exp of
//    VectorMathAvx2.h (VectorMath's, bit for bit). Unweighted rows only: the
//    weighted form feeds the int8 attention, which needs AVX-512 VNNI.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_ATTENTIONAVX2_H
#define OCTET_COMPILER_CODEGEN_X86_ATTENTIONAVX2_H

#include "compiler/codegen/x86/AttentionKernels.h"

namespace octet::x86 {

/// AttentionGemmKernel's work (any mr >= 0, columns <= 64). Needs avx2::hostSupported().
void attentionGemmAvx2(const AttentionGemmArgs &args, int mr);
/// AttentionSoftmaxKernel's work without weights (args.weights must be null:
/// throws std::invalid_argument). Needs avx2::hostSupported().
void attentionSoftmaxAvx2(const AttentionSoftmaxArgs &args);

} // namespace octet::x86

#endif
