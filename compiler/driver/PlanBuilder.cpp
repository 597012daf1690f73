//===- PlanBuilder.cpp - octet IR after the pipeline to a Plan -----------===//
//
// One walk over the function's block, in program order:
//  - index values (octet.dim, arith on index) become Plan scalars, folded and
//    deduplicated at build time where their operands are constants;
//  - every tensor value gets a TensorInfo whose dims are scalars: static dims
//    are constants, dynamic ones come from the op's shape rule (or from the
//    dim's traced source, which is provably the same size);
//  - storage: function args are inputs, returned values outputs, octet.constant
//    constants (large resource blobs taken from the module or borrowed,
//    PlanConstants; the rest copied into the Plan), reshape/slice/expand/
//    transpose without a slot are views composed onto their base, and the rest
//    live in the arena slot octet-plan-memory chose (or one of their own);
//  - each op becomes a step (runtime/Steps.h), with copies in front of the
//    steps that need contiguous operands.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanBuilder.h"

#include "compiler/ir/AttrNames.h"
#include "compiler/ir/ConstantData.h"
#include "compiler/ir/ElementwiseOps.h"
#include "compiler/ir/Locations.h"
#include "compiler/ir/OctetOps.h"
#include "runtime/StepRecipe.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>

using namespace mlir;
using octet::rt::DType;
using octet::rt::Scalar;
using octet::rt::ScalarId;
using octet::rt::Storage;
using octet::rt::TensorId;
namespace rt = octet::rt;
using octet::joinNodeNames;

namespace {

/// A GEMM extra with one f32 value per output column, the same for every row:
/// static [.., N] with every other dim 1 (the kernels load it like the bias).
bool isPerColumnVector(Type type, int64_t n) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked || !ranked.hasStaticShape() || ranked.getRank() < 1 ||
      !ranked.getElementType().isF32() || ranked.getShape().back() != n)
    return false;
  return llvm::all_of(ranked.getShape().drop_back(), [](int64_t d) { return d == 1; });
}

std::optional<DType> dtypeOf(Type element) {
  if (element.isF32())
    return DType::F32;
  if (element.isF64())
    return DType::F64;
  if (element.isF16())
    return DType::F16;
  if (element.isInteger(1))
    return DType::Bool;
  if (element.isUnsignedInteger(16)) // before isInteger(n), which takes any signedness
    return DType::U16;
  if (element.isUnsignedInteger(32))
    return DType::U32;
  if (element.isUnsignedInteger(64))
    return DType::U64;
  if (element.isInteger(16))
    return DType::I16;
  if (element.isInteger(64) || element.isIndex())
    return DType::I64;
  if (element.isInteger(32))
    return DType::I32;
  if (element.isUnsignedInteger(8))
    return DType::U8;
  if (element.isInteger(8))
    return DType::I8;
  return std::nullopt;
}

/// Bytes the Plan owns, 64-byte aligned (weights are read with aligned loads).
std::shared_ptr<void> allocateAligned(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *memory = std::aligned_alloc(64, rounded);
  if (!memory)
    return nullptr;
  std::memset(memory, 0, rounded);
  return std::shared_ptr<void>(memory, [](void *p) { std::free(p); });
}

class PlanWalker {
public:
  PlanWalker(func::FuncOp func, const rt::KernelOptions &options, octet::PlanConstants constants)
      : func_(func), options_(options), constantsMode_(constants),
        plan_(std::make_unique<rt::Plan>()) {}

  FailureOr<std::unique_ptr<rt::Plan>> build();

private:
  // ---- scalars ----
  ScalarId addScalar(Scalar scalar);
  ScalarId constant(int64_t value) {
    Scalar s;
    s.kind = Scalar::Kind::Constant;
    s.value = value;
    return addScalar(s);
  }
  ScalarId arith(Scalar::Kind kind, ScalarId a, ScalarId b, std::string what = "");
  ScalarId cmp(Scalar::Predicate predicate, ScalarId a, ScalarId b);
  ScalarId select(ScalarId condition, ScalarId a, ScalarId b);
  std::optional<int64_t> constantOf(ScalarId id) const {
    const Scalar &s = plan_->scalars[id];
    if (s.kind == Scalar::Kind::Constant)
      return s.value;
    return std::nullopt;
  }
  bool isConstant(ScalarId id, int64_t value) const { return constantOf(id) == value; }
  ScalarId product(ArrayRef<ScalarId> dims);
  std::vector<ScalarId> contiguousStrides(ArrayRef<ScalarId> shape);

  // ---- tensors ----
  TensorId newTensor(std::string name, DType dtype, std::vector<ScalarId> shape, Storage storage,
                     int32_t index);
  ScalarId byteSize(TensorId t);
  void assignSlot(TensorId t, int64_t slot);
  TensorId newArenaTensor(std::string name, DType dtype, std::vector<ScalarId> shape);
  TensorId makeView(std::string name, DType dtype, std::vector<ScalarId> shape, TensorId base,
                    ScalarId offset, std::vector<ScalarId> strides);
  struct ViewParts {
    TensorId base;
    ScalarId offset;
    std::vector<ScalarId> strides;
  };
  ViewParts viewOf(TensorId t);
  bool isContiguous(TensorId t) const {
    const rt::TensorInfo &info = plan_->tensors[t];
    return info.storage != Storage::View || info.viewStrides.empty();
  }
  FailureOr<TensorId> ensureContiguous(Operation *op, TensorId t);
  FailureOr<TensorId> ensureRowContiguous(Operation *op, TensorId t);
  FailureOr<TensorId> tensorFor(Operation *op, Value v);
  /// The tensors of op's ranked-tensor operands, in order (index operands skipped).
  FailureOr<std::vector<TensorId>> tensorOperands(Operation *op);
  FailureOr<const void *> constantBytes(Operation *user, Value v);
  /// A constant's bytes valid only while the Plan is built (the MLIR blob itself when it
  /// is an aligned resource): for data a step copies at build time, e.g. GEMM weights.
  FailureOr<const void *> transientConstantBytes(Operation *user, Value v);
  /// A constant's blob bytes without a copy (taken or borrowed, as
  /// constantsMode_ says), or null where they must be copied.
  const void *shareBlob(AsmResourceBlob &blob, size_t elementBytes);
  /// Take: counts the uses of each blob's constants (releaseUsedBlobs' start).
  void countBlobUses();
  /// Take: after `op` is built, releases the module's blobs it used last.
  void releaseUsedBlobs(Operation *op);
  FailureOr<TensorId> resultTensor(Operation *op, Value result, std::vector<ScalarId> shape);
  /// The arena slot octet-plan-memory gave result `resultIndex` of `op` (-1: none).
  int64_t slotOf(Operation *op, unsigned resultIndex = 0) const;

  // ---- shapes ----
  FailureOr<std::vector<ScalarId>> resultShape(Operation *op, Value result);
  std::vector<ScalarId> broadcastShape(ArrayRef<TensorId> operands, int64_t rank,
                                       const std::string &where);
  struct SliceAxis {
    int64_t axis;
    ScalarId start, length;
    int64_t step;
  };
  FailureOr<std::vector<SliceAxis>> sliceAxes(octet::SliceOp slice, TensorId input);
  ScalarId scalarFor(Value v) { return scalars_.lookup(v); }

  // ---- ops ----
  LogicalResult visit(Operation *op);
  LogicalResult visitIndexOp(Operation *op);
  LogicalResult visitViewOp(Operation *op);
  LogicalResult visitLinear(Operation *op);
  LogicalResult visitLayerNorm(Operation *op);
  LogicalResult visitQuant(Operation *op);
  LogicalResult visitQLinear(octet::QLinearOp op);
  LogicalResult visitQuantizePerRow(octet::QuantizePerRowOp op);
  /// octet.token_layout, pack_tokens and unpack_tokens (docs/padding-free.md).
  LogicalResult visitTokenOp(Operation *op);
  /// Builds the step with rt::buildStep (so it keeps its recipe, for AOT).
  LogicalResult addStep(Operation *op, const rt::StepRecipe::Call &call, const std::string &kind);
  LogicalResult finishOutputs();
  LogicalResult setUpInputs();

