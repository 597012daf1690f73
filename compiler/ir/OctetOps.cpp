//===- OctetOps.cpp - verifiers, type inference, folders ------------------===//
#include "compiler/ir/OctetOps.h"

#include "compiler/ir/AttrNames.h"
#include "compiler/ir/ElementwiseOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace octet;

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

std::optional<int64_t> octet::normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

LogicalResult octet::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                                     SmallVectorImpl<int64_t> &result) {
  size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    int64_t &r = result[i];
    if (da == 1)
      r = db;
    else if (db == 1)
      r = da;
    else if (ShapedType::isDynamic(da))
      r = db; // a static non-1 dim decides; ?·? stays ?
    else if (ShapedType::isDynamic(db))
      r = da;
    else if (da == db)
      r = da;
    else
      return failure();
  }
  return success();
}

static std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (auto [i, d] : llvm::enumerate(shape)) {
    if (i)
      s += ", ";
    s += ShapedType::isDynamic(d) ? "?" : std::to_string(d);
  }
  return s + "]";
}

static RankedTensorType tensorOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// Two dims that may be equal at run time.
static bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Whether `from` may broadcast (numpy rules) to exactly `to`.
static bool isBroadcastableTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  ArrayRef<int64_t> aligned = to.take_back(from.size());
  for (auto [f, t] : llvm::zip_equal(from, aligned))
    if (f != 1 && !dimsCompatible(f, t))
      return false;
  return true;
}

/// Constants up to this many elements are folded; larger ones (weights) stay
/// as they are so that folding never copies the model.
static constexpr int64_t kMaxFoldedElements = 4096;

/// A small dense constant behind `attr`, or null. Resource blobs (imported
/// weights) are never `DenseElementsAttr`, so they are never folded.
static DenseElementsAttr smallDense(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || (!dense.isSplat() && dense.getNumElements() > kMaxFoldedElements))
    return {};
  return dense;
}

/// Integers that ONNX treats as unsigned: `ui*`, and `i1` (bool is 0 or 1).
static bool isUnsignedInt(Type type) {
  return type.isUnsignedInteger() || type.isInteger(1);
}

/// The row-major position in an operand of shape `shape` of the element that
/// numpy broadcasting maps to position `index` of a result of shape `result`.
static int64_t broadcastIndex(ArrayRef<int64_t> shape, ArrayRef<int64_t> result,
                              int64_t index) {
  int64_t position = 0, stride = 1;
  int64_t offset = result.size() - shape.size();
  for (int64_t d = result.size() - 1; d >= offset; --d) {
    int64_t coordinate = index % result[d];
    index /= result[d];
    int64_t size = shape[d - offset];
    position += (size == 1 ? 0 : coordinate) * stride;
    stride *= size;
  }
  return position;
}

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

#include "compiler/ir/OctetDialect.cpp.inc"

void OctetDialect::initialize() { registerOps(); }

void OctetDialect::registerOps() {
  addOperations<
#define GET_OP_LIST
#include "compiler/ir/OctetOps.cpp.inc"
      >();
}

Operation *OctetDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                             Location loc) {
  if (isa<IndexType>(type))
    if (auto intAttr = dyn_cast<IntegerAttr>(value))
      return arith::ConstantIndexOp::create(builder, loc, intAttr.getInt());
  if (auto elements = dyn_cast<ElementsAttr>(value))
    if (elements.getType() == type)
      return ConstantOp::create(builder, loc, elements);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult DimOp::verify() {
  int64_t rank = getSource().getType().getRank();
  if (static_cast<int64_t>(getIndex()) >= rank)
    return emitOpError("dim index ") << getIndex() << " is out of range for a tensor of rank "
                                      << rank;
  return success();
}

static std::optional<ValueDim> operandDimEqualTo(OpResult result, int64_t dim,
                                                 int resolveDepth);
static ValueDim traceDimSource(Value value, int64_t dim, int resolveDepth);
/// How deep ambiguous broadcasts are resolved by tracing both sides (each level
/// multiplies the work, and two levels cover embeddings + position ids).
static constexpr int kResolveDepth = 3;
static ValueDim canonicalArgumentDim(ValueDim v);

/// The run-time end `e` when `slice` takes [0, e) with step 1 along `axis`:
/// its size there is then min(e, N), since ONNX clamps the end to the input
/// size N. Exporters slice position ids this way (`ids[:, :seq]`).
static Value prefixSliceEnd(SliceOp slice, int64_t axis) {
  ArrayRef<int64_t> axes = slice.getAxes(), ends = slice.getStaticEnds();
  const auto *it = llvm::find(axes, axis);
  if (it == axes.end())
    return {};
  size_t pos = it - axes.begin();
  if (slice.getStaticStarts()[pos] != 0 || slice.getSteps()[pos] != 1 ||
      !ShapedType::isDynamic(ends[pos]))
    return {};
  return slice.getEnds()[llvm::count_if(ends.take_front(pos), ShapedType::isDynamic)];
}

/// True if `v`'s size is at most `bound`'s in every run: `v` is a prefix slice
/// whose run-time end is `bound`.
static bool boundedBy(ValueDim v, ValueDim bound, int resolveDepth) {
  ValueDim source = traceDimSource(v.value, v.dim, resolveDepth);
  auto slice = source.value.getDefiningOp<SliceOp>();
  Value end = slice && source.dim >= 0 ? prefixSliceEnd(slice, source.dim) : Value();
  return end && traceDimSource(end, -1, resolveDepth) == bound;
}

/// The operand dim that result dim `dim` of a numpy broadcast provably equals.
/// Operand i takes part with its leading `broadcastRanks[i]` dims. That is the
/// case when every other operand lacks the dim or has a static 1 there; with
/// `resolveDepth` > 0, also when two dynamic candidates trace to the same size,
/// or one is bounded by the other (a valid broadcast then yields the larger).
static std::optional<ValueDim> broadcastSourceOfDim(ValueRange operands,
                                                    ArrayRef<int64_t> broadcastRanks, int64_t dim,
                                                    int resolveDepth) {
  int64_t rank = *llvm::max_element(broadcastRanks);
  std::optional<ValueDim> source;
  for (auto [operand, operandRank] : llvm::zip_equal(operands, broadcastRanks)) {
    int64_t aligned = dim - (rank - operandRank);
    if (aligned < 0 || tensorOf(operand).getDimSize(aligned) == 1)
      continue;
    ValueDim candidate{operand, aligned};
    if (!source) {
      source = candidate;
      continue;
    }
    // Two candidates: either may be a run-time 1 unless they are provably related.
    if (resolveDepth <= 0)
      return std::nullopt;
    ValueDim a = traceDimSource(source->value, source->dim, resolveDepth - 1);
    ValueDim b = traceDimSource(operand, aligned, resolveDepth - 1);
    if (a == b || boundedBy(candidate, a, resolveDepth - 1))
      continue;
    if (boundedBy(*source, b, resolveDepth - 1)) {
      source = candidate;
      continue;
    }
    return std::nullopt;
  }
  return source;
}

static std::optional<ValueDim> broadcastSourceOfDim(ValueRange operands, int64_t dim,
                                                    int resolveDepth) {
  SmallVector<int64_t> ranks;
  for (Value v : operands)
    ranks.push_back(tensorOf(v).getRank());
  return broadcastSourceOfDim(operands, ranks, dim, resolveDepth);
}

/// numpy.matmul: the rows come from lhs, the columns from rhs, the leading
/// dims from the broadcast of both batch shapes.
static std::optional<ValueDim> matmulSourceOfDim(Value lhs, Value rhs, int64_t resultRank,
                                                 int64_t dim, int resolveDepth) {
  int64_t lhsRank = tensorOf(lhs).getRank(), rhsRank = tensorOf(rhs).getRank();
  bool lhsIsMatrix = lhsRank >= 2, rhsIsMatrix = rhsRank >= 2;
  if (rhsIsMatrix && dim == resultRank - 1)
    return ValueDim{rhs, rhsRank - 1};
  if (lhsIsMatrix && dim == resultRank - 1 - rhsIsMatrix)
    return ValueDim{lhs, lhsRank - 2};
  return broadcastSourceOfDim({lhs, rhs},
                              {std::max<int64_t>(lhsRank - 2, 0), std::max<int64_t>(rhsRank - 2, 0)},
                              dim, resolveDepth);
}

/// Ops whose result has exactly the shape of their first operand.
static bool preservesShape(Operation *op) {
  return op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
         op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
         isa<LayerNormOp, AddLayerNormOp, AttentionOp, QuantizeOp, DequantizeOp>(op);
}

/// A dim of an operand of `result`'s producer that provably has the run-time
/// size of `result`'s dim `dim`.
static std::optional<ValueDim> operandDimEqualTo(OpResult result, int64_t dim,
                                                 int resolveDepth) {
  Operation *op = result.getOwner();
  int64_t resultRank = tensorOf(result).getRank();
  return TypeSwitch<Operation *, std::optional<ValueDim>>(op)
      .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, EqualOp, LessOp, GreaterOp,
            AndOp, OrOp, XorOp, ModOp, WhereOp, FusedOp>(
          [&](Operation *op) {
            return broadcastSourceOfDim(op->getOperands(), dim, resolveDepth);
          })
      .Case<MatMulOp, MatMulIntegerOp>([&](auto op) {
        return matmulSourceOfDim(op.getLhs(), op.getRhs(), resultRank, dim, resolveDepth);
      })
      .Case<LinearOp, FusedLinearOp, QLinearOp>([&](auto op) -> std::optional<ValueDim> {
        if (dim != resultRank - 1)
          return ValueDim{op.getInput(), dim};
        if constexpr (std::is_same_v<decltype(op), QLinearOp>)
          if (op.getPacked()) // N is static, and the packed weight has no N dim
            return std::nullopt;
        return ValueDim{op.getWeight(), op.getOutputFeatureDim()};
      })
      .Case<PackTokensOp, UnpackTokensOp>([&](Operation *op) -> std::optional<ValueDim> {
        // Batch and seq of packed rows are not the input's (docs/padding-free.md).
        if (dim < 2)
          return std::nullopt;
        return ValueDim{op->getOperand(0), dim};
      })
      .Case<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp>(
          [&](auto op) -> std::optional<ValueDim> {
            ArrayRef<int64_t> axes = op.getAxes();
            if (op.getKeepdims())
              return llvm::is_contained(axes, dim) ? std::nullopt
                                                   : std::optional(ValueDim{op.getInput(), dim});
            // Without keepdims, result dim `dim` is the dim-th input dim that is kept.
            for (int64_t i = 0, kept = 0, e = op.getInput().getType().getRank(); i < e; ++i)
              if (!llvm::is_contained(axes, i) && kept++ == dim)
                return ValueDim{op.getInput(), i};
            return std::nullopt;
          })
      .Case([&](TransposeOp op) { return ValueDim{op.getInput(), op.getPermutation()[dim]}; })
      .Case([&](ConcatOp op) -> std::optional<ValueDim> {
        if (dim == static_cast<int64_t>(op.getAxis()))
          return std::nullopt;
        return ValueDim{op.getInputs().front(), dim};
      })
      .Case([&](SliceOp op) -> std::optional<ValueDim> {
        if (llvm::is_contained(op.getAxes(), dim))
          return std::nullopt;
        return ValueDim{op.getInput(), dim};
      })
      .Case([&](GatherOp op) {
        int64_t axis = op.getAxis(), indicesRank = op.getIndices().getType().getRank();
        if (dim < axis)
          return ValueDim{op.getData(), dim};
        if (dim < axis + indicesRank)
          return ValueDim{op.getIndices(), dim - axis};
        return ValueDim{op.getData(), dim - indicesRank + 1};
      })
      .Case([&](GatherNDOp op) {
        // indices.shape[:-1] + data.shape[batch_dims + q:]
        auto indices = op.getIndices().getType();
        int64_t leading = indices.getRank() - 1;
        if (dim < leading)
          return ValueDim{op.getIndices(), dim};
        return ValueDim{op.getData(),
                        dim - leading + int64_t(op.getBatchDims()) + indices.getDimSize(leading)};
      })
      .Case([&](GatherElementsOp op) { return ValueDim{op.getIndices(), dim}; })
      .Case<LayerNormQuantizeOp, QuantizePerRowOp>([&](auto op) -> std::optional<ValueDim> {
        // Every result keeps the input's rows; the last dim is the row (or 1).
        if (dim == resultRank - 1 && result != op->getResult(0))
          return std::nullopt;
        return ValueDim{op.getInput(), dim};
      })
      .Case([&](DynamicQuantizeOp op) -> std::optional<ValueDim> {
        if (result != op.getResult())
          return std::nullopt;
        return ValueDim{op.getInput(), dim};
      })
      .Default([&](Operation *op) -> std::optional<ValueDim> {
        if (!preservesShape(op))
          return std::nullopt;
        return ValueDim{op->getOperand(0), dim};
      });
}

/// The `index` operand that gives dim `dim` of a reshape/expand result.
template <typename OpT> static Value sizeOperandOf(OpT op, int64_t dim) {
  auto shape = op.getType().getShape();
  int64_t position = llvm::count_if(shape.take_front(dim), ShapedType::isDynamic);
  return op.getDynamicDims()[position];
}

/// Follows one step at a time what DimOp::fold follows, plus the size operands
/// of reshape/expand and the `octet.dim` ops that produce them.
static ValueDim traceDimSource(Value value, int64_t dim, int resolveDepth) {
  while (true) {
    if (dim < 0) {
      auto dimOp = value.getDefiningOp<DimOp>();
      if (!dimOp)
        break;
      value = dimOp.getSource();
      dim = dimOp.getIndex();
      continue;
    }
    auto result = dyn_cast<OpResult>(value);
    if (!result || !ShapedType::isDynamic(tensorOf(value).getDimSize(dim)))
      break;
    if (auto unpack = dyn_cast<UnpackTokensOp>(result.getOwner()); unpack && dim < 2) {
      value = dim == 0 ? unpack.getBatch() : unpack.getSeq();
      dim = -1;
      continue;
    }
    if (isa<ReshapeOp, ExpandOp>(result.getOwner())) {
      value = isa<ReshapeOp>(result.getOwner())
                  ? sizeOperandOf(cast<ReshapeOp>(result.getOwner()), dim)
                  : sizeOperandOf(cast<ExpandOp>(result.getOwner()), dim);
      dim = -1;
      continue;
    }
    std::optional<ValueDim> next = operandDimEqualTo(result, dim, resolveDepth);
    if (!next)
      break;
    value = next->value;
    dim = next->dim;
  }
  return canonicalArgumentDim({value, dim});
}

/// Inputs that share a named symbolic dim (ONNX dim_param, kept as the
/// `octet.dim_params` argument attribute) have one size: the runtime checks
/// it. Such dims are represented by the first argument that has the name.
static ValueDim canonicalArgumentDim(ValueDim v) {
  auto arg = dyn_cast<BlockArgument>(v.value);
  auto fn = arg ? dyn_cast_or_null<FunctionOpInterface>(arg.getOwner()->getParentOp()) : nullptr;
  if (!fn || v.dim < 0 || !arg.getOwner()->isEntryBlock())
    return v;
  auto nameOf = [&](unsigned argIndex, int64_t dim) -> StringRef {
    auto names = fn.getArgAttrOfType<ArrayAttr>(argIndex, octet::attr::kDimParams);
    if (!names || dim >= static_cast<int64_t>(names.size()))
      return {};
    auto name = dyn_cast<StringAttr>(names[dim]);
    return name ? name.getValue() : StringRef();
  };
  StringRef name = nameOf(arg.getArgNumber(), v.dim);
  if (name.empty())
    return v;
  for (unsigned i = 0; i <= arg.getArgNumber(); ++i)
    for (int64_t d = 0, e = tensorOf(fn.getArgument(i)).getRank(); d < e; ++d)
      if (nameOf(i, d) == name)
        return {fn.getArgument(i), d};
  return v;
}

ValueDim octet::traceDimSource(Value value, int64_t dim) {
  return ::traceDimSource(value, dim, kResolveDepth);
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  int64_t dim = getIndex();
  int64_t size = getSource().getType().getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return IntegerAttr::get(IndexType::get(getContext()), size);
  auto result = dyn_cast<OpResult>(getSource());
  if (!result)
    return {};
  if (auto reshape = dyn_cast<ReshapeOp>(result.getOwner()))
    return sizeOperandOf(reshape, dim);
  if (auto expand = dyn_cast<ExpandOp>(result.getOwner()))
    return sizeOperandOf(expand, dim);
  if (auto unpack = dyn_cast<UnpackTokensOp>(result.getOwner()); unpack && dim < 2)
    return dim == 0 ? unpack.getBatch() : unpack.getSeq();
  // Ask the producer's operand in place; the next fold continues from there.
  std::optional<ValueDim> equal = operandDimEqualTo(result, dim, kResolveDepth);
  if (!equal)
    return {};
  getSourceMutable().assign(equal->value);
  setIndex(equal->dim);
  return getResult();
}

/// Index values that cannot be negative: sizes, and min/max of such.
static bool isKnownNonNegative(Value v) {
  if (v.getDefiningOp<DimOp>())
    return true;
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return !c.isNegative();
  if (auto min = v.getDefiningOp<arith::MinSIOp>())
    return isKnownNonNegative(min.getLhs()) && isKnownNonNegative(min.getRhs());
  if (auto max = v.getDefiningOp<arith::MaxSIOp>())
    return isKnownNonNegative(max.getLhs()) || isKnownNonNegative(max.getRhs());
  return false;
}

namespace {
/// dim of a prefix slice [0, e) with e ≥ 0 is min(e, N); the explicit min lets
/// cleanup see that the slice broadcasts against e without growing it.
struct DimOfPrefixSlice : OpRewritePattern<DimOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DimOp op, PatternRewriter &rewriter) const override {
    auto slice = op.getSource().getDefiningOp<SliceOp>();
    Value end = slice ? prefixSliceEnd(slice, op.getIndex()) : Value();
    if (!end || !isKnownNonNegative(end))
      return failure();
    Value size = rewriter.createOrFold<DimOp>(op.getLoc(), slice.getInput(), op.getIndex());
    rewriter.replaceOpWithNewOp<arith::MinSIOp>(op, end, size);
    return success();
  }
};
} // namespace

void DimOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<DimOfPrefixSlice>(context);
}

LogicalResult FromElementsOp::verify() {
  auto type = getType();
  if (type.getRank() != 1 || type.getDimSize(0) != static_cast<int64_t>(getElements().size()))
    return emitOpError("result must be a 1-D tensor of ")
           << getElements().size() << " elements, got " << type;
  return success();
}

OpFoldResult FromElementsOp::fold(FoldAdaptor adaptor) {
  SmallVector<APInt> values;
  unsigned width = getType().getElementTypeBitWidth();
  for (Attribute a : adaptor.getElements()) {
    auto intAttr = dyn_cast_or_null<IntegerAttr>(a);
    if (!intAttr)
      return {};
    values.push_back(APInt(width, intAttr.getInt(), /*isSigned=*/true, /*implicitTrunc=*/true));
  }
  return DenseElementsAttr::get(getType(), values);
}

LogicalResult ElementIndexOp::verify() {
  auto type = getInput().getType();
  if (type.getRank() > 1 || type.getElementType().isInteger(1))
    return emitOpError("reads a 0-D or 1-D integer tensor, got ") << type;
  int64_t count = type.getRank() == 0 ? 1 : type.getDimSize(0);
  if (!ShapedType::isDynamic(count) && int64_t(getPosition()) >= count)
    return emitOpError("position ") << getPosition() << " is out of range for " << type;
  return success();
}

OpFoldResult ElementIndexOp::fold(FoldAdaptor adaptor) {
  auto dense = dyn_cast_or_null<DenseIntElementsAttr>(adaptor.getInput());
  if (!dense || int64_t(getPosition()) >= dense.getNumElements())
    return {};
  APInt value = dense.isSplat() ? dense.getSplatValue<APInt>()
                                : *(dense.value_begin<APInt>() + getPosition());
  int64_t v = isUnsignedInt(dense.getElementType()) ? int64_t(value.getZExtValue())
                                                     : value.getSExtValue();
  return IntegerAttr::get(IndexType::get(getContext()), v);
}

LogicalResult RangeOp::verify() {
  if (getType().getRank() != 1)
    return emitOpError("result must be 1-D, got ") << getType();
  APInt start, limit, delta;
  if (!matchPattern(getDelta(), m_ConstantInt(&delta)))
    return success();
  if (delta.isZero())
    return emitOpError("delta must not be zero");
  int64_t size = getType().getDimSize(0);
  if (ShapedType::isDynamic(size) || !matchPattern(getStart(), m_ConstantInt(&start)) ||
      !matchPattern(getLimit(), m_ConstantInt(&limit)))
    return success();
  // ONNX: max(ceil((limit - start) / delta), 0) elements.
  int64_t first = start.getSExtValue(), last = limit.getSExtValue(), step = delta.getSExtValue();
  int64_t span = step > 0 ? last - first : first - last, stride = step > 0 ? step : -step;
  int64_t expected = span > 0 ? (span + stride - 1) / stride : 0;
  if (size != expected)
    return emitOpError("range from ")
           << first << " to " << last << " by " << step << " has " << expected
           << " elements, but the result type has " << size;
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

template <typename OpT> static constexpr bool isComparison() {
  return std::is_same_v<OpT, EqualOp> || std::is_same_v<OpT, LessOp> ||
         std::is_same_v<OpT, GreaterOp>;
}
template <typename OpT> static constexpr bool isLogical() {
  return std::is_same_v<OpT, AndOp> || std::is_same_v<OpT, OrOp> || std::is_same_v<OpT, XorOp>;
}

static LogicalResult inferBroadcast(std::optional<Location> loc, StringRef opName,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto type = tensorOf(v);
    SmallVector<int64_t> next;
    if (failed(broadcastShapes(shape, type.getShape(), next)))
      return emitOptionalError(loc, opName, ": operand shapes ", shapeStr(shape), " and ",
                               shapeStr(type.getShape()), " do not broadcast");
    shape = std::move(next);
  }
  types.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

template <typename OpT>
static LogicalResult inferBinary(std::optional<Location> loc, Value lhs, Value rhs,
                                 SmallVectorImpl<Type> &types) {
  Type lhsElement = getElementTypeOrSelf(lhs.getType());
  Type rhsElement = getElementTypeOrSelf(rhs.getType());
  if (lhsElement != rhsElement)
    return emitOptionalError(loc, OpT::getOperationName(), ": element types differ (",
                             lhsElement, " vs ", rhsElement, ")");
  Type result = isComparison<OpT>() ? IntegerType::get(lhs.getContext(), 1) : lhsElement;
  return inferBroadcast(loc, OpT::getOperationName(), {lhs, rhs}, result, types);
}

template <typename OpT> static LogicalResult verifyBinary(OpT op) {
  Type element = getElementTypeOrSelf(op.getLhs().getType());
  if constexpr (isLogical<OpT>()) {
    if (!element.isInteger(1))
      return op.emitOpError("operands must be i1 tensors, got element type ") << element;
  } else if constexpr (!isComparison<OpT>()) {
    if (element.isInteger(1))
      return op.emitOpError("arithmetic on i1 tensors is not defined; use octet.and/octet.or");
  }
  return success();
}

/// Numpy-broadcast elementwise fold of two small constants into `type`: `fn`
/// maps one element pair to a result element, or nullopt to refuse to fold.
template <typename ResultT, typename ElementT, typename Fn>
static Attribute foldBroadcastConstants(DenseElementsAttr lhs, DenseElementsAttr rhs,
                                        RankedTensorType type, Fn fn) {
  if (!type.hasStaticShape())
    return {};
  if (lhs.isSplat() && rhs.isSplat()) {
    std::optional<ResultT> value = fn(lhs.getSplatValue<ElementT>(), rhs.getSplatValue<ElementT>());
    if (!value)
      return {};
    return DenseElementsAttr::get(type, ArrayRef<ResultT>(*value));
  }
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  auto lhsValues = lhs.getValues<ElementT>().begin();
  auto rhsValues = rhs.getValues<ElementT>().begin();
  ArrayRef<int64_t> shape = type.getShape();
  SmallVector<ResultT> results;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i) {
    std::optional<ResultT> value =
        fn(lhsValues[broadcastIndex(lhs.getType().getShape(), shape, i)],
           rhsValues[broadcastIndex(rhs.getType().getShape(), shape, i)]);
    if (!value)
      return {};
    results.push_back(*value);
  }
  return DenseElementsAttr::get(type, ArrayRef<ResultT>(results));
}

