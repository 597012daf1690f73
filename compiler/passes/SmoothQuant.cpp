//===- SmoothQuant.cpp - octet-smoothquant --------------------------------===//
//
// SmoothQuant (Xiao et al., 2023): activation outliers live in a few input
// channels, which per-tensor INT8 quantization of X handles badly. Since
// X·W = (X·diag(1/s))·(diag(s)·W) for any positive s, the pass moves part of
// each channel's range from X into W (which has per-channel scales anyway):
// W's rows (input channels) × s, and 1/s folded into whatever produces X so
// that no run-time op is added where it can be avoided. See docs/int8.md.
//
//===----------------------------------------------------------------------===//
#include "compiler/ir/AttrNames.h"
#include "compiler/passes/Passes.h"
#include "compiler/passes/QuantizationUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "compiler/passes/ResourceBlobs.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <variant>

namespace octet {
#define GEN_PASS_DEF_OCTETSMOOTHQUANT
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

// s outside this range would push W or X towards f32 overflow or denormals.
constexpr double kMinScale = 1e-5, kMaxScale = 1e5;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

/// Replaces the constant that `operand` reads by a new one holding `values`
/// (a resource blob when the old one was, so weights stay out of printing and
/// folding), placed where the old one is; the old one goes when unused. The
/// old constant may be shared (CSE merges equal γs): only this use changes.
void replaceConstant(OpOperand &operand, ArrayRef<float> values) {
  auto old = operand.get().getDefiningOp<ConstantOp>();
  auto type = cast<RankedTensorType>(old.getType());
  ElementsAttr attr;
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(old.getValue())) {
    ArrayRef<char> bytes(reinterpret_cast<const char *>(values.data()),
                         values.size() * sizeof(float));
    attr = DenseResourceElementsAttr::get(
        type, (resource.getRawHandle().getKey() + ".smooth").str(),
        HeapAsmResourceBlob::allocateAndCopyWithAlign(bytes, alignof(float)));
  } else {
    attr = DenseElementsAttr::get(type, values);
  }
  OpBuilder builder(old);
  operand.set(ConstantOp::create(builder, old.getLoc(), attr));
  if (old->use_empty())
    eraseReplacedConstant(old);
}

//===----------------------------------------------------------------------===//
// Linears
//===----------------------------------------------------------------------===//

using Gemm = LinearView;

/// The calibration of X/s: channel maxima divide exactly; the per-tensor
/// range can only be bounded, channel by channel, by what both statistics
/// say about it (documented in docs/int8.md).
DictionaryAttr smoothedCalibration(const Calibration &calib, ArrayRef<float> s) {
  MLIRContext *ctx = calib.dict.getContext();
  const size_t k = s.size();
  std::vector<float> absMax(k), channelMin(k), channelMax(k);
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (size_t j = 0; j < k; ++j) {
    absMax[j] = calib.absMax[j] / s[j];
    // Channel j's values lie in [chmin, chmax] (or ±absmax without them) and
    // in the per-tensor [min, max]; X/s divides them by s_j > 0.
    float channelLo = calib.channelMin ? (*calib.channelMin)[j] : -calib.absMax[j];
    float channelHi = calib.channelMax ? (*calib.channelMax)[j] : calib.absMax[j];
    if (calib.min)
      channelLo = std::max(channelLo, *calib.min);
    if (calib.max)
      channelHi = std::min(channelHi, *calib.max);
    lo = std::min(lo, channelLo / s[j]);
    hi = std::max(hi, channelHi / s[j]);
    if (calib.channelMin) {
      channelMin[j] = (*calib.channelMin)[j] / s[j];
      channelMax[j] = (*calib.channelMax)[j] / s[j];
    }
  }
  NamedAttrList entries(calib.dict);
  Type f32 = Float32Type::get(ctx);
  auto channels = RankedTensorType::get({int64_t(k)}, f32);
  entries.set("input_absmax", DenseElementsAttr::get(channels, ArrayRef<float>(absMax)));
  if (calib.min)
    entries.set("input_min", FloatAttr::get(f32, lo));
  if (calib.max)
    entries.set("input_max", FloatAttr::get(f32, hi));
  if (calib.channelMin) {
    entries.set("input_channel_min", DenseElementsAttr::get(channels, ArrayRef<float>(channelMin)));
    entries.set("input_channel_max", DenseElementsAttr::get(channels, ArrayRef<float>(channelMax)));
  }
  return entries.getDictionary(ctx);
}

/// max |W| over the weights each input channel multiplies (row j of [K, N]).
std::vector<float> inputChannelAbsMax(const Gemm &gemm, ArrayRef<float> w) {
  std::vector<float> result(gemm.k(), 0.0f);
  for (int64_t j = 0; j < gemm.k(); ++j)
    for (int64_t c = 0; c < gemm.n(); ++c)
      result[j] = std::max(result[j], std::fabs(w[gemm.index(j, c)]));
  return result;
}

