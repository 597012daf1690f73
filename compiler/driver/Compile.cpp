//===- Compile.cpp - ONNX to a runnable Plan ------------------------------===//
//
// import → FP32 pipeline → PlanBuilder, in one MLIRContext that dies on
// return (the Plan has taken the weights it keeps). Blobs a pass replaced are
// freed after it, so the compile holds about one version of the weights.
// Diagnostics are collected as "file:node: message" lines into the returned
// Status.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"

#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/driver/Calibrate.h"
#include "compiler/driver/PlanBuilder.h"
#include "compiler/ir/AttrNames.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/ResourceBlobs.h"
#include "frontends/onnx/Importer.h"
#include "runtime/Ceilings.h"
#include "runtime/KernelSelection.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <optional>

using namespace mlir;
namespace rt = octet::rt;

namespace {

/// The IR text irAfterPass gets: large constants elided.
std::string irText(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  flags.elideLargeElementsAttrs(16).elideLargeResourceString(64).useLocalScope();
  op->print(os, flags);
  return text;
}

/// Calls CompileOptions::irAfterPass with the IR after every pass.
class IrAfterPass : public PassInstrumentation {
public:
  explicit IrAfterPass(const octet::CompileOptions &options) : options_(options) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    // The adaptor that runs the nested function passes has no argument: its
    // dump would repeat the last pass's under an empty name.
    if (pass->getArgument().empty())
      return;
    options_.irAfterPass(pass->getArgument().str(), irText(op));
  }

private:
  const octet::CompileOptions &options_;
};

/// Fills CompileOptions::fusionReport right after octet-recognize.
class FusionReportAfterRecognize : public PassInstrumentation {
public:
  explicit FusionReportAfterRecognize(octet::FusionReport &report) : report_(report) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    if (pass->getArgument() == "octet-recognize")
      if (auto func = dyn_cast<func::FuncOp>(op))
        report_ = octet::explainFusion(func);
    if (pass->getArgument() == "octet-pack-tokens")
      if (auto kept = op->getAttrOfType<StringAttr>(octet::attr::kPaddingKept))
        report_.paddingKept = kept.str();
  }

private:
  octet::FusionReport &report_;
};

/// Frees the blobs a pass replaced (octet::releaseUnusedBlobs) after it.
class ReleaseUnusedBlobs : public PassInstrumentation {
public:
  void runAfterPass(Pass *, Operation *op) override {
    auto module = dyn_cast<ModuleOp>(op);
    if (!module) {
      // A function pass: other functions' passes may run on other threads
      // meanwhile; the module-level adaptor's turn comes after them.
      module = op->getParentOfType<ModuleOp>();
      if (!module || !llvm::hasSingleElement(module.getOps<func::FuncOp>()))
        return;
    }
    octet::releaseUnusedBlobs(module);
  }
};

/// The FP32 pipeline's function passes as text ("octet-cleanup,..."), for messages.
std::string fp32PassNames(MLIRContext &ctx) {
  PassManager pm(&ctx, ModuleOp::getOperationName());
  octet::buildFp32Pipeline(pm);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os); // builtin.module(func.func(a,b,...))
  llvm::StringRef inner(text);
  size_t open = inner.find("func.func(");
  if (open == llvm::StringRef::npos)
    return text;
  inner = inner.drop_front(open + strlen("func.func(")).rtrim(")");
  return inner.str();
}

/// The runtime's lowerings: what the Plan builder takes from any pipeline. They
/// end the standard pipelines, and follow a pipeline given as text (each does
/// nothing where its op is absent), so any prefix of the passes still runs.
void addRuntimeLowerings(OpPassManager &fn) {
  fn.addPass(octet::createOctetLowerRuntimeLinear());
  fn.addPass(octet::createOctetLowerGelu());
}

