//===- LowerRuntimeLinear.cpp - octet-lower-runtime-linear ----------------===//
//
// The runtime's linear step needs its weight and bias when the Plan is built
// (it packs or reorders them once), so a linear of run-time values becomes the
// generic ops that compute the same: transpose (under transpose_weight),
// matmul, add. The Plan builder used to make this choice itself; as a pass it
// is visible in the IR, tested here, and the new values get arena slots from
// octet-plan-memory like any other.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/IR/Matchers.h"

namespace octet {
#define GEN_PASS_DEF_OCTETLOWERRUNTIMELINEAR
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

struct OctetLowerRuntimeLinearPass
    : octet::impl::OctetLowerRuntimeLinearBase<OctetLowerRuntimeLinearPass> {
  using OctetLowerRuntimeLinearBase::OctetLowerRuntimeLinearBase;

  void runOnOperation() override {
    SmallVector<LinearOp> linears;
    getOperation().walk([&](LinearOp linear) {
      // The Plan builder's test: an octet.constant (what its linear step reads).
      bool constantWeight = linear.getWeight().getDefiningOp<ConstantOp>() != nullptr;
      bool constantBias = !linear.getBias() || linear.getBias().getDefiningOp<ConstantOp>();
      if (!constantWeight || !constantBias)
        linears.push_back(linear);
    });
    for (LinearOp linear : linears) {
      OpBuilder b(linear);
      Location loc = linear.getLoc();
      Value weight = linear.getWeight();
      if (linear.getTransposeWeight())
        weight = TransposeOp::create(b, loc, weight, b.getDenseI64ArrayAttr({1, 0}));
      // The linear's own result type: the same static dims the linear had.
      Value result = MatMulOp::create(b, loc, linear.getType(), linear.getInput(), weight);
      if (Value bias = linear.getBias())
        result = AddOp::create(b, loc, linear.getType(), result, bias);
      linear.replaceAllUsesWith(result);
      linear.erase();
      ++numLowered;
    }
  }
};

} // namespace
