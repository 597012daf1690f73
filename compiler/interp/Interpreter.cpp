//===- Interpreter.cpp - reference interpreter for octet IR ---------------===//
//
// Every op is computed in double (int64 for integers) with plain loops and
// rounded (or wrapped) to its result element type at the end of the op, so a
// decomposed graph and its recognized form agree to float rounding. All index
// arithmetic goes through `forEachIndex` over strided accesses.
//
//===----------------------------------------------------------------------===//
#include "compiler/interp/Interpreter.h"
#include "runtime/TokenLayout.h"

#include "compiler/ir/ConstantData.h"
#include "compiler/ir/OctetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace octet;

//===----------------------------------------------------------------------===//
// Element semantics
//===----------------------------------------------------------------------===//

static bool isUnsignedInt(Type type) {
  auto intType = dyn_cast<IntegerType>(type);
  return intType && intType.isUnsigned();
}

/// Rounds a double to the nearest value of float type `type` (ties to even).
static double roundToFloat(Type type, double value) {
  auto floatType = cast<FloatType>(type);
  if (floatType.isF64())
    return value;
  if (floatType.isF32())
    return static_cast<float>(value);
  bool lost;
  APFloat f(value);
  f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
  f.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return f.convertToDouble();
}

/// Wraps a two's complement value to the width and signedness of `type`
/// (index and 64-bit types keep it as is).
static int64_t wrapToInt(Type type, int64_t value) {
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType || intType.getWidth() >= 64)
    return value;
  unsigned width = intType.getWidth();
  uint64_t bits = static_cast<uint64_t>(value) & ((uint64_t(1) << width) - 1);
  if (width == 1 || intType.isUnsigned())
    return static_cast<int64_t>(bits);
  uint64_t sign = uint64_t(1) << (width - 1);
  return static_cast<int64_t>((bits ^ sign) - sign);
}

/// The range of integer type `type`.
static std::pair<int64_t, int64_t> intRange(Type type) {
  auto intType = cast<IntegerType>(type);
  unsigned width = intType.getWidth();
  if (width >= 64)
    return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  if (width == 1 || intType.isUnsigned())
    return {0, static_cast<int64_t>((uint64_t(1) << width) - 1)};
  return {-(int64_t(1) << (width - 1)), (int64_t(1) << (width - 1)) - 1};
}

/// Rounds half to even and saturates to integer type `type` (quantization).
static int64_t roundAndSaturate(Type type, double value) {
  auto [lo, hi] = intRange(type);
  if (std::isnan(value))
    return 0;
  double rounded = std::nearbyint(value); // the default mode rounds half to even
  return static_cast<int64_t>(std::clamp(rounded, double(lo), double(hi)));
}

unsigned octet::storageBytes(Type type) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return floatType.getWidth() % 8 == 0 ? floatType.getWidth() / 8 : 0;
  if (auto intType = dyn_cast<IntegerType>(type)) {
    unsigned width = intType.getWidth();
    if (width == 1)
      return 1;
    return (width == 8 || width == 16 || width == 32 || width == 64) ? width / 8 : 0;
  }
  return 0;
}

HostTensor HostTensor::zeros(Type elementType, ArrayRef<int64_t> shape) {
  HostTensor t;
  t.elementType = elementType;
  t.shape.assign(shape.begin(), shape.end());
  if (t.isFloat())
    t.floats.assign(t.numElements(), 0.0);
  else
    t.ints.assign(t.numElements(), 0);
  return t;
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

FailureOr<HostTensor> octet::decodeTensor(Type elementType, ArrayRef<int64_t> shape,
                                          ArrayRef<char> bytes) {
  unsigned size = storageBytes(elementType);
  HostTensor t = HostTensor::zeros(elementType, shape);
  if (!size || bytes.size() != static_cast<size_t>(t.numElements()) * size)
    return failure();
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes.data() + i * size, size); // little-endian host
    if (auto floatType = dyn_cast<FloatType>(elementType)) {
      APFloat f(floatType.getFloatSemantics(), APInt(floatType.getWidth(), raw));
      t.floats[i] = f.convertToDouble();
    } else if (size == 8) {
      t.ints[i] = static_cast<int64_t>(raw);
    } else {
      t.ints[i] = wrapToInt(elementType, elementType.isInteger(1) ? raw != 0 : raw);
    }
  }
  return t;
}

