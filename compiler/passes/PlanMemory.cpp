//===- PlanMemory.cpp - octet-plan-memory ---------------------------------===//
//
// Gives every intermediate tensor of a function a slot in one activation
// arena. Sizes stay symbolic (a constant times named run-time dims), so the
// slot order is fixed here and the runtime only evaluates each slot's size
// and takes prefix sums, once per distinct input shape.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/AttrNames.h"
#include "compiler/passes/Passes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <string>

namespace octet {
#define GEN_PASS_DEF_OCTETPLANMEMORY
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// A buffer's byte size: `constant` times the product of the named run-time
/// dims, or unknown (a dim with no name, such as min(sequence, 512)).
struct SizeExpr {
  int64_t constant = 1;
  SmallVector<std::string> names; // sorted; a name may repeat (S·S)
  bool known = true;

  /// True if this size is at least `other` in every run: the same dims and a
  /// constant at least as large (every dim is ≥ 0).
  bool covers(const SizeExpr &other) const {
    return known && other.known && names == other.names && constant >= other.constant;
  }
  /// Canonical form: the constant, then the names, '*'-joined; "?" if unknown.
  std::string str() const {
    if (!known)
      return "?";
    std::string s = std::to_string(constant);
    for (const std::string &name : names)
      s += "*" + name;
    return s;
  }
};

/// The `octet.dim_params` name of a function argument's dim, or "".
StringRef dimName(ValueDim source) {
  auto arg = dyn_cast<BlockArgument>(source.value);
  if (!arg || source.dim < 0 || !arg.getOwner()->isEntryBlock())
    return {};
  auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  auto names = func ? func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), octet::attr::kDimParams)
                    : ArrayAttr();
  if (!names || source.dim >= static_cast<int64_t>(names.size()))
    return {};
  auto name = dyn_cast<StringAttr>(names[source.dim]);
  return name ? name.getValue() : StringRef();
}

SizeExpr sizeOf(Value v) {
  RankedTensorType type = tensorOf(v);
  Type element = type.getElementType();
  SizeExpr size;
  if (element.isIntOrFloat())
    size.constant = llvm::divideCeil(element.getIntOrFloatBitWidth(), 8);
  else if (element.isIndex())
    size.constant = 8;
  else
    size.known = false;
  for (auto [d, extent] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(extent)) {
      size.constant *= extent;
      continue;
    }
    ValueDim source = traceDimSource(v, d);
    // Packed rows (octet-pack-tokens): batch'·seq' ≤ batch·seq in every run,
    // and a packed value always has both, so the padded names bound its size.
    if (auto pack = source.value.getDefiningOp<PackTokensOp>(); pack && source.dim < 2)
      source = traceDimSource(pack.getInput(), source.dim);
    StringRef name = dimName(source);
    if (name.empty())
      size.known = false;
    size.names.push_back(name.str());
  }
  llvm::sort(size.names);
  return size;
}

/// True if `slice` keeps a window [start, end) with step 1 of the last axis
/// only, with static bounds inside a static last dim: each result row is then
/// a contiguous piece of an input row, so the result is the input's bytes at
/// an offset of `start` elements with the input's last dim as row stride.
bool isRowWindow(SliceOp slice) {
  ArrayRef<int64_t> axes = slice.getAxes();
  RankedTensorType input = slice.getInput().getType();
  int64_t last = input.getRank() - 1, width = input.getDimSize(last);
  if (axes.size() != 1 || axes[0] != last || slice.getSteps()[0] != 1 ||
      ShapedType::isDynamic(width))
    return false;
  int64_t start = slice.getStaticStarts()[0], end = slice.getStaticEnds()[0];
  return !ShapedType::isDynamic(start) && !ShapedType::isDynamic(end) && 0 <= start &&
         start < end && end <= width;
}

/// The operands whose buffer `op`'s result `index` may take in place, in order
/// of preference: the LayerNorm ops' y over x (or the residual). Their kernels
/// (LayerNormKernel, the C++ loop) read each element of a row before writing
/// it and read the sources in no later pass. Why it pays: x comes from the GEMM
/// before it, whose rows are in the cache of the core that computed them (the
/// LayerNorm splits rows as the GEMM does), while writing a slot last written
/// or read by another split (attention's heads) waits for the other core to
/// give each line up: a cause inferred from timings on Zen 4, where the
/// LayerNorms ran 7% faster so on one core complex, 15-30% on two
/// (bench/RESULTS.md, session 22).
SmallVector<Value, 2> inPlaceCandidates(Operation *op, unsigned index) {
  if (index != 0)
    return {};
  if (auto ln = dyn_cast<LayerNormOp>(op))
    return {ln.getInput()};
  if (auto aln = dyn_cast<AddLayerNormOp>(op))
    return {aln.getInput(), aln.getResidual()};
  if (auto lnq = dyn_cast<LayerNormQuantizeOp>(op)) {
    SmallVector<Value, 2> candidates = {lnq.getInput()};
    if (Value residual = lnq.getResidual())
      candidates.push_back(residual);
    return candidates;
  }
  return {};
}

