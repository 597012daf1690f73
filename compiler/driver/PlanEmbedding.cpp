//===- PlanEmbedding.cpp - Plan builder: embedding sums as one step -------===//
//
// A BERT-family encoder starts with the sum of its embeddings: octet.fused
// additions of octet.gather rows of constant tables (word, token type,
// position), then, in a padding-free plan, octet.pack_tokens of the sum
// (docs/padding-free.md). Built op by op, the gathers write one [batch, seq,
// N] tensor each, the sum reads them back and the pack copies the real rows
// again. The builder folds them into one embedding_sum step
// (runtime/TokenSteps.cpp) that sums each token's table rows straight
// into its (packed) row, summing in the order the body adds, so the result is
// the same bits. Like foldOutputQuantize, a choice made where the steps are
// built: the IR (and the interpreter) keep the gathers, the sum and the pack.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;

namespace {

/// `v`'s gather when it is an embedding lookup used once: an octet.gather on
/// axis 0 of a constant f32 [rows, N] table with rank-2 integer indices.
octet::GatherOp embeddingGather(Value v, int64_t &width) {
  auto gather = v.getDefiningOp<octet::GatherOp>();
  if (!gather || gather.getAxis() != 0 || !v.hasOneUse() ||
      !gather.getData().getDefiningOp<octet::ConstantOp>())
    return nullptr;
  auto table = dyn_cast<RankedTensorType>(gather.getData().getType());
  auto ids = dyn_cast<RankedTensorType>(gather.getIndices().getType());
  if (!table || table.getRank() != 2 || !table.getElementType().isF32() ||
      table.isDynamicDim(1) || !ids || ids.getRank() != 2 ||
      !isa<IntegerType>(ids.getElementType()))
    return nullptr;
  if (width >= 0 && table.getDimSize(1) != width)
    return nullptr;
  width = table.getDimSize(1);
  return gather;
}

/// The order in which a fused op's body sums its block arguments, when the
/// body is a chain of arith.addf, each adding one more argument to the sum so
/// far (either side: f32 addition commutes exactly), every argument once.
std::optional<SmallVector<unsigned>> additionOrder(octet::FusedOp fused) {
  const unsigned count = fused.getInputs().size();
  Block &body = fused.getBody().front();
  auto yield = dyn_cast<octet::YieldOp>(body.getTerminator());
  if (count < 2 || !yield || yield->getNumOperands() != 1 ||
      std::distance(body.begin(), body.end()) != std::ptrdiff_t(count))
    return std::nullopt;
  auto argOf = [&](Value v) -> int {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == &body && arg.hasOneUse() ? int(arg.getArgNumber()) : -1;
  };
  // Back from the yield: each add takes the sum so far and one argument.
  SmallVector<unsigned> order;
  Value sum = yield->getOperand(0);
  while (auto add = sum.getDefiningOp<arith::AddFOp>()) {
    const int lhs = argOf(add.getLhs()), rhs = argOf(add.getRhs());
    if (lhs >= 0 && rhs >= 0 && order.size() + 2 == count) {
      order.push_back(unsigned(rhs)), order.push_back(unsigned(lhs));
      sum = Value();
      break;
    }
    if ((lhs >= 0) == (rhs >= 0))
      return std::nullopt;
    order.push_back(unsigned(lhs >= 0 ? lhs : rhs));
    sum = lhs >= 0 ? add.getRhs() : add.getLhs();
  }
  if (sum || order.size() != count)
    return std::nullopt;
  std::reverse(order.begin(), order.end()); // the first two added, then the rest
  SmallVector<bool> seen(count, false);
  for (unsigned i : order) {
    if (seen[i])
      return std::nullopt;
    seen[i] = true;
  }
  return order;
}

/// The gathers `sum` adds, in the order it adds them, when it is an embedding
/// sum of [batch, seq, N]: an octet.fused of additions (additionOrder) or an
/// octet.add of two embedding gathers; or, packed (`packed`), one embedding
/// gather alone.
std::optional<SmallVector<octet::GatherOp>> embeddingGathers(Operation *sum, bool packed) {
  auto resultType = dyn_cast<RankedTensorType>(sum->getResult(0).getType());
  if (sum->getNumResults() != 1 || !resultType || resultType.getRank() != 3)
    return std::nullopt;
  int64_t width = resultType.isDynamicDim(2) ? -1 : resultType.getDimSize(2);
  SmallVector<Value> operands;
  if (auto fused = dyn_cast<octet::FusedOp>(sum)) {
    std::optional<SmallVector<unsigned>> order = additionOrder(fused);
    if (!order)
      return std::nullopt;
    for (unsigned i : *order)
      operands.push_back(fused.getInputs()[i]);
  } else if (isa<octet::AddOp>(sum)) {
    operands = {sum->getOperand(0), sum->getOperand(1)};
  } else if (isa<octet::GatherOp>(sum) && packed) {
    operands = {sum->getResult(0)};
  } else {
    return std::nullopt;
  }
  SmallVector<octet::GatherOp> gathers;
  for (Value v : operands) {
    octet::GatherOp gather = embeddingGather(v, width);
    if (!gather)
      return std::nullopt;
    gathers.push_back(gather);
  }
  return gathers;
}

/// `sum`'s pack_tokens, where that is its only user.
octet::PackTokensOp packOf(Operation *sum) {
  if (!sum->hasOneUse())
    return nullptr;
  auto pack = dyn_cast<octet::PackTokensOp>(*sum->getUsers().begin());
  return pack && pack->getOperand(0) == sum->getResult(0) ? pack : nullptr;
}

} // namespace

