//===- Recognize.cpp - octet-recognize ------------------------------------===//
//
// Rebuilds LayerNorm, GELU, attention, residual+LayerNorm and linear layers
// from the decomposed forms that ONNX exporters emit. Every pattern states
// why its rewrite computes the same values, and requires the matched
// intermediates to have no user outside the match, so a rewrite never
// duplicates work.
//
//===----------------------------------------------------------------------===//
#include "compiler/passes/Passes.h"
#include "compiler/passes/ScalarOps.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace octet {
#define GEN_PASS_DEF_OCTETRECOGNIZE
#include "compiler/passes/Passes.h.inc"
} // namespace octet

using namespace mlir;
using namespace octet;

namespace {

//===----------------------------------------------------------------------===//
// Shared matchers
//===----------------------------------------------------------------------===//

RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Exporters write constants rounded to f32 or to a few digits (0.044715,
/// 1.4142135); a relative 1e-4 accepts those and nothing materially different.
bool approxEqual(double a, double b) {
  return std::abs(a - b) <= 1e-4 * std::max(std::abs(a), std::abs(b));
}

bool isScalarConstant(Value v, double expected) {
  std::optional<double> value = getScalarConstant(v);
  return value && approxEqual(*value, expected);
}

/// The operands of a commutative binary op as (the one `accept` takes, the
/// other), trying both orders.
template <typename Accept>
std::optional<std::pair<Value, Value>> orderOperands(Operation *op, Accept accept) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (accept(lhs))
    return std::make_pair(lhs, rhs);
  if (accept(rhs))
    return std::make_pair(rhs, lhs);
  return std::nullopt;
}

/// True if every user of `v` is one of `ops`, or an `octet.dim` that only
/// sizes some of `ops`: `v` goes away when they do.
bool usedOnlyBy(Value v, ArrayRef<Operation *> ops) {
  auto inOps = [&](Operation *user) { return llvm::is_contained(ops, user); };
  return llvm::all_of(v.getUsers(), [&](Operation *user) {
    return inOps(user) || (isa<DimOp>(user) && llvm::all_of(user->getUsers(), inOps));
  });
}

/// The one user of `v` that reads its data (not an `octet.dim`), or null.
Operation *singleDataUser(Value v) {
  Operation *found = nullptr;
  for (Operation *user : v.getUsers()) {
    if (isa<DimOp>(user))
      continue;
    if (found)
      return nullptr;
    found = user;
  }
  return found;
}

/// `v` = x·c, c·x or x/c with c a one-element constant and x of v's type:
/// (x, the factor).
std::optional<std::pair<Value, double>> matchScalarScaling(Value v) {
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<MulOp>(def)) {
    auto ordered = orderOperands(def, [](Value c) { return getScalarConstant(c).has_value(); });
    if (ordered && ordered->second.getType() == v.getType())
      return std::make_pair(ordered->second, *getScalarConstant(ordered->first));
  }
  if (auto div = dyn_cast_or_null<DivOp>(def)) {
    std::optional<double> divisor = getScalarConstant(div.getRhs());
    if (divisor && *divisor != 0 && div.getLhs().getType() == v.getType())
      return std::make_pair(div.getLhs(), 1.0 / *divisor);
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Run-time dims
//===----------------------------------------------------------------------===//

/// True if dim `i` of `a` and dim `j` of `b` have the same size in every run.
bool sameDim(Value a, int64_t i, Value b, int64_t j) {
  int64_t sizeA = tensorOf(a).getDimSize(i), sizeB = tensorOf(b).getDimSize(j);
  if (!ShapedType::isDynamic(sizeA) || !ShapedType::isDynamic(sizeB))
    return sizeA == sizeB;
  return traceDimSource(a, i) == traceDimSource(b, j);
}

//===----------------------------------------------------------------------===//
// LayerNorm
//===----------------------------------------------------------------------===//

/// The elements of the constant `v` laid out as `type`, or null. `v` may have
/// extra leading size-1 dims (a [1, 1, 768] γ for a [768] one).
ElementsAttr constantAs(Value v, RankedTensorType type) {
  ElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || !type.hasStaticShape() ||
      attr.getElementType() != type.getElementType())
    return {};
  ArrayRef<int64_t> shape = attr.getShapedType().getShape();
  size_t rank = type.getRank();
  if (shape.size() < rank || shape.take_back(rank) != type.getShape() ||
      llvm::any_of(shape.drop_back(rank), [](int64_t d) { return d != 1; }))
    return {};
  if (attr.getShapedType() == type)
    return attr;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr))
    return dense.reshape(type);
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    return DenseResourceElementsAttr::get(type, resource.getRawHandle());
  return {};
}

/// `v` itself when it already has the type of `attr`, else a new constant.
Value materializeConstant(PatternRewriter &rewriter, Location loc, Value v, ElementsAttr attr) {
  if (v.getType() == attr.getType())
    return v;
  return ConstantOp::create(rewriter, loc, attr);
}

/// r if `v` = sqrt(r).
Value matchSqrtOf(Value v) {
  auto sqrt = v.getDefiningOp<SqrtOp>();
  return sqrt && v.hasOneUse() ? sqrt.getInput() : Value();
}

