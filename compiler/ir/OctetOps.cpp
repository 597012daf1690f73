//===- OctetOps.cpp - verifiers, type inference, folders ------------------===//
#include "compiler/ir/OctetOps.h"

#include "mlir/Dialect/CommonFolders.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <numeric>

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

/// A small dense constant behind `attr`, or null. Large weights (resource blobs)
/// are never folded: folding them would copy the model.
static DenseElementsAttr smallDense(Attribute attr) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || (!dense.isSplat() && dense.getNumElements() > 4096))
    return {};
  return dense;
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
      return builder.create<arith::ConstantIndexOp>(loc, intAttr.getInt());
  if (auto elements = dyn_cast<ElementsAttr>(value))
    if (elements.getType() == type)
      return builder.create<ConstantOp>(loc, elements);
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

/// The `index` operand that gives dim `dim` of a reshape/expand result, or null.
template <typename OpT> static Value sizeOperandOf(OpT op, int64_t dim) {
  auto shape = op.getType().getShape();
  if (!ShapedType::isDynamic(shape[dim]))
    return {};
  int64_t pos = llvm::count_if(shape.take_front(dim), ShapedType::isDynamic);
  return op.getDynamicDims()[pos];
}

OpFoldResult DimOp::fold(FoldAdaptor) {
  int64_t dim = getIndex();
  Value source = getSource();
  int64_t size = tensorOf(source).getDimSize(dim);
  if (!ShapedType::isDynamic(size))
    return IntegerAttr::get(IndexType::get(getContext()), size);
  Operation *def = source.getDefiningOp();
  if (!def)
    return {};
  if (auto reshape = dyn_cast<ReshapeOp>(def))
    return sizeOperandOf(reshape, dim);
  if (auto expand = dyn_cast<ExpandOp>(def))
    return sizeOperandOf(expand, dim);
  if (auto transpose = dyn_cast<TransposeOp>(def)) {
    getSourceMutable().assign(transpose.getInput());
    setIndex(transpose.getPermutation()[dim]);
    return getResult();
  }
  // Shape-preserving ops: ask their first operand.
  if (def->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
      def->hasTrait<OpTrait::SameOperandsAndResultType>() ||
      isa<LayerNormOp, AddLayerNormOp, AttentionOp, SoftmaxOp, QuantizeOp, DequantizeOp>(def)) {
    Value input = def->getOperand(0);
    if (input != source && tensorOf(input).getRank() == tensorOf(source).getRank()) {
      getSourceMutable().assign(input);
      return getResult();
    }
  }
  return {};
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
    values.push_back(APInt(width, intAttr.getInt(), /*isSigned=*/true));
  }
  return DenseElementsAttr::get(getType(), values);
}

LogicalResult RangeOp::verify() {
  if (getType().getRank() != 1)
    return emitOpError("result must be 1-D, got ") << getType();
  APInt delta;
  if (matchPattern(getDelta(), m_ConstantInt(&delta)) && delta.isZero())
    return emitOpError("delta must not be zero");
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
  return std::is_same_v<OpT, AndOp> || std::is_same_v<OpT, OrOp>;
}

static LogicalResult inferBroadcast(std::optional<Location> loc, StringRef opName,
                                    ArrayRef<Value> operands, Type elementType,
                                    SmallVectorImpl<Type> &types) {
  SmallVector<int64_t> shape;
  for (Value v : operands) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (!type)
      return emitOptionalError(loc, opName, ": operands must be ranked tensors");
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
      return op.emitOpError("operands must be i1 tensors, got ") << element;
  } else if constexpr (!isComparison<OpT>()) {
    if (element.isInteger(1))
      return op.emitOpError("arithmetic on i1 tensors is not defined");
  }
  return success();
}

