//===- ScalarOps.h - octet elementwise ops as scalar arith/math -*- C++ -*-===//
//
// Shared by the passes that move elementwise ops into a scalar region
// (`octet.fused_linear`'s epilogue, `octet.fused`): one definition of what
// each op computes on one element.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_PASSES_SCALAROPS_H
#define OCTET_COMPILER_PASSES_SCALAROPS_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Operation.h"

#include <optional>

namespace octet {

/// Emits the scalar f32 ops of the elementwise octet op `op` on one element;
/// `operands` are the elements of `op`'s operands, in `op`'s operand order.
/// Each tensor op becomes the scalar ops of its definition with the same
/// constants (octet.gelu as 0.5·x·(1 + erf(x·√½)) or its tanh form, sigmoid
/// as 1 / (1 + e^-x)), so only the rounding of composite ops moves to each
/// step. Returns null for an op it does not know.
mlir::Value emitScalarElementwise(mlir::OpBuilder &b, mlir::Location loc, mlir::Operation *op,
                                  mlir::ValueRange operands);

/// Whether `op` is an f32 pointwise op that emitScalarElementwise lowers:
/// add/sub/mul/div/pow/max/min, neg/abs/exp/log/erf/tanh/sqrt/rsqrt/
/// reciprocal/relu/sigmoid and gelu, with f32 operands and result.
bool isF32Pointwise(mlir::Operation *op);

/// The value of a one-element float constant (`tensor<f32>`, `tensor<1xf32>`, …).
std::optional<double> getScalarConstant(mlir::Value v);

} // namespace octet

#endif