/// r if `v` = 1/sqrt(r): rsqrt(r) or reciprocal(sqrt(r)).
Value matchInverseSqrtOf(Value v) {
  if (!v.hasOneUse())
    return {};
  if (auto rsqrt = v.getDefiningOp<RsqrtOp>())
    return rsqrt.getInput();
  if (auto reciprocal = v.getDefiningOp<ReciprocalOp>())
    return matchSqrtOf(reciprocal.getInput());
  return {};
}

bool isTrailingAxes(ArrayRef<int64_t> axes, int64_t rank) {
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != rank - static_cast<int64_t>(axes.size() - i))
      return false;
  return !axes.empty();
}

struct Normalization {
  Value input;
  int64_t axis;
  double epsilon;
};

/// Matches `normalized` = (x - mean(x)) / sqrt(mean((x - mean(x))²) + ε),
/// both means over the same trailing axes with keepdims; the division may be
/// a product with rsqrt(·) or reciprocal(sqrt(·)), the square pow(·, 2) or a
/// product with itself. mean of the squared deviations is the biased
/// variance, which is what `octet.layer_norm` uses.
std::optional<Normalization> matchNormalization(Value normalized) {
  Operation *normalize = normalized.getDefiningOp();
  if (!normalize || !normalized.hasOneUse())
    return std::nullopt;
  Value centered, radicand;
  if (auto div = dyn_cast<DivOp>(normalize)) {
    centered = div.getLhs();
    radicand = matchSqrtOf(div.getRhs());
  } else if (isa<MulOp>(normalize)) {
    auto ordered = orderOperands(normalize, [](Value v) { return bool(matchInverseSqrtOf(v)); });
    if (ordered) {
      radicand = matchInverseSqrtOf(ordered->first);
      centered = ordered->second;
    }
  }
  auto epsilonAdd = radicand ? radicand.getDefiningOp<AddOp>() : AddOp();
  if (!epsilonAdd || !radicand.hasOneUse())
    return std::nullopt;
  auto epsilonAndVariance = orderOperands(epsilonAdd, [](Value v) {
    std::optional<double> epsilon = getScalarConstant(v);
    return epsilon && *epsilon > 0;
  });
  if (!epsilonAndVariance)
    return std::nullopt;
  auto variance = epsilonAndVariance->second.getDefiningOp<ReduceMeanOp>();
  if (!variance || !variance->hasOneUse() || !variance.getKeepdims() ||
      !variance.getInput().hasOneUse())
    return std::nullopt;
  Operation *square = variance.getInput().getDefiningOp();
  bool isSquare = (isa_and_nonnull<PowOp>(square) && square->getOperand(0) == centered &&
                   getScalarConstant(square->getOperand(1)) == 2.0) ||
                  (isa_and_nonnull<MulOp>(square) && square->getOperand(0) == centered &&
                   square->getOperand(1) == centered);
  auto sub = centered.getDefiningOp<SubOp>();
  if (!isSquare || !sub)
    return std::nullopt;
  Value input = sub.getLhs();
  auto mean = sub.getRhs().getDefiningOp<ReduceMeanOp>();
  if (!mean || mean.getInput() != input || !mean->hasOneUse() || !mean.getKeepdims() ||
      mean.getAxes() != variance.getAxes())
    return std::nullopt;
  RankedTensorType type = tensorOf(input);
  if (!isTrailingAxes(mean.getAxes(), type.getRank()) || !isa<FloatType>(type.getElementType()) ||
      centered.getType() != type || normalized.getType() != type)
    return std::nullopt;
  // x - mean feeds the square and the normalization, nothing else.
  if (!llvm::all_of(centered.getUsers(),
                    [&](Operation *user) { return user == square || user == normalize; }))
    return std::nullopt;
  return Normalization{input, mean.getAxes().front(),
                       *getScalarConstant(epsilonAndVariance->first)};
}

/// normalized·γ (+ β), γ and β constants of the normalized dims' shape
/// → `octet.layer_norm`. The pattern is rooted at the γ product and takes β
/// from its only user, so the result does not depend on which op the driver
/// visits first. Not covered: no γ at all; mean and variance computed from
/// two copies of x - mean (octet-cleanup's CSE merges them first).
struct RecognizeLayerNorm : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MulOp scaleOp, PatternRewriter &rewriter) const override {
    std::optional<Normalization> norm;
    auto normalizedAndGamma = orderOperands(scaleOp, [&](Value v) {
      norm = matchNormalization(v);
      return norm.has_value();
    });
    if (!normalizedAndGamma)
      return rewriter.notifyMatchFailure(scaleOp, "not a normalization times gamma");
    RankedTensorType type = tensorOf(norm->input);
    auto paramType =
        RankedTensorType::get(type.getShape().drop_front(norm->axis), type.getElementType());
    Value gamma = normalizedAndGamma->second;
    ElementsAttr gammaAttr = constantAs(gamma, paramType);
    if (!gammaAttr || scaleOp.getType() != type)
      return rewriter.notifyMatchFailure(scaleOp,
                                         "gamma is not a constant of the normalized shape");