std::string octet::encodeTensor(const HostTensor &t) {
  unsigned size = storageBytes(t.elementType);
  std::string bytes(t.numElements() * size, '\0');
  for (int64_t i = 0, e = t.numElements(); i < e; ++i) {
    uint64_t raw;
    if (auto floatType = dyn_cast<FloatType>(t.elementType)) {
      bool lost;
      APFloat f(t.floats[i]);
      f.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      raw = f.bitcastToAPInt().getZExtValue();
    } else {
      raw = static_cast<uint64_t>(t.ints[i]);
    }
    std::memcpy(bytes.data() + i * size, &raw, size);
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// Indexing: the one helper every op uses
//===----------------------------------------------------------------------===//

namespace {
/// How one operand is read (or the result written) while walking a shape:
/// element offset = base + Σ index[d] · strides[d].
struct Access {
  int64_t base = 0;
  SmallVector<int64_t> strides;
};
} // namespace

static SmallVector<int64_t> contiguousStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

static Access contiguous(ArrayRef<int64_t> shape) { return {0, contiguousStrides(shape)}; }

/// Reads a C-order tensor of `shape` broadcast (numpy: aligned right, size-1
/// dims stretched) to `target`.
static Access broadcastAccess(ArrayRef<int64_t> shape, ArrayRef<int64_t> target) {
  SmallVector<int64_t> own = contiguousStrides(shape);
  Access access{0, SmallVector<int64_t>(target.size(), 0)};
  size_t lead = target.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1)
      access.strides[lead + d] = own[d];
  return access;
}

/// Calls `fn(offsets)` for every index of `shape` in C order, with one offset
/// per access.
static void forEachIndex(ArrayRef<int64_t> shape, ArrayRef<Access> accesses,
                         function_ref<void(ArrayRef<int64_t>)> fn) {
  for (int64_t d : shape)
    if (d == 0)
      return;
  int64_t rank = shape.size();
  SmallVector<int64_t> counter(rank, 0), offsets;
  for (const Access &a : accesses)
    offsets.push_back(a.base);
  while (true) {
    fn(offsets);
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      for (size_t k = 0; k < accesses.size(); ++k)
        offsets[k] += accesses[k].strides[d];
      if (++counter[d] < shape[d])
        break;
      for (size_t k = 0; k < accesses.size(); ++k)
        offsets[k] -= accesses[k].strides[d] * shape[d];
      counter[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// Calls `fn(base, stride)` for each 1-D lane of `shape` along `axis`.
static void forEachLane(ArrayRef<int64_t> shape, int64_t axis,
                        function_ref<void(int64_t, int64_t)> fn) {
  SmallVector<int64_t> outer(shape.begin(), shape.end());
  outer[axis] = 1;
  Access access = contiguous(shape);
  int64_t stride = access.strides[axis];
  forEachIndex(outer, {access}, [&](ArrayRef<int64_t> o) { fn(o[0], stride); });
}

static void copyElement(HostTensor &dst, int64_t to, const HostTensor &src, int64_t from) {
  if (dst.isFloat())
    dst.floats[to] = src.floats[from];
  else
    dst.ints[to] = src.ints[from];
}

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// The interpreter
//===----------------------------------------------------------------------===//

namespace {
class Interpreter {
public:
  LogicalResult execute(Operation *op);
  LogicalResult bindArgument(BlockArgument arg, const HostTensor &t);
  SmallVector<HostTensor> results;

private:
  const HostTensor &in(Value v) { return tensors.find(v)->second; }
  int64_t scalar(Value v) { return scalars.find(v)->second; }
  LogicalResult define(Operation *op, Value result, FailureOr<HostTensor> t);
  LogicalResult executeArith(Operation *op);

  FailureOr<HostTensor> constant(ConstantOp op);
  FailureOr<HostTensor> elementwise(Operation *op, Type resultType, ArrayRef<const HostTensor *> operands,
                                    function_ref<LogicalResult(HostTensor &, int64_t, ArrayRef<int64_t>)> fn);
  FailureOr<HostTensor> binary(Operation *op, const HostTensor &a, const HostTensor &b);
  FailureOr<HostTensor> unary(Operation *op, const HostTensor &a);
  FailureOr<HostTensor> convert(CastOp op, const HostTensor &a);
  FailureOr<HostTensor> matmul(Operation *op, const HostTensor &a, const HostTensor &b, Type resultType);
  FailureOr<HostTensor> linear(Operation *op, Value input, Value weight, Value bias, bool transposeWeight);
  /// `resultType` defaults to the element type of `op`'s result.
  FailureOr<HostTensor> scalarRegion(Operation *op, Region &region, ArrayRef<const HostTensor *> operands,
                                     Type resultType = {});
  FailureOr<HostTensor> fusedLinear(FusedLinearOp op);
  FailureOr<HostTensor> fused(FusedOp op);
  FailureOr<HostTensor> reduce(Operation *op, const HostTensor &a, ArrayRef<int64_t> axes, bool keepdims);
  FailureOr<HostTensor> cumsum(CumSumOp op);
  FailureOr<HostTensor> softmax(SoftmaxOp op);
  FailureOr<HostTensor> layerNorm(Operation *op, const HostTensor &x, Value gamma, Value beta, int64_t axis,
                                  double epsilon);
  FailureOr<HostTensor> gelu(GeluOp op);
  FailureOr<HostTensor> attention(AttentionOp op);
  FailureOr<HostTensor> tokenLayout(TokenLayoutOp op);
  FailureOr<HostTensor> packTokens(PackTokensOp op);
  FailureOr<HostTensor> unpackTokens(UnpackTokensOp op);
  /// Attention over each sequence's own rows of a packed batch (no mask).
  FailureOr<HostTensor> packedAttention(AttentionOp op, const rt::TokenLayoutView &layout);
  /// Rows of `x` moved by a layout: pack (rowOf[p] ← p) or unpack (p ← rowOf[p], 0 at -1).
  HostTensor moveRows(const HostTensor &x, const rt::TokenLayoutView &layout, bool unpack);
  FailureOr<SmallVector<int64_t>> targetShape(Operation *op, ValueRange dynamicDims);
  FailureOr<HostTensor> reshape(ReshapeOp op);
  FailureOr<HostTensor> expand(ExpandOp op);
  FailureOr<HostTensor> transpose(TransposeOp op);
  FailureOr<HostTensor> concat(ConcatOp op);
  FailureOr<HostTensor> slice(SliceOp op);
  FailureOr<HostTensor> gather(GatherOp op);
  FailureOr<HostTensor> gatherND(GatherNDOp op);
  FailureOr<HostTensor> gatherElements(GatherElementsOp op);
  FailureOr<HostTensor> quantize(Operation *op, const HostTensor &x, Value scale, Value zeroPoint,
                                 std::optional<uint64_t> axis, bool dequantize, Type resultType);
  LogicalResult dynamicQuantize(DynamicQuantizeOp op);
  LogicalResult quantizePerRow(QuantizePerRowOp op);
  FailureOr<HostTensor> addLayerNorm(Operation *op, Value input, Value residual, Value gamma,
                                     Value beta, int64_t axis, double epsilon);
  LogicalResult layerNormQuantize(LayerNormQuantizeOp op);
  FailureOr<HostTensor> matmulInteger(MatMulIntegerOp op);
  FailureOr<HostTensor> qlinear(QLinearOp op);

  DenseMap<Value, HostTensor> tensors;
  DenseMap<Value, int64_t> scalars; // index and i1 values of `arith`
};
} // namespace

static Type elementTypeOf(Value v) { return getElementTypeOrSelf(v.getType()); }

LogicalResult Interpreter::define(Operation *op, Value result, FailureOr<HostTensor> t) {
  if (failed(t))
    return failure();
  auto type = cast<RankedTensorType>(result.getType());
  bool ok = static_cast<int64_t>(t->shape.size()) == type.getRank();
  for (int64_t d = 0; ok && d < type.getRank(); ++d)
    ok = type.isDynamicDim(d) || type.getDimSize(d) == t->shape[d];
  if (!ok)
    return op->emitError() << "run-time shape " << shapeString(t->shape)
                           << " does not match the result type " << type;
  if (t->elementType != type.getElementType())
    return op->emitError() << "interpreter computed element type " << t->elementType
                           << " for result type " << type;
  tensors[result] = std::move(*t);
  return success();
}

LogicalResult Interpreter::bindArgument(BlockArgument arg, const HostTensor &t) {
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type)
    return emitError(arg.getLoc()) << "argument #" << arg.getArgNumber() << " is not a ranked tensor";
  if (t.elementType != type.getElementType())
    return emitError(arg.getLoc()) << "input #" << arg.getArgNumber() << " has element type "
                                   << t.elementType << ", the argument is " << type;
  bool ok = static_cast<int64_t>(t.shape.size()) == type.getRank();
  for (int64_t d = 0; ok && d < type.getRank(); ++d)
    ok = type.isDynamicDim(d) || type.getDimSize(d) == t.shape[d];
  if (!ok)
    return emitError(arg.getLoc()) << "input #" << arg.getArgNumber() << " has shape "
                                   << shapeString(t.shape) << ", the argument is " << type;
  tensors[arg] = t;
  return success();
}

FailureOr<HostTensor> Interpreter::constant(ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  Type element = type.getElementType();
  ElementsAttr value = op.getValue();
  if (isa<DenseResourceElementsAttr>(value)) {
    std::vector<char> storage;
    std::string why;
    std::optional<ArrayRef<char>> bytes = constantBytes(value, storage, &why);
    if (!bytes)
      return op.emitError() << why;
    FailureOr<HostTensor> t = decodeTensor(element, type.getShape(), *bytes);
    if (failed(t))
      return op.emitError() << "resource blob of " << bytes->size() << " bytes does not hold a "
                            << type;
    return t;
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense)
    return op.emitError() << "unsupported constant attribute kind";
  HostTensor t = HostTensor::zeros(element, type.getShape());
  int64_t i = 0;
  if (t.isFloat()) {
    for (const APFloat &f : dense.getValues<APFloat>()) {
      bool lost;
      APFloat d = f;
      d.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      t.floats[i++] = d.convertToDouble();
    }
  } else {
    for (const APInt &v : dense.getValues<APInt>())
      t.ints[i++] = isUnsignedInt(element) || element.isInteger(1) ? int64_t(v.getZExtValue())
                                                                   : v.getSExtValue();
  }
  return t;
}

/// Broadcasts `operands` together and calls `fn(result, offset, operandOffsets)`
/// for each result element.
FailureOr<HostTensor>
Interpreter::elementwise(Operation *op, Type resultType, ArrayRef<const HostTensor *> operands,
                         function_ref<LogicalResult(HostTensor &, int64_t, ArrayRef<int64_t>)> fn) {
  SmallVector<int64_t> shape;
  for (const HostTensor *t : operands) {
    SmallVector<int64_t> next;
    if (failed(broadcastShapes(shape, t->shape, next)))
      return op->emitError() << "operand shapes " << shapeString(shape) << " and "
                             << shapeString(t->shape) << " do not broadcast";
    shape = std::move(next);
  }
  HostTensor result = HostTensor::zeros(resultType, shape);
  SmallVector<Access> accesses;
  for (const HostTensor *t : operands)
    accesses.push_back(broadcastAccess(t->shape, shape));
  accesses.push_back(contiguous(shape));
  LogicalResult status = success();
  forEachIndex(shape, accesses, [&](ArrayRef<int64_t> o) {
    if (succeeded(status))
      status = fn(result, o.back(), o.drop_back());
  });
  if (failed(status))
    return failure();
  return result;
}

static uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

FailureOr<HostTensor> Interpreter::binary(Operation *op, const HostTensor &a, const HostTensor &b) {
  Type resultType = elementTypeOf(op->getResult(0));
  Type operandType = a.elementType;
  bool isFloat = a.isFloat();
  auto floatOp = [&](double x, double y) -> double {
    return llvm::TypeSwitch<Operation *, double>(op)
        .Case([&](AddOp) { return x + y; })
        .Case([&](SubOp) { return x - y; })
        .Case([&](MulOp) { return x * y; })
        .Case([&](DivOp) { return x / y; })
        .Case([&](PowOp) { return std::pow(x, y); })
        // NaN propagates, as numpy's maximum/minimum and ONNX Max/Min.
        .Case([&](MaxOp) { return std::isnan(x) || std::isnan(y) ? NAN : std::max(x, y); })
        .Case([&](MinOp) { return std::isnan(x) || std::isnan(y) ? NAN : std::min(x, y); })
        .Case([&](EqualOp) { return double(x == y); })
        .Case([&](LessOp) { return double(x < y); })
        .Case([&](GreaterOp) { return double(x > y); })
        .Case([&](ModOp) { return std::fmod(x, y); }) // the verifier requires fmod on floats
        .Default([](Operation *) { return NAN; });
  };
  // Integers wrap (two's complement through uint64) and divide toward zero. Unsigned
  // values sit zero-extended in the int64s, except ui64's upper half, which reads negative:
  // orderings, quotients, remainders and exponents of unsigned types go through uint64.
  const bool isUnsigned = isUnsignedInt(operandType);
  auto less = [&](int64_t x, int64_t y) { return isUnsigned ? u(x) < u(y) : x < y; };
  auto intOp = [&](int64_t x, int64_t y) -> FailureOr<int64_t> {
    return llvm::TypeSwitch<Operation *, FailureOr<int64_t>>(op)
        .Case([&](AddOp) { return int64_t(u(x) + u(y)); })
        .Case([&](SubOp) { return int64_t(u(x) - u(y)); })
        .Case([&](MulOp) { return int64_t(u(x) * u(y)); })
        .Case([&](DivOp) -> FailureOr<int64_t> {
          if (y == 0)
            return op->emitError() << "integer division by zero";
          if (isUnsigned)
            return int64_t(u(x) / u(y));
          if (y == -1)
            return int64_t(0 - u(x));
          return x / y;
        })
        .Case([&](PowOp) -> FailureOr<int64_t> {
          if (y < 0 && !isUnsigned) // only ±1 have integer reciprocals
            return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
          uint64_t r = 1, base = u(x);
          for (uint64_t e = u(y); e; e >>= 1, base *= base)
            if (e & 1)
              r *= base;
          return int64_t(r);
        })
        .Case([&](MaxOp) { return less(x, y) ? y : x; })
        .Case([&](MinOp) { return less(y, x) ? y : x; })
        .Case([&](EqualOp) { return int64_t(x == y); })
        .Case([&](LessOp) { return int64_t(less(x, y)); })
        .Case([&](GreaterOp) { return int64_t(less(y, x)); })
        .Case([&](AndOp) { return int64_t(x && y); })
        .Case([&](OrOp) { return int64_t(x || y); })
        .Case([&](XorOp) { return int64_t(bool(x) != bool(y)); })
        .Case([&](ModOp mod) -> FailureOr<int64_t> {
          if (y == 0)
            return op->emitError() << "integer modulo by zero";
          if (isUnsigned) // no signs: both rules give the remainder
            return int64_t(u(x) % u(y));
          if (y == -1)
            return int64_t(0);
          int64_t r = x % y; // the dividend's sign (fmod)
          if (!mod.getFmod() && r != 0 && (r < 0) != (y < 0))
            r += y; // the divisor's sign
          return r;
        })
        .Default([&](Operation *) { return op->emitError() << "unsupported binary op"; });
  };
  if (b.elementType != operandType)
    return op->emitError() << "operand element types differ";
  return elementwise(op, resultType, {&a, &b},
                     [&](HostTensor &r, int64_t o, ArrayRef<int64_t> in) -> LogicalResult {
                       if (isFloat) {
                         double v = floatOp(a.floats[in[0]], b.floats[in[1]]);
                         if (r.isFloat())
                           r.floats[o] = roundToFloat(resultType, v);
                         else
                           r.ints[o] = static_cast<int64_t>(v);
                         return success();
                       }
                       FailureOr<int64_t> v = intOp(a.ints[in[0]], b.ints[in[1]]);
                       if (failed(v))
                         return failure();
                       r.ints[o] = wrapToInt(resultType, *v);
                       return success();
                     });
}

FailureOr<HostTensor> Interpreter::unary(Operation *op, const HostTensor &a) {
  Type type = a.elementType;
  if (!a.isFloat()) {
    return elementwise(op, type, {&a}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> in) -> LogicalResult {
      int64_t x = a.ints[in[0]];
      if (isa<NegOp>(op))
        r.ints[o] = wrapToInt(type, int64_t(0 - u(x)));
      else if (isa<AbsOp>(op))
        r.ints[o] = wrapToInt(type, x < 0 ? int64_t(0 - u(x)) : x);
      else if (isa<NotOp>(op))
        r.ints[o] = !x;
      else if (isa<SignOp>(op))
        r.ints[o] = (x > 0) - (x < 0);
      else
        return op->emitError() << "unsupported on integers";
      return success();
    });
  }
  auto fn = [&](double x) -> double {
    return llvm::TypeSwitch<Operation *, double>(op)
        .Case([&](NegOp) { return -x; })
        .Case([&](AbsOp) { return std::fabs(x); })
        .Case([&](ExpOp) { return std::exp(x); })
        .Case([&](LogOp) { return std::log(x); })
        .Case([&](ErfOp) { return std::erf(x); })
        .Case([&](TanhOp) { return std::tanh(x); })
        .Case([&](SqrtOp) { return std::sqrt(x); })
        .Case([&](RsqrtOp) { return 1.0 / std::sqrt(x); })
        .Case([&](ReciprocalOp) { return 1.0 / x; })
        .Case([&](ReluOp) { return x < 0 ? 0.0 : x; })
        .Case([&](SigmoidOp) { return 1.0 / (1.0 + std::exp(-x)); })
        .Case([&](CeilOp) { return std::ceil(x); })
        .Case([&](FloorOp) { return std::floor(x); })
        .Case([&](SignOp) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); })
        .Default([](Operation *) { return NAN; });
  };
  return elementwise(op, type, {&a}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> in) {
    r.floats[o] = roundToFloat(type, fn(a.floats[in[0]]));
    return success();
  });
}

