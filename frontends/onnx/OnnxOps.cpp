//===- OnnxOps.cpp - one conversion per ONNX op type ----------------------===//
//
// Each ONNX op has one function here, dispatched from `kConversions`. Ops that
// appear in shape sub-graphs first try to compute on shape values (entries
// known at import time) and only otherwise emit tensor ops.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/GraphImporter.h"
#include "frontends/onnx/Importer.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <cmath>

using namespace mlir;
using namespace octet;
using namespace octet::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

static RankedTensorType vectorType(ArrayRef<OpFoldResult> entries, Type elementType,
                                   bool scalar = false) {
  if (scalar)
    return RankedTensorType::get({}, elementType);
  return RankedTensorType::get({static_cast<int64_t>(entries.size())}, elementType);
}

static Value scalarConstant(NodeContext &n, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(FloatAttr::get(elementType, value))
                          : Attribute(IntegerAttr::get(elementType, static_cast<int64_t>(value)));
  return ConstantOp::create(n.builder(), n.loc, DenseElementsAttr::get(type, element));
}

static OpFoldResult product(NodeContext &n, ArrayRef<OpFoldResult> sizes) {
  OpFoldResult result = n.indexConst(1);
  for (OpFoldResult size : sizes)
    result = n.graph.indexOp(IndexOp::Mul, result, size, n.loc);
  return result;
}

/// The broadcast of two sizes: one of them is 1 unless they are equal.
static OpFoldResult broadcastSize(NodeContext &n, OpFoldResult a, OpFoldResult b) {
  if (OpFoldResult known = n.graph.knownBroadcast(a, b))
    return known;
  return n.graph.indexOp(IndexOp::Max, a, b, n.loc);
}

/// An axes list from the attribute (before `inputSince`) or from input 1.
static FailureOr<std::optional<SmallVector<int64_t>>> axesOperand(NodeContext &n,
                                                                  int64_t inputSince) {
  if (n.opset < inputSince)
    return n.intsAttr("axes");
  if (!n.hasInput(1))
    return std::optional<SmallVector<int64_t>>();
  auto axes = n.constantInts(1);
  if (!axes)
    return n.fail("the axes input must be a constant");
  return std::optional<SmallVector<int64_t>>(*axes);
}

