//===- FuseGemmEpilogue.cpp - octet-fuse-gemm-epilogue --------------------===//
//
// Two rewrites that give each GEMM more work per pass over memory:
// - linears reading one input (Q, K and V) become one linear of concatenated
//   weights, sliced back along the last axis;
// - a linear and the chain of elementwise ops after it become one
//   `octet.fused_linear` whose region computes the chain on one element.
// Both keep every float operation and its order: see each rewrite.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/ConstantData.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/ScalarOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "compiler/passes/ResourceBlobs.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"

namespace octet {
#define GEN_PASS_DEF_OCTETFUSEGEMMEPILOGUE
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

//===----------------------------------------------------------------------===//
// Sibling linears → one linear + slices
//===----------------------------------------------------------------------===//

/// A copy of a constant's row-major bytes (a splat expanded), or nothing.
std::optional<std::vector<char>> constantByteCopy(Value v) {
  auto constant = v.getDefiningOp<ConstantOp>();
  if (!constant)
    return std::nullopt;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = octet::constantBytes(constant.getValue(), storage);
  if (!bytes)
    return std::nullopt;
  return std::vector<char>(bytes->begin(), bytes->end());
}

/// A constant of `type` holding `bytes`; a resource blob (named after
/// `like`'s) when `like` is one, so weights stay out of folding and printing
/// stays compact, else a dense attribute.
Value makeConstant(OpBuilder &builder, Location loc, RankedTensorType type,
                   ArrayRef<char> bytes, Value like) {
  ElementsAttr attr;
  auto likeAttr = like.getDefiningOp<ConstantOp>().getValue();
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(likeAttr))
    attr = DenseResourceElementsAttr::get(
        type, (resource.getRawHandle().getKey() + ".merged").str(),
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(float)));
  else
    attr = DenseElementsAttr::getFromRawBuffer(type, bytes);
  return ConstantOp::create(builder, loc, attr);
}