    Operation *replaced = scaleOp;
    Value beta;
    ElementsAttr betaAttr;
    auto add = scaleOp->hasOneUse() ? dyn_cast<AddOp>(*scaleOp->user_begin()) : AddOp();
    if (add) {
      Value other = add.getLhs() == scaleOp.getResult() ? add.getRhs() : add.getLhs();
      if (add.getType() == type && (betaAttr = constantAs(other, paramType))) {
        replaced = add;
        beta = other;
      }
    }

    rewriter.setInsertionPoint(replaced);
    Location loc = replaced->getLoc();
    gamma = materializeConstant(rewriter, loc, gamma, gammaAttr);
    if (beta)
      beta = materializeConstant(rewriter, loc, beta, betaAttr);
    auto layerNorm = LayerNormOp::create(rewriter, loc, norm->input, gamma, beta, norm->axis,
                                         APFloat(static_cast<float>(norm->epsilon)));
    rewriter.replaceOp(replaced, layerNorm.getResult());
    return success();
  }
};

/// layer_norm(a + b) with a, b of the result's type and the sum used only
/// there → `octet.add_layer_norm` (the same op by its definition).
struct RecognizeAddLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormOp layerNorm, PatternRewriter &rewriter) const override {
    auto add = layerNorm.getInput().getDefiningOp<AddOp>();
    if (!add || !add->hasOneUse() || add.getLhs().getType() != layerNorm.getType() ||
        add.getRhs().getType() != layerNorm.getType())
      return rewriter.notifyMatchFailure(layerNorm, "input is not a same-shape sum used once");
    rewriter.replaceOpWithNewOp<AddLayerNormOp>(
        layerNorm, add.getLhs(), add.getRhs(), layerNorm.getGamma(), layerNorm.getBeta(),
        layerNorm.getAxisAttr(), layerNorm.getEpsilonAttr());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// c[0] + c[1]·x + c[2]·x² + c[3]·x³: what the parts of a GELU are made of.
using Polynomial = SmallVector<double, 4>;
constexpr size_t kMaxPolynomialTerms = 4;

std::optional<Polynomial> multiply(const Polynomial &a, const Polynomial &b) {
  if (a.size() + b.size() - 1 > kMaxPolynomialTerms)
    return std::nullopt;
  Polynomial product(a.size() + b.size() - 1, 0.0);
  for (auto [i, x] : llvm::enumerate(a))
    for (auto [j, y] : llvm::enumerate(b))
      product[i + j] += x * y;
  return product;
}

Polynomial addScaled(const Polynomial &a, const Polynomial &b, double factor) {
  Polynomial sum(std::max(a.size(), b.size()), 0.0);
  for (auto [i, x] : llvm::enumerate(a))
    sum[i] += x;
  for (auto [i, y] : llvm::enumerate(b))
    sum[i] += factor * y;
  return sum;
}

/// Coefficient-wise approxEqual; a term expected to be 0 must be exactly 0.
bool approxEqual(const Polynomial &actual, ArrayRef<double> expected) {
  for (size_t i = 0; i < std::max(actual.size(), expected.size()); ++i)
    if (!approxEqual(i < actual.size() ? actual[i] : 0.0, i < expected.size() ? expected[i] : 0.0))
      return false;
  return true;
}

/// Reads `v` as a polynomial in `x` built from single-use add, sub, mul,
/// division by a constant and pow by 1, 2 or 3. When `x` is unset, the first
/// other leaf becomes `x`.
std::optional<Polynomial> matchPolynomial(Value v, Value &x) {
  if (std::optional<double> c = getScalarConstant(v))
    return Polynomial{*c};
  if (v == x)
    return Polynomial{0.0, 1.0};
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<AddOp, SubOp, MulOp, DivOp, PowOp>(def) && v.hasOneUse()) {
    std::optional<Polynomial> lhs = matchPolynomial(def->getOperand(0), x);
    if (!lhs)
      return std::nullopt;
    if (isa<PowOp>(def)) {
      std::optional<double> exponent = getScalarConstant(def->getOperand(1));
      if (!exponent || !llvm::is_contained({1.0, 2.0, 3.0}, *exponent))
        return std::nullopt;
      std::optional<Polynomial> power = lhs;
      for (int i = 1; power && i < *exponent; ++i)
        power = multiply(*power, *lhs);
      return power;
    }
    std::optional<Polynomial> rhs = matchPolynomial(def->getOperand(1), x);
    if (!rhs)
      return std::nullopt;
    if (isa<AddOp>(def))
      return addScaled(*lhs, *rhs, 1.0);
    if (isa<SubOp>(def))
      return addScaled(*lhs, *rhs, -1.0);
    if (isa<MulOp>(def))
      return multiply(*lhs, *rhs);
    if (rhs->size() != 1 || (*rhs)[0] == 0.0)
      return std::nullopt;
    return addScaled({}, *lhs, 1.0 / (*rhs)[0]);
  }
  if (x)
    return std::nullopt;
  x = v;
  return Polynomial{0.0, 1.0};
}