/// Constant folding of a binary op: `floatFn(x, y)` for float operands,
/// `intFn(x, y, isUnsigned)` for integer ones; each returns the result element
/// or nullopt.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldBinaryConstants(RankedTensorType type, Attribute lhsAttr,
                                        Attribute rhsAttr, FloatFn floatFn, IntFn intFn) {
  auto lhs = smallDense(lhsAttr), rhs = smallDense(rhsAttr);
  if (!lhs || !rhs)
    return {};
  Type element = lhs.getElementType();
  if (isa<FloatType>(element)) {
    using ResultT = typename std::invoke_result_t<FloatFn, APFloat, APFloat>::value_type;
    return foldBroadcastConstants<ResultT, APFloat>(lhs, rhs, type, floatFn);
  }
  if (!isa<IntegerType>(element))
    return {};
  bool isUnsigned = isUnsignedInt(element);
  using ResultT = typename std::invoke_result_t<IntFn, APInt, APInt, bool>::value_type;
  return foldBroadcastConstants<ResultT, APInt>(
      lhs, rhs, type, [&](const APInt &x, const APInt &y) { return intFn(x, y, isUnsigned); });
}

/// The float half of a fold for ops defined only on integers (and, or).
template <typename ResultT>
static std::optional<ResultT> noFloatFold(const APFloat &, const APFloat &) {
  return std::nullopt;
}

static bool isSplatOf(Attribute attr, int64_t value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().isExactlyValue(static_cast<double>(value));
  if (!isa<IntegerType>(dense.getElementType()) || dense.getElementType().isInteger(1))
    return false;
  return dense.getSplatValue<APInt>() ==
         APInt(dense.getElementType().getIntOrFloatBitWidth(), value, /*isSigned=*/true);
}

/// `value` when the op is `value ∘ identity` and broadcasting does not change
/// its type (`x + zeros(4)` with `x : tensor<1xf32>` is not `x`).
static OpFoldResult identityFold(Value value, Attribute identity, int64_t identityValue,
                                 Type resultType) {
  if (isSplatOf(identity, identityValue) && value.getType() == resultType)
    return value;
  return {};
}

using OptAPFloat = std::optional<APFloat>;
using OptAPInt = std::optional<APInt>;
using OptBool = std::optional<bool>;

// x + 0 → x ignores the sign of a zero x (-0 + 0 is +0), as ML compilers do.
OpFoldResult AddOp::fold(FoldAdaptor a) {
  if (OpFoldResult x = identityFold(getLhs(), a.getRhs(), 0, getType()))
    return x;
  if (OpFoldResult x = identityFold(getRhs(), a.getLhs(), 0, getType()))
    return x;
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x + y; },
      [](const APInt &x, const APInt &y, bool) -> OptAPInt { return x + y; });
}
OpFoldResult SubOp::fold(FoldAdaptor a) {
  if (OpFoldResult x = identityFold(getLhs(), a.getRhs(), 0, getType()))
    return x;
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x - y; },
      [](const APInt &x, const APInt &y, bool) -> OptAPInt { return x - y; });
}
OpFoldResult MulOp::fold(FoldAdaptor a) {
  if (OpFoldResult x = identityFold(getLhs(), a.getRhs(), 1, getType()))
    return x;
  if (OpFoldResult x = identityFold(getRhs(), a.getLhs(), 1, getType()))
    return x;
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x * y; },
      [](const APInt &x, const APInt &y, bool) -> OptAPInt { return x * y; });
}
OpFoldResult DivOp::fold(FoldAdaptor a) {
  if (OpFoldResult x = identityFold(getLhs(), a.getRhs(), 1, getType()))
    return x;
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x / y; },
      [](const APInt &x, const APInt &y, bool isUnsigned) -> OptAPInt {
        // Division by zero and INT_MIN / -1 are left to the runtime.
        if (y.isZero() || (!isUnsigned && x.isMinSignedValue() && y.isAllOnes()))
          return std::nullopt;
        return isUnsigned ? x.udiv(y) : x.sdiv(y);
      });
}
OpFoldResult PowOp::fold(FoldAdaptor a) {
  if (OpFoldResult x = identityFold(getLhs(), a.getRhs(), 1, getType()))
    return x;
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat {
        if (&x.getSemantics() != &APFloat::IEEEsingle())
          return std::nullopt;
        return APFloat(std::pow(x.convertToFloat(), y.convertToFloat()));
      },
      [](const APInt &, const APInt &, bool) -> OptAPInt { return std::nullopt; });
}
OpFoldResult MaxOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return llvm::maximum(x, y); },
      [](const APInt &x, const APInt &y, bool isUnsigned) -> OptAPInt {
        return (isUnsigned ? x.uge(y) : x.sge(y)) ? x : y;
      });
}
OpFoldResult MinOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return llvm::minimum(x, y); },
      [](const APInt &x, const APInt &y, bool isUnsigned) -> OptAPInt {
        return (isUnsigned ? x.ule(y) : x.sle(y)) ? x : y;
      });
}

// Comparisons and logic fold on small constants: the shape logic of exported
// graphs. A NaN compares unordered, hence false.
OpFoldResult EqualOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptBool {
        return x.compare(y) == APFloat::cmpEqual;
      },
      [](const APInt &x, const APInt &y, bool) -> OptBool { return x == y; });
}
OpFoldResult LessOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptBool {
        return x.compare(y) == APFloat::cmpLessThan;
      },
      [](const APInt &x, const APInt &y, bool isUnsigned) -> OptBool {
        return isUnsigned ? x.ult(y) : x.slt(y);
      });
}
OpFoldResult GreaterOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptBool {
        return x.compare(y) == APFloat::cmpGreaterThan;
      },
      [](const APInt &x, const APInt &y, bool isUnsigned) -> OptBool {
        return isUnsigned ? x.ugt(y) : x.sgt(y);
      });
}
OpFoldResult AndOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(getType(), a.getLhs(), a.getRhs(), noFloatFold<bool>,
                             [](const APInt &x, const APInt &y, bool) -> OptBool {
                               return !x.isZero() && !y.isZero();
                             });
}
OpFoldResult OrOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(getType(), a.getLhs(), a.getRhs(), noFloatFold<bool>,
                             [](const APInt &x, const APInt &y, bool) -> OptBool {
                               return !x.isZero() || !y.isZero();
                             });
}
OpFoldResult XorOp::fold(FoldAdaptor a) {
  return foldBinaryConstants(getType(), a.getLhs(), a.getRhs(), noFloatFold<bool>,
                             [](const APInt &x, const APInt &y, bool) -> OptBool {
                               return x.isZero() != y.isZero();
                             });
}

/// ONNX Mod: the remainder takes the divisor's sign (Python `%`), or with
/// `fmod` the dividend's (C `fmod`).
LogicalResult ModOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &types) {
  return inferBinary<ModOp>(loc, adaptor.getLhs(), adaptor.getRhs(), types);
}
LogicalResult ModOp::verify() {
  Type element = getElementTypeOrSelf(getLhs().getType());
  if (element.isInteger(1))
    return emitOpError("is not defined on i1 tensors");
  if (isa<FloatType>(element) && !getFmod())
    return emitOpError("on floats needs `fmod` (ONNX Mod requires fmod = 1 for floats)");
  return success();
}
OpFoldResult ModOp::fold(FoldAdaptor a) {
  bool fmod = getFmod();
  return foldBinaryConstants(
      getType(), a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat {
        APFloat r = x; // APFloat::mod is C's fmod
        if (r.mod(y) & APFloat::opInvalidOp)
          return std::nullopt;
        return r;
      },
      [fmod](const APInt &x, const APInt &y, bool isUnsigned) -> OptAPInt {
        if (y.isZero())
          return std::nullopt; // an error left to the runtime
        if (isUnsigned)
          return x.urem(y);
        if (x.isMinSignedValue() && y.isAllOnes())
          return APInt::getZero(x.getBitWidth());
        APInt r = x.srem(y); // the dividend's sign
        if (!fmod && !r.isZero() && r.isNegative() != y.isNegative())
          r += y;
        return r;
      });
}

