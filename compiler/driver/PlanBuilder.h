//===- PlanBuilder.h - octet IR after the pipeline to a Plan ----*- C++ -*-===//
//
// Walks the function once: index values become Plan scalars, tensors get their
// storage (input, output, constant, the arena slot octet-plan-memory chose, or
// a view), and every op becomes a step (runtime/Steps.h): linear and
// fused_linear → makeLinear (the region becomes an ElementwiseProgram),
// attention, layer_norm and add_layer_norm, gelu → kernel steps, the rest →
// generic steps. An op it cannot map is an error at the op's location.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_PLANBUILDER_H
#define OCTET_COMPILER_DRIVER_PLANBUILDER_H

#include "compiler/codegen/ElementwiseProgram.h"
#include "runtime/Plan.h"
#include "runtime/Steps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>

namespace octet {

/// What a Plan does with the module's constants (resource blobs: the weights).
/// Small ones (under 64 KiB) and dense attributes are always copied.
enum class PlanConstants {
  /// Point into the blobs without a copy: the module's context outlives the
  /// Plan and the module goes on (calibration's instrumented Plan).
  Borrow,
  /// Take the blobs the Plan keeps from the module (no copy), and release each
  /// blob that steps only packed or reordered (a linear's f32 weight) once its
  /// last user is built: the module is not used after (a JIT compile).
  Take,
  /// As Take, but the blobs steps packed stay in the module until it dies: an
  /// AOT image, written after the Plan, stores them (Plan::constants).
  TakeForImage,
};

/// Builds the Plan of `func` (after -octet-fp32-pipeline). Diagnostics go to
/// the func's context.
mlir::FailureOr<std::unique_ptr<rt::Plan>> buildPlan(mlir::func::FuncOp func,
                                                     const rt::KernelOptions &options,
                                                     PlanConstants constants);

/// The ElementwiseProgram of a scalar region (block arguments are its inputs,
/// `octet.yield` its result); fails at the first op it does not know.
mlir::FailureOr<rt::ElementwiseProgram> programFromRegion(mlir::Region &region);

} // namespace octet

#endif