/// Collects the factors of the product `v`: single-use mul nodes (any use
/// count at the root) and divisions by a scalar constant are expanded,
/// scalar constants multiply into `scale`.
void collectFactors(Value v, bool isRoot, SmallVectorImpl<Value> &factors, double &scale) {
  if (isRoot || v.hasOneUse()) {
    if (auto mul = v.getDefiningOp<MulOp>()) {
      collectFactors(mul.getLhs(), false, factors, scale);
      collectFactors(mul.getRhs(), false, factors, scale);
      return;
    }
    if (auto div = v.getDefiningOp<DivOp>()) {
      std::optional<double> divisor = getScalarConstant(div.getRhs());
      if (divisor && *divisor != 0) {
        scale /= *divisor;
        collectFactors(div.getLhs(), false, factors, scale);
        return;
      }
    }
  }
  if (std::optional<double> c = getScalarConstant(v))
    scale *= *c;
  else
    factors.push_back(v);
}

struct GeluMatch {
  Value input;
  StringRef approximate;
};

/// Matches `root` = 0.5·x·(1 + erf(x/√2)) or
/// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) in any association and order:
/// the product's factors other than (1 + erf|tanh(·)) must multiply to 0.5·x
/// and the erf/tanh argument must be the polynomial above. Since both sides
/// are compared as polynomials, the rewrite is exact up to the rounding of
/// the exporter's constants. x·sigmoid(1.702·x) has no such factor and stays.
std::optional<GeluMatch> matchGelu(Value root) {
  SmallVector<Value> factors;
  double scale = 1.0;
  collectFactors(root, /*isRoot=*/true, factors, scale);

  Operation *activation = nullptr;
  SmallVector<Value> others;
  for (Value factor : factors) {
    auto add = factor.getDefiningOp<AddOp>();
    auto oneAndActivation =
        add && factor.hasOneUse()
            ? orderOperands(add, [](Value v) { return isScalarConstant(v, 1.0); })
            : std::nullopt;
    Operation *candidate = oneAndActivation ? oneAndActivation->second.getDefiningOp() : nullptr;
    if (isa_and_nonnull<ErfOp, TanhOp>(candidate) && oneAndActivation->second.hasOneUse()) {
      if (activation)
        return std::nullopt;
      activation = candidate;
    } else {
      others.push_back(factor);
    }
  }
  if (!activation)
    return std::nullopt;

  Value x;
  std::optional<Polynomial> product = Polynomial{scale};
  for (Value factor : others) {
    std::optional<Polynomial> term = matchPolynomial(factor, x);
    product = term ? multiply(*product, *term) : std::nullopt;
    if (!product)
      return std::nullopt;
  }
  std::optional<Polynomial> argument = matchPolynomial(activation->getOperand(0), x);
  if (!argument || !approxEqual(*product, {0.0, 0.5}) || root.getType() != x.getType() ||
      !isa<FloatType>(tensorOf(x).getElementType()))
    return std::nullopt;
  if (isa<ErfOp>(activation) && approxEqual(*argument, {0.0, M_SQRT1_2}))
    return GeluMatch{x, "none"};
  const double sqrt2OverPi = std::sqrt(2.0 / M_PI);
  if (isa<TanhOp>(activation) &&
      approxEqual(*argument, {0.0, sqrt2OverPi, 0.0, sqrt2OverPi * 0.044715}))
    return GeluMatch{x, "tanh"};
  return std::nullopt;
}