  func::FuncOp func_;
  const rt::KernelOptions &options_;
  const octet::PlanConstants constantsMode_;
  std::unique_ptr<rt::Plan> plan_;
  /// Blob bytes shareBlob gave out: a second constant on the same blob (a
  /// reshaped view) gets a copy, so each constant stays its own range.
  llvm::DenseSet<const void *> sharedBlobs_;
  /// Take: uses of each blob's constants whose ops are not built yet.
  DenseMap<DialectResourceBlobManager::BlobEntry *, int64_t> pendingBlobUses_;
  std::map<
      std::tuple<int, int64_t, int32_t, int32_t, ScalarId, ScalarId, ScalarId, int, std::string>,
      ScalarId>
      scalarIndex_;
  DenseMap<Value, ScalarId> scalars_;
  DenseMap<Value, TensorId> tensors_;
  DenseMap<Value, const void *> constantData_;
  DenseMap<Value, int64_t> firstReturn_;
  /// Per token layout: the PackedDim scalars of its packed batch and seq.
  DenseMap<Value, std::pair<ScalarId, ScalarId>> packedDims_;
  std::vector<bool> outputTaken_;
};

// ---- scalars -----------------------------------------------------------------

ScalarId PlanWalker::addScalar(Scalar s) {
  auto key = std::make_tuple(int(s.kind), s.value, s.input, s.dim, s.a, s.b, s.c, int(s.predicate),
                             s.what);
  auto it = scalarIndex_.find(key);
  if (it != scalarIndex_.end())
    return it->second;
  ScalarId id = ScalarId(plan_->scalars.size());
  plan_->scalars.push_back(std::move(s));
  scalarIndex_.emplace(key, id);
  return id;
}

ScalarId PlanWalker::arith(Scalar::Kind kind, ScalarId a, ScalarId b, std::string what) {
  using K = Scalar::Kind;
  std::optional<int64_t> x = constantOf(a), y = constantOf(b);
  // Identities first (they hold for unknown operands too), then constant
  // folding with the runtime's own semantics (compiler/codegen/ScalarArithmetic.h);
  // never a division by zero or an overflow: those stay for the run to report.
  switch (kind) {
  case K::Add:
    if (x == 0)
      return b;
    if (y == 0)
      return a;
    break;
  case K::Sub:
    if (y == 0)
      return a;
    break;
  case K::Mul:
    if (x == 1)
      return b;
    if (y == 1)
      return a;
    if (x == 0 || y == 0)
      return constant(0);
    break;
  case K::DivS:
  case K::FloorDivS:
  case K::CeilDivS:
    if (y == 1)
      return a;
    break;
  case K::MinS:
  case K::MaxS:
    if (a == b)
      return a;
    break;
  case K::Broadcast:
    if (a == b || y == 1)
      return a;
    if (x == 1)
      return b;
    break;
  case K::Equal:
    if (a == b || (x && y && *x == *y))
      return a;
    break;
  default:
    break;
  }
  if (std::optional<octet::IntBinaryOp> op = rt::intBinaryOpOf(kind); op && x && y) {
    int64_t r;
    if (octet::applyIntBinary(*op, *x, *y, r) == octet::ArithStatus::Ok)
      return constant(r);
  }
  Scalar s;
  s.kind = kind;
  s.a = a;
  s.b = b;
  if (kind == K::Broadcast || kind == K::Equal || kind == K::DivS || kind == K::FloorDivS ||
      kind == K::CeilDivS || kind == K::RemS)
    s.what = std::move(what);
  return addScalar(s);
}

ScalarId PlanWalker::cmp(Scalar::Predicate predicate, ScalarId a, ScalarId b) {
  std::optional<int64_t> x = constantOf(a), y = constantOf(b);
  if (x && y)
    return constant(octet::compareInt(rt::intPredicateOf(predicate), *x, *y));
  Scalar s;
  s.kind = Scalar::Kind::Cmp;
  s.predicate = predicate;
  s.a = a;
  s.b = b;
  return addScalar(s);
}

ScalarId PlanWalker::select(ScalarId condition, ScalarId a, ScalarId b) {
  if (std::optional<int64_t> c = constantOf(condition))
    return *c ? a : b;
  if (a == b)
    return a;
  Scalar s;
  s.kind = Scalar::Kind::Select;
  s.a = condition;
  s.b = a;
  s.c = b;
  return addScalar(s);
}

ScalarId PlanWalker::product(ArrayRef<ScalarId> dims) {
  ScalarId result = constant(1);
  for (ScalarId d : dims)
    result = arith(Scalar::Kind::Mul, result, d);
  return result;
}

std::vector<ScalarId> PlanWalker::contiguousStrides(ArrayRef<ScalarId> shape) {
  std::vector<ScalarId> strides(shape.size());
  ScalarId stride = constant(1);
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride = arith(Scalar::Kind::Mul, stride, shape[i]);
  }
  return strides;
}

// ---- tensors -----------------------------------------------------------------

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

// ---- shapes ------------------------------------------------------------------

std::vector<ScalarId> PlanWalker::broadcastShape(ArrayRef<TensorId> operands, int64_t rank,
                                                 const std::string &where) {
  std::vector<ScalarId> shape(rank);
  for (int64_t d = 0; d < rank; ++d) {
    ScalarId dim = -1;
    for (TensorId t : operands) {
      const std::vector<ScalarId> &s = plan_->tensors[t].shape;
      int64_t od = d - (rank - int64_t(s.size()));
      if (od < 0 || isConstant(s[od], 1))
        continue;
      dim = dim < 0 ? s[od]
                    : arith(Scalar::Kind::Broadcast, dim, s[od],
                            where + ": dim " + std::to_string(d) + " of the operands");
    }
    shape[d] = dim < 0 ? constant(1) : dim;
  }
  return shape;
}