#define OCTET_BINARY_OP(OpT)                                                                  \
  LogicalResult OpT::inferReturnTypes(MLIRContext *, std::optional<Location> loc,           \
                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {     \
    return inferBinary<OpT>(loc, adaptor.getLhs(), adaptor.getRhs(), types);                \
  }                                                                                         \
  LogicalResult OpT::verify() { return verifyBinary(*this); }
OCTET_BINARY_OP(AddOp)
OCTET_BINARY_OP(SubOp)
OCTET_BINARY_OP(MulOp)
OCTET_BINARY_OP(DivOp)
OCTET_BINARY_OP(PowOp)
OCTET_BINARY_OP(MaxOp)
OCTET_BINARY_OP(MinOp)
OCTET_BINARY_OP(EqualOp)
OCTET_BINARY_OP(LessOp)
OCTET_BINARY_OP(GreaterOp)
OCTET_BINARY_OP(AndOp)
OCTET_BINARY_OP(OrOp)
OCTET_BINARY_OP(XorOp)
#undef OCTET_BINARY_OP

/// Constant folding of a unary op: `floatFn(x)` for float elements,
/// `intFn(x, isUnsigned)` for integer ones; each may refuse with nullopt.
template <typename FloatFn, typename IntFn>
static OpFoldResult foldUnaryConstant(Attribute input, FloatFn floatFn, IntFn intFn) {
  auto dense = smallDense(input);
  if (!dense)
    return {};
  Type element = dense.getElementType();
  if (isa<FloatType>(element))
    return constFoldUnaryOpConditional<FloatAttr, APFloat, void>({dense}, dense.getType(),
                                                                 floatFn);
  if (!isa<IntegerType>(element))
    return {};
  bool isUnsigned = isUnsignedInt(element);
  return constFoldUnaryOpConditional<IntegerAttr, APInt, void>(
      {dense}, dense.getType(), [&](const APInt &x) { return intFn(x, isUnsigned); });
}

/// Folds a transcendental op on a small f32 constant, computed in double.
template <typename Fn> static OpFoldResult foldF32Unary(Attribute input, Fn fn) {
  return foldUnaryConstant(
      input,
      [&](const APFloat &x) -> OptAPFloat {
        if (&x.getSemantics() != &APFloat::IEEEsingle())
          return std::nullopt;
        return APFloat(static_cast<float>(fn(static_cast<double>(x.convertToFloat()))));
      },
      [](const APInt &, bool) -> OptAPInt { return std::nullopt; });
}

OpFoldResult NegOp::fold(FoldAdaptor a) {
  return foldUnaryConstant(
      a.getInput(), [](const APFloat &x) -> OptAPFloat { return -x; },
      [](const APInt &x, bool) -> OptAPInt { return -x; });
}
OpFoldResult AbsOp::fold(FoldAdaptor a) {
  return foldUnaryConstant(
      a.getInput(), [](const APFloat &x) -> OptAPFloat { return abs(x); },
      [](const APInt &x, bool isUnsigned) -> OptAPInt { return isUnsigned ? x : x.abs(); });
}
OpFoldResult ExpOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return std::log(x); });
}
OpFoldResult ErfOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return std::erf(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return std::tanh(x); });
}
OpFoldResult SqrtOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return std::sqrt(x); });
}
OpFoldResult RsqrtOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return 1.0 / std::sqrt(x); });
}
OpFoldResult ReciprocalOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return 1.0 / x; });
}
OpFoldResult ReluOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return x > 0 ? x : 0.0; });
}
OpFoldResult SigmoidOp::fold(FoldAdaptor a) {
  return foldF32Unary(a.getInput(), [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
OpFoldResult CeilOp::fold(FoldAdaptor a) {
  return foldUnaryConstant(
      a.getInput(),
      [](const APFloat &x) -> OptAPFloat {
        APFloat r = x;
        r.roundToIntegral(APFloat::rmTowardPositive);
        return r;
      },
      [](const APInt &, bool) -> OptAPInt { return std::nullopt; });
}
OpFoldResult FloorOp::fold(FoldAdaptor a) {
  return foldUnaryConstant(
      a.getInput(),
      [](const APFloat &x) -> OptAPFloat {
        APFloat r = x;
        r.roundToIntegral(APFloat::rmTowardNegative);
        return r;
      },
      [](const APInt &, bool) -> OptAPInt { return std::nullopt; });
}
OpFoldResult SignOp::fold(FoldAdaptor a) {
  return foldUnaryConstant(
      a.getInput(),
      [](const APFloat &x) -> OptAPFloat {
        if (x.isNaN())
          return x;
        if (x.isZero()) // -0 gives 0, as numpy
          return APFloat::getZero(x.getSemantics());
        return APFloat::getOne(x.getSemantics(), x.isNegative());
      },
      [](const APInt &x, bool isUnsigned) -> OptAPInt {
        unsigned width = x.getBitWidth();
        if (x.isZero())
          return APInt::getZero(width);
        return !isUnsigned && x.isNegative() ? APInt::getAllOnes(width) : APInt(width, 1);
      });
}

/// is_nan / is_inf: an i1 tensor of the input's shape; folds on small constants.
template <typename Fn>
static OpFoldResult foldFloatTest(Attribute input, RankedTensorType type, Fn test) {
  auto dense = smallDense(input);
  if (!dense || !isa<FloatType>(dense.getElementType()) || !type.hasStaticShape())
    return {};
  if (dense.isSplat())
    return DenseElementsAttr::get(type, test(dense.getSplatValue<APFloat>()));
  SmallVector<bool> values;
  for (const APFloat &x : dense.getValues<APFloat>())
    values.push_back(test(x));
  return DenseElementsAttr::get(type, ArrayRef<bool>(values));
}
static LogicalResult inferFloatTest(Value input, SmallVectorImpl<Type> &types) {
  types.push_back(tensorOf(input).clone(IntegerType::get(input.getContext(), 1)));
  return success();
}
LogicalResult IsNanOp::inferReturnTypes(MLIRContext *, std::optional<Location>, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferFloatTest(adaptor.getInput(), types);
}
OpFoldResult IsNanOp::fold(FoldAdaptor a) {
  return foldFloatTest(a.getInput(), getType(), [](const APFloat &x) { return x.isNaN(); });
}
LogicalResult IsInfOp::inferReturnTypes(MLIRContext *, std::optional<Location>, Adaptor adaptor,
                                        SmallVectorImpl<Type> &types) {
  return inferFloatTest(adaptor.getInput(), types);
}
OpFoldResult IsInfOp::fold(FoldAdaptor a) {
  bool negative = getDetectNegative(), positive = getDetectPositive();
  return foldFloatTest(a.getInput(), getType(), [&](const APFloat &x) {
    return x.isInfinity() && (x.isNegative() ? negative : positive);
  });
}

OpFoldResult NotOp::fold(FoldAdaptor a) {
  if (auto inner = getInput().getDefiningOp<NotOp>())
    return inner.getInput();
  return foldUnaryConstant(
      a.getInput(), [](const APFloat &) -> OptAPFloat { return std::nullopt; },
      [](const APInt &x, bool) -> OptAPInt { return ~x; });
}

/// ONNX Cast of one integer: extended by its own signedness, truncated to the
/// target width; anything to `i1` is `x != 0`.
static APInt castInteger(const APInt &x, bool isUnsigned, unsigned width) {
  if (width == 1)
    return APInt(1, !x.isZero());
  return isUnsigned ? x.zextOrTrunc(width) : x.sextOrTrunc(width);
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = smallDense(a.getInput());
  if (!dense || !getType().hasStaticShape())
    return {};
  Type from = dense.getElementType(), to = getType().getElementType();
  auto toFloat = dyn_cast<FloatType>(to);
  auto toInt = dyn_cast<IntegerType>(to);
  if (!toFloat && !toInt)
    return {};
  if (isa<IntegerType>(from)) {
    bool isUnsigned = isUnsignedInt(from);
    if (toInt)
      return constFoldCastOp<IntegerAttr, IntegerAttr, APInt, APInt, void>(
          {dense}, getType(), [&](const APInt &x, bool &) {
            return castInteger(x, isUnsigned, toInt.getWidth());
          });
    return constFoldCastOp<IntegerAttr, FloatAttr, APInt, APFloat, void>(
        {dense}, getType(), [&](const APInt &x, bool &) {
          APFloat result(toFloat.getFloatSemantics());
          result.convertFromAPInt(x, /*IsSigned=*/!isUnsigned, APFloat::rmNearestTiesToEven);
          return result;
        });
  }
  if (!isa<FloatType>(from))
    return {};
  if (toFloat)
    return constFoldCastOp<FloatAttr, FloatAttr, APFloat, APFloat, void>(
        {dense}, getType(), [&](const APFloat &x, bool &) {
          APFloat result = x;
          bool losesInfo;
          result.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
          return result;
        });
  return constFoldCastOp<FloatAttr, IntegerAttr, APFloat, APInt, void>(
      {dense}, getType(), [&](const APFloat &x, bool &castStatus) {
        if (toInt.getWidth() == 1)
          return APInt(1, !x.isZero());
        // NaN, infinities and out-of-range values are undefined in ONNX: not folded.
        APSInt result(toInt.getWidth(), /*isUnsigned=*/toInt.isUnsigned());
        bool isExact;
        castStatus = x.convertToInteger(result, APFloat::rmTowardZero, &isExact) !=
                     APFloat::opInvalidOp;
        return APInt(result);
      });
}

LogicalResult WhereOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                        Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferBroadcast(loc, getOperationName(),
                        {adaptor.getCondition(), adaptor.getLhs(), adaptor.getRhs()},
                        getElementTypeOrSelf(adaptor.getLhs().getType()), types);
}

LogicalResult WhereOp::verify() {
  if (getElementTypeOrSelf(getLhs().getType()) != getElementTypeOrSelf(getRhs().getType()))
    return emitOpError("both branches must have the same element type, got ")
           << getLhs().getType() << " and " << getRhs().getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra and reductions
//===----------------------------------------------------------------------===//

/// numpy.matmul shape rules.
static LogicalResult inferMatMulShape(std::optional<Location> loc, StringRef opName,
                                      RankedTensorType lhs, RankedTensorType rhs,
                                      SmallVectorImpl<int64_t> &shape) {
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, opName, ": operands must have rank >= 1, got ",
                             shapeStr(lhs.getShape()), " and ", shapeStr(rhs.getShape()));
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  int64_t ka = a.back(), kb = b[b.size() - 2];
  if (!dimsCompatible(ka, kb))
    return emitOptionalError(loc, opName, ": contracting dims differ (", ka, " vs ", kb,
                             ") in ", shapeStr(lhs.getShape()), " · ", shapeStr(rhs.getShape()));
  if (failed(broadcastShapes(ArrayRef(a).drop_back(2), ArrayRef(b).drop_back(2), shape)))
    return emitOptionalError(loc, opName, ": batch dims of ", shapeStr(lhs.getShape()), " and ",
                             shapeStr(rhs.getShape()), " do not broadcast");
  if (!vecA)
    shape.push_back(a[a.size() - 2]);
  if (!vecB)
    shape.push_back(b.back());
  return success();
}

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto lhs = tensorOf(adaptor.getLhs()), rhs = tensorOf(adaptor.getRhs());
  SmallVector<int64_t> shape;
  if (failed(inferMatMulShape(loc, getOperationName(), lhs, rhs, shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult MatMulOp::verify() {
  if (getLhs().getType().getElementType() != getRhs().getType().getElementType())
    return emitOpError("element types differ: ")
           << getLhs().getType() << " and " << getRhs().getType();
  if (getLhs().getType().getElementType().isInteger(1))
    return emitOpError("matmul of i1 tensors is not defined");
  return success();
}

/// The type of x · W ([..., N]) for `octet.linear` and `octet.fused_linear`.
static LogicalResult inferLinear(std::optional<Location> loc, StringRef opName,
                                 RankedTensorType input, RankedTensorType weight,
                                 bool transposeWeight, SmallVectorImpl<Type> &types) {
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, opName, ": needs an input of rank >= 1 and a 2-D weight, got ",
                             input, " and ", weight);
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(transposeWeight ? 0 : 1);
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

/// Element types, K and the bias shape of a linear layer's operands.
static LogicalResult verifyLinearOperands(Operation *op, RankedTensorType input,
                                          RankedTensorType weight, Value bias,
                                          bool transposeWeight) {
  if (weight.getElementType() != input.getElementType())
    return op->emitOpError("weight element type ")
           << weight.getElementType() << " differs from the input's " << input.getElementType();
  StringRef kName = transposeWeight ? "columns" : "rows";
  StringRef nName = transposeWeight ? "rows" : "columns";
  int64_t k = input.getShape().back(), n = weight.getDimSize(transposeWeight ? 0 : 1);
  int64_t weightK = weight.getDimSize(transposeWeight ? 1 : 0);
  if (!dimsCompatible(k, weightK))
    return op->emitOpError("input's last dim ")
           << k << " does not match the weight's " << kName << " " << weightK;
  if (bias) {
    auto biasType = tensorOf(bias);
    if (biasType.getElementType() != input.getElementType())
      return op->emitOpError("bias element type ")
             << biasType.getElementType() << " differs from the input's "
             << input.getElementType();
    if (biasType.getRank() != 1 || !dimsCompatible(biasType.getDimSize(0), n))
      return op->emitOpError("bias must have shape ")
             << shapeStr(n) << " (the weight's " << nName << "), got "
             << shapeStr(biasType.getShape());
  }
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  return inferLinear(loc, "octet.linear", tensorOf(adaptor.getInput()),
                     tensorOf(adaptor.getWeight()), adaptor.getTransposeWeight(), types);
}

LogicalResult LinearOp::verify() {
  return verifyLinearOperands(*this, getInput().getType(), getWeight().getType(), getBias(),
                              getTransposeWeight());
}

/// The extra operands of a fused GEMM (fused_linear, qlinear) broadcast to its result.
static LogicalResult verifyExtrasBroadcast(Operation *op, ValueRange extras,
                                           RankedTensorType result) {
  for (auto [i, extra] : llvm::enumerate(extras))
    if (!isBroadcastableTo(tensorOf(extra).getShape(), result.getShape()))
      return op->emitOpError("extra operand #")
             << i << " of shape " << shapeStr(tensorOf(extra).getShape())
             << " does not broadcast to the result shape " << shapeStr(result.getShape());
  return success();
}

/// A fused GEMM's epilogue block: it takes the `accumulator` element
/// (`accumulatorName` in the error), then one element per extra operand, yields
/// one `accumulator` element, and holds only what an elementwise program lowers
/// (compiler/ir/ElementwiseOps.h, the table octet.fused's body uses too).
static LogicalResult verifyEpilogue(Operation *op, Region &epilogue, Type accumulator,
                                    ValueRange extras, StringRef accumulatorName,
                                    StringRef yieldNote) {
  Block &body = epilogue.front();
  SmallVector<Type> expected{accumulator};
  for (Value extra : extras)
    expected.push_back(tensorOf(extra).getElementType());
  if (body.getArgumentTypes() != ArrayRef<Type>(expected)) {
    InFlightDiagnostic diag = op->emitOpError("epilogue block must take (");
    llvm::interleaveComma(expected, diag);
    return diag << "): the " << accumulatorName << ", then one element per extra operand";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValue().getType() != accumulator)
    return op->emitOpError("epilogue must end with an octet.yield of one ")
           << accumulator << yieldNote;
  for (Operation &inner : body.without_terminator())
    if (!isElementwiseProgramOp(&inner))
      return inner.emitOpError("is not a scalar f32 op that the epilogue of ")
             << op->getName().getStringRef() << " allows (" << elementwiseProgramOpNames() << ")";
  return success();
}

LogicalResult FusedLinearOp::verify() {
  SmallVector<Type> inferred;
  if (failed(inferLinear(getLoc(), "octet.fused_linear", getInput().getType(),
                         getWeight().getType(), getTransposeWeight(), inferred)) ||
      failed(verifyLinearOperands(*this, getInput().getType(), getWeight().getType(), getBias(),
                                  getTransposeWeight())))
    return failure();
  if (inferred.front() != getType())
    return emitOpError("result type ") << getType() << " differs from the linear's " << inferred.front();
  return verifyExtrasBroadcast(*this, getExtra(), getType());
}

LogicalResult FusedLinearOp::verifyRegions() {
  return verifyEpilogue(*this, getEpilogue(), getType().getElementType(), getExtra(), "accumulator",
                        "");
}

LogicalResult FusedOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input: the result shape is their broadcast");
  SmallVector<int64_t> broadcast;
  for (auto [i, input] : llvm::enumerate(getInputs())) {
    ArrayRef<int64_t> shape = tensorOf(input).getShape();
    if (!isBroadcastableTo(shape, getType().getShape()))
      return emitOpError("input #") << i << " of shape " << shapeStr(shape)
                                    << " does not broadcast to the result shape "
                                    << shapeStr(getType().getShape());
    SmallVector<int64_t> next;
    if (failed(broadcastShapes(broadcast, shape, next)))
      return emitOpError("input #") << i << " of shape " << shapeStr(shape)
                                    << " does not broadcast with the inputs before it "
                                    << shapeStr(broadcast);
    broadcast = std::move(next);
  }
  // Every result dim must come from an input: a dim that all inputs have as
  // 1 (or lack) would have no run-time size.
  bool covered = broadcast.size() == static_cast<size_t>(getType().getRank());
  for (size_t d = 0; covered && d < broadcast.size(); ++d) {
    int64_t result = getType().getDimSize(d);
    covered = broadcast[d] == 1 ? result == 1 : dimsCompatible(broadcast[d], result);
  }
  if (!covered)
    return emitOpError("result shape ") << shapeStr(getType().getShape())
                                        << " is not the broadcast of the input shapes "
                                        << shapeStr(broadcast);
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  SmallVector<Type> expected;
  for (Value input : getInputs())
    expected.push_back(tensorOf(input).getElementType());
  if (body.getArgumentTypes() != ArrayRef<Type>(expected)) {
    InFlightDiagnostic diag = emitOpError("body block must take (");
    llvm::interleaveComma(expected, diag);
    return diag << "): one element per input";
  }
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || yield.getValue().getType() != getType().getElementType())
    return emitOpError("body must end with an octet.yield of one ") << getType().getElementType();
  for (Operation &op : body.without_terminator())
    if (!isElementwiseProgramOp(&op))
      return op.emitOpError("is not a scalar f32 op that ")
             << getOperationName() << " allows (" << elementwiseProgramOpNames() << ")";
  return success();
}

template <typename OpT>
static LogicalResult inferReduce(std::optional<Location> loc, typename OpT::Adaptor adaptor,
                                 SmallVectorImpl<Type> &types) {
  auto input = tensorOf(adaptor.getInput());
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> axes = adaptor.getAxes();
  for (int64_t axis : axes)
    if (axis >= input.getRank())
      return emitOptionalError(loc, OpT::getOperationName(), ": axis ", axis,
                               " is out of range for rank ", input.getRank());
  for (auto [i, d] : llvm::enumerate(input.getShape())) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      shape.push_back(d);
    else if (adaptor.getKeepdims())
      shape.push_back(1);
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

template <typename OpT> static LogicalResult verifyReduce(OpT op) {
  ArrayRef<int64_t> axes = op.getAxes();
  if (axes.empty())
    return op.emitOpError("needs at least one axis");
  for (size_t i = 1; i < axes.size(); ++i)
    if (axes[i] <= axes[i - 1])
      return op.emitOpError("axes must be sorted and unique, got ") << shapeStr(axes);
  return success();
}

#define OCTET_REDUCE_OP(OpT)                                                                  \
  LogicalResult OpT::inferReturnTypes(MLIRContext *, std::optional<Location> loc,           \
                                      Adaptor adaptor, SmallVectorImpl<Type> &types) {     \
    return inferReduce<OpT>(loc, adaptor, types);                                           \
  }                                                                                         \
  LogicalResult OpT::verify() { return verifyReduce(*this); }
OCTET_REDUCE_OP(ReduceMeanOp)
OCTET_REDUCE_OP(ReduceSumOp)
OCTET_REDUCE_OP(ReduceMaxOp)
OCTET_REDUCE_OP(ReduceMinOp)
#undef OCTET_REDUCE_OP

static LogicalResult verifyAxis(Operation *op, int64_t axis, int64_t rank) {
  if (axis >= rank)
    return op->emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult CumSumOp::verify() {
  return verifyAxis(*this, getAxis(), getType().getRank());
}

//===----------------------------------------------------------------------===//
// Encoder blocks
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() { return verifyAxis(*this, getAxis(), getType().getRank()); }

/// A positive epsilon, and gamma/beta of the shape of the normalized dims.
static LogicalResult verifyNorm(Operation *op, RankedTensorType input, int64_t axis,
                                const APFloat &epsilon, Value gamma, Value beta) {
  if (!epsilon.isNonZero() || epsilon.isNegative() || epsilon.isNaN())
    return op->emitOpError("epsilon must be positive, got ") << epsilon.convertToDouble();
  if (failed(verifyAxis(op, axis, input.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (auto [name, v] : {std::pair<StringRef, Value>{"gamma", gamma}, {"beta", beta}}) {
    if (!v)
      continue;
    auto type = tensorOf(v);
    if (type.getElementType() != input.getElementType())
      return op->emitOpError(name) << " must have element type " << input.getElementType()
                                   << ", got " << type.getElementType();
    if (type.getRank() != static_cast<int64_t>(normalized.size()) ||
        !llvm::all_of_zip(type.getShape(), normalized, dimsCompatible))
      return op->emitOpError(name) << " must have shape " << shapeStr(normalized)
                                   << " (the normalized dims), got " << shapeStr(type.getShape());
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput().getType(), getAxis(), getEpsilon(), getGamma(), getBeta());
}

LogicalResult AddLayerNormOp::verify() {
  return verifyNorm(*this, getInput().getType(), getAxis(), getEpsilon(), getGamma(), getBeta());
}

static LogicalResult verifyGeluApproximation(Operation *op, StringRef approximate) {
  if (approximate != "none" && approximate != "tanh")
    return op->emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << approximate << "\"";
  return success();
}

LogicalResult GeluOp::verify() { return verifyGeluApproximation(*this, getApproximate()); }

LogicalResult ScalarGeluOp::verify() { return verifyGeluApproximation(*this, getApproximate()); }

LogicalResult AttentionOp::verify() {
  auto type = getQuery().getType();
  if (type.getRank() != 3)
    return emitOpError("query, key and value must be [batch, seq, hidden], got ") << type;
  int64_t hidden = type.getDimSize(2), heads = getNumHeads();
  if (!ShapedType::isDynamic(hidden) && hidden % heads != 0)
    return emitOpError("hidden size ") << hidden << " is not a multiple of num_heads " << heads;
  if (Value mask = getMask()) {
    auto maskType = tensorOf(mask);
    if (maskType.getElementType() != type.getElementType())
      return emitOpError("mask must be additive, of element type ")
             << type.getElementType() << ", got " << maskType.getElementType();
    SmallVector<int64_t> scores = {type.getDimSize(0), heads, type.getDimSize(1),
                                   type.getDimSize(1)};
    if (!isBroadcastableTo(maskType.getShape(), scores))
      return emitOpError("mask of shape ")
             << shapeStr(maskType.getShape()) << " does not broadcast to the scores "
             << shapeStr(scores) << " [batch, heads, seq, seq]";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Padding-free batches
//===----------------------------------------------------------------------===//

void TokenLayoutOp::build(OpBuilder &builder, OperationState &state, ValueRange masks,
                          Value batch, Value seq) {
  build(builder, state, RankedTensorType::get({ShapedType::kDynamic}, builder.getI64Type()),
        masks, batch, seq);
}

LogicalResult TokenLayoutOp::verify() {
  if (getMasks().empty())
    return emitOpError("needs at least one attention mask");
  for (Value mask : getMasks())
    if (tensorOf(mask).getRank() > 4)
      return emitOpError("mask of shape ")
             << shapeStr(tensorOf(mask).getShape())
             << " has more than the 4 dims [batch, heads, seq, seq]";
  return success();
}

/// Packed and unpacked tensors are [batch, seq, features…] with run-time
/// batch and seq (their sizes change between the two forms).
static LogicalResult verifyTokenRows(Operation *op, RankedTensorType type) {
  if (type.getRank() < 2 || !type.isDynamicDim(0) || !type.isDynamicDim(1))
    return op->emitOpError("needs a [batch, seq, ...] tensor with run-time batch and seq, got ")
           << type;
  return success();
}

LogicalResult PackTokensOp::verify() { return verifyTokenRows(*this, getInput().getType()); }
LogicalResult UnpackTokensOp::verify() { return verifyTokenRows(*this, getInput().getType()); }

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// One `index` operand per `?` of the result, and no change of element type.
static LogicalResult verifyShapeOperands(Operation *op, RankedTensorType input,
                                         RankedTensorType result, ValueRange dims) {
  int64_t dynamic = llvm::count_if(result.getShape(), ShapedType::isDynamic);
  if (dynamic != static_cast<int64_t>(dims.size()))
    return op->emitOpError("result type ")
           << result << " has " << dynamic << " dynamic dims but " << dims.size()
           << " size operands were given";
  if (input.getElementType() != result.getElementType())
    return op->emitOpError("element type changes from ")
           << input.getElementType() << " to " << result.getElementType();
  return success();
}

/// The product of the static dims of `shape`.
static int64_t staticElementCount(ArrayRef<int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape)
    if (!ShapedType::isDynamic(d))
      count *= d;
  return count;
}

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (failed(verifyShapeOperands(*this, input, result, getDynamicDims())))
    return failure();
  // A fully static side fixes the element count; the static dims of the other
  // side must then divide it (and equal it when that side is static too).
  for (auto [known, other] : {std::pair(input, result), std::pair(result, input)}) {
    if (!known.hasStaticShape())
      continue;
    int64_t count = known.getNumElements(), otherCount = staticElementCount(other.getShape());
    bool ok = other.hasStaticShape() ? count == otherCount
                                     : (otherCount == 0 ? count == 0 : count % otherCount == 0);
    if (!ok)
      return emitOpError("cannot reshape ")
             << shapeStr(input.getShape()) << " (" << staticElementCount(input.getShape())
             << (input.hasStaticShape() ? "" : "·?") << " elements) to "
             << shapeStr(result.getShape()) << " (" << staticElementCount(result.getShape())
             << (result.hasStaticShape() ? "" : "·?") << " elements)";
  }
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  if (auto dense = smallDense(adaptor.getInput()))
    if (getType().hasStaticShape())
      return dense.reshape(getType());
  return {};
}

namespace {
/// reshape(reshape(x)) → reshape(x): only the last shape matters.
struct ComposeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<ReshapeOp>();
    if (!inner)
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), inner.getInput(),
                                           op.getDynamicDims());
    return success();
  }
};

/// A dim size as a product: a static factor times run-time sizes, each named
/// by its traceDimSource. Two products with the same factors are equal in
/// every run (the converse need not hold: this only proves equality).
struct SizeProduct {
  int64_t constant = 1;
  /// Sorted, so that equal multisets compare equal.
  SmallVector<ValueDim, 2> factors;

  static bool less(const ValueDim &a, const ValueDim &b) {
    return std::pair(a.value.getAsOpaquePointer(), a.dim) <
           std::pair(b.value.getAsOpaquePointer(), b.dim);
  }
  void multiply(const SizeProduct &other) {
    constant *= other.constant;
    for (const ValueDim &f : other.factors)
      factors.insert(llvm::upper_bound(factors, f, less), f);
  }
  bool operator==(const SizeProduct &other) const {
    return constant == other.constant && factors == other.factors;
  }
  bool operator!=(const SizeProduct &other) const { return !(*this == other); }
};

/// The size of dim `dim` of `value` (or of the `index` value itself when dim
/// is -1) as a product, looking through constants and `arith.muli` of sizes
/// (the B·S and B·H that exporters compute for flattening reshapes).
static SizeProduct sizeProduct(Value value, int64_t dim) {
  SizeProduct product;
  ValueDim source = traceDimSource(value, dim, kResolveDepth);
  APInt c;
  if (source.dim >= 0 && !tensorOf(source.value).isDynamicDim(source.dim)) {
    product.constant = tensorOf(source.value).getDimSize(source.dim);
  } else if (source.dim < 0 && matchPattern(source.value, m_ConstantInt(&c))) {
    product.constant = c.getSExtValue();
  } else if (auto mul = source.dim < 0 ? source.value.getDefiningOp<arith::MulIOp>()
                                       : arith::MulIOp()) {
    product = sizeProduct(mul.getLhs(), -1);
    product.multiply(sizeProduct(mul.getRhs(), -1));
  } else {
    product.factors.push_back(source);
  }
  return product;
}

static SmallVector<SizeProduct> sizeProducts(Value tensor) {
  SmallVector<SizeProduct> sizes;
  for (int64_t d = 0, e = tensorOf(tensor).getRank(); d < e; ++d)
    sizes.push_back(sizeProduct(tensor, d));
  return sizes;
}

/// Splits `from` into runs of consecutive dims whose products are the dims of
/// `to`, in order: to[i] = ∏ from[runs[i] ..< runs[i + 1]]. Each run has at
/// least one dim; nullopt if no such split is proven.
static std::optional<SmallVector<int64_t>> mergedRuns(ArrayRef<SizeProduct> from,
                                                      ArrayRef<SizeProduct> to) {
  SmallVector<int64_t> runs{0};
  size_t next = 0;
  for (const SizeProduct &target : to) {
    SizeProduct run;
    do {
      if (next == from.size())
        return std::nullopt;
      run.multiply(from[next++]);
    } while (run != target);
    runs.push_back(next);
  }
  if (next != from.size())
    return std::nullopt;
  return runs;
}

/// A reshape whose result provably has the input's dims (same static dims,
/// and each `?` sized by a value equal to the input's size there) is the input.
struct RemoveIdentityReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return failure();
    for (int64_t i = 0, e = op.getType().getRank(); i < e; ++i)
      if (op.getType().isDynamicDim(i) &&
          sizeProduct(op.getResult(), i) != sizeProduct(op.getInput(), i))
        return failure();
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// reshape(transpose(reshape(x))) → transpose(x) when the inner reshape only
/// merges runs of consecutive dims of x, and the outer one splits each
/// transposed dim back into its run (torchlib's Kᵀ: [B, H, S, D] → [B·H, S, D]
/// → [B·H, D, S] → [B, H, D, S]). Row-major order within a run is kept by
/// both reshapes, so moving the merged dims moves their runs as wholes.
struct FoldReshapeTransposeReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp split, PatternRewriter &rewriter) const override {
    auto transpose = split.getInput().getDefiningOp<TransposeOp>();
    auto merge = transpose ? transpose.getInput().getDefiningOp<ReshapeOp>() : ReshapeOp();
    if (!merge)
      return failure();
    Value input = merge.getInput();
    SmallVector<SizeProduct> inputSizes = sizeProducts(input);
    std::optional<SmallVector<int64_t>> runs =
        mergedRuns(inputSizes, sizeProducts(merge.getResult()));
    if (!runs)
      return failure();
    SmallVector<int64_t> permutation;
    for (int64_t p : transpose.getPermutation())
      for (int64_t d = (*runs)[p]; d < (*runs)[p + 1]; ++d)
        permutation.push_back(d);
    RankedTensorType inputType = tensorOf(input), splitType = split.getType();
    if (splitType.getRank() != static_cast<int64_t>(permutation.size()))
      return failure();
    SmallVector<SizeProduct> splitSizes = sizeProducts(split.getResult());
    for (auto [i, p] : llvm::enumerate(permutation))
      if (splitType.getDimSize(i) != inputType.getDimSize(p) || splitSizes[i] != inputSizes[p])
        return failure();
    rewriter.replaceOpWithNewOp<TransposeOp>(split, input, permutation);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ComposeReshapes, RemoveIdentityReshape, FoldReshapeTransposeReshape>(context);
}

LogicalResult ExpandOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (failed(verifyShapeOperands(*this, input, result, getDynamicDims())))
    return failure();
  if (!isBroadcastableTo(input.getShape(), result.getShape()))
    return emitOpError("cannot expand ")
           << shapeStr(input.getShape()) << " to " << shapeStr(result.getShape());
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  auto dense = smallDense(adaptor.getInput());
  auto type = getType();
  if (!dense || !type.hasStaticShape())
    return {};
  if (dense.isSplat())
    return DenseElementsAttr::get(type, dense.getSplatValue<Attribute>());
  if (type.getNumElements() > kMaxFoldedElements)
    return {};
  auto values = dense.getValues<Attribute>().begin();
  SmallVector<Attribute> expanded;
  for (int64_t i = 0, e = type.getNumElements(); i < e; ++i)
    expanded.push_back(values[broadcastIndex(dense.getType().getShape(), type.getShape(), i)]);
  return DenseElementsAttr::get(type, expanded);
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                            Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto input = tensorOf(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  if (static_cast<int64_t>(perm.size()) != input.getRank())
    return emitOptionalError(loc, "octet.transpose: permutation has ", perm.size(),
                             " entries for a tensor of rank ", input.getRank());
  SmallVector<int64_t> shape;
  SmallVector<bool> seen(perm.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= input.getRank() || seen[p])
      return emitOptionalError(loc, "octet.transpose: ", shapeStr(perm),
                               " is not a permutation of 0..", input.getRank() - 1);
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPermutation()))
    if (static_cast<int64_t>(i) != p)
      return {};
  return getInput();
}

namespace {
/// transpose(transpose(x, p1), p2) → transpose(x, p1∘p2).
struct ComposeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto inner = op.getInput().getDefiningOp<TransposeOp>();
    if (!inner)
      return failure();
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPermutation())
      perm.push_back(inner.getPermutation()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, inner.getInput(), perm);
    return success();
  }
};
} // namespace

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ComposeTransposes>(context);
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "octet.concat: needs at least one input");
  auto first = tensorOf(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (axis >= first.getRank())
    return emitOptionalError(loc, "octet.concat: axis ", axis, " is out of range for rank ",
                             first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  for (Value v : adaptor.getInputs().drop_front()) {
    auto type = tensorOf(v);
    if (type.getRank() != first.getRank() || type.getElementType() != first.getElementType())
      return emitOptionalError(loc, "octet.concat: inputs ", first, " and ", type,
                               " differ in rank or element type");
    for (int64_t i = 0; i < type.getRank(); ++i) {
      int64_t d = type.getDimSize(i);
      if (i == axis) {
        shape[i] = ShapedType::isDynamic(shape[i]) || ShapedType::isDynamic(d)
                       ? ShapedType::kDynamic
                       : shape[i] + d;
      } else if (ShapedType::isDynamic(shape[i])) {
        shape[i] = d;
      } else if (!dimsCompatible(d, shape[i])) {
        return emitOptionalError(loc, "octet.concat: inputs differ in dim ", i, " (", shape[i],
                                 " vs ", d, "), which is not the concat axis ", axis);
      }
    }
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  auto type = getType();
  if (!type.hasStaticShape() || type.getNumElements() > kMaxFoldedElements)
    return {};
  SmallVector<DenseElementsAttr> parts;
  for (Attribute a : adaptor.getInputs()) {
    auto dense = smallDense(a);
    if (!dense)
      return {};
    parts.push_back(dense);
  }
  // Row-major: for each index of the dims before the axis, each part's block.
  int64_t axis = getAxis();
  int64_t outer = staticElementCount(type.getShape().take_front(axis));
  SmallVector<Attribute> values;
  for (int64_t o = 0; o < outer; ++o) {
    for (DenseElementsAttr part : parts) {
      int64_t block = staticElementCount(part.getType().getShape().drop_front(axis));
      auto partValues = part.getValues<Attribute>().begin();
      for (int64_t k = 0; k < block; ++k)
        values.push_back(partValues[o * block + k]);
    }
  }
  return DenseElementsAttr::get(type, values);
}

/// The number of elements ONNX Slice takes from a dim of `size` with
/// `start:end:step`, after making negative bounds count from the end and
/// clamping them as ONNX does.
static int64_t sliceLength(int64_t size, int64_t start, int64_t end, int64_t step) {
  if (size == 0)
    return 0;
  if (start < 0)
    start += size;
  if (end < 0)
    end += size;
  // Distances as unsigned so that steps like INT64_MAX cannot overflow.
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, size);
    end = std::clamp<int64_t>(end, 0, size);
    if (end <= start)
      return 0;
    return 1 + static_cast<int64_t>(static_cast<uint64_t>(end - start - 1) /
                                    static_cast<uint64_t>(step));
  }
  start = std::clamp<int64_t>(start, 0, size - 1);
  end = std::clamp<int64_t>(end, -1, size - 1);
  if (start <= end)
    return 0;
  return 1 + static_cast<int64_t>(static_cast<uint64_t>(start - end - 1) /
                                  (0 - static_cast<uint64_t>(step)));
}