/// The passes of CompileOptions::passes: the FP32 pipeline, no optimization
/// ("none"), or a comma-separated list of octet function passes; the last two
/// followed by the runtime's lowerings.
rt::Status buildPipeline(PassManager &pm, const std::string &passes, bool packTokens) {
  llvm::StringRef text = llvm::StringRef(passes).trim();
  if (text.empty()) {
    octet::buildFp32Pipeline(pm, packTokens);
    return rt::Status();
  }
  if (text == "none") {
    addRuntimeLowerings(pm.nest<func::FuncOp>());
    return rt::Status();
  }
  auto invalid = [&](llvm::StringRef why) {
    return rt::Status::error("pass pipeline '" + passes + "': " + why.str() +
                             " (give function passes separated by commas, e.g. the FP32 "
                             "pipeline '" +
                             fp32PassNames(*pm.getContext()) +
                             "', or 'none' for no optimization pass)");
  };
  // Passes nest in @main here; a nested pipeline such as func.func(...) would
  // silently match nothing.
  if (text.contains('('))
    return invalid("nested pipelines are not taken");
  // The pass registry is global; registering twice is harmless but not
  // thread-safe, so once per process.
  static std::once_flag registered;
  std::call_once(registered, [] { octet::registerOctetPasses(); });
  std::string error;
  llvm::raw_string_ostream errorStream(error);
  OpPassManager &fn = pm.nest<func::FuncOp>();
  if (failed(parsePassPipeline(text, fn, errorStream))) {
    // MLIR's message is "<parser>:1:N: error: WHY\n<text>\n<caret>": keep WHY.
    llvm::StringRef why = llvm::StringRef(error).split('\n').first;
    size_t at = why.find("error: ");
    if (at != llvm::StringRef::npos)
      why = why.drop_front(at + strlen("error: "));
    return invalid(why.empty() ? "cannot parse it" : why);
  }
  addRuntimeLowerings(fn);
  return rt::Status();
}

/// Builds a pass manager with `build`, runs it on `module` (with irAfterPass).
template <typename Build>
rt::Status runPasses(MLIRContext &ctx, ModuleOp module, const octet::CompileOptions &options,
                     Build build, const std::string &what, const std::string &diagnostics) {
  PassManager pm(&ctx, ModuleOp::getOperationName());
  if (rt::Status built = build(pm); !built.ok())
    return built;
  pm.addInstrumentation(std::make_unique<ReleaseUnusedBlobs>());
  if (options.fusionReport)
    pm.addInstrumentation(std::make_unique<FusionReportAfterRecognize>(*options.fusionReport));
  if (options.irAfterPass) {
    ctx.disableMultithreading();
    pm.addInstrumentation(std::make_unique<IrAfterPass>(options));
  }
  if (failed(pm.run(module)))
    return rt::Status::error(diagnostics.empty() ? what + " failed" : diagnostics);
  return rt::Status();
}

rt::Status recognition(PassManager &pm) {
  octet::buildRecognitionPipeline(pm);
  return rt::Status();
}

/// Import → recognition → calibration, shared by the static INT8 compile and
/// calibrateOnnxFile.
rt::Status recognizeAndCalibrate(MLIRContext &ctx, ModuleOp module,
                                 const octet::CompileOptions &options, std::string &diagnostics,
                                 octet::CalibrationSummary *summary) {
  if (rt::Status status =
          runPasses(ctx, module, options, recognition, "the recognition pipeline", diagnostics);
      !status.ok())
    return status;
  rt::Status calibrated = octet::calibrateModule(module, options, summary);
  if (!calibrated.ok())
    return rt::Status::error(calibrated.message() +
                             (diagnostics.empty() ? "" : "\n" + diagnostics));
  if (options.irAfterPass)
    options.irAfterPass("calibrate", irText(module));
  return rt::Status();
}

