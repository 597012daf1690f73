//===- ResourceBlobs.cpp - freeing the weights passes replace -------------===//
#include "compiler/passes/ResourceBlobs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"

#include <string>
#include <vector>
#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace mlir;
using BlobEntry = DialectResourceBlobManager::BlobEntry;

namespace {

/// Calls `fn` with the blob entry of every resource attribute of `op`
/// (inherent and discardable attributes, nested ones too).
template <typename Fn> void forEachBlobOf(Operation *op, Fn fn) {
  op->getAttrDictionary().walk(
      [&](DenseResourceElementsAttr resource) { fn(resource.getRawHandle().getResource()); });
}

/// Hands freed heap pages back to the system: blobs below malloc's mmap
/// threshold go to its free lists, where the next pass's new blobs may not fit.
void trimHeap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

} // namespace

size_t octet::releaseUnusedBlobs(ModuleOp module) {
  llvm::DenseSet<const BlobEntry *> used;
  module->walk([&](Operation *op) { forEachBlobOf(op, [&](BlobEntry *e) { used.insert(e); }); });
  DialectResourceBlobManager &manager =
      DenseResourceElementsHandle::getManagerInterface(module.getContext()).getBlobManager();
  std::vector<std::string> unused;
  manager.getBlobMap([&](const llvm::StringMap<BlobEntry> &blobs) {
    for (const auto &blob : blobs)
      if (const AsmResourceBlob *data = blob.getValue().getBlob();
          data && !data->getData().empty() && !used.contains(&blob.getValue()))
        unused.push_back(blob.getKey().str());
  });
  // Updated outside getBlobMap, which holds the manager's lock.
  for (const std::string &key : unused)
    manager.lookup(key)->setBlob(AsmResourceBlob());
  if (!unused.empty())
    trimHeap();
  return unused.size();
}

void octet::eraseReplacedConstant(Operation *constant) {
  BlobEntry *entry = nullptr;
  forEachBlobOf(constant, [&](BlobEntry *e) { entry = e; });
  auto func = constant->getParentOfType<func::FuncOp>();
  auto module = constant->getParentOfType<ModuleOp>();
  constant->erase();
  if (!entry || !entry->getBlob() || !func || !module ||
      !llvm::hasSingleElement(module.getOps<func::FuncOp>()))
    return;
  bool referenced = false;
  func.walk([&](Operation *op) {
    forEachBlobOf(op, [&](BlobEntry *e) { referenced |= e == entry; });
    return referenced ? WalkResult::interrupt() : WalkResult::advance();
  });
  if (referenced)
    return;
  entry->setBlob(AsmResourceBlob());
  trimHeap();
}