/// Normalizes, sorts and deduplicates axes against `rank`.
static FailureOr<SmallVector<int64_t>> normalizeAxes(NodeContext &n, ArrayRef<int64_t> axes,
                                                     int64_t rank) {
  SmallVector<int64_t> result;
  for (int64_t axis : axes) {
    auto normalized = n.normalizeAxis(axis, rank, "axis");
    if (failed(normalized))
      return failure();
    result.push_back(*normalized);
  }
  llvm::sort(result);
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

/// Applies `fn` entrywise to the shape values of inputs 0 and 1 (numpy
/// broadcasting of a scalar or 1-entry side); nullopt when either is not one.
static std::optional<ShapeValue>
combineShapeInputs(NodeContext &n, function_ref<OpFoldResult(OpFoldResult, OpFoldResult)> fn) {
  auto lhs = n.shapeInput(0), rhs = n.shapeInput(1);
  if (!lhs || !rhs)
    return std::nullopt;
  size_t size = std::max(lhs->size(), rhs->size());
  if ((lhs->size() != size && lhs->size() != 1) || (rhs->size() != size && rhs->size() != 1))
    return std::nullopt;
  ShapeValue result;
  for (size_t i = 0; i < size; ++i)
    result.push_back(fn((*lhs)[lhs->size() == 1 ? 0 : i], (*rhs)[rhs->size() == 1 ? 0 : i]));
  return result;
}

static bool isScalarResult(NodeContext &n, unsigned count) {
  for (unsigned i = 0; i < count; ++i)
    if (n.inputType(i).getRank() != 0)
      return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Binary ops and their variadic forms (Sum/Max/Min), folded pairwise.
template <typename OpT> static LogicalResult convertVariadic(NodeContext &n) {
  Value result = n.input(0);
  for (int i = 1; i < n.node.input_size(); ++i) {
    auto next = n.value<OpT>(result, n.input(i));
    if (failed(next))
      return failure();
    result = *next;
  }
  n.setOutput(0, result);
  return success();
}

/// Integer arithmetic that also computes on shape values.
template <typename OpT, IndexOp Kind> static LogicalResult convertArithmetic(NodeContext &n) {
  if (isa<IntegerType>(n.inputType(0).getElementType()) && n.node.input_size() == 2) {
    auto result = combineShapeInputs(
        n, [&](OpFoldResult a, OpFoldResult b) { return n.graph.indexOp(Kind, a, b, n.loc); });
    if (result) {
      auto type = vectorType(*result, n.inputType(0).getElementType(), isScalarResult(n, 2));
      n.setShapeOutput(0, std::move(*result), type);
      return success();
    }
  }
  return convertVariadic<OpT>(n);
}

/// Equal on shape values; a run-time size is never negative, which decides
/// the `Equal(shape, -1)` tests that exporters emit before Expand.
static LogicalResult convertEqual(NodeContext &n) {
  auto result = combineShapeInputs(n, [&](OpFoldResult a, OpFoldResult b) -> OpFoldResult {
    auto ca = getConstantIntValue(a), cb = getConstantIntValue(b);
    if (ca && cb)
      return n.indexConst(*ca == *cb);
    if (a == b)
      return n.indexConst(1);
    if ((ca && *ca < 0) || (cb && *cb < 0))
      return n.indexConst(0);
    return arith::CmpIOp::create(n.builder(), n.loc, arith::CmpIPredicate::eq, n.indexValue(a),
                                 n.indexValue(b))
        .getResult();
  });
  if (!result)
    return convertVariadic<EqualOp>(n);
  auto type = vectorType(*result, n.builder().getI1Type(), isScalarResult(n, 2));
  n.setShapeOutput(0, std::move(*result), type);
  return success();
}

/// a >= b as (a > b) or (a == b), a <= b likewise: exact for NaN too, which
/// compares false both ways (not(a < b) would be true).
template <typename StrictOpT> static LogicalResult convertOrEqual(NodeContext &n) {
  auto strict = n.value<StrictOpT>(n.input(0), n.input(1));
  auto equal = n.value<EqualOp>(n.input(0), n.input(1));
  if (failed(strict) || failed(equal))
    return failure();
  return n.setResult(0, n.value<OrOp>(*strict, *equal));
}

template <typename OpT> static LogicalResult convertUnary(NodeContext &n) {
  Value input = n.input(0);
  n.setOutput(0, OpT::create(n.builder(), n.loc, input.getType(), input).getResult());
  return success();
}

static LogicalResult convertPow(NodeContext &n) {
  Value base = n.input(0), exponent = n.input(1);
  auto baseType = n.inputType(0), exponentType = n.inputType(1);
  if (exponentType.getElementType() != baseType.getElementType())
    exponent =
        CastOp::create(n.builder(), n.loc, exponentType.clone(baseType.getElementType()), exponent);
  return n.setResult(0, n.value<PowOp>(base, exponent));
}

static LogicalResult convertCast(NodeContext &n) {
  int64_t to = n.intAttr("to", 0);
  Type elementType = convertElementType(n.context(), static_cast<int32_t>(to));
  if (!elementType)
    return n.fail("unsupported attribute to=" + onnxTypeName(static_cast<int32_t>(to)));
  auto type = n.inputType(0).clone(elementType);
  auto entries = n.shapeInput(0);
  bool integerToInteger = isa<IntegerType>(n.inputType(0).getElementType()) &&
                          isa<IntegerType>(elementType) && !elementType.isInteger(1);
  if (entries && integerToInteger) {
    n.setShapeOutput(0, std::move(*entries), type);
    return success();
  }
  Value input = n.input(0);
  n.setOutput(0, input.getType() == type
                     ? input
                     : CastOp::create(n.builder(), n.loc, type, input).getResult());
  return success();
}

static LogicalResult convertWhere(NodeContext &n) {
  auto condition = n.shapeInput(0), lhs = n.shapeInput(1), rhs = n.shapeInput(2);
  if (condition && lhs && rhs) {
    size_t size = std::max({condition->size(), lhs->size(), rhs->size()});
    auto at = [&](const ShapeValue &v, size_t i) { return v[v.size() == 1 ? 0 : i]; };
    if (llvm::all_of(std::initializer_list<const ShapeValue *>{&*condition, &*lhs, &*rhs},
                     [&](const ShapeValue *v) { return v->size() == size || v->size() == 1; })) {
      ShapeValue result;
      for (size_t i = 0; i < size; ++i) {
        OpFoldResult c = at(*condition, i), a = at(*lhs, i), b = at(*rhs, i);
        if (auto known = getConstantIntValue(c))
          result.push_back(*known ? a : b);
        else
          result.push_back(arith::SelectOp::create(n.builder(), n.loc, cast<Value>(c),
                                                   n.indexValue(a), n.indexValue(b))
                               .getResult());
      }
      auto type = vectorType(result, n.inputType(1).getElementType(), isScalarResult(n, 3));
      n.setShapeOutput(0, std::move(result), type);
      return success();
    }
  }
  return n.setResult(0, n.value<WhereOp>(n.input(0), n.input(1), n.input(2)));
}

//===----------------------------------------------------------------------===//
// Linear algebra, reductions, normalization
//===----------------------------------------------------------------------===//

static LogicalResult convertMatMul(NodeContext &n) { return convertVariadic<MatMulOp>(n); }

static LogicalResult convertGemm(NodeContext &n) {
  Value a = n.input(0), b = n.input(1);
  for (auto [operand, attr] : {std::pair<Value *, StringRef>{&a, "transA"}, {&b, "transB"}}) {
    if (!n.intAttr(attr, 0))
      continue;
    auto transposed = n.value<TransposeOp>(*operand, ArrayRef<int64_t>{1, 0});
    if (failed(transposed))
      return failure();
    *operand = *transposed;
  }
  auto result = n.value<MatMulOp>(a, b);
  if (failed(result))
    return failure();
  Type elementType = n.inputType(0).getElementType();
  auto scaled = [&](Value v, StringRef attr) -> FailureOr<Value> {
    float factor = n.floatAttr(attr, 1.0f);
    if (factor == 1.0f)
      return v;
    return n.value<MulOp>(v, scalarConstant(n, elementType, factor));
  };
  result = scaled(*result, "alpha");
  if (succeeded(result) && n.hasInput(2)) {
    auto bias = scaled(n.input(2), "beta");
    result = failed(bias) ? bias : n.value<AddOp>(*result, *bias);
  }
  return n.setResult(0, result);
}

/// Reductions: axes from the attribute before opset `AxesInputSince`, from
/// input 1 from then on.
template <typename OpT, int64_t AxesInputSince> static LogicalResult convertReduce(NodeContext &n) {
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  auto axes = axesOperand(n, AxesInputSince);
  if (failed(axes))
    return failure();
  if (!*axes || (*axes)->empty()) {
    if (n.intAttr("noop_with_empty_axes", 0) || rank == 0) {
      n.setOutput(0, input);
      return success();
    }
    *axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  }
  auto normalized = normalizeAxes(n, **axes, rank);
  if (failed(normalized))
    return failure();
  return n.setResult(0, n.value<OpT>(input, ArrayRef<int64_t>(*normalized), n.intAttr("keepdims", 1) != 0));
}

static LogicalResult convertSoftmax(NodeContext &n) {
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  int64_t axisAttr = n.intAttr("axis", n.opset < 13 ? 1 : -1);
  auto axis = n.normalizeAxis(axisAttr, rank, "axis");
  if (failed(axis))
    return failure();
  if (n.opset < 13 && *axis != rank - 1)
    return n.fail("unsupported attribute axis=" + Twine(axisAttr) +
                  " (before opset 13 Softmax normalizes over all dims from axis on; only the "
                  "last axis is supported)");
  n.setOutput(0, SoftmaxOp::create(n.builder(), n.loc, input.getType(), input, *axis).getResult());
  return success();
}

static LogicalResult convertLayerNormalization(NodeContext &n) {
  Value input = n.input(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", -1), n.inputType(0).getRank(), "axis");
  if (failed(axis))
    return failure();
  n.setOutput(0, LayerNormOp::create(n.builder(), n.loc, input.getType(), input, n.input(1),
                                     n.input(2), *axis, APFloat(n.floatAttr("epsilon", 1e-5f)))
                     .getResult());
  return success();
}

static LogicalResult convertGelu(NodeContext &n) {
  Value input = n.input(0);
  std::string approximate = n.stringAttr("approximate", "none");
  if (approximate != "none" && approximate != "tanh")
    return n.fail("unsupported attribute approximate=" + approximate);
  n.setOutput(0,
              GeluOp::create(n.builder(), n.loc, input.getType(), input, approximate).getResult());
  return success();
}

/// CumSum along an axis known at import is one octet.cumsum. An axis computed
/// at run time (a graph input, as in the ONNX node tests) selects among the
/// cumsums along every dim. Two Gathers normalize it and range it exactly as
/// ONNX does ([-r, r-1]): axis + r and r - 1 - axis both index a 2r-entry
/// table of the dim they stand for, both are in [0, 2r) for a valid axis, and
/// one of them is >= 2r for any other (a run-time error naming the index; no
/// index is negative for a valid axis, so no implementation's treatment of
/// negative indices matters).
static LogicalResult convertCumSum(NodeContext &n) {
  Value input = n.input(0);
  auto type = n.inputType(0);
  int64_t rank = type.getRank();
  bool exclusive = n.intAttr("exclusive", 0) != 0, reverse = n.intAttr("reverse", 0) != 0;
  auto cumsum = [&](int64_t axis) {
    return CumSumOp::create(n.builder(), n.loc, input.getType(), input, axis, exclusive, reverse)
        .getResult();
  };
  auto axisType = n.inputType(1);
  if (!isa<IntegerType>(axisType.getElementType()) || axisType.getElementType().isInteger(1) ||
      !axisType.hasStaticShape() || axisType.getNumElements() != 1)
    return n.fail("the axis input must be an integer scalar");
  if (auto axisValue = n.constantInts(1)) {
    auto axis = n.normalizeAxis(axisValue->front(), rank, "axis");
    if (failed(axis))
      return failure();
    n.setOutput(0, cumsum(*axis));
    return success();
  }
  if (rank == 0)
    return n.fail("the input must have rank >= 1");
  Type i64 = n.builder().getI64Type();
  Value axis = n.input(1);
  if (axisType.getElementType() != i64)
    axis = CastOp::create(n.builder(), n.loc, axisType.clone(i64), axis);
  // dims(k) is the dim that entry k of a 2r-entry table stands for.
  auto normalized = [&](function_ref<int64_t(int64_t)> dimOf, Value index) {
    SmallVector<int64_t> dims;
    for (int64_t k = 0; k < 2 * rank; ++k)
      dims.push_back(dimOf(k));
    auto tableType = RankedTensorType::get({2 * rank}, i64);
    Value table = ConstantOp::create(n.builder(), n.loc,
                                     DenseElementsAttr::get(tableType, ArrayRef<int64_t>(dims)));
    return n.value<GatherOp>(table, index, static_cast<uint64_t>(0));
  };
  Value r = scalarConstant(n, i64, static_cast<double>(rank));
  Value rMinus1 = scalarConstant(n, i64, static_cast<double>(rank - 1));
  auto up = n.value<AddOp>(axis, r);         // axis + r
  auto down = n.value<SubOp>(rMinus1, axis); // r - 1 - axis
  if (failed(up) || failed(down))
    return failure();
  auto fromUp = normalized([&](int64_t k) { return k % rank; }, *up);
  auto fromDown = normalized([&](int64_t k) { return (2 * rank - 1 - k) % rank; }, *down);
  if (failed(fromUp) || failed(fromDown))
    return failure();
  Value result = input; // never selected: the Gathers admit only the dims
  for (int64_t d = 0; d < rank; ++d) {
    Value dim = scalarConstant(n, i64, static_cast<double>(d));
    auto a = n.value<EqualOp>(*fromUp, dim), b = n.value<EqualOp>(*fromDown, dim);
    if (failed(a) || failed(b))
      return failure();
    auto chosen = n.value<AndOp>(*a, *b);
    if (failed(chosen))
      return failure();
    auto next = n.value<WhereOp>(*chosen, cumsum(d), result);
    if (failed(next))
      return failure();
    result = *next;
  }
  n.setOutput(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Shapes and data movement
//===----------------------------------------------------------------------===//

/// The size a -1 entry stands for: the input's element count over the other
/// entries' product, a canonical index quotient (B·S·768 / (B·12) is S·64).
static FailureOr<OpFoldResult> inferMissingSize(NodeContext &n, ArrayRef<OpFoldResult> total,
                                                ArrayRef<OpFoldResult> known) {
  OpFoldResult totalSize = product(n, total), knownSize = product(n, known);
  auto totalConstant = getConstantIntValue(totalSize);
  auto knownConstant = getConstantIntValue(knownSize);
  if (knownConstant && *knownConstant == 0)
    return n.fail("cannot infer the -1 entry of a shape that has a 0 entry");
  if (totalConstant && knownConstant && *totalConstant % *knownConstant != 0)
    return n.fail("cannot reshape " + Twine(*totalConstant) + " elements with " +
                  Twine(*knownConstant) + " per -1 entry");
  return n.graph.indexOp(IndexOp::Div, totalSize, knownSize, n.loc);
}

/// A shape vector reshaped to a vector or a scalar stays a shape value (the
/// TorchScript exporter flattens its computed Expand shapes this way).
static bool reshapeShapeValue(NodeContext &n) {
  auto data = n.shapeInput(0);
  auto target = n.constantInts(1);
  auto type = n.inputType(0);
  if (!data || type.getRank() > 1 || !target || target->size() > 1)
    return false;
  int64_t length = data->size();
  bool toVector = target->size() == 1 &&
                  ((*target)[0] == -1 || (*target)[0] == length ||
                   ((*target)[0] == 0 && type.getRank() == 1 && !n.intAttr("allowzero", 0)));
  bool toScalar = target->empty() && length == 1;
  if (!toVector && !toScalar)
    return false;
  RankedTensorType resultType = vectorType(*data, type.getElementType(), toScalar);
  n.setShapeOutput(0, std::move(*data), resultType);
  return true;
}

static LogicalResult convertReshape(NodeContext &n) {
  if (reshapeShapeValue(n))
    return success();
  auto entries = n.shapeInput(1);
  if (!entries)
    return n.fail("the shape input must be known at import (a constant or a shape sub-graph)");
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  bool allowZero = n.opset >= 14 && n.intAttr("allowzero", 0);
  SmallVector<OpFoldResult> sizes;
  std::optional<size_t> inferred;
  for (auto [i, entry] : llvm::enumerate(*entries)) {
    auto c = getConstantIntValue(entry);
    if (c && *c == 0 && !allowZero) {
      if (static_cast<int64_t>(i) >= rank)
        return n.fail("shape entry " + Twine(i) + " is 0 (copy) but the input has rank " +
                      Twine(rank));
      sizes.push_back(n.dim(input, i));
    } else if (c && *c == -1) {
      if (inferred)
        return n.fail("the shape has more than one -1 entry");
      inferred = i;
      sizes.push_back(n.indexConst(1));
    } else if (c && *c < 0) {
      return n.fail("invalid shape entry " + Twine(*c));
    } else {
      sizes.push_back(entry);
    }
  }
  if (inferred) {
    SmallVector<OpFoldResult> known(sizes);
    known.erase(known.begin() + *inferred);
    auto size = inferMissingSize(n, n.dims(input), known);
    if (failed(size))
      return failure();
    sizes[*inferred] = *size;
  }
  n.setOutput(0, n.reshapeTo(input, sizes));
  return success();
}

static LogicalResult convertFlatten(NodeContext &n) {
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  // axis is in [-rank, rank]: a negative one counts from the end of the dims.
  int64_t axis = n.intAttr("axis", 1);
  if (axis < -rank || axis > rank)
    return n.fail("axis " + llvm::Twine(axis) + " is out of range for rank " + llvm::Twine(rank));
  if (axis < 0)
    axis += rank;
  auto dims = n.dims(input);
  OpFoldResult outer = product(n, ArrayRef(dims).take_front(axis));
  OpFoldResult inner = product(n, ArrayRef(dims).drop_front(axis));
  n.setOutput(0, n.reshapeTo(input, {outer, inner}));
  return success();
}

static LogicalResult convertSqueeze(NodeContext &n) {
  auto axesOrNone = axesOperand(n, 13);
  if (failed(axesOrNone))
    return failure();
  auto type = n.inputType(0);
  auto entries = n.shapeInput(0);
  if (entries && entries->size() == 1 && type.getRank() == 1 &&
      (!*axesOrNone || **axesOrNone == SmallVector<int64_t>{0} ||
       **axesOrNone == SmallVector<int64_t>{-1})) {
    n.setShapeOutput(0, std::move(*entries), RankedTensorType::get({}, type.getElementType()));
    return success();
  }
  Value input = n.input(0);
  SmallVector<int64_t> axes;
  if (*axesOrNone) {
    auto normalized = normalizeAxes(n, **axesOrNone, type.getRank());
    if (failed(normalized))
      return failure();
    axes = *normalized;
  } else {
    for (int64_t d = 0; d < type.getRank(); ++d) {
      if (type.isDynamicDim(d))
        return n.fail("Squeeze without axes needs static dims, but dim " + Twine(d) + " is ?");
      if (type.getDimSize(d) == 1)
        axes.push_back(d);
    }
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!llvm::is_contained(axes, d)) {
      sizes.push_back(n.dim(input, d));
      continue;
    }
    if (!type.isDynamicDim(d) && type.getDimSize(d) != 1)
      return n.fail("cannot squeeze dim " + Twine(d) + " of size " + Twine(type.getDimSize(d)));
  }
  n.setOutput(0, n.reshapeTo(input, sizes));
  return success();
}

static LogicalResult convertUnsqueeze(NodeContext &n) {
  auto axesOrNone = axesOperand(n, 13);
  if (failed(axesOrNone))
    return failure();
  if (!*axesOrNone)
    return n.fail("needs axes");
  auto type = n.inputType(0);
  int64_t resultRank = type.getRank() + (*axesOrNone)->size();
  auto axes = normalizeAxes(n, **axesOrNone, resultRank);
  if (failed(axes))
    return failure();
  if (static_cast<int64_t>(axes->size()) != resultRank - type.getRank())
    return n.fail("repeated axes");
  auto entries = n.shapeInput(0);
  if (entries && type.getRank() == 0) {
    n.setShapeOutput(0, std::move(*entries), RankedTensorType::get({1}, type.getElementType()));
    return success();
  }
  Value input = n.input(0);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0, next = 0; d < resultRank; ++d)
    sizes.push_back(llvm::is_contained(*axes, d) ? n.indexConst(1) : n.dim(input, next++));
  n.setOutput(0, n.reshapeTo(input, sizes));
  return success();
}

static LogicalResult convertTranspose(NodeContext &n) {
  int64_t rank = n.inputType(0).getRank();
  SmallVector<int64_t> permutation =
      n.intsAttr("perm").value_or(llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank))));
  return n.setResult(0, n.value<TransposeOp>(n.input(0), ArrayRef<int64_t>(permutation)));
}

