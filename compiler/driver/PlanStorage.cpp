//===- PlanStorage.cpp - Plan builder: storage, views, arena slots --------===//
//
// Where each tensor lives: function arguments are inputs, octet.constant data
// is copied into the Plan or its resource blob taken or borrowed
// (PlanConstants), reshape / slice / expand / transpose without an arena slot
// are views composed onto their base, and the rest live in the slot
// octet-plan-memory chose (or one of their own).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

TensorId PlanWalker::newTensor(std::string name, DType dtype, std::vector<ScalarId> shape,
                               Storage storage, int32_t index) {
  rt::TensorInfo info;
  info.name = std::move(name);
  info.dtype = dtype;
  info.shape = std::move(shape);
  info.storage = storage;
  info.index = index;
  plan_->tensors.push_back(std::move(info));
  return TensorId(plan_->tensors.size() - 1);
}

ScalarId PlanWalker::byteSize(TensorId t) {
  const rt::TensorInfo &info = plan_->tensors[t];
  std::vector<ScalarId> shape = info.shape;
  return arith(Scalar::Kind::Mul, product(shape), constant(int64_t(rt::dtypeBytes(info.dtype))));
}

void PlanWalker::assignSlot(TensorId t, int64_t slot) {
  if (slot >= int64_t(plan_->arenaSlots.size()))
    plan_->arenaSlots.resize(slot + 1, -1);
  plan_->tensors[t].storage = Storage::Arena;
  plan_->tensors[t].index = int32_t(slot);
  ScalarId bytes = byteSize(t);
  ScalarId &size = plan_->arenaSlots[slot];
  size = size < 0 ? bytes : arith(Scalar::Kind::MaxS, size, bytes);
}

bool PlanWalker::sharesArenaSlot(TensorId a, TensorId b) const {
  auto base = [&](TensorId t) -> const rt::TensorInfo & {
    const rt::TensorInfo &info = plan_->tensors[t];
    return info.storage == Storage::View ? plan_->tensors[info.index] : info;
  };
  const rt::TensorInfo &x = base(a), &y = base(b);
  return x.storage == Storage::Arena && y.storage == Storage::Arena && x.index == y.index;
}

TensorId PlanWalker::newArenaTensor(std::string name, DType dtype, std::vector<ScalarId> shape) {
  TensorId t = newTensor(std::move(name), dtype, std::move(shape), Storage::Arena, -1);
  assignSlot(t, int64_t(plan_->arenaSlots.size()));
  return t;
}

TensorId PlanWalker::makeView(std::string name, DType dtype, std::vector<ScalarId> shape,
                              TensorId base, ScalarId offset, std::vector<ScalarId> strides) {
  // Strides equal to the row-major ones are spelled "contiguous".
  if (!strides.empty() && strides == contiguousStrides(shape))
    strides.clear();
  TensorId t = newTensor(std::move(name), dtype, std::move(shape), Storage::View, base);
  plan_->tensors[t].viewOffset = offset;
  plan_->tensors[t].viewStrides = std::move(strides);
  return t;
}

PlanWalker::ViewParts PlanWalker::viewOf(TensorId t) {
  const rt::TensorInfo &info = plan_->tensors[t];
  std::vector<ScalarId> shape = info.shape;
  if (info.storage != Storage::View)
    return {t, constant(0), contiguousStrides(shape)};
  ViewParts parts{info.index, info.viewOffset, info.viewStrides};
  if (parts.strides.empty())
    parts.strides = contiguousStrides(shape);
  return parts;
}

FailureOr<TensorId> PlanWalker::ensureContiguous(Operation *op, TensorId t) {
  if (isContiguous(t))
    return t;
  rt::TensorInfo info = plan_->tensors[t];
  TensorId copy = newArenaTensor(info.name + ".contiguous", info.dtype, info.shape);
  if (failed(addStep(op, rt::recipe::Copy{t, copy}, "copy")))
    return failure();
  return copy;
}

FailureOr<TensorId> PlanWalker::ensureRowContiguous(Operation *op, TensorId t) {
  const rt::TensorInfo &info = plan_->tensors[t];
  if (isContiguous(t) || (!info.viewStrides.empty() && isConstant(info.viewStrides.back(), 1)))
    return t;
  return ensureContiguous(op, t);
}