/// Compiles `module` into `plan`; with `image`, also serializes the Plan and
/// the code of every kernel its steps generated (AOT), while the module's
/// constants are still alive.
rt::Status compileModule(MLIRContext &ctx, OwningOpRef<ModuleOp> module,
                         const octet::CompileOptions &options, std::string &diagnostics,
                         std::unique_ptr<rt::Plan> &plan, rt::PlanImage *image = nullptr) {
  auto failure = [&](const char *fallback) {
    return rt::Status::error(diagnostics.empty() ? std::string(fallback) : diagnostics);
  };
  if (!module)
    return failure("cannot import the ONNX model");
  if (options.irAfterPass)
    options.irAfterPass("import", irText(*module));
  using Int8 = octet::CompileOptions::Int8;
  auto givenPasses = [&](PassManager &pm) {
    return buildPipeline(pm, options.passes, options.packTokens);
  };
  if (options.int8 == Int8::None) {
    if (rt::Status status =
            runPasses(ctx, *module, options, givenPasses, "the FP32 pipeline", diagnostics);
        !status.ok())
      return status;
  } else {
    if (options.int8 == Int8::Static) {
      // The instrumented FP32 plan is not the compiled model: no autotune, no records.
      octet::CompileOptions calibration = options;
      calibration.kernels.autotune = false;
      calibration.kernels.choices = nullptr;
      if (rt::Status status = recognizeAndCalibrate(ctx, *module, calibration, diagnostics,
                                                    options.calibrationSummary);
          !status.ok())
        return status;
    } else if (rt::Status status = runPasses(ctx, *module, options, recognition,
                                             "the recognition pipeline", diagnostics);
               !status.ok()) {
      return status;
    }
    auto lowering = [&](PassManager &pm) {
      if (!llvm::StringRef(options.passes).trim().empty())
        return buildPipeline(pm, options.passes, options.packTokens);
      octet::Int8PipelineOptions int8;
      int8.mode = options.int8 == Int8::Static ? octet::Int8PipelineOptions::Mode::Static
                                               : octet::Int8PipelineOptions::Mode::Dynamic;
      int8.smoothquant = options.smoothquant;
      int8.alpha = options.smoothquantAlpha;
      int8.packIsa = octet::packIsaFor(options.kernels.cpu); // the target's INT8 kernel
      int8.packTokens = options.packTokens;
      octet::buildInt8LoweringPipeline(pm, int8);
      return rt::Status();
    };
    if (rt::Status status =
            runPasses(ctx, *module, options, lowering, "the INT8 pipeline", diagnostics);
        !status.ok())
      return status;
  }
  auto main = module->lookupSymbol<func::FuncOp>("main");
  if (!main)
    return rt::Status::error("the imported module has no @main function");
  // A slow path the user chose is still said: bf16 on a CPU whose vdpbf16ps
  // is slower than its FMA (measurable only when compiling for this CPU; its
  // loops are generated before the capture, so they stay out of an image).
  if (options.fusionReport && options.kernels.linearBf16 &&
      options.kernels.cpu == octet::x86::CpuFeatures::host())
    options.fusionReport->slowPrecision = rt::bf16SlowerThanFp32();
  std::optional<octet::x86::KernelCodeCapture> capture;
  if (image)
    capture.emplace();
  // The module is done with after this: the Plan takes its weights. An AOT
  // image is written from the Plan, so weights steps packed stay until then.
  FailureOr<std::unique_ptr<rt::Plan>> built =
      octet::buildPlan(main, options.kernels,
                       image ? octet::PlanConstants::TakeForImage : octet::PlanConstants::Take);
  if (failed(built))
    return failure("cannot build the execution plan");
  plan = std::move(*built);
  if (options.kernels.choices)
    rt::nameGemmChoices(*options.kernels.choices, *plan);
  if (image)
    return rt::writePlanImage(*plan, options.kernels, *capture, *image);
  return rt::Status();
}

/// Runs `body` in a fresh context whose diagnostics land in `diagnostics`.
template <typename Body> rt::Status withContext(std::string &diagnostics, Body body) {
  DialectRegistry registry;
  octet::registerOctetDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false); // the message names the op; the IR dump is noise here
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() != DiagnosticSeverity::Error &&
        diag.getSeverity() != DiagnosticSeverity::Warning)
      return success();
    std::string where = octet::formatLocation(diag.getLocation());
    if (!diagnostics.empty())
      diagnostics += "\n";
    if (diag.getSeverity() == DiagnosticSeverity::Warning)
      diagnostics += "warning: ";
    diagnostics += (where.empty() ? "" : where + ": ") + diag.str();
    for (const Diagnostic &note : diag.getNotes()) {
      std::string noteWhere = octet::formatLocation(note.getLocation());
      diagnostics += "\n  note: " + (noteWhere.empty() ? "" : noteWhere + ": ") + note.str();
    }
    return success();
  });
  return body(ctx);
}

} // namespace

