//===- Passes.h - octet passes ----------------------------------*- C++ -*-===//
#ifndef OCTET_COMPILER_PASSES_PASSES_H
#define OCTET_COMPILER_PASSES_PASSES_H

#include "compiler/ir/OctetOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace octet {
#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"

/// The standard FP32 pipeline on a module (the passes above, in order).
void buildFp32Pipeline(mlir::OpPassManager &pm);
/// Registers the pipelines with the pass registry (for octet-opt).
void registerOctetPipelines();

/// Registers the octet dialect and the upstream dialects octet IR uses.
void registerOctetDialects(mlir::DialectRegistry &registry);
} // namespace octet

#endif