/// ONNX Cast: float to integer truncates toward zero, anything to i1 is x != 0.
FailureOr<HostTensor> Interpreter::convert(CastOp op, const HostTensor &a) {
  Type to = elementTypeOf(op.getResult());
  return elementwise(op, to, {&a}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> in) {
    if (r.isFloat()) {
      r.floats[o] = roundToFloat(to, a.asDouble(in[0]));
    } else if (to.isInteger(1)) {
      r.ints[o] = a.asDouble(in[0]) != 0;
    } else if (a.isFloat()) {
      double x = std::trunc(a.floats[in[0]]);
      // Out of range is undefined in ONNX; saturating keeps it deterministic.
      x = std::isnan(x) ? 0 : std::clamp(x, -9.2233720368547758e18, 9.2233720368547748e18);
      r.ints[o] = wrapToInt(to, static_cast<int64_t>(x));
    } else {
      r.ints[o] = wrapToInt(to, a.ints[in[0]]);
    }
    return success();
  });
}

/// numpy.matmul: 1-D operands are vectors, leading dims broadcast.
FailureOr<HostTensor> Interpreter::matmul(Operation *op, const HostTensor &a, const HostTensor &b,
                                          Type resultType) {
  if (a.shape.empty() || b.shape.empty())
    return op->emitError() << "matmul of a scalar";
  SmallVector<int64_t> as = a.shape, bs = b.shape;
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  if (vecA)
    as.insert(as.begin(), 1);
  if (vecB)
    bs.push_back(1);
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  if (bs[bs.size() - 2] != k)
    return op->emitError() << "matmul contraction dims differ: " << shapeString(a.shape) << " x "
                           << shapeString(b.shape);
  ArrayRef<int64_t> batchA = ArrayRef<int64_t>(as).drop_back(2), batchB = ArrayRef<int64_t>(bs).drop_back(2);
  SmallVector<int64_t> batch;
  if (failed(broadcastShapes(batchA, batchB, batch)))
    return op->emitError() << "matmul batch dims do not broadcast: " << shapeString(a.shape) << " x "
                           << shapeString(b.shape);
  SmallVector<int64_t> shape = batch;
  if (!vecA)
    shape.push_back(m);
  if (!vecB)
    shape.push_back(n);
  HostTensor r = HostTensor::zeros(resultType, shape);
  Access accA = broadcastAccess(batchA, batch), accB = broadcastAccess(batchB, batch),
         accR = contiguous(batch);
  for (int64_t &s : accA.strides)
    s *= m * k;
  for (int64_t &s : accB.strides)
    s *= k * n;
  for (int64_t &s : accR.strides)
    s *= m * n;
  bool isFloat = a.isFloat();
  forEachIndex(batch, {accA, accB, accR}, [&](ArrayRef<int64_t> o) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        int64_t out = o[2] + i * n + j;
        if (isFloat) {
          double sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += a.floats[o[0] + i * k + p] * b.floats[o[1] + p * n + j];
          r.floats[out] = roundToFloat(resultType, sum);
        } else {
          uint64_t sum = 0;
          for (int64_t p = 0; p < k; ++p)
            sum += u(a.ints[o[0] + i * k + p]) * u(b.ints[o[1] + p * n + j]);
          r.ints[out] = wrapToInt(resultType, int64_t(sum));
        }
      }
  });
  return r;
}

/// x·W (+ b), or x·Wᵀ (+ b) with `transpose_weight`: matmul then a broadcast add,
/// the rounding of the unfused MatMul + Add.
FailureOr<HostTensor> Interpreter::linear(Operation *op, Value input, Value weight, Value biasValue,
                                          bool transposeWeight) {
  const HostTensor &x = in(input);
  const HostTensor *w = &in(weight);
  HostTensor transposed;
  if (w->shape.size() != 2)
    return op->emitError() << "linear weight is not 2-D";
  if (transposeWeight) {
    transposed = HostTensor::zeros(w->elementType, {w->shape[1], w->shape[0]});
    Access read{0, {1, w->shape[1]}};
    forEachIndex(transposed.shape, {read, contiguous(transposed.shape)},
                 [&](ArrayRef<int64_t> o) { copyElement(transposed, o[1], *w, o[0]); });
    w = &transposed;
  }
  Type resultType = elementTypeOf(op->getResult(0));
  FailureOr<HostTensor> y = matmul(op, x, *w, resultType);
  if (failed(y) || !biasValue)
    return y;
  const HostTensor &bias = in(biasValue);
  if (bias.shape.size() != 1 || bias.shape[0] != w->shape[1])
    return op->emitError() << "linear bias " << shapeString(bias.shape) << " does not match "
                          << w->shape[1] << " output features";
  const HostTensor &product = *y;
  return elementwise(op, resultType, {&product, &bias},
                     [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
                       if (r.isFloat())
                         r.floats[o] = roundToFloat(resultType, product.floats[i[0]] + bias.floats[i[1]]);
                       else
                         r.ints[o] = wrapToInt(resultType, int64_t(u(product.ints[i[0]]) + u(bias.ints[i[1]])));
                       return success();
                     });
}

/// GELU in double: 0.5·x·(1 + erf(x/√2)), or its tanh approximation.
static double geluOf(double x, bool tanhForm) {
  const double sqrt2OverPi = std::sqrt(2.0 / M_PI);
  return tanhForm ? 0.5 * x * (1.0 + std::tanh(sqrt2OverPi * (x + 0.044715 * x * x * x)))
                  : 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

/// One scalar arith/math op of a fused region on float operands, in double.
static FailureOr<double> evaluateFloatOp(Operation *op, ArrayRef<double> x) {
  auto nanOr = [](double a, double b, double v) { return std::isnan(a) || std::isnan(b) ? NAN : v; };
  return llvm::TypeSwitch<Operation *, FailureOr<double>>(op)
      .Case([&](arith::ConstantOp c) -> FailureOr<double> {
        if (auto f = dyn_cast<FloatAttr>(c.getValue()))
          return f.getValueAsDouble();
        return op->emitError() << "unsupported constant " << c.getValue();
      })
      .Case([&](arith::AddFOp) { return x[0] + x[1]; })
      .Case([&](arith::SubFOp) { return x[0] - x[1]; })
      .Case([&](arith::MulFOp) { return x[0] * x[1]; })
      .Case([&](arith::DivFOp) { return x[0] / x[1]; })
      .Case([&](arith::MaximumFOp) { return nanOr(x[0], x[1], std::max(x[0], x[1])); })
      .Case([&](arith::MinimumFOp) { return nanOr(x[0], x[1], std::min(x[0], x[1])); })
      .Case([&](arith::NegFOp) { return -x[0]; })
      .Case([&](math::AbsFOp) { return std::fabs(x[0]); })
      .Case([&](math::ExpOp) { return std::exp(x[0]); })
      .Case([&](math::LogOp) { return std::log(x[0]); })
      .Case([&](math::ErfOp) { return std::erf(x[0]); })
      .Case([&](math::TanhOp) { return std::tanh(x[0]); })
      .Case([&](math::SqrtOp) { return std::sqrt(x[0]); })
      .Case([&](math::RsqrtOp) { return 1.0 / std::sqrt(x[0]); })
      .Case([&](math::PowFOp) { return std::pow(x[0], x[1]); })
      .Case([&](ScalarGeluOp g) { return geluOf(x[0], g.getApproximate() == "tanh"); })
      .Default([&](Operation *) -> FailureOr<double> {
        return op->emitError() << "'" << op->getName() << "' is not supported by the interpreter";
      });
}

/// Runs the scalar `region` on every element of the broadcast of `operands`
/// (one block argument each), in double with each op's result rounded to its
/// type, as separate ops would be.
FailureOr<HostTensor> Interpreter::scalarRegion(Operation *op, Region &region,
                                                ArrayRef<const HostTensor *> operands, Type resultType) {
  // Values of the region live in slots: the block arguments, then each op's result.
  Block &body = region.front();
  if (body.getNumArguments() != operands.size())
    return op->emitError() << "region takes " << body.getNumArguments() << " elements, the op has "
                           << operands.size() << " tensors";
  DenseMap<Value, unsigned> slotOf;
  for (BlockArgument arg : body.getArguments())
    slotOf[arg] = slotOf.size();
  struct Step {
    Operation *op;
    SmallVector<unsigned> operands;
    unsigned result;
  };
  SmallVector<Step> steps;
  for (Operation &inner : body.without_terminator()) {
    if (inner.getNumResults() != 1)
      return inner.emitError() << "a region op needs one result";
    Step step{&inner, {}, 0};
    for (Value v : inner.getOperands())
      step.operands.push_back(slotOf.lookup(v));
    step.result = slotOf[inner.getResult(0)] = slotOf.size();
    steps.push_back(std::move(step));
  }
  unsigned yielded = slotOf.lookup(cast<YieldOp>(body.getTerminator()).getValue());
  std::vector<double> slots(slotOf.size());
  SmallVector<double> args;
  if (!resultType)
    resultType = elementTypeOf(op->getResult(0));
  return elementwise(op, resultType, operands, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) -> LogicalResult {
    for (auto [k, t] : llvm::enumerate(operands))
      slots[k] = t->floats[i[k]];
    for (const Step &step : steps) {
      args.clear();
      for (unsigned s : step.operands)
        args.push_back(slots[s]);
      FailureOr<double> v = evaluateFloatOp(step.op, args);
      if (failed(v))
        return failure();
      slots[step.result] = roundToFloat(step.op->getResult(0).getType(), *v);
    }
    r.floats[o] = slots[yielded];
    return success();
  });
}