rt::Status octet::validateCompileOptions(const CompileOptions &options) {
  double p = options.calibrationPercentile;
  if (!(p == 0 || (p > 50 && p <= 100)))
    return rt::Status::error("calibration percentile " + std::to_string(p) +
                             ": give a value in (50, 100], e.g. 99.99, or 0 for min/max");
  double a = options.smoothquantAlpha;
  if (!(a >= 0 && a <= 1))
    return rt::Status::error("SmoothQuant alpha " + std::to_string(a) +
                             ": give a value in [0, 1] (0.5 is the default)");
  if (options.kernels.linearBf16) {
    if (options.int8 != CompileOptions::Int8::None)
      return rt::Status::error("precision bf16 is for FP32 models and cannot be combined with "
                               "INT8 (whose GEMMs take s8 weights): give one of them");
    const rt::KernelOptions &k = options.kernels;
    if (!k.allowAvx512 || !k.cpu.supports(x86::Isa::Avx512Bf16))
      return rt::Status::error(
          "precision bf16 needs AVX512-BF16 (vdpbf16ps) on the target CPU, but target '" +
          k.target + "' " +
          (k.allowAvx512 ? "has only: " + k.cpu.describe() : std::string("is limited to AVX2")) +
          "; compile for a CPU with it (--target) or use the default f32");
  }
  return rt::Status();
}

/// What the importer may read and claim, from the compile options.
static octet::ImportLimits importLimits(const octet::CompileOptions &options) {
  octet::ImportLimits limits;
  limits.externalDataDir = options.externalDataDir;
  limits.memoryBudget = options.memoryBudget;
  return limits;
}

rt::Status octet::compileOnnxFile(const std::string &path, const CompileOptions &options,
                                  std::unique_ptr<rt::Plan> &plan) {
  if (rt::Status valid = validateCompileOptions(options); !valid.ok())
    return valid;
  std::string diagnostics;
  return withContext(diagnostics, [&](MLIRContext &ctx) {
    return compileModule(ctx, importOnnxFile(ctx, path, importLimits(options)), options,
                         diagnostics, plan);
  });
}

rt::Status octet::compileOnnxFileToImage(const std::string &path, const CompileOptions &options,
                                         rt::PlanImage &image, std::unique_ptr<rt::Plan> *planOut) {
  if (rt::Status valid = validateCompileOptions(options); !valid.ok())
    return valid;
  std::string diagnostics;
  std::unique_ptr<rt::Plan> plan;
  rt::Status status = withContext(diagnostics, [&](MLIRContext &ctx) {
    return compileModule(ctx, importOnnxFile(ctx, path, importLimits(options)), options,
                         diagnostics, plan, &image);
  });
  // Still runnable: steps read the module's weights only while built (its
  // Plan::constants entries into the module are stale now; the image has them).
  if (planOut)
    *planOut = std::move(plan);
  return status;
}

rt::Status octet::compileOnnxBytes(const void *bytes, size_t size, const CompileOptions &options,
                                   std::unique_ptr<rt::Plan> &plan) {
  if (!bytes && size)
    return rt::Status::error("compileOnnxBytes: null model bytes");
  if (rt::Status valid = validateCompileOptions(options); !valid.ok())
    return valid;
  std::string diagnostics;
  return withContext(diagnostics, [&](MLIRContext &ctx) {
    llvm::StringRef data(static_cast<const char *>(bytes), size);
    return compileModule(ctx, importOnnxBytes(ctx, data, importLimits(options)), options,
                         diagnostics, plan);
  });
}

rt::Status octet::calibrateOnnxFile(const std::string &path, const CompileOptions &options,
                                    const std::string &outputPath, CalibrationSummary *summary) {
  if (rt::Status valid = validateCompileOptions(options); !valid.ok())
    return valid;
  std::string diagnostics;
  return withContext(diagnostics, [&](MLIRContext &ctx) -> rt::Status {
    OwningOpRef<ModuleOp> module = importOnnxFile(ctx, path, importLimits(options));
    if (!module)
      return rt::Status::error(diagnostics.empty() ? "cannot import the ONNX model" : diagnostics);
    if (options.irAfterPass)
      options.irAfterPass("import", irText(*module));
    if (rt::Status status = recognizeAndCalibrate(ctx, *module, options, diagnostics, summary);
        !status.ok())
      return status;
    std::string error;
    std::unique_ptr<llvm::ToolOutputFile> output = openOutputFile(outputPath, &error);
    if (!output)
      return rt::Status::error("cannot write '" + outputPath + "': " + error);
    if (llvm::StringRef(outputPath).ends_with(".mlirbc")) {
      if (failed(writeBytecodeToFile(*module, output->os())))
        return rt::Status::error("cannot write MLIR bytecode to '" + outputPath + "'");
    } else {
      module->print(output->os());
      output->os() << "\n";
    }
    output->os().flush();
    if (output->os().has_error())
      return rt::Status::error("cannot write '" + outputPath +
                               "': " + output->os().error().message());
    output->keep();
    return rt::Status();
  });
}