FailureOr<std::vector<PlanWalker::SliceAxis>> PlanWalker::sliceAxes(octet::SliceOp slice,
                                                                    TensorId input) {
  std::vector<SliceAxis> axes;
  const std::vector<ScalarId> shape = plan_->tensors[input].shape;
  auto starts = slice.getStarts(), ends = slice.getEnds();
  size_t nextStart = 0, nextEnd = 0;
  using K = Scalar::Kind;
  using P = Scalar::Predicate;
  for (auto [axis, staticStart, staticEnd, step] : llvm::zip_equal(
           slice.getAxes(), slice.getStaticStarts(), slice.getStaticEnds(), slice.getSteps())) {
    if (axis >= int64_t(shape.size()) || step == 0)
      return slice.emitError() << "slice axis " << axis << " or step " << step
                               << " is out of range",
             failure();
    ScalarId n = shape[axis];
    ScalarId s =
        ShapedType::isDynamic(staticStart) ? scalarFor(starts[nextStart++]) : constant(staticStart);
    ScalarId e =
        ShapedType::isDynamic(staticEnd) ? scalarFor(ends[nextEnd++]) : constant(staticEnd);
    // ONNX: a negative bound counts from the end, then bounds clamp to the axis.
    auto normalize = [&](ScalarId bound) {
      if (std::optional<int64_t> c = constantOf(bound))
        return *c >= 0 ? bound : arith(K::Add, bound, n);
      return select(cmp(P::Lt, bound, constant(0)), arith(K::Add, bound, n), bound);
    };
    ScalarId start = normalize(s), end = normalize(e), length;
    if (step > 0) {
      start = arith(K::MinS, arith(K::MaxS, start, constant(0)), n);
      end = arith(K::MinS, arith(K::MaxS, end, constant(0)), n);
      length = arith(K::MaxS, arith(K::CeilDivS, arith(K::Sub, end, start), constant(step)),
                     constant(0));
    } else {
      ScalarId last = arith(K::Sub, n, constant(1));
      start = arith(K::MinS, arith(K::MaxS, start, constant(0)), last);
      end = arith(K::MinS, arith(K::MaxS, end, constant(-1)), last);
      length = arith(K::MaxS, arith(K::CeilDivS, arith(K::Sub, start, end), constant(-step)),
                     constant(0));
    }
    axes.push_back({axis, start, length, step});
  }
  return axes;
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

FailureOr<std::vector<ScalarId>> PlanWalker::resultShape(Operation *op, Value result) {
  using K = Scalar::Kind;
  auto type = cast<RankedTensorType>(result.getType());
  int64_t rank = type.getRank();
  // An f32 linear's shape is its input's: its weight, which the step packs or
  // reorders, gets no tensor (the Plan would keep an unused copy).
  FailureOr<std::vector<TensorId>> operandsOr = failure();
  if (isa<octet::LinearOp, octet::FusedLinearOp>(op)) {
    if (FailureOr<TensorId> input = tensorFor(op, op->getOperand(0)); succeeded(input))
      operandsOr = std::vector<TensorId>{*input};
  } else {
    operandsOr = tensorOperands(op);
  }
  if (failed(operandsOr))
    return failure();
  const std::vector<TensorId> &operands = *operandsOr;
  auto shapeOf = [&](size_t i) { return plan_->tensors[operands.at(i)].shape; };
  std::vector<ScalarId> rule;
  StringRef name = op->getName().getStringRef();
  bool broadcasting = isa<octet::AddOp, octet::SubOp, octet::MulOp, octet::DivOp, octet::PowOp,
                          octet::MaxOp, octet::MinOp, octet::EqualOp, octet::LessOp,
                          octet::GreaterOp, octet::AndOp, octet::OrOp, octet::XorOp,
                          octet::ModOp, octet::WhereOp, octet::FusedOp>(op);
  if (broadcasting) {
    std::string where = joinNodeNames(op->getLoc(), "+");
    rule =
        broadcastShape(operands, rank, (where.empty() ? "" : where + " ") + "(" + name.str() + ")");
  } else if (isa<octet::ReshapeOp, octet::ExpandOp>(op)) {
    auto dynamic = op->getOperands().drop_front();
    size_t next = 0;
    for (int64_t d = 0; d < rank; ++d)
      rule.push_back(type.isDynamicDim(d) ? scalarFor(dynamic[next++])
                                          : constant(type.getDimSize(d)));
  } else if (auto slice = dyn_cast<octet::SliceOp>(op)) {
    rule = shapeOf(0);
    FailureOr<std::vector<SliceAxis>> axes = sliceAxes(slice, operands[0]);
    if (failed(axes))
      return failure();
    for (const SliceAxis &axis : *axes)
      rule[axis.axis] = axis.length;
  } else if (auto transpose = dyn_cast<octet::TransposeOp>(op)) {
    std::vector<ScalarId> in = shapeOf(0);
    for (int64_t p : transpose.getPermutation())
      rule.push_back(in.at(p));
  } else if (isa<octet::MatMulOp>(op)) {
    std::vector<ScalarId> a = shapeOf(0), b = shapeOf(1);
    if (a.empty() || b.empty())
      return op->emitError() << "matmul of a 0-D operand", failure();
    ScalarId ka = a.back(), kb = b.size() == 1 ? b[0] : b[b.size() - 2];
    arith(K::Equal, ka, kb, "matmul inner dims (lhs columns vs rhs rows)");
    std::vector<ScalarId> batchA(a.begin(), a.end() - std::min<size_t>(a.size(), 2));
    std::vector<ScalarId> batchB(b.begin(), b.end() - std::min<size_t>(b.size(), 2));
    size_t batchRank = std::max(batchA.size(), batchB.size());
    for (size_t d = 0; d < batchRank; ++d) {
      ScalarId dim = -1;
      for (const std::vector<ScalarId> *s : {&batchA, &batchB}) {
        int64_t od = int64_t(d) - int64_t(batchRank - s->size());
        if (od < 0 || isConstant((*s)[od], 1))
          continue;
        dim = dim < 0 ? (*s)[od] : arith(K::Broadcast, dim, (*s)[od], "matmul batch dims");
      }
      rule.push_back(dim < 0 ? constant(1) : dim);
    }
    if (a.size() >= 2)
      rule.push_back(a[a.size() - 2]);
    if (b.size() >= 2)
      rule.push_back(b.back());
  } else if (isa<octet::LinearOp, octet::FusedLinearOp, octet::QLinearOp>(op)) {
    rule = shapeOf(0);
    if (!rule.empty())
      rule.back() = constant(type.getShape().back());
  } else if (auto gather = dyn_cast<octet::GatherOp>(op)) {
    std::vector<ScalarId> data = shapeOf(0), indices = shapeOf(1);
    int64_t axis = gather.getAxis();
    rule.assign(data.begin(), data.begin() + axis);
    rule.insert(rule.end(), indices.begin(), indices.end());
    rule.insert(rule.end(), data.begin() + axis + 1, data.end());
  } else if (auto gather = dyn_cast<octet::GatherNDOp>(op)) {
    std::vector<ScalarId> data = shapeOf(0), indices = shapeOf(1);
    int64_t batchDims = gather.getBatchDims();
    int64_t tuple = gather.getIndices().getType().getShape().back();
    for (int64_t d = 0; d < batchDims; ++d)
      arith(K::Equal, indices[d], data[d], "gather_nd batch dims (indices vs data)");
    rule.assign(indices.begin(), indices.end() - 1);
    rule.insert(rule.end(), data.begin() + batchDims + tuple, data.end());
  } else if (isa<octet::GatherElementsOp>(op)) {
    rule = shapeOf(1);
  } else if (auto concat = dyn_cast<octet::ConcatOp>(op)) {
    rule = shapeOf(0);
    int64_t axis = concat.getAxis();
    ScalarId sum = constant(0);
    for (size_t i = 0; i < operands.size(); ++i)
      sum = arith(K::Add, sum, shapeOf(i).at(axis));
    rule.at(axis) = sum;
  } else if (isa<octet::ReduceMeanOp, octet::ReduceSumOp, octet::ReduceMaxOp, octet::ReduceMinOp>(
                 op)) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    bool keep = op->hasAttr("keepdims");
    std::vector<ScalarId> in = shapeOf(0);
    for (int64_t d = 0; d < int64_t(in.size()); ++d) {
      if (!llvm::is_contained(axes, d))
        rule.push_back(in[d]);
      else if (keep)
        rule.push_back(constant(1));
    }
  } else if (auto range = dyn_cast<octet::RangeOp>(op)) {
    ScalarId start = scalarFor(range.getStart()), limit = scalarFor(range.getLimit()),
             delta = scalarFor(range.getDelta());
    rule.push_back(
        arith(K::MaxS,
              arith(K::CeilDivS, arith(K::Sub, limit, start), delta, "range length (delta is 0)"),
              constant(0)));
  } else if (isa<octet::FromElementsOp>(op)) {
    rule.push_back(constant(type.getDimSize(0)));
  } else if (!operands.empty()) {
    rule = shapeOf(0); // shape-preserving ops
  }
  if (int64_t(rule.size()) != rank)
    return op->emitError() << "the plan builder's shape rule gives rank " << rule.size()
                           << " for a result of type " << type,
           failure();
  // Static dims are constants; a dynamic dim whose traced source is already in
  // the plan reuses that scalar (provably the same size, fewer checks).
  for (int64_t d = 0; d < rank; ++d) {
    if (!type.isDynamicDim(d)) {
      rule[d] = constant(type.getDimSize(d));
      continue;
    }
    octet::ValueDim source = octet::traceDimSource(result, d);
    if (source.value == result)
      continue;
    if (source.dim < 0) {
      auto it = scalars_.find(source.value);
      if (it != scalars_.end())
        rule[d] = it->second;
    } else {
      auto it = tensors_.find(source.value);
      if (it != tensors_.end() && source.dim < int64_t(plan_->tensors[it->second].shape.size()))
        rule[d] = plan_->tensors[it->second].shape[source.dim];
    }
  }
  return rule;
}

// ---- ops ---------------------------------------------------------------------

LogicalResult PlanWalker::addStep(Operation *op, const rt::StepRecipe::Call &call,
                                  const std::string &kind) {
  std::string error;
  rt::StepPtr step = rt::buildStep(rt::StepRecipe{call}, options_, error);
  if (!step)
    return op->emitError() << "cannot build the " << kind << " step"
                           << (error.empty() ? std::string() : ": " + error),
           failure();
  std::string name = joinNodeNames(op->getLoc(), "+");
  step->location = name.empty() ? op->getName().getStringRef().str() : name;
  plan_->steps.push_back(std::move(step));
  return success();
}

