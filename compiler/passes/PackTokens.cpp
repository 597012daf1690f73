//===- PackTokens.cpp - octet-pack-tokens ---------------------------------===//
//
// Padding-free batches (docs/padding-free.md). The encoder's layers are
// token-wise — every GEMM, LayerNorm, GELU and quantize treats each
// [batch, seq] position as an independent row — except attention, which
// mixes the rows of one sequence under a key-padding mask. This pass finds
// that token-wise region around the attention ops and brackets it:
//
//   %layout = octet.token_layout %masks (%batch, %seq)   -- decided at run time
//   %p      = octet.pack_tokens %entry, %layout          -- for each value entering
//   ...       the region's ops, unchanged; each attention gets tokens(%layout)
//   %y      = octet.unpack_tokens %exit, %layout (%batch, %seq)  -- for each value leaving
//
// so that, when the run's masks say which tokens are padding, every step in
// between runs on the real tokens only, and attention per sequence over its
// own length. The region is a connected set of token-wise ops: each result
// is [batch, seq, static…] with the attention's batch and seq; every other
// operand is one that does not depend on the inputs (weights, scales) and
// broadcasts over batch and seq. The masks are computed outside it; their
// ops move before the region when they come later in the block.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/AttrNames.h"
#include "compiler/passes/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/IR/Dominance.h"
#include "llvm/ADT/TypeSwitch.h"

#include "llvm/ADT/SetVector.h"

namespace octet {
#define GEN_PASS_DEF_OCTETPACKTOKENS
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

class TokenRegion {
public:
  explicit TokenRegion(ValueDim batch, ValueDim seq) : batch_(batch), seq_(seq) {}

  /// [batch, seq, static dims…] with the attention's batch and seq.
  bool isTokenShaped(Value v) const {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || type.getRank() < 3 || !type.isDynamicDim(0) || !type.isDynamicDim(1))
      return false;
    for (int64_t d = 2; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        return false;
    return traceDimSource(v, 0) == batch_ && traceDimSource(v, 1) == seq_;
  }

  /// No function argument reaches `v`: the same value in every run.
  bool isInvariant(Value v) {
    if (isa<BlockArgument>(v))
      return false;
    auto it = invariant_.find(v);
    if (it != invariant_.end())
      return it->second;
    invariant_[v] = false; // provisional while its operands are visited
    Operation *op = v.getDefiningOp();
    bool result = llvm::all_of(op->getOperands(), [&](Value o) { return isInvariant(o); });
    invariant_[v] = result;
    return result;
  }