static LogicalResult convertConcat(NodeContext &n) {
  if (!n.attribute("axis"))
    return n.fail("needs the axis attribute");
  int64_t axisAttr = n.intAttr("axis", 0);
  SmallVector<unsigned> inputs;
  for (int i = 0; i < n.node.input_size(); ++i)
    if (n.hasInput(i))
      inputs.push_back(i);
  auto axis = n.normalizeAxis(axisAttr, n.inputType(inputs.front()).getRank(), "axis");
  if (failed(axis))
    return failure();
  ShapeValue entries;
  bool allShapes = n.inputType(inputs.front()).getRank() == 1;
  for (unsigned i : inputs) {
    auto part = allShapes ? n.shapeInput(i) : std::nullopt;
    allShapes = part.has_value();
    if (part)
      llvm::append_range(entries, *part);
  }
  if (allShapes) {
    auto type = vectorType(entries, n.inputType(inputs.front()).getElementType());
    n.setShapeOutput(0, std::move(entries), type);
    return success();
  }
  SmallVector<Value> values;
  for (unsigned i : inputs)
    values.push_back(n.input(i));
  return n.setResult(0, n.value<ConcatOp>(ValueRange(values), static_cast<uint64_t>(*axis)));
}

/// An ONNX Slice start or end, made non-negative and clamped as ONNX does.
static int64_t clampSliceIndex(int64_t index, int64_t size, int64_t step) {
  if (index < 0)
    index += size;
  return step > 0 ? std::clamp<int64_t>(index, 0, size) : std::clamp<int64_t>(index, -1, size - 1);
}

