//===- Compile.h - ONNX to a runnable Plan, MLIR-free interface -*- C++ -*-===//
//
// The JIT compiler's entry point for the C API and octetc: import the ONNX
// model, run the FP32 pipeline (docs/fp32-execution-plan.md) or the INT8 flow
// (recognition → calibration (static) → INT8 lowering; docs/calibration.md),
// and build the Plan with its kernels (PlanBuilder). This header includes
// nothing from MLIR, so the C API's translation unit stays MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_COMPILE_H
#define OCTET_COMPILER_DRIVER_COMPILE_H

#include "compiler/passes/FusionReport.h"
#include "runtime/Plan.h"
#include "runtime/PlanImage.h"
#include "runtime/Steps.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace octet {

/// The samples static INT8 calibrates on when none are given.
inline constexpr const char *kDefaultCalibrationSamples = "generate:16x8x128";

/// What a calibration did, for summaries.
struct CalibrationSummary {
  int linears = 0;     ///< octet.linear / octet.fused_linear observed
  int batches = 0;     ///< runs of the instrumented model
  int64_t rows = 0;    ///< GEMM input rows (tokens) seen per linear, over all batches
  double seconds = 0;  ///< the whole calibration, with the instrumented compile
  std::string samples; ///< what it ran on
};

struct CompileOptions {
  rt::KernelOptions kernels;
  /// The passes between import and PlanBuilder, as a textual pipeline of octet
  /// function passes ("octet-cleanup,octet-recognize"). Empty: the full FP32
  /// pipeline; "none": no optimization pass. The runtime's lowerings
  /// (octet-lower-runtime-linear, octet-lower-gelu) follow a given pipeline and
  /// "none", so the Plan builder gets what it takes. Any prefix of the pipeline
  /// must compute the same (octetc run --passes).
  /// With INT8 they replace the INT8 lowering only: recognition (and, static,
  /// calibration) run first, then these passes ("none": plan the recognized,
  /// calibrated FP32 IR).
  std::string passes;
  /// Called with (pass name, IR text) after every pass when set (--print-ir-after-all).
  std::function<void(const std::string &pass, const std::string &ir)> irAfterPass;
  /// Filled by a static INT8 compile when set: what the calibration step did and how long
  /// it took (so callers can report the compile time without it).
  CalibrationSummary *calibrationSummary = nullptr;

  enum class Int8 { None, Static, Dynamic };
  /// None: FP32. Static: calibrate, then per-tensor activation scales.
  /// Dynamic: per-token scales computed at run time (no calibration).
  Int8 int8 = Int8::None;
  /// Calibration samples (static): a directory of input sets or
  /// "generate:N[xB][xS]"; empty: kDefaultCalibrationSamples.
  std::string calibrationSamples;
  /// 0: per-tensor input_min / input_max are the observed extremes; else P in
  /// (50, 100]: the mean over batches of each batch's (100-P)th / Pth percentile.
  double calibrationPercentile = 0;
  /// Padding-free batches (octet-pack-tokens, docs/padding-free.md): when a
  /// run's masks say which tokens are padding, the layers skip them and
  /// padding positions of token-wise outputs are 0. False: every position is
  /// computed, as ONNX Runtime does.
  bool packTokens = true;
  bool smoothquant = true;       ///< static only
  double smoothquantAlpha = 0.7; ///< in [0, 1]; why 0.7: docs/decisions.md
  /// Where external data may be read from (docs/security.md): empty, the
  /// model file's folder; for a model given as bytes, none (refused).
  std::string externalDataDir;
  /// The most bytes the model's constants may claim, checked before reading
  /// any; 0: this host's physical memory.
  uint64_t memoryBudget = 0;
  /// Filled after octet-recognize when set: the blocks that stayed unfused and
  /// why (octetc --explain-fusion, the warning line, the C API's report).
  FusionReport *fusionReport = nullptr;
  /// Calibration progress lines ("calibrate: batch 3/16 (1.2 s)"); none when unset.
  std::function<void(const std::string &line)> progress;
};


/// The settings of `options` that must hold before compiling (mode-specific
/// values in range); an error names the setting.
rt::Status validateCompileOptions(const CompileOptions &options);

/// Errors name the file, the ONNX node and op where one is at fault.
rt::Status compileOnnxFile(const std::string &path, const CompileOptions &options,
                           std::unique_ptr<rt::Plan> &plan);
/// AOT: compiles as compileOnnxFile and serializes the Plan, its kernels' code
/// and its constants (runtime/PlanImage.h) for `octetc compile`; `plan`
/// (optional) receives the Plan itself (e.g. to compare it with the image's).
rt::Status compileOnnxFileToImage(const std::string &path, const CompileOptions &options,
                                  rt::PlanImage &image,
                                  std::unique_ptr<rt::Plan> *plan = nullptr);
rt::Status compileOnnxBytes(const void *bytes, size_t size, const CompileOptions &options,
                            std::unique_ptr<rt::Plan> &plan);

/// Imports the model, runs the recognition pipeline and calibration on
/// options.calibrationSamples, and writes the calibrated IR (octet.calib on
/// every linear) to `outputPath` ("-": stdout): MLIR bytecode when it ends in
/// ".mlirbc", else MLIR text.
rt::Status calibrateOnnxFile(const std::string &path, const CompileOptions &options,
                             const std::string &outputPath, CalibrationSummary *summary = nullptr);

} // namespace octet

#endif
