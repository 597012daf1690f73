//===- Quantize.cpp - octet-quantize --------------------------------------===//
//
// Turns the FP32 linears of a (recognized, fused, calibrated) model into
// INT8 GEMMs: weights symmetric per output channel, activations u8 per
// tensor from the calibration range (static) or per row at run time
// (dynamic). Everything that is not a linear with a constant weight stays
// FP32; docs/int8-quantization.md says what and why.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "compiler/passes/QuantizationUtils.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "compiler/passes/ResourceBlobs.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace octet {
#define GEN_PASS_DEF_OCTETQUANTIZE
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

constexpr StringLiteral kPassName = "octet-quantize";

using Linear = LinearView;

/// A weight quantized symmetrically per output channel.
struct QuantizedWeight {
  Value data, scale;
};

/// An activation's quantized form and its qlinear parameters.
struct QuantizedInput {
  Value data, scale, zeroPoint;
};

/// ONNX Runtime's u8 parameters for the range [min, max] (widened to hold 0):
/// scale = (rmax − rmin) / 255, zero point = saturate(round(−rmin / scale)).
/// Nothing when the range is too small for a normal f32 scale.
std::optional<std::pair<float, uint8_t>> staticParameters(float min, float max) {
  float rmin = std::min(0.0f, min), rmax = std::max(0.0f, max);
  if (rmax == rmin)
    return std::pair<float, uint8_t>{1.0f, 0};
  float scale = (rmax - rmin) / 255.0f;
  if (!(scale >= FLT_MIN))
    return std::nullopt;
  float zeroPoint = std::clamp(std::nearbyint(-rmin / scale), 0.0f, 255.0f);
  return std::pair<float, uint8_t>{scale, uint8_t(zeroPoint)};
}

