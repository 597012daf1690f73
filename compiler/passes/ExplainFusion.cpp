//===- ExplainFusion.cpp - octet-explain-fusion and the fusion report -----===//
//
// After octet-recognize, finds the blocks that look like attention, LayerNorm
// or GELU but did not become their fused op, and asks the recognizer's own
// patterns why: each pattern is applied once more to the candidate's root
// with a rewriter that only records notifyMatchFailure. At the pass's fixed
// point no pattern matches any more, so this never rewrites anything.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/Locations.h"
#include "compiler/passes/FusionReport.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/ScalarOps.h"

#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

namespace octet {
#define GEN_PASS_DEF_OCTETEXPLAINFUSION
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

using Kind = FusionReport::BlockKind;

/// Records the reason of the last failed match.
struct ReasonRecorder : RewriterBase::Listener {
  std::string reason;
  void notifyMatchFailure(Location, function_ref<void(Diagnostic &)> callback) override {
    Diagnostic diag(UnknownLoc::get(context), DiagnosticSeverity::Remark);
    callback(diag);
    reason = diag.str();
  }
  MLIRContext *context = nullptr;
};

class Explainer {
public:
  explicit Explainer(MLIRContext *ctx) : patterns(ctx) { populateRecognizePatterns(patterns); }

  /// Why the recognizer's patterns of one block (their debug names contain
  /// `block`: "Attention", "LayerNorm", "Gelu") rooted at `op`'s kind do not
  /// rewrite it; empty when none is rooted there.
  std::string whyNot(Operation *op, StringRef block) {
    ReasonRecorder recorder;
    recorder.context = op->getContext();
    PatternRewriter rewriter(op->getContext());
    rewriter.setListener(&recorder);
    rewriter.setInsertionPoint(op);
    std::string reasons;
    for (const std::unique_ptr<RewritePattern> &pattern : patterns.getNativePatterns()) {
      if (pattern->getRootKind() != op->getName() || !pattern->getDebugName().contains(block))
        continue;
      recorder.reason.clear();
      if (succeeded(pattern->matchAndRewrite(op, rewriter)))
        return "matched on a second look (the recognizer stopped early)";
      if (!recorder.reason.empty() && reasons.find(recorder.reason) == std::string::npos)
        reasons += (reasons.empty() ? "" : "; ") + recorder.reason;
    }
    return reasons;
  }

private:
  RewritePatternSet patterns;
};

/// Ops reachable from `from` through at most `depth` users, nearest first.
SmallVector<Operation *> usersWithin(Operation *from, int depth) {
  SmallVector<Operation *> found{from};
  for (size_t begin = 0; depth-- > 0;) {
    size_t end = found.size();
    for (size_t i = begin; i < end; ++i)
      for (Operation *user : found[i]->getUsers())
        if (!llvm::is_contained(found, user))
          found.push_back(user);
    begin = end;
  }
  found.erase(found.begin());
  return found;
}

/// The reasons the patterns rooted at ops near `candidate` give, or `fallback`.
std::string reasonNear(Explainer &explainer, Operation *candidate, int depth, StringRef block,
                       StringRef fallback) {
  std::string reason;
  for (Operation *op : usersWithin(candidate, depth)) {
    std::string why = explainer.whyNot(op, block);
    if (!why.empty() && reason.find(why) == std::string::npos)
      reason += (reason.empty() ? "" : "; ") + why;
  }
  return reason.empty() ? fallback.str() : reason;
}

/// mean(x) over the last axis, kept, and subtracted from x: a LayerNorm's start.
bool isMeanCentering(ReduceMeanOp mean) {
  auto type = cast<RankedTensorType>(mean.getInput().getType());
  ArrayRef<int64_t> axes = mean.getAxes();
  if (!mean.getKeepdims() || axes.empty() || axes.back() != type.getRank() - 1)
    return false;
  return llvm::any_of(mean->getUsers(), [&](Operation *user) {
    auto sub = dyn_cast<SubOp>(user);
    return sub && sub.getLhs() == mean.getInput() && sub.getRhs() == mean.getResult();
  });
}

/// tanh of a cubic in x (x + 0.044715·x³, scaled): the tanh form of GELU, not
/// a pooler's tanh.
bool isCubicTanh(TanhOp tanh) {
  SmallVector<Value> work{tanh.getInput()};
  for (int steps = 0; !work.empty() && steps < 8; ++steps) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def)
      continue;
    if (auto pow = dyn_cast<PowOp>(def); pow && getScalarConstant(pow.getRhs()) == 3.0)
      return true;
    if (isa<MulOp, AddOp, DivOp>(def))
      llvm::append_range(work, def->getOperands());
  }
  return false;
}

} // namespace

std::string octet::nodeNames(ArrayRef<Operation *> ops) {
  llvm::SmallVector<StringRef> found;
  for (Operation *op : ops)
    if (op)
      collectNodeNames(op->getLoc(), found);
  std::string names;
  for (StringRef name : found)
    names += (names.empty() ? "'" : ", '") + name.str() + "'";
  return names.empty() ? "an unnamed node" : "node " + names;
}

FusionReport octet::explainFusion(func::FuncOp func) {
  FusionReport report;
  Explainer explainer(func.getContext());
  auto addUnfused = [&](Kind block, ArrayRef<Operation *> nodes, std::string reason) {
    report.unfused.push_back({block, nodeNames(nodes), std::move(reason)});
  };
  func.walk([&](Operation *op) {
    if (isa<AttentionOp>(op))
      ++report.fused[int(Kind::Attention)];
    else if (isa<LayerNormOp, AddLayerNormOp>(op))
      ++report.fused[int(Kind::LayerNorm)];
    else if (isa<GeluOp>(op))
      ++report.fused[int(Kind::Gelu)];
    else if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
      if (softmax.getType().getRank() == 4 && softmax.getAxis() == 3) {
        std::string why = explainer.whyNot(softmax, "Attention");
        addUnfused(Kind::Attention, {softmax, softmax.getInput().getDefiningOp()},
                   why.empty() ? "no attention pattern applies" : why);
      }
    } else if (auto mean = dyn_cast<ReduceMeanOp>(op)) {
      if (isMeanCentering(mean))
        addUnfused(Kind::LayerNorm, {mean},
                   reasonNear(explainer, mean, 6, "RecognizeLayerNorm",
                              "the mean-centered values are not normalized by the square root "
                              "of their mean square plus a constant epsilon, then scaled by γ"));
    } else if (isa<ErfOp>(op) || (isa<TanhOp>(op) && isCubicTanh(cast<TanhOp>(op)))) {
      addUnfused(Kind::Gelu, {op},
                 reasonNear(explainer, op, 4, "Gelu",
                            "not 0.5·x·(1 + erf(x/√2)) or the tanh form, in any order"));
    }
  });
  return report;
}

namespace {

/// Remarks for lit: one per unfused block at its op, one summary on the function.
struct OctetExplainFusionPass : octet::impl::OctetExplainFusionBase<OctetExplainFusionPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    FusionReport report = explainFusion(func);
    for (const FusionReport::Unfused &u : report.unfused)
      emitRemark(func.getLoc()) << FusionReport::name(u.block) << " not fused at " << u.where
                                << ": " << u.reason;
    std::string summary = report.text();
    emitRemark(func.getLoc()) << StringRef(summary).split('\n').first;
    markAllAnalysesPreserved();
  }
};

} // namespace