/// Constant folding and the algebraic identities x+0, x-0, x·1, x/1.
template <typename OpT, typename FloatFn, typename IntFn>
static OpFoldResult foldArith(OpT op, Attribute lhsAttr, Attribute rhsAttr, FloatFn floatFn,
                              IntFn intFn) {
  auto lhs = smallDense(lhsAttr), rhs = smallDense(rhsAttr);
  auto type = op.getType();
  if (lhs && rhs && lhs.getType() == type && rhs.getType() == type) {
    if (isa<FloatType>(type.getElementType()))
      return constFoldBinaryOp<FloatAttr, APFloat, void>({lhs, rhs}, floatFn);
    return constFoldBinaryOp<IntegerAttr, APInt, void>({lhs, rhs}, intFn);
  }
  // Broadcast scalars: fold when the result type equals one side.
  if (lhs && rhs && lhs.isSplat() && rhs.isSplat() && type.hasStaticShape()) {
    Attribute folded;
    if (isa<FloatType>(type.getElementType())) {
      auto r = floatFn(lhs.getSplatValue<APFloat>(), rhs.getSplatValue<APFloat>());
      if (r)
        folded = DenseElementsAttr::get(type, *r);
    } else {
      auto r = intFn(lhs.getSplatValue<APInt>(), rhs.getSplatValue<APInt>());
      if (r)
        folded = DenseElementsAttr::get(type, *r);
    }
    return folded;
  }
  return {};
}

static bool isSplatOf(Attribute attr, double value) {
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return false;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble() == value;
  if (dense.getElementType().isInteger(1))
    return false;
  return dense.getSplatValue<APInt>().getSExtValue() == static_cast<int64_t>(value);
}

using OptAPFloat = std::optional<APFloat>;
using OptAPInt = std::optional<APInt>;

OpFoldResult AddOp::fold(FoldAdaptor a) {
  if (isSplatOf(a.getRhs(), 0) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatOf(a.getLhs(), 0) && getRhs().getType() == getType())
    return getRhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x + y; },
      [](const APInt &x, const APInt &y) -> OptAPInt { return x + y; });
}
OpFoldResult SubOp::fold(FoldAdaptor a) {
  if (isSplatOf(a.getRhs(), 0) && getLhs().getType() == getType())
    return getLhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x - y; },
      [](const APInt &x, const APInt &y) -> OptAPInt { return x - y; });
}
OpFoldResult MulOp::fold(FoldAdaptor a) {
  if (isSplatOf(a.getRhs(), 1) && getLhs().getType() == getType())
    return getLhs();
  if (isSplatOf(a.getLhs(), 1) && getRhs().getType() == getType())
    return getRhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x * y; },
      [](const APInt &x, const APInt &y) -> OptAPInt { return x * y; });
}
OpFoldResult DivOp::fold(FoldAdaptor a) {
  if (isSplatOf(a.getRhs(), 1) && getLhs().getType() == getType())
    return getLhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return x / y; },
      [](const APInt &x, const APInt &y) -> OptAPInt {
        if (y.isZero())
          return std::nullopt; // leave the run-time error to the runtime
        return x.sdiv(y);
      });
}
OpFoldResult PowOp::fold(FoldAdaptor a) {
  if (isSplatOf(a.getRhs(), 1) && getLhs().getType() == getType())
    return getLhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat {
        if (&x.getSemantics() != &APFloat::IEEEsingle())
          return std::nullopt;
        return APFloat(std::pow(x.convertToFloat(), y.convertToFloat()));
      },
      [](const APInt &, const APInt &) -> OptAPInt { return std::nullopt; });
}
OpFoldResult MaxOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return llvm::maximum(x, y); },
      [](const APInt &x, const APInt &y) -> OptAPInt { return x.sge(y) ? x : y; });
}
OpFoldResult MinOp::fold(FoldAdaptor a) {
  if (getLhs() == getRhs() && getLhs().getType() == getType())
    return getLhs();
  return foldArith(
      *this, a.getLhs(), a.getRhs(),
      [](const APFloat &x, const APFloat &y) -> OptAPFloat { return llvm::minimum(x, y); },
      [](const APInt &x, const APInt &y) -> OptAPInt { return x.sle(y) ? x : y; });
}

