//===- OctetOps.h - octet dialect ops ---------------------------*- C++ -*-===//
#ifndef OCTET_COMPILER_IR_OCTETOPS_H
#define OCTET_COMPILER_IR_OCTETOPS_H

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
/// Numpy broadcast of two shapes (`?` stays `?` unless the other side fixes
/// it); fails when two static dims differ and neither is 1.
mlir::LogicalResult broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                    llvm::SmallVectorImpl<int64_t> &result);
/// Normalizes a possibly negative ONNX axis against `rank`; nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);
} // namespace octet

#endif