  /// An operand of a token-wise op that is not itself token-shaped: invariant,
  /// and broadcast over batch and seq of a result of rank `rank`.
  bool isBroadcastConstant(Value v, int64_t rank) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type || !isInvariant(v))
      return false;
    int64_t lead = rank - type.getRank(); // result dims the operand does not have
    for (int64_t d = 0; d < 2; ++d) {
      int64_t od = d - lead;
      if (od >= 0 && type.getDimSize(od) != 1)
        return false;
    }
    return true;
  }

  /// Every tensor operand token-shaped or a broadcast constant; every result token-shaped.
  bool rowsIndependent(Operation *op) {
    if (op->getNumResults() == 0)
      return false;
    for (Value r : op->getResults())
      if (!isTokenShaped(r))
        return false;
    int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
    bool anyToken = false;
    // A GEMM's weight multiplies each row by itself: any invariant shape.
    Value weight = TypeSwitch<Operation *, Value>(op)
                       .Case<LinearOp, FusedLinearOp, QLinearOp>([](auto o) { return o.getWeight(); })
                       .Default([](Operation *) { return Value(); });
    for (Value o : op->getOperands()) {
      if (!isa<RankedTensorType>(o.getType()))
        return false; // index operands: sizes tied to batch or seq
      if (isTokenShaped(o))
        anyToken = true;
      else if (o == weight ? !isInvariant(o) : !isBroadcastConstant(o, rank))
        return false;
    }
    return anyToken;
  }

  /// Why `op` is not token-wise ("" when it is): ops whose every row of the
  /// result depends on the same row of the operands only.
  std::string tokenWise(Operation *op) {
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (!attention.getMask())
        return "it has no mask (so no key is padding)";
      for (Value v : {attention.getQuery(), attention.getKey(), attention.getValue(),
                      attention.getResult()})
        if (!isTokenShaped(v))
          return "its query, key, value and result are not all [batch, seq, hidden] of the "
                 "same batch and seq";
      if (isTokenShaped(attention.getMask()))
        return "its mask has the shape of a token-wise value";
      return "";
    }
    auto lastAxis = [&](uint64_t axis) {
      return int64_t(axis) == cast<RankedTensorType>(op->getOperand(0).getType()).getRank() - 1;
    };
    bool known =
        TypeSwitch<Operation *, bool>(op)
            .Case<LinearOp, FusedLinearOp, QLinearOp, QuantizePerRowOp, GeluOp, FusedOp, CastOp,
                  AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp, PowOp, WhereOp, NegOp, AbsOp, ExpOp,
                  TanhOp, ErfOp, SqrtOp, RsqrtOp, ReciprocalOp, ReluOp, SigmoidOp>(
                [](Operation *) { return true; })
            .Case([&](LayerNormOp o) { return lastAxis(o.getAxis()); })
            .Case([&](AddLayerNormOp o) { return lastAxis(o.getAxis()); })
            .Case([&](LayerNormQuantizeOp o) { return lastAxis(o.getAxis()); })
            .Case<QuantizeOp, DequantizeOp>([](auto o) {
              auto scale = cast<RankedTensorType>(o.getScale().getType());
              return scale.getRank() == 0 || scale.getNumElements() == 1 ||
                     (o.getAxis() && *o.getAxis() >= 2);
            })
            .Case([&](SliceOp o) {
              return llvm::all_of(o.getAxes(), [](int64_t a) { return a >= 2; }) &&
                     o.getStarts().empty() && o.getEnds().empty() &&
                     llvm::all_of(o.getSteps(), [](int64_t s) { return s == 1; });
            })
            .Default([](Operation *) { return false; });
    if (!known)
      return "not a token-wise op";
    if (!rowsIndependent(op))
      return "its operands are not all token rows or constants broadcast over them";
    return "";
  }

private:
  ValueDim batch_, seq_;
  DenseMap<Value, bool> invariant_;
};