/// Rooted at the outermost mul (or the division by 2 of `x·(1 + erf)/2`).
template <typename RootOp> struct RecognizeGelu : OpRewritePattern<RootOp> {
  using OpRewritePattern<RootOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(RootOp root, PatternRewriter &rewriter) const override {
    std::optional<GeluMatch> gelu = matchGelu(root.getResult());
    if (!gelu)
      return rewriter.notifyMatchFailure(root, "not a GELU product");
    rewriter.replaceOpWithNewOp<GeluOp>(root, gelu->input, gelu->approximate);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// Q, Kᵀ or V of one attention: transposes and scalar scalings of
/// reshape(x, [B, S, H, D]), x = [B, S, H·D] (possibly itself scaled).
struct HeadSplit {
  Value input;
  ReshapeOp reshape;
  /// Result dim i is dim permutation[i] of [B, S, H, D].
  SmallVector<int64_t, 4> permutation{0, 1, 2, 3};
  double scale = 1.0;
};

/// Matches the head split that produces `v`, appending the values it consumes
/// to `intermediates`. Scalings fold into `scale` only if `allowScale`:
/// matmul is bilinear, so factors on Q and K are factors on the scores, while
/// one on V is not.
std::optional<HeadSplit> matchHeadSplit(Value v, bool allowScale,
                                        SmallVectorImpl<Value> &intermediates) {
  HeadSplit split;
  while (!(split.reshape = v.getDefiningOp<ReshapeOp>())) {
    intermediates.push_back(v);
    auto transpose = v.getDefiningOp<TransposeOp>();
    auto scaling = allowScale ? matchScalarScaling(v) : std::nullopt;
    if (transpose && transpose.getPermutation().size() == 4) {
      for (int64_t &dim : split.permutation)
        dim = transpose.getPermutation()[dim];
      v = transpose.getInput();
    } else if (scaling) {
      split.scale *= scaling->second;
      v = scaling->first;
    } else {
      return std::nullopt;
    }
  }
  intermediates.push_back(v);
  RankedTensorType heads = split.reshape.getType();
  Value input = split.reshape.getInput();
  RankedTensorType inputType = tensorOf(input);
  if (heads.getRank() != 4 || inputType.getRank() != 3)
    return std::nullopt;
  int64_t numHeads = heads.getDimSize(2), headDim = heads.getDimSize(3);
  if (ShapedType::isDynamic(numHeads) || ShapedType::isDynamic(headDim) ||
      inputType.getDimSize(2) != numHeads * headDim || !sameDim(v, 0, input, 0) ||
      !sameDim(v, 1, input, 1))
    return std::nullopt;
  // DistilBERT-style q / √D before the split.
  while (allowScale && usedOnlyBy(input, {split.reshape.getOperation()})) {
    auto scaling = matchScalarScaling(input);
    if (!scaling)
      break;
    intermediates.push_back(input);
    split.scale *= scaling->second;
    input = scaling->first;
  }
  split.input = input;
  return split;
}

/// Q·Kᵀ times scalars: the matmul and the product of the scalars.
std::optional<std::pair<MatMulOp, double>>
matchScaledScores(Value v, SmallVectorImpl<Value> &intermediates) {
  size_t start = intermediates.size();
  double scale = 1.0;
  while (auto scaling = matchScalarScaling(v)) {
    intermediates.push_back(v);
    scale *= scaling->second;
    v = scaling->first;
  }
  auto matmul = v.getDefiningOp<MatMulOp>();
  if (!matmul) {
    intermediates.truncate(start);
    return std::nullopt;
  }
  intermediates.push_back(v);
  return std::make_pair(matmul, scale);
}

/// Splits the sum `v` (add nodes of v's type used only inside the sum, in any
/// association) into its leaves: exactly one that `isScores` accepts, the
/// others additive masks.
template <typename IsScores>
bool matchAdditiveTerms(Value v, IsScores isScores, SmallVectorImpl<Value> &masks,
                        SmallVectorImpl<Value> &intermediates) {
  SmallVector<Value> work{v}, leaves;
  while (!work.empty()) {
    Value term = work.pop_back_val();
    auto add = term.getDefiningOp<AddOp>();
    if (add && (term == v || term.hasOneUse()) && add.getType() == v.getType()) {
      if (term != v)
        intermediates.push_back(term);
      work.push_back(add.getRhs());
      work.push_back(add.getLhs());
    } else {
      leaves.push_back(term);
    }
  }
  bool foundScores = false;
  for (Value leaf : leaves) {
    if (!foundScores && isScores(leaf))
      foundScores = true;
    else
      masks.push_back(leaf);
  }
  return foundScores;
}

/// True if a mask of `maskShape` broadcasts to `scores` without enlarging it.
bool maskFitsScores(ArrayRef<int64_t> maskShape, RankedTensorType scores) {
  SmallVector<int64_t> broadcast;
  return maskShape.size() <= 4 &&
         succeeded(broadcastShapes(scores.getShape(), maskShape, broadcast)) &&
         ArrayRef<int64_t>(broadcast) == scores.getShape();
}

/// A where mask of the scores, where(cond, fill, scores) (either branch),
/// turned into the additive where(cond, fill, 0).
struct MaskMatch {
  WhereOp where;
  bool fillWhenTrue = false;
  Value fill;
};

/// where(isnan(p), 0, p) — either order of the branches' test — with p the
/// softmax's only other user: PyTorch's sdpa exports zero the NaN rows that a
/// fully masked (all -inf) row of scores gives. The guarded probabilities, or
/// null.
WhereOp matchNanGuard(SoftmaxOp softmax, SmallVectorImpl<Value> &intermediates) {
  Value p = softmax.getResult();
  IsNanOp isNan;
  WhereOp guard;
  for (Operation *user : p.getUsers()) {
    if (auto test = dyn_cast<IsNanOp>(user); test && !isNan)
      isNan = test;
    else if (auto where = dyn_cast<WhereOp>(user); where && !guard)
      guard = where;
    else if (!isa<DimOp>(user))
      return {};
  }
  if (!isNan || !guard || guard.getCondition() != isNan.getResult() ||
      guard.getRhs() != p || !isScalarConstant(guard.getLhs(), 0.0) ||
      guard.getType() != softmax.getType() || !isNan.getResult().hasOneUse())
    return {};
  intermediates.push_back(isNan.getResult());
  return guard;
}

/// A `where` fill at most this is absorbed by any score: s + fill rounds to
/// fill for |s| < 2⁻²⁴·|fill| (1e22 here), so softmax sees the same values,
/// even in fully masked rows. A milder fill (-1e4) would change those rows.
constexpr double kMaxWhereFill = -1e30;

/// softmax(scale·Q·Kᵀ + mask)·V over heads split from and merged back to
/// [B, S, H·D] → `octet.attention`, rooted at the softmax over the last axis
/// of the 4-D scores.
///  - Q = transpose(reshape(q, [B, S, H, D]), [0, 2, 1, 3]), V the same;
///    Kᵀ the same with [0, 2, 3, 1], possibly as two transposes.
///  - Scalar factors on the scores, on Q or Kᵀ (before or after the split)
///    multiply into `scale` (matmul is bilinear; rounding differs only).
///  - An additive mask broadcasting to [B, H, S, S]; a `where` mask with a
///    fill ≤ kMaxWhereFill, rebuilt as an additive one. Masked scores
///    become fill either way; visible ones get + 0.
///  - q, k, v must provably have the same [B, S] in every run, each reshape
///    must split only the last dim, and the final reshape must give back
///    [B, S, H·D]. The mask's dynamic dims are assumed not to enlarge the
///    scores (what the attention op requires of its mask).
struct RecognizeAttention : OpRewritePattern<SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    RankedTensorType scoresType = softmax.getType();
    if (scoresType.getRank() != 4 || softmax.getAxis() != 3)
      return rewriter.notifyMatchFailure(softmax, "not over the last axis of 4-D scores");

    // Down: context = probs·V (probs possibly NaN-guarded), merged back to
    // [B, S, H·D].
    SmallVector<Value> intermediates{softmax.getResult()};
    Value probs = softmax.getResult();
    WhereOp nanGuard = matchNanGuard(softmax, intermediates);
    if (nanGuard) {
      probs = nanGuard.getResult();
      intermediates.push_back(probs);
    }
    auto context = dyn_cast_or_null<MatMulOp>(singleDataUser(probs));
    if (!context || context.getLhs() != probs)
      return rewriter.notifyMatchFailure(
          softmax, "probabilities do not feed probs·V (only where(isnan(p), 0, p) may sit "
                   "between them)");
    auto merge = dyn_cast_or_null<TransposeOp>(singleDataUser(context));
    if (!merge || merge.getPermutation() != ArrayRef<int64_t>{0, 2, 1, 3})
      return rewriter.notifyMatchFailure(softmax, "context is not transposed back");
    auto output = dyn_cast_or_null<ReshapeOp>(singleDataUser(merge));
    if (!output)
      return rewriter.notifyMatchFailure(softmax, "heads are not merged by a reshape");
    intermediates.append({context.getResult(), merge.getResult()});

    // Up: mask, scale, Q·Kᵀ.
    Value masked = softmax.getInput();
    MaskMatch mask;
    auto scores = matchScaledScores(masked, intermediates);
    auto matchScoresIn = [&](Value v) {
      return (scores = matchScaledScores(v, intermediates)).has_value();
    };
    SmallVector<Value> maskTerms;
    if (!scores) {
      intermediates.push_back(masked);
      if (masked.getDefiningOp<AddOp>()) {
        // scores + m₁ + m₂ … in any association (MPNet: a relative position
        // bias per head, then the padding mask).
        if (!matchAdditiveTerms(masked, matchScoresIn, maskTerms, intermediates))
          maskTerms.clear();
      } else if (auto where = masked.getDefiningOp<WhereOp>()) {
        for (auto [fill, other, fillWhenTrue] :
             {std::tuple(where.getLhs(), where.getRhs(), true),
              std::tuple(where.getRhs(), where.getLhs(), false)}) {
          std::optional<double> fillValue = getScalarConstant(fill);
          if (fillValue && *fillValue <= kMaxWhereFill && matchScoresIn(other)) {
            mask = MaskMatch{where, fillWhenTrue, fill};
            break;
          }
        }
      }
    }
    if (!scores || scores->first.getType() != scoresType)
      return rewriter.notifyMatchFailure(
          softmax, "no Q·Kᵀ under the softmax (only scalar factors, added masks and a where "
                   "mask may modify the scores)");
    for (Value term : maskTerms)
      if (!maskFitsScores(tensorOf(term).getShape(), scoresType))
        return rewriter.notifyMatchFailure(softmax, "mask does not broadcast to the scores");
    if (mask.where) {
      SmallVector<int64_t> maskShape;
      if (failed(broadcastShapes(tensorOf(mask.where.getCondition()).getShape(),
                                 tensorOf(mask.fill).getShape(), maskShape)) ||
          !maskFitsScores(maskShape, scoresType))
        return rewriter.notifyMatchFailure(softmax, "where condition does not fit the scores");
    }

    MatMulOp queryKey = scores->first;
    auto query = matchHeadSplit(queryKey.getLhs(), /*allowScale=*/true, intermediates);
    auto key = matchHeadSplit(queryKey.getRhs(), /*allowScale=*/true, intermediates);
    auto value = matchHeadSplit(context.getRhs(), /*allowScale=*/false, intermediates);
    if (!query || !key || !value || query->permutation != ArrayRef<int64_t>{0, 2, 1, 3} ||
        key->permutation != ArrayRef<int64_t>{0, 2, 3, 1} ||
        value->permutation != ArrayRef<int64_t>{0, 2, 1, 3})
      return rewriter.notifyMatchFailure(softmax, "Q, Kᵀ or V is not a head split");

    // Same heads everywhere, and q, k, v of one shape: no matmul broadcasts.
    Value q = query->input, k = key->input, v = value->input;
    RankedTensorType headsType = query->reshape.getType();
    if (key->reshape.getType() != headsType || value->reshape.getType() != headsType ||
        k.getType() != q.getType() || v.getType() != q.getType() || output.getType() != q.getType())
      return rewriter.notifyMatchFailure(softmax, "Q, K, V or the output differ in shape");
    // context is [B, H, S, D] given the above, so its dims 0 and 2 are the
    // batch and sequence sizes too.
    const int64_t contextDimOf[2] = {0, 2};
    for (int64_t i : {0, 1}) {
      if (!sameDim(k, i, q, i) || !sameDim(v, i, q, i))
        return rewriter.notifyMatchFailure(softmax, "q, k and v may differ in batch or sequence");
      if (ShapedType::isDynamic(tensorOf(q).getDimSize(i))) {
        ValueDim merged = traceDimSource(output, i);
        if (merged != traceDimSource(q, i) && merged != traceDimSource(context, contextDimOf[i]))
          return rewriter.notifyMatchFailure(softmax, "output reshape may not be [B, S, H·D]");
      }
    }

    // Values shared inside the match (one head split for Q and K after CSE)
    // are fine; a user outside it would keep the whole chain alive.
    SmallVector<Operation *> matched{output};
    for (Value v : intermediates)
      matched.push_back(v.getDefiningOp());
    if (!llvm::all_of(intermediates, [&](Value v) { return usedOnlyBy(v, matched); }))
      return rewriter.notifyMatchFailure(softmax, "an intermediate has a user outside the match");

    rewriter.setInsertionPoint(output);
    Location loc = output.getLoc();
    Value additiveMask;
    for (Value term : maskTerms)
      additiveMask = additiveMask ? AddOp::create(rewriter, loc, additiveMask, term).getResult()
                                  : term;
    if (mask.where) {
      Type elementType = scoresType.getElementType();
      auto zero =
          ConstantOp::create(rewriter, loc,
                             DenseElementsAttr::get(RankedTensorType::get({}, elementType),
                                                    rewriter.getFloatAttr(elementType, 0.0)));
      Value cond = mask.where.getCondition();
      additiveMask = mask.fillWhenTrue ? WhereOp::create(rewriter, loc, cond, mask.fill, zero)
                                       : WhereOp::create(rewriter, loc, cond, zero, mask.fill);
    }
    double scale = scores->second * query->scale * key->scale;
    auto attention =
        AttentionOp::create(rewriter, loc, q, k, v, additiveMask, /*token_layout=*/Value(),
                            headsType.getDimSize(2),
                            APFloat(static_cast<float>(scale)), /*zero_masked_rows=*/nanGuard != nullptr);
    rewriter.replaceOp(output, attention.getResult());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Linear layers
//===----------------------------------------------------------------------===//

/// matmul(x, W) or matmul(x, transpose(W, [1, 0])), W a 2-D constant, x of
/// rank ≥ 2 → `octet.linear`, with `transpose_weight` in the second case: it
/// computes x·Wᵀ from W as stored ([N, K], torch's layout), so no weight is
/// copied. Attention's matmuls have no constant operand and stay.
struct RecognizeLinear : OpRewritePattern<MatMulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatMulOp matmul, PatternRewriter &rewriter) const override {
    Value weight = matmul.getRhs();
    auto transpose = weight.getDefiningOp<TransposeOp>();
    bool transposed = transpose && transpose.getPermutation() == ArrayRef<int64_t>{1, 0};
    if (transposed)
      weight = transpose.getInput();
    if (!matchPattern(weight, m_Constant()) || tensorOf(weight).getRank() != 2 ||
        tensorOf(matmul.getLhs()).getRank() < 2)
      return rewriter.notifyMatchFailure(matmul, "not x · constant 2-D weight (or its transpose)");
    rewriter.replaceOpWithNewOp<LinearOp>(matmul, matmul.getLhs(), weight, Value(), transposed);
    return success();
  }
};