/// ONNX Slice's size along one axis, when everything is known.
static int64_t slicedSize(int64_t size, int64_t start, int64_t end, int64_t step) {
  start = clampSliceIndex(start, size, step);
  end = clampSliceIndex(end, size, step);
  if (step > 0)
    return end > start ? (end - start + step - 1) / step : 0;
  return start > end ? (start - end - step - 1) / -step : 0;
}

static LogicalResult convertSlice(NodeContext &n) {
  auto starts = n.shapeInput(1), ends = n.shapeInput(2);
  if (!starts || !ends || starts->size() != ends->size())
    return n.fail("starts and ends must be known at import (constants or shape values) and of "
                  "equal length");
  size_t count = starts->size();
  auto type = n.inputType(0);
  int64_t rank = type.getRank();
  auto axes = n.hasInput(3) ? n.constantInts(3)
                            : std::optional(llvm::to_vector(llvm::seq<int64_t>(0, count)));
  auto steps = n.hasInput(4) ? n.constantInts(4) : std::optional(SmallVector<int64_t>(count, 1));
  if (!axes || !steps)
    return n.fail("axes and steps must be constants");
  if (axes->size() != count || steps->size() != count)
    return n.fail("starts, ends, axes and steps differ in length");
  for (int64_t &axis : *axes) {
    auto normalized = n.normalizeAxis(axis, rank, "axis");
    if (failed(normalized))
      return failure();
    axis = *normalized;
  }
  if (llvm::is_contained(*steps, 0))
    return n.fail("steps must not be 0");

  auto data = n.shapeInput(0);
  auto staticStarts = getConstantIntValues(*starts), staticEnds = getConstantIntValues(*ends);
  if (data && rank == 1 && staticStarts && staticEnds) {
    int64_t size = data->size(), start = (*staticStarts)[0], step = (*steps)[0];
    int64_t length = slicedSize(size, start, (*staticEnds)[0], step);
    start = clampSliceIndex(start, size, step);
    ShapeValue entries;
    for (int64_t i = 0; i < length; ++i)
      entries.push_back((*data)[start + i * step]);
    auto resultType = vectorType(entries, type.getElementType());
    n.setShapeOutput(0, std::move(entries), resultType);
    return success();
  }

  SmallVector<int64_t> startAttr, endAttr, shape(type.getShape());
  SmallVector<Value> dynamicStarts, dynamicEnds;
  auto split = [&](OpFoldResult v, SmallVector<int64_t> &attr, SmallVector<Value> &dynamic) {
    if (auto c = getConstantIntValue(v)) {
      attr.push_back(*c);
      return;
    }
    attr.push_back(ShapedType::kDynamic);
    dynamic.push_back(n.indexValue(v));
  };
  for (size_t i = 0; i < count; ++i) {
    split((*starts)[i], startAttr, dynamicStarts);
    split((*ends)[i], endAttr, dynamicEnds);
    int64_t axis = (*axes)[i];
    bool known = !ShapedType::isDynamic(startAttr.back()) &&
                 !ShapedType::isDynamic(endAttr.back()) && !type.isDynamicDim(axis);
    shape[axis] =
        known ? slicedSize(type.getDimSize(axis), startAttr.back(), endAttr.back(), (*steps)[i])
              : ShapedType::kDynamic;
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  Value result =
      SliceOp::create(n.builder(), n.loc, resultType, n.input(0), dynamicStarts, dynamicEnds,
                      ArrayRef<int64_t>(*axes), ArrayRef<int64_t>(startAttr),
                      ArrayRef<int64_t>(endAttr), ArrayRef<int64_t>(*steps));
  // The first E rows, E a run-time size (never negative): min(E, size). This
  // is how position ids are cut from a [1, max_positions] buffer, and it lets
  // the [S, H] position embedding broadcast to [B, S, H] without a max.
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = (*axes)[i];
    if (!resultType.isDynamicDim(axis) || startAttr[i] != 0 || (*steps)[i] != 1 ||
        !ShapedType::isDynamic(endAttr[i]) || !n.graph.isSize((*ends)[i]))
      continue;
    Value length = arith::MinSIOp::create(n.builder(), n.loc, n.indexValue((*ends)[i]),
                                          n.indexValue(n.dim(n.input(0), axis)));
    n.graph.recordDim(result, axis, length);
  }
  n.setOutput(0, result);
  return success();
}