LogicalResult SliceOp::verify() {
  size_t n = getAxes().size();
  if (getStaticStarts().size() != n || getStaticEnds().size() != n || getSteps().size() != n)
    return emitOpError("axes, starts, ends and steps must have the same length, got ")
           << n << ", " << getStaticStarts().size() << ", " << getStaticEnds().size() << " and "
           << getSteps().size();
  if (failed(verifyListOfOperandsOrIntegers(*this, "starts", n, getStaticStarts(), getStarts())) ||
      failed(verifyListOfOperandsOrIntegers(*this, "ends", n, getStaticEnds(), getEnds())))
    return failure();
  auto input = getInput().getType(), result = getType();
  if (input.getRank() != result.getRank() || input.getElementType() != result.getElementType())
    return emitOpError("result ") << result << " must have the rank and element type of "
                                  << input;
  SmallVector<bool> sliced(input.getRank(), false);
  for (auto [axis, start, end, step] :
       llvm::zip_equal(getAxes(), getStaticStarts(), getStaticEnds(), getSteps())) {
    if (axis >= input.getRank())
      return emitOpError("axis ") << axis << " is out of range for rank " << input.getRank();
    if (sliced[axis])
      return emitOpError("axis ") << axis << " is sliced twice";
    sliced[axis] = true;
    if (step == 0)
      return emitOpError("step of axis ") << axis << " must not be zero";
    int64_t size = input.getDimSize(axis), resultSize = result.getDimSize(axis);
    if (ShapedType::isDynamic(size) || ShapedType::isDynamic(resultSize) ||
        ShapedType::isDynamic(start) || ShapedType::isDynamic(end))
      continue;
    int64_t expected = sliceLength(size, start, end, step);
    if (resultSize != expected)
      return emitOpError("slicing ") << start << ":" << end << ":" << step << " of axis " << axis
                                     << " (size " << size << ") gives " << expected
                                     << " elements, but the result has " << resultSize;
  }
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!sliced[i] && !dimsCompatible(input.getDimSize(i), result.getDimSize(i)))
      return emitOpError("dim ") << i << " is not sliced but changes size from "
                                 << input.getDimSize(i) << " to " << result.getDimSize(i);
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto data = tensorOf(adaptor.getData()), indices = tensorOf(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (axis >= data.getRank())
    return emitOptionalError(loc, "octet.gather: axis ", axis, " is out of range for rank ",
                             data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  types.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

/// Checks GatherND's operands and gives its result shape
/// indices.shape[:-1] + data.shape[batch_dims + q:].
static FailureOr<SmallVector<int64_t>> gatherNDShape(std::optional<Location> loc,
                                                     RankedTensorType data,
                                                     RankedTensorType indices, int64_t batchDims) {
  int64_t r = data.getRank(), q = indices.getRank();
  if (r < 1 || q < 1)
    return emitOptionalError(loc, "octet.gather_nd: data and indices need rank >= 1, got ",
                             shapeStr(data.getShape()), " and ", shapeStr(indices.getShape()));
  int64_t tuple = indices.getDimSize(q - 1);
  if (ShapedType::isDynamic(tuple))
    return emitOptionalError(loc, "octet.gather_nd: the last dim of the indices ",
                             shapeStr(indices.getShape()), " must be static");
  if (batchDims >= std::min(r, q))
    return emitOptionalError(loc, "octet.gather_nd: batch_dims ", batchDims,
                             " must be less than both ranks (", r, " and ", q, ")");
  if (tuple < 1 || tuple > r - batchDims)
    return emitOptionalError(loc, "octet.gather_nd: index tuples of ", tuple,
                             " entries do not fit data ", shapeStr(data.getShape()),
                             " after ", batchDims, " batch dims");
  for (int64_t d = 0; d < batchDims; ++d)
    if (!dimsCompatible(data.getDimSize(d), indices.getDimSize(d)))
      return emitOptionalError(loc, "octet.gather_nd: batch dim ", d, " differs: data ",
                               shapeStr(data.getShape()), ", indices ",
                               shapeStr(indices.getShape()));
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(batchDims + tuple));
  return shape;
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto data = tensorOf(adaptor.getData());
  // The parser infers before it fills in default-valued attributes: absent is 0.
  IntegerAttr batchDims = adaptor.getBatchDimsAttr();
  auto shape = gatherNDShape(loc, data, tensorOf(adaptor.getIndices()),
                             batchDims ? batchDims.getInt() : 0);
  if (failed(shape))
    return failure();
  types.push_back(RankedTensorType::get(*shape, data.getElementType()));
  return success();
}
LogicalResult GatherNDOp::verify() {
  return success(succeeded(gatherNDShape(getLoc(), getData().getType(), getIndices().getType(),
                                         getBatchDims())));
}

static LogicalResult checkGatherElements(std::optional<Location> loc, RankedTensorType data,
                                         RankedTensorType indices, int64_t axis) {
  if (data.getRank() != indices.getRank())
    return emitOptionalError(loc, "octet.gather_elements: indices ", shapeStr(indices.getShape()),
                             " must have the rank of the data ", shapeStr(data.getShape()));
  if (axis >= data.getRank())
    return emitOptionalError(loc, "octet.gather_elements: axis ", axis,
                             " is out of range for rank ", data.getRank());
  for (int64_t d = 0; d < data.getRank(); ++d) {
    int64_t i = indices.getDimSize(d), n = data.getDimSize(d);
    if (d != axis && !ShapedType::isDynamic(i) && !ShapedType::isDynamic(n) && i > n)
      return emitOptionalError(loc, "octet.gather_elements: indices dim ", d, " (", i,
                               ") exceeds the data's (", n, ")");
  }
  return success();
}
LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto data = tensorOf(adaptor.getData()), indices = tensorOf(adaptor.getIndices());
  if (failed(checkGatherElements(loc, data, indices, adaptor.getAxis())))
    return failure();
  types.push_back(indices.clone(data.getElementType()));
  return success();
}
LogicalResult GatherElementsOp::verify() {
  return checkGatherElements(getLoc(), getData().getType(), getIndices().getType(), getAxis());
}

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// Per-tensor (scalar scale) or per-axis (1-D scale along `axis`) parameters;
/// the zero point, if any, has the scale's shape and `zeroPointElement`.
static LogicalResult verifyQuantParams(Operation *op, RankedTensorType data, Value scale,
                                       Value zeroPoint, Type zeroPointElement,
                                       std::optional<uint64_t> axis) {
  if (axis && failed(verifyAxis(op, *axis, data.getRank())))
    return failure();
  auto scaleType = tensorOf(scale);
  bool perTensor = scaleType.getRank() == 0 ||
                   (scaleType.getRank() == 1 && scaleType.getDimSize(0) == 1 && !axis);
  if (!perTensor) {
    if (scaleType.getRank() != 1)
      return op->emitOpError("scale must be a scalar or 1-D, got ") << scaleType;
    if (!axis)
      return op->emitOpError("a per-axis scale ")
             << shapeStr(scaleType.getShape()) << " needs an `axis`";
    int64_t channels = data.getDimSize(*axis);
    if (!dimsCompatible(channels, scaleType.getDimSize(0)))
      return op->emitOpError("per-axis scale has ")
             << scaleType.getDimSize(0) << " entries but axis " << *axis << " has size "
             << channels;
  }
  if (!zeroPoint)
    return success();
  auto zeroPointType = tensorOf(zeroPoint);
  if (zeroPointType.getElementType() != zeroPointElement)
    return op->emitOpError("zero point must have element type ")
           << zeroPointElement << ", got " << zeroPointType.getElementType();
  if (zeroPointType.getShape() != scaleType.getShape())
    return op->emitOpError("zero point shape ")
           << shapeStr(zeroPointType.getShape()) << " differs from scale shape "
           << shapeStr(scaleType.getShape());
  return success();
}