/// The linear's result (rounded as octet.linear's), then the region per
/// element with each scalar op rounded to its type, as separate ops would be.
FailureOr<HostTensor> Interpreter::fusedLinear(FusedLinearOp op) {
  FailureOr<HostTensor> acc =
      linear(op, op.getInput(), op.getWeight(), op.getBias(), op.getTransposeWeight());
  if (failed(acc))
    return failure();
  SmallVector<const HostTensor *> operands{&*acc};
  for (Value extra : op.getExtra())
    operands.push_back(&in(extra));
  FailureOr<HostTensor> r = scalarRegion(op, op.getEpilogue(), operands);
  if (succeeded(r) && r->shape != acc->shape)
    return op.emitError() << "extra operands widen the linear's result " << shapeString(acc->shape) << " to "
                          << shapeString(r->shape);
  return r;
}

/// Every input broadcast to the result, which is their broadcast; the region per element.
FailureOr<HostTensor> Interpreter::fused(FusedOp op) {
  SmallVector<const HostTensor *> operands;
  for (Value input : op.getInputs())
    operands.push_back(&in(input));
  if (operands.empty())
    return op.emitError() << "octet.fused needs at least one input";
  return scalarRegion(op, op.getBody(), operands);
}

FailureOr<HostTensor> Interpreter::reduce(Operation *op, const HostTensor &a, ArrayRef<int64_t> axes,
                                          bool keepdims) {
  int64_t rank = a.shape.size();
  SmallVector<int64_t> kept = a.shape, shape;
  Access write = contiguous(a.shape);
  int64_t count = 1;
  for (int64_t axis : axes) {
    if (axis >= rank)
      return op->emitError() << "reduction axis " << axis << " out of range";
    kept[axis] = 1;
    count *= a.shape[axis];
  }
  write = contiguous(kept);
  for (int64_t axis : axes)
    write.strides[axis] = 0;
  for (int64_t d = 0; d < rank; ++d)
    if (keepdims || !llvm::is_contained(axes, d))
      shape.push_back(kept[d]);
  Type type = a.elementType;
  bool isMax = isa<ReduceMaxOp>(op), isMin = isa<ReduceMinOp>(op);
  int64_t n = product(kept);
  std::vector<double> acc(n, 0.0);
  std::vector<int64_t> iacc(n, 0);
  std::vector<bool> seen(n, false);
  forEachIndex(a.shape, {contiguous(a.shape), write}, [&](ArrayRef<int64_t> o) {
    int64_t r = o[1];
    if (a.isFloat()) {
      double x = a.floats[o[0]];
      if (!seen[r] || (!isMax && !isMin))
        acc[r] = (isMax || isMin) ? x : acc[r] + x;
      else if (std::isnan(x) || std::isnan(acc[r]))
        acc[r] = NAN;
      else
        acc[r] = isMax ? std::max(acc[r], x) : std::min(acc[r], x);
    } else {
      int64_t x = a.ints[o[0]];
      if (!seen[r] || (!isMax && !isMin))
        iacc[r] = (isMax || isMin) ? x : int64_t(u(iacc[r]) + u(x));
      else
        iacc[r] = isMax ? std::max(iacc[r], x) : std::min(iacc[r], x);
    }
    seen[r] = true;
  });
  HostTensor result = HostTensor::zeros(type, shape);
  for (int64_t r = 0; r < n; ++r) {
    if (a.isFloat()) {
      double v = acc[r];
      if (!seen[r] && (isMax || isMin)) // ONNX: an empty max is -inf, an empty min +inf
        v = isMax ? -INFINITY : INFINITY;
      if (isa<ReduceMeanOp>(op))
        v /= count;
      result.floats[r] = roundToFloat(type, v);
    } else {
      int64_t v = iacc[r];
      if (!seen[r] && (isMax || isMin))
        v = isMax ? intRange(type).first : intRange(type).second;
      if (isa<ReduceMeanOp>(op))
        v = count ? v / count : 0;
      result.ints[r] = wrapToInt(type, v);
    }
  }
  return result;
}

FailureOr<HostTensor> Interpreter::cumsum(CumSumOp op) {
  const HostTensor &a = in(op.getInput());
  int64_t axis = op.getAxis();
  if (axis >= static_cast<int64_t>(a.shape.size()))
    return op.emitError() << "cumsum axis out of range";
  HostTensor r = HostTensor::zeros(a.elementType, a.shape);
  int64_t len = a.shape[axis];
  bool exclusive = op.getExclusive(), reverse = op.getReverse();
  forEachLane(a.shape, axis, [&](int64_t base, int64_t stride) {
    double sum = 0;
    uint64_t isum = 0;
    for (int64_t step = 0; step < len; ++step) {
      int64_t at = base + (reverse ? len - 1 - step : step) * stride;
      if (r.isFloat()) {
        if (!exclusive)
          sum += a.floats[at];
        r.floats[at] = roundToFloat(r.elementType, sum);
        if (exclusive)
          sum += a.floats[at];
      } else {
        if (!exclusive)
          isum += u(a.ints[at]);
        r.ints[at] = wrapToInt(r.elementType, int64_t(isum));
        if (exclusive)
          isum += u(a.ints[at]);
      }
    }
  });
  return r;
}

/// Softmax of one lane in place (values in double).
static void softmaxLane(MutableArrayRef<double> lane) {
  double max = -INFINITY;
  for (double x : lane)
    max = std::max(max, x);
  double sum = 0;
  for (double &x : lane)
    sum += (x = std::exp(x - max));
  for (double &x : lane)
    x /= sum;
}

FailureOr<HostTensor> Interpreter::softmax(SoftmaxOp op) {
  const HostTensor &a = in(op.getInput());
  int64_t axis = op.getAxis();
  if (axis >= static_cast<int64_t>(a.shape.size()))
    return op.emitError() << "softmax axis out of range";
  HostTensor r = HostTensor::zeros(a.elementType, a.shape);
  int64_t len = a.shape[axis];
  std::vector<double> lane(len);
  forEachLane(a.shape, axis, [&](int64_t base, int64_t stride) {
    for (int64_t i = 0; i < len; ++i)
      lane[i] = a.floats[base + i * stride];
    softmaxLane(lane);
    for (int64_t i = 0; i < len; ++i)
      r.floats[base + i * stride] = roundToFloat(r.elementType, lane[i]);
  });
  return r;
}

FailureOr<HostTensor> Interpreter::layerNorm(Operation *op, const HostTensor &x, Value gammaValue,
                                             Value betaValue, int64_t axis, double epsilon) {
  int64_t rank = x.shape.size();
  if (axis >= rank)
    return op->emitError() << "layer_norm axis out of range";
  ArrayRef<int64_t> normShape = ArrayRef<int64_t>(x.shape).drop_front(axis);
  SmallVector<int64_t> check;
  const HostTensor &gamma = in(gammaValue);
  const HostTensor *beta = betaValue ? &in(betaValue) : nullptr;
  for (const HostTensor *p : {&gamma, beta})
    if (p && (failed(broadcastShapes(p->shape, normShape, check)) || ArrayRef<int64_t>(check) != normShape))
      return op->emitError() << "layer_norm parameter " << shapeString(p->shape)
                             << " does not broadcast to the normalized dims " << shapeString(normShape);
  Access g = broadcastAccess(gamma.shape, normShape);
  Access b = beta ? broadcastAccess(beta->shape, normShape) : Access{0, SmallVector<int64_t>(normShape.size(), 0)};
  int64_t inner = product(normShape), outer = product(ArrayRef<int64_t>(x.shape).take_front(axis));
  HostTensor r = HostTensor::zeros(x.elementType, x.shape);
  for (int64_t row = 0; row < outer; ++row) {
    const double *v = x.floats.data() + row * inner;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < inner; ++i)
      mean += v[i];
    mean /= inner;
    for (int64_t i = 0; i < inner; ++i)
      var += (v[i] - mean) * (v[i] - mean);
    double invStd = 1.0 / std::sqrt(var / inner + epsilon);
    int64_t i = 0;
    forEachIndex(normShape, {g, b}, [&](ArrayRef<int64_t> o) {
      double y = (v[i] - mean) * invStd * gamma.floats[o[0]] + (beta ? beta->floats[o[1]] : 0.0);
      r.floats[row * inner + i++] = roundToFloat(x.elementType, y);
    });
  }
  return r;
}

FailureOr<HostTensor> Interpreter::gelu(GeluOp op) {
  const HostTensor &a = in(op.getInput());
  bool tanhForm = op.getApproximate() == "tanh";
  if (!tanhForm && op.getApproximate() != "none")
    return op.emitError() << "unknown GELU approximation '" << op.getApproximate() << "'";
  return elementwise(op, a.elementType, {&a}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
    r.floats[o] = roundToFloat(a.elementType, geluOf(a.floats[i[0]], tanhForm));
    return success();
  });
}

/// softmax(scale·Q·Kᵀ + mask)·V per head on [B, S, H·D].
FailureOr<HostTensor> Interpreter::attention(AttentionOp op) {
  const HostTensor &q = in(op.getQuery()), &k = in(op.getKey()), &v = in(op.getValue());
  int64_t heads = op.getNumHeads();
  if (Value layoutValue = op.getTokenLayout()) {
    const rt::TokenLayoutView layout(in(layoutValue).ints.data());
    if (layout.mode() == rt::TokenMode::Packed)
      return packedAttention(op, layout);
  }
  if (q.shape.size() != 3 || k.shape != q.shape || v.shape != q.shape)
    return op.emitError() << "attention operands " << shapeString(q.shape) << ", " << shapeString(k.shape)
                          << ", " << shapeString(v.shape) << " are not one [B, S, H·D] shape";
  int64_t batch = q.shape[0], seq = q.shape[1], width = q.shape[2];
  if (width % heads)
    return op.emitError() << "width " << width << " is not a multiple of " << heads << " heads";
  int64_t dim = width / heads;
  SmallVector<int64_t> scoreShape{batch, heads, seq, seq}, check;
  Access mask{0, SmallVector<int64_t>(4, 0)};
  const HostTensor *maskTensor = op.getMask() ? &in(op.getMask()) : nullptr;
  if (maskTensor) {
    if (maskTensor->shape.size() > 4 || failed(broadcastShapes(maskTensor->shape, scoreShape, check)) ||
        ArrayRef<int64_t>(check) != ArrayRef<int64_t>(scoreShape))
      return op.emitError() << "attention mask " << shapeString(maskTensor->shape)
                            << " does not broadcast to " << shapeString(scoreShape);
    mask = broadcastAccess(maskTensor->shape, scoreShape);
  }
  double scale = op.getScale().convertToDouble();
  HostTensor r = HostTensor::zeros(q.elementType, q.shape);
  std::vector<double> scores(seq);
  Access headAccess{0, {seq * width, dim, width}}; // (b, h, i) -> row start of the head
  forEachIndex({batch, heads, seq}, {headAccess, mask}, [&](ArrayRef<int64_t> o) {
    int64_t qRow = o[0], kBase = qRow - (qRow / width % seq) * width; // row 0 of this batch/head
    for (int64_t j = 0; j < seq; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < dim; ++d)
        dot += q.floats[qRow + d] * k.floats[kBase + j * width + d];
      scores[j] = scale * dot + (maskTensor ? maskTensor->floats[o[1] + j * mask.strides[3]] : 0.0);
    }
    softmaxLane(scores);
    if (op.getZeroMaskedRows())
      for (double &p : scores)
        p = std::isnan(p) ? 0.0 : p;
    for (int64_t d = 0; d < dim; ++d) {
      double sum = 0;
      for (int64_t j = 0; j < seq; ++j)
        sum += scores[j] * v.floats[kBase + j * width + d];
      r.floats[qRow + d] = roundToFloat(q.elementType, sum);
    }
  });
  return r;
}