static LogicalResult convertGather(NodeContext &n) {
  auto type = n.inputType(0);
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), type.getRank(), "axis");
  if (failed(axis))
    return failure();
  auto data = n.shapeInput(0);
  auto indices = n.constantInts(1);
  auto indicesType = n.inputType(1);
  if (data && type.getRank() == 1 && indices && indicesType.getRank() <= 1) {
    ShapeValue entries;
    for (int64_t index : *indices) {
      int64_t size = data->size();
      if (index < -size || index >= size)
        return n.fail("index " + Twine(index) + " is out of range for " + Twine(size) + " entries");
      entries.push_back((*data)[index < 0 ? index + size : index]);
    }
    auto resultType = vectorType(entries, type.getElementType(), indicesType.getRank() == 0);
    n.setShapeOutput(0, std::move(entries), resultType);
    return success();
  }
  return n.setResult(0, n.value<GatherOp>(n.input(0), n.input(1), static_cast<uint64_t>(*axis)));
}

static LogicalResult convertExpand(NodeContext &n) {
  auto target = shapeOrInputElements(n, 1);
  if (!target)
    return n.fail("the shape input must be known before the run: a constant, a shape sub-graph or a "
                  "graph input's elements (a shape computed from data at run time is not supported)");
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank(), targetRank = target->size();
  int64_t resultRank = std::max(rank, targetRank);
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < resultRank; ++d) {
    int64_t inputDim = d - (resultRank - rank), targetDim = d - (resultRank - targetRank);
    OpFoldResult from = inputDim >= 0 ? n.dim(input, inputDim) : n.indexConst(1);
    OpFoldResult to = targetDim >= 0 ? (*target)[targetDim] : n.indexConst(1);
    sizes.push_back(broadcastSize(n, from, to));
  }
  n.setOutput(0, n.expandTo(input, sizes));
  return success();
}