int64_t PlanWalker::slotOf(Operation *op, unsigned resultIndex) const {
  if (auto slot = op->getAttrOfType<IntegerAttr>(octet::attr::kSlot))
    return slot.getInt();
  // An op with several results (octet.quantize_per_row): one slot each.
  if (auto slots = op->getAttrOfType<DenseI64ArrayAttr>(octet::attr::kSlots))
    if (resultIndex < slots.size())
      return slots[resultIndex];
  return -1;
}

FailureOr<const void *> PlanWalker::constantBytes(Operation *user, Value v) {
  if (const void *data = constantData_.lookup(v))
    return data;
  auto constantOp = v.getDefiningOp<octet::ConstantOp>();
  if (!constantOp)
    return user->emitError() << "operand is not an octet.constant (the FP32 runtime needs a "
                                "constant here)",
           failure();
  auto type = cast<RankedTensorType>(v.getType());
  std::optional<DType> dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return constantOp.emitError() << "constant element type " << type.getElementType()
                                  << " is not supported by the FP32 runtime",
           failure();
  size_t elementBytes = rt::dtypeBytes(*dtype), count = size_t(type.getNumElements());
  size_t bytes = elementBytes * count;
  std::vector<char> storage;
  std::string why;
  std::optional<ArrayRef<char>> data = octet::constantBytes(constantOp.getValue(), storage, &why);
  if (!data)
    return constantOp.emitError() << why, failure();
  if (AsmResourceBlob *blob = octet::resourceBlob(constantOp.getValue()))
    if (const void *shared = shareBlob(*blob, elementBytes)) {
      plan_->constants.push_back({shared, bytes});
      constantData_[v] = shared;
      return shared;
    }
  std::shared_ptr<void> memory = allocateAligned(bytes);
  if (!memory)
    return constantOp.emitError() << "cannot allocate " << bytes << " bytes for the constant";
  std::memcpy(memory.get(), data->data(), bytes);
  plan_->keepAlive.push_back(memory);
  plan_->constants.push_back({memory.get(), bytes});
  constantData_[v] = memory.get();
  return static_cast<const void *>(memory.get());
}

FailureOr<const void *> PlanWalker::transientConstantBytes(Operation *user, Value v) {
  if (const void *data = constantData_.lookup(v))
    return data;
  auto constantOp = v.getDefiningOp<octet::ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(v.getType());
  std::optional<DType> dtype = type ? dtypeOf(type.getElementType()) : std::nullopt;
  if (constantOp && dtype)
    if (AsmResourceBlob *blob = octet::resourceBlob(constantOp.getValue())) {
      ArrayRef<char> data = blob->getData();
      if (data.size() == rt::dtypeBytes(*dtype) * size_t(type.getNumElements()) &&
          reinterpret_cast<uintptr_t>(data.data()) % rt::dtypeBytes(*dtype) == 0) {
        // Read while steps are built (they pack or copy it); an AOT image
        // is written before the module goes (Plan::constants).
        plan_->constants.push_back({data.data(), data.size()});
        return static_cast<const void *>(data.data());
      }
    }
  return constantBytes(user, v);
}

const void *PlanWalker::shareBlob(AsmResourceBlob &blob, size_t elementBytes) {
  // Small constants are copied: they cost little, and the copy is 64-byte
  // aligned. A large one is read with unaligned loads, so its element's
  // alignment is enough (the importer's blobs are protobuf's buffers).
  constexpr size_t kShareMinBytes = 64 * 1024;
  ArrayRef<char> data = blob.getData();
  if (data.size() < kShareMinBytes ||
      reinterpret_cast<uintptr_t>(data.data()) % elementBytes != 0 ||
      !sharedBlobs_.insert(data.data()).second)
    return nullptr;
  if (constantsMode_ != octet::PlanConstants::Borrow) {
    // The Plan takes the blob's buffer (and its deleter); the module keeps a
    // view of it for the ops still to be built, as long as the Plan lives.
    auto owner = std::make_shared<AsmResourceBlob>(std::move(blob));
    blob = UnmanagedAsmResourceBlob::allocateWithAlign(owner->getData(), owner->getDataAlignment());
    plan_->keepAlive.push_back(std::shared_ptr<const void>(owner, owner->getData().data()));
  }
  return data.data();
}

