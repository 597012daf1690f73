//===- GemmBf16Avx512.h - AVX512-BF16 GEMM micro-kernel ---------*- C++ -*-===//
//
// One MR x NR tile of C = A * B (+ epilogue) with bf16 operands and f32 sums
// (vdpbf16ps): A rows are bf16 (converted from f32 by the driver, GemmBf16.h),
// B is packed as K pairs ([K/2][NR][2] bf16 per panel), so one K step is one
// pair: the NR/16 zmm of a packed B pair row are loaded, each A row's pair is
// broadcast as a dword and vdpbf16ps adds both products to the f32
// accumulators. Everything else - the tile walk, accumulating earlier K
// blocks, the fused epilogue (bias, residual, ProgramEpilogue) and the masked
// store - is GemmF32Avx512's: this class replaces only its K step.
//
// The byte strides line up with the f32 kernel's: a pair is 4 bytes like a
// float, so GemmF32Args is used as is with `a` at bf16 rows, `b` at the packed
// pairs, `lda` counted in pairs (dwords) and `k` in pairs.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMBF16AVX512_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMBF16AVX512_H

#include "compiler/codegen/x86/GemmF32Avx512.h"

namespace octet::x86 {

class GemmBf16Avx512 : public GemmF32Avx512 {
public:
  /// `config` as GemmF32Avx512's (same MR bound: the registers are the same).
  explicit GemmBf16Avx512(const GemmF32Avx512Config &config);

private:
  void kStep(int step) override;
};

} // namespace octet::x86

#endif
