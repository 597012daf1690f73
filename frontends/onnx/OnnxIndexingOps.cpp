//===- OnnxIndexingOps.cpp - the mask and index ops of today's exporters ---===//
//
// Conversions of the ONNX ops that current torch.onnx exports put around the
// encoder (the padding mask built by GatherND, the IsNaN guard of sdpa
// attention, RoBERTa's GatherElements of buffered token type ids) and of the
// small elementwise and data movement ops beside them. OnnxOps.cpp's
// lookupConversion consults this table after its own.
//
// Every conversion records the run-time sizes of its result's dims (from its
// operands' sizes) so that the importer's index arithmetic sees the same SSA
// values for B and S downstream.
//
//===----------------------------------------------------------------------===//
#include "frontends/onnx/GraphImporter.h"

#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace octet;
using namespace octet::onnx_import;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Records the sizes of `result`'s dims and makes it output 0.
static void setOutputWithDims(NodeContext &n, Value result, ArrayRef<OpFoldResult> sizes) {
  for (auto [d, size] : llvm::enumerate(sizes))
    n.graph.recordDim(result, int64_t(d), size);
  n.setOutput(0, result);
}

/// The numpy broadcast of `operands`' dims: a size the importer proves equal
/// to the other (or a constant 1) drops out; otherwise the sizes that differ
/// are 1 but one, so the result is their max.
static SmallVector<OpFoldResult> broadcastSizes(NodeContext &n, ArrayRef<Value> operands,
                                                int64_t rank) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < rank; ++d) {
    OpFoldResult size = n.indexConst(1);
    for (Value operand : operands) {
      int64_t operandRank = cast<RankedTensorType>(operand.getType()).getRank();
      int64_t operandDim = d - (rank - operandRank);
      if (operandDim < 0)
        continue;
      OpFoldResult other = n.dim(operand, operandDim);
      OpFoldResult known = n.graph.knownBroadcast(size, other);
      size = known ? known : n.graph.indexOp(IndexOp::Max, size, other, n.loc);
    }
    sizes.push_back(size);
  }
  return sizes;
}

/// A 0-D constant of `elementType`.
static Value scalarOf(NodeContext &n, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  Attribute element;
  if (isa<FloatType>(elementType))
    element = FloatAttr::get(elementType, value);
  else if (elementType.isInteger(1))
    element = BoolAttr::get(n.context(), value != 0);
  else
    element = IntegerAttr::get(elementType, static_cast<int64_t>(value));
  return ConstantOp::create(n.builder(), n.loc, DenseElementsAttr::get(type, element));
}

/// Input `i` as a 0-D tensor: ONNX scalars sometimes arrive as one-element
/// 1-D tensors, which would otherwise widen a broadcast's rank.
static FailureOr<Value> scalarInput(NodeContext &n, unsigned i, StringRef what) {
  Value value = n.input(i);
  auto type = n.inputType(i);
  if (type.getRank() == 0)
    return value;
  if (type.hasStaticShape() && type.getNumElements() == 1)
    return n.reshapeTo(value, {});
  return n.fail(what + " must be a scalar, got a tensor of shape " +
                Twine(type.getRank() == 1 && !type.isDynamicDim(0)
                          ? "[" + std::to_string(type.getDimSize(0)) + "]"
                          : "of rank " + std::to_string(type.getRank())));
}

std::optional<ShapeValue> octet::onnx_import::shapeOrInputElements(NodeContext &n, unsigned i) {
  if (auto known = n.shapeInput(i))
    return known;
  if (!n.hasInput(i))
    return std::nullopt;
  Value value = n.input(i);
  auto type = n.inputType(i);
  if (!isa<BlockArgument>(value) || type.getRank() > 1 || !type.hasStaticShape() ||
      type.getNumElements() > kSmallTensorLimit || !isa<IntegerType>(type.getElementType()) ||
      type.getElementType().isInteger(1))
    return std::nullopt;
  ShapeValue entries;
  for (int64_t position = 0; position < type.getNumElements(); ++position)
    entries.push_back(
        ElementIndexOp::create(n.builder(), n.loc, value, static_cast<uint64_t>(position))
            .getResult());
  return entries;
}

/// Why input `i` cannot be a shape: it is computed by the model at run time.
static LogicalResult notAShape(NodeContext &n, unsigned i, StringRef what) {
  return n.fail("the " + what + " input '" + n.node.input(i) +
                "' must be known at import (a constant or a shape sub-graph) or be a 0-D / "
                "1-D integer graph input; it is a tensor the model computes at run time");
}

//===----------------------------------------------------------------------===//
// Indexing
//===----------------------------------------------------------------------===//

