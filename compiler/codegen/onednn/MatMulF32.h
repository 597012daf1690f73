//===- MatMulF32.h - FP32 GEMM provider on oneDNN 2.6 matmul ------*- C++ -*-===//
//
// The other FP32 GEMM provider next to x86::GemmF32 (see DESIGN.md, codegen):
//
//   C[M, N] = A[M, K] * B + bias[N] + residual[M, N]      (row-major f32)
//
// with the same shape contract: N and K fixed at creation, B a constant weight
// given once ([K, N] or [N, K]), M, lda, ldc and ldr known only per call. One
// oneDNN matmul primitive serves every M: src/dst have M and their leading
// dimension as DNNL_RUNTIME_DIM_VAL, so no primitive is created per batch or
// sequence length.
//
//  - Weights: the primitive is created with format_tag::any for B (B has no
//    run-time dims, so `any` is allowed); B is reordered once, at creation,
//    into the layout oneDNN reports, and that copy is owned by this object.
//  - Bias: the matmul bias argument ([1, N]).
//  - Residual: a sum post-op (C = A*B + bias + C, GEMM beta = 1). A residual
//    that IS C (same pointer and stride: the in-place skip connection) costs
//    nothing extra; a distinct one is first copied into C by run() (one pass
//    over M x N). The one-pass alternative, a binary_add post-op reading the
//    residual, is not available: oneDNN 2.6's dnnl_post_ops_append_binary
//    rejects a src1 with run-time dims (invalid_arguments), and M is run-time.
//    A residual that overlaps C any other way is rejected.
//  - Threads: run() is const and safe to call concurrently on one object:
//    the oneDNN primitive is immutable after creation, each call uses its own
//    stream and its own scratchpad (scratchpad_mode::user), and the reordered
//    weights are only read. Intra-op threading is oneDNN's OpenMP (libgomp),
//    with the calling thread's omp_get_max_threads().
//  - Errors: no exception leaves this interface; dnnl::error and allocation
//    failures become a Status carrying a message.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_ONEDNN_MATMULF32_H
#define OCTET_COMPILER_CODEGEN_ONEDNN_MATMULF32_H

#include "compiler/codegen/Status.h"
#include "compiler/codegen/WeightLayout.h"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace octet::onednn {

using octet::WeightLayout;

/// Success, or a message saying what failed (and oneDNN's status, if any): the
/// runtime's Status, which the steps calling this provider pass on.
using Status = octet::rt::Status;

class MatMulF32 {
public:
  /// Creates the provider for C = A * B (+ bias) (+ residual).
  /// `weights` is B in `layout` (K*N floats, densely packed) and `bias` is [N]
  /// or null; both are copied (B reordered), so neither needs to outlive the
  /// call. `residual`: run() will get a residual [M, N] to add.
  /// On failure `out` is left empty and the Status says why.
  static Status create(int64_t n, int64_t k, const float *weights, WeightLayout layout,
                       const float *bias, bool residual, std::unique_ptr<MatMulF32> &out);

  ~MatMulF32();
  MatMulF32(const MatMulF32 &) = delete;
  MatMulF32 &operator=(const MatMulF32 &) = delete;

  /// Strides are in floats (row-major, unit column stride). `residual`
  /// (stride ldr) is required when created with residual, and ignored
  /// otherwise; it may be `c` itself with ldr == ldc. Elements of C past
  /// column N (the ldc padding) are never written. M == 0 does nothing.
  Status run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
             const float *residual = nullptr, int64_t ldr = 0) const noexcept;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  bool hasBias() const { return hasBias_; }
  bool hasResidual() const { return residual_; }
  /// oneDNN's implementation name for the main primitive (e.g. "gemm:jit"),
  /// for logs and for the selection step's autotune records.
  std::string implementation() const;
  /// The weight layout oneDNN chose, as "ab" / "ba" / a blocked description.
  std::string weightsFormat() const;

private:
  struct Impl;
  MatMulF32(int64_t n, int64_t k, bool hasBias, bool residual);

  int64_t n_, k_;
  bool hasBias_, residual_;
  std::unique_ptr<Impl> impl_;
};

} // namespace octet::onednn

#endif