LogicalResult PlanWalker::visitIndexOp(Operation *op) {
  using K = Scalar::Kind;
  using P = Scalar::Predicate;
  Value result = op->getResult(0);
  auto operand = [&](unsigned i) { return scalarFor(op->getOperand(i)); };
  for (Value v : op->getOperands())
    if (!isa<RankedTensorType>(v.getType()) && !scalars_.count(v))
      return op->emitError() << "index operand has no scalar in the plan", failure();
  std::string what = joinNodeNames(op->getLoc(), "+");
  if (what.empty())
    what = op->getName().getStringRef().str();
  ScalarId id = -1;
  if (auto dim = dyn_cast<octet::DimOp>(op)) {
    FailureOr<TensorId> t = tensorFor(op, dim.getSource());
    if (failed(t))
      return failure();
    id = plan_->tensors[*t].shape.at(dim.getIndex());
  } else if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto value = dyn_cast<IntegerAttr>(c.getValue());
    if (!value)
      return op->emitError() << "non-integer scalar constant is not supported by the plan builder",
             failure();
    id = constant(value.getType().isInteger(1) ? int64_t(value.getValue().getBoolValue())
                                               : value.getInt());
  } else if (isa<arith::AddIOp>(op)) {
    id = arith(K::Add, operand(0), operand(1));
  } else if (isa<arith::SubIOp>(op)) {
    id = arith(K::Sub, operand(0), operand(1));
  } else if (isa<arith::MulIOp>(op)) {
    id = arith(K::Mul, operand(0), operand(1));
  } else if (isa<arith::DivSIOp>(op)) {
    id = arith(K::DivS, operand(0), operand(1), what);
  } else if (isa<arith::FloorDivSIOp>(op)) {
    id = arith(K::FloorDivS, operand(0), operand(1), what);
  } else if (isa<arith::CeilDivSIOp>(op)) {
    id = arith(K::CeilDivS, operand(0), operand(1), what);
  } else if (isa<arith::RemSIOp>(op)) {
    id = arith(K::RemS, operand(0), operand(1), what);
  } else if (isa<arith::MinSIOp>(op)) {
    id = arith(K::MinS, operand(0), operand(1));
  } else if (isa<arith::MaxSIOp>(op)) {
    id = arith(K::MaxS, operand(0), operand(1));
  } else if (auto c = dyn_cast<arith::CmpIOp>(op)) {
    P predicate;
    switch (c.getPredicate()) {
    case arith::CmpIPredicate::eq:
      predicate = P::Eq;
      break;
    case arith::CmpIPredicate::ne:
      predicate = P::Ne;
      break;
    case arith::CmpIPredicate::slt:
      predicate = P::Lt;
      break;
    case arith::CmpIPredicate::sle:
      predicate = P::Le;
      break;
    case arith::CmpIPredicate::sgt:
      predicate = P::Gt;
      break;
    case arith::CmpIPredicate::sge:
      predicate = P::Ge;
      break;
    default:
      return op->emitError() << "unsigned index comparisons are not supported by the plan builder",
             failure();
    }
    id = cmp(predicate, operand(0), operand(1));
  } else if (isa<arith::SelectOp>(op)) {
    id = select(operand(0), operand(1), operand(2));
  } else if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(op)) {
    id = operand(0);
  } else if (auto element = dyn_cast<octet::ElementIndexOp>(op)) {
    // The runtime evaluates every size once per run, before any step: it can
    // read a graph input's elements then, never a tensor the model computes.
    auto arg = dyn_cast<BlockArgument>(element.getInput());
    if (!arg || arg.getOwner() != &func_.front())
      return op->emitError() << "a size is read from the elements of a tensor the model "
                                "computes; sizes may come from graph inputs' elements only "
                                "(the runtime evaluates them before any step)",
             failure();
    Scalar s;
    s.kind = K::InputElement;
    s.input = int32_t(arg.getArgNumber());
    s.dim = int32_t(element.getPosition());
    s.what = what;
    id = addScalar(s);
  } else {
    return op->emitError() << "index op " << op->getName()
                           << " is not supported by the plan builder",
           failure();
  }
  scalars_[result] = id;
  return success();
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

LogicalResult PlanWalker::visitLinear(Operation *op) {
  bool fused = isa<octet::FusedLinearOp>(op);
  Value input = op->getOperand(0), weight = op->getOperand(1), bias;
  bool transposeWeight = op->hasAttr("transpose_weight");
  std::vector<Value> extras;
  if (auto linear = dyn_cast<octet::LinearOp>(op)) {
    bias = linear.getBias();
  } else {
    auto fusedLinear = cast<octet::FusedLinearOp>(op);
    bias = fusedLinear.getBias();
    extras.assign(fusedLinear.getExtra().begin(), fusedLinear.getExtra().end());
  }
  auto weightType = cast<RankedTensorType>(weight.getType());
  if (!weightType.getElementType().isF32() ||
      !cast<RankedTensorType>(input.getType()).getElementType().isF32())
    return op->emitError() << "the FP32 runtime's linear needs f32 operands", failure();
  FailureOr<TensorId> in = tensorFor(op, input);
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, op->getResult(0));
  if (failed(in) || failed(shape))
    return failure();

  if (!weight.getDefiningOp<octet::ConstantOp>() ||
      (bias && !bias.getDefiningOp<octet::ConstantOp>())) {
    if (fused)
      return op->emitError() << "fused_linear with a run-time weight or bias is not supported by "
                                "the FP32 runtime",
             failure();
    // A run-time weight: a generic matmul (+ bias).
    FailureOr<TensorId> w = tensorFor(op, weight);
    if (failed(w))
      return failure();
    TensorId rhs = *w;
    if (transposeWeight) {
      ViewParts parts = viewOf(*w);
      std::vector<ScalarId> wShape = plan_->tensors[*w].shape;
      rhs = makeView(plan_->tensors[*w].name + ".T", DType::F32, {wShape[1], wShape[0]}, parts.base,
                     parts.offset, {parts.strides[1], parts.strides[0]});
    }
    FailureOr<TensorId> out = resultTensor(op, op->getResult(0), *shape);
    if (failed(out))
      return failure();
    if (!bias)
      return addStep(op, rt::recipe::MatMul{*in, rhs, *out}, "matmul");
    FailureOr<TensorId> b = tensorFor(op, bias);
    if (failed(b))
      return failure();
    TensorId product = newArenaTensor(plan_->tensors[*out].name + ".product", DType::F32, *shape);
    if (failed(addStep(op, rt::recipe::MatMul{*in, rhs, product}, "matmul")))
      return failure();
    return addStep(op, rt::recipe::Binary{rt::BinaryKind::Add, product, *b, *out}, "add");
  }

  rt::LinearSpec spec;
  FailureOr<TensorId> rowInput = ensureRowContiguous(op, *in);
  if (failed(rowInput))
    return failure();
  spec.input = *rowInput;
  // makeLinear packs (JIT) or reorders (oneDNN) the weight: no Plan copy of it.
  FailureOr<const void *> w = transientConstantBytes(op, weight);
  if (failed(w))
    return failure();
  spec.weight = static_cast<const float *>(*w);
  spec.layout = transposeWeight ? octet::WeightLayout::NK : octet::WeightLayout::KN;
  spec.k = weightType.getDimSize(transposeWeight ? 1 : 0);
  spec.n = weightType.getDimSize(transposeWeight ? 0 : 1);
  if (bias) {
    FailureOr<const void *> b = constantBytes(op, bias);
    if (failed(b))
      return failure();
    spec.bias = static_cast<const float *>(*b);
  }
  for (Value extra : extras) {
    FailureOr<TensorId> t = tensorFor(op, extra);
    if (failed(t))
      return failure();
    FailureOr<TensorId> contiguous = ensureContiguous(op, *t);
    if (failed(contiguous))
      return failure();
    spec.extras.push_back(*contiguous);
    spec.extraPerColumn.push_back(isPerColumnVector(extra.getType(), spec.n));
  }
  if (fused) {
    FailureOr<rt::ElementwiseProgram> program = octet::programFromRegion(op->getRegion(0));
    if (failed(program))
      return failure();
    spec.epilogue = std::move(*program);
  }
  FailureOr<TensorId> out = resultTensor(op, op->getResult(0), *shape);
  if (failed(out))
    return failure();
  spec.output = *out;
  return addStep(op, rt::recipe::Linear{spec}, "linear");
}