LogicalResult QuantizeOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("result shape ") << shapeStr(getType().getShape())
                                        << " must equal the input shape "
                                        << shapeStr(getInput().getType().getShape());
  return verifyQuantParams(*this, getInput().getType(), getScale(), getZeroPoint(),
                           getType().getElementType(), getAxis());
}

LogicalResult DequantizeOp::verify() {
  auto input = getInput().getType();
  if (input.getShape() != getType().getShape())
    return emitOpError("result shape ") << shapeStr(getType().getShape())
                                        << " must equal the input shape "
                                        << shapeStr(input.getShape());
  return verifyQuantParams(*this, input, getScale(), getZeroPoint(), input.getElementType(),
                           getAxis());
}

LogicalResult DynamicQuantizeOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &types) {
  auto u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  types.push_back(RankedTensorType::get(tensorOf(adaptor.getInput()).getShape(), u8));
  types.push_back(RankedTensorType::get({}, Float32Type::get(ctx)));
  types.push_back(RankedTensorType::get({}, u8));
  return success();
}

/// The shape of a per-row scale of `input`: its leading dims, then 1.
static SmallVector<int64_t> perRowScaleShape(RankedTensorType input) {
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = 1;
  return shape;
}

LogicalResult QuantizePerRowOp::verify() {
  auto input = getInput().getType();
  if (input.getRank() < 1)
    return emitOpError("needs an input of rank >= 1 (rows along the last axis), got ") << input;
  if (getResult().getType().getShape() != input.getShape())
    return emitOpError("result shape ") << shapeStr(getResult().getType().getShape())
                                        << " must equal the input shape "
                                        << shapeStr(input.getShape());
  SmallVector<int64_t> expected = perRowScaleShape(input);
  if (getScale().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("scale shape ") << shapeStr(getScale().getType().getShape())
                                       << " must be the input's leading dims and 1: "
                                       << shapeStr(expected);
  return success();
}

/// The LayerNorm part as octet.layer_norm's, over the last dim; the quantized
/// part as octet.quantize's per tensor, or octet.quantize_per_row's.
LogicalResult LayerNormQuantizeOp::verify() {
  auto input = getInput().getType();
  if (failed(verifyNorm(*this, input, getAxis(), getEpsilon(), getGamma(), getBeta())))
    return failure();
  if (static_cast<int64_t>(getAxis()) != input.getRank() - 1)
    return emitOpError("normalizes over the last dim only (axis ")
           << input.getRank() - 1 << "), got axis " << getAxis();
  if (Value residual = getResidual(); residual && residual.getType() != input)
    return emitOpError("residual type ") << residual.getType() << " must equal the input type "
                                         << input;
  auto quantized = getQuantized().getType();
  if (quantized.getShape() != input.getShape())
    return emitOpError("quantized shape ") << shapeStr(quantized.getShape())
                                           << " must equal the input shape "
                                           << shapeStr(input.getShape());
  if (bool(getQuantGamma()) != bool(getQuantBeta()))
    return emitOpError("quant_affine needs both a gamma and a beta");
  if (Value quantGamma = getQuantGamma()) {
    if (!getScale())
      return emitOpError("quant_affine is per tensor only: it needs a scale operand");
    if (quantGamma.getType() != getGamma().getType() ||
        getQuantBeta().getType() != getGamma().getType())
      return emitOpError("quant_affine types must equal gamma's ") << getGamma().getType();
  }
  if (Value scale = getScale()) {
    if (!getZeroPoint())
      return emitOpError("a per-tensor scale needs a zero point");
    if (getRowScale())
      return emitOpError("has a per-tensor scale operand and a per-row scale result");
    if (!tensorOf(scale).hasStaticShape() || tensorOf(scale).getNumElements() != 1)
      return emitOpError("scale must be per tensor (one element), got ") << scale.getType();
    return verifyQuantParams(*this, input, scale, getZeroPoint(), quantized.getElementType(),
                             std::nullopt);
  }
  if (getZeroPoint())
    return emitOpError("a zero point needs a scale");
  if (!getRowScale())
    return emitOpError("needs a scale operand (per tensor) or a row_scale result (per row)");
  if (!quantized.getElementType().isUnsignedInteger(8))
    return emitOpError("per-row quantization produces ui8 (zero point 128), got ")
           << quantized.getElementType();
  SmallVector<int64_t> expected = perRowScaleShape(input);
  if (getRowScale().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("row_scale shape ") << shapeStr(getRowScale().getType().getShape())
                                           << " must be the input's leading dims and 1: "
                                           << shapeStr(expected);
  return success();
}

LogicalResult MatMulIntegerOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                                Adaptor adaptor, SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  if (failed(inferMatMulShape(loc, getOperationName(), tensorOf(adaptor.getLhs()),
                              tensorOf(adaptor.getRhs()), shape)))
    return failure();
  types.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 32)));
  return success();
}