struct OctetPlanMemoryPass : octet::impl::OctetPlanMemoryBase<OctetPlanMemoryPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitOpError("octet-plan-memory needs a function of one block");
      return signalPassFailure();
    }
    Block &block = func.front();
    DenseSet<Value> returned;
    if (auto ret = dyn_cast<func::ReturnOp>(block.getTerminator()))
      returned.insert(ret.getOperands().begin(), ret.getOperands().end());

    // Views read the bytes of another value (their root); `strided` ones
    // (slices) are not contiguous, so nothing views them in turn.
    DenseMap<Value, Value> rootOf;
    DenseSet<Value> strided;
    auto root = [&](Value v) { return rootOf.lookup_or(v, v); };
    SmallVector<Value> tensors; // op results in program order, views included
    for (Operation &op : block) {
      if (isa<ConstantOp>(op))
        continue;
      for (Value result : op.getResults())
        if (isa<RankedTensorType>(result.getType()))
          tensors.push_back(result);
      if (auto reshape = dyn_cast<ReshapeOp>(op)) {
        if (!strided.contains(reshape.getInput()))
          rootOf[reshape] = root(reshape.getInput());
      } else if (auto slice = dyn_cast<SliceOp>(op)) {
        // A returned slice is an output of its own shape, and a constant's
        // bytes may be repacked by octet-pack-weights: both are copies.
        Value input = slice.getInput();
        if (isRowWindow(slice) && !returned.contains(slice) && !strided.contains(input) &&
            !root(input).getDefiningOp<ConstantOp>()) {
          rootOf[slice] = root(input);
          strided.insert(slice);
        }
      }
    }

    // The caller owns the bytes of outputs, and of what a returned view reads.
    DenseSet<Value> callerOwned;
    for (Value v : returned)
      callerOwned.insert(root(v));
    auto isBuffer = [&](Value v) {
      return isa<OpResult>(v) && !v.getDefiningOp<ConstantOp>() && !rootOf.count(v) &&
             !callerOwned.contains(v);
    };

    // A buffer lives from its op to the last op that reads it or one of its
    // views (uses inside regions count for the op that holds the region).
    // An attention whose only user is an octet.quantize may be one step with
    // it (the plan builder's foldOutputQuantize writes the quantized output
    // while it reads Q, K and V), so its operands live until the quantize.
    DenseMap<Operation *, int64_t> position, readsUntil;
    for (auto [i, op] : llvm::enumerate(block))
      position[&op] = readsUntil[&op] = i;
    for (Operation &op : block)
      if (auto attention = dyn_cast<AttentionOp>(op); attention && attention->hasOneUse())
        if (Operation *user = *attention->getUsers().begin(); isa<QuantizeOp>(user))
          readsUntil[&op] = position[block.findAncestorOpInBlock(*user)];
    DenseMap<Value, int64_t> lastUse;
    for (Value v : tensors) {
      Value r = root(v);
      if (!isBuffer(r))
        continue;
      int64_t &end = lastUse.try_emplace(r, position[r.getDefiningOp()]).first->second;
      for (Operation *user : v.getUsers())
        end = std::max(end, readsUntil[block.findAncestorOpInBlock(*user)]);
    }

    // Greedy, in program order: an op's results take slots before the
    // buffers it reads for the last time are freed, so a result never shares
    // a slot with an operand (kernels do not work in place), except where
    // inPlaceCandidates allows it: then the result takes over the slot of an
    // operand read for the last time (contiguous, at least the result's size).
    // An unknown size gets a slot of its own that is never freed.
    SmallVector<SizeExpr> slots;
    SmallVector<bool> free;
    DenseMap<Value, int64_t> slotOf;
    SmallVector<SmallVector<int64_t>> freedAfter(position.size());
    auto takeOver = [&](Operation &op, int64_t i, Value v, const SizeExpr &size) {
      if (!size.known)
        return false;
      for (Value operand : inPlaceCandidates(&op, cast<OpResult>(v).getResultNumber())) {
        Value r = root(operand);
        auto slot = slotOf.find(r);
        if (strided.contains(operand) || slot == slotOf.end() || lastUse.lookup(r) != i ||
            !slots[slot->second].covers(size))
          continue;
        // The index, not the iterator: slotOf[v] below may grow the map.
        const int64_t taken = slot->second;
        auto freed = llvm::find(freedAfter[i], taken);
        if (freed == freedAfter[i].end())
          continue;
        freedAfter[i].erase(freed);
        slotOf[v] = taken;
        freedAfter[lastUse[v]].push_back(taken);
        return true;
      }
      return false;
    };
    for (auto [i, op] : llvm::enumerate(block)) {
      for (Value v : op.getResults()) {
        if (!lastUse.count(v))
          continue;
        SizeExpr size = sizeOf(v);
        if (takeOver(op, int64_t(i), v, size))
          continue;
        // The smallest free slot that covers the size (the same size if
        // there is one), the lowest such.
        int64_t best = -1;
        for (auto [s, slotSize] : llvm::enumerate(slots))
          if (free[s] && slotSize.covers(size) &&
              (best < 0 || slotSize.constant < slots[best].constant))
            best = s;
        if (best < 0) {
          best = slots.size();
          slots.push_back(size);
          free.push_back(false);
        }
        free[best] = false;
        slotOf[v] = best;
        if (size.known)
          freedAfter[lastUse[v]].push_back(best);
      }
      for (int64_t s : freedAfter[i])
        free[s] = true;
    }

    Builder b(&getContext());
    for (Operation &op : block) {
      op.removeAttr(octet::attr::kSlot);
      op.removeAttr(octet::attr::kSlots);
      auto slotsOf = llvm::map_to_vector(
          op.getResults(), [&](Value v) { return slotOf.lookup_or(v, -1); });
      if (llvm::all_of(slotsOf, [](int64_t s) { return s < 0; }))
        continue;
      if (slotsOf.size() == 1)
        op.setAttr(octet::attr::kSlot, b.getI64IntegerAttr(slotsOf.front()));
      else
        op.setAttr(octet::attr::kSlots, b.getDenseI64ArrayAttr(slotsOf));
    }
    func->setAttr(octet::attr::kArena,
                  b.getArrayAttr(llvm::map_to_vector(slots, [&](const SizeExpr &size) -> Attribute {
                    return b.getStringAttr(size.str());
                  })));
    numBuffers += slotOf.size();
    numSlots += slots.size();
  }
};

} // namespace
