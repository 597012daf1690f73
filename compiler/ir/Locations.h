//===- Locations.h - locations as messages print them -----------*- C++ -*-===//
//
// The importer gives every op NameLoc(node name, FileLineColLoc(model file));
// passes fuse them (FusedLoc) when ops merge. Every message that names where
// something is (driver and tool diagnostics, calibration, PlanBuilder's step
// names, the fusion report) reads locations through these functions, so they
// print the same thing everywhere.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_IR_LOCATIONS_H
#define OCTET_IR_LOCATIONS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace octet {

/// Where `loc` is, for a message: `file` or `file:node` for an imported ONNX
/// node, `file:line:col` for a .mlir op, a fused location's parts joined by
/// ", ", "" for an unknown location, anything else as MLIR prints it.
std::string formatLocation(mlir::Location loc);

/// The ONNX node names `loc` carries (its NameLocs, through fused and
/// call-site locations), in order; empty when it has none. The StringRefs
/// live as long as the MLIRContext.
void collectNodeNames(mlir::Location loc, llvm::SmallVectorImpl<llvm::StringRef> &names);

/// Those node names joined by `separator`; "" when there are none.
std::string joinNodeNames(mlir::Location loc, llvm::StringRef separator);

/// "error", "warning", "note" or "remark", as the tools print a diagnostic.
const char *severityName(mlir::DiagnosticSeverity severity);

} // namespace octet

#endif
