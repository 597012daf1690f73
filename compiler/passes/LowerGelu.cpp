//===- LowerGelu.cpp - octet-lower-gelu -----------------------------------===//
//
// The runtime runs GELU as an elementwise program (GeluErf / GeluTanh). A lone
// f32 octet.gelu — one that no fusion pass took — becomes the octet.fused of
// that one instruction, so the choice is made here, visible and tested in the
// IR, instead of in the Plan builder.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

namespace octet {
#define GEN_PASS_DEF_OCTETLOWERGELU
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

struct OctetLowerGeluPass : octet::impl::OctetLowerGeluBase<OctetLowerGeluPass> {
  using OctetLowerGeluBase::OctetLowerGeluBase;

  void runOnOperation() override {
    SmallVector<GeluOp> gelus;
    getOperation().walk([&](GeluOp gelu) {
      if (cast<RankedTensorType>(gelu.getType()).getElementType().isF32())
        gelus.push_back(gelu);
    });
    for (GeluOp gelu : gelus) {
      OpBuilder b(gelu);
      Location loc = gelu.getLoc(); // the step's name
      auto fused = FusedOp::create(b, loc, gelu.getType(), ValueRange{gelu.getInput()});
      // Discardable attributes (octet.slot, when octet-plan-memory ran first)
      // belong to the value, which the fused op now computes.
      for (NamedAttribute attr : gelu->getDiscardableAttrs())
        fused->setAttr(attr.getName(), attr.getValue());
      Type f32 = b.getF32Type();
      Block *body = b.createBlock(&fused.getBody(), {}, {f32}, {loc});
      Value element = ScalarGeluOp::create(b, loc, body->getArgument(0), gelu.getApproximateAttr());
      YieldOp::create(b, loc, element);
      gelu.replaceAllUsesWith(fused.getResult());
      gelu.erase();
      ++numLowered;
    }
  }
};

} // namespace
