//===- PlanEmbedding.cpp - Plan builder: embedding sums as one step -------===//
//
// A BERT-family encoder starts with the sum of its embeddings: octet.fused
// additions of octet.gather rows of constant tables (word, token type,
// position), then, in a padding-free plan, octet.pack_tokens of the sum
// (docs/padding-free.md). Built op by op, the gathers write one [batch, seq,
// N] tensor each, the sum reads them back and the pack copies the real rows
// again. The builder folds them into one embedding_sum step
// (runtime/EmbeddingSumStep.cpp) that sums each token's table rows straight
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

/// The gathers `fused` adds, in the order its body sums them, when it is an
/// embedding sum: each operand an octet.gather on axis 0 of a constant f32
/// [rows, N] table with rank-2 integer indices, used by nothing else; the
/// body a chain of arith.addf, each adding one more block argument to the
/// sum so far, every argument used once; the result [batch, seq, N].
std::optional<SmallVector<octet::GatherOp>> embeddingGathers(octet::FusedOp fused) {
  const unsigned count = fused.getInputs().size();
  auto resultType = dyn_cast<RankedTensorType>(fused.getResult().getType());
  if (count < 2 || !resultType || resultType.getRank() != 3)
    return std::nullopt;
  Block &body = fused.getBody().front();
  auto yield = dyn_cast<octet::YieldOp>(body.getTerminator());
  if (!yield || yield->getNumOperands() != 1 ||
      std::distance(body.begin(), body.end()) != std::ptrdiff_t(count))
    return std::nullopt;
  // Walk the chain back from the yield: each add takes the sum so far and one
  // argument (either side: f32 addition commutes exactly).
  SmallVector<unsigned> order;
  Value sum = yield->getOperand(0);
  while (auto add = sum.getDefiningOp<arith::AddFOp>()) {
    auto argOf = [&](Value v) -> int {
      auto arg = dyn_cast<BlockArgument>(v);
      return arg && arg.getOwner() == &body ? int(arg.getArgNumber()) : -1;
    };
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
  SmallVector<octet::GatherOp> gathers;
  int64_t width = resultType.getDimSize(2);
  for (unsigned i : order) {
    if (seen[i] || !body.getArgument(i).hasOneUse())
      return std::nullopt;
    seen[i] = true;
    Value input = fused.getInputs()[i];
    auto gather = input.getDefiningOp<octet::GatherOp>();
    if (!gather || gather.getAxis() != 0 || !input.hasOneUse() ||
        !gather.getData().getDefiningOp<octet::ConstantOp>())
      return std::nullopt;
    auto table = dyn_cast<RankedTensorType>(gather.getData().getType());
    auto ids = dyn_cast<RankedTensorType>(gather.getIndices().getType());
    if (!table || table.getRank() != 2 || !table.getElementType().isF32() ||
        table.isDynamicDim(1) || !ids || ids.getRank() != 2 ||
        !isa<IntegerType>(ids.getElementType()))
      return std::nullopt;
    if (!ShapedType::isDynamic(width) && table.getDimSize(1) != width)
      return std::nullopt;
    width = table.getDimSize(1);
    gathers.push_back(gather);
  }
  return gathers;
}

/// The fused op's pack_tokens, where that is its only user.
octet::PackTokensOp packOf(octet::FusedOp fused) {
  if (!fused->hasOneUse())
    return nullptr;
  auto pack = dyn_cast<octet::PackTokensOp>(*fused->getUsers().begin());
  return pack && pack->getOperand(0) == fused.getResult() ? pack : nullptr;
}

} // namespace

bool PlanWalker::indicesOutliveStep(Value ids, int64_t outputSlot) const {
  // The step reads the indices while it writes its output: an arena slot the
  // memory planner handed on to the output once the gathers were done with
  // the indices would be overwritten under it.
  while (Operation *def = ids.getDefiningOp()) {
    if (isa<octet::ConstantOp>(def))
      return true;
    const int64_t slot = slotOf(def, cast<OpResult>(ids).getResultNumber());
    if (isa<octet::ReshapeOp, octet::SliceOp, octet::ExpandOp, octet::TransposeOp>(def) &&
        slot < 0) {
      ids = def->getOperand(0); // a view: what it views
      continue;
    }
    return slot >= 0 && slot != outputSlot;
  }
  return true; // a function argument
}

void PlanWalker::findEmbeddingSums() {
  for (Operation &op : func_.front()) {
    auto fused = dyn_cast<octet::FusedOp>(&op);
    if (!fused)
      continue;
    std::optional<SmallVector<octet::GatherOp>> gathers = embeddingGathers(fused);
    if (!gathers)
      continue;
    octet::PackTokensOp pack = packOf(fused);
    const int64_t outputSlot = pack ? slotOf(pack) : slotOf(fused);
    if (!llvm::all_of(*gathers, [&](octet::GatherOp g) {
          return indicesOutliveStep(g.getIndices(), outputSlot);
        }))
      continue;
    EmbeddingSumParts &parts = embeddingSums_[fused];
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

LogicalResult PlanWalker::buildEmbeddingSum(octet::FusedOp fused) {
  const EmbeddingSumParts &parts = embeddingSums_.find(fused)->second;
  rt::recipe::EmbeddingSum call;
  for (octet::GatherOp g : parts.gathers) {
    auto it = foldedOperands_.find(g);
    if (it == foldedOperands_.end())
      return fused->emitError() << "its embedding gathers were not visited first", failure();
    call.tables.push_back(it->second.first);
    call.indices.push_back(it->second.second);
  }
  // [batch, seq, N] from the operands (the gathers' results have no
  // tensors): the batch of indices that do not broadcast over it.
  std::vector<ScalarId> shape = {constant(1), plan_->tensors[call.indices[0]].shape[1],
                                 plan_->tensors[call.tables[0]].shape[1]};
  for (TensorId ids : call.indices)
    if (!isConstant(plan_->tensors[ids].shape[0], 1)) {
      shape[0] = plan_->tensors[ids].shape[0];
      break;
    }
  Operation *op = fused;
  Value result = fused.getResult();
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