static LogicalResult convertShape(NodeContext &n) {
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  auto clampDim = [&](int64_t d) { return std::clamp<int64_t>(d < 0 ? d + rank : d, 0, rank); };
  int64_t start = n.opset >= 15 ? clampDim(n.intAttr("start", 0)) : 0;
  int64_t end = n.opset >= 15 ? clampDim(n.intAttr("end", rank)) : rank;
  ShapeValue entries;
  for (int64_t d = start; d < end; ++d)
    entries.push_back(n.dim(input, d));
  auto type = vectorType(entries, n.builder().getI64Type());
  n.setShapeOutput(0, std::move(entries), type);
  return success();
}

/// The value attribute of ConstantOfShape (default: float 0).
static FailureOr<DenseElementsAttr> fillValue(NodeContext &n) {
  for (onnx::AttributeProto &attr : *n.node.mutable_attribute()) {
    if (attr.name() != "value")
      continue;
    auto value = convertTensor(*attr.mutable_t(), n.graph.baseDir, n.loc);
    if (!value)
      return failure();
    auto dense = dyn_cast<DenseElementsAttr>(value);
    if (!dense || dense.getNumElements() != 1)
      return n.fail("the value attribute must be a one-element tensor");
    return dense;
  }
  float zero = 0.0f;
  return DenseElementsAttr::get(RankedTensorType::get({}, n.builder().getF32Type()),
                                ArrayRef<float>(zero));
}

static LogicalResult convertConstantOfShape(NodeContext &n) {
  auto entries = shapeOrInputElements(n, 0);
  if (!entries)
    return n.fail("the shape input must be known before the run: a constant, a shape sub-graph or a "
                  "graph input's elements (a shape computed from data at run time is not supported)");
  auto fill = fillValue(n);
  if (failed(fill))
    return failure();
  Type elementType = fill->getElementType();
  auto scalarType = RankedTensorType::get({}, elementType);
  Attribute element = fill->getSplatValue<Attribute>();
  auto sizes = getConstantIntValues(*entries);
  if (sizes && llvm::all_of(*sizes, [](int64_t s) { return s >= 0; })) {
    auto type = RankedTensorType::get(*sizes, elementType);
    if (type.getNumElements() <= kSmallTensorLimit) {
      OnnxValue value;
      value.type = type;
      value.constant = DenseElementsAttr::get(type, element);
      n.setOutput(0, std::move(value));
      return success();
    }
  }
  Value scalar =
      ConstantOp::create(n.builder(), n.loc, DenseElementsAttr::get(scalarType, element));
  n.setOutput(0, n.expandTo(scalar, *entries));
  return success();
}

/// The most elements a Range may have (its size is a tensor dim).
constexpr int64_t kMaxRangeElements = int64_t(1) << 40;

