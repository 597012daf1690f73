//===- EliminateQdq.cpp - octet-eliminate-qdq -----------------------------===//
//
// ONNX Runtime's QDQ format spells an INT8 GEMM as float ops between
// QuantizeLinear/DequantizeLinear pairs. This pass turns each GEMM whose
// operands are dequantized (u8 per-tensor activation, s8 symmetric constant
// weight) into `octet.qlinear`, folds a per-tensor quantize of its result
// into it, and cancels quantize(dequantize(q)) with equal parameters. Every
// rewrite keeps the model's values (see docs/int8-quantization.md); the
// only change is the f32 rounding of the accumulator.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/ConstantData.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/QuantizationUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cfloat>
#include <cmath>
#include <cstring>

namespace octet {
#define GEN_PASS_DEF_OCTETELIMINATEQDQ
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The elements of a constant as int64 (integer) or double (float), from a
/// dense attribute or a dense_resource blob; nullopt when unreadable (an
/// elided blob) or too large to be a quantization parameter.
std::optional<SmallVector<double>> constantValues(Value v, int64_t maxElements) {
  ElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || attr.getNumElements() > maxElements)
    return std::nullopt;
  Type element = attr.getElementType();
  SmallVector<double> values;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(element)) {
      for (const APFloat &f : dense.getValues<APFloat>()) {
        bool lost;
        APFloat d = f;
        d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
        values.push_back(d.convertToDouble());
      }
    } else {
      bool isUnsigned = element.isUnsignedInteger();
      for (const APInt &i : dense.getValues<APInt>())
        values.push_back(isUnsigned ? double(i.getZExtValue()) : double(i.getSExtValue()));
    }
    return values;
  }
  std::vector<char> storage;
  std::optional<ArrayRef<char>> data = octet::constantBytes(attr, storage);
  if (!data)
    return std::nullopt;
  ArrayRef<char> bytes = *data;
  int64_t n = attr.getNumElements();
  if (element.isF32() && bytes.size() == size_t(n) * 4) {
    for (int64_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, bytes.data() + 4 * i, 4);
      values.push_back(f);
    }
    return values;
  }
  if (element.isInteger(8) && bytes.size() == size_t(n)) {
    for (int64_t i = 0; i < n; ++i)
      values.push_back(element.isUnsignedInteger() ? double(uint8_t(bytes[i]))
                                                   : double(int8_t(bytes[i])));
    return values;
  }
  return std::nullopt;
}

/// A zero point that is absent or a constant of zeros.
bool isZeroOrAbsent(Value zeroPoint) {
  if (!zeroPoint)
    return true;
  auto values = constantValues(zeroPoint, int64_t(1) << 20);
  return values && llvm::all_of(*values, [](double v) { return v == 0; });
}

/// The qlinear operands of a dequantized activation: u8, per tensor.
struct QuantizedActivation {
  Value data, scale, zeroPoint;
};
std::optional<QuantizedActivation> matchActivation(Value input) {
  auto dq = input.getDefiningOp<DequantizeOp>();
  if (!dq || !dq.getInput().getType().getElementType().isUnsignedInteger(8) ||
      !isPerTensor(dq.getScale(), dq.getAxis()))
    return std::nullopt;
  return QuantizedActivation{dq.getInput(), dq.getScale(), dq.getZeroPoint()};
}

/// The qlinear operands of a dequantized weight: a constant 2-D i8 tensor,
/// zero point 0, one scale or one per output channel (`outputDim`).
struct QuantizedWeight {
  Value data, scale;
  bool perTensor;
};
std::optional<QuantizedWeight> matchWeight(Value weight, int64_t outputDim) {
  auto dq = weight.getDefiningOp<DequantizeOp>();
  if (!dq)
    return std::nullopt;
  Value data = dq.getInput();
  auto type = tensorOf(data);
  if (type.getRank() != 2 || !type.getElementType().isSignlessInteger(8) ||
      !matchPattern(data, m_Constant()) || !isZeroOrAbsent(dq.getZeroPoint()))
    return std::nullopt;
  if (isPerTensor(dq.getScale(), dq.getAxis())) {
    // Splatted into one scale per channel below: it must be a known value.
    if (!constantValues(dq.getScale(), 1))
      return std::nullopt;
    return QuantizedWeight{data, dq.getScale(), true};
  }
  if (!dq.getAxis() || int64_t(*dq.getAxis()) != outputDim)
    return std::nullopt; // per input channel: not a scale of the accumulator
  return QuantizedWeight{data, dq.getScale(), false};
}

