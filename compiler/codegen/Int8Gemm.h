//===- Int8Gemm.h - the INT8 GEMM every provider implements -------*- C++ -*-===//
//
// What the qlinear step (runtime/QuantSteps.cpp) calls, whichever provider
// runs it: the JIT driver over the VNNI or AMX micro-kernels
// (x86/Int8GemmDriver.h) or oneDNN's int8 matmul (onednn/MatMulU8S8.h,
// Int8GemmOneDnn). docs/int8-gemm.md has the formula:
//
//   C[M, N] = out( program( x_scale[m] * w_scale[n] * (sum_k A[m, k] * B[k, n]
//                                                  - a_zero_point * colsum_B[n])
//                           + bias[n] + residual[m, n] ) )
//
// Everything but A, M and the strides (the weight, scales, zero points, bias,
// epilogue, output type) is fixed when a provider is built. Plain C++: the
// kernels below it and the runtime above it share this header.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_INT8GEMM_H
#define OCTET_COMPILER_CODEGEN_INT8GEMM_H

#include <cstdint>

namespace octet {

class Int8Gemm {
public:
  virtual ~Int8Gemm() = default;

  /// A: u8 [M, K], lda in bytes (>= K); C: ldc in elements of the output type
  /// (>= N); residual: [M, N] f32 with ldr >= N when built with one. `xScale`:
  /// M per-row activation scales when built for them (a provider that fixed
  /// the scale at construction ignores it). `columns`: one [N] f32 pointer per
  /// per-column input of a fused program. Throws std::invalid_argument on bad
  /// arguments and std::runtime_error when this host cannot run the provider
  /// (a plan built for another CPU) or the provider fails; never faults.
  virtual void run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                   const float *residual = nullptr, int64_t ldr = 0, const float *xScale = nullptr,
                   const float *const *columns = nullptr) const = 0;

  /// The provider in step kinds and logs: "jit_vnni", "jit_amx", "onednn".
  virtual const char *name() const = 0;
};

} // namespace octet

#endif
