//===- FuseElementwise.cpp - octet-fuse-elementwise -----------------------===//
//
// Groups connected f32 pointwise ops into one `octet.fused` whose region
// computes the group on one element, so the group reads its inputs and
// writes its result once instead of once per op.
//
// A group grows backwards from a root (visited in reverse program order, so
// a root is the last op of its chain) through producers that are f32
// pointwise ops of the root's result shape whose every use is inside the
// group; their values then never need a tensor. Casts, integer and boolean
// ops, ops with regions and reductions stay outside, and so do the f32 ops
// the elementwise program has no instruction for (ceil, floor, sign, mod:
// mask and index arithmetic, never a hot chain): isF32Pointwise is an allow-list.
//
// First, a LayerNorm whose result is quantized (the GEMM input of an INT8
// encoder) becomes one octet.layer_norm_quantize, so the quantized bytes are
// written by the LayerNorm's own pass over the row instead of a second pass.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "compiler/passes/ScalarOps.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace octet {
#define GEN_PASS_DEF_OCTETFUSEELEMENTWISE
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The value of a splat f32 constant of one element (any rank, all dims 1),
/// which the region holds as an `arith.constant` instead of reading a tensor.
std::optional<APFloat> scalarConstant(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !attr.isSplat() || !attr.getElementType().isF32() ||
      attr.getType().getNumElements() != 1)
    return std::nullopt;
  return attr.getSplatValue<APFloat>();
}

/// The ops of one group, in program order; the last is the root.
SmallVector<Operation *> growGroup(Operation *root, const DenseSet<Operation *> &taken) {
  llvm::SetVector<Operation *> group;
  group.insert(root);
  RankedTensorType rootType = tensorOf(root->getResult(0));
  auto joins = [&](Operation *producer) {
    // Same iteration space: a producer of a smaller (broadcast) shape would
    // be recomputed for every element it broadcasts to.
    return producer && !group.contains(producer) && !taken.contains(producer) &&
           producer->getBlock() == root->getBlock() && isF32Pointwise(producer) &&
           tensorOf(producer->getResult(0)).getShape() == rootType.getShape() &&
           llvm::all_of(producer->getUsers(),
                        [&](Operation *user) { return group.contains(user); });
  };
  // To a fixed point: a producer read by two group ops joins once both have.
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t i = 0; i < group.size(); ++i)
      for (Value operand : group[i]->getOperands())
        if (Operation *producer = operand.getDefiningOp(); joins(producer)) {
          group.insert(producer);
          grew = true;
        }
  }
  SmallVector<Operation *> ordered(group.begin(), group.end());
  llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

/// Replaces `group` (program order, root last) by one octet.fused at the root.
/// Returns false, changing nothing, when the group reads no tensor at all.
bool fuseGroup(ArrayRef<Operation *> group) {
  Operation *root = group.back();
  DenseSet<Operation *> members(group.begin(), group.end());
  // External tensor operands, each once, in first-use order. Scalar splat
  // constants go inside instead, unless their rank is what makes the result's
  // (a [1, 1] splat times a [4] tensor is [1, 4]): the result shape is the
  // broadcast of the inputs.
  llvm::SetVector<Value> inputs;
  int64_t inputRank = -1;
  for (Operation *op : group)
    for (Value operand : op->getOperands())
      if (!members.contains(operand.getDefiningOp()) && !scalarConstant(operand)) {
        inputs.insert(operand);
        inputRank = std::max(inputRank, tensorOf(operand).getRank());
      }
  if (inputs.empty())
    return false; // all constants: octet-cleanup folds it
  for (Operation *op : group)
    for (Value operand : op->getOperands())
      if (scalarConstant(operand) && tensorOf(operand).getRank() > inputRank)
        inputs.insert(operand);

  SmallVector<Location> locs =
      llvm::map_to_vector(group, [](Operation *op) { return op->getLoc(); });
  OpBuilder builder(root);
  Location loc = builder.getFusedLoc(locs);
  auto fused = FusedOp::create(builder, loc, root->getResult(0).getType(), inputs.getArrayRef());
  Type f32 = builder.getF32Type();
  Block *body = builder.createBlock(&fused.getBody(), {}, SmallVector<Type>(inputs.size(), f32),
                                    SmallVector<Location>(inputs.size(), loc));
  IRMapping scalars;
  for (auto [input, arg] : llvm::zip_equal(inputs, body->getArguments()))
    scalars.map(input, arg);
  for (Operation *op : group) {
    SmallVector<Value, 2> operands;
    for (Value operand : op->getOperands()) {
      if (!scalars.contains(operand)) // a scalar constant, the first time
        scalars.map(operand,
                    arith::ConstantOp::create(builder, op->getLoc(),
                                              FloatAttr::get(f32, *scalarConstant(operand))));
      operands.push_back(scalars.lookup(operand));
    }
    scalars.map(op->getResult(0), emitScalarElementwise(builder, op->getLoc(), op, operands));
  }
  YieldOp::create(builder, loc, scalars.lookup(root->getResult(0)));

  root->getResult(0).replaceAllUsesWith(fused.getResult());
  llvm::SetVector<Operation *> constants;
  for (Operation *op : llvm::reverse(group)) {
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp(); producer && scalarConstant(operand))
        constants.insert(producer);
    op->erase();
  }
  // Constants that only the group read are now dead.
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
  return true;
}

