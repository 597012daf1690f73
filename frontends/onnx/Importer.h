//===- Importer.h - ONNX model to octet dialect -----------------*- C++ -*-===//
#ifndef OCTET_FRONTENDS_ONNX_IMPORTER_H
#define OCTET_FRONTENDS_ONNX_IMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace octet {

/// Imports an ONNX model file (binary protobuf, or ONNX text format when the
/// path ends in `.onnxtxt`) as a module holding `func.func @main`. External
/// weights are read relative to the file's directory. On failure the reasons
/// are emitted as MLIR diagnostics and null is returned.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxFile(mlir::MLIRContext &ctx, llvm::StringRef path);

/// Imports a serialized (binary) ONNX model held in memory; external weights
/// are read relative to `baseDirForExternalData`.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxBytes(mlir::MLIRContext &ctx, llvm::StringRef bytes,
                                                  llvm::StringRef baseDirForExternalData);

/// The ONNX op types (default domain) the importer converts, sorted.
llvm::ArrayRef<llvm::StringRef> supportedOnnxOps();

} // namespace octet

#endif
