//===- MatMulU8S8.h - INT8 GEMM provider on oneDNN 2.6 matmul -----*- C++ -*-===//
//
// The other INT8 GEMM provider next to the JIT x86::Int8GemmDriver
// (docs/int8-gemm.md), with the same formula and shape contract, behind the
// same interface (Int8GemmOneDnn below, compiler/codegen/Int8Gemm.h):
//
//   C[M, N] = out( gelu( x_scale * w_scale[n] * sum_k (A[m, k] - a_zp) * B[k, n]
//                        + bias[n] + residual[m, n] ) )
//
// A u8 [M, K] (row stride lda bytes), B s8 constant ([K, N] or [N, K]), w_scale
// per tensor or per output channel, a_zp a constant 0..255; out is f32 or
// u8 / s8 = saturate(RNE(v / out_scale) + out_zp). N and K are fixed at
// creation, M and the strides per call: one primitive with M as
// DNNL_RUNTIME_DIM_VAL serves every M (oneDNN 2.6 then picks its "gemm:jit"
// int8 GEMM; with a fixed M it would pick brgemm).
//
// How the formula maps onto oneDNN 2.6 (its int8 matmul computes
// dst = post_ops(output_scale[n] * (acc + bias[n])) + dst_zp):
//  - a_zp: a constant src zero point; w_scale: output scales, mask 0 or
//    1 << 1 (per N), x_scale * w_scale[n] rounded to f32 once, as the JIT driver.
//  - bias: oneDNN adds bias BEFORE the output scale (2.x semantics), so the
//    bias argument holds bias[n] / (x_scale * w_scale[n]) (f32). A per-channel
//    binary_add post-op would add it after, but 2.6 runs that only in the
//    reference implementation (ref_int8).
//  - residual (f32 output only): a sum post-op, as MatMulF32 (a distinct
//    residual is first copied into C). With a u8/s8 output the sum post-op
//    would read C's int8 bytes, not an f32 residual: rejected at creation.
//  - GELU (erf or tanh form): an eltwise post-op after the sum.
//  - u8/s8 output: without GELU, 1 / out_scale is folded into the output
//    scales; with GELU it is the eltwise post-op's scale. out_zp is the dst
//    zero point; oneDNN rounds to nearest even and saturates.
//  - Per-row (dynamic, per-token) x_scale: NOT expressible. 2.6's matmul
//    takes output scales only per tensor or per N (masks covering M are
//    rejected, and M is a run-time dim), so a per-row scale would need an
//    s32 output and a second pass over C: such a qlinear stays on the JIT
//    driver (preferOneDnnU8S8 below says so).
//  - Hosts without VNNI: oneDNN's u8 x s8 kernels there use vpmaddubsw, whose
//    s16 pair sums saturate (255 * 127 * 2 > 32767): silently wrong results.
//    create() then accepts only weights in [-64, 63], where no pair can
//    saturate, and otherwise fails saying so.
// Accuracy against the exact formula: f32 output within
// 2^-21 * (|scaled sum| + |bias| + |residual|) (five f32 roundings: s32 -> f32,
// the bias quotient, + bias, * scale, + residual), GELU adds oneDNN's own
// approximation error; u8/s8 exact except within that error of a rounding tie.
// Threads and errors: as MatMulF32 (run() is const and thread-safe; nothing
// throws; failures are a Status with oneDNN's message).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_ONEDNN_MATMULU8S8_H
#define OCTET_COMPILER_CODEGEN_ONEDNN_MATMULU8S8_H

