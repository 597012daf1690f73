//===- Calibrate.h - observe GEMM inputs, write octet.calib -----*- C++ -*-===//
//
// Calibration is a driver step, not a pass (DESIGN.md): on the IR after the
// recognition pipeline, it clones the module, finishes the FP32 pipeline on
// the clone, builds its Plan (weights borrowed from the module, GEMMs packing
// theirs at each run), runs it over the samples while an executor observer
// folds every octet.linear / octet.fused_linear `input` into its statistics
// just before the linear's step, and writes what it saw as `octet.calib`
// (docs/int8.md) onto the original module's linears. docs/calibration.md says
// what is measured and how.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_CALIBRATE_H
#define OCTET_COMPILER_DRIVER_CALIBRATE_H

#include "compiler/driver/Compile.h"

#include "mlir/IR/BuiltinOps.h"

namespace octet {

/// Calibrates `module` (after buildRecognitionPipeline) on
/// options.calibrationSamples with options.kernels and
/// options.calibrationPercentile; reports through options.progress. Errors
/// from the instrumented compile are diagnostics on the module's context; the
/// Status says what failed.
rt::Status calibrateModule(mlir::ModuleOp module, const CompileOptions &options,
                           CalibrationSummary *summary = nullptr);

} // namespace octet

#endif
