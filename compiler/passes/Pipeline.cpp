//===- Pipeline.cpp - the standard pass pipelines -------------------------===//
#include "compiler/passes/Passes.h"
#include "compiler/codegen/CpuFeatures.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace {
void addRecognition(OpPassManager &fn) {
  fn.addPass(octet::createOctetCleanup());
  fn.addPass(octet::createOctetRecognize());
  fn.addPass(octet::createOctetCleanup());
  fn.addPass(octet::createOctetFuseGemmEpilogue());
}

/// octet-int8-lowering's textual options (octet-opt, octet-interp --pipeline).
struct Int8LoweringOptions : PassPipelineOptions<Int8LoweringOptions> {
  using Mode = octet::Int8PipelineOptions::Mode;
  Option<Mode> mode{*this, "mode", llvm::cl::desc("How activations are quantized"),
                    llvm::cl::init(Mode::Static),
                    llvm::cl::values(clEnumValN(Mode::Static, "static",
                                                "per tensor, from octet.calib"),
                                     clEnumValN(Mode::Dynamic, "dynamic",
                                                "per row, at run time"))};
  Option<bool> smoothquant{*this, "smoothquant",
                           llvm::cl::desc("Run octet-smoothquant first (static mode only)"),
                           llvm::cl::init(true)};
  Option<double> alpha{*this, "alpha",
                       llvm::cl::desc("SmoothQuant's migration strength (Int8PipelineOptions' default)"),
                       llvm::cl::init(octet::Int8PipelineOptions().alpha)};
  enum class PackChoice { Host, None, Avx512Vnni, Amx };
  Option<PackChoice> packIsa{
      *this, "pack-isa", llvm::cl::desc("octet-pack-weights's isa"),
      llvm::cl::init(PackChoice::Host),
      llvm::cl::values(
          clEnumValN(PackChoice::Host, "host", "the runtime's qlinear kernel on this host"),
          clEnumValN(PackChoice::None, "none", "no packing"),
          clEnumValN(PackChoice::Avx512Vnni, "avx512_vnni", "AVX-512 VNNI (vpdpbusd)"),
          clEnumValN(PackChoice::Amx, "amx", "AMX-INT8 (tdpbusd)"))};
  Option<bool> packTokens{*this, "pack-tokens",
                          llvm::cl::desc("Run octet-pack-tokens (padding-free batches)"),
                          llvm::cl::init(true)};
};

/// octet-fp32-pipeline's textual options.
struct Fp32PipelineOptions : PassPipelineOptions<Fp32PipelineOptions> {
  Option<bool> packTokens{*this, "pack-tokens",
                          llvm::cl::desc("Run octet-pack-tokens (padding-free batches)"),
                          llvm::cl::init(true)};
};
} // namespace

void octet::buildRecognitionPipeline(OpPassManager &pm) {
  addRecognition(pm.nest<func::FuncOp>());
}

void octet::buildFp32Pipeline(OpPassManager &pm, bool packTokens) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  addRecognition(fn);
  fn.addPass(createOctetFuseElementwise());
  if (packTokens)
    fn.addPass(createOctetPackTokens());
  fn.addPass(createOctetLowerRuntimeLinear());
  fn.addPass(createOctetLowerGelu());
  fn.addPass(createOctetPlanMemory());
}

void octet::buildInt8LoweringPipeline(OpPassManager &pm, const Int8PipelineOptions &options) {
  OpPassManager &fn = pm.nest<func::FuncOp>();
  bool isStatic = options.mode == Int8PipelineOptions::Mode::Static;
  if (isStatic && options.smoothquant)
    fn.addPass(createOctetSmoothQuant(OctetSmoothQuantOptions{options.alpha}));
  fn.addPass(createOctetQuantize(OctetQuantizeOptions{options.mode}));
  fn.addPass(createOctetEliminateQdq());
  fn.addPass(createOctetCleanup());
  fn.addPass(createOctetFuseElementwise());
  fn.addPass(createOctetMergeLayerNorms());
  if (options.packIsa)
    fn.addPass(createOctetPackWeights(OctetPackWeightsOptions{*options.packIsa}));
  if (options.packTokens)
    fn.addPass(createOctetPackTokens());
  fn.addPass(createOctetLowerRuntimeLinear());
  fn.addPass(createOctetLowerGelu());
  fn.addPass(createOctetPlanMemory());
}

std::optional<octet::PackIsa> octet::packIsaFor(const x86::CpuFeatures &cpu) {
  if (cpu.supports(x86::Isa::AmxInt8))
    return PackIsa::Amx;
  if (cpu.supports(x86::Isa::Avx512Vnni))
    return PackIsa::Avx512Vnni;
  return std::nullopt;
}

std::optional<octet::PackIsa> octet::defaultPackIsa() {
  return packIsaFor(x86::CpuFeatures::host());
}

void octet::registerOctetPipelines() {
  PassPipelineRegistration<Fp32PipelineOptions>(
      "octet-fp32-pipeline",
      "The FP32 pipeline: cleanup, recognize, cleanup, fuse-gemm-epilogue, fuse-elementwise, "
      "[pack-tokens], lower-runtime-linear, plan-memory",
      [](OpPassManager &pm, const Fp32PipelineOptions &textual) {
        buildFp32Pipeline(pm, textual.packTokens);
      });
  PassPipelineRegistration<Int8LoweringOptions>(
      "octet-int8-lowering",
      "The INT8 lowering after recognition (and calibration for mode=static): [smoothquant], "
      "quantize, eliminate-qdq, cleanup, fuse-elementwise, merge-layer-norms, [pack-weights], "
      "[pack-tokens], lower-runtime-linear, plan-memory",
      [](OpPassManager &pm, const Int8LoweringOptions &textual) {
        Int8PipelineOptions options;
        options.mode = textual.mode;
        options.smoothquant = textual.smoothquant;
        options.alpha = textual.alpha;
        using PackChoice = Int8LoweringOptions::PackChoice;
        switch (textual.packIsa) {
        case PackChoice::Host:
          break; // Int8PipelineOptions' default
        case PackChoice::None:
          options.packIsa = std::nullopt;
          break;
        case PackChoice::Avx512Vnni:
          options.packIsa = PackIsa::Avx512Vnni;
          break;
        case PackChoice::Amx:
          options.packIsa = PackIsa::Amx;
          break;
        }
        options.packTokens = textual.packTokens;
        buildInt8LoweringPipeline(pm, options);
      });
}