/// True if `reshape` keeps every row (the last dim, static and unchanged) and
/// only regroups the rows.
bool keepsRows(ReshapeOp reshape) {
  int64_t from = tensorOf(reshape.getInput()).getShape().back();
  int64_t to = reshape.getType().getShape().back();
  return !ShapedType::isDynamic(from) && from == to;
}

/// linear(x, W) + b, b a 1-D constant of the output features and the linear
/// used only there → `octet.linear` with bias ([…, N] + [N] adds b to every
/// row). A reshape that keeps the rows may sit between them (a flattened
/// linear whose leading dims were already restored): adding b to every row
/// commutes with regrouping the rows.
struct FoldBiasIntoLinear : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    ReshapeOp rows;
    auto linearAndBias = orderOperands(add, [&](Value v) {
      rows = v.getDefiningOp<ReshapeOp>();
      if (rows && keepsRows(rows) && v.hasOneUse())
        v = rows.getInput();
      else
        rows = {};
      auto linear = v.getDefiningOp<LinearOp>();
      return linear && !linear.getBias() && v.hasOneUse();
    });
    if (!linearAndBias)
      return rewriter.notifyMatchFailure(add, "no bias-free linear used only here");
    Value product = linearAndBias->first;
    auto linear = (rows ? rows.getInput() : product).getDefiningOp<LinearOp>();
    Value bias = linearAndBias->second;
    RankedTensorType biasType = tensorOf(bias);
    if (!matchPattern(bias, m_Constant()) || biasType.getRank() != 1 ||
        biasType.getDimSize(0) !=
            linear.getWeight().getType().getDimSize(linear.getOutputFeatureDim()) ||
        add.getType() != product.getType())
      return rewriter.notifyMatchFailure(add, "not a constant bias of the output features");
    // Built at the add, which every operand (bias included) dominates.
    Value result = LinearOp::create(rewriter, linear.getLoc(), linear.getInput(),
                                    linear.getWeight(), bias, linear.getTransposeWeight());
    if (rows)
      result = ReshapeOp::create(rewriter, rows.getLoc(), rows.getType(), result,
                                 rows.getDynamicDims());
    rewriter.replaceOp(add, result);
    return success();
  }
};

