//===- PlanInt8.cpp - Plan builder: the INT8 op visitors ------------------===//
//
// octet.quantize / dequantize, octet.qlinear (its packed or plain weight,
// scales and epilogue) and octet.quantize_per_row as steps.
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/PlanWalker.h"

using namespace mlir;
using namespace octet::plan_builder;
namespace rt = octet::rt;
using octet::joinNodeNames;

LogicalResult PlanWalker::foldOutputQuantize(octet::AttentionOp attention,
                                             rt::AttentionSpec &spec) {
  Value result = attention.getResult();
  if (!result.hasOneUse())
    return success();
  auto quantize = dyn_cast<octet::QuantizeOp>(*result.getUsers().begin());
  if (!quantize || !quantize.getZeroPoint())
    return success();
  auto oneElement = [](Value v) {
    return v.getDefiningOp<octet::ConstantOp>() &&
           cast<RankedTensorType>(v.getType()).getNumElements() == 1;
  };
  if (!oneElement(quantize.getScale()) || !oneElement(quantize.getZeroPoint()))
    return success(); // per axis or run-time scales: the quantize step
  Type element = cast<RankedTensorType>(quantize.getType()).getElementType();
  const bool u8 = element.isUnsignedInteger(8);
  if (!u8 && !element.isSignedInteger(8))
    return success();
  FailureOr<const void *> scale = constantBytes(quantize, quantize.getScale());
  FailureOr<const void *> zeroPoint = constantBytes(quantize, quantize.getZeroPoint());
  if (failed(scale) || failed(zeroPoint))
    return failure();
  const float s = *static_cast<const float *>(*scale);
  if (!std::isfinite(s) || !(s > 0))
    return success(); // the quantize step reports it
  FailureOr<TensorId> out = shapedResultTensor(quantize, quantize.getResult());
  if (failed(out))
    return failure();
  // The step writes the quantized output while it reads Q, K, V and the mask:
  // octet-plan-memory keeps them apart (their buffers live until the quantize).
  for (TensorId in : {spec.q, spec.k, spec.v, spec.mask})
    if (in >= 0 && sharesArenaSlot(in, *out))
      return attention.emitError()
                 << "the quantized attention output shares arena slot "
                 << plan_->tensors[*out].index
                 << " with an input it reads: the slots were planned without the fold "
                    "(octet-plan-memory keeps an attention's inputs live until its quantize)",
             failure();
  spec.output = *out;
  spec.outputType = u8 ? rt::DType::U8 : rt::DType::I8;
  spec.outputScale = s;
  spec.outputZeroPoint =
      u8 ? *static_cast<const uint8_t *>(*zeroPoint) : *static_cast<const int8_t *>(*zeroPoint);
  foldedQuantizes_.insert(quantize);
  return success();
}

LogicalResult PlanWalker::visitQuant(Operation *op) {
  if (foldedQuantizes_.contains(op))
    return success(); // the attention before it wrote its output
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
  FailureOr<TensorId> out = shapedResultTensor(op, op->getResult(0));
  if (failed(out))
    return failure();
  if (isa<octet::QuantizeOp>(op))
    return addStep(op, rt::recipe::Quantize{*in, *s, z, axis, *out}, "quantize");
  return addStep(op, rt::recipe::Dequantize{*in, *s, z, axis, *out}, "dequantize");
}

/// How many equal column groups of `op`'s output an attention splits by
/// heads: every user a unit-step slice of the last axis, the slices equal
/// and side by side over all of it, and each slice read only by attentions
/// (mergeSiblingLinears' Q/K/V). 1 for anything else.
static int64_t attentionColumnGroups(octet::QLinearOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getType());
  if (!type || type.getRank() < 1 || type.isDynamicDim(type.getRank() - 1))
    return 1;
  const int64_t axis = type.getRank() - 1, n = type.getDimSize(axis);
  SmallVector<std::pair<int64_t, int64_t>> ranges;
  for (Operation *user : op->getUsers()) {
    auto slice = dyn_cast<octet::SliceOp>(user);
    if (!slice || slice.getAxes().size() != 1 || slice.getAxes()[0] != axis ||
        !slice.getStarts().empty() || !slice.getEnds().empty() || slice.getSteps()[0] != 1)
      return 1;
    for (Operation *reader : slice->getUsers())
      if (!isa<octet::AttentionOp>(reader))
        return 1;
    ranges.emplace_back(slice.getStaticStarts()[0], slice.getStaticEnds()[0]);
  }
  if (ranges.size() < 2)
    return 1;
  llvm::sort(ranges);
  const int64_t width = n / int64_t(ranges.size());
  for (auto [i, range] : llvm::enumerate(ranges))
    if (range.first != int64_t(i) * width || range.second != range.first + width)
      return 1;
  return width * int64_t(ranges.size()) == n ? int64_t(ranges.size()) : 1;
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
  FailureOr<TensorId> out = shapedResultTensor(op, op.getResult());
  if (failed(out))
    return failure();
  spec.output = *out;
  spec.columnGroups = attentionColumnGroups(op);
  return addStep(op, rt::recipe::QLinear{spec, plan_->tensors[*out].dtype}, "qlinear");
}

LogicalResult PlanWalker::visitQuantizePerRow(octet::QuantizePerRowOp op) {
  // Rows may be strided (a slice view); the kernel takes a row stride.
  FailureOr<TensorId> in = tensorFor(op, op.getInput());
  if (failed(in) || failed(in = ensureRowContiguous(op, *in)))
    return failure();
  TensorId results[2];
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    FailureOr<TensorId> out = shapedResultTensor(op, result);
    if (failed(out))
      return failure();
    results[i] = *out;
  }
  return addStep(op, rt::recipe::QuantizePerRow{*in, results[0], results[1]}, "quantize_per_row");
}
