//===- MergeLayerNorms.cpp - octet-merge-layer-norms ----------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/IR/Dominance.h"

namespace octet {
#define GEN_PASS_DEF_OCTETMERGELAYERNORMS
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {
/// The parts of octet.layer_norm / octet.add_layer_norm the merge compares.
struct Norm {
  Value input, residual, gamma, beta;
  uint64_t axis = 0;
  APFloat epsilon = APFloat(0.0f);
};

std::optional<Norm> normOf(Operation *op) {
  if (auto l = dyn_cast<LayerNormOp>(op))
    return Norm{l.getInput(), Value(), l.getGamma(), l.getBeta(), l.getAxis(), l.getEpsilon()};
  if (auto a = dyn_cast<AddLayerNormOp>(op))
    return Norm{a.getInput(), a.getResidual(), a.getGamma(), a.getBeta(), a.getAxis(),
                a.getEpsilon()};
  return std::nullopt;
}

/// `copy` (y dead, per tensor, no quant_affine) normalizes what `norm` does.
bool mergeable(LayerNormQuantizeOp copy, const Norm &norm) {
  return copy.getResult().use_empty() && copy.getScale() && !copy.getQuantGamma() &&
         copy.getBeta() && norm.beta && copy.getInput() == norm.input &&
         copy.getResidual() == norm.residual && copy.getAxis() == norm.axis &&
         copy.getEpsilon() == norm.epsilon;
}

struct OctetMergeLayerNormsPass
    : octet::impl::OctetMergeLayerNormsBase<OctetMergeLayerNormsPass> {
  void runOnOperation() override {
    DominanceInfo dominance(getOperation());
    struct Pair {
      LayerNormQuantizeOp copy;
      Operation *original, *first; ///< first: the earlier of the two, where the merged op goes
    };
    SmallVector<Pair> pairs;
    DenseSet<Operation *> taken;
    getOperation().walk([&](LayerNormQuantizeOp copy) {
      for (Operation *user : copy.getInput().getUsers()) {
        std::optional<Norm> norm = normOf(user);
        if (!norm || taken.contains(user) || user->getBlock() != copy->getBlock() ||
            !mergeable(copy, *norm))
          continue;
        Operation *first = user->isBeforeInBlock(copy) ? user : copy.getOperation();
        auto dominatesFirst = [&](Value v) {
          return !v || dominance.properlyDominates(v, first);
        };
        if (!llvm::all_of(ValueRange{norm->gamma, norm->beta, copy.getGamma(), copy.getBeta(),
                                     copy.getScale(), copy.getZeroPoint()},
                          dominatesFirst))
          continue;
        pairs.push_back({copy, user, first});
        taken.insert(user);
        return;
      }
    });
    for (auto [copy, original, first] : pairs) {
      const Norm norm = *normOf(original);
      OpBuilder builder(first);
      auto merged = LayerNormQuantizeOp::create(
          builder, builder.getFusedLoc({original->getLoc(), copy.getLoc()}),
          original->getResult(0).getType(), copy.getQuantized().getType(), Type(), norm.input,
          norm.residual, norm.gamma, norm.beta, norm.axis, norm.epsilon, copy.getScale(),
          copy.getZeroPoint(), copy.getGamma(), copy.getBeta());
      original->getResult(0).replaceAllUsesWith(merged.getResult());
      copy.getQuantized().replaceAllUsesWith(merged.getQuantized());
      original->erase();
      copy.erase();
    }
  }
};
} // namespace