LogicalResult PlanWalker::visitLayerNorm(Operation *op) {
  Value input, residual, gamma, beta;
  int64_t axis;
  float epsilon;
  if (auto ln = dyn_cast<octet::LayerNormOp>(op)) {
    input = ln.getInput(), gamma = ln.getGamma(), beta = ln.getBeta();
    axis = ln.getAxis();
    epsilon = ln.getEpsilon().convertToFloat();
  } else if (auto aln = dyn_cast<octet::AddLayerNormOp>(op)) {
    input = aln.getInput(), residual = aln.getResidual(), gamma = aln.getGamma(),
    beta = aln.getBeta();
    axis = aln.getAxis();
    epsilon = aln.getEpsilon().convertToFloat();
  } else {
    auto lnq = cast<octet::LayerNormQuantizeOp>(op);
    input = lnq.getInput(), residual = lnq.getResidual(), gamma = lnq.getGamma(),
    beta = lnq.getBeta();
    axis = lnq.getAxis();
    epsilon = lnq.getEpsilon().convertToFloat();
  }
  auto type = cast<RankedTensorType>(input.getType());
  if (axis != type.getRank() - 1)
    return op->emitError() << "layer normalization over dims " << axis << ".." << type.getRank() - 1
                           << ": the FP32 runtime normalizes over the last dim only",
           failure();
  auto gammaType = cast<RankedTensorType>(gamma.getType());
  if (!type.getElementType().isF32() || !gammaType.getElementType().isF32() ||
      gammaType.getRank() != 1 || type.isDynamicDim(axis) ||
      gammaType.getDimSize(0) != type.getDimSize(axis))
    return op->emitError() << "layer normalization needs f32 and a 1-D gamma the size of the "
                              "(static) last dim",
           failure();
  rt::LayerNormSpec spec;
  spec.n = gammaType.getDimSize(0);
  spec.epsilon = epsilon;
  FailureOr<const void *> g = constantBytes(op, gamma);
  if (failed(g))
    return failure();
  spec.gamma = static_cast<const float *>(*g);
  if (beta) {
    FailureOr<const void *> b = constantBytes(op, beta);
    if (failed(b))
      return failure();
    spec.beta = static_cast<const float *>(*b);
  } else {
    std::shared_ptr<void> zeros = allocateAligned(spec.n * sizeof(float));
    plan_->keepAlive.push_back(zeros);
    plan_->constants.push_back({zeros.get(), size_t(spec.n) * sizeof(float)});
    spec.beta = static_cast<const float *>(zeros.get());
  }
  FailureOr<TensorId> x = tensorFor(op, input);
  if (failed(x) || failed(x = ensureContiguous(op, *x)))
    return failure();
  spec.x = *x;
  if (residual) {
    FailureOr<TensorId> r = tensorFor(op, residual);
    if (failed(r) || failed(r = ensureContiguous(op, *r)))
      return failure();
    spec.residual = *r;
  }
  // octet.layer_norm_quantize: y only where something reads it; the
  // per-tensor scale and zero point are plan-time constants (the kernel's).
  auto lnq = dyn_cast<octet::LayerNormQuantizeOp>(op);
  if (lnq) {
    auto qType = cast<RankedTensorType>(lnq.getQuantized().getType());
    spec.quantizedType = qType.getElementType().isUnsignedInteger(8) ? DType::U8 : DType::I8;
    if (Value scale = lnq.getScale()) {
      FailureOr<const void *> s = constantBytes(op, scale);
      FailureOr<const void *> z = constantBytes(op, lnq.getZeroPoint());
      if (failed(s) || failed(z))
        return failure();
      spec.qScale = *static_cast<const float *>(*s);
      spec.qZeroPoint = spec.quantizedType == DType::U8 ? *static_cast<const uint8_t *>(*z)
                                                        : *static_cast<const int8_t *>(*z);
    }
    if (Value quantGamma = lnq.getQuantGamma()) {
      FailureOr<const void *> g2 = constantBytes(op, quantGamma);
      FailureOr<const void *> b2 = constantBytes(op, lnq.getQuantBeta());
      if (failed(g2) || failed(b2))
        return failure();
      spec.qGamma = static_cast<const float *>(*g2);
      spec.qBeta = static_cast<const float *>(*b2);
    }
  }
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (i == 0 && lnq && result.use_empty())
      continue;
    FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
    if (failed(shape))
      return failure();
    FailureOr<TensorId> out = resultTensor(op, result, *shape);
    if (failed(out))
      return failure();
    (i == 0 ? spec.output : i == 1 ? spec.quantized : spec.rowScale) = *out;
  }
  return addStep(op, rt::recipe::LayerNorm{spec}, lnq ? "layer_norm_quantize" : "layer_norm");
}

LogicalResult PlanWalker::visitQuant(Operation *op) {
  Value input = op->getOperand(0), scale = op->getOperand(1);
  Value zp = op->getNumOperands() > 2 ? op->getOperand(2) : Value();
  std::optional<uint64_t> axisAttr;
  if (auto q = dyn_cast<octet::QuantizeOp>(op))
    axisAttr = q.getAxis();
  else
    axisAttr = cast<octet::DequantizeOp>(op).getAxis();
  int axis = axisAttr ? int(*axisAttr) : -1;
  FailureOr<TensorId> in = tensorFor(op, input);
  if (failed(in) || failed(in = ensureContiguous(op, *in)))
    return failure();
  FailureOr<TensorId> s = tensorFor(op, scale);
  if (failed(s) || failed(s = ensureContiguous(op, *s)))
    return failure();
  TensorId z = -1;
  if (zp) {
    FailureOr<TensorId> zt = tensorFor(op, zp);
    if (failed(zt) || failed(zt = ensureContiguous(op, *zt)))
      return failure();
    z = *zt;
  }
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, op->getResult(0));
  if (failed(shape))
    return failure();
  FailureOr<TensorId> out = resultTensor(op, op->getResult(0), *shape);
  if (failed(out))
    return failure();
  if (isa<octet::QuantizeOp>(op))
    return addStep(op, rt::recipe::Quantize{*in, *s, z, axis, *out}, "quantize");
  return addStep(op, rt::recipe::Dequantize{*in, *s, z, axis, *out}, "dequantize");
}

