//===- Locations.cpp - locations as messages print them -------------------===//
#include "compiler/ir/Locations.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

std::string octet::formatLocation(Location loc) {
  if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    // The importer's file locations have no line: an ONNX model has none.
    if (!file.getLine())
      return file.getFilename().str();
    return file.getFilename().str() + ":" + std::to_string(file.getLine()) + ":" +
           std::to_string(file.getColumn());
  }
  if (auto name = dyn_cast<NameLoc>(loc)) {
    std::string inner = formatLocation(name.getChildLoc());
    return (inner.empty() ? "" : inner + ":") + name.getName().str();
  }
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    std::string joined;
    for (Location part : fused.getLocations())
      if (std::string text = formatLocation(part); !text.empty())
        joined += (joined.empty() ? "" : ", ") + text;
    return joined;
  }
  if (isa<UnknownLoc>(loc))
    return "";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
}

void octet::collectNodeNames(Location loc, llvm::SmallVectorImpl<llvm::StringRef> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (!name.getName().getValue().empty())
      names.push_back(name.getName().getValue());
  } else if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      collectNodeNames(part, names);
  else if (auto callSite = dyn_cast<CallSiteLoc>(loc))
    collectNodeNames(callSite.getCallee(), names);
}

std::string octet::joinNodeNames(Location loc, llvm::StringRef separator) {
  llvm::SmallVector<llvm::StringRef> names;
  collectNodeNames(loc, names);
  return llvm::join(names, separator);
}

const char *octet::severityName(DiagnosticSeverity severity) {
  static const char *const names[] = {"note", "warning", "error", "remark"};
  static_assert(int(DiagnosticSeverity::Note) == 0 && int(DiagnosticSeverity::Warning) == 1 &&
                    int(DiagnosticSeverity::Error) == 2 && int(DiagnosticSeverity::Remark) == 3,
                "names[] follows mlir::DiagnosticSeverity's order");
  unsigned index = unsigned(severity);
  return index < 4 ? names[index] : "error";
}
