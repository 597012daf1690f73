//===- Interpreter.h - reference interpreter for octet IR -------*- C++ -*-===//
//
// The test oracle: evaluates a `func.func` of octet (and index `arith`) ops on
// host tensors with plain loops in double precision, rounding each op's result
// to its element type. It checks the importer and every pass for meaning; it
// is not a kernel path.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_INTERP_INTERPRETER_H
#define OCTET_COMPILER_INTERP_INTERPRETER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

namespace octet {

/// A tensor on the host. Float element types keep their values in `floats`
/// (already rounded to the element type), integer and `i1` ones in `ints`
/// (already wrapped to the element type's width and signedness).
struct HostTensor {
  mlir::Type elementType;
  llvm::SmallVector<int64_t> shape;
  std::vector<double> floats;
  std::vector<int64_t> ints;

  /// A zero-filled tensor.
  static HostTensor zeros(mlir::Type elementType, llvm::ArrayRef<int64_t> shape);
  bool isFloat() const { return llvm::isa<mlir::FloatType>(elementType); }
  int64_t numElements() const;
  /// Element `i` as a double, whatever the storage.
  double asDouble(int64_t i) const { return isFloat() ? floats[i] : double(ints[i]); }
};

/// Decodes little-endian C-order bytes of `elementType` (i1 one byte each).
mlir::FailureOr<HostTensor> decodeTensor(mlir::Type elementType, llvm::ArrayRef<int64_t> shape,
                                         llvm::ArrayRef<char> bytes);
/// Encodes a tensor as little-endian C-order bytes (i1 one byte each).
std::string encodeTensor(const HostTensor &tensor);
/// Bytes per element in the encoding above; 0 for unsupported element types.
unsigned storageBytes(mlir::Type elementType);

/// Runs `func` on `inputs` (one per argument, matching its element type and
/// static dims). Errors, with the failing op's location, are MLIR diagnostics.
mlir::FailureOr<llvm::SmallVector<HostTensor>> evaluate(mlir::func::FuncOp func,
                                                        llvm::ArrayRef<HostTensor> inputs);

} // namespace octet

#endif