LogicalResult PlanWalker::visitQLinear(octet::QLinearOp op) {
  rt::QLinearSpec spec;
  bool transposeWeight = op.getTransposeWeight();
  if (!op.getWeight().getDefiningOp<octet::ConstantOp>() ||
      (op.getBias() && !op.getBias().getDefiningOp<octet::ConstantOp>()) ||
      !op.getWeightScale().getDefiningOp<octet::ConstantOp>())
    return op.emitError() << "qlinear with a run-time weight, bias or weight scale is not "
                             "supported by the runtime",
           failure();
  FailureOr<TensorId> in = tensorFor(op, op.getInput());
  if (failed(in) || failed(in = ensureContiguous(op, *in)))
    return failure();
  spec.input = *in;
  // Packed by octet-pack-weights: the kernel uses the panels in place for the
  // Plan's life (kept here, or mapped from an AOT model.so); a plain weight is
  // only read while the step is built.
  FailureOr<const void *> w = op.getPacked() ? constantBytes(op, op.getWeight())
                                             : transientConstantBytes(op, op.getWeight());
  if (failed(w))
    return failure();
  spec.weight = static_cast<const int8_t *>(*w);
  spec.layout = transposeWeight ? octet::WeightLayout::NK : octet::WeightLayout::KN;
  spec.k = op.getK();
  spec.n = op.getN();
  if (op.getPacked()) {
    spec.packed = op.getPackedLayout();
    auto sums = op.getPackedColsum().getValues<int32_t>();
    size_t bytes = sums.size() * sizeof(int32_t);
    std::shared_ptr<void> colsum = allocateAligned(bytes);
    if (!colsum)
      return op.emitError() << "cannot allocate " << bytes << " bytes for the column sums",
             failure();
    std::copy(sums.begin(), sums.end(), static_cast<int32_t *>(colsum.get()));
    plan_->keepAlive.push_back(colsum);
    plan_->constants.push_back({colsum.get(), bytes});
    spec.colsum = static_cast<const int32_t *>(colsum.get());
  }
  if (op.getBias()) {
    FailureOr<const void *> b = constantBytes(op, op.getBias());
    if (failed(b))
      return failure();
    spec.bias = static_cast<const float *>(*b);
  }
  FailureOr<const void *> ws = constantBytes(op, op.getWeightScale());
  if (failed(ws))
    return failure();
  spec.wScale = static_cast<const float *>(*ws);
  spec.wScaleCount = cast<RankedTensorType>(op.getWeightScale().getType()).getNumElements();
  // A scale or zero point operand: its tensor, and its bytes when constant.
  auto param = [&](Value v, TensorId &t, const void *&constant) -> LogicalResult {
    if (!v)
      return success();
    FailureOr<TensorId> id = tensorFor(op, v);
    if (failed(id))
      return failure();
    t = *id;
    if (v.getDefiningOp<octet::ConstantOp>()) {
      FailureOr<const void *> bytes = constantBytes(op, v);
      if (failed(bytes))
        return failure();
      constant = *bytes;
    }
    return success();
  };
  const void *xs = nullptr, *xzp = nullptr, *os = nullptr, *ozp = nullptr;
  if (failed(param(op.getInputScale(), spec.xScale, xs)) ||
      failed(param(op.getInputZeroPoint(), spec.xZeroPoint, xzp)) ||
      failed(param(op.getOutputScale(), spec.outScale, os)) ||
      failed(param(op.getOutputZeroPoint(), spec.outZeroPoint, ozp)))
    return failure();
  // A per-row scale (octet.quantize_per_row) is a run-time [..., 1] tensor.
  spec.xScalePerRow = cast<RankedTensorType>(op.getInputScale().getType()).getRank() > 0;
  if (spec.xScalePerRow) {
    FailureOr<TensorId> rowScale = ensureContiguous(op, spec.xScale);
    if (failed(rowScale))
      return failure();
    spec.xScale = *rowScale;
    xs = nullptr;
  }
  spec.xScaleConst = static_cast<const float *>(xs);
  spec.xZeroPointConst = static_cast<const uint8_t *>(xzp);
  spec.outScaleConst = static_cast<const float *>(os);
  spec.outZeroPointConst = ozp;
  for (Value extra : op.getExtra()) {
    FailureOr<TensorId> t = tensorFor(op, extra);
    if (failed(t))
      return failure();
    spec.extras.push_back(*t);
    spec.extraPerColumn.push_back(isPerColumnVector(extra.getType(), spec.n));
  }
  // The identity epilogue (`octet.yield %acc`) needs no program.
  Block &body = op.getEpilogue().front();
  bool identity = body.getOperations().size() == 1 && body.getTerminator()->getNumOperands() == 1 &&
                  body.getTerminator()->getOperand(0) == body.getArgument(0);
  if (!identity) {
    FailureOr<rt::ElementwiseProgram> program = octet::programFromRegion(op.getEpilogue());
    if (failed(program))
      return failure();
    spec.epilogue = std::move(*program);
    if (spec.epilogue.instrs.empty())
      spec.epilogue.instrs.push_back({rt::ElementwiseProgram::Op::Input, 0, -1, 0});
  }
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, op.getResult());
  if (failed(shape))
    return failure();
  FailureOr<TensorId> out = resultTensor(op, op.getResult(), *shape);
  if (failed(out))
    return failure();
  spec.output = *out;
  return addStep(op, rt::recipe::QLinear{spec, plan_->tensors[*out].dtype}, "qlinear");
}

LogicalResult PlanWalker::visitQuantizePerRow(octet::QuantizePerRowOp op) {
  // Rows may be strided (a slice view); the kernel takes a row stride.
  FailureOr<TensorId> in = tensorFor(op, op.getInput());
  if (failed(in) || failed(in = ensureRowContiguous(op, *in)))
    return failure();
  TensorId results[2];
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
    if (failed(shape))
      return failure();
    FailureOr<TensorId> out = resultTensor(op, result, *shape);
    if (failed(out))
      return failure();
    results[i] = *out;
  }
  return addStep(op, rt::recipe::QuantizePerRow{*in, results[0], results[1]}, "quantize_per_row");
}

LogicalResult PlanWalker::visitTokenOp(Operation *op) {
  using K = Scalar::Kind;
  FailureOr<std::vector<TensorId>> insOr = tensorOperands(op);
  if (failed(insOr))
    return failure();
  std::vector<TensorId> ins = std::move(*insOr);
  Value result = op->getResult(0);
  if (auto layout = dyn_cast<octet::TokenLayoutOp>(op)) {
    ScalarId batch = scalarFor(layout.getBatch()), seq = scalarFor(layout.getSeq());
    ScalarId size = arith(K::Add, constant(5), arith(K::Add, batch, arith(K::Mul, batch, seq)));
    FailureOr<TensorId> out = resultTensor(op, result, {size});
    if (failed(out))
      return failure();
    Scalar packed;
    packed.kind = K::PackedDim;
    packed.a = batch, packed.dim = 0;
    ScalarId packedBatch = addScalar(packed);
    packed.a = seq, packed.dim = 1;
    packedDims_[result] = {packedBatch, addScalar(packed)};
    return addStep(op, rt::recipe::TokenLayout{ins, batch, seq, *out}, "token_layout");
  }
  Value layout = op->getOperand(1);
  FailureOr<TensorId> in = ensureContiguous(op, ins[0]);
  if (failed(in))
    return failure();
  std::vector<ScalarId> shape = plan_->tensors[*in].shape;
  if (shape.size() < 2)
    return op->emitError() << "needs [batch, seq, ...] rows", failure();
  if (isa<octet::PackTokensOp>(op)) {
    auto dims = packedDims_.find(layout);
    if (dims == packedDims_.end())
      return op->emitError() << "its layout is not an octet.token_layout", failure();
    shape[0] = dims->second.first, shape[1] = dims->second.second;
  } else {
    auto unpack = cast<octet::UnpackTokensOp>(op);
    shape[0] = scalarFor(unpack.getBatch()), shape[1] = scalarFor(unpack.getSeq());
  }
  FailureOr<TensorId> out = resultTensor(op, result, shape);
  if (failed(out))
    return failure();
  if (isa<octet::PackTokensOp>(op))
    return addStep(op, rt::recipe::PackTokens{*in, ins[1], *out}, "pack_tokens");
  return addStep(op, rt::recipe::UnpackTokens{*in, ins[1], *out}, "unpack_tokens");
}