LogicalResult MatMulIntegerOp::verify() {
  Value lhsZeroPoint = getLhsZeroPoint(), rhsZeroPoint = getRhsZeroPoint();
  if (!lhsZeroPoint && !rhsZeroPoint)
    return success();
  if (!lhsZeroPoint || !rhsZeroPoint)
    return emitOpError("zero points come as a pair: give both lhs and rhs zero points or none");
  // lhs: one zero point; rhs: one, or one per column.
  auto verifyZeroPoint = [&](StringRef which, Value zeroPoint, Value data,
                             std::optional<int64_t> columns) -> LogicalResult {
    auto type = tensorOf(zeroPoint);
    Type element = tensorOf(data).getElementType();
    if (type.getElementType() != element)
      return emitOpError(which) << " zero point must have element type " << element << ", got "
                                << type.getElementType();
    bool scalar = type.getRank() == 0 || (type.getRank() == 1 && type.getDimSize(0) == 1);
    if (scalar ||
        (columns && type.getRank() == 1 && dimsCompatible(type.getDimSize(0), *columns)))
      return success();
    InFlightDiagnostic diag = emitOpError(which) << " zero point must be a scalar";
    if (columns)
      diag << " or have one entry per column " << shapeStr(*columns);
    return diag << ", got " << shapeStr(type.getShape());
  };
  auto rhs = getRhs().getType();
  std::optional<int64_t> columns;
  if (rhs.getRank() >= 2)
    columns = rhs.getDimSize(rhs.getRank() - 1);
  if (failed(verifyZeroPoint("lhs", lhsZeroPoint, getLhs(), std::nullopt)) ||
      failed(verifyZeroPoint("rhs", rhsZeroPoint, getRhs(), columns)))
    return failure();
  return success();
}

