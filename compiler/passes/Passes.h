//===- Passes.h - octet passes ----------------------------------*- C++ -*-===//
#ifndef OCTET_COMPILER_PASSES_PASSES_H
#define OCTET_COMPILER_PASSES_PASSES_H

#include "compiler/codegen/CpuFeatures.h"
#include "compiler/passes/FusionReport.h"
#include "compiler/ir/OctetOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

#include <optional>
#include <string>

namespace octet {
/// How octet-quantize quantizes activations (docs/int8-quantization.md):
/// Static per tensor from octet.calib, Dynamic per row at run time.
enum class QuantMode { Static, Dynamic };

#define GEN_PASS_DECL
#include "compiler/passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/passes/Passes.h.inc"

/// What the FP32 and INT8 pipelines share, on a module: cleanup, recognize,
/// cleanup, fuse-gemm-epilogue. Calibration instruments the IR it leaves.
void buildRecognitionPipeline(mlir::OpPassManager &pm);
/// The standard FP32 pipeline on a module: recognition, then
/// fuse-elementwise, pack-tokens (unless `packTokens` is false), lower-runtime-linear and
/// plan-memory.
void buildFp32Pipeline(mlir::OpPassManager &pm, bool packTokens = true);

/// The layout the runtime's qlinear kernel takes on `cpu` (the compile
/// target): Amx with AMX-INT8, Avx512Vnni with AVX-512 VNNI, else none
/// (the reference loop and oneDNN read unpacked weights as well).
std::optional<PackIsa> packIsaFor(const x86::CpuFeatures &cpu);
/// packIsaFor(this host).
std::optional<PackIsa> defaultPackIsa();

/// How the INT8 pipeline quantizes (docs/int8-quantization.md).
struct Int8PipelineOptions {
  using Mode = QuantMode;
  Mode mode = Mode::Static;
  bool smoothquant = true; ///< static mode only
  double alpha = 0.7;      ///< SmoothQuant's migration strength (docs/decisions.md)
  /// octet-pack-weights's isa; none: no packing (the reference loop and oneDNN
  /// read unpacked weights). The default is this host's (defaultPackIsa()).
  std::optional<PackIsa> packIsa = defaultPackIsa();
  bool packTokens = true; ///< octet-pack-tokens before plan-memory (docs/padding-free.md)
};
/// The INT8 lowering that follows recognition (and, for static mode,
/// calibration: the linears carry octet.calib): [smoothquant], quantize,
/// eliminate-qdq, cleanup, fuse-elementwise, [pack-weights], [pack-tokens],
/// lower-runtime-linear, plan-memory.
void buildInt8LoweringPipeline(mlir::OpPassManager &pm, const Int8PipelineOptions &options);
/// Registers the pipelines with the pass registry (for octet-opt).
void registerOctetPipelines();

/// octet-recognize's patterns (octet-explain-fusion asks them why not).
void populateRecognizePatterns(mlir::RewritePatternSet &patterns);
/// "node 'a', 'b'": the ONNX node names in the ops' locations, for reports.
std::string nodeNames(llvm::ArrayRef<mlir::Operation *> ops);
/// The fusion report of `func` after octet-recognize (octet-explain-fusion).
FusionReport explainFusion(mlir::func::FuncOp func);

/// Registers the octet dialect and the upstream dialects octet IR uses.
void registerOctetDialects(mlir::DialectRegistry &registry);
} // namespace octet

#endif
