//===- QuantizationUtils.cpp - what the INT8 passes share -----------------===//
#include "compiler/passes/QuantizationUtils.h"
#include "compiler/ir/ConstantData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>
#include <cstring>

using namespace mlir;

namespace octet {

std::optional<LinearView> LinearView::of(Operation *op) {
  std::optional<LinearView> view;
  if (auto linear = dyn_cast_or_null<LinearOp>(op))
    view = LinearView{op, linear.getInput(), linear.getWeight(), linear.getBias(), ValueRange{},
                      linear.getTransposeWeight()};
  else if (auto fused = dyn_cast_or_null<FusedLinearOp>(op))
    view = LinearView{op, fused.getInput(), fused.getWeight(), fused.getBias(), fused.getExtra(),
                      fused.getTransposeWeight()};
  if (view && view->weightType().getRank() == 2) {
    // Once: index() runs per weight element in the passes' loops.
    view->kDim = view->weightType().getDimSize(view->transposed ? 1 : 0);
    view->nDim = view->weightType().getDimSize(view->transposed ? 0 : 1);
  }
  return view;
}


/// Reads an f32 constant (dense, splat or resource blob) into `out`, or only
/// checks that it is one when `out` is null (no copy).
static bool readF32ConstantInto(Value v, std::vector<float> *out) {
  auto constant = v ? v.getDefiningOp<ConstantOp>() : ConstantOp();
  if (!constant)
    return false;
  auto type = cast<RankedTensorType>(constant.getType());
  if (!type.getElementType().isF32() || !type.hasStaticShape())
    return false;
  std::vector<char> storage;
  std::optional<ArrayRef<char>> bytes = octet::constantBytes(constant.getValue(), storage);
  if (!bytes)
    return false; // elided, or not a dense or resource attribute
  if (out) {
    out->resize(type.getNumElements());
    std::memcpy(out->data(), bytes->data(), bytes->size());
  }
  return true;
}

std::optional<std::vector<float>> readF32Constant(Value v) {
  std::vector<float> values;
  if (!readF32ConstantInto(v, &values))
    return std::nullopt;
  return values;
}

bool isF32Constant(Value v) { return readF32ConstantInto(v, nullptr); }

FailureOr<Calibration> parseCalibration(Operation *op, int64_t k, StringRef passName) {
  auto fail = [&](const Twine &why) -> LogicalResult {
    return op->emitError() << passName << ": bad " << kCalibAttr << ": " << why;
  };
  auto dict = dyn_cast<DictionaryAttr>(op->getAttr(kCalibAttr));
  if (!dict)
    return fail("expected a dictionary {input_absmax = dense<...> : tensor<Kxf32>, "
                "input_min = <f32>, input_max = <f32>}");
  Calibration calib{dict, {}, std::nullopt, std::nullopt};
  auto absMax = dyn_cast_or_null<DenseElementsAttr>(dict.get("input_absmax"));
  if (!absMax || !absMax.getElementType().isF32() ||
      cast<ShapedType>(absMax.getType()).getRank() != 1)
    return fail("input_absmax must be a dense 1-D f32 tensor");
  if (absMax.getNumElements() != k)
    return fail("input_absmax has " + Twine(absMax.getNumElements()) +
                " elements, but the weight has K = " + Twine(k) + " input features");
  for (auto [j, v] : llvm::enumerate(absMax.getValues<float>())) {
    if (!std::isfinite(v) || v < 0)
      return op->emitError() << passName << ": bad " << kCalibAttr << ": input_absmax[" << j
                             << "] = " << v << "; expected finite values >= 0";
    calib.absMax.push_back(v);
  }
  for (auto [name, slot] :
       {std::pair{"input_min", &calib.min}, std::pair{"input_max", &calib.max}}) {
    Attribute attr = dict.get(name);
    if (!attr)
      continue;
    auto value = dyn_cast<FloatAttr>(attr);
    if (!value || !std::isfinite(value.getValueAsDouble()))
      return fail(Twine(name) + " must be a finite float");
    *slot = float(value.getValueAsDouble());
  }
  if (calib.min && calib.max && *calib.min > *calib.max)
    return fail("input_min > input_max");
  for (auto [name, slot] : {std::pair{"input_channel_min", &calib.channelMin},
                            std::pair{"input_channel_max", &calib.channelMax}}) {
    Attribute attr = dict.get(name);
    if (!attr)
      continue;
    auto values = dyn_cast<DenseElementsAttr>(attr);
    if (!values || !values.getElementType().isF32() ||
        cast<ShapedType>(values.getType()).getRank() != 1 || values.getNumElements() != k)
      return fail(Twine(name) + " must be a dense 1-D f32 tensor of K = " + Twine(k) +
                  " elements");
    slot->emplace();
    for (float v : values.getValues<float>()) {
      if (!std::isfinite(v))
        return fail(Twine(name) + " must hold finite values");
      (*slot)->push_back(v);
    }
  }
  if (calib.channelMin.has_value() != calib.channelMax.has_value())
    return fail("input_channel_min and input_channel_max come together");
  if (calib.channelMin)
    for (int64_t j = 0; j < k; ++j)
      if ((*calib.channelMin)[j] > (*calib.channelMax)[j] ||
          std::max(-(*calib.channelMin)[j], (*calib.channelMax)[j]) > calib.absMax[j])
        return fail("channel " + Twine(j) +
                    ": input_channel_min/max disagree with each other or with input_absmax");
  return calib;
}

static RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

bool isPerTensor(Value scale, std::optional<uint64_t> axis) {
  auto type = tensorOf(scale);
  return type.getRank() == 0 || (type.getRank() == 1 && type.getDimSize(0) == 1 && !axis);
}

Value scalarOf(OpBuilder &b, Location loc, Value v) {
  auto type = tensorOf(v);
  if (type.getRank() == 0)
    return v;
  return ReshapeOp::create(b, loc, RankedTensorType::get({}, type.getElementType()), v,
                           ValueRange{});
}

Value zeroScalar(OpBuilder &b, Location loc, Type element) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, b.getZeroAttr(element)));
}

QLinearOp foldRequantize(RewriterBase &rewriter, QLinearOp qlinear) {
  Value result = qlinear.getResult();
  if (!qlinear.getType().getElementType().isF32() || !result.hasOneUse())
    return nullptr;
  auto quantize = dyn_cast<QuantizeOp>(*result.getUsers().begin());
  if (!quantize || !isPerTensor(quantize.getScale(), quantize.getAxis()))
    return nullptr;
  // At the quantize: its parameters may be defined after the qlinear.
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(quantize);
  Location loc = qlinear.getLoc();
  Type element = quantize.getType().getElementType();
  Value outputScale = scalarOf(rewriter, loc, quantize.getScale());
  Value outputZeroPoint = quantize.getZeroPoint()
                              ? scalarOf(rewriter, loc, quantize.getZeroPoint())
                              : zeroScalar(rewriter, loc, element);
  auto fused = QLinearOp::create(
      rewriter, loc, quantize.getType(), qlinear.getInput(), qlinear.getWeight(),
      qlinear.getBias(), qlinear.getInputScale(), qlinear.getInputZeroPoint(),
      qlinear.getWeightScale(), outputScale, outputZeroPoint, qlinear.getExtra(),
      qlinear.getTransposeWeight());
  rewriter.inlineRegionBefore(qlinear.getEpilogue(), fused.getEpilogue(),
                              fused.getEpilogue().end());
  rewriter.replaceOp(quantize, fused.getResult());
  rewriter.eraseOp(qlinear);
  return fused;
}

} // namespace octet