//===----------------------------------------------------------------------===//
// Where 1/s goes
//===----------------------------------------------------------------------===//

/// How the producer of X absorbs X/s.
struct Fold {
  enum Kind {
    NormAffine,    // layer_norm / add_layer_norm: γ/s, β/s
    OutputColumns, // a linear (for attention: the one producing V): columns/s, bias/s
    EpilogueScale, // fused_linear: · (1/s) appended to the epilogue
  } kind;
  Operation *op;
  int64_t columnOffset = 0; // OutputColumns: where X's channels start in the linear's N
};

/// Why `v`'s producer cannot absorb 1/s, or how it does.
using FoldOrReason = std::variant<Fold, std::string>;

std::string describe(Operation *op) {
  return op ? "'" + op->getName().getStringRef().str() + "'" : std::string("a function argument");
}

/// A linear with a constant f32 weight and a constant bias (or none).
bool hasConstantWeightAndBias(const Gemm &gemm) {
  return isF32Constant(gemm.weight) && (!gemm.bias || isF32Constant(gemm.bias));
}

/// The linear whose output columns [offset, offset + k) are attention's V,
/// directly or through a slice of the merged Q/K/V linear, when every other
/// reader of that linear reads other columns (so scaling them changes V only).
FoldOrReason valueProjection(AttentionOp attention, int64_t k) {
  Value v = attention.getValue();
  if (!v.hasOneUse() || attention.getQuery() == v || attention.getKey() == v)
    return std::string("attention's V is also used elsewhere");
  int64_t offset = 0;
  Value projected = v;
  if (auto slice = v.getDefiningOp<SliceOp>()) {
    int64_t lastAxis = cast<RankedTensorType>(slice.getType()).getRank() - 1;
    auto window = [&](SliceOp s) -> std::optional<std::pair<int64_t, int64_t>> {
      if (!s.getStarts().empty() || !s.getEnds().empty() || s.getAxes().size() != 1 ||
          s.getAxes()[0] != lastAxis || s.getSteps()[0] != 1 || s.getStaticStarts()[0] < 0 ||
          s.getStaticEnds()[0] < s.getStaticStarts()[0])
        return std::nullopt;
      return std::pair{s.getStaticStarts()[0], s.getStaticEnds()[0]};
    };
    auto own = window(slice);
    if (!own || own->second - own->first != k)
      return std::string("attention's V is not a static last-axis slice of a linear");
    projected = slice.getInput();
    for (Operation *user : projected.getUsers()) {
      auto sibling = dyn_cast<SliceOp>(user);
      auto other = sibling ? window(sibling) : std::nullopt;
      if (!other || (sibling != slice && other->first < own->second && own->first < other->second))
        return std::string("the linear producing V has other readers of V's columns");
    }
    offset = own->first;
  }
  auto linear = projected.getDefiningOp<LinearOp>();
  std::optional<Gemm> gemm = Gemm::of(linear);
  if (!gemm || !hasConstantWeightAndBias(*gemm) || offset + k > gemm->n())
    return std::string("attention's V does not come from a linear with constant weight and bias");
  return Fold{Fold::OutputColumns, linear, offset};
}

FoldOrReason planFold(Value x, int64_t k) {
  Operation *producer = x.getDefiningOp();
  if (isa_and_nonnull<LayerNormOp, AddLayerNormOp>(producer)) {
    auto [gamma, beta] = isa<LayerNormOp>(producer)
                             ? std::pair<Value, Value>(cast<LayerNormOp>(producer).getGamma(),
                                                       cast<LayerNormOp>(producer).getBeta())
                             : std::pair<Value, Value>(cast<AddLayerNormOp>(producer).getGamma(),
                                                       cast<AddLayerNormOp>(producer).getBeta());
    for (Value param : {gamma, beta})
      if (param && (!isF32Constant(param) ||
                    cast<RankedTensorType>(param.getType()).getShape().back() != k))
        return describe(producer) + "'s γ and β are not constants over the " + std::to_string(k) +
               " channels";
    return Fold{Fold::NormAffine, producer};
  }
  if (auto attention = dyn_cast_or_null<AttentionOp>(producer))
    return valueProjection(attention, k);
  if (auto linear = dyn_cast_or_null<LinearOp>(producer)) {
    Gemm gemm = *Gemm::of(linear);
    if (!hasConstantWeightAndBias(gemm))
      return std::string("the producing linear's weight or bias is not a constant");
    return Fold{Fold::OutputColumns, linear, 0};
  }
  if (isa_and_nonnull<FusedLinearOp>(producer))
    return Fold{Fold::EpilogueScale, producer};
  return "its input comes from " + describe(producer) + ", which cannot absorb 1/s";
}

