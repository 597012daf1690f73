//===- ResourceBlobs.h - freeing the weights passes replace ------*- C++ -*-===//
//
// Weights live in resource blobs that the context owns until it dies, even
// after no op refers to them. A pass that rewrites a weight (merges Q/K/V,
// applies SmoothQuant, quantizes, packs) makes a new blob; without these the
// compile's peak memory would hold every version of the weights at once.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_PASSES_RESOURCEBLOBS_H
#define OCTET_COMPILER_PASSES_RESOURCEBLOBS_H

#include "mlir/IR/BuiltinOps.h"

#include <cstddef>

namespace octet {

/// Frees every resource blob that no op of `module` refers to; returns how many.
/// Only for a module that is the context's one user of its blobs: a clone
/// shares them (calibration's instrumented clone runs no pass that replaces
/// weights, and this runs only on the compiled module).
size_t releaseUnusedBlobs(mlir::ModuleOp module);

/// Erases `constant` (an op nothing uses any more) and, when no other op of
/// its function refers to its resource blob, frees the blob at once. A
/// module of several functions keeps the blob for releaseUnusedBlobs: the
/// others may be rewritten on other threads meanwhile.
void eraseReplacedConstant(mlir::Operation *constant);

} // namespace octet

#endif