bool PlanWalker::indicesOutliveStep(Value ids, Operation *gather, Operation *step) const {
  // The step reads the indices where `step` stands, later than the gather
  // did: an arena slot the memory planner handed on, after the gather, to an
  // op up to and including `step` would be overwritten under it.
  while (Operation *def = ids.getDefiningOp()) {
    if (isa<octet::ConstantOp>(def))
      return true;
    const int64_t slot = slotOf(def, cast<OpResult>(ids).getResultNumber());
    if (slot < 0 && isa<octet::ReshapeOp, octet::SliceOp, octet::ExpandOp, octet::TransposeOp>(def)) {
      ids = def->getOperand(0); // a view: what it views
      continue;
    }
    if (slot < 0)
      return true; // a buffer of its own
    for (Operation *op = gather->getNextNode(); op; op = op->getNextNode()) {
      for (unsigned r = 0; r < op->getNumResults(); ++r)
        if (slotOf(op, r) == slot)
          return false;
      if (op == step)
        break;
    }
    return true;
  }
  return true; // a function argument
}

void PlanWalker::findEmbeddingSums() {
  for (Operation &op : func_.front()) {
    if (!isa<octet::FusedOp, octet::AddOp, octet::GatherOp>(&op))
      continue;
    octet::PackTokensOp pack = packOf(&op);
    std::optional<SmallVector<octet::GatherOp>> gathers = embeddingGathers(&op, bool(pack));
    if (!gathers)
      continue;
    Operation *step = pack ? pack.getOperation() : &op;
    if (!llvm::all_of(*gathers, [&](octet::GatherOp g) {
          return indicesOutliveStep(g.getIndices(), g, step);
        }))
      continue;
    EmbeddingSumParts &parts = embeddingSums_[&op];
    parts.gathers = std::move(*gathers);
    parts.pack = pack;
    for (octet::GatherOp g : parts.gathers)
      foldedGathers_.insert(g);
  }
}

LogicalResult PlanWalker::visitFoldedGather(octet::GatherOp gather) {
  // The table and index tensors now, where the gather would have made them
  // (the blobs it uses last are released after it); its step is the sum's.
  FailureOr<TensorId> table = tensorFor(gather, gather.getData());
  FailureOr<TensorId> ids = tensorFor(gather, gather.getIndices());
  if (failed(table) || failed(ids))
    return failure();
  foldedOperands_[gather] = {*table, *ids};
  return success();
}

LogicalResult PlanWalker::buildEmbeddingSum(Operation *sum) {
  const EmbeddingSumParts &parts = embeddingSums_.find(sum)->second;
  rt::recipe::EmbeddingSum call;
  for (octet::GatherOp g : parts.gathers) {
    auto it = foldedOperands_.find(g);
    if (it == foldedOperands_.end())
      return sum->emitError() << "its embedding gathers were not visited first", failure();
    call.tables.push_back(it->second.first);
    call.indices.push_back(it->second.second);
  }
  // [batch, seq, N] from the operands (the gathers' results have no
  // tensors): each dim from the first indices that do not broadcast over it.
  std::vector<ScalarId> shape = {constant(1), constant(1),
                                 plan_->tensors[call.tables[0]].shape[1]};
  for (int d = 0; d < 2; ++d)
    for (TensorId ids : call.indices)
      if (!isConstant(plan_->tensors[ids].shape[d], 1)) {
        shape[d] = plan_->tensors[ids].shape[d];
        break;
      }
  Operation *op = sum;
  Value result = sum->getResult(0);
  call.layout = -1;
  if (octet::PackTokensOp pack = parts.pack) {
    auto dims = packedDims_.find(pack.getOperand(1));
    if (dims == packedDims_.end())
      return pack->emitError() << "its layout is not an octet.token_layout", failure();
    FailureOr<TensorId> layout = tensorFor(pack, pack.getOperand(1));
    if (failed(layout))
      return failure();
    call.layout = *layout;
    shape[0] = dims->second.first, shape[1] = dims->second.second;
    op = pack, result = pack->getResult(0);
  }
  FailureOr<TensorId> out = resultTensor(op, result, shape);
  if (failed(out))
    return failure();
  call.out = *out;
  return addStep(op, call, "embedding_sum");
}