/// Concatenates 2-D row-major byte matrices of `rows` rows along `axis`.
std::vector<char> concatMatrices(ArrayRef<std::vector<char>> parts, int64_t rows,
                                 int64_t axis) {
  std::vector<char> out;
  if (axis == 0) {
    for (const std::vector<char> &part : parts)
      out.insert(out.end(), part.begin(), part.end());
    return out;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (const std::vector<char> &part : parts) {
      size_t rowBytes = part.size() / rows;
      out.insert(out.end(), part.begin() + r * rowBytes, part.begin() + (r + 1) * rowBytes);
    }
  return out;
}

/// Linears of one input with constant f32 weights of one layout, and
/// constant biases or none, become one linear over the concatenated output
/// features, followed by one `octet.slice` per original linear. Each output
/// column is the same dot product over K plus the same bias element as
/// before, so the values are unchanged.
void mergeSiblingLinears(func::FuncOp func) {
  // Keyed by (input, transpose_weight, has a bias), in program order.
  llvm::MapVector<std::tuple<Value, int, int>, SmallVector<LinearOp>> groups;
  func.walk([&](LinearOp linear) {
    bool constantOperands = matchPattern(linear.getWeight(), m_Constant()) &&
                            (!linear.getBias() || matchPattern(linear.getBias(), m_Constant()));
    if (constantOperands && linear.getType().getElementType().isF32())
      groups[{linear.getInput(), int(linear.getTransposeWeight()), int(bool(linear.getBias()))}].push_back(
          linear);
  });
  for (auto &[key, linears] : groups) {
    if (linears.size() < 2)
      continue;
    LinearOp first = linears.front();
    bool transposed = first.getTransposeWeight();
    int64_t nDim = first.getOutputFeatureDim();
    SmallVector<std::vector<char>> weights, biases;
    SmallVector<int64_t> widths;
    for (LinearOp linear : linears) {
      std::optional<std::vector<char>> weight = constantByteCopy(linear.getWeight());
      std::optional<std::vector<char>> bias =
          linear.getBias() ? constantByteCopy(linear.getBias()) : std::vector<char>();
      if (!weight || !bias)
        break;
      weights.push_back(std::move(*weight));
      biases.push_back(std::move(*bias));
      widths.push_back(linear.getWeight().getType().getDimSize(nDim));
    }
    if (weights.size() != linears.size())
      continue;

    int64_t k = first.getWeight().getType().getDimSize(first.getInputFeatureDim());
    int64_t n = 0;
    for (int64_t width : widths)
      n += width;
    Type f32 = first.getType().getElementType();
    // Built where the first linear is: the input dominates every linear.
    OpBuilder builder(first);
    Location loc = builder.getFusedLoc(llvm::map_to_vector(
        linears, [](LinearOp linear) { return linear.getLoc(); }));
    RankedTensorType weightType =
        RankedTensorType::get(transposed ? ArrayRef<int64_t>{n, k} : ArrayRef<int64_t>{k, n}, f32);
    Value weight = makeConstant(builder, loc, weightType,
                                concatMatrices(weights, transposed ? n : k, transposed ? 0 : 1),
                                first.getWeight());
    Value bias;
    if (first.getBias())
      bias = makeConstant(builder, loc, RankedTensorType::get({n}, f32),
                          concatMatrices(biases, 1, 0), first.getBias());
    auto merged = LinearOp::create(builder, loc, first.getInput(), weight, bias, transposed);
    int64_t axis = merged.getType().getRank() - 1, offset = 0;
    for (auto [linear, width] : llvm::zip_equal(linears, widths)) {
      linear.getResult().replaceAllUsesWith(SliceOp::create(builder, linear.getLoc(), linear.getType(),
                                                merged, ValueRange(), ValueRange(), {axis},
                                                {offset}, {offset + width}, {1}));
      offset += width;
    }
    for (LinearOp linear : linears) {
      Value oldWeight = linear.getWeight(), oldBias = linear.getBias();
      linear.erase();
      // The data now lives in the merged constants only.
      for (Value old : {oldWeight, oldBias})
        if (old && old.use_empty())
          eraseReplacedConstant(old.getDefiningOp());
    }
  }
}

//===----------------------------------------------------------------------===//
// Linear + elementwise chain → fused_linear
//===----------------------------------------------------------------------===//

/// True if `extra` broadcasts into `result`'s shape without widening it in
/// any run: each dim is 1, the same static size, or (for a `?` of the
/// result) provably the same run-time size.
bool broadcastsInto(Value extra, Value result) {
  ArrayRef<int64_t> from = tensorOf(extra).getShape(), to = tensorOf(result).getShape();
  if (from.size() > to.size() || !tensorOf(extra).getElementType().isF32())
    return false;
  int64_t lead = to.size() - from.size();
  for (auto [d, size] : llvm::enumerate(from)) {
    int64_t target = to[lead + d];
    bool same = ShapedType::isDynamic(target)
                    ? traceDimSource(extra, d) == traceDimSource(result, lead + d)
                    : size == target;
    if (size != 1 && !same)
      return false;
  }
  return true;
}

/// One elementwise op continuing the epilogue of `producer`'s result.
struct Step {
  Operation *producer;   // octet.linear or octet.fused_linear
  bool chainIsLhs;       // operand order matters for sub, div
  Value other;           // a binary op's other operand, else null
  std::optional<APFloat> scalar; // `other` as a splat constant
};

std::optional<Step> matchStep(Operation *op) {
  if (op->getNumResults() != 1 || op->getNumOperands() == 0)
    return std::nullopt;
  bool unary = isa<GeluOp, ReluOp, SigmoidOp, NegOp, AbsOp, ExpOp, LogOp, ErfOp, TanhOp, SqrtOp,
                   RsqrtOp, ReciprocalOp>(op);
  bool binary = isa<AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp>(op);
  if (!unary && !binary)
    return std::nullopt;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    Operation *producer = operand.getDefiningOp();
    // One use: the unfused result would otherwise still be needed.
    if (!isa_and_nonnull<LinearOp, FusedLinearOp>(producer) || !operand.hasOneUse() ||
        op->getResult(0).getType() != operand.getType())
      continue;
    Step step{producer, i == 0, Value(), std::nullopt};
    if (unary)
      return step;
    step.other = op->getOperand(1 - i);
    DenseElementsAttr attr;
    if (matchPattern(step.other, m_Constant(&attr)) && attr.isSplat() &&
        attr.getElementType().isF32())
      step.scalar = attr.getSplatValue<APFloat>();
    else if (!broadcastsInto(step.other, operand))
      continue;
    return step;
  }
  return std::nullopt;
}

