//===- ConstantData.cpp - the raw bytes of a constant attribute -----------===//
#include "compiler/ir/ConstantData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

using namespace mlir;

AsmResourceBlob *octet::resourceBlob(Attribute value) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  return resource ? resource.getRawHandle().getBlob() : nullptr;
}

StringRef octet::resourceKey(Attribute value) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  return resource ? resource.getRawHandle().getKey() : StringRef();
}

std::optional<size_t> octet::storedElementBytes(Type element) {
  if (element.isInteger(1))
    return 1;
  if (element.isIndex())
    return 8;
  if (element.isIntOrFloat() && element.getIntOrFloatBitWidth() % 8 == 0)
    return element.getIntOrFloatBitWidth() / 8;
  return std::nullopt;
}

std::optional<ArrayRef<char>> octet::constantBytes(ElementsAttr value, std::vector<char> &storage,
                                                   std::string *why) {
  auto fail = [&](auto &&...parts) -> std::optional<ArrayRef<char>> {
    if (why) {
      why->clear();
      llvm::raw_string_ostream os(*why);
      (os << ... << parts);
    }
    return std::nullopt;
  };
  auto type = cast<ShapedType>(value.getType());
  std::optional<size_t> elementBytes = storedElementBytes(type.getElementType());
  if (!elementBytes)
    return fail("constant element type ", type.getElementType(), " has no byte layout");
  const size_t count = size_t(type.getNumElements()), bytes = *elementBytes * count;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return fail("constant '", resource.getRawHandle().getKey(),
                  "' has no data (an elided resource?)");
    ArrayRef<char> data = blob->getData();
    if (data.size() != bytes)
      return fail("constant '", resource.getRawHandle().getKey(), "' holds ", data.size(),
                  " bytes, its type ", type, " needs ", bytes);
    return data;
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return fail("constant attribute ", value.getAbstractAttribute().getName(), " has no raw bytes");
  if (type.getElementType().isInteger(1)) {
    storage.clear();
    for (bool b : dense.getValues<bool>())
      storage.push_back(b ? 1 : 0);
    return ArrayRef<char>(storage);
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    if (raw.size() < *elementBytes)
      return fail("malformed splat constant");
    storage.resize(bytes);
    for (size_t i = 0; i < count; ++i)
      std::memcpy(storage.data() + i * *elementBytes, raw.data(), *elementBytes);
    return ArrayRef<char>(storage);
  }
  if (raw.size() != bytes)
    return fail("dense constant holds ", raw.size(), " bytes, its type needs ", bytes);
  return raw;
}