/// matmul/linear of a dequantized activation and weight → qlinear.
LogicalResult rewriteGemm(IRRewriter &rewriter, Operation *gemm, Value input, Value weight,
                          Value bias, bool transposeWeight) {
  auto weightType = tensorOf(weight);
  if (weightType.getRank() != 2 || tensorOf(input).getRank() < 1 ||
      !tensorOf(gemm->getResult(0)).getElementType().isF32())
    return failure();
  int64_t outputDim = transposeWeight ? 0 : 1;
  std::optional<QuantizedActivation> activation = matchActivation(input);
  std::optional<QuantizedWeight> quantizedWeight = matchWeight(weight, outputDim);
  if (!activation || !quantizedWeight)
    return failure();
  int64_t n = weightType.getDimSize(outputDim);
  if (quantizedWeight->perTensor && ShapedType::isDynamic(n))
    return failure();

  rewriter.setInsertionPoint(gemm);
  Location loc = gemm->getLoc();
  Type f32 = rewriter.getF32Type();
  Value inputScale = scalarOf(rewriter, loc, activation->scale);
  Value inputZeroPoint =
      activation->zeroPoint
          ? scalarOf(rewriter, loc, activation->zeroPoint)
          : zeroScalar(rewriter, loc, tensorOf(activation->data).getElementType());
  Value weightScale = quantizedWeight->scale;
  if (quantizedWeight->perTensor) {
    double scale = (*constantValues(weightScale, 1))[0];
    auto type = RankedTensorType::get({n}, f32);
    weightScale = ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(type, rewriter.getF32FloatAttr(float(scale))));
  }
  auto qlinear = QLinearOp::create(rewriter, loc, gemm->getResult(0).getType(), activation->data,
                                   quantizedWeight->data, bias, inputScale, inputZeroPoint,
                                   weightScale, Value(), Value(), ValueRange{}, transposeWeight);
  Block *body = rewriter.createBlock(&qlinear.getEpilogue(), {}, {f32}, {loc});
  YieldOp::create(rewriter, loc, body->getArgument(0));
  rewriter.replaceOp(gemm, qlinear.getResult());
  // A per-tensor quantize of the result, its only use, becomes the requantize.
  foldRequantize(rewriter, qlinear);
  return success();
}

/// A scale for which dequantize then quantize gives back every integer: a
/// normal positive f32 constant small enough that 256·scale stays finite.
/// (x - zp)·s rounds to within half an ulp, so ((x - zp)·s)/s is within
/// 2^-23·255 of x - zp and rounds back to it.
bool isExactScale(double s) { return std::isfinite(s) && s >= FLT_MIN && s <= FLT_MAX / 256; }

/// Whether two quantization parameters are the same values (or both absent).
bool sameParameter(Value a, Value b) {
  if (a == b)
    return true;
  if (!a || !b)
    return isZeroOrAbsent(a) && isZeroOrAbsent(b);
  if (tensorOf(a).getShape() != tensorOf(b).getShape())
    return false;
  auto va = constantValues(a, int64_t(1) << 16), vb = constantValues(b, int64_t(1) << 16);
  return va && vb && *va == *vb;
}

/// quantize(dequantize(q)) with the same parameters and element type → q.
LogicalResult cancelRequantize(IRRewriter &rewriter, QuantizeOp quantize) {
  auto dq = quantize.getInput().getDefiningOp<DequantizeOp>();
  if (!dq || dq.getInput().getType() != quantize.getType() || dq.getAxis() != quantize.getAxis())
    return failure();
  if (!sameParameter(dq.getScale(), quantize.getScale()) ||
      !sameParameter(dq.getZeroPoint(), quantize.getZeroPoint()))
    return failure();
  auto scales = constantValues(dq.getScale(), int64_t(1) << 16);
  if (!scales || !llvm::all_of(*scales, isExactScale))
    return failure();
  rewriter.replaceOp(quantize, dq.getInput());
  return success();
}

struct OctetEliminateQdqPass : octet::impl::OctetEliminateQdqBase<OctetEliminateQdqPass> {
  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<Operation *> gemms;
    getOperation().walk([&](Operation *op) {
      if (isa<MatMulOp, LinearOp>(op))
        gemms.push_back(op);
    });
    for (Operation *op : gemms) {
      LogicalResult rewritten =
          TypeSwitch<Operation *, LogicalResult>(op)
              .Case([&](MatMulOp m) {
                return rewriteGemm(rewriter, m, m.getLhs(), m.getRhs(), Value(), false);
              })
              .Case([&](LinearOp l) {
                return rewriteGemm(rewriter, l, l.getInput(), l.getWeight(), l.getBias(),
                                   l.getTransposeWeight());
              });
      numGemms += succeeded(rewritten);
    }
    SmallVector<QuantizeOp> quantizes;
    getOperation().walk([&](QuantizeOp q) { quantizes.push_back(q); });
    for (QuantizeOp q : quantizes)
      numCancelled += succeeded(cancelRequantize(rewriter, q));
    // Dequantized weights and activations whose every consumer moved to a
    // qlinear, and the constants only they read, are dead now.
    SmallVector<Operation *> ops;
    getOperation().walk<WalkOrder::PostOrder>([&](Operation *op) { ops.push_back(op); });
    for (Operation *op : llvm::reverse(ops))
      if (isa<DequantizeOp, QuantizeOp, ConstantOp, ReshapeOp>(op) && op->use_empty())
        rewriter.eraseOp(op);
  }
};
} // namespace