FailureOr<HostTensor> Interpreter::packedAttention(AttentionOp op,
                                                   const rt::TokenLayoutView &layout) {
  const HostTensor &q = in(op.getQuery()), &k = in(op.getKey()), &v = in(op.getValue());
  const int64_t heads = op.getNumHeads();
  if (q.shape.size() != 3 || k.shape != q.shape || v.shape != q.shape || q.shape[0] != 1 ||
      q.shape[1] != layout.rows())
    return op.emitError() << "packed attention operands " << shapeString(q.shape)
                          << " are not the layout's [1, " << layout.rows() << ", H·D]";
  const int64_t width = q.shape[2], dim = width / heads;
  const double scale = op.getScale().convertToDouble();
  HostTensor r = HostTensor::zeros(q.elementType, q.shape);
  for (int64_t b = 0; b < layout.batch(); ++b) {
    const int64_t first = layout.offsets()[b], length = layout.offsets()[b + 1] - first;
    std::vector<double> scores(length);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < length; ++i) {
        const int64_t qRow = (first + i) * width + h * dim;
        for (int64_t j = 0; j < length; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < dim; ++d)
            dot += q.floats[qRow + d] * k.floats[(first + j) * width + h * dim + d];
          scores[j] = scale * dot;
        }
        softmaxLane(scores);
        for (int64_t d = 0; d < dim; ++d) {
          double sum = 0;
          for (int64_t j = 0; j < length; ++j)
            sum += scores[j] * v.floats[(first + j) * width + h * dim + d];
          r.floats[qRow + d] = roundToFloat(q.elementType, sum);
        }
      }
  }
  return r;
}

FailureOr<HostTensor> Interpreter::tokenLayout(TokenLayoutOp op) {
  const int64_t batch = scalar(op.getBatch()), seq = scalar(op.getSeq());
  // The masks as the runtime reads them: f32, broadcast by strides.
  std::vector<std::vector<float>> values;
  std::vector<rt::MaskView> views;
  SmallVector<int64_t> target{batch, 1, seq, seq};
  for (Value m : op.getMasks()) {
    const HostTensor &mask = in(m);
    if (mask.shape.size() > 4)
      return op.emitError() << "mask " << shapeString(mask.shape) << " has more than 4 dims";
    SmallVector<int64_t> shape(4 - mask.shape.size(), 1);
    shape.append(mask.shape.begin(), mask.shape.end());
    target[1] = shape[1];
    for (int d : {0, 2, 3})
      if (shape[d] != 1 && shape[d] != target[d])
        return op.emitError() << "mask " << shapeString(mask.shape) << " does not broadcast to ["
                              << batch << ", heads, " << seq << ", " << seq << "]";
    values.emplace_back(mask.floats.begin(), mask.floats.end());
    SmallVector<int64_t> strides = contiguousStrides(shape);
    rt::MaskView view;
    view.heads = shape[1];
    int64_t *stride[4] = {&view.strideBatch, &view.strideHead, &view.strideQuery, &view.strideKey};
    for (int d = 0; d < 4; ++d)
      *stride[d] = shape[d] == 1 ? 0 : strides[d];
    views.push_back(view);
  }
  for (size_t i = 0; i < views.size(); ++i)
    views[i].data = values[i].data();
  HostTensor layout =
      HostTensor::zeros(getElementTypeOrSelf(op.getType()), {rt::tokenLayoutSize(batch, seq)});
  rt::computeTokenLayout(views, batch, seq, layout.ints.data());
  return layout;
}

HostTensor Interpreter::moveRows(const HostTensor &x, const rt::TokenLayoutView &layout,
                                 bool unpack) {
  const int64_t positions = layout.batch() * layout.seq();
  const int64_t row = x.numElements() / std::max<int64_t>(1, x.shape[0] * x.shape[1]);
  SmallVector<int64_t> shape(x.shape);
  shape[0] = unpack ? layout.batch() : 1;
  shape[1] = unpack ? layout.seq() : layout.rows();
  HostTensor r = HostTensor::zeros(x.elementType, shape);
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t packed = layout.rowOf()[p];
    if (packed < 0)
      continue; // padding: dropped, or 0 when unpacked
    for (int64_t e = 0; e < row; ++e)
      copyElement(r, (unpack ? p : packed) * row + e, x, (unpack ? packed : p) * row + e);
  }
  return r;
}

FailureOr<HostTensor> Interpreter::packTokens(PackTokensOp op) {
  const HostTensor &x = in(op.getInput());
  const rt::TokenLayoutView layout(in(op.getLayout()).ints.data());
  if (x.shape.size() < 2 || x.shape[0] != layout.batch() || x.shape[1] != layout.seq())
    return op.emitError() << "input " << shapeString(x.shape) << " is not the layout's ["
                          << layout.batch() << ", " << layout.seq() << ", ...]";
  if (layout.mode() != rt::TokenMode::Packed)
    return x;
  return moveRows(x, layout, /*unpack=*/false);
}

FailureOr<HostTensor> Interpreter::unpackTokens(UnpackTokensOp op) {
  const HostTensor &x = in(op.getInput());
  const rt::TokenLayoutView layout(in(op.getLayout()).ints.data());
  const int64_t rows = layout.mode() == rt::TokenMode::Packed ? layout.rows()
                                                               : layout.batch() * layout.seq();
  if (x.shape.size() < 2 || x.shape[0] * x.shape[1] != rows ||
      scalar(op.getBatch()) != layout.batch() || scalar(op.getSeq()) != layout.seq())
    return op.emitError() << "input " << shapeString(x.shape) << " does not hold the layout's "
                          << rows << " rows";
  if (layout.mode() == rt::TokenMode::Padded)
    return x;
  return moveRows(x, layout, /*unpack=*/true);
}

/// The result type's shape with each `?` taken from the next index operand.
FailureOr<SmallVector<int64_t>> Interpreter::targetShape(Operation *op, ValueRange dynamicDims) {
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<int64_t> shape;
  size_t next = 0;
  for (int64_t d : type.getShape()) {
    if (!ShapedType::isDynamic(d)) {
      shape.push_back(d);
      continue;
    }
    if (next >= dynamicDims.size())
      return op->emitError() << "fewer size operands than dynamic dims";
    int64_t size = scalar(dynamicDims[next++]);
    if (size < 0)
      return op->emitError() << "negative size " << size;
    shape.push_back(size);
  }
  return shape;
}

FailureOr<HostTensor> Interpreter::reshape(ReshapeOp op) {
  const HostTensor &a = in(op.getInput());
  FailureOr<SmallVector<int64_t>> shape = targetShape(op, op.getDynamicDims());
  if (failed(shape))
    return failure();
  if (product(*shape) != a.numElements())
    return op.emitError() << "cannot reshape " << shapeString(a.shape) << " to " << shapeString(*shape);
  HostTensor r = a;
  r.shape = *shape;
  return r;
}

FailureOr<HostTensor> Interpreter::expand(ExpandOp op) {
  const HostTensor &a = in(op.getInput());
  FailureOr<SmallVector<int64_t>> shape = targetShape(op, op.getDynamicDims());
  if (failed(shape))
    return failure();
  SmallVector<int64_t> check;
  if (a.shape.size() > shape->size() || failed(broadcastShapes(a.shape, *shape, check)) ||
      ArrayRef<int64_t>(check) != ArrayRef<int64_t>(*shape))
    return op.emitError() << "cannot expand " << shapeString(a.shape) << " to " << shapeString(*shape);
  HostTensor r = HostTensor::zeros(a.elementType, *shape);
  forEachIndex(*shape, {broadcastAccess(a.shape, *shape), contiguous(*shape)},
               [&](ArrayRef<int64_t> o) { copyElement(r, o[1], a, o[0]); });
  return r;
}

FailureOr<HostTensor> Interpreter::transpose(TransposeOp op) {
  const HostTensor &a = in(op.getInput());
  ArrayRef<int64_t> perm = op.getPermutation();
  if (perm.size() != a.shape.size())
    return op.emitError() << "permutation does not match the rank";
  SmallVector<int64_t> own = contiguousStrides(a.shape), shape;
  Access read;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(a.shape.size()))
      return op.emitError() << "permutation entry " << p << " out of range";
    shape.push_back(a.shape[p]);
    read.strides.push_back(own[p]);
  }
  HostTensor r = HostTensor::zeros(a.elementType, shape);
  forEachIndex(shape, {read, contiguous(shape)}, [&](ArrayRef<int64_t> o) { copyElement(r, o[1], a, o[0]); });
  return r;
}

FailureOr<HostTensor> Interpreter::concat(ConcatOp op) {
  int64_t axis = op.getAxis();
  const HostTensor &first = in(op.getInputs().front());
  if (axis >= static_cast<int64_t>(first.shape.size()))
    return op.emitError() << "concat axis out of range";
  SmallVector<int64_t> shape = first.shape;
  shape[axis] = 0;
  for (Value v : op.getInputs()) {
    const HostTensor &t = in(v);
    for (size_t d = 0; d < shape.size(); ++d)
      if (t.shape.size() != shape.size() || (static_cast<int64_t>(d) != axis && t.shape[d] != shape[d]))
        return op.emitError() << "concat inputs " << shapeString(first.shape) << " and "
                              << shapeString(t.shape) << " disagree off the axis";
    shape[axis] += t.shape[axis];
  }
  HostTensor r = HostTensor::zeros(first.elementType, shape);
  Access write = contiguous(shape);
  for (Value v : op.getInputs()) {
    const HostTensor &t = in(v);
    forEachIndex(t.shape, {contiguous(t.shape), write}, [&](ArrayRef<int64_t> o) { copyElement(r, o[1], t, o[0]); });
    write.base += t.shape[axis] * write.strides[axis];
  }
  return r;
}

