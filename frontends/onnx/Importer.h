//===- Importer.h - ONNX model to octet dialect -----------------*- C++ -*-===//
#ifndef OCTET_FRONTENDS_ONNX_IMPORTER_H
#define OCTET_FRONTENDS_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace octet {

/// What a model may read and claim (docs/security.md).
struct ImportLimits {
  /// The folder external data must lie in (after resolving symlinks). Empty:
  /// the model file's own folder; for a model given as bytes, external data
  /// is then refused.
  std::string externalDataDir;
  /// The most bytes the model's constants (initializers, Constant nodes) may
  /// claim together, checked before any is read; 0: this host's physical memory.
  uint64_t memoryBudget = 0;
};

/// This host's physical memory in bytes (the default memory budget).
uint64_t physicalMemoryBytes();

/// Imports an ONNX model file (binary protobuf, or ONNX text format when the
/// path ends in `.onnxtxt`) as a module holding `func.func @main`. The file
/// must be a regular file; external weights are read from regular files inside
/// the model's folder (or limits.externalDataDir) only. On failure the reasons
/// are emitted as MLIR diagnostics and null is returned.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &ctx, llvm::StringRef path,
                                                 const ImportLimits &limits = {});

/// Imports a serialized (binary) ONNX model held in memory; external weights
/// are read from limits.externalDataDir, and refused when it is empty.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBytes(mlir::MLIRContext &ctx, llvm::StringRef bytes,
                                                  const ImportLimits &limits = {});

/// The ONNX op types (default domain) the importer converts, sorted.
llvm::ArrayRef<llvm::StringRef> supportedOnnxOps();

} // namespace octet

#endif