static LogicalResult convertRange(NodeContext &n) {
  auto type = n.inputType(0);
  Type elementType = type.getElementType();
  SmallVector<OpFoldResult> bounds; // start, limit, delta
  for (unsigned i = 0; i < 3; ++i) {
    if (auto entries = n.shapeInput(i); entries && entries->size() == 1) {
      bounds.push_back(entries->front());
      continue;
    }
    auto dense = n.constantInput(i);
    if (!dense || dense.getNumElements() != 1 || !isa<FloatType>(dense.getElementType()))
      return n.fail("start, limit and delta must be scalars known at import");
    double v = dense.getSplatValue<APFloat>().convertToDouble();
    if (v != std::trunc(v))
      return n.fail("a float Range needs integral start, limit and delta");
    // Past 2^53 a float no longer counts in steps of 1 (and past 2^63 it has
    // no int64 value at all).
    if (std::fabs(v) > 0x1p53)
      return n.fail("a float Range's start, limit and delta must lie within +-2^53, got " +
                    std::to_string(v));
    bounds.push_back(n.indexConst(static_cast<int64_t>(v)));
  }
  auto start = getConstantIntValue(bounds[0]), limit = getConstantIntValue(bounds[1]),
       delta = getConstantIntValue(bounds[2]);
  if (delta && *delta == 0)
    return n.fail("delta must not be 0");
  int64_t size = ShapedType::kDynamic;
  if (start && limit && delta) {
    // In 128 bits: int64 bounds far apart would overflow (limit - start).
    const __int128 count = (__int128(*limit) - *start + *delta + (*delta > 0 ? -1 : 1)) / *delta;
    if (count > kMaxRangeElements)
      return n.fail("Range from " + std::to_string(*start) + " to " + std::to_string(*limit) +
                    " by " + std::to_string(*delta) + " has more than 2^40 elements");
    size = std::max<int64_t>(0, int64_t(count));
  }
  auto resultType = RankedTensorType::get({size}, elementType);
  if (!ShapedType::isDynamic(size) && size <= kSmallTensorLimit && isa<IntegerType>(elementType)) {
    ShapeValue entries;
    for (int64_t i = 0; i < size; ++i)
      entries.push_back(n.indexConst(*start + i * *delta));
    n.setShapeOutput(0, std::move(entries), resultType);
    return success();
  }
  Value result = RangeOp::create(n.builder(), n.loc, resultType, n.indexValue(bounds[0]),
                                 n.indexValue(bounds[1]), n.indexValue(bounds[2]));
  if (delta && *delta == 1 && ShapedType::isDynamic(size))
    n.graph.recordDim(result, 0, n.graph.indexOp(IndexOp::Sub, bounds[1], bounds[0], n.loc));
  n.setOutput(0, result);
  return success();
}

/// Inference-mode Dropout is the identity; training mode (random masks) is not
/// something an inference compiler may silently drop.
static LogicalResult convertDropout(NodeContext &n) {
  if (n.hasInput(2)) {
    DenseElementsAttr mode = n.constantInput(2);
    if (!mode || !mode.getElementType().isInteger(1))
      return n.fail("training_mode must be a constant false (Octet compiles inference only)");
    if (llvm::any_of(mode.getValues<bool>(), [](bool b) { return b; }))
      return n.fail("training_mode = true is unsupported (Octet compiles inference only)");
  }
  n.setOutput(0, n.inputInfo(0));
  return success();
}

static LogicalResult convertIdentity(NodeContext &n) {
  n.setOutput(0, n.inputInfo(0));
  return success();
}

static LogicalResult convertConstant(NodeContext &n) {
  if (n.node.attribute_size() != 1)
    return n.fail("needs exactly one value attribute");
  onnx::AttributeProto &attr = *n.node.mutable_attribute(0);
  MLIRContext *ctx = n.context();
  auto f32 = Float32Type::get(ctx);
  auto i64 = IntegerType::get(ctx, 64);
  ElementsAttr value;
  if (attr.name() == "value") {
    value = convertTensor(*attr.mutable_t(), n.graph.baseDir, n.loc);
    if (!value)
      return failure();
  } else if (attr.name() == "value_float") {
    float f = attr.f();
    value = DenseElementsAttr::get(RankedTensorType::get({}, f32), ArrayRef<float>(f));
  } else if (attr.name() == "value_floats") {
    SmallVector<float> floats(attr.floats().begin(), attr.floats().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(floats.size())}, f32),
                                   ArrayRef<float>(floats));
  } else if (attr.name() == "value_int") {
    int64_t i = attr.i();
    value = DenseElementsAttr::get(RankedTensorType::get({}, i64), ArrayRef<int64_t>(i));
  } else if (attr.name() == "value_ints") {
    SmallVector<int64_t> ints(attr.ints().begin(), attr.ints().end());
    value = DenseElementsAttr::get(RankedTensorType::get({int64_t(ints.size())}, i64),
                                   ArrayRef<int64_t>(ints));
  } else {
    return n.fail("unsupported attribute " + attr.name());
  }
  OnnxValue result;
  result.type = cast<RankedTensorType>(value.getType());
  result.constant = value;
  n.setOutput(0, std::move(result));
  return success();
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// QuantizeLinear / DequantizeLinear: per-tensor for a scalar scale, per-axis
/// for a 1-D one.
template <typename OpT> static LogicalResult convertQdq(NodeContext &n, Type resultElement) {
  Value input = n.input(0), scale = n.input(1), zeroPoint = n.input(2);
  auto scaleType = n.inputType(1);
  IntegerAttr axisAttr;
  if (scaleType.getRank() == 1 && scaleType.getDimSize(0) != 1) {
    auto axis = n.normalizeAxis(n.intAttr("axis", 1), n.inputType(0).getRank(), "axis");
    if (failed(axis))
      return failure();
    axisAttr = n.builder().getI64IntegerAttr(*axis);
  }
  auto type = n.inputType(0).clone(resultElement);
  n.setOutput(0,
              OpT::create(n.builder(), n.loc, type, input, scale, zeroPoint, axisAttr).getResult());
  return success();
}