/// A constant of one element, or null.
Value oneElementConstant(Value v) {
  DenseElementsAttr attr;
  return v && matchPattern(v, m_Constant(&attr)) && attr.getType().getNumElements() == 1 ? v
                                                                                         : Value();
}

/// The LayerNorm (f32, over the last dim) that produces `x`, or null.
Operation *layerNormProducer(Value x) {
  Operation *ln = x.getDefiningOp();
  if (!isa_and_nonnull<LayerNormOp, AddLayerNormOp>(ln))
    return nullptr;
  auto type = tensorOf(x);
  uint64_t axis = isa<LayerNormOp>(ln) ? cast<LayerNormOp>(ln).getAxis()
                                       : cast<AddLayerNormOp>(ln).getAxis();
  return type.getElementType().isF32() && int64_t(axis) == type.getRank() - 1 ? ln : nullptr;
}

/// Replaces `ln` and its quantize `q` (octet.quantize per tensor with a
/// constant scale and zero point, or octet.quantize_per_row) by one
/// octet.layer_norm_quantize at `ln`. Returns false, changing nothing, when
/// `q` does not qualify: a per-axis or run-time scale stays a separate step.
bool fuseLayerNormQuantize(Operation *ln, Operation *q) {
  Value scale, zeroPoint;
  if (auto quantize = dyn_cast<QuantizeOp>(q)) {
    scale = oneElementConstant(quantize.getScale());
    zeroPoint = quantize.getZeroPoint();
    if (!scale || (quantize.getAxis() && tensorOf(scale).getRank() != 0) ||
        (zeroPoint && !oneElementConstant(zeroPoint)))
      return false;
  }
  // The constants must be defined before the LayerNorm, where the fused op goes.
  for (Value c : {scale, zeroPoint})
    if (Operation *def = c ? c.getDefiningOp() : nullptr;
        def && def->getBlock() == ln->getBlock() && ln->isBeforeInBlock(def))
      def->moveBefore(ln);
  OpBuilder builder(ln);
  if (scale && !zeroPoint) { // ONNX's default zero point: 0 of the quantized type
    auto zpType = RankedTensorType::get(tensorOf(scale).getShape(),
                                        tensorOf(q->getResult(0)).getElementType());
    Attribute zero = builder.getZeroAttr(zpType.getElementType());
    zeroPoint = ConstantOp::create(builder, q->getLoc(), DenseElementsAttr::get(zpType, zero));
  }
  Value input, residual, gamma, beta;
  uint64_t axis;
  APFloat epsilon(0.0f);
  if (auto l = dyn_cast<LayerNormOp>(ln)) {
    input = l.getInput(), gamma = l.getGamma(), beta = l.getBeta();
    axis = l.getAxis(), epsilon = l.getEpsilon();
  } else {
    auto a = cast<AddLayerNormOp>(ln);
    input = a.getInput(), residual = a.getResidual(), gamma = a.getGamma(), beta = a.getBeta();
    axis = a.getAxis(), epsilon = a.getEpsilon();
  }
  Type rowScaleType = scale ? Type() : q->getResult(1).getType();
  auto fused = LayerNormQuantizeOp::create(
      builder, builder.getFusedLoc({ln->getLoc(), q->getLoc()}), ln->getResult(0).getType(),
      q->getResult(0).getType(), rowScaleType, input, residual, gamma, beta, axis, epsilon, scale,
      zeroPoint, /*quant_gamma=*/Value(), /*quant_beta=*/Value());
  q->getResult(0).replaceAllUsesWith(fused.getQuantized());
  if (!scale)
    q->getResult(1).replaceAllUsesWith(fused.getRowScale());
  q->erase();
  ln->getResult(0).replaceAllUsesWith(fused.getResult());
  ln->erase();
  return true;
}

struct OctetFuseElementwisePass : octet::impl::OctetFuseElementwiseBase<OctetFuseElementwisePass> {
  using OctetFuseElementwiseBase::OctetFuseElementwiseBase;

  void runOnOperation() override {
    // The first qualifying quantize of each LayerNorm joins it (octet-quantize
    // shares one quantize per input anyway).
    SmallVector<std::pair<Operation *, Operation *>> pairs;
    DenseSet<Operation *> paired;
    getOperation().walk([&](Operation *q) {
      if (!layerNormQuantize || !isa<QuantizeOp, QuantizePerRowOp>(q))
        return;
      Operation *ln = layerNormProducer(q->getOperand(0));
      if (ln && ln->getBlock() == q->getBlock() && !paired.contains(ln) &&
          (isa<QuantizePerRowOp>(q) || oneElementConstant(q->getOperand(1))) &&
          paired.insert(ln).second)
        pairs.emplace_back(ln, q);
    });
    for (auto [ln, q] : pairs)
      if (fuseLayerNormQuantize(ln, q))
        ++numLayerNormQuantize;

    for (Block &block : getOperation().getBody()) {
      DenseSet<Operation *> taken;
      SmallVector<SmallVector<Operation *>> groups;
      for (Operation &op : llvm::reverse(block)) {
        if (taken.contains(&op) || !isF32Pointwise(&op))
          continue;
        SmallVector<Operation *> group = growGroup(&op, taken);
        taken.insert(group.begin(), group.end());
        // One op alone (gelu included, which has its own kernel) stays as it is.
        if (group.size() > 1)
          groups.push_back(std::move(group));
      }
      for (ArrayRef<Operation *> group : groups) {
        size_t size = group.size();
        if (fuseGroup(group)) {
          ++numGroups;
          numFusedOps += size;
        }
      }
    }
  }
};

} // namespace