/// Comparisons and logic on small constants (shape logic of exported graphs).
template <typename OpT, typename Pred>
static OpFoldResult foldPredicate(OpT op, Attribute lhsAttr, Attribute rhsAttr, Pred pred) {
  auto lhs = smallDense(lhsAttr), rhs = smallDense(rhsAttr);
  auto type = op.getType();
  if (!lhs || !rhs || !type.hasStaticShape())
    return {};
  int64_t n = type.getNumElements();
  auto at = [&](DenseElementsAttr attr, int64_t i) -> double {
    if (attr.isSplat())
      i = 0;
    else if (attr.getNumElements() != n)
      return NAN;
    if (isa<FloatType>(attr.getElementType()))
      return (*(attr.getValues<APFloat>().begin() + i)).convertToDouble();
    if (attr.getElementType().isInteger(1))
      return *(attr.getValues<bool>().begin() + i) ? 1.0 : 0.0;
    return static_cast<double>((*(attr.getValues<APInt>().begin() + i)).getSExtValue());
  };
  if ((!lhs.isSplat() && lhs.getNumElements() != n) || (!rhs.isSplat() && rhs.getNumElements() != n))
    return {};
  SmallVector<bool> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(pred(at(lhs, i), at(rhs, i)));
  return DenseElementsAttr::get(type, out);
}

