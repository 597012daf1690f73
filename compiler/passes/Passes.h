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

/// What the FP32 and INT8 pipelines share, on a module: cleanup, recognize,
/// cleanup, fuse-gemm-epilogue. Calibration instruments the IR it leaves.
void buildRecognitionPipeline(mlir::OpPassManager &pm);
/// The standard FP32 pipeline on a module: recognition, then
/// fuse-elementwise and plan-memory.
void buildFp32Pipeline(mlir::OpPassManager &pm);

/// How the INT8 pipeline quantizes (docs/int8-quantization.md).
struct Int8PipelineOptions {
  enum class Mode { Static, Dynamic };
  Mode mode = Mode::Static;
  bool smoothquant = true; ///< static mode only
  double alpha = 0.5;      ///< SmoothQuant's migration strength
};
/// The INT8 lowering that follows recognition (and, for static mode,
/// calibration: the linears carry octet.calib): [smoothquant], quantize,
/// eliminate-qdq, cleanup, fuse-elementwise, plan-memory.
void buildInt8LoweringPipeline(mlir::OpPassManager &pm, const Int8PipelineOptions &options);
/// Registers the pipelines with the pass registry (for octet-opt).
void registerOctetPipelines();

/// Registers the octet dialect and the upstream dialects octet IR uses.
void registerOctetDialects(mlir::DialectRegistry &registry);
} // namespace octet

#endif