static LogicalResult convertGatherND(NodeContext &n) {
  Value data = n.input(0), indices = n.input(1);
  auto indicesType = n.inputType(1);
  if (!indicesType.getElementType().isInteger(64))
    return n.fail("the indices must be int64");
  int64_t batchDims = n.intAttr("batch_dims", 0);
  if (batchDims < 0)
    return n.fail("batch_dims must be non-negative, got " + Twine(batchDims));
  auto op = n.create<GatherNDOp>(data, indices, static_cast<uint64_t>(batchDims));
  if (failed(op))
    return failure();
  // indices.shape[:-1] + data.shape[batch_dims + q:]
  int64_t leading = indicesType.getRank() - 1, tuple = indicesType.getShape().back();
  SmallVector<OpFoldResult> sizes;
  for (int64_t d = 0; d < leading; ++d)
    sizes.push_back(n.dim(indices, d));
  for (int64_t d = batchDims + tuple, e = n.inputType(0).getRank(); d < e; ++d)
    sizes.push_back(n.dim(data, d));
  setOutputWithDims(n, op->getResult(), sizes);
  return success();
}

static LogicalResult convertGatherElements(NodeContext &n) {
  Value data = n.input(0), indices = n.input(1);
  auto axis = n.normalizeAxis(n.intAttr("axis", 0), n.inputType(0).getRank(), "axis");
  if (failed(axis))
    return failure();
  auto op = n.create<GatherElementsOp>(data, indices, static_cast<uint64_t>(*axis));
  if (failed(op))
    return failure();
  setOutputWithDims(n, op->getResult(), n.dims(indices));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

/// Ceil and Floor: ONNX defines them on floats only.
template <typename OpT> static LogicalResult convertRounding(NodeContext &n) {
  Value input = n.input(0);
  if (!isa<FloatType>(n.inputType(0).getElementType()))
    return n.fail("takes a float tensor");
  n.setOutput(0, OpT::create(n.builder(), n.loc, input.getType(), input).getResult());
  return success();
}

static LogicalResult convertSign(NodeContext &n) {
  Value input = n.input(0);
  if (n.inputType(0).getElementType().isInteger(1))
    return n.fail("takes a numeric tensor, not bool");
  n.setOutput(0, SignOp::create(n.builder(), n.loc, input.getType(), input).getResult());
  return success();
}

static LogicalResult convertIsNaN(NodeContext &n) {
  if (!isa<FloatType>(n.inputType(0).getElementType()))
    return n.fail("takes a float tensor");
  return n.setResult(0, n.value<IsNanOp>(n.input(0)));
}

static LogicalResult convertIsInf(NodeContext &n) {
  if (!isa<FloatType>(n.inputType(0).getElementType()))
    return n.fail("takes a float tensor");
  bool negative = n.intAttr("detect_negative", 1) != 0;
  bool positive = n.intAttr("detect_positive", 1) != 0;
  return n.setResult(0, n.value<IsInfOp>(n.input(0), negative, positive));
}

/// Binary ops the importer's dim derivation does not know: their result's
/// dims are recorded here.
template <typename OpT, typename... Attrs>
static LogicalResult convertBroadcasting(NodeContext &n, Attrs... attrs) {
  Value lhs = n.input(0), rhs = n.input(1);
  auto result = n.value<OpT>(lhs, rhs, attrs...);
  if (failed(result))
    return failure();
  int64_t rank = cast<RankedTensorType>(result->getType()).getRank();
  setOutputWithDims(n, *result, broadcastSizes(n, {lhs, rhs}, rank));
  return success();
}

static LogicalResult convertXor(NodeContext &n) {
  if (!n.inputType(0).getElementType().isInteger(1))
    return n.fail("takes bool tensors");
  return convertBroadcasting<XorOp>(n);
}

/// Mod: fmod = 0 takes the divisor's sign (integers only, as ONNX says),
/// fmod = 1 the dividend's.
static LogicalResult convertMod(NodeContext &n) {
  int64_t fmod = n.intAttr("fmod", 0);
  if (fmod != 0 && fmod != 1)
    return n.fail("unsupported attribute fmod=" + Twine(fmod) + " (0 or 1)");
  Type element = n.inputType(0).getElementType();
  if (element.isInteger(1))
    return n.fail("takes numeric tensors, not bool");
  if (isa<FloatType>(element) && fmod == 0)
    return n.fail("fmod = 0 on float inputs is not defined by ONNX (it requires fmod = 1)");
  return convertBroadcasting<ModOp>(n, fmod == 1);
}

/// Clip(x, lo, hi) = min(max(x, lo), hi), exactly: octet.max/min are the
/// NaN-propagating maximum and minimum, so NaN stays NaN as in ONNX, and
/// lo > hi gives hi, as ONNX says. A missing bound is no bound. (Clip's
/// attribute form ends at opset 10, below the opsets the importer takes.)
static LogicalResult convertClip(NodeContext &n) {
  Value result = n.input(0);
  Type element = n.inputType(0).getElementType();
  if (element.isInteger(1))
    return n.fail("takes numeric tensors, not bool");
  for (auto [i, what] : {std::pair<unsigned, StringRef>{1, "min"}, {2, "max"}}) {
    if (!n.hasInput(i))
      continue;
    if (n.inputType(i).getElementType() != element)
      return n.fail(what + " must have the input's element type");
    auto bound = scalarInput(n, i, what);
    if (failed(bound))
      return failure();
    auto next = i == 1 ? n.value<MaxOp>(result, *bound) : n.value<MinOp>(result, *bound);
    if (failed(next))
      return failure();
    result = *next;
  }
  n.setOutput(0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Trilu as where(keep, x, 0), exactly: keep[i, j] = (j - i >= k) for the
/// upper triangle, (j - i <= k) for the lower, over the last two dims. The
/// index grid comes from two octet.range ops, so k may be a run-time input.
static LogicalResult convertTrilu(NodeContext &n) {
  Value input = n.input(0);
  auto type = n.inputType(0);
  int64_t rank = type.getRank();
  if (rank < 2)
    return n.fail("the input must have rank >= 2, got rank " + Twine(rank));
  Type i64 = n.builder().getI64Type();
  Value k;
  if (n.hasInput(1)) {
    if (n.inputType(1).getElementType() != i64)
      return n.fail("k must be an int64 scalar");
    auto scalar = scalarInput(n, 1, "k");
    if (failed(scalar))
      return failure();
    k = *scalar;
  } else {
    k = scalarOf(n, i64, 0);
  }
  bool upper = n.intAttr("upper", 1) != 0;
  OpFoldResult rows = n.dim(input, rank - 2), cols = n.dim(input, rank - 1);
  auto range = [&](OpFoldResult size) {
    auto constant = getConstantIntValue(size);
    auto rangeType = RankedTensorType::get({constant ? *constant : ShapedType::kDynamic}, i64);
    Value r = RangeOp::create(n.builder(), n.loc, rangeType, n.indexValue(n.indexConst(0)),
                              n.indexValue(size), n.indexValue(n.indexConst(1)));
    n.graph.recordDim(r, 0, size);
    return r;
  };
  Value rowIndex = n.reshapeTo(range(rows), {rows, n.indexConst(1)});
  Value colIndex = range(cols);
  auto diagonal = n.value<SubOp>(colIndex, rowIndex); // j - i, [rows, cols]
  if (failed(diagonal))
    return failure();
  // upper: j - i >= k is not(j - i < k); lower: j - i <= k is not(j - i > k).
  auto outside = upper ? n.value<LessOp>(*diagonal, k) : n.value<GreaterOp>(*diagonal, k);
  if (failed(outside))
    return failure();
  Value keep = NotOp::create(n.builder(), n.loc, *outside).getResult();
  auto result = n.value<WhereOp>(keep, input, scalarOf(n, type.getElementType(), 0));
  if (failed(result))
    return failure();
  setOutputWithDims(n, *result, n.dims(input));
  return success();
}

/// Tile as data movement, exactly: x [d0, .., dn] is viewed as
/// [1, d0, .., 1, dn], expanded to [r0, d0, .., rn, dn] and reshaped to
/// [r0·d0, .., rn·dn]. Dims repeated once keep no extra axis. The repeats
/// are known at import or read from a graph input's elements at run time.
static LogicalResult convertTile(NodeContext &n) {
  Value input = n.input(0);
  int64_t rank = n.inputType(0).getRank();
  auto repeats = shapeOrInputElements(n, 1);
  if (!repeats)
    return notAShape(n, 1, "repeats");
  if (static_cast<int64_t>(repeats->size()) != rank)
    return n.fail("repeats has " + Twine(repeats->size()) + " entries for an input of rank " +
                  Twine(rank));
  SmallVector<OpFoldResult> split, expanded, result;
  for (int64_t d = 0; d < rank; ++d) {
    OpFoldResult size = n.dim(input, d), times = (*repeats)[d];
    if (auto c = getConstantIntValue(times); c && *c < 0)
      return n.fail("repeats entry " + Twine(d) + " is negative (" + Twine(*c) + ")");
    if (auto c = getConstantIntValue(times); !c || *c != 1) {
      split.push_back(n.indexConst(1));
      expanded.push_back(times);
    }
    split.push_back(size);
    expanded.push_back(size);
    result.push_back(n.graph.indexOp(IndexOp::Mul, times, size, n.loc));
  }
  Value tiled = n.reshapeTo(n.expandTo(n.reshapeTo(input, split), expanded), result);
  setOutputWithDims(n, tiled, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

static const OpConversion kIndexingConversions[] = {
    {"Ceil", 1, convertRounding<CeilOp>},
    {"Clip", 1, convertClip},
    {"Floor", 1, convertRounding<FloorOp>},
    {"GatherElements", 2, convertGatherElements},
    {"GatherND", 2, convertGatherND},
    {"IsInf", 1, convertIsInf},
    {"IsNaN", 1, convertIsNaN},
    {"Mod", 2, convertMod},
    {"Sign", 1, convertSign},
    {"Tile", 2, convertTile},
    {"Trilu", 1, convertTrilu},
    {"Xor", 2, convertXor},
};

ArrayRef<OpConversion> octet::onnx_import::indexingConversions() { return kIndexingConversions; }