/// Divides element i of the constant in `operand` by s[(i - offset) mod K]
/// for the channels [offset, offset + K) of its last axis.
void divideChannels(OpOperand &operand, ArrayRef<float> s, int64_t offset = 0) {
  std::vector<float> values = *readF32Constant(operand.get());
  int64_t width = cast<RankedTensorType>(operand.get().getType()).getShape().back();
  int64_t k = s.size();
  for (size_t i = 0; i < values.size(); ++i) {
    int64_t channel = int64_t(i % width) - offset;
    if (channel >= 0 && channel < k)
      values[i] /= s[channel];
  }
  replaceConstant(operand, values);
}

void applyFold(const Fold &fold, ArrayRef<float> s) {
  switch (fold.kind) {
  case Fold::NormAffine: {
    // γ is operand 1 of layer_norm, 2 of add_layer_norm; β follows it.
    unsigned gammaIndex = isa<LayerNormOp>(fold.op) ? 1 : 2;
    for (unsigned i = gammaIndex; i < fold.op->getNumOperands(); ++i)
      divideChannels(fold.op->getOpOperand(i), s);
    return;
  }
  case Fold::OutputColumns: {
    Gemm gemm = *Gemm::of(fold.op);
    std::vector<float> w = *readF32Constant(gemm.weight);
    for (int64_t c = 0; c < int64_t(s.size()); ++c)
      for (int64_t j = 0; j < gemm.k(); ++j)
        w[gemm.index(j, fold.columnOffset + c)] /= s[c];
    replaceConstant(gemm.weightOperand(), w);
    if (gemm.bias)
      divideChannels(gemm.biasOperand(), s, fold.columnOffset);
    return;
  }
  case Fold::EpilogueScale: {
    // GELU (or whatever the epilogue is) is not positively homogeneous, so
    // the 1/s cannot move into W and b: one more multiply per element, by a
    // new [K] extra operand, after the existing epilogue.
    auto old = cast<FusedLinearOp>(fold.op);
    OpBuilder builder(old);
    Location loc = old.getLoc();
    Type f32 = builder.getF32Type();
    std::vector<float> inverse(s.size());
    for (size_t j = 0; j < s.size(); ++j)
      inverse[j] = 1.0f / s[j];
    Value scale =
        ConstantOp::create(builder, loc,
                           DenseElementsAttr::get(RankedTensorType::get({int64_t(s.size())}, f32),
                                                  ArrayRef<float>(inverse)));
    SmallVector<Value> extras(old.getExtra());
    extras.push_back(scale);
    auto fused = FusedLinearOp::create(builder, loc, old.getType(), old.getInput(), old.getWeight(),
                                       old.getBias(), extras, old.getTransposeWeight());
    fused->setDiscardableAttrs(old->getDiscardableAttrDictionary());
    fused.getEpilogue().takeBody(old.getEpilogue());
    Block &body = fused.getEpilogue().front();
    BlockArgument factor = body.addArgument(f32, loc);
    auto yield = cast<YieldOp>(body.getTerminator());
    builder.setInsertionPoint(yield);
    yield->setOperand(0, arith::MulFOp::create(builder, loc, yield.getValue(), factor).getResult());
    old.getResult().replaceAllUsesWith(fused.getResult());
    old.erase();
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct OctetSmoothQuantPass : octet::impl::OctetSmoothQuantBase<OctetSmoothQuantPass> {
  using OctetSmoothQuantBase::OctetSmoothQuantBase;

  /// A bad option fails the pipeline once, before any function runs.
  LogicalResult initialize(MLIRContext *ctx) override {
    double strength = alpha;
    if (strength >= 0.0 && strength <= 1.0)
      return success();
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%g", strength);
    return emitError(UnknownLoc::get(ctx))
           << "octet-smoothquant: alpha = " << text
           << " is outside [0, 1] (the share of X's range moved into W)";
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // The inputs of calibrated linears, in program order: each is smoothed
    // once, with one s for all its readers.
    llvm::SetVector<Value> inputs;
    func.walk([&](Operation *op) {
      std::optional<Gemm> gemm = Gemm::of(op);
      if (gemm && op->hasAttr(kCalibAttr) && !op->hasAttr(octet::attr::kSmoothQuant))
        inputs.insert(gemm->input);
    });
    for (Value x : inputs)
      if (failed(smooth(x)))
        return signalPassFailure();
  }

  /// Smooths every linear reading `x`, or explains with a remark why not.
  /// Fails only on a malformed calibration.
  LogicalResult smooth(Value x) {
    SmallVector<Gemm> readers;
    // Remarks go on the first reader in program order (users are in any order).
    SmallVector<Operation *> users(x.getUsers());
    if (users.empty())
      return success();
    Operation *first = users.front();
    for (Operation *user : users)
      if (user->getBlock() == first->getBlock() && user->isBeforeInBlock(first))
        first = user;
    auto skip = [&](const Twine &why) {
      ++numSkipped;
      first->emitRemark() << "octet-smoothquant: not smoothed: " << why;
      return success();
    };
    // Calibrated linears reading X as their GEMM input; any other use needs
    // X unscaled, which only a duplicated LayerNorm can still provide.
    SmallVector<OpOperand *> readerUses;
    std::string otherUse;
    for (OpOperand &use : x.getUses()) {
      Operation *user = use.getOwner();
      std::optional<Gemm> gemm = Gemm::of(user);
      if (!gemm || use.getOperandNumber() != 0) {
        if (otherUse.empty())
          otherUse = "its input also feeds " + describe(user) + ", which needs it unscaled";
        continue;
      }
      if (!user->hasAttr(kCalibAttr) || user->hasAttr(octet::attr::kSmoothQuant)) {
        if (otherUse.empty())
          otherUse = "its input also feeds a linear without " + kCalibAttr.str() +
                     " (or one already smoothed)";
        continue;
      }
      if (!isF32Constant(gemm->weight))
        return skip("a weight reading its input is not an f32 constant");
      readerUses.push_back(&use);
      if (llvm::none_of(readers, [&](const Gemm &g) { return g.op == user; }))
        readers.push_back(*gemm);
    }
    if (readers.empty())
      return skip(otherUse);
    Operation *producer = x.getDefiningOp();
    const bool duplicate = !otherUse.empty();
    if (duplicate && !(duplicateNorm && isa_and_nonnull<LayerNormOp, AddLayerNormOp>(producer)))
      return skip(otherUse);
    int64_t k = readers.front().k();
    if (llvm::any_of(readers, [&](const Gemm &g) { return g.k() != k; }))
      return skip("the linears reading its input disagree on K");

    // One s for all readers: from the channel-wise max of their statistics.
    SmallVector<Calibration> calibrations;
    std::vector<float> xMax(k, 0.0f), wMax(k, 0.0f);
    for (const Gemm &gemm : readers) {
      FailureOr<Calibration> calib = parseCalibration(gemm.op, k, "octet-smoothquant");
      if (failed(calib))
        return failure();
      std::vector<float> w = inputChannelAbsMax(gemm, *readF32Constant(gemm.weight));
      for (int64_t j = 0; j < k; ++j) {
        xMax[j] = std::max(xMax[j], calib->absMax[j]);
        wMax[j] = std::max(wMax[j], w[j]);
      }
      calibrations.push_back(std::move(*calib));
    }

    FoldOrReason fold = planFold(x, k);
    if (auto *why = std::get_if<std::string>(&fold))
      return skip(*why);
    if (duplicate) {
      // Post-LN: the LayerNorm's result is also the residual. A copy of it
      // (recomputed, one more pass over X) feeds the smoothed linears and
      // absorbs γ/s, β/s; the original keeps serving the other uses.
      OpBuilder builder(producer->getContext());
      builder.setInsertionPointAfter(producer);
      Operation *copy = builder.clone(*producer);
      for (OpOperand *use : readerUses)
        use->set(copy->getResult(0));
      std::get<Fold>(fold).op = copy;
      ++numDuplicated;
    }

    double strength = alpha;
    std::vector<float> s(k);
    for (int64_t j = 0; j < k; ++j) {
      double scale = 1.0;
      if (xMax[j] > 0 && wMax[j] > 0)
        scale = std::pow(double(xMax[j]), strength) / std::pow(double(wMax[j]), 1.0 - strength);
      s[j] = float(std::clamp(scale, kMinScale, kMaxScale));
    }

    MLIRContext *ctx = x.getContext();
    auto marker =
        DictionaryAttr::get(ctx, {NamedAttribute(StringAttr::get(ctx, "alpha"),
                                                 FloatAttr::get(Float32Type::get(ctx), strength))});
    for (auto [gemm, calib] : llvm::zip_equal(readers, calibrations)) {
      std::vector<float> w = *readF32Constant(gemm.weight);
      for (int64_t j = 0; j < k; ++j)
        for (int64_t c = 0; c < gemm.n(); ++c)
          w[gemm.index(j, c)] *= s[j];
      replaceConstant(gemm.weightOperand(), w);
      gemm.op->setAttr(kCalibAttr, smoothedCalibration(calib, s));
      gemm.op->setAttr(octet::attr::kSmoothQuant, marker);
      ++numSmoothed;
    }
    applyFold(std::get<Fold>(fold), s);
    return success();
  }
};

} // namespace
