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
struct OctetCleanupPass : octet::impl::OctetCleanupBase<OctetCleanupPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    for (Dialect *dialect : ctx->getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : ctx->getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    IRRewriter rewriter(ctx);
    DominanceInfo dominance(getOperation());
    eliminateCommonSubExpressions(rewriter, dominance, getOperation());
  }
};
} // namespace