struct OctetPackTokensPass : octet::impl::OctetPackTokensBase<OctetPackTokensPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    SmallVector<AttentionOp> attentions;
    func.walk([&](AttentionOp a) { attentions.push_back(a); });
    if (attentions.empty())
      return; // not an encoder: nothing to say
    Operation *where = func;
    if (std::string why = pack(func, attentions, where); !why.empty()) {
      // The warning for octet-opt; the attribute for the fusion report.
      where->emitWarning() << "padding is not dropped at run time (octet-pack-tokens): " << why;
      if (where != func.getOperation())
        why = "at " + nodeNames({where}) + ": " + why;
      func->setAttr(octet::attr::kPaddingKept, StringAttr::get(func.getContext(), why));
    }
  }

  /// Rewrites `func`; "" on success, else why nothing was changed (and
  /// `where`, the op at fault, if one is).
  std::string pack(func::FuncOp func, MutableArrayRef<AttentionOp> attentions, Operation *&where) {
    Block &block = func.front();
    Value q = attentions.front().getQuery();
    auto qType = cast<RankedTensorType>(q.getType());
    if (!qType.isDynamicDim(0) || !qType.isDynamicDim(1))
      return "batch and sequence are static";
    TokenRegion region(traceDimSource(q, 0), traceDimSource(q, 1));

    // The region: token-wise ops connected to the attentions by token rows.
    llvm::SetVector<Operation *> ops;
    for (AttentionOp a : attentions) {
      if (std::string why = region.tokenWise(a); !why.empty()) {
        where = a;
        return "this attention: " + why;
      }
      ops.insert(a);
    }
    for (size_t i = 0; i < ops.size(); ++i) {
      Operation *op = ops[i];
      for (Value o : op->getOperands())
        if (Operation *producer = o.getDefiningOp();
            producer && region.isTokenShaped(o) && !ops.contains(producer) &&
            region.tokenWise(producer).empty())
          ops.insert(producer);
      for (Value r : op->getResults())
        for (Operation *user : r.getUsers())
          if (!ops.contains(user) && user->getBlock() == &block &&
              region.tokenWise(user).empty())
            ops.insert(user);
    }

    // The masks must not depend on the region (they are computed before it).
    llvm::SetVector<Value> masks;
    for (AttentionOp a : attentions)
      masks.insert(a.getMask());
    SetVector<Operation *> maskSlice;
    BackwardSliceOptions options;
    options.inclusive = true;
    for (Value mask : masks)
      if (Operation *producer = mask.getDefiningOp())
        (void)getBackwardSlice(producer, &maskSlice, options);
    for (Operation *op : maskSlice)
      if (ops.contains(op)) {
        where = op;
        return "an attention mask is computed from this op of the layers";
      }

    Operation *first = *llvm::min_element(
        ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    // Mask ops after the region's first op move before it, in their order.
    SmallVector<Operation *> late;
    for (Operation *op : maskSlice)
      if (op->getBlock() == &block && first->isBeforeInBlock(op))
        late.push_back(op);
    llvm::sort(late, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    for (Operation *op : late)
      op->moveBefore(first);

    OpBuilder builder(first);
    Location loc = func.getLoc();
    auto sizeOf = [&](ValueDim source) -> Value {
      if (source.dim < 0)
        return source.value;
      return DimOp::create(builder, loc, source.value, source.dim);
    };
    ValueDim batchSource = traceDimSource(q, 0), seqSource = traceDimSource(q, 1);
    DominanceInfo dominance(func);
    for (ValueDim s : {batchSource, seqSource})
      if (!dominance.properlyDominates(s.value, first) &&
          !(isa<BlockArgument>(s.value)))
        return "the batch or sequence size is computed after the first layer";
    Value batch = sizeOf(batchSource), seq = sizeOf(seqSource);
    Value layout = TokenLayoutOp::create(builder, loc, masks.getArrayRef(), batch, seq);

    // Values entering the region: packed once, before their first region user.
    llvm::SetVector<Value> entries;
    for (Operation *op : ops)
      for (Value o : op->getOperands())
        if (region.isTokenShaped(o) && !ops.contains(o.getDefiningOp()))
          entries.insert(o);
    for (Value entry : entries) {
      Operation *firstUser = nullptr;
      for (Operation *user : entry.getUsers())
        if (ops.contains(user) && (!firstUser || user->isBeforeInBlock(firstUser)))
          firstUser = user;
      builder.setInsertionPoint(firstUser);
      if (firstUser->isBeforeInBlock(layout.getDefiningOp()))
        builder.setInsertionPointAfter(layout.getDefiningOp());
      Value packed = PackTokensOp::create(builder, entry.getLoc(), entry.getType(), entry, layout);
      entry.replaceUsesWithIf(packed, [&](OpOperand &use) { return ops.contains(use.getOwner()); });
      ++numEntries;
    }
    // Values leaving it: unpacked once, after their op.
    for (Operation *op : ops)
      for (Value r : op->getResults()) {
        if (llvm::all_of(r.getUsers(), [&](Operation *u) { return ops.contains(u); }))
          continue;
        builder.setInsertionPointAfter(op);
        Value unpacked = UnpackTokensOp::create(builder, r.getLoc(), r, layout, batch, seq);
        r.replaceUsesWithIf(unpacked, [&](OpOperand &use) {
          return use.getOwner() != unpacked.getDefiningOp() && !ops.contains(use.getOwner());
        });
        ++numExits;
      }
    for (AttentionOp a : attentions)
      a.getTokenLayoutMutable().assign(layout);
    numRegionOps += ops.size();
    return "";
  }
};

} // namespace
