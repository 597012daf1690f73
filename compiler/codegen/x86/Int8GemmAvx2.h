//===- Int8GemmAvx2.h - exact u8 x s8 GEMM on AVX2 (no VNNI) -----*- C++ -*-===//
//
// The INT8 GEMM of CPUs with AVX2 but neither AVX-512 VNNI nor AMX (AMD Zen 3
// and earlier, Intel Haswell to Skylake client). Their u8 x s8 instruction,
// vpmaddubsw, adds two products into a *saturating* s16 - 2 x 255 x 127 does
// not fit - which is why ONNX Runtime's and oneDNN's AVX2 kernels go wrong on
// full-range weights (docs/kernel-selection.md). This GEMM multiplies s16 by
// s16 instead (vpmaddwd: two products into an s32, exact): A is widened once
// per run to s16 with its zero point subtracted (a - zp in [-255, 255]), B
// once at build to s16. On Zen 3 vpmaddwd issues on the same two pipes as
// vpmaddubsw, and vpmaddubsw needs a vpmaddwd to widen its s16 sums: the exact
// form costs no multiply throughput.
//
// Packed B: ceil(N / 16) panels of [ceil(K / 2)][16 columns][2] s16, element
// (k, n) at ((p * K2 + k / 2) * 16 + n % 16) * 2 + k % 2, p = n / 16: one
// ymm holds one K pair of 8 columns, vpmaddwd's operand order. Columns past N
// and the K past K are zero. Packed A: rows of ceil(K / 2) s16 pairs.
//
// Micro-kernel (Int8GemmKernelAvx2): up to 6 rows x 16 columns, 12 s32
// accumulators in ymm0-11; per K pair two B loads and a prefetcht1 of the
// next panel, then per row one vpbroadcastd of its A pair, two vpmaddwd and
// two vpaddd. The prefetch: a panel's first call reads it from memory (the
// weights, 2 bytes each, are far beyond L3; by the ceilings' DRAM bandwidth
// a K = 3072 panel takes longer to arrive than a 6-row call computes); the C
// calls on a panel each fetch 1/C of the next one, so that only the first
// panel waits. The epilogue is
// the reference loop's formula, operation for operation (bit-identical):
// y = f32(xs * ws[n]) * f32(sum) [+ bias[n]] [+ residual], an f32 result.
// What else the qlinear's epilogue holds runs after it (the step's split:
// runtime/QuantSteps.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_INT8GEMMAVX2_H
#define OCTET_COMPILER_CODEGEN_X86_INT8GEMMAVX2_H

#include "compiler/codegen/Int8Gemm.h"
#include "compiler/codegen/WeightLayout.h"
#include "compiler/codegen/x86/GemmF32.h" // WeightAllocator
#include "compiler/codegen/x86/KernelGenerator.h"

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

namespace octet::x86 {

/// Arguments of one micro-kernel call (System V: rdi), read by offset: the
/// layout is part of the code (an AOT image's bytes).
struct Int8GemmAvx2Args {
  const int16_t *a;      ///< first row's packed A (s16 pairs), at K = 0
  const int16_t *b;      ///< the panel, at K = 0
  float *c;              ///< the tile's top-left element
  const float *xScale;   ///< the first row's activation scale
  const float *wScale;   ///< the panel's 16 weight scales (zero past N)
  const float *bias;     ///< the panel's 16 biases (zero past N); null without
  const float *residual; ///< the tile's top-left residual element; null without
  int64_t lda;           ///< bytes between packed A rows
  int64_t ldc, ldr;      ///< bytes between C rows, residual rows
  int64_t xScaleStride;  ///< bytes between the rows' scales (0: one for all)
  int64_t pairs;         ///< K pairs, >= 1
  /// prefetcht1 [prefetch + k * prefetchStride] at each K pair k: the run
  /// spreads the next panel over the calls on this one (bytes; see run()).
  const char *prefetch;
  int64_t prefetchStride;
};

struct Int8GemmKernelAvx2Config {
  int rows = 6;      ///< 1..6
  int columns = 16;  ///< 1..16; fewer: masked loads and stores past them
  bool bias = false; ///< adds Int8GemmAvx2Args::bias
  bool residual = false;
};

class Int8GemmKernelAvx2 : public KernelGenerator {
public:
  static constexpr int kMaxRows = 6, kColumns = 16;
  /// Throws std::invalid_argument for a config out of range.
  explicit Int8GemmKernelAvx2(const Int8GemmKernelAvx2Config &config);
  void run(const Int8GemmAvx2Args &args) const { fn_(&args); }

protected:
  void generate() override;

private:
  using Fn = void (*)(const Int8GemmAvx2Args *);
  Int8GemmKernelAvx2Config config_;
  Fn fn_ = nullptr;
};

struct Int8GemmAvx2Params {
  int32_t aZeroPoint = 0;
  bool xScalePerRow = false; ///< run(): xScale holds M scales; else `xScale` below
  float xScale = 1.0f;
  std::vector<float> wScale;   ///< [N] per output channel, or 1 entry (per tensor)
  const float *bias = nullptr; ///< [N] or null (copied)
  bool residual = false;
};

/// C (f32) = the micro-kernel's epilogue over A (u8, M x K) and B (s8), split
/// over the threads by panels of 16 columns, in row blocks that keep the
/// thread's packed A in L2.
class Int8GemmAvx2 final : public Int8Gemm {
public:
  /// `weight`: K x N (KN) or N x K (NK) s8. Generates its kernels for any
  /// target; run() throws std::runtime_error where the host lacks AVX2.
  Int8GemmAvx2(const int8_t *weight, WeightLayout layout, int64_t k, int64_t n,
               const Int8GemmAvx2Params &params);
  void run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0, const float *xScale = nullptr,
           const float *const *columns = nullptr) const override;
  const char *name() const override { return "jit_avx2"; }

  static bool hostSupported();
  /// B as the micro-kernel reads it: streamed whole every run, so 64-byte
  /// aligned (no 32-byte load straddles a line) and on huge pages from 2 MiB.
  using PackedB = std::vector<int16_t, WeightAllocator<int16_t>>;
  static PackedB packB(const int8_t *weight, WeightLayout layout, int64_t k, int64_t n);

private:
  const Int8GemmKernelAvx2 &kernel(int rows, bool tailPanel) const {
    return *kernels_[tailPanel][rows - 1];
  }
  int64_t k_, n_, pairs_, panels_;
  Int8GemmAvx2Params params_;
  PackedB b_;
  std::vector<float> wScale_, bias_; ///< padded to whole panels
  /// [full panel, last panel when N % 16 != 0][rows - 1]
  std::array<std::array<std::unique_ptr<Int8GemmKernelAvx2>, 6>, 2> kernels_;
};

} // namespace octet::x86

#endif