/// ONNX Slice: negative bounds count from the end, then clamp to [0, dim]
/// (step > 0) or [-1, dim - 1] (step < 0).
FailureOr<HostTensor> Interpreter::slice(SliceOp op) {
  const HostTensor &a = in(op.getInput());
  int64_t rank = a.shape.size();
  auto bounds = [&](ArrayRef<int64_t> statics, ValueRange dynamics) {
    SmallVector<int64_t> values;
    size_t next = 0;
    for (int64_t s : statics)
      values.push_back(ShapedType::isDynamic(s) ? scalar(dynamics[next++]) : s);
    return values;
  };
  SmallVector<int64_t> starts = bounds(op.getStaticStarts(), op.getStarts());
  SmallVector<int64_t> ends = bounds(op.getStaticEnds(), op.getEnds());
  ArrayRef<int64_t> axes = op.getAxes(), steps = op.getSteps();
  SmallVector<int64_t> shape = a.shape;
  Access read = contiguous(a.shape);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i], step = steps[i], dim = a.shape[axis];
    if (axis >= rank || step == 0)
      return op.emitError() << "slice axis " << axis << " or step " << step << " invalid";
    auto normalize = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0)
        v = v < -dim ? -dim - 1 : v + dim; // stays below lo when far negative
      return std::clamp(v, lo, hi);
    };
    int64_t start = step > 0 ? normalize(starts[i], 0, dim) : normalize(starts[i], -1, dim - 1);
    int64_t end = step > 0 ? normalize(ends[i], 0, dim) : normalize(ends[i], -1, dim - 1);
    int64_t count = step > 0 ? (end - start + step - 1) / step : (start - end + (-step) - 1) / (-step);
    shape[axis] = std::max<int64_t>(count, 0);
    read.base += start * read.strides[axis];
    read.strides[axis] *= step;
  }
  HostTensor r = HostTensor::zeros(a.elementType, shape);
  forEachIndex(shape, {read, contiguous(shape)}, [&](ArrayRef<int64_t> o) { copyElement(r, o[1], a, o[0]); });
  return r;
}

FailureOr<HostTensor> Interpreter::gather(GatherOp op) {
  const HostTensor &data = in(op.getData()), &indices = in(op.getIndices());
  int64_t axis = op.getAxis();
  if (axis >= static_cast<int64_t>(data.shape.size()))
    return op.emitError() << "gather axis out of range";
  int64_t dim = data.shape[axis];
  ArrayRef<int64_t> ds = data.shape;
  SmallVector<int64_t> shape(ds.take_front(axis));
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(ds.begin() + axis + 1, ds.end());
  int64_t outer = product(ds.take_front(axis)), inner = product(ds.drop_front(axis + 1));
  int64_t count = indices.numElements();
  HostTensor r = HostTensor::zeros(data.elementType, shape);
  for (int64_t j = 0; j < count; ++j) {
    int64_t index = indices.ints[j];
    if (index < -dim || index >= dim)
      return op.emitError() << "gather index " << index << " out of range for a dim of " << dim;
    if (index < 0)
      index += dim;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        copyElement(r, (o * count + j) * inner + i, data, (o * dim + index) * inner + i);
  }
  return r;
}

/// ONNX GatherND: result[b..., i..., rest...] = data[b..., indices[b..., i..., :], rest...].
FailureOr<HostTensor> Interpreter::gatherND(GatherNDOp op) {
  const HostTensor &data = in(op.getData()), &indices = in(op.getIndices());
  int64_t batchDims = op.getBatchDims();
  ArrayRef<int64_t> ds = data.shape, is = indices.shape;
  int64_t tuple = is.back();
  if (ds.take_front(batchDims) != is.take_front(batchDims))
    return op.emitError() << "gather_nd batch dims differ: data " << shapeString(ds) << ", indices "
                          << shapeString(is);
  SmallVector<int64_t> shape(is.drop_back());
  shape.append(ds.begin() + batchDims + tuple, ds.end());
  int64_t batches = product(ds.take_front(batchDims));
  int64_t perBatch = product(is.drop_back().drop_front(batchDims));
  int64_t inner = product(ds.drop_front(batchDims + tuple));
  SmallVector<int64_t> dataStrides = contiguousStrides(ds);
  int64_t batchStride = batchDims ? dataStrides[batchDims - 1] : 0;
  HostTensor r = HostTensor::zeros(data.elementType, shape);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t j = 0; j < perBatch; ++j) {
      int64_t row = b * perBatch + j, offset = b * batchStride;
      for (int64_t t = 0; t < tuple; ++t) {
        int64_t dim = ds[batchDims + t], index = indices.ints[row * tuple + t];
        if (index < -dim || index >= dim)
          return op.emitError() << "gather_nd index " << index << " out of range for a dim of "
                                << dim;
        offset += (index < 0 ? index + dim : index) * dataStrides[batchDims + t];
      }
      for (int64_t i = 0; i < inner; ++i)
        copyElement(r, row * inner + i, data, offset + i);
    }
  return r;
}

/// ONNX GatherElements: result[i...] = data[i... with indices[i...] in dim `axis`].
FailureOr<HostTensor> Interpreter::gatherElements(GatherElementsOp op) {
  const HostTensor &data = in(op.getData()), &indices = in(op.getIndices());
  int64_t axis = op.getAxis(), dim = data.shape[axis];
  for (size_t d = 0; d < data.shape.size(); ++d)
    if (int64_t(d) != axis && indices.shape[d] > data.shape[d])
      return op.emitError() << "gather_elements indices " << shapeString(indices.shape)
                            << " exceed the data " << shapeString(data.shape) << " in dim " << d;
  Access read{0, contiguousStrides(data.shape)};
  int64_t axisStride = read.strides[axis];
  read.strides[axis] = 0;
  HostTensor r = HostTensor::zeros(data.elementType, indices.shape);
  LogicalResult status = success();
  forEachIndex(indices.shape, {read, contiguous(indices.shape)}, [&](ArrayRef<int64_t> o) {
    int64_t index = indices.ints[o[1]];
    if (index < -dim || index >= dim) {
      if (succeeded(status))
        status = op.emitError() << "gather_elements index " << index
                                << " out of range for a dim of " << dim;
      return;
    }
    copyElement(r, o[1], data, o[0] + (index < 0 ? index + dim : index) * axisStride);
  });
  if (failed(status))
    return failure();
  return r;
}

/// quantize: saturate(round(x / scale) + zp); dequantize: (x - zp) · scale.
/// Both in float32 arithmetic, as ONNX Runtime computes them.
FailureOr<HostTensor> Interpreter::quantize(Operation *op, const HostTensor &x, Value scaleValue, Value zpValue,
                                            std::optional<uint64_t> axis, bool dequantize, Type resultType) {
  const HostTensor &scale = in(scaleValue);
  const HostTensor *zp = zpValue ? &in(zpValue) : nullptr;
  int64_t rank = x.shape.size();
  // A 0-D (or one-element) scale is per tensor; a 1-D one runs along `axis`.
  auto paramAccess = [&](const HostTensor &p) -> FailureOr<Access> {
    Access access{0, SmallVector<int64_t>(rank, 0)};
    if (p.numElements() == 1 && (!axis || p.shape.size() <= 1))
      return access;
    if (!axis || p.shape.size() != 1 || static_cast<int64_t>(*axis) >= rank || p.shape[0] != x.shape[*axis])
      return op->emitError() << "quantization parameter " << shapeString(p.shape)
                             << " does not match input " << shapeString(x.shape) << " along the axis";
    access.strides[*axis] = 1;
    return access;
  };
  FailureOr<Access> scaleAccess = paramAccess(scale);
  FailureOr<Access> zpAccess = zp ? paramAccess(*zp) : FailureOr<Access>(Access{0, SmallVector<int64_t>(rank, 0)});
  if (failed(scaleAccess) || failed(zpAccess))
    return failure();
  HostTensor r = HostTensor::zeros(resultType, x.shape);
  forEachIndex(x.shape, {contiguous(x.shape), *scaleAccess, *zpAccess},
               [&](ArrayRef<int64_t> o) {
                 float s = scale.floats[o[1]];
                 int64_t z = zp ? zp->ints[o[2]] : 0;
                 if (dequantize)
                   r.floats[o[0]] = static_cast<float>(x.ints[o[0]] - z) * s;
                 else
                   r.ints[o[0]] = roundAndSaturate(resultType,
                                                   double(std::nearbyint(float(x.floats[o[0]]) / s)) + z);
               });
  return r;
}

/// layer_norm(input), or add_layer_norm's layer_norm(input + residual) with
/// the sum rounded first, as the unfused Add is.
FailureOr<HostTensor> Interpreter::addLayerNorm(Operation *op, Value input, Value residual, Value gamma,
                                                Value beta, int64_t axis, double epsilon) {
  const HostTensor &x = in(input);
  if (!residual)
    return layerNorm(op, x, gamma, beta, axis, epsilon);
  const HostTensor &res = in(residual);
  Type type = x.elementType;
  FailureOr<HostTensor> sum = elementwise(op, type, {&x, &res}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
    r.floats[o] = roundToFloat(type, x.floats[i[0]] + res.floats[i[1]]);
    return success();
  });
  if (failed(sum))
    return failure();
  if (sum->shape != x.shape)
    return op->emitError() << "residual " << shapeString(res.shape) << " widens the input " << shapeString(x.shape);
  return layerNorm(op, *sum, gamma, beta, axis, epsilon);
}

static void quantizeRows(const HostTensor &x, HostTensor &q, HostTensor &s);

/// octet.layer_norm_quantize: the LayerNorm, then octet.quantize (per tensor)
/// or octet.quantize_per_row of its f32 result, exactly as the unfused ops.
LogicalResult Interpreter::layerNormQuantize(LayerNormQuantizeOp op) {
  FailureOr<HostTensor> y = addLayerNorm(op, op.getInput(), op.getResidual(), op.getGamma(), op.getBeta(),
                                         op.getAxis(), op.getEpsilon().convertToDouble());
  if (failed(y))
    return failure();
  if (op.getScale()) {
    // quant_affine: the quantized value is the same normalization with its own affine.
    FailureOr<HostTensor> yq = *y;
    if (op.getQuantGamma())
      yq = addLayerNorm(op, op.getInput(), op.getResidual(), op.getQuantGamma(), op.getQuantBeta(),
                        op.getAxis(), op.getEpsilon().convertToDouble());
    if (failed(yq))
      return failure();
    FailureOr<HostTensor> q = quantize(op, *yq, op.getScale(), op.getZeroPoint(), std::nullopt, false,
                                         elementTypeOf(op.getQuantized()));
    if (failed(q) || failed(define(op, op.getQuantized(), std::move(q))))
      return failure();
  } else {
    SmallVector<int64_t> scaleShape(y->shape);
    scaleShape.back() = 1;
    HostTensor q = HostTensor::zeros(elementTypeOf(op.getQuantized()), y->shape);
    HostTensor s = HostTensor::zeros(elementTypeOf(op.getRowScale()), scaleShape);
    quantizeRows(*y, q, s);
    if (failed(define(op, op.getQuantized(), std::move(q))) || failed(define(op, op.getRowScale(), std::move(s))))
      return failure();
  }
  return define(op, op.getResult(), std::move(*y));
}