/// linear(reshape(x)) → reshape(linear(x')) when the reshape merges leading
/// dims of x into fewer ones and keeps whole rows: its result is [..., K]
/// and x's trailing dims from some j on are static with product K (x' is x
/// viewed as [x₀, …, x_{j-1}, K], x itself when j is its last dim). The
/// linear maps each row on its own, so it commutes with regrouping the rows.
/// This turns the dynamo exporter's flattened linears
/// (view [B·S, K] → addmm → view [B, S, N]) back into linears on [B, S, K];
/// the two views then compose to a reshape that octet.reshape's
/// canonicalization proves is the identity.
struct LinearOfMergedRows : OpRewritePattern<LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LinearOp linear, PatternRewriter &rewriter) const override {
    auto merge = linear.getInput().getDefiningOp<ReshapeOp>();
    RankedTensorType type = linear.getType();
    if (!merge || type.isDynamicDim(type.getRank() - 1))
      return rewriter.notifyMatchFailure(linear, "input is not reshaped, or N is dynamic");
    Value x = merge.getInput();
    ArrayRef<int64_t> xShape = tensorOf(x).getShape();
    int64_t rowSize = merge.getType().getShape().back();
    // The first j with ∏ x[j:] = K, searching from the back over static dims.
    int64_t j = xShape.size(), product = 1;
    while (j > 0 && product < rowSize && !ShapedType::isDynamic(xShape[j - 1]))
      product *= xShape[--j];
    if (ShapedType::isDynamic(rowSize) || product != rowSize ||
        j <= merge.getType().getRank() - 1)
      return rewriter.notifyMatchFailure(linear, "reshape does not merge leading dims of rows");

