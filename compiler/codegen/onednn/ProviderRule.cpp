//===- ProviderRule.cpp - the INT8 GEMM provider rule (MatMulU8S8.h) ------===//
//
// Apart from the provider so that an AOT model.so linked without oneDNN
// (OneDnnStub.cpp) rebuilds its steps with the very rule that chose them.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/onednn/MatMulU8S8.h"

namespace octet::onednn {

bool preferOneDnnU8S8(bool jitAvailable, bool perRowInputScale) {
  // Figures: bench/gemm_u8s8_providers, docs/kernel-selection.md.
  return !jitAvailable && !perRowInputScale;
}

} // namespace octet::onednn
