//===- LayerNormAvx2.h - the LayerNorm step's row on AVX2 --------*- C++ -*-===//
//
// What hosts without AVX-512 run for a LayerNorm row (runtime/KernelSteps.cpp's
// compiled path) where they have AVX2 + FMA: the scalar path's formulas on 8
// lanes. The row's sum x (+ residual); its mean and variance accumulated in
// double, 4 lanes at a time (the scalar path adds in order: the two differ
// only in the double's last bits, which the f32 rstd and mean round away but
// for a tie); y = (x - mean) rstd gamma + beta in f32, multiply and add as
// written (no FMA: -ffp-contract=off), as the scalar path.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_LAYERNORMAVX2_H
#define OCTET_COMPILER_CODEGEN_X86_LAYERNORMAVX2_H

#include <cstdint>

namespace octet::x86 {

/// One row of n floats: row = x (+ residual, when not null); y = its
/// normalization times gamma plus beta; with qGamma (and qBeta) also own =
/// the normalization times qGamma plus qBeta. `row`, `y` and `own` hold n
/// floats each (`row` may be the caller's sum output; `y` may be `row`).
/// Needs avx2::hostSupported().
void layerNormRowAvx2(const float *x, const float *residual, int64_t n, float epsilon,
                      const float *gamma, const float *beta, const float *qGamma,
                      const float *qBeta, float *row, float *y, float *own);

} // namespace octet::x86

#endif