/// The linear's K, N and bias checks with the element types of the INT8 GEMM:
/// ui8 input, i8 weight, f32 bias.
PackedWeightLayout QLinearOp::getPackedLayout() {
  DictionaryAttr packed = getPacked();
  auto integer = [&](StringRef name) { return packed.getAs<IntegerAttr>(name).getInt(); };
  return PackedWeightLayout{*parsePackIsa(packed.getAs<StringAttr>("isa").getValue().str()),
                            integer("k"), integer("n"), int(integer("nr"))};
}

DenseIntElementsAttr QLinearOp::getPackedColsum() {
  return getPacked().getAs<DenseIntElementsAttr>("colsum");
}

int64_t QLinearOp::getK() {
  return getPacked() ? getPackedLayout().k : getWeight().getType().getDimSize(getInputFeatureDim());
}

int64_t QLinearOp::getN() {
  return getPacked() ? getPackedLayout().n
                     : getWeight().getType().getDimSize(getOutputFeatureDim());
}

/// octet.packed (docs/pack-weights.md): well-formed fields, a 1-D i8 weight
/// of exactly the layout's bytes, N column sums, no transpose_weight.
static LogicalResult verifyPackedWeight(QLinearOp op) {
  DictionaryAttr packed = op.getPacked();
  if (!packed)
    return op.emitOpError("a 1-D weight must be packed: it needs an '")
           << QLinearOp::kPackedAttrName << "' attribute";
  auto isa = packed.getAs<StringAttr>("isa");
  if (!isa || !parsePackIsa(isa.getValue().str()))
    return op.emitOpError("'") << QLinearOp::kPackedAttrName
                               << "' needs isa = \"avx512_vnni\" or \"amx\", got " << packed;
  for (StringRef name : {"nr", "k", "n"})
    if (!packed.getAs<IntegerAttr>(name))
      return op.emitOpError("'") << QLinearOp::kPackedAttrName << "' needs an integer " << name
                                 << ", got " << packed;
  PackedWeightLayout layout = op.getPackedLayout();
  if (std::string why = layout.check(); !why.empty())
    return op.emitOpError("'") << QLinearOp::kPackedAttrName << "': " << why;
  auto colsum = packed.getAs<DenseIntElementsAttr>("colsum");
  if (!colsum || !colsum.getElementType().isInteger(32) ||
      colsum.getType().getShape() != ArrayRef<int64_t>{layout.n})
    return op.emitOpError("'") << QLinearOp::kPackedAttrName << "' needs colsum : tensor<"
                               << layout.n << "xi32>, got " << packed;
  auto weight = op.getWeight().getType();
  if (weight.getRank() != 1 || weight.getDimSize(0) != layout.bytes())
    return op.emitOpError("packed weight must be tensor<")
           << layout.bytes() << "xi8> (" << isa.getValue() << " panels of " << layout.nr
           << " columns for K = " << layout.k << ", N = " << layout.n << "), got " << weight;
  if (op.getTransposeWeight())
    return op.emitOpError("a packed weight takes no transpose_weight");
  return success();
}

LogicalResult QLinearOp::verify() {
  auto input = getInput().getType(), weight = getWeight().getType();
  if (input.getRank() < 1 || (weight.getRank() != 2 && weight.getRank() != 1))
    return emitOpError("needs an input of rank >= 1 and a 2-D (or packed 1-D) weight, got ")
           << input << " and " << weight;
  if ((weight.getRank() == 1 || getPacked()) && failed(verifyPackedWeight(*this)))
    return failure();
  bool packed = weight.getRank() == 1;
  StringRef kName = packed ? "packed K" : getTransposeWeight() ? "columns" : "rows";
  StringRef nName = packed ? "packed N" : getTransposeWeight() ? "rows" : "columns";
  int64_t k = input.getShape().back(), n = getN();
  int64_t weightK = getK();
  if (!dimsCompatible(k, weightK))
    return emitOpError("input's last dim ")
           << k << " does not match the weight's " << kName << " " << weightK;
  auto inputScale = tensorOf(getInputScale());
  if (inputScale.getRank() != 0 &&
      inputScale.getShape() != ArrayRef<int64_t>(perRowScaleShape(input)))
    return emitOpError("input_scale must be a scalar (per tensor) or per row ")
           << shapeStr(perRowScaleShape(input)) << " (the input's leading dims and 1), got "
           << shapeStr(inputScale.getShape());
  auto checkPerColumn = [&](StringRef what, Value v) -> LogicalResult {
    auto type = tensorOf(v);
    if (type.getRank() != 1 || !dimsCompatible(type.getDimSize(0), n))
      return emitOpError() << what << " must have shape " << shapeStr(n) << " (the weight's "
                           << nName << "), got " << shapeStr(type.getShape());
    return success();
  };
  if (getBias() && failed(checkPerColumn("bias", getBias())))
    return failure();
  if (failed(checkPerColumn("weight_scale (one per output channel)", getWeightScale())))
    return failure();
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = n;
  auto resultType = getType();
  if (resultType.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError("result shape ") << shapeStr(resultType.getShape())
                                        << " differs from the linear's " << shapeStr(shape);
  Type element = resultType.getElementType();
  bool requantize = !element.isF32();
  if (bool(getOutputScale()) != bool(getOutputZeroPoint()))
    return emitOpError("requantize needs both an output scale and an output zero point");
  if (requantize != bool(getOutputScale()))
    return emitOpError(requantize ? "a quantized result (" : "an f32 result ")
           << (requantize ? "requantize fused) needs" : "takes no")
           << " output scale and zero point";
  if (requantize && tensorOf(getOutputZeroPoint()).getElementType() != element)
    return emitOpError("output zero point must have the result's element type ")
           << element << ", got " << tensorOf(getOutputZeroPoint()).getElementType();
  return verifyExtrasBroadcast(*this, getExtra(), resultType);
}

/// As octet.fused_linear's epilogue, except that the accumulator and the
/// yielded element are f32 whatever the result type (requantize comes after).
LogicalResult QLinearOp::verifyRegions() {
  return verifyEpilogue(*this, getEpilogue(), Float32Type::get(getContext()), getExtra(),
                        "dequantized accumulator", " (requantize follows it)");
}

#define GET_OP_CLASSES
#include "compiler/ir/OctetOps.cpp.inc"
