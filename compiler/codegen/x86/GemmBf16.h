//===- GemmBf16.h - threaded GEMM: f32 activations x bf16 weights -*- C++ -*-===//
//
// C[M, N] = A[M, K] * B[K, N] (+ bias, + residual, then an elementwise
// epilogue), A and C row-major f32, B a constant weight stored as bf16 (half
// the bytes of f32), sums in f32: `--precision bf16` for FP32 models
// (docs/kernel-selection.md, "bf16 linears").
//
//  - B is packed once (packBf16, at compile time) into ceil(N/NR) panels of
//    K pairs: element (k, n) at ((p * ceil(K/2) + k/2) * NR + n % NR) * 2 + k % 2,
//    p = n / NR; an odd K's last pair and the columns past N are zero.
//  - A is converted to bf16 rows (round to nearest even, vcvtne2ps2bf16, the
//    attention's AttentionBf16PackKernel in Rows mode) at the start of each
//    run, by all threads, into a scratch of M rows of K rounded up to 32
//    (zero padded); then the tiles run on GemmBf16Avx512 (vdpbf16ps).
//  - Blocking and threading are GemmF32's (same NR and MR rule; Kc and Mc
//    from GemmBlocking with 2-byte elements, so a K block is twice as long),
//    the epilogue is GemmF32's (GemmF32Epilogue, the same fused code).
//
// Running needs AVX512-BF16 (Zen 4/5, Cooper Lake, Sapphire Rapids and
// later); generating does not. run() throws std::runtime_error on a host
// without it rather than execute vdpbf16ps.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMBF16_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMBF16_H

#include "compiler/codegen/x86/AttentionBf16Kernels.h"
#include "compiler/codegen/x86/GemmBf16Avx512.h"
#include "compiler/codegen/x86/GemmF32.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace octet::x86 {

using PackedBf16Weights = std::vector<uint16_t, WeightAllocator<uint16_t>>;

/// bf16 elements of a [K, N] weight packed for GemmBf16.
int64_t packedBf16Elements(int64_t k, int64_t n);
/// Where packBf16 puts element (k, col) of a [K, N] weight.
int64_t packedBf16Index(int64_t k, int64_t col, int64_t kSize, int64_t n);
/// Packs B ([K, N] or [N, K] f32) into GemmBf16's panels, each element
/// rounded to bf16 to nearest even (toBf16); padding is zero.
PackedBf16Weights packBf16(const float *b, int64_t k, int64_t n, WeightLayout layout);

class GemmBf16 {
public:
  /// `packedB` (from packBf16, packedBf16Elements(k, n) elements) and `bias`
  /// ([N] or null) are referenced, not copied: they must outlive this object.
  /// `maxKBlock` > 0 bounds the K elements per kernel call below the blocking
  /// rule's (gemm_blocking::kPanelSliceL1s): tests run K blocks on small shapes.
  GemmBf16(int64_t n, int64_t k, const uint16_t *packedB, GemmF32Epilogue epilogue = {},
           const float *bias = nullptr, int64_t maxKBlock = 0);

  /// Whether this host can run it (AVX512-BF16 with AVX-512 F/BW/DQ/VL).
  static bool hostSupported();

  /// As GemmF32::run: strides in floats, `residual` read only when the
  /// epilogue asked for it, `columns` one [N] pointer per per-column input of
  /// the elementwise program. Threads: OpenMP's current team size.
  void run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0,
           const float *const *columns = nullptr) const;

  int mr() const { return mr_; }
  int nr() const { return nr_; }
  int64_t kc() const { return kc_; }
  /// The code each of `threads` threads runs first for M rows: the kernel
  /// converting its share of A to bf16, then its first row tiles
  /// (firstTileKernels).
  void firstReads(int64_t m, int64_t threads, std::vector<ThreadReads> &perThread) const;
  /// The code of kernel (rows, tail panel) and of A's conversion, for tests.
  std::pair<const void *, size_t> kernelCode(int rows, bool tailPanel) const {
    return kernels_[panelKernelIndex(mr_, rows, tailPanel)]->generatedCode();
  }
  std::pair<const void *, size_t> convertCode() const { return convert_->generatedCode(); }

private:
  GemmF32KernelFn kernel(int rows, bool tailPanel) const {
    return kernelFns_[panelKernelIndex(mr_, rows, tailPanel)];
  }

  int64_t n_, k_;
  const uint16_t *packedB_;
  const float *bias_;
  GemmF32Epilogue epilogue_;
  int nr_, mr_;
  int64_t kc_, panels_, kPairs_, aStride_; // aStride_: bf16 A row stride (K rounded up to 32)
  std::vector<std::unique_ptr<GemmBf16Avx512>> kernels_;
  std::vector<GemmF32KernelFn> kernelFns_; // [into L1][rows - 1][tail panel]
  std::unique_ptr<AttentionBf16PackKernel> convert_;
  AttentionBf16PackKernel::Fn convertFn_ = nullptr;
};

} // namespace octet::x86

#endif