LogicalResult PlanWalker::visit(Operation *op) {
  if (isa<octet::ConstantOp, func::ReturnOp>(op))
    return success(); // constants become tensors when used; returns at the end
  if (op->getNumResults() == 1 && !isa<RankedTensorType>(op->getResult(0).getType()))
    return visitIndexOp(op);
  if (isa<octet::QuantizeOp, octet::DequantizeOp>(op))
    return visitQuant(op);
  if (isa<octet::QLinearOp>(op))
    return visitQLinear(cast<octet::QLinearOp>(op));
  if (auto perRow = dyn_cast<octet::QuantizePerRowOp>(op))
    return visitQuantizePerRow(perRow);
  if (isa<octet::TokenLayoutOp, octet::PackTokensOp, octet::UnpackTokensOp>(op))
    return visitTokenOp(op);
  if (isa<octet::LayerNormQuantizeOp>(op))
    return visitLayerNorm(op);
  if (isa<octet::DynamicQuantizeOp, octet::MatMulIntegerOp>(op))
    return op->emitError() << op->getName()
                           << " is not supported by the runtime yet (dynamically quantized "
                              "models need the INT8 pipeline)",
           failure();
  if (op->getNumResults() != 1)
    return op->emitError() << op->getName() << " is not supported by the FP32 runtime", failure();
  if (isa<octet::ReshapeOp, octet::SliceOp, octet::ExpandOp, octet::TransposeOp>(op))
    return visitViewOp(op);
  if (isa<octet::LinearOp, octet::FusedLinearOp>(op))
    return visitLinear(op);
  if (isa<octet::LayerNormOp, octet::AddLayerNormOp>(op))
    return visitLayerNorm(op);

  Value result = op->getResult(0);
  FailureOr<std::vector<TensorId>> insOr = tensorOperands(op);
  if (failed(insOr))
    return failure();
  std::vector<TensorId> ins = std::move(*insOr);
  FailureOr<std::vector<ScalarId>> shape = resultShape(op, result);
  if (failed(shape))
    return failure();
  StringRef opName = op->getName().getStringRef();
  bool kernel = isa<octet::GeluOp, octet::AttentionOp, octet::FusedOp>(op);
  if (kernel) {
    // Kernel steps read plain (or row-strided) buffers: copy other views first.
    for (size_t i = 0; i < ins.size(); ++i) {
      bool rowView = isa<octet::AttentionOp>(op) && i < 3;
      FailureOr<TensorId> t =
          rowView ? ensureRowContiguous(op, ins[i]) : ensureContiguous(op, ins[i]);
      if (failed(t))
        return failure();
      ins[i] = *t;
    }
  }
  FailureOr<TensorId> outOr = resultTensor(op, result, *shape);
  if (failed(outOr))
    return failure();
  TensorId out = *outOr;
  std::string error;
  using BK = rt::BinaryKind;
  using UK = rt::UnaryKind;
  auto binary = [&](BK kind) {
    return addStep(op, rt::recipe::Binary{kind, ins[0], ins[1], out}, opName.str());
  };
  auto unary = [&](UK kind) { return addStep(op, rt::recipe::Unary{kind, ins[0], out}, opName.str()); };
  auto reduce = [&](rt::ReduceKind kind) {
    auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
    return addStep(op,
                   rt::recipe::Reduce{kind, ins[0], std::vector<int>(axes.begin(), axes.end()), out},
                   opName.str());
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](octet::AddOp) { return binary(BK::Add); })
      .Case([&](octet::SubOp) { return binary(BK::Sub); })
      .Case([&](octet::MulOp) { return binary(BK::Mul); })
      .Case([&](octet::DivOp) { return binary(BK::Div); })
      .Case([&](octet::PowOp) { return binary(BK::Pow); })
      .Case([&](octet::MaxOp) { return binary(BK::Max); })
      .Case([&](octet::MinOp) { return binary(BK::Min); })
      .Case([&](octet::EqualOp) { return binary(BK::Equal); })
      .Case([&](octet::LessOp) { return binary(BK::Less); })
      .Case([&](octet::GreaterOp) { return binary(BK::Greater); })
      .Case([&](octet::AndOp) { return binary(BK::And); })
      .Case([&](octet::OrOp) { return binary(BK::Or); })
      .Case([&](octet::XorOp) { return binary(BK::Xor); })
      .Case([&](octet::ModOp m) { return binary(m.getFmod() ? BK::FMod : BK::Mod); })
      .Case([&](octet::NegOp) { return unary(UK::Neg); })
      .Case([&](octet::AbsOp) { return unary(UK::Abs); })
      .Case([&](octet::ExpOp) { return unary(UK::Exp); })
      .Case([&](octet::LogOp) { return unary(UK::Log); })
      .Case([&](octet::ErfOp) { return unary(UK::Erf); })
      .Case([&](octet::TanhOp) { return unary(UK::Tanh); })
      .Case([&](octet::SqrtOp) { return unary(UK::Sqrt); })
      .Case([&](octet::RsqrtOp) { return unary(UK::Rsqrt); })
      .Case([&](octet::ReciprocalOp) { return unary(UK::Reciprocal); })
      .Case([&](octet::ReluOp) { return unary(UK::Relu); })
      .Case([&](octet::SigmoidOp) { return unary(UK::Sigmoid); })
      .Case([&](octet::NotOp) { return unary(UK::Not); })
      .Case([&](octet::CeilOp) { return unary(UK::Ceil); })
      .Case([&](octet::FloorOp) { return unary(UK::Floor); })
      .Case([&](octet::SignOp) { return unary(UK::Sign); })
      .Case([&](octet::IsNanOp) { return unary(UK::IsNaN); })
      .Case([&](octet::IsInfOp t) {
        bool negative = t.getDetectNegative(), positive = t.getDetectPositive();
        if (!negative && !positive) // nothing to detect: x < x is false for every x, NaN too
          return addStep(op, rt::recipe::Binary{BK::Less, ins[0], ins[0], out}, opName.str());
        return unary(negative && positive ? UK::IsInf : positive ? UK::IsPosInf : UK::IsNegInf);
      })
      .Case([&](octet::CastOp) { return addStep(op, rt::recipe::Cast{ins[0], out}, "cast"); })
      .Case([&](octet::WhereOp) {
        return addStep(op, rt::recipe::Where{ins[0], ins[1], ins[2], out}, "where");
      })
      .Case([&](octet::GatherOp g) {
        return addStep(op, rt::recipe::Gather{ins[0], ins[1], int(g.getAxis()), out}, "gather");
      })
      .Case([&](octet::GatherNDOp g) {
        return addStep(op, rt::recipe::GatherND{ins[0], ins[1], int(g.getBatchDims()), out},
                       "gather_nd");
      })
      .Case([&](octet::GatherElementsOp g) {
        return addStep(op, rt::recipe::GatherElements{ins[0], ins[1], int(g.getAxis()), out},
                       "gather_elements");
      })
      .Case([&](octet::ConcatOp c) {
        return addStep(op, rt::recipe::Concat{ins, int(c.getAxis()), out}, "concat");
      })
      .Case([&](octet::ReduceMeanOp) { return reduce(rt::ReduceKind::Mean); })
      .Case([&](octet::ReduceSumOp) { return reduce(rt::ReduceKind::Sum); })
      .Case([&](octet::ReduceMaxOp) { return reduce(rt::ReduceKind::Max); })
      .Case([&](octet::ReduceMinOp) { return reduce(rt::ReduceKind::Min); })
      .Case([&](octet::CumSumOp c) {
        return addStep(
            op, rt::recipe::CumSum{ins[0], int(c.getAxis()), c.getExclusive(), c.getReverse(), out},
            "cumsum");
      })
      .Case([&](octet::SoftmaxOp s) {
        return addStep(op, rt::recipe::Softmax{ins[0], int(s.getAxis()), out}, "softmax");
      })
      .Case([&](octet::RangeOp r) {
        return addStep(op, rt::recipe::Range{scalarFor(r.getStart()), scalarFor(r.getDelta()), out},
                       "range");
      })
      .Case([&](octet::FromElementsOp f) {
        std::vector<ScalarId> elements;
        for (Value e : f.getElements())
          elements.push_back(scalarFor(e));
        return addStep(op, rt::recipe::FromElements{elements, out}, "from_elements");
      })
      .Case([&](octet::MatMulOp) {
        return addStep(op, rt::recipe::MatMul{ins[0], ins[1], out}, "matmul");
      })
      .Case([&](octet::GeluOp g) {
        rt::ElementwiseProgram program;
        program.numInputs = 1;
        program.instrs.push_back({rt::ElementwiseProgram::Op::Input, 0, -1, 0});
        program.instrs.push_back({g.getApproximate() == "tanh"
                                      ? rt::ElementwiseProgram::Op::GeluTanh
                                      : rt::ElementwiseProgram::Op::GeluErf,
                                  0, -1, 0});
        return addStep(op, rt::recipe::FusedElementwise{program, ins, out}, "gelu");
      })
      .Case([&](octet::AttentionOp a) {
        rt::AttentionSpec spec;
        spec.q = ins[0], spec.k = ins[1], spec.v = ins[2];
        spec.mask = a.getMask() ? ins[3] : -1;
        spec.tokenLayout = a.getTokenLayout() ? ins.back() : -1;
        spec.output = out;
        spec.numHeads = a.getNumHeads();
        spec.scale = a.getScale().convertToFloat();
        spec.bf16 = options_.attentionBf16;
        spec.zeroMaskedRows = a.getZeroMaskedRows();
        return addStep(op, rt::recipe::Attention{spec}, "attention");
      })
      .Case([&](octet::FusedOp fused) -> LogicalResult {
        FailureOr<rt::ElementwiseProgram> program = octet::programFromRegion(fused.getBody());
        if (failed(program))
          return failure();
        return addStep(op, rt::recipe::FusedElementwise{*program, ins, out}, "fused elementwise");
      })
      .Default([&](Operation *) -> LogicalResult {
        return op->emitError() << op->getName() << " is not supported by the FP32 runtime",
               failure();
      });
}