#include "compiler/codegen/Int8Gemm.h"
#include "compiler/codegen/onednn/MatMulF32.h"

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace octet::onednn {

/// What the INT8 GEMM writes (mirrors x86::QuantOutput; this library does not
/// depend on the JIT kernels).
enum class U8S8Output { F32, U8, S8 };
/// The elementwise epilogue oneDNN can fuse: GELU as an eltwise post-op.
enum class U8S8Gelu { None, Erf, Tanh };

const char *u8s8OutputName(U8S8Output output);

struct MatMulU8S8Params {
  int32_t aZeroPoint = 0;      ///< 0..255
  float xScale = 1.0f;         ///< A's scale (per tensor)
  std::vector<float> wScale;   ///< [N] per output channel, or 1 entry (per tensor)
  const float *bias = nullptr; ///< [N] f32, or null (copied)
  bool residual = false;       ///< run() gets a residual [M, N] f32 to add (f32 output only)
  U8S8Gelu gelu = U8S8Gelu::None;
  U8S8Output output = U8S8Output::F32;
  float outScale = 1.0f;    ///< u8/s8 output
  int32_t outZeroPoint = 0; ///< u8/s8 output
};

class MatMulU8S8 {
public:
  /// Largest K whose s32 sums cannot overflow: K * 255 * 128 < 2^31 (as the JIT driver).
  static constexpr int64_t kMaxK = (int64_t(1) << 31) / (255 * 128) - 1;

  /// `weights`: B in `layout` (K*N int8, densely packed), copied (reordered
  /// into the layout oneDNN asks for); so is the bias. On failure `out` is
  /// left empty and the Status says what was wrong.
  static Status create(int64_t n, int64_t k, const int8_t *weights, WeightLayout layout,
                       const MatMulU8S8Params &params, std::unique_ptr<MatMulU8S8> &out);

  ~MatMulU8S8();
  MatMulU8S8(const MatMulU8S8 &) = delete;
  MatMulU8S8 &operator=(const MatMulU8S8 &) = delete;

  /// lda in bytes (>= K), ldc in elements of the output type (>= N), ldr in
  /// floats (>= N). `residual` is required when created with one and ignored
  /// otherwise; it may be `c` itself with ldr == ldc. C's columns past N are
  /// never written. M == 0 does nothing.
  Status run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
             const float *residual = nullptr, int64_t ldr = 0) const noexcept;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  U8S8Output output() const { return output_; }
  bool hasResidual() const { return residual_; }
  /// oneDNN's implementation name (e.g. "gemm:jit"), for logs and autotune records.
  std::string implementation() const;
  /// The weight layout oneDNN chose ("ab" / "ba" / blocked).
  std::string weightsFormat() const;

private:
  struct Impl;
  MatMulU8S8(int64_t n, int64_t k, U8S8Output output, bool residual);

  int64_t n_, k_;
  U8S8Output output_;
  bool residual_;
  std::unique_ptr<Impl> impl_;
};

/// A MatMulU8S8 as the qlinear step's Int8Gemm. The activation scale is the
/// constant per-tensor one given at creation and oneDNN fuses no per-column
/// program inputs, so run()'s xScale and columns are not read; a failed run
/// throws std::runtime_error with oneDNN's message (Int8Gemm's contract).
class Int8GemmOneDnn final : public Int8Gemm {
public:
  explicit Int8GemmOneDnn(std::unique_ptr<MatMulU8S8> matmul) : matmul_(std::move(matmul)) {}
  void run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0, const float * /*xScale*/ = nullptr,
           const float *const * /*columns*/ = nullptr) const override {
    if (Status s = matmul_->run(a, m, lda, c, ldc, residual, ldr); !s.ok())
      throw std::runtime_error(s.message());
  }
  const char *name() const override { return "onednn"; }
  const MatMulU8S8 &matmul() const { return *matmul_; }

private:
  std::unique_ptr<MatMulU8S8> matmul_;
};

/// Whether oneDNN 2.6 on this host can run the INT8 GEMM at full speed and
/// exactly: its effective ISA has VNNI (avx512_core_vnni and up, or avx2_vnni).
bool oneDnnHasInt8Vnni();

/// The INT8 provider rule (docs/kernel-selection.md, "INT8 GEMM"): true when a
/// qlinear should run on MatMulU8S8 rather than x86::Int8GemmDriver. M is unknown at
/// plan time, and the measured answer does not depend on K or N:
///  - `jitAvailable` (x86::Int8GemmDriver::hostSupported() and AVX-512 allowed): the
///    JIT GEMM, always. Measured on Zen 4 (one thread, BERT-base shapes), it is
///    1.4-2.3x faster than oneDNN 2.6's gemm:jit at M = 128 and within +-10 %
///    at M = 1024; and it fuses any epilogue program and a residual with no
///    extra pass over C.
///  - otherwise oneDNN (AVX2-VNNI hosts, or no VNNI: then MatMulU8S8::create
///    accepts only 7-bit weights and says so), unless
///  - `perRowInputScale`: dynamic per-token x_scale, which oneDNN 2.6 cannot
///    express: false (the JIT driver or nothing).
/// An epilogue program beyond bias / residual / GELU does not change the
/// choice: on oneDNN it runs as a post-pass, as for FP32.
bool preferOneDnnU8S8(bool jitAvailable, bool perRowInputScale = false);

} // namespace octet::onednn

#endif
