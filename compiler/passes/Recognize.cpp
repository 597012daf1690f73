//===- Recognize.cpp - octet-recognize ------------------------------------===//
#include "compiler/passes/Passes.h"

namespace octet {
#define GEN_PASS_DEF_OCTETRECOGNIZE
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;

namespace {
struct OctetRecognizePass : octet::impl::OctetRecognizeBase<OctetRecognizePass> {
  void runOnOperation() override {}
};
} // namespace
