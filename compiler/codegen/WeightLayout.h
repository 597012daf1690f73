//===- WeightLayout.h - how a GEMM's constant weight is stored --*- C++ -*-===//
#ifndef OCTET_COMPILER_CODEGEN_WEIGHTLAYOUT_H
#define OCTET_COMPILER_CODEGEN_WEIGHTLAYOUT_H

namespace octet {
/// The layout of a GEMM's constant weight, shared by every GEMM provider.
enum class WeightLayout {
  KN, ///< B[K][N], as in x @ W (ONNX MatMul)
  NK, ///< B[N][K], torch nn.Linear's weight (x @ W^T, ONNX Gemm transB)
};
} // namespace octet

#endif