/// (linear | fused_linear) → elementwise op  ⇒  fused_linear with the op
/// appended to the region. Applied to a fixed point, a whole chain of
/// single-use elementwise ops ends up in one region, in its original order.
struct FuseEpilogueStep : RewritePattern {
  FuseEpilogueStep(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    std::optional<Step> step = matchStep(op);
    if (!step)
      return rewriter.notifyMatchFailure(op, "not an elementwise op on a single-use linear");
    auto linear = dyn_cast<LinearOp>(step->producer);
    auto fused = dyn_cast<FusedLinearOp>(step->producer);
    auto [input, weight, bias, transposed] =
        linear ? std::tuple(linear.getInput(), linear.getWeight(), linear.getBias(),
                            linear.getTransposeWeight())
               : std::tuple(fused.getInput(), fused.getWeight(), fused.getBias(),
                            fused.getTransposeWeight());
    SmallVector<Value> extras;
    if (fused)
      extras.append(fused.getExtra().begin(), fused.getExtra().end());
    // A tensor read twice (x·r + r) is one extra operand.
    int64_t otherIndex = -1;
    if (step->other && !step->scalar) {
      auto *it = llvm::find(extras, step->other);
      otherIndex = it - extras.begin();
      if (it == extras.end())
        extras.push_back(step->other);
    }

    Location loc = rewriter.getFusedLoc({step->producer->getLoc(), op->getLoc()});
    rewriter.setInsertionPoint(op);
    Type resultType = op->getResult(0).getType();
    auto result = FusedLinearOp::create(rewriter, loc, resultType, input, weight, bias, extras,
                                        transposed);
    Type f32 = rewriter.getF32Type();
    SmallVector<Type> argTypes(extras.size() + 1, f32);
    Block *body = rewriter.createBlock(&result.getEpilogue(), {}, argTypes,
                                       SmallVector<Location>(argTypes.size(), loc));
    Value chain = body->getArgument(0);
    if (fused) {
      // The old region's block arguments are a prefix of the new ones.
      IRMapping mapping;
      Block &old = fused.getEpilogue().front();
      mapping.map(old.getArguments(), body->getArguments().take_front(old.getNumArguments()));
      for (Operation &inner : old.without_terminator())
        rewriter.clone(inner, mapping);
      chain = mapping.lookup(cast<YieldOp>(old.getTerminator()).getValue());
    }
    Value other;
    if (step->scalar)
      other = arith::ConstantOp::create(rewriter, loc, FloatAttr::get(f32, *step->scalar));
    else if (step->other)
      other = body->getArgument(1 + otherIndex);
    SmallVector<Value, 2> operands{chain};
    if (other)
      operands.insert(step->chainIsLhs ? operands.end() : operands.begin(), other);
    Value value = emitScalarElementwise(rewriter, loc, op, operands);
    YieldOp::create(rewriter, loc, value);
    rewriter.replaceOp(op, result.getResult());
    rewriter.eraseOp(step->producer);
    return success();
  }
};

struct OctetFuseGemmEpiloguePass
    : octet::impl::OctetFuseGemmEpilogueBase<OctetFuseGemmEpiloguePass> {
  void runOnOperation() override {
    // First, so that an epilogue never hides a Q/K/V linear from the merge.
    mergeSiblingLinears(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseEpilogueStep>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