struct OctetQuantizePass : octet::impl::OctetQuantizeBase<OctetQuantizePass> {
  using OctetQuantizeBase::OctetQuantizeBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    IRRewriter rewriter(&getContext());
    weights.clear();
    // Linears in program order; the input of each not yet visited is
    // quantized once for all the linears reading it. (Inputs are taken as
    // they are then: a linear rewritten earlier may have produced one.)
    SmallVector<Operation *> linears;
    func.walk([&](Operation *op) {
      if (Linear::of(op))
        linears.push_back(op);
    });
    llvm::DenseSet<Operation *> visited;
    SmallVector<QLinearOp> qlinears;
    for (Operation *op : linears)
      if (!visited.contains(op) &&
          failed(quantizeReaders(rewriter, Linear::of(op)->input, visited, qlinears)))
        return signalPassFailure();
    // Static mode: a qlinear feeding only the next linear's quantize
    // produces u8 directly.
    for (QLinearOp qlinear : qlinears)
      numRequantized += bool(foldRequantize(rewriter, qlinear));
  }

  /// Why `linear` stays FP32, or nothing when it can be quantized.
  std::optional<std::string> whyFp32(const Linear &linear) {
    if (!cast<RankedTensorType>(linear.input.getType()).getElementType().isF32())
      return std::string("its input is not f32");
    if (linear.weightType().getRank() != 2 || !isF32Constant(linear.weight))
      return std::string("its weight is not a constant f32 2-D tensor (an activation product, "
                         "e.g. attention's, has no per-channel weight scale)");
    if (mode != QuantMode::Static)
      return std::nullopt;
    if (!linear.op->hasAttr(kCalibAttr))
      return kCalibAttr.str() + " is missing: static mode needs its input's calibrated range";
    return std::nullopt;
  }

  /// Replaces every quantizable linear reading `x` by a qlinear on one
  /// shared quantization of `x`; the others get a remark saying why not.
  /// Fails only on a malformed calibration.
  LogicalResult quantizeReaders(IRRewriter &rewriter, Value x,
                                llvm::DenseSet<Operation *> &visited,
                                SmallVectorImpl<QLinearOp> &qlinears) {
    SmallVector<Linear> readers;
    std::optional<float> lo, hi;
    // Users in program order, so remarks and rewrites are deterministic.
    SmallVector<Operation *> users;
    for (OpOperand &use : x.getUses())
      if (use.getOperandNumber() == 0 && Linear::of(use.getOwner()) &&
          !llvm::is_contained(users, use.getOwner()))
        users.push_back(use.getOwner());
    llvm::sort(users, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    visited.insert(users.begin(), users.end());
    auto keep = [&](Operation *op, const Twine &why) {
      ++numKeptFp32;
      op->emitRemark() << kPassName << ": stays FP32: " << why;
    };
    for (Operation *user : users) {
      Linear linear = *Linear::of(user);
      if (std::optional<std::string> why = whyFp32(linear)) {
        keep(user, *why);
        continue;
      }
      if (!isFinite(linear)) {
        keep(user, "its weight holds a non-finite value");
        continue;
      }
      if (mode == QuantMode::Static) {
        FailureOr<Calibration> calib = parseCalibration(user, linear.k(), kPassName);
        if (failed(calib))
          return failure();
        if (!calib->min || !calib->max) {
          keep(user, kCalibAttr.str() +
                         " has no input_min / input_max: static mode needs its input's range");
          continue;
        }
        lo = std::min(lo.value_or(*calib->min), *calib->min);
        hi = std::max(hi.value_or(*calib->max), *calib->max);
      }
      readers.push_back(linear);
    }
    if (readers.empty())
      return success();

    std::optional<QuantizedInput> input = quantizeInput(rewriter, x, lo, hi);
    if (!input) {
      std::string range;
      llvm::raw_string_ostream(range) << "[" << *lo << ", " << *hi << "]";
      for (const Linear &linear : readers)
        keep(linear.op, "the calibrated input range " + range +
                            " is too small for a normal f32 scale");
      return success();
    }
    for (const Linear &linear : readers) {
      rewriter.setInsertionPoint(linear.op);
      QuantizedWeight weight = quantizeWeight(rewriter, linear);
      Location loc = linear.op->getLoc();
      auto qlinear = QLinearOp::create(
          rewriter, loc, linear.op->getResult(0).getType(), input->data, weight.data, linear.bias,
          input->scale, input->zeroPoint, weight.scale, Value(), Value(), linear.extra,
          linear.transposed);
      if (auto fused = dyn_cast<FusedLinearOp>(linear.op)) {
        rewriter.inlineRegionBefore(fused.getEpilogue(), qlinear.getEpilogue(),
                                    qlinear.getEpilogue().end());
      } else {
        Type f32 = rewriter.getF32Type();
        Block *body = rewriter.createBlock(&qlinear.getEpilogue(), {}, {f32}, {loc});
        YieldOp::create(rewriter, loc, body->getArgument(0));
      }
      rewriter.replaceOp(linear.op, qlinear.getResult());
      // The f32 weight goes as soon as its last reader is quantized.
      if (Operation *old = linear.weight.getDefiningOp(); old && old->use_empty()) {
        weights.erase(linear.weight);
        eraseReplacedConstant(old);
      }
      qlinears.push_back(qlinear);
      ++numQuantized;
    }
    return success();
  }

  static bool isFinite(const Linear &linear) {
    std::vector<float> w = *readF32Constant(linear.weight);
    return llvm::all_of(w, [](float v) { return std::isfinite(v); });
  }

  /// The u8 form of `x` right after its definition: per tensor over
  /// [lo, hi] (static) or per row (dynamic). Nothing when the static range
  /// has no usable scale.
  std::optional<QuantizedInput> quantizeInput(IRRewriter &rewriter, Value x,
                                              std::optional<float> lo, std::optional<float> hi) {
    rewriter.setInsertionPointAfterValue(x);
    Location loc = x.getLoc();
    auto type = cast<RankedTensorType>(x.getType());
    auto u8Type = IntegerType::get(&getContext(), 8, IntegerType::Unsigned);
    auto quantizedType = RankedTensorType::get(type.getShape(), u8Type);
    auto scalar = [&](Type element) { return RankedTensorType::get({}, element); };
    auto zeroPointOf = [&](uint8_t zp) {
      return ConstantOp::create(
          rewriter, loc,
          DenseElementsAttr::get(scalar(u8Type), zp));
    };
    if (mode == QuantMode::Dynamic) {
      SmallVector<int64_t> scaleShape(type.getShape());
      scaleShape.back() = 1;
      Value zeroPoint = zeroPointOf(128);
      auto quantize = QuantizePerRowOp::create(
          rewriter, loc, quantizedType, RankedTensorType::get(scaleShape, rewriter.getF32Type()),
          x);
      return QuantizedInput{quantize.getResult(), quantize.getScale(), zeroPoint};
    }
    std::optional<std::pair<float, uint8_t>> params = staticParameters(*lo, *hi);
    if (!params)
      return std::nullopt;
    Value scale = ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(scalar(rewriter.getF32Type()), params->first));
    Value zeroPoint = zeroPointOf(params->second);
    Value data = QuantizeOp::create(rewriter, loc, quantizedType, x, scale, zeroPoint,
                                    /*axis=*/nullptr);
    return QuantizedInput{data, scale, zeroPoint};
  }

  /// W as i8 per output channel: scale_n = max_k |W[k, n]| / 127 (1 for a
  /// zero column), q = clamp(round_half_even(W / scale_n), -127, 127). One
  /// quantized copy per weight constant, shared by the linears reading it.
  QuantizedWeight quantizeWeight(IRRewriter &rewriter, const Linear &linear) {
    auto found = weights.find(linear.weight);
    if (found != weights.end())
      return found->second;
    std::vector<float> w = *readF32Constant(linear.weight);
    int64_t k = linear.k(), n = linear.n();
    std::vector<float> scales(n, 0.0f);
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c)
        scales[c] = std::max(scales[c], std::fabs(w[linear.index(j, c)]));
    for (float &s : scales)
      s = s == 0.0f ? 1.0f : s / 127.0f;
    std::vector<int8_t> q(w.size());
    for (int64_t j = 0; j < k; ++j)
      for (int64_t c = 0; c < n; ++c) {
        int64_t i = linear.index(j, c);
        q[i] = int8_t(std::clamp(std::nearbyint(w[i] / scales[c]), -127.0f, 127.0f));
      }

    // Weights placed where the old constant is, so every reader sees them.
    OpBuilder::InsertionGuard guard(rewriter);
    Operation *old = linear.weight.getDefiningOp();
    rewriter.setInsertionPoint(old);
    Location loc = old->getLoc();
    auto i8Type = RankedTensorType::get(linear.weightType().getShape(), rewriter.getI8Type());
    ElementsAttr data;
    auto oldValue = cast<ConstantOp>(old).getValue();
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(oldValue)) {
      ArrayRef<char> bytes(reinterpret_cast<const char *>(q.data()), q.size());
      data = DenseResourceElementsAttr::get(
          i8Type, (resource.getRawHandle().getKey() + ".i8").str(),
          HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(int8_t)));
    } else {
      data = DenseElementsAttr::get(i8Type, ArrayRef<int8_t>(q));
    }
    QuantizedWeight result{
        ConstantOp::create(rewriter, loc, data),
        ConstantOp::create(rewriter, loc,
                           DenseElementsAttr::get(
                               RankedTensorType::get({n}, rewriter.getF32Type()),
                               ArrayRef<float>(scales)))};
    weights[linear.weight] = result;
    return result;
  }

  llvm::DenseMap<Value, QuantizedWeight> weights;
};

} // namespace
