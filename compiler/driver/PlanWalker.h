//===- PlanWalker.h - the Plan builder's parts (internal) -------*- C++ -*-===//
//
// PlanBuilder (compiler/driver/PlanBuilder.h) is one walk, PlanWalker, whose
// members live in one file per concern:
//   PlanBuilder.cpp  the walk itself (build) and the small type helpers;
//   PlanScalars.cpp  symbolic dims, scalar folding and each op's shape rule;
//   PlanStorage.cpp  tensors, constants and blobs, views, arena slots;
//   PlanFp32.cpp     the FP32 op visitors and programFromRegion;
//   PlanInt8.cpp     the INT8 op visitors (quantize, qlinear, per-row);
//   PlanIO.cpp       inputs, outputs and the token layout ops;
//   PlanEmbedding.cpp embedding sums (gathers, their sum and its pack) as
//                    one step.
// Only those files include this header.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_PLANWALKER_H
#define OCTET_COMPILER_DRIVER_PLANWALKER_H

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
#include <memory>
#include <optional>
#include <tuple>

namespace octet::plan_builder {

// The builder's files are written against MLIR's and the Plan's names.
using namespace mlir;
using rt::DType;
using rt::Scalar;
using rt::ScalarId;
using rt::Storage;
using rt::TensorId;

/// A GEMM extra with one f32 value per output column, the same for every row:
/// static [.., N] with every other dim 1 (the kernels load it like the bias).
bool isPerColumnVector(Type type, int64_t n);
/// The Plan's element type for an MLIR element type (index: I64); none if the
/// runtime has no such type.
std::optional<DType> dtypeOf(Type element);
/// Bytes the Plan owns, 64-byte aligned (weights are read with aligned loads).
std::shared_ptr<void> allocateAligned(size_t bytes);

class PlanWalker {
public:
  PlanWalker(func::FuncOp func, const rt::KernelOptions &options, octet::PlanConstants constants)
      : func_(func), options_(options), constantsMode_(constants),
        plan_(std::make_unique<rt::Plan>()) {}

  FailureOr<std::unique_ptr<rt::Plan>> build();

private:
  // ---- scalars ----
  ScalarId addScalar(Scalar scalar);
  /// The scalar of operation `kind` on `a`, `b` (`c`: Select's second choice), unfolded.
  ScalarId addOperation(Scalar::Kind kind, ScalarId a, ScalarId b, ScalarId c = -1,
                        Scalar::Predicate predicate = Scalar::Predicate::Eq, std::string what = "");
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
  /// resultTensor with the shape from the op's shape rule (resultShape).
  FailureOr<TensorId> shapedResultTensor(Operation *op, Value result);
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
  /// When the attention's only user is an octet.quantize per tensor (constant
  /// scale and zero point), the attention step writes the quantized output
  /// itself (AttentionSpec::outputType) and the quantize is skipped: one pass
  /// over the output instead of two (docs/attention-int8.md).
  LogicalResult foldOutputQuantize(octet::AttentionOp attention, rt::AttentionSpec &spec);
  // ---- embedding sums (PlanEmbedding.cpp) ----
  /// Before the walk: the octet.fused sums of embedding gathers (and their
  /// pack_tokens) that become one embedding_sum step.
  void findEmbeddingSums();
  /// Whether index tensor `ids`, which `gather` reads, is still intact when
  /// `step` (a later op) runs: an argument, a constant, a view of one, or a
  /// slot no op after the gather up to `step` writes.
  bool indicesOutliveStep(Value ids, Operation *gather, Operation *step) const;
  /// A folded gather: its table and index tensors, no step.
  LogicalResult visitFoldedGather(octet::GatherOp gather);
  /// The embedding_sum step of `sum` (an octet.fused or octet.add of
  /// gathers, or a packed gather), at its pack_tokens if it has one.
  LogicalResult buildEmbeddingSum(Operation *sum);
  struct EmbeddingSumParts {
    SmallVector<octet::GatherOp> gathers; ///< in the order the sum adds them
    octet::PackTokensOp pack;             ///< null: the sum is not packed
  };
  DenseMap<Operation *, EmbeddingSumParts> embeddingSums_; ///< by sum op
  llvm::DenseSet<Operation *> foldedGathers_;
  /// Each folded gather's table and index tensors.
  DenseMap<Operation *, std::pair<TensorId, TensorId>> foldedOperands_;

  /// Whether `a` and `b` (or the tensors they view) are in the same arena slot.
  bool sharesArenaSlot(TensorId a, TensorId b) const;
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
  /// Quantize ops an attention step computes (foldOutputQuantize): not built again.
  llvm::DenseSet<Operation *> foldedQuantizes_;
};

} // namespace octet::plan_builder

#endif // OCTET_COMPILER_DRIVER_PLANWALKER_H