/// ONNX DynamicQuantizeLinear, with ONNX Runtime's scale of 1 for all-zero input.
LogicalResult Interpreter::dynamicQuantize(DynamicQuantizeOp op) {
  const HostTensor &x = in(op.getInput());
  float lo = 0, hi = 0;
  for (double v : x.floats) {
    lo = std::min(lo, float(v));
    hi = std::max(hi, float(v));
  }
  float scale = hi == lo ? 1.0f : (hi - lo) / 255.0f;
  Type u8 = elementTypeOf(op.getZeroPoint());
  int64_t zp = roundAndSaturate(u8, std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f)));
  HostTensor q = HostTensor::zeros(elementTypeOf(op.getResult()), x.shape);
  for (int64_t i = 0, e = x.numElements(); i < e; ++i)
    q.ints[i] = roundAndSaturate(q.elementType, double(std::nearbyint(float(x.floats[i]) / scale)) + zp);
  HostTensor s = HostTensor::zeros(elementTypeOf(op.getScale()), {});
  s.floats[0] = scale;
  HostTensor z = HostTensor::zeros(u8, {});
  z.ints[0] = zp;
  if (failed(define(op, op.getResult(), std::move(q))) || failed(define(op, op.getScale(), std::move(s))))
    return failure();
  return define(op, op.getZeroPoint(), std::move(z));
}

/// octet.quantize_per_row: per row s = absmax / 127 in f32 (1 for a zero
/// row), q = saturate(round_half_even(x / s)) + 128; NaN gives 128.
static void quantizeRows(const HostTensor &x, HostTensor &q, HostTensor &s) {
  int64_t k = x.shape.back();
  for (int64_t row = 0, rows = s.numElements(); row < rows; ++row) {
    float absMax = 0.0f;
    for (int64_t j = 0; j < k; ++j)
      absMax = std::max(absMax, std::fabs(float(x.floats[row * k + j]))); // NaN is skipped
    float scale = absMax == 0.0f ? 1.0f : absMax / 127.0f;
    s.floats[row] = scale;
    for (int64_t j = 0; j < k; ++j) {
      float v = std::nearbyint(float(x.floats[row * k + j]) / scale);
      q.ints[row * k + j] = std::isnan(v) ? 128 : int64_t(std::clamp(v, -127.0f, 127.0f)) + 128;
    }
  }
}

LogicalResult Interpreter::quantizePerRow(QuantizePerRowOp op) {
  const HostTensor &x = in(op.getInput());
  if (x.shape.empty())
    return op.emitError() << "quantize_per_row needs an input of rank >= 1";
  SmallVector<int64_t> scaleShape(x.shape);
  scaleShape.back() = 1;
  HostTensor q = HostTensor::zeros(elementTypeOf(op.getResult()), x.shape);
  HostTensor s = HostTensor::zeros(elementTypeOf(op.getScale()), scaleShape);
  quantizeRows(x, q, s);
  if (failed(define(op, op.getResult(), std::move(q))))
    return failure();
  return define(op, op.getScale(), std::move(s));
}

/// (a - a_zp)·(b - b_zp) in i32: the zero points are subtracted with broadcasting
/// (b's per column), then an exact integer matmul.
FailureOr<HostTensor> Interpreter::matmulInteger(MatMulIntegerOp op) {
  Type i64 = IntegerType::get(op.getContext(), 64);
  auto shifted = [&](Value v, Value zpValue) -> FailureOr<HostTensor> {
    HostTensor t = in(v);
    t.elementType = i64;
    if (!zpValue)
      return t;
    HostTensor zp = in(zpValue);
    zp.elementType = i64;
    if (zp.shape.size() > 1 || (zp.numElements() != 1 && (t.shape.empty() || zp.numElements() != t.shape.back())))
      return op.emitError() << "zero point " << shapeString(zp.shape) << " is neither a scalar nor per column of "
                            << shapeString(t.shape);
    return elementwise(op, i64, {&t, &zp}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
      r.ints[o] = t.ints[i[0]] - zp.ints[i[1]];
      return success();
    });
  };
  FailureOr<HostTensor> a = shifted(op.getLhs(), op.getLhsZeroPoint());
  FailureOr<HostTensor> b = shifted(op.getRhs(), op.getRhsZeroPoint());
  if (failed(a) || failed(b))
    return failure();
  return matmul(op, *a, *b, elementTypeOf(op.getResult()));
}

/// The INT8 GEMM as its op documentation states it: the exact integer sum of
/// (x - x_zp)·w, then f32(f32(x_scale·w_scale[n])·f32(sum)) (+ bias[n]), the
/// epilogue region, and for a quantized result round-half-even and saturate.
FailureOr<HostTensor> Interpreter::qlinear(QLinearOp op) {
  const HostTensor &x = in(op.getInput()), &w = in(op.getWeight());
  const HostTensor &xScale = in(op.getInputScale()), &xZp = in(op.getInputZeroPoint());
  const HostTensor &wScale = in(op.getWeightScale());
  // A packed weight (octet-pack-weights) is read through its layout, and its
  // sum uses the stored column sums as the kernels do (Σ x·w - zp·colsum), so
  // a wrong byte or sum shows here.
  const bool packed = bool(op.getPacked());
  if (x.shape.empty() || w.shape.size() != (packed ? 1u : 2u))
    return op.emitError() << "qlinear needs an input of rank >= 1 and a 2-D (or packed 1-D) weight";
  bool transposed = op.getTransposeWeight();
  int64_t k = x.shape.back(), n = packed ? op.getN() : w.shape[transposed ? 0 : 1];
  if ((packed ? op.getK() : w.shape[transposed ? 1 : 0]) != k)
    return op.emitError() << "qlinear input " << shapeString(x.shape) << " does not match weight "
                          << shapeString(w.shape);
  std::vector<int64_t> unpacked, colsum;
  if (packed) {
    PackedWeightLayout layout = op.getPackedLayout();
    if (w.numElements() != layout.bytes())
      return op.emitError() << "qlinear packed weight has " << w.numElements() << " bytes, its layout "
                            << layout.bytes();
    unpacked.resize(size_t(k * n));
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        unpacked[p * n + j] = w.ints[layout.offset(p, j)];
    for (int32_t sum : op.getPackedColsum().getValues<int32_t>())
      colsum.push_back(sum);
  }
  const std::vector<int64_t> &weight = packed ? unpacked : w.ints;
  if (wScale.numElements() != n)
    return op.emitError() << "qlinear weight_scale has " << wScale.numElements() << " entries for " << n
                          << " output channels";
  const HostTensor *bias = op.getBias() ? &in(op.getBias()) : nullptr;
  if (bias && bias->numElements() != n)
    return op.emitError() << "qlinear bias has " << bias->numElements() << " entries for " << n
                          << " output channels";
  SmallVector<int64_t> shape(x.shape);
  shape.back() = n;
  Type f32 = Float32Type::get(op.getContext());
  HostTensor acc = HostTensor::zeros(f32, shape);
  int64_t rows = x.numElements() / std::max<int64_t>(k, 1);
  if (k == 0)
    rows = acc.numElements() / std::max<int64_t>(n, 1);
  // A per-row input scale (octet.quantize_per_row) has one entry per row.
  bool perRow = !xScale.shape.empty();
  if (perRow && xScale.numElements() != rows)
    return op.emitError() << "qlinear per-row input_scale " << shapeString(xScale.shape) << " does not match input "
                          << shapeString(x.shape);
  int64_t zp = xZp.ints[0];
  for (int64_t m = 0; m < rows; ++m)
    for (int64_t j = 0; j < n; ++j) {
      float inputScale = float(xScale.floats[perRow ? m : 0]);
      int64_t sum = 0;
      if (packed) {
        for (int64_t p = 0; p < k; ++p)
          sum += x.ints[m * k + p] * weight[p * n + j];
        sum -= zp * colsum[j];
      } else {
        for (int64_t p = 0; p < k; ++p)
          sum += (x.ints[m * k + p] - zp) * weight[transposed ? j * k + p : p * n + j];
      }
      float scale = inputScale * float(wScale.floats[j]);
      float value = scale * float(int32_t(sum));
      if (bias)
        value += float(bias->floats[j]);
      acc.floats[m * n + j] = value;
    }
  SmallVector<const HostTensor *> operands{&acc};
  for (Value extra : op.getExtra())
    operands.push_back(&in(extra));
  // The region yields f32 whatever the result type; requantizing follows.
  FailureOr<HostTensor> y = scalarRegion(op, op.getEpilogue(), operands, f32);
  if (failed(y))
    return failure();
  if (y->shape != acc.shape)
    return op.emitError() << "extra operands widen the qlinear result " << shapeString(acc.shape) << " to "
                          << shapeString(y->shape);
  Type resultType = elementTypeOf(op.getResult());
  if (resultType == f32)
    return y;
  float outScale = float(in(op.getOutputScale()).floats[0]);
  int64_t outZp = in(op.getOutputZeroPoint()).ints[0];
  HostTensor r = HostTensor::zeros(resultType, shape);
  for (int64_t i = 0, e = r.numElements(); i < e; ++i)
    r.ints[i] = roundAndSaturate(resultType, double(std::nearbyint(float(y->floats[i]) / outScale)) + outZp);
  return r;
}