    Location loc = linear.getLoc();
    if (j != static_cast<int64_t>(xShape.size()) - 1) {
      SmallVector<int64_t> rowsShape(xShape.take_front(j));
      rowsShape.push_back(rowSize);
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < j; ++d)
        if (ShapedType::isDynamic(xShape[d]))
          sizes.push_back(rewriter.createOrFold<DimOp>(loc, x, d));
      x = ReshapeOp::create(rewriter, loc,
                            RankedTensorType::get(rowsShape, type.getElementType()), x, sizes);
    }
    auto unmerged = LinearOp::create(rewriter, loc, x, linear.getWeight(), linear.getBias(),
                                     linear.getTransposeWeight());
    // Same leading dims as the merged input, and a static N: the same sizes.
    rewriter.replaceOpWithNewOp<ReshapeOp>(linear, type, unmerged.getResult(),
                                           merge.getDynamicDims());
    return success();
  }
};

struct OctetRecognizePass : octet::impl::OctetRecognizeBase<OctetRecognizePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateRecognizePatterns(patterns);
    // The reshapes that flattened linears and torchlib's Kᵀ leave behind must
    // cancel before attention can match its head split.
    ReshapeOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void octet::populateRecognizePatterns(RewritePatternSet &patterns) {
  // Each pattern only consumes ops no other pattern rewrites (attention's
  // matmuls have no constant weight, LayerNorm's products no erf), and the
  // chained ones (β into LayerNorm, residual into add_layer_norm, bias into
  // linear) look at the already rebuilt op, so the order of visits does not
  // change the result. Moving a linear off a flattened input and folding its
  // bias commute: the bias fold looks through a reshape that keeps rows.
  patterns.add<RecognizeLayerNorm, RecognizeAddLayerNorm, RecognizeGelu<MulOp>,
               RecognizeGelu<DivOp>, RecognizeAttention, RecognizeLinear, FoldBiasIntoLinear,
               LinearOfMergedRows>(patterns.getContext());
}