/// The blob entry of a resource constant, or null.
static DialectResourceBlobManager::BlobEntry *blobEntryOf(Value v) {
  auto constantOp = v.getDefiningOp<octet::ConstantOp>();
  auto resource = constantOp ? dyn_cast<DenseResourceElementsAttr>(constantOp.getValue())
                             : DenseResourceElementsAttr();
  return resource ? resource.getRawHandle().getResource() : nullptr;
}

void PlanWalker::countBlobUses() {
  func_.walk([&](octet::ConstantOp constantOp) {
    if (auto *entry = blobEntryOf(constantOp.getResult()))
      pendingBlobUses_[entry] += std::distance(constantOp->use_begin(), constantOp->use_end());
  });
}

void PlanWalker::releaseUsedBlobs(Operation *op) {
  // Uses inside regions, or by the return (whose outputs are bound after the
  // walk), are never counted down: their blobs stay.
  if (constantsMode_ != octet::PlanConstants::Take || op->hasTrait<OpTrait::IsTerminator>())
    return;
  for (Value operand : op->getOperands()) {
    auto *entry = blobEntryOf(operand);
    auto pending = entry ? pendingBlobUses_.find(entry) : pendingBlobUses_.end();
    if (pending == pendingBlobUses_.end() || --pending->second > 0)
      continue;
    AsmResourceBlob *blob = entry->getBlob();
    if (!blob)
      continue;
    // A blob the Plan took is only a view here; any other (a weight that
    // steps packed) is freed now, and the ranges that pointed into it go.
    const void *data = blob->getData().data();
    if (!sharedBlobs_.contains(data))
      llvm::erase_if(plan_->constants,
                     [&](const rt::ConstantRange &range) { return range.data == data; });
    entry->setBlob(AsmResourceBlob());
  }
}

FailureOr<TensorId> PlanWalker::tensorFor(Operation *op, Value v) {
  auto it = tensors_.find(v);
  if (it != tensors_.end())
    return it->second;
  auto constantOp = v.getDefiningOp<octet::ConstantOp>();
  if (!constantOp)
    return op->emitError() << "operand has no tensor in the plan (an op the plan builder skipped)",
           failure();
  FailureOr<const void *> data = constantBytes(op, v);
  if (failed(data))
    return failure();
  auto type = cast<RankedTensorType>(v.getType());
  std::vector<ScalarId> shape;
  for (int64_t d : type.getShape())
    shape.push_back(constant(d));
  std::string name = joinNodeNames(constantOp.getLoc(), "+");
  if (StringRef key = octet::resourceKey(constantOp.getValue()); !key.empty())
    name = key.str();
  TensorId t = newTensor(name.empty() ? "constant" : name, *dtypeOf(type.getElementType()), shape,
                         Storage::Constant, -1);
  plan_->tensors[t].constant = *data;
  tensors_[v] = t;
  return t;
}

/// The tensor an op writes: the output it is returned as first, its arena
/// slot, or a slot of its own (values plan-memory left out).
FailureOr<TensorId> PlanWalker::resultTensor(Operation *op, Value result,
                                             std::vector<ScalarId> shape) {
  auto type = cast<RankedTensorType>(result.getType());
  std::optional<DType> dtype = dtypeOf(type.getElementType());
  if (!dtype)
    return op->emitError() << "element type " << type.getElementType()
                           << " is not supported by the FP32 runtime",
           failure();
  std::string name = joinNodeNames(op->getLoc(), "+");
  if (name.empty())
    name = op->getName().getStringRef().str();
  TensorId t;
  auto ret = firstReturn_.find(result);
  if (ret != firstReturn_.end() && !outputTaken_[ret->second]) {
    outputTaken_[ret->second] = true;
    t = newTensor(name, *dtype, std::move(shape), Storage::Output, int32_t(ret->second));
  } else {
    t = newTensor(name, *dtype, std::move(shape), Storage::Arena, -1);
    int64_t slot = slotOf(op, cast<OpResult>(result).getResultNumber());
    assignSlot(t, slot >= 0 ? slot : int64_t(plan_->arenaSlots.size()));
  }
  tensors_[result] = t;
  return t;
}