OpFoldResult EqualOp::fold(FoldAdaptor a) {
  return foldPredicate(*this, a.getLhs(), a.getRhs(), [](double x, double y) { return x == y; });
}
OpFoldResult LessOp::fold(FoldAdaptor a) {
  return foldPredicate(*this, a.getLhs(), a.getRhs(), [](double x, double y) { return x < y; });
}
OpFoldResult GreaterOp::fold(FoldAdaptor a) {
  return foldPredicate(*this, a.getLhs(), a.getRhs(), [](double x, double y) { return x > y; });
}
OpFoldResult AndOp::fold(FoldAdaptor a) {
  return foldPredicate(*this, a.getLhs(), a.getRhs(),
                       [](double x, double y) { return x != 0 && y != 0; });
}
OpFoldResult OrOp::fold(FoldAdaptor a) {
  return foldPredicate(*this, a.getLhs(), a.getRhs(),
                       [](double x, double y) { return x != 0 || y != 0; });
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
#undef OCTET_BINARY_OP

/// Folds a float unary op on a small constant.
template <typename Fn> static OpFoldResult foldFloatUnary(Attribute input, Fn fn) {
  auto dense = smallDense(input);
  if (!dense || !dense.getElementType().isF32())
    return {};
  return constFoldUnaryOp<FloatAttr, APFloat, void>({dense}, [&](const APFloat &x) -> std::optional<APFloat> {
    return APFloat(static_cast<float>(fn(static_cast<double>(x.convertToFloat()))));
  });
}

OpFoldResult NegOp::fold(FoldAdaptor a) {
  auto dense = smallDense(a.getInput());
  if (!dense)
    return {};
  if (isa<FloatType>(dense.getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>({dense}, [](const APFloat &x) -> std::optional<APFloat> {
      return -x;
    });
  return constFoldUnaryOp<IntegerAttr, APInt, void>({dense}, [](const APInt &x) -> std::optional<APInt> {
    return -x;
  });
}
OpFoldResult AbsOp::fold(FoldAdaptor a) {
  auto dense = smallDense(a.getInput());
  if (!dense)
    return {};
  if (isa<FloatType>(dense.getElementType()))
    return constFoldUnaryOp<FloatAttr, APFloat, void>({dense}, [](const APFloat &x) -> std::optional<APFloat> {
      return abs(x);
    });
  return constFoldUnaryOp<IntegerAttr, APInt, void>({dense}, [](const APInt &x) -> std::optional<APInt> {
    return x.abs();
  });
}
OpFoldResult ExpOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return std::exp(x); });
}
OpFoldResult LogOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return std::log(x); });
}
OpFoldResult ErfOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return std::erf(x); });
}
OpFoldResult TanhOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return std::tanh(x); });
}
OpFoldResult SqrtOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return std::sqrt(x); });
}
OpFoldResult RsqrtOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return 1.0 / std::sqrt(x); });
}
OpFoldResult ReciprocalOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return 1.0 / x; });
}
OpFoldResult ReluOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return x > 0 ? x : 0.0; });
}
OpFoldResult SigmoidOp::fold(FoldAdaptor a) {
  return foldFloatUnary(a.getInput(), [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
OpFoldResult NotOp::fold(FoldAdaptor a) {
  if (auto inner = getInput().getDefiningOp<NotOp>())
    return inner.getInput();
  auto dense = smallDense(a.getInput());
  if (!dense)
    return {};
  SmallVector<bool> out;
  for (bool b : dense.getValues<bool>())
    out.push_back(!b);
  return DenseElementsAttr::get(getType(), out);
}

OpFoldResult CastOp::fold(FoldAdaptor a) {
  if (getInput().getType() == getType())
    return getInput();
  auto dense = smallDense(a.getInput());
  Type from = dense ? dense.getElementType() : Type();
  Type to = getType().getElementType();
  if (!dense || !getType().hasStaticShape())
    return {};
  // Integer ↔ integer and integer ↔ f32: the shape logic of exported graphs.
  SmallVector<double> values;
  if (isa<FloatType>(from)) {
    for (const APFloat &v : dense.getValues<APFloat>())
      values.push_back(v.convertToDouble());
  } else if (from.isInteger(1)) {
    for (bool v : dense.getValues<bool>())
      values.push_back(v);
  } else if (auto intType = dyn_cast<IntegerType>(from)) {
    for (const APInt &v : dense.getValues<APInt>())
      values.push_back(intType.isUnsigned() ? static_cast<double>(v.getZExtValue())
                                            : static_cast<double>(v.getSExtValue()));
  } else {
    return {};
  }
  if (to.isF32()) {
    SmallVector<float> out(values.begin(), values.end());
    return DenseElementsAttr::get(getType(), ArrayRef<float>(out));
  }
  if (to.isInteger(1)) {
    SmallVector<bool> out;
    for (double v : values)
      out.push_back(v != 0);
    return DenseElementsAttr::get(getType(), out);
  }
  if (auto intType = dyn_cast<IntegerType>(to)) {
    SmallVector<APInt> out;
    for (double v : values)
      out.push_back(APInt(intType.getWidth(), static_cast<int64_t>(std::trunc(v)),
                          /*isSigned=*/!intType.isUnsigned(), /*implicitTrunc=*/true));
    return DenseElementsAttr::get(getType(), out);
  }
  return {};
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
    return emitOptionalError(loc, opName, ": operands must have rank >= 1");
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool vecA = a.size() == 1, vecB = b.size() == 1;
  if (vecA)
    a.insert(a.begin(), 1);
  if (vecB)
    b.push_back(1);
  int64_t ka = a.back(), kb = b[b.size() - 2];
  if (!ShapedType::isDynamic(ka) && !ShapedType::isDynamic(kb) && ka != kb)
    return emitOptionalError(loc, opName, ": contracting dims differ: ", shapeStr(lhs.getShape()),
                             " · ", shapeStr(rhs.getShape()));
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
  return success();
}

LogicalResult LinearOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &types) {
  auto input = tensorOf(adaptor.getInput()), weight = tensorOf(adaptor.getWeight());
  if (input.getRank() < 1 || weight.getRank() != 2)
    return emitOptionalError(loc, "octet.linear: needs an input of rank >= 1 and a 2-D weight");
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = weight.getDimSize(1);
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult LinearOp::verify() {
  auto input = getInput().getType(), weight = getWeight().getType();
  int64_t k = input.getShape().back();
  if (!ShapedType::isDynamic(k) && !ShapedType::isDynamic(weight.getDimSize(0)) &&
      k != weight.getDimSize(0))
    return emitOpError("input's last dim ")
           << k << " does not match the weight's rows " << weight.getDimSize(0);
  if (auto bias = getBias()) {
    auto biasType = tensorOf(bias);
    if (biasType.getRank() != 1 || biasType.getDimSize(0) != weight.getDimSize(1))
      return emitOpError("bias must be [") << weight.getDimSize(1) << "], got " << biasType;
  }
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
      return op.emitOpError("axes must be sorted and unique");
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

/// gamma/beta must have the shape of the normalized dims.
static LogicalResult verifyNormParams(Operation *op, RankedTensorType input, int64_t axis,
                                      Value gamma, Value beta) {
  if (failed(verifyAxis(op, axis, input.getRank())))
    return failure();
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (auto [name, v] : {std::pair<StringRef, Value>{"gamma", gamma}, {"beta", beta}}) {
    if (!v)
      continue;
    auto type = tensorOf(v);
    if (type.getElementType() != input.getElementType())
      return op->emitOpError(name) << " must have element type " << input.getElementType();
    bool ok = type.getRank() == static_cast<int64_t>(normalized.size());
    for (int64_t i = 0; ok && i < type.getRank(); ++i)
      ok = ShapedType::isDynamic(normalized[i]) || type.getDimSize(i) == normalized[i];
    if (!ok)
      return op->emitOpError(name) << " must have shape " << shapeStr(normalized)
                                   << " (the normalized dims), got " << shapeStr(type.getShape());
  }
  return success();
}

LogicalResult LayerNormOp::verify() {
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError("epsilon must be positive");
  return verifyNormParams(*this, getInput().getType(), getAxis(), getGamma(), getBeta());
}

LogicalResult AddLayerNormOp::verify() {
  if (getEpsilon().convertToFloat() <= 0.0f)
    return emitOpError("epsilon must be positive");
  return verifyNormParams(*this, getInput().getType(), getAxis(), getGamma(), getBeta());
}

LogicalResult GeluOp::verify() {
  if (getApproximate() != "none" && getApproximate() != "tanh")
    return emitOpError("approximate must be \"none\" or \"tanh\", got \"")
           << getApproximate() << "\"";
  return success();
}

LogicalResult AttentionOp::verify() {
  auto type = getQuery().getType();
  if (type.getRank() != 3)
    return emitOpError("query, key and value must be [batch, seq, hidden], got ") << type;
  int64_t hidden = type.getDimSize(2), heads = getNumHeads();
  if (!ShapedType::isDynamic(hidden) && hidden % heads != 0)
    return emitOpError("hidden size ") << hidden << " is not a multiple of num_heads " << heads;
  if (auto mask = getMask()) {
    auto maskType = tensorOf(mask);
    SmallVector<int64_t> scores = {type.getDimSize(0), heads, type.getDimSize(1),
                                   type.getDimSize(1)};
    SmallVector<int64_t> out;
    if (maskType.getRank() > 4 || failed(broadcastShapes(scores, maskType.getShape(), out)) ||
        out.size() != 4 || out[1] != heads)
      return emitOpError("mask of shape ")
             << shapeStr(maskType.getShape()) << " does not broadcast to the scores "
             << shapeStr(scores);
    if (maskType.getElementType() != type.getElementType())
      return emitOpError("mask must be additive, of element type ") << type.getElementType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

static LogicalResult verifyDynamicDims(Operation *op, RankedTensorType result,
                                       ValueRange dims) {
  int64_t dynamic = llvm::count_if(result.getShape(), ShapedType::isDynamic);
  if (dynamic != static_cast<int64_t>(dims.size()))
    return op->emitOpError("result type ")
           << result << " has " << dynamic << " dynamic dims but " << dims.size()
           << " size operands were given";
  return success();
}

LogicalResult ReshapeOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (failed(verifyDynamicDims(*this, result, getDynamicDims())))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError("element type changes from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.hasStaticShape() && result.hasStaticShape() &&
      input.getNumElements() != result.getNumElements())
    return emitOpError("cannot reshape ") << shapeStr(input.getShape()) << " ("
                                          << input.getNumElements() << " elements) to "
                                          << shapeStr(result.getShape()) << " ("
                                          << result.getNumElements() << " elements)";
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

/// A reshape whose result has exactly the input's dims (same static dims, and
/// each `?` sized by `octet.dim` of the input at the same place) is the input.
struct RemoveIdentityReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return failure();
    auto shape = op.getType().getShape();
    unsigned next = 0;
    for (auto [i, d] : llvm::enumerate(shape)) {
      if (!ShapedType::isDynamic(d))
        continue;
      auto dim = op.getDynamicDims()[next++].getDefiningOp<DimOp>();
      if (!dim || dim.getSource() != op.getInput() || dim.getIndex() != i)
        return failure();
    }
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results, MLIRContext *context) {
  results.add<ComposeReshapes, RemoveIdentityReshape>(context);
}

LogicalResult ExpandOp::verify() {
  auto input = getInput().getType(), result = getType();
  if (failed(verifyDynamicDims(*this, result, getDynamicDims())))
    return failure();
  if (input.getElementType() != result.getElementType())
    return emitOpError("element type changes from ")
           << input.getElementType() << " to " << result.getElementType();
  if (input.getRank() > result.getRank())
    return emitOpError("cannot expand rank ") << input.getRank() << " to rank "
                                              << result.getRank();
  int64_t offset = result.getRank() - input.getRank();
  for (int64_t i = 0; i < input.getRank(); ++i) {
    int64_t from = input.getDimSize(i), to = result.getDimSize(i + offset);
    if (from != 1 && !ShapedType::isDynamic(from) && !ShapedType::isDynamic(to) && from != to)
      return emitOpError("cannot expand ") << shapeStr(input.getShape()) << " to "
                                           << shapeStr(result.getShape());
  }
  return success();
}

OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType() && getType().hasStaticShape())
    return getInput();
  if (auto dense = smallDense(adaptor.getInput()))
    if (dense.isSplat() && getType().hasStaticShape())
      return DenseElementsAttr::get(getType(), dense.getSplatValue<Attribute>());
  return {};
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
      return emitOptionalError(loc, "octet.transpose: permutation ", shapeStr(perm),
                               " is not a permutation of 0..", input.getRank() - 1);
    seen[p] = true;
    shape.push_back(input.getDimSize(p));
  }
  types.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::verify() { return success(); }

OpFoldResult TransposeOp::fold(FoldAdaptor adaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  bool identity = true;
  for (auto [i, p] : llvm::enumerate(perm))
    identity &= static_cast<int64_t>(i) == p;
  if (identity)
    return getInput();
  return {};
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
      } else if (!ShapedType::isDynamic(d) && d != shape[i]) {
        return emitOptionalError(loc, "octet.concat: inputs differ in dim ", i, " (", shape[i],
                                 " vs ", d, ")");
      }
    }
  }
  types.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult ConcatOp::verify() { return success(); }

OpFoldResult ConcatOp::fold(FoldAdaptor adaptor) {
  if (getInputs().size() == 1 && getInputs().front().getType() == getType())
    return getInputs().front();
  // Concatenation of small 1-D constants (shape vectors).
  if (getType().getRank() != 1 || !getType().hasStaticShape())
    return {};
  SmallVector<Attribute> values;
  for (Attribute a : adaptor.getInputs()) {
    auto dense = smallDense(a);
    if (!dense)
      return {};
    llvm::append_range(values, dense.getValues<Attribute>());
  }
  return DenseElementsAttr::get(getType(), values);
}

LogicalResult SliceOp::verify() {
  size_t n = getAxes().size();
  if (getStaticStarts().size() != n || getStaticEnds().size() != n || getSteps().size() != n)
    return emitOpError("axes, starts, ends and steps must have the same length");
  if (failed(verifyListOfOperandsOrIntegers(*this, "starts", n, getStaticStarts(), getStarts())) ||
      failed(verifyListOfOperandsOrIntegers(*this, "ends", n, getStaticEnds(), getEnds())))
    return failure();
  auto input = getInput().getType(), result = getType();
  if (input.getRank() != result.getRank() || input.getElementType() != result.getElementType())
    return emitOpError("result ") << result << " must have the rank and element type of " << input;
  SmallVector<bool> seen(input.getRank(), false);
  for (auto [axis, step] : llvm::zip(getAxes(), getSteps())) {
    if (axis >= input.getRank() || seen[axis])
      return emitOpError("axis ") << axis << " is out of range or repeated";
    seen[axis] = true;
    if (step == 0)
      return emitOpError("step must not be zero");
  }
  for (int64_t i = 0; i < input.getRank(); ++i)
    if (!seen[i] && input.getDimSize(i) != result.getDimSize(i) &&
        !ShapedType::isDynamic(result.getDimSize(i)))
      return emitOpError("dim ") << i << " is not sliced but changes size";
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

LogicalResult GatherOp::verify() { return success(); }

//===----------------------------------------------------------------------===//
// Quantization
//===----------------------------------------------------------------------===//

/// Per-tensor (scalar scale) or per-axis (1-D scale along `axis`) parameters.
static LogicalResult verifyQuantParams(Operation *op, RankedTensorType data, Value scale,
                                       Value zeroPoint, std::optional<uint64_t> axis) {
  auto scaleType = tensorOf(scale);
  bool perTensor = scaleType.getRank() == 0 ||
                   (scaleType.getRank() == 1 && scaleType.getDimSize(0) == 1 && !axis);
  if (!perTensor) {
    if (scaleType.getRank() != 1)
      return op->emitOpError("scale must be a scalar or 1-D, got ") << scaleType;
    if (!axis)
      return op->emitOpError("a 1-D scale needs an axis");
    if (static_cast<int64_t>(*axis) >= data.getRank())
      return op->emitOpError("axis ") << *axis << " is out of range for rank "
                                      << data.getRank();
    int64_t channels = data.getDimSize(*axis);
    if (!ShapedType::isDynamic(channels) && !ShapedType::isDynamic(scaleType.getDimSize(0)) &&
        channels != scaleType.getDimSize(0))
      return op->emitOpError("per-axis scale has ")
             << scaleType.getDimSize(0) << " entries but axis " << *axis << " has " << channels;
  }
  if (zeroPoint && tensorOf(zeroPoint).getShape() != scaleType.getShape())
    return op->emitOpError("zero point shape ")
           << shapeStr(tensorOf(zeroPoint).getShape()) << " differs from scale shape "
           << shapeStr(scaleType.getShape());
  return success();
}

LogicalResult QuantizeOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("result shape must equal the input shape");
  if (getZeroPoint() && tensorOf(getZeroPoint()).getElementType() != getType().getElementType())
    return emitOpError("zero point must have the result element type ")
           << getType().getElementType();
  return verifyQuantParams(*this, getInput().getType(), getScale(), getZeroPoint(), getAxis());
}

LogicalResult DequantizeOp::verify() {
  if (getInput().getType().getShape() != getType().getShape())
    return emitOpError("result shape must equal the input shape");
  if (getZeroPoint() &&
      tensorOf(getZeroPoint()).getElementType() != getInput().getType().getElementType())
    return emitOpError("zero point must have the input element type ")
           << getInput().getType().getElementType();
  return verifyQuantParams(*this, getInput().getType(), getScale(), getZeroPoint(), getAxis());
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
  auto checkZp = [&](Value zp, Value data, StringRef which) -> LogicalResult {
    if (!zp)
      return success();
    auto type = tensorOf(zp);
    if (type.getElementType() != tensorOf(data).getElementType())
      return emitOpError(which) << " zero point must have the element type of " << which;
    if (type.getRank() > 1)
      return emitOpError(which) << " zero point must be a scalar or 1-D";
    return success();
  };
  if (failed(checkZp(getLhsZeroPoint(), getLhs(), "lhs")) ||
      failed(checkZp(getRhsZeroPoint(), getRhs(), "rhs")))
    return failure();
  return success();
}

#define GET_OP_CLASSES
#include "compiler/ir/OctetOps.cpp.inc"
