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

#include "runtime/ElementwiseProgram.h"
#include "runtime/Plan.h"
#include "runtime/Steps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>

namespace octet {

/// Builds the Plan of `func` (after -octet-fp32-pipeline). Diagnostics go to
/// the func's context.
mlir::FailureOr<std::unique_ptr<rt::Plan>> buildPlan(mlir::func::FuncOp func,
                                                     const rt::KernelOptions &options);

/// The ElementwiseProgram of a scalar region (block arguments are its inputs,
/// `octet.yield` its result); fails at the first op it does not know.
mlir::FailureOr<rt::ElementwiseProgram> programFromRegion(mlir::Region &region);

} // namespace octet

#endif
