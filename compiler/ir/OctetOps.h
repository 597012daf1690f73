//===- OctetOps.h - octet dialect ops ---------------------------*- C++ -*-===//
#ifndef OCTET_COMPILER_IR_OCTETOPS_H
#define OCTET_COMPILER_IR_OCTETOPS_H

#include "compiler/codegen/PackedWeights.h"
#include "compiler/ir/OctetDialect.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define GET_OP_CLASSES
#include "compiler/ir/OctetOps.h.inc"

namespace octet {
/// One dimension of a tensor value, or (dim == -1) an `index` value itself.
struct ValueDim {
  mlir::Value value;
  int64_t dim;
  bool operator==(const ValueDim &other) const {
    return value == other.value && dim == other.dim;
  }
  bool operator!=(const ValueDim &other) const { return !(*this == other); }
};

/// The earliest value whose dim provably has the run-time size of `value`'s dim
/// `dim` (through reshape/expand size operands, `octet.dim`, transposes,
/// shape-preserving ops, matmul/linear rows and broadcasts). Two dims with the
/// same source have the same size in every run. Static dims are not traced.
ValueDim traceDimSource(mlir::Value value, int64_t dim);

/// Numpy broadcast of two shapes (`?` stays `?` unless the other side fixes
/// it); fails when two static dims differ and neither is 1.
mlir::LogicalResult broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                    llvm::SmallVectorImpl<int64_t> &result);
/// Normalizes a possibly negative ONNX axis against `rank`; nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
} // namespace octet

#endif
