//===- ConstantData.h - the raw bytes of a constant attribute ---*- C++ -*-===//
//
// octet.constant holds its data as a DenseResourceElementsAttr (the importer's
// weights: a blob outside the attribute) or a DenseElementsAttr (small values
// the passes create). Every reader wants the same thing, the row-major bytes,
// and the same failures (an elided blob, a size the type disagrees with), so
// they are read here once.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_IR_CONSTANTDATA_H
#define OCTET_COMPILER_IR_CONSTANTDATA_H

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace octet {

/// The blob of a resource constant; null for any other attribute and for an
/// elided resource (printed without its data).
mlir::AsmResourceBlob *resourceBlob(mlir::Attribute value);

/// The key that names a resource constant's blob ("" for other attributes).
llvm::StringRef resourceKey(mlir::Attribute value);

/// The bytes of one element of `type`'s element type as a constant stores it
/// (i1: one byte); nullopt for types no constant reader handles.
std::optional<size_t> storedElementBytes(mlir::Type element);

/// The row-major bytes of `value` (numElements × storedElementBytes): a
/// resource's blob or a dense attribute's data in place, or, for a splat or an
/// i1 tensor (which MLIR packs as bits), a copy in `storage`. Fails, saying why
/// in `why` when given, for an elided blob, a byte count the type disagrees
/// with, or another attribute kind.
std::optional<llvm::ArrayRef<char>>
constantBytes(mlir::ElementsAttr value, std::vector<char> &storage, std::string *why = nullptr);

} // namespace octet

#endif // OCTET_COMPILER_IR_CONSTANTDATA_H
