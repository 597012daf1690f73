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
// This file holds the walk (PlanWalker::build) and the entry point; the parts
// live in one file per concern (compiler/driver/PlanWalker.h lists them).
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

namespace octet::plan_builder {

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
  if (element.isIndex())
    return DType::I64;
  auto integer = dyn_cast<IntegerType>(element);
  if (!integer)
    return std::nullopt;
  // Signless and signed integers are the signed DTypes; i1 of any signedness is Bool.
  const bool isUnsigned = integer.isUnsigned();
  switch (integer.getWidth()) {
  case 1:
    return DType::Bool;
  case 8:
    return isUnsigned ? DType::U8 : DType::I8;
  case 16:
    return isUnsigned ? DType::U16 : DType::I16;
  case 32:
    return isUnsigned ? DType::U32 : DType::I32;
  case 64:
    return isUnsigned ? DType::U64 : DType::I64;
  default:
    return std::nullopt;
  }
}

std::shared_ptr<void> allocateAligned(size_t bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *memory = std::aligned_alloc(64, rounded);
  if (!memory)
    return nullptr;
  std::memset(memory, 0, rounded);
  return std::shared_ptr<void>(memory, [](void *p) { std::free(p); });
}

} // namespace octet::plan_builder

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
  findEmbeddingSums();
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

FailureOr<std::unique_ptr<rt::Plan>>
octet::buildPlan(func::FuncOp func, const rt::KernelOptions &options, PlanConstants constants) {
  return PlanWalker(func, options, constants).build();
}