LogicalResult PlanWalker::setUpInputs() {
  Block &block = func_.front();
  std::map<std::string, std::pair<ScalarId, std::string>> namedDims; // name → (scalar, where)
  for (BlockArgument arg : block.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      return func_.emitError() << "argument " << i << " is not a ranked tensor", failure();
    std::optional<DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return func_.emitError() << "input " << i << " has element type " << type.getElementType()
                               << ", which the FP32 runtime does not support",
             failure();
    rt::IoInfo io;
    auto name = func_.getArgAttrOfType<StringAttr>(i, octet::attr::kName);
    io.name = name ? name.getValue().str() : "input" + std::to_string(i);
    io.dtype = *dtype;
    auto dimParams = func_.getArgAttrOfType<ArrayAttr>(i, octet::attr::kDimParams);
    std::vector<ScalarId> shape;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::string dimName;
      if (dimParams && d < int64_t(dimParams.size()))
        if (auto s = dyn_cast<StringAttr>(dimParams[d]))
          dimName = s.getValue().str();
      io.dims.push_back(type.isDynamicDim(d) ? -1 : type.getDimSize(d));
      io.dimNames.push_back(dimName);
      if (!type.isDynamicDim(d)) {
        shape.push_back(constant(type.getDimSize(d)));
        continue;
      }
      Scalar s;
      s.kind = Scalar::Kind::InputDim;
      s.input = int32_t(i);
      s.dim = int32_t(d);
      ScalarId dim = addScalar(s);
      std::string where = "input '" + io.name + "' dim " + std::to_string(d);
      if (!dimName.empty()) {
        auto [it, inserted] = namedDims.try_emplace(dimName, dim, where);
        if (!inserted)
          dim = arith(Scalar::Kind::Equal, dim, it->second.first,
                      where + " ('" + dimName + "') must equal " + it->second.second);
      }
      shape.push_back(dim);
    }
    TensorId t = newTensor(io.name, *dtype, shape, Storage::Input, int32_t(i));
    io.tensor = t;
    tensors_[arg] = t;

    // Token ids: every use a gather on axis 0 of one constant table size.
    if (*dtype == DType::I64 || *dtype == DType::I32) {
      int64_t rows = -1;
      std::string table;
      bool all = true;
      for (Operation *user : arg.getUsers()) {
        if (isa<octet::DimOp>(user))
          continue; // reads the shape, not the values
        auto gather = dyn_cast<octet::GatherOp>(user);
        if (!gather || gather.getIndices() != arg || gather.getAxis() != 0 ||
            !gather.getData().getDefiningOp<octet::ConstantOp>()) {
          all = false;
          break;
        }
        int64_t size = gather.getData().getType().getDimSize(0);
        if (rows >= 0 && rows != size) {
          all = false;
          break;
        }
        rows = size;
        auto constantOp = gather.getData().getDefiningOp<octet::ConstantOp>();
        if (StringRef key = octet::resourceKey(constantOp.getValue()); !key.empty())
          table = key.str();
        if (table.empty())
          table = joinNodeNames(user->getLoc(), "+");
      }
      if (all && rows >= 0) {
        io.checkRange = true;
        io.rangeBegin = 0;
        io.rangeEnd = rows;
        io.rangeWhy = "it indexes the " + std::to_string(rows) + "-row table '" + table + "'";
      }
    }
    plan_->inputs.push_back(std::move(io));
  }
  return success();
}

LogicalResult PlanWalker::finishOutputs() {
  auto ret = cast<func::ReturnOp>(func_.front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    auto type = cast<RankedTensorType>(v.getType());
    rt::IoInfo io;
    auto name = func_.getResultAttrOfType<StringAttr>(i, octet::attr::kName);
    io.name = name ? name.getValue().str() : "output" + std::to_string(i);
    std::optional<DType> dtype = dtypeOf(type.getElementType());
    if (!dtype)
      return ret.emitError() << "output '" << io.name << "' has element type "
                             << type.getElementType() << ", unsupported by the FP32 runtime",
             failure();
    io.dtype = *dtype;
    auto dimParams = func_.getResultAttrOfType<ArrayAttr>(i, octet::attr::kDimParams);
    for (int64_t d = 0; d < type.getRank(); ++d) {
      io.dims.push_back(type.isDynamicDim(d) ? -1 : type.getDimSize(d));
      std::string dimName;
      if (dimParams && d < int64_t(dimParams.size()))
        if (auto s = dyn_cast<StringAttr>(dimParams[d]))
          dimName = s.getValue().str();
      io.dimNames.push_back(dimName);
    }
    FailureOr<TensorId> t = tensorFor(ret, v);
    if (failed(t))
      return failure();
    const rt::TensorInfo &info = plan_->tensors[*t];
    if (info.storage == Storage::Output && info.index == int32_t(i)) {
      io.tensor = *t;
    } else {
      // An input, a constant, a view or a value returned twice: copy it out.
      std::vector<ScalarId> shape = info.shape;
      TensorId out = newTensor(io.name, *dtype, shape, Storage::Output, int32_t(i));
      if (failed(addStep(ret, rt::recipe::Copy{*t, out}, "copy")))
        return failure();
      plan_->steps.back()->location = io.name;
      io.tensor = out;
    }
    plan_->outputs.push_back(std::move(io));
  }
  return success();
}

FailureOr<std::unique_ptr<rt::Plan>> PlanWalker::build() {
  if (func_.isExternal() || !func_.getBody().hasOneBlock())
    return func_.emitError() << "the plan builder needs a function with one block", failure();
  if (auto arena = func_->getAttrOfType<ArrayAttr>(octet::attr::kArena))
    plan_->arenaSlots.assign(arena.size(), -1);
  Block &block = func_.front();
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret)
    return func_.emitError() << "the function does not end in func.return", failure();
  for (auto [i, v] : llvm::enumerate(ret.getOperands()))
    firstReturn_.try_emplace(v, int64_t(i));
  outputTaken_.assign(ret.getNumOperands(), false);
  if (failed(setUpInputs()))
    return failure();
  if (constantsMode_ == octet::PlanConstants::Take)
    countBlobUses();
  for (Operation &op : block) {
    if (failed(visit(&op)))
      return failure();
    releaseUsedBlobs(&op);
  }
  if (failed(finishOutputs()))
    return failure();
  for (ScalarId &size : plan_->arenaSlots)
    if (size < 0)
      size = constant(0);
  return std::move(plan_);
}

} // namespace

FailureOr<rt::ElementwiseProgram> octet::programFromRegion(Region &region) {
  using Op = rt::ElementwiseProgram::Op;
  rt::ElementwiseProgram program;
  if (!region.hasOneBlock())
    return emitError(region.getLoc()) << "a fused region must have one block", failure();
  Block &block = region.front();
  DenseMap<Value, int32_t> ids;
  auto emit = [&](Op op, int32_t a = -1, int32_t b = -1, float value = 0) {
    program.instrs.push_back({op, a, b, value});
    return int32_t(program.instrs.size() - 1);
  };
  for (BlockArgument arg : block.getArguments()) {
    if (!arg.getType().isF32())
      return emitError(arg.getLoc()) << "fused region argument " << arg.getArgNumber() << " is "
                                     << arg.getType() << ", not f32",
             failure();
    ids[arg] = emit(Op::Input, int32_t(arg.getArgNumber()));
  }
  program.numInputs = int32_t(block.getNumArguments());
  for (Operation &op : block) {
    if (op.hasTrait<OpTrait::IsTerminator>()) {
      if (op.getNumOperands() != 1 || !ids.count(op.getOperand(0)))
        return op.emitError() << "a fused region must yield one f32 computed in it", failure();
      int32_t result = ids.lookup(op.getOperand(0));
      if (result != int32_t(program.instrs.size()) - 1) {
        // The result must be the last instruction: x · 1 is x exactly.
        int32_t one = emit(Op::Constant, -1, -1, 1.0f);
        emit(Op::Mul, result, one);
      }
      std::string problem = program.verify();
      if (!problem.empty())
        return op.emitError() << "malformed elementwise program: " << problem, failure();
      return program;
    }
    for (Value operand : op.getOperands())
      if (!ids.count(operand))
        return op.emitError() << "operand of " << op.getName()
                              << " is not computed in the fused region",
               failure();
    // The ops the verifiers admit (compiler/ir/ElementwiseOps.h); a region built
    // without verification may still hold others.
    std::optional<Op> code = octet::elementwiseProgramOpcode(&op);
    if (!code)
      return op.emitError() << op.getName()
                            << " in a fused region is not supported by the FP32 runtime",
             failure();
    int32_t id;
    if (*code == Op::Constant)
      id = emit(Op::Constant, -1, -1,
                cast<FloatAttr>(cast<arith::ConstantOp>(op).getValue()).getValue().convertToFloat());
    else
      id = emit(*code, ids.lookup(op.getOperand(0)),
                op.getNumOperands() > 1 ? ids.lookup(op.getOperand(1)) : -1);
    ids[op.getResult(0)] = id;
  }
  return emitError(region.getLoc()) << "a fused region must end in octet.yield", failure();
}

FailureOr<std::unique_ptr<rt::Plan>> octet::buildPlan(func::FuncOp func,
                                                      const rt::KernelOptions &options,
                                                      PlanConstants constants) {
  return PlanWalker(func, options, constants).build();
}
