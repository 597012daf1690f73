//===- AttrNames.h - the octet dialect's discardable attributes -*- C++ -*-===//
//
// The names of the attributes that passes and the driver put on ops, function
// arguments and modules (they are not part of any op's ODS definition), one
// place each instead of a string literal in every file that reads or writes
// them. docs/ir.md says what each holds.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_IR_ATTRNAMES_H
#define OCTET_COMPILER_IR_ATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace octet::attr {

/// Function argument / result: the ONNX graph input or output name.
inline constexpr llvm::StringLiteral kName = "octet.name";
/// Function argument / result: the ONNX dim_param of each dim ("" where none).
inline constexpr llvm::StringLiteral kDimParams = "octet.dim_params";
/// Module: the ONNX opset imports and the producer (frontends/onnx).
inline constexpr llvm::StringLiteral kOpset = "octet.opset";
inline constexpr llvm::StringLiteral kProducer = "octet.producer";
/// Op: the arena slot octet-plan-memory gave its result; `kSlots`: one per
/// result for ops with several.
inline constexpr llvm::StringLiteral kSlot = "octet.slot";
inline constexpr llvm::StringLiteral kSlots = "octet.slots";
/// Function: the arena slots' byte sizes (octet-plan-memory).
inline constexpr llvm::StringLiteral kArena = "octet.arena";
/// Function: why octet-pack-tokens kept the padded layout.
inline constexpr llvm::StringLiteral kPaddingKept = "octet.padding_kept";
/// Linear: the calibration statistics of its input (octetc calibrate).
inline constexpr llvm::StringLiteral kCalib = "octet.calib";
/// Linear: octet-smoothquant already folded its smoothing factors.
inline constexpr llvm::StringLiteral kSmoothQuant = "octet.smoothquant";

} // namespace octet::attr

#endif // OCTET_COMPILER_IR_ATTRNAMES_H