FailureOr<TensorId> PlanWalker::shapedResultTensor(Operation *op, Value result) {
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
  if (failed(shape))
    return failure();
  return resultTensor(op, result, *shape);
}

FailureOr<std::vector<TensorId>> PlanWalker::tensorOperands(Operation *op) {
  std::vector<TensorId> tensors;
  for (Value operand : op->getOperands()) {
    if (!isa<RankedTensorType>(operand.getType()))
      continue;
    FailureOr<TensorId> t = tensorFor(op, operand);
    if (failed(t))
      return failure();
    tensors.push_back(*t);
  }
  return tensors;
}

LogicalResult PlanWalker::visitViewOp(Operation *op) {
  using K = Scalar::Kind;
  using P = Scalar::Predicate;
  Value result = op->getResult(0);
  FailureOr<TensorId> input = tensorFor(op, op->getOperand(0));
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
  if (failed(input) || failed(shape))
    return failure();
  rt::TensorInfo in = plan_->tensors[*input];
  std::string name = joinNodeNames(op->getLoc(), "+");
  if (name.empty())
    name = op->getName().getStringRef().str();
  int64_t slot = slotOf(op);
  bool returned = firstReturn_.count(result) && !outputTaken_[firstReturn_.lookup(result)];

  if (isa<octet::ReshapeOp>(op)) {
    TensorId source = *input;
    if (!isContiguous(source)) {
      // Copy the strided input into the reshape's buffer, then view it.
      TensorId copy = newTensor(name + ".contiguous", in.dtype, in.shape, Storage::Arena, -1);
      assignSlot(copy, slot >= 0 ? slot : int64_t(plan_->arenaSlots.size()));
      if (failed(addStep(op, rt::recipe::Copy{source, copy}, "copy")))
        return failure();
      source = copy;
    }
    ViewParts parts = viewOf(source);
    TensorId view = makeView(name, in.dtype, *shape, parts.base, parts.offset, {});
    tensors_[result] = view;
    return success();
  }

  ViewParts parts = viewOf(*input);
  std::vector<ScalarId> strides;
  ScalarId offset = parts.offset;
  if (auto transpose = dyn_cast<octet::TransposeOp>(op)) {
    for (int64_t p : transpose.getPermutation())
      strides.push_back(parts.strides.at(p));
  } else if (auto slice = dyn_cast<octet::SliceOp>(op)) {
    strides = parts.strides;
    FailureOr<std::vector<SliceAxis>> axes = sliceAxes(slice, *input);
    if (failed(axes))
      return failure();
    for (const SliceAxis &axis : *axes) {
      offset = arith(K::Add, offset, arith(K::Mul, axis.start, strides[axis.axis]));
      strides[axis.axis] = arith(K::Mul, strides[axis.axis], constant(axis.step));
    }
  } else if (isa<octet::ExpandOp>(op)) {
    int64_t rank = int64_t(shape->size()), inRank = int64_t(in.shape.size());
    for (int64_t d = 0; d < rank; ++d) {
      int64_t id = d - (rank - inRank);
      if (id < 0) {
        strides.push_back(constant(0));
        continue;
      }
      ScalarId inDim = in.shape[id], outDim = (*shape)[d];
      if (inDim == outDim) {
        strides.push_back(parts.strides[id]);
        continue;
      }
      // The input dim must be 1 (stretched: stride 0) or the target size.
      arith(K::Broadcast, inDim, outDim, name + ": expand dim " + std::to_string(d));
      strides.push_back(select(cmp(P::Eq, inDim, constant(1)), constant(0), parts.strides[id]));
    }
  } else {
    return op->emitError() << "not a view op", failure();
  }
  TensorId view = makeView(name, in.dtype, *shape, parts.base, offset, strides);
  if (slot < 0 && !returned) {
    tensors_[result] = view;
    return success();
  }
  // plan-memory gave it a buffer (or it is an output): materialize the view.
  FailureOr<TensorId> out = resultTensor(op, result, *shape);
  if (failed(out))
    return failure();
  return addStep(op, rt::recipe::Copy{view, *out}, "copy");
}