static LogicalResult convertQuantizeLinear(NodeContext &n) {
  Type element = n.hasInput(2) ? n.inputType(2).getElementType()
                               : IntegerType::get(n.context(), 8, IntegerType::Unsigned);
  return convertQdq<QuantizeOp>(n, element);
}

static LogicalResult convertDequantizeLinear(NodeContext &n) {
  return convertQdq<DequantizeOp>(n, Float32Type::get(n.context()));
}

static LogicalResult convertDynamicQuantizeLinear(NodeContext &n) {
  auto op = n.create<DynamicQuantizeOp>(n.input(0));
  if (failed(op))
    return failure();
  for (auto [i, result] : llvm::enumerate(op->getResults()))
    n.setOutput(i, result);
  return success();
}

static LogicalResult convertMatMulInteger(NodeContext &n) {
  Value lhs = n.input(0), rhs = n.input(1);
  Value lhsZeroPoint = n.input(2), rhsZeroPoint = n.input(3);
  // octet.matmul_integer takes both zero points or neither.
  if (lhsZeroPoint && !rhsZeroPoint)
    rhsZeroPoint = scalarConstant(n, n.inputType(1).getElementType(), 0);
  if (rhsZeroPoint && !lhsZeroPoint)
    lhsZeroPoint = scalarConstant(n, n.inputType(0).getElementType(), 0);
  return n.setResult(0, n.value<MatMulIntegerOp>(lhs, rhs, lhsZeroPoint, rhsZeroPoint));
}

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

static const OpConversion kConversions[] = {
    {"Abs", 1, convertUnary<AbsOp>},
    {"Add", 2, convertArithmetic<AddOp, IndexOp::Add>},
    {"And", 2, convertVariadic<AndOp>},
    {"Cast", 1, convertCast},
    {"Concat", 1, convertConcat},
    {"Constant", 0, convertConstant},
    {"ConstantOfShape", 1, convertConstantOfShape},
    {"CumSum", 2, convertCumSum},
    {"DequantizeLinear", 2, convertDequantizeLinear},
    {"Div", 2, convertArithmetic<DivOp, IndexOp::Div>},
    {"Dropout", 1, convertDropout},
    {"DynamicQuantizeLinear", 1, convertDynamicQuantizeLinear},
    {"Equal", 2, convertEqual},
    {"Erf", 1, convertUnary<ErfOp>},
    {"Exp", 1, convertUnary<ExpOp>},
    {"Expand", 2, convertExpand},
    {"Flatten", 1, convertFlatten},
    {"Gather", 2, convertGather},
    {"Gelu", 1, convertGelu},
    {"Gemm", 2, convertGemm},
    {"Greater", 2, convertVariadic<GreaterOp>},
    {"GreaterOrEqual", 2, convertOrEqual<GreaterOp>},
    {"Identity", 1, convertIdentity},
    {"LayerNormalization", 2, convertLayerNormalization},
    {"Less", 2, convertVariadic<LessOp>},
    {"LessOrEqual", 2, convertOrEqual<LessOp>},
    {"Log", 1, convertUnary<LogOp>},
    {"MatMul", 2, convertMatMul},
    {"MatMulInteger", 2, convertMatMulInteger},
    {"Max", 1, convertArithmetic<MaxOp, IndexOp::Max>},
    {"Min", 1, convertArithmetic<MinOp, IndexOp::Min>},
    {"Mul", 2, convertArithmetic<MulOp, IndexOp::Mul>},
    {"Neg", 1, convertUnary<NegOp>},
    {"Not", 1, convertUnary<NotOp>},
    {"Or", 2, convertVariadic<OrOp>},
    {"Pow", 2, convertPow},
    {"QuantizeLinear", 2, convertQuantizeLinear},
    {"Range", 3, convertRange},
    {"Reciprocal", 1, convertUnary<ReciprocalOp>},
    {"ReduceMax", 1, convertReduce<ReduceMaxOp, 18>},
    {"ReduceMean", 1, convertReduce<ReduceMeanOp, 18>},
    {"ReduceMin", 1, convertReduce<ReduceMinOp, 18>},
    {"ReduceSum", 1, convertReduce<ReduceSumOp, 13>},
    {"Relu", 1, convertUnary<ReluOp>},
    {"Reshape", 2, convertReshape},
    {"Shape", 1, convertShape},
    {"Sigmoid", 1, convertUnary<SigmoidOp>},
    {"Slice", 3, convertSlice},
    {"Softmax", 1, convertSoftmax},
    {"Sqrt", 1, convertUnary<SqrtOp>},
    {"Squeeze", 1, convertSqueeze},
    {"Sub", 2, convertArithmetic<SubOp, IndexOp::Sub>},
    {"Sum", 1, convertVariadic<AddOp>},
    {"Tanh", 1, convertUnary<TanhOp>},
    {"Transpose", 1, convertTranspose},
    {"Unsqueeze", 1, convertUnsqueeze},
    {"Where", 3, convertWhere},
};

/// This file's table, then OnnxIndexingOps.cpp's.
static ArrayRef<ArrayRef<OpConversion>> conversionTables() {
  static const ArrayRef<OpConversion> tables[] = {kConversions, indexingConversions()};
  return tables;
}

const OpConversion *octet::onnx_import::lookupConversion(StringRef opType) {
  for (ArrayRef<OpConversion> table : conversionTables()) {
    const auto *found = llvm::find_if(
        table, [&](const OpConversion &conversion) { return conversion.opType == opType; });
    if (found != table.end())
      return found;
  }
  return nullptr;
}

ArrayRef<StringRef> octet::supportedOnnxOps() {
  static const SmallVector<StringRef> names = [] {
    SmallVector<StringRef> result;
    for (ArrayRef<OpConversion> table : conversionTables())
      for (const OpConversion &conversion : table)
        result.push_back(conversion.opType);
    llvm::sort(result);
    return result;
  }();
  return names;
}