LogicalResult Interpreter::executeArith(Operation *op) {
  if (llvm::any_of(op->getOperandTypes(), [](Type t) { return isa<ShapedType>(t); }) ||
      llvm::any_of(op->getResultTypes(), [](Type t) { return isa<ShapedType>(t); }))
    return op->emitError() << "'" << op->getName() << "' on tensors is not supported by the interpreter";
  Type resultType = op->getResult(0).getType();
  auto operand = [&](unsigned i) { return scalar(op->getOperand(i)); };
  auto divide = [&](bool floor, bool ceil) -> FailureOr<int64_t> {
    int64_t a = operand(0), b = operand(1);
    if (b == 0)
      return op->emitError() << "division by zero";
    if (b == -1)
      return int64_t(0 - u(a));
    int64_t q = a / b, rem = a % b;
    if (rem != 0 && floor && ((rem < 0) != (b < 0)))
      --q;
    if (rem != 0 && ceil && ((rem < 0) == (b < 0)))
      ++q;
    return q;
  };
  FailureOr<int64_t> value =
      llvm::TypeSwitch<Operation *, FailureOr<int64_t>>(op)
          .Case([&](arith::ConstantOp c) -> FailureOr<int64_t> {
            if (auto attr = dyn_cast<IntegerAttr>(c.getValue()))
              return resultType.isInteger(1) || isUnsignedInt(resultType) ? int64_t(attr.getValue().getZExtValue())
                                                                          : attr.getValue().getSExtValue();
            return op->emitError() << "unsupported constant " << c.getValue();
          })
          .Case([&](arith::AddIOp) { return int64_t(u(operand(0)) + u(operand(1))); })
          .Case([&](arith::SubIOp) { return int64_t(u(operand(0)) - u(operand(1))); })
          .Case([&](arith::MulIOp) { return int64_t(u(operand(0)) * u(operand(1))); })
          .Case([&](arith::DivSIOp) { return divide(false, false); })
          .Case([&](arith::FloorDivSIOp) { return divide(true, false); })
          .Case([&](arith::CeilDivSIOp) { return divide(false, true); })
          .Case([&](arith::RemSIOp) -> FailureOr<int64_t> {
            if (operand(1) == 0)
              return op->emitError() << "remainder by zero";
            return operand(1) == -1 ? 0 : operand(0) % operand(1);
          })
          .Case([&](arith::MaxSIOp) { return std::max(operand(0), operand(1)); })
          .Case([&](arith::MinSIOp) { return std::min(operand(0), operand(1)); })
          .Case([&](arith::SelectOp) { return operand(0) ? operand(1) : operand(2); })
          .Case([&](arith::IndexCastOp) { return operand(0); })
          .Case([&](arith::CmpIOp cmp) -> FailureOr<int64_t> {
            int64_t a = operand(0), b = operand(1);
            switch (cmp.getPredicate()) {
            case arith::CmpIPredicate::eq: return a == b;
            case arith::CmpIPredicate::ne: return a != b;
            case arith::CmpIPredicate::slt: return a < b;
            case arith::CmpIPredicate::sle: return a <= b;
            case arith::CmpIPredicate::sgt: return a > b;
            case arith::CmpIPredicate::sge: return a >= b;
            case arith::CmpIPredicate::ult: return u(a) < u(b);
            case arith::CmpIPredicate::ule: return u(a) <= u(b);
            case arith::CmpIPredicate::ugt: return u(a) > u(b);
            case arith::CmpIPredicate::uge: return u(a) >= u(b);
            }
            return op->emitError() << "unknown predicate";
          })
          .Default([&](Operation *) {
            return op->emitError() << "'" << op->getName() << "' is not supported by the interpreter";
          });
  if (failed(value))
    return failure();
  scalars[op->getResult(0)] = wrapToInt(resultType, *value);
  return success();
}

LogicalResult Interpreter::execute(Operation *op) {
  if (op->getDialect() && op->getDialect()->getNamespace() == "arith")
    return executeArith(op);
  if (auto ret = dyn_cast<func::ReturnOp>(op)) {
    for (Value v : ret.getOperands()) {
      if (!tensors.count(v))
        return op->emitError() << "returns a value that is not a tensor";
      results.push_back(in(v));
    }
    return success();
  }
  if (auto dim = dyn_cast<DimOp>(op)) {
    const HostTensor &t = in(dim.getSource());
    if (dim.getIndex() >= t.shape.size())
      return op->emitError() << "dim index out of range";
    scalars[dim.getResult()] = t.shape[dim.getIndex()];
    return success();
  }
  if (auto element = dyn_cast<ElementIndexOp>(op)) {
    const HostTensor &t = in(element.getInput());
    if (int64_t(element.getPosition()) >= t.numElements())
      return op->emitError() << "element_index position " << element.getPosition()
                             << " is out of range for " << t.numElements() << " elements";
    scalars[element.getResult()] = t.ints[element.getPosition()];
    return success();
  }
  if (auto dq = dyn_cast<DynamicQuantizeOp>(op))
    return dynamicQuantize(dq);
  if (auto q = dyn_cast<QuantizePerRowOp>(op))
    return quantizePerRow(q);
  if (auto lnq = dyn_cast<LayerNormQuantizeOp>(op))
    return layerNormQuantize(lnq);
  if (op->getNumResults() != 1)
    return op->emitError() << "'" << op->getName() << "' is not supported by the interpreter";
  Value result = op->getResult(0);
  Type resultType = elementTypeOf(result);
  FailureOr<HostTensor> t =
      llvm::TypeSwitch<Operation *, FailureOr<HostTensor>>(op)
          .Case([&](ConstantOp c) { return constant(c); })
          .Case([&](FromElementsOp f) {
            HostTensor r = HostTensor::zeros(resultType, {int64_t(f.getElements().size())});
            for (auto [i, v] : llvm::enumerate(f.getElements()))
              r.ints[i] = wrapToInt(resultType, scalar(v));
            return r;
          })
          .Case([&](RangeOp r) -> FailureOr<HostTensor> {
            int64_t start = scalar(r.getStart()), limit = scalar(r.getLimit()), delta = scalar(r.getDelta());
            if (delta == 0)
              return op->emitError() << "range with a zero delta";
            int64_t n = std::max<int64_t>(0, (limit - start + delta + (delta > 0 ? -1 : 1)) / delta);
            HostTensor out = HostTensor::zeros(resultType, {n});
            for (int64_t i = 0; i < n; ++i) {
              if (out.isFloat())
                out.floats[i] = roundToFloat(resultType, double(start + i * delta));
              else
                out.ints[i] = wrapToInt(resultType, start + i * delta);
            }
            return out;
          })
          .Case<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, EqualOp, LessOp, GreaterOp, AndOp, OrOp,
                XorOp, ModOp>(
              [&](Operation *) { return binary(op, in(op->getOperand(0)), in(op->getOperand(1))); })
          .Case<NegOp, AbsOp, ExpOp, LogOp, ErfOp, TanhOp, SqrtOp, RsqrtOp, ReciprocalOp, ReluOp, SigmoidOp,
                NotOp, CeilOp, FloorOp, SignOp>([&](Operation *) { return unary(op, in(op->getOperand(0))); })
          .Case([&](IsNanOp t) {
            const HostTensor &x = in(t.getInput());
            return elementwise(op, resultType, {&x}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
              r.ints[o] = std::isnan(x.floats[i[0]]);
              return success();
            });
          })
          .Case([&](IsInfOp t) {
            const HostTensor &x = in(t.getInput());
            bool negative = t.getDetectNegative(), positive = t.getDetectPositive();
            return elementwise(op, resultType, {&x}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
              double v = x.floats[i[0]];
              r.ints[o] = std::isinf(v) && (v < 0 ? negative : positive);
              return success();
            });
          })
          .Case([&](CastOp c) { return convert(c, in(c.getInput())); })
          .Case([&](WhereOp w) {
            const HostTensor &c = in(w.getCondition()), &a = in(w.getLhs()), &b = in(w.getRhs());
            return elementwise(op, resultType, {&c, &a, &b}, [&](HostTensor &r, int64_t o, ArrayRef<int64_t> i) {
              copyElement(r, o, c.ints[i[0]] ? a : b, c.ints[i[0]] ? i[1] : i[2]);
              return success();
            });
          })
          .Case([&](MatMulOp m) { return matmul(op, in(m.getLhs()), in(m.getRhs()), resultType); })
          .Case([&](LinearOp l) {
            return linear(op, l.getInput(), l.getWeight(), l.getBias(), l.getTransposeWeight());
          })
          .Case([&](FusedLinearOp f) { return fusedLinear(f); })
          .Case([&](FusedOp f) { return fused(f); })
          .Case<ReduceMeanOp, ReduceSumOp, ReduceMaxOp, ReduceMinOp>([&](Operation *) {
            auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef();
            return reduce(op, in(op->getOperand(0)), axes, op->hasAttr("keepdims"));
          })
          .Case([&](CumSumOp c) { return cumsum(c); })
          .Case([&](SoftmaxOp s) { return softmax(s); })
          .Case([&](LayerNormOp l) {
            return layerNorm(op, in(l.getInput()), l.getGamma(), l.getBeta(), l.getAxis(),
                             l.getEpsilon().convertToDouble());
          })
          .Case([&](AddLayerNormOp l) {
            return addLayerNorm(op, l.getInput(), l.getResidual(), l.getGamma(), l.getBeta(), l.getAxis(),
                                l.getEpsilon().convertToDouble());
          })
          .Case([&](GeluOp g) { return gelu(g); })
          .Case([&](AttentionOp a) { return attention(a); })
          .Case([&](TokenLayoutOp t) { return tokenLayout(t); })
          .Case([&](PackTokensOp p) { return packTokens(p); })
          .Case([&](UnpackTokensOp u) { return unpackTokens(u); })
          .Case([&](ReshapeOp r) { return reshape(r); })
          .Case([&](ExpandOp e) { return expand(e); })
          .Case([&](TransposeOp t) { return transpose(t); })
          .Case([&](ConcatOp c) { return concat(c); })
          .Case([&](SliceOp s) { return slice(s); })
          .Case([&](GatherOp g) { return gather(g); })
          .Case([&](GatherNDOp g) { return gatherND(g); })
          .Case([&](GatherElementsOp g) { return gatherElements(g); })
          .Case([&](QuantizeOp q) {
            return quantize(op, in(q.getInput()), q.getScale(), q.getZeroPoint(), q.getAxis(), false, resultType);
          })
          .Case([&](DequantizeOp q) {
            return quantize(op, in(q.getInput()), q.getScale(), q.getZeroPoint(), q.getAxis(), true, resultType);
          })
          .Case([&](MatMulIntegerOp m) { return matmulInteger(m); })
          .Case([&](QLinearOp q) { return qlinear(q); })
          .Default([&](Operation *) -> FailureOr<HostTensor> {
            return op->emitError() << "'" << op->getName() << "' is not supported by the interpreter";
          });
  return define(op, result, std::move(t));
}

FailureOr<SmallVector<HostTensor>> octet::evaluate(func::FuncOp func, ArrayRef<HostTensor> inputs) {
  if (func.isExternal() || !llvm::hasSingleElement(func.getBody()))
    return func.emitError() << "the interpreter needs a function with one block";
  Block &body = func.getBody().front();
  if (inputs.size() != body.getNumArguments())
    return func.emitError() << "expects " << body.getNumArguments() << " inputs, got " << inputs.size();
  Interpreter interp;
  for (auto [arg, t] : llvm::zip(body.getArguments(), inputs))
    if (failed(interp.bindArgument(arg, t)))
      return failure();
  for (Operation &op : body)
    if (failed(interp.execute(&op)))
      return failure();
  return std::move(interp.results);
}
