//===- Cleanup.cpp - octet-cleanup ----------------------------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace octet {
#define GEN_PASS_DEF_OCTETCLEANUP
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;

namespace {
/// max(a, min(a, b)) = a and min(a, max(a, b)) = a (absorption). Broadcasting
/// a size against a clamped copy of itself (position ids sliced to the
/// sequence length) leaves exactly this shape arithmetic.
template <typename OuterOp, typename InnerOp> struct Absorb : OpRewritePattern<OuterOp> {
  using OpRewritePattern<OuterOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(OuterOp op, PatternRewriter &rewriter) const override {
    for (auto [a, other] : {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      auto inner = other.template getDefiningOp<InnerOp>();
      if (inner && (inner.getLhs() == a || inner.getRhs() == a)) {
        rewriter.replaceOp(op, a);
        return success();
      }
    }
    return failure();
  }
};

struct OctetCleanupPass : octet::impl::OctetCleanupBase<OctetCleanupPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    patterns.add<Absorb<arith::MaxSIOp, arith::MinSIOp>, Absorb<arith::MinSIOp, arith::MaxSIOp>>(
        ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    IRRewriter rewriter(ctx);
    DominanceInfo dominance(getOperation());
    eliminateCommonSubExpressions(rewriter, dominance, getOperation());
  }
};
} // namespace
