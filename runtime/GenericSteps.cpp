//===- GenericSteps.cpp - elementwise, data movement, reductions ----------===//
//
// The generic steps of runtime/Steps.h: compiled C++ on any strided input
// view (stride 0 = broadcast), contiguous outputs. Every run() checks the
// run-time shapes and element types against each other before it touches
// memory, and reports what it found wrong with the step's location.
//
// Loops go through strided::Loop (runtime/StridedIter.h), which coalesces
// dims so that the common cases (same-shape contiguous operands, a broadcast
// scalar or row) reach the inner kernels as stride-1 / stride-0 runs that the
// compiler vectorizes; big loops are split over OpenMP threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/DTypeVisit.h"
#include "runtime/Half.h"
#include "runtime/Plan.h"
#include "runtime/Steps.h"
#include "runtime/StridedIter.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace octet::rt {
namespace {

using namespace strided;
using Shape = std::vector<int64_t>;

/// f32 and f64: what the float steps beyond the element-wise ones (reductions, scans,
/// softmax) compute on.
bool isFloat(DType d) { return d == DType::F32 || d == DType::F64; }
/// The float types of the element-wise steps: f16 computes in float, rounded per op.
bool isElementwiseFloat(DType d) { return isFloat(d) || d == DType::F16; }
bool isInteger(DType d) {
  switch (d) {
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
  case DType::U64:
  case DType::U32:
  case DType::U16:
  case DType::U8:
    return true;
  default:
    return false;
  }
}

/// Integer arithmetic wraps (two's complement), as the reference interpreter's.
template <class T> T wrapAdd(T x, T y) {
  if constexpr (isFloatElement<T>)
    return x + y;
  else
    return T(std::make_unsigned_t<T>(x) + std::make_unsigned_t<T>(y));
}
template <class T> T wrapSub(T x, T y) {
  if constexpr (isFloatElement<T>)
    return x - y;
  else
    return T(std::make_unsigned_t<T>(x) - std::make_unsigned_t<T>(y));
}
template <class T> T wrapMul(T x, T y) {
  if constexpr (isFloatElement<T>)
    return x * y;
  else
    return T(uint64_t(x) * uint64_t(y));
}
template <class T> T wrapNeg(T x) { return wrapSub(T(0), x); }

/// Integer x^y by squaring (wrapping); negative exponents: only ±1 have integer reciprocals.
template <class T> T intPow(T x, T y) {
  if constexpr (std::is_signed_v<T>) {
    int64_t base = x, exponent = y;
    if (exponent < 0)
      return T(base == 1 ? 1 : base == -1 ? (exponent % 2 ? -1 : 1) : 0);
  }
  uint64_t result = 1, b = uint64_t(x), exponent = uint64_t(y);
  for (; exponent; exponent >>= 1, b *= b)
    if (exponent & 1)
      result *= b;
  return T(result);
}

/// NaN-propagating max / min (numpy maximum/minimum, ONNX Max/Min); vectorizes to a blend.
template <class T> T maxOf(T x, T y) {
  if constexpr (isFloatElement<T>)
    return (x > y || x != x) ? x : y;
  else
    return x > y ? x : y;
}
template <class T> T minOf(T x, T y) {
  if constexpr (isFloatElement<T>)
    return (x < y || x != x) ? x : y;
  else
    return x < y ? x : y;
}

const char *binaryName(BinaryKind kind) {
  switch (kind) {
  case BinaryKind::Add:
    return "add";
  case BinaryKind::Sub:
    return "sub";
  case BinaryKind::Mul:
    return "mul";
  case BinaryKind::Div:
    return "div";
  case BinaryKind::Pow:
    return "pow";
  case BinaryKind::Max:
    return "max";
  case BinaryKind::Min:
    return "min";
  case BinaryKind::Equal:
    return "equal";
  case BinaryKind::Less:
    return "less";
  case BinaryKind::Greater:
    return "greater";
  case BinaryKind::And:
    return "and";
  case BinaryKind::Or:
    return "or";
  case BinaryKind::Xor:
    return "xor";
  case BinaryKind::Mod:
    return "mod";
  case BinaryKind::FMod:
    return "fmod";
  }
  return "binary";
}

const char *unaryName(UnaryKind kind) {
  switch (kind) {
  case UnaryKind::Neg:
    return "neg";
  case UnaryKind::Abs:
    return "abs";
  case UnaryKind::Exp:
    return "exp";
  case UnaryKind::Log:
    return "log";
  case UnaryKind::Erf:
    return "erf";
  case UnaryKind::Tanh:
    return "tanh";
  case UnaryKind::Sqrt:
    return "sqrt";
  case UnaryKind::Rsqrt:
    return "rsqrt";
  case UnaryKind::Reciprocal:
    return "reciprocal";
  case UnaryKind::Relu:
    return "relu";
  case UnaryKind::Sigmoid:
    return "sigmoid";
  case UnaryKind::Not:
    return "not";
  case UnaryKind::Ceil:
    return "ceil";
  case UnaryKind::Floor:
    return "floor";
  case UnaryKind::Sign:
    return "sign";
  case UnaryKind::IsNaN:
    return "is_nan";
  case UnaryKind::IsInf:
    return "is_inf";
  case UnaryKind::IsPosInf:
    return "is_inf (positive)";
  case UnaryKind::IsNegInf:
    return "is_inf (negative)";
  }
  return "unary";
}

const char *reduceName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Mean:
    return "reduce_mean";
  case ReduceKind::Sum:
    return "reduce_sum";
  case ReduceKind::Max:
    return "reduce_max";
  case ReduceKind::Min:
    return "reduce_min";
  }
  return "reduce";
}

/// Shared checks and messages of the generic steps.
class GenericStep : public Step {
protected:
  Status fail(const std::string &message) const {
    std::string where = kind();
    if (!location.empty())
      where += " '" + location + "'";
    return Status::error(where + ": " + message);
  }

  /// "'name' (f32 [2, 3])" for messages.
  static std::string describe(const ExecContext &ctx, TensorId t) {
    return "'" + ctx.plan().tensors[t].name + "' (" + dtypeName(ctx.dtype(t)) + " " +
           shapeString(ctx.shape(t)) + ")";
  }

  /// Every tensor id names a tensor of the plan with an address where it has elements.
  Status checkTensors(const ExecContext &ctx) const {
    auto check = [&](TensorId t) -> Status {
      if (t < 0 || size_t(t) >= ctx.plan().tensors.size() || size_t(t) >= ctx.addresses_.size())
        return fail("tensor id " + std::to_string(t) + " is not in the plan");
      for (ScalarId id : ctx.plan().tensors[t].shape)
        if (id < 0 || size_t(id) >= ctx.scalars_.size())
          return fail("tensor " + describe(ctx, t) + " has an unevaluated dim");
      for (int64_t d : ctx.shape(t))
        if (d < 0)
          return fail("tensor '" + ctx.plan().tensors[t].name + "' has a negative dim " +
                      shapeString(ctx.shape(t)));
      if (!ctx.data(t) && ctx.numElements(t) != 0)
        return fail("tensor " + describe(ctx, t) + " has no address");
      return Status();
    };
    for (TensorId t : inputs)
      if (Status s = check(t); !s.ok())
        return s;
    for (TensorId t : outputs)
      if (Status s = check(t); !s.ok())
        return s;
    return Status();
  }

  Status checkShape(const ExecContext &ctx, TensorId out, const Shape &expected) const {
    if (ctx.shape(out) != expected)
      return fail("the output " + describe(ctx, out) + " should have shape " +
                  shapeString(expected));
    return Status();
  }

  Status checkDType(const ExecContext &ctx, TensorId t, DType expected, const char *role) const {
    if (ctx.dtype(t) != expected)
      return fail(std::string(role) + " " + describe(ctx, t) + " should be " + dtypeName(expected));
    return Status();
  }

  /// The numpy broadcast of the operands' shapes must be `out`'s shape;
  /// `strides` receives each operand's strides for reading it at out's positions.
  Status broadcastOperands(const ExecContext &ctx, const std::vector<TensorId> &operands,
                           TensorId out, std::vector<Shape> &strides) const {
    Shape target;
    for (TensorId t : operands) {
      Shape shape = ctx.shape(t);
      if (shape.size() > target.size())
        target.insert(target.begin(), shape.size() - target.size(), 1);
      size_t lead = target.size() - shape.size();
      for (size_t i = 0; i < shape.size(); ++i) {
        int64_t &dim = target[lead + i];
        if (dim == 1)
          dim = shape[i];
        else if (shape[i] != 1 && shape[i] != dim) {
          std::string list;
          for (TensorId o : operands)
            list += (list.empty() ? "" : ", ") + describe(ctx, o);
          return fail("operand shapes do not broadcast: " + list);
        }
      }
    }
    if (Status s = checkShape(ctx, out, target); !s.ok())
      return s;
    strides.clear();
    for (TensorId t : operands) {
      strides.emplace_back();
      broadcastStrides(ctx.shape(t), ctx.strides(t), target, strides.back());
    }
    return Status();
  }
};

// ---- Elementwise -----------------------------------------------------------

/// out[i] = op(a[i], b[i]) over a Loop<3> (out, a, b); the out run has stride 1.
template <class R, class T, class Op>
void binaryLoop(const Loop<3> &loop, R *out, const T *a, const T *b, Op op) {
  forEachRun(loop, [&](int64_t, int64_t n, const std::array<int64_t, 3> &off,
                       const std::array<int64_t, 3> &st) {
    R *o = out + off[0];
    const T *x = a + off[1], *y = b + off[2];
    if (st[1] == 1 && st[2] == 1) {
      for (int64_t i = 0; i < n; ++i)
        o[i] = op(x[i], y[i]);
    } else if (st[1] == 1 && st[2] == 0) {
      T yv = *y;
      for (int64_t i = 0; i < n; ++i)
        o[i] = op(x[i], yv);
    } else if (st[1] == 0 && st[2] == 1) {
      T xv = *x;
      for (int64_t i = 0; i < n; ++i)
        o[i] = op(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        o[i * st[0]] = op(x[i * st[1]], y[i * st[2]]);
    }
  });
}

class BinaryStep final : public GenericStep {
public:
  explicit BinaryStep(BinaryKind kind) : kind_(kind) {}
  std::string kind() const override { return binaryName(kind_); }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId a = inputs[0], b = inputs[1], out = outputs[0];
    DType type = ctx.dtype(a);
    if (ctx.dtype(b) != type)
      return fail("operand element types differ: " + describe(ctx, a) + " and " + describe(ctx, b));
    bool logical = kind_ == BinaryKind::And || kind_ == BinaryKind::Or || kind_ == BinaryKind::Xor;
    bool compare =
        kind_ == BinaryKind::Equal || kind_ == BinaryKind::Less || kind_ == BinaryKind::Greater;
    if (logical && type != DType::Bool)
      return fail("takes bool operands, not " + describe(ctx, a));
    if (!logical && type == DType::Bool && kind_ != BinaryKind::Equal)
      return fail("does not take bool operands (" + describe(ctx, a) + ")");
    if (kind_ == BinaryKind::Mod && isElementwiseFloat(type))
      return fail("takes integers (float remainders are fmod, ONNX Mod's fmod = 1): " +
                  describe(ctx, a));
    if (Status s = checkDType(ctx, out, compare || logical ? DType::Bool : type, "the output");
        !s.ok())
      return s;
    std::vector<Shape> strides;
    if (Status s = broadcastOperands(ctx, {a, b}, out, strides); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(ctx.shape(out));
    Loop<3> loop = makeLoop<3>(ctx.shape(out), {&outStrides, &strides[0], &strides[1]});
    if (loop.total == 0)
      return Status();
    return visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return compute<T>(ctx, loop, ctx.data<T>(a), ctx.data<T>(b), ctx.data(out));
    });
  }

private:
  template <class T>
  Status compute(const ExecContext &ctx, const Loop<3> &loop, const T *a, const T *b,
                 void *outData) const {
    T *out = static_cast<T *>(outData);
    uint8_t *flags = static_cast<uint8_t *>(outData);
    switch (kind_) {
    case BinaryKind::Add:
      binaryLoop(loop, out, a, b, [](T x, T y) { return wrapAdd(x, y); });
      break;
    case BinaryKind::Sub:
      binaryLoop(loop, out, a, b, [](T x, T y) { return wrapSub(x, y); });
      break;
    case BinaryKind::Mul:
      binaryLoop(loop, out, a, b, [](T x, T y) { return wrapMul(x, y); });
      break;
    case BinaryKind::Div:
      if constexpr (isFloatElement<T>)
        binaryLoop(loop, out, a, b, [](T x, T y) { return x / y; });
      else
        return integerDivide(ctx, loop, out, a, b);
      break;
    case BinaryKind::Pow:
      if constexpr (isFloatElement<T>)
        floatPow(loop, out, a, b);
      else
        binaryLoop(loop, out, a, b, [](T x, T y) { return intPow(x, y); });
      break;
    case BinaryKind::Max:
      binaryLoop(loop, out, a, b, [](T x, T y) { return maxOf(x, y); });
      break;
    case BinaryKind::Min:
      binaryLoop(loop, out, a, b, [](T x, T y) { return minOf(x, y); });
      break;
    case BinaryKind::Equal:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t(x == y); });
      break;
    case BinaryKind::Less:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t(x < y); });
      break;
    case BinaryKind::Greater:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t(x > y); });
      break;
    case BinaryKind::And:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t((x != 0) & (y != 0)); });
      break;
    case BinaryKind::Or:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t((x != 0) | (y != 0)); });
      break;
    case BinaryKind::Xor:
      binaryLoop(loop, flags, a, b, [](T x, T y) { return uint8_t((x != 0) != (y != 0)); });
      break;
    case BinaryKind::Mod:
    case BinaryKind::FMod:
      if constexpr (isFloatElement<T>)
        binaryLoop(loop, out, a, b, [](T x, T y) { return std::fmod(x, y); });
      else
        return integerRemainder(ctx, loop, out, a, b, kind_ == BinaryKind::Mod);
      break;
    }
    return Status();
  }

  /// The remainder of a truncating division (the dividend's sign), moved to the divisor's
  /// sign for Mod; a zero divisor is an error naming the first output position it hits.
  template <class T>
  Status integerRemainder(const ExecContext &ctx, const Loop<3> &loop, T *out, const T *a,
                          const T *b, bool divisorSign) const {
    std::atomic<int64_t> firstZero{std::numeric_limits<int64_t>::max()};
    forEachRun(loop, [&](int64_t position, int64_t n, const std::array<int64_t, 3> &off,
                         const std::array<int64_t, 3> &st) {
      T *o = out + off[0];
      const T *x = a + off[1], *y = b + off[2];
      for (int64_t i = 0; i < n; ++i) {
        T divisor = y[i * st[2]], dividend = x[i * st[1]];
        if (divisor == 0) {
          int64_t at = position + i, seen = firstZero.load();
          while (at < seen && !firstZero.compare_exchange_weak(seen, at)) {
          }
          o[i * st[0]] = 0;
          continue;
        }
        if (std::is_signed_v<T> && divisor == T(-1)) { // INT_MIN % -1 traps; it is 0
          o[i * st[0]] = 0;
          continue;
        }
        T r = T(dividend % divisor);
        if (divisorSign && r != 0 && ((r < 0) != (divisor < 0)))
          r = T(r + divisor);
        o[i * st[0]] = r;
      }
    });
    int64_t at = firstZero.load();
    if (at != std::numeric_limits<int64_t>::max())
      return fail("integer modulo by zero at output position " +
                  indexString(ctx.shape(outputs[0]), at) + " (divisor " + describe(ctx, inputs[1]) +
                  ")");
    return Status();
  }

  /// x^y; a broadcast exponent of 2 / 0.5 / 1 (the LayerNorm decompositions') is exact arithmetic.
  template <class T> static void floatPow(const Loop<3> &loop, T *out, const T *a, const T *b) {
    forEachRun(loop, [&](int64_t, int64_t n, const std::array<int64_t, 3> &off,
                         const std::array<int64_t, 3> &st) {
      T *o = out + off[0];
      const T *x = a + off[1], *y = b + off[2];
      if (st[2] == 0 && st[1] == 1 && (*y == T(2) || *y == T(1) || *y == T(0.5))) {
        T e = *y;
        if (e == T(2))
          for (int64_t i = 0; i < n; ++i)
            o[i] = x[i] * x[i];
        else if (e == T(1))
          for (int64_t i = 0; i < n; ++i)
            o[i] = x[i];
        else
          for (int64_t i = 0; i < n; ++i)
            o[i] = std::sqrt(x[i]);
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        o[i * st[0]] = std::pow(x[i * st[1]], y[i * st[2]]);
    });
  }

  /// Truncating division; a zero divisor is an error naming the first output position it hits.
  template <class T>
  Status integerDivide(const ExecContext &ctx, const Loop<3> &loop, T *out, const T *a,
                       const T *b) const {
    std::atomic<int64_t> firstZero{std::numeric_limits<int64_t>::max()};
    forEachRun(loop, [&](int64_t position, int64_t n, const std::array<int64_t, 3> &off,
                         const std::array<int64_t, 3> &st) {
      T *o = out + off[0];
      const T *x = a + off[1], *y = b + off[2];
      for (int64_t i = 0; i < n; ++i) {
        T divisor = y[i * st[2]], dividend = x[i * st[1]];
        if (divisor == 0) {
          int64_t at = position + i, seen = firstZero.load();
          while (at < seen && !firstZero.compare_exchange_weak(seen, at)) {
          }
          o[i * st[0]] = 0;
        } else if (std::is_signed_v<T> && divisor == T(-1)) { // INT_MIN / -1 traps; wraps
          o[i * st[0]] = wrapNeg(dividend);
        } else {
          o[i * st[0]] = T(dividend / divisor);
        }
      }
    });
    int64_t at = firstZero.load();
    if (at != std::numeric_limits<int64_t>::max())
      return fail("integer division by zero at output position " +
                  indexString(ctx.shape(outputs[0]), at) + " (divisor " + describe(ctx, inputs[1]) +
                  ")");
    return Status();
  }

  BinaryKind kind_;
};

/// out[i] = op(in[i]) over a Loop<2> (out, in).
template <class R, class T, class Op>
void unaryLoop(const Loop<2> &loop, R *out, const T *in, Op op, int64_t cost = 1) {
  forEachRun(
      loop,
      [&](int64_t, int64_t n, const std::array<int64_t, 2> &off, const std::array<int64_t, 2> &st) {
        R *o = out + off[0];
        const T *x = in + off[1];
        if (st[0] == 1 && st[1] == 1) {
          for (int64_t i = 0; i < n; ++i)
            o[i] = op(x[i]);
        } else {
          for (int64_t i = 0; i < n; ++i)
            o[i * st[0]] = op(x[i * st[1]]);
        }
      },
      cost);
}

class UnaryStep final : public GenericStep {
public:
  explicit UnaryStep(UnaryKind kind) : kind_(kind) {}
  std::string kind() const override { return unaryName(kind_); }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    DType type = ctx.dtype(in);
    bool integerOk = kind_ == UnaryKind::Neg || kind_ == UnaryKind::Abs ||
                     kind_ == UnaryKind::Relu || kind_ == UnaryKind::Sign;
    if (kind_ == UnaryKind::Not ? type != DType::Bool
                                : !(isElementwiseFloat(type) || (integerOk && isInteger(type))))
      return fail(std::string("does not take ") + dtypeName(type) + " (input " + describe(ctx, in) +
                  ")");
    if (Status s = checkDType(ctx, out, isTest() ? DType::Bool : type, "the output"); !s.ok())
      return s;
    if (Status s = checkShape(ctx, out, ctx.shape(in)); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(ctx.shape(out)), inStrides = ctx.strides(in);
    Loop<2> loop = makeLoop<2>(ctx.shape(out), {&outStrides, &inStrides});
    if (loop.total == 0)
      return Status();
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (isFloatElement<T>)
        if (isTest())
          return test<T>(loop, ctx.data<uint8_t>(out), ctx.data<T>(in));
      compute<T>(loop, ctx.data<T>(out), ctx.data<T>(in));
    });
    return Status();
  }

private:
  bool isTest() const {
    return kind_ == UnaryKind::IsNaN || kind_ == UnaryKind::IsInf ||
           kind_ == UnaryKind::IsPosInf || kind_ == UnaryKind::IsNegInf;
  }

  template <class T> void test(const Loop<2> &loop, uint8_t *out, const T *in) const {
    constexpr T inf = std::numeric_limits<T>::infinity();
    switch (kind_) {
    case UnaryKind::IsNaN:
      return unaryLoop(loop, out, in, [](T x) { return uint8_t(x != x); });
    case UnaryKind::IsInf:
      return unaryLoop(loop, out, in, [=](T x) { return uint8_t(x == inf || x == -inf); });
    case UnaryKind::IsPosInf:
      return unaryLoop(loop, out, in, [=](T x) { return uint8_t(x == inf); });
    case UnaryKind::IsNegInf:
      return unaryLoop(loop, out, in, [=](T x) { return uint8_t(x == -inf); });
    default:
      return;
    }
  }

  template <class T> void compute(const Loop<2> &loop, T *out, const T *in) const {
    if constexpr (isFloatElement<T>) {
      switch (kind_) {
      case UnaryKind::Neg:
        return unaryLoop(loop, out, in, [](T x) { return -x; });
      case UnaryKind::Abs:
        return unaryLoop(loop, out, in, [](T x) { return std::fabs(x); });
      case UnaryKind::Exp:
        return unaryLoop(
            loop, out, in, [](T x) { return std::exp(x); }, 8);
      case UnaryKind::Log:
        return unaryLoop(
            loop, out, in, [](T x) { return std::log(x); }, 8);
      case UnaryKind::Erf:
        return unaryLoop(
            loop, out, in, [](T x) { return std::erf(x); }, 8);
      case UnaryKind::Tanh:
        return unaryLoop(
            loop, out, in, [](T x) { return std::tanh(x); }, 8);
      case UnaryKind::Sqrt:
        return unaryLoop(loop, out, in, [](T x) { return std::sqrt(x); });
      case UnaryKind::Rsqrt:
        return unaryLoop(loop, out, in, [](T x) { return T(1) / std::sqrt(x); });
      case UnaryKind::Reciprocal:
        return unaryLoop(loop, out, in, [](T x) { return T(1) / x; });
      case UnaryKind::Relu:
        return unaryLoop(loop, out, in, [](T x) { return x < T(0) ? T(0) : x; });
      case UnaryKind::Sigmoid:
        return unaryLoop(
            loop, out, in, [](T x) { return T(1) / (T(1) + std::exp(-x)); }, 8);
      case UnaryKind::Ceil:
        return unaryLoop(loop, out, in, [](T x) { return std::ceil(x); });
      case UnaryKind::Floor:
        return unaryLoop(loop, out, in, [](T x) { return std::floor(x); });
      case UnaryKind::Sign: // NaN stays NaN; -0 gives 0, as numpy
        return unaryLoop(loop, out, in, [](T x) {
          return x > T(0) ? T(1) : x < T(0) ? T(-1) : x == T(0) ? T(0) : x;
        });
      default:
        return;
      }
    } else {
      switch (kind_) {
      case UnaryKind::Neg:
        return unaryLoop(loop, out, in, [](T x) { return wrapNeg(x); });
      case UnaryKind::Abs:
        return unaryLoop(loop, out, in, [](T x) { return x < T(0) ? wrapNeg(x) : x; });
      case UnaryKind::Relu:
        return unaryLoop(loop, out, in, [](T x) { return x < T(0) ? T(0) : x; });
      case UnaryKind::Not:
        return unaryLoop(loop, out, in, [](T x) { return T(x == 0); });
      case UnaryKind::Sign:
        return unaryLoop(loop, out, in, [](T x) { return T((x > T(0)) - (x < T(0))); });
      default:
        return;
      }
    }
  }

  UnaryKind kind_;
};

/// ONNX Cast of one element: float to integer truncates toward zero (NaN is
/// 0, out of range saturates to int64 first, as the reference interpreter).
template <class To, class From> To convertElement(From x) {
  if constexpr (isFloatElement<From> && !isFloatElement<To>) {
    double t = std::trunc(double(x));
    t = std::isnan(t) ? 0.0 : std::clamp(t, -9.2233720368547758e18, 9.2233720368547748e18);
    return To(int64_t(t));
  } else {
    return To(x);
  }
}

class CastStep final : public GenericStep {
public:
  std::string kind() const override { return "cast"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    if (Status s = checkShape(ctx, out, ctx.shape(in)); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(ctx.shape(out)), inStrides = ctx.strides(in);
    Loop<2> loop = makeLoop<2>(ctx.shape(out), {&outStrides, &inStrides});
    if (loop.total == 0)
      return Status();
    DType to = ctx.dtype(out);
    visitDType(ctx.dtype(in), [&](auto fromTag) {
      using From = typename decltype(fromTag)::type;
      const From *src = ctx.data<From>(in);
      if (to == DType::Bool) // anything to bool is x != 0
        return unaryLoop(loop, ctx.data<uint8_t>(out), src, [](From x) { return uint8_t(x != 0); });
      visitDType(to, [&](auto toTag) {
        using To = typename decltype(toTag)::type;
        unaryLoop(loop, ctx.data<To>(out), src, [](From x) { return convertElement<To>(x); });
      });
    });
    return Status();
  }
};

class WhereStep final : public GenericStep {
public:
  std::string kind() const override { return "where"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId cond = inputs[0], a = inputs[1], b = inputs[2], out = outputs[0];
    if (Status s = checkDType(ctx, cond, DType::Bool, "the condition"); !s.ok())
      return s;
    DType type = ctx.dtype(a);
    if (ctx.dtype(b) != type)
      return fail("branch element types differ: " + describe(ctx, a) + " and " + describe(ctx, b));
    if (Status s = checkDType(ctx, out, type, "the output"); !s.ok())
      return s;
    std::vector<Shape> strides;
    if (Status s = broadcastOperands(ctx, {cond, a, b}, out, strides); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(ctx.shape(out));
    Loop<4> loop =
        makeLoop<4>(ctx.shape(out), {&outStrides, &strides[0], &strides[1], &strides[2]});
    if (loop.total == 0)
      return Status();
    const uint8_t *c = ctx.data<uint8_t>(cond);
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T *o = ctx.data<T>(out);
      const T *x = ctx.data<T>(a), *y = ctx.data<T>(b);
      forEachRun(loop, [&](int64_t, int64_t n, const std::array<int64_t, 4> &off,
                           const std::array<int64_t, 4> &st) {
        selectRun(n, o + off[0], c + off[1], st[1], x + off[2], st[2], y + off[3], st[3]);
      });
    });
    return Status();
  }

private:
  /// Branch strides of 0 or 1 (a scalar fill value, the attention mask's case) get their own
  /// loops; both branches are loaded unconditionally so that the select vectorizes.
  template <class T>
  static void selectRun(int64_t n, T *o, const uint8_t *c, int64_t sc, const T *x, int64_t sx,
                        const T *y, int64_t sy) {
    if (sc == 1 && (sx == 0 || sx == 1) && (sy == 0 || sy == 1)) {
      if (sx == 1 && sy == 1) {
        for (int64_t i = 0; i < n; ++i) {
          T xv = x[i], yv = y[i];
          o[i] = c[i] ? xv : yv;
        }
      } else if (sx == 0 && sy == 1) {
        T xv = x[0];
        for (int64_t i = 0; i < n; ++i) {
          T yv = y[i];
          o[i] = c[i] ? xv : yv;
        }
      } else if (sx == 1 && sy == 0) {
        T yv = y[0];
        for (int64_t i = 0; i < n; ++i) {
          T xv = x[i];
          o[i] = c[i] ? xv : yv;
        }
      } else {
        T xv = x[0], yv = y[0];
        for (int64_t i = 0; i < n; ++i)
          o[i] = c[i] ? xv : yv;
      }
      return;
    }
    for (int64_t i = 0; i < n; ++i)
      o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
  }
};

// ---- Data movement ---------------------------------------------------------

/// Copies `shape` elements from src (strides srcStrides) to dst (strides dstStrides).
template <class T>
void copyStrided(const Shape &shape, T *dst, const Shape &dstStrides, const T *src,
                 const Shape &srcStrides) {
  Loop<2> loop = makeLoop<2>(shape, {&dstStrides, &srcStrides});
  forEachRun(loop, [&](int64_t, int64_t n, const std::array<int64_t, 2> &off,
                       const std::array<int64_t, 2> &st) {
    T *d = dst + off[0];
    const T *s = src + off[1];
    if (st[0] == 1 && st[1] == 1)
      std::memcpy(d, s, size_t(n) * sizeof(T));
    else if (st[0] == 1 && st[1] == 0)
      std::fill(d, d + n, *s);
    else
      for (int64_t i = 0; i < n; ++i)
        d[i * st[0]] = s[i * st[1]];
  });
}

class CopyStep final : public GenericStep {
public:
  std::string kind() const override { return "copy"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    if (Status s = checkDType(ctx, out, ctx.dtype(in), "the output"); !s.ok())
      return s;
    Shape shape = ctx.shape(in);
    if (Status s = checkShape(ctx, out, shape); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(shape), inStrides = ctx.strides(in);
    visitDType(ctx.dtype(in), [&](auto tag) {
      using T = typename decltype(tag)::type;
      copyStrided(shape, ctx.data<T>(out), outStrides, ctx.data<T>(in), inStrides);
    });
    return Status();
  }
};

class ConcatStep final : public GenericStep {
public:
  explicit ConcatStep(int axis) : axis_(axis) {}
  std::string kind() const override { return "concat"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId out = outputs[0];
    Shape outShape = ctx.shape(out);
    int rank = int(outShape.size());
    int axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      return fail("axis " + std::to_string(axis_) + " is out of range for the output " +
                  describe(ctx, out));
    if (inputs.empty())
      return fail("has no inputs");
    int64_t total = 0;
    for (TensorId in : inputs) {
      if (Status s = checkDType(ctx, in, ctx.dtype(out), "the input"); !s.ok())
        return s;
      Shape shape = ctx.shape(in);
      bool match = int(shape.size()) == rank;
      for (int d = 0; match && d < rank; ++d)
        match = d == axis || shape[d] == outShape[d];
      if (!match)
        return fail("the input " + describe(ctx, in) + " does not match the output " +
                    describe(ctx, out) + " outside axis " + std::to_string(axis));
      total += shape[axis];
    }
    if (total != outShape[axis])
      return fail("the inputs' sizes along axis " + std::to_string(axis) + " add up to " +
                  std::to_string(total) + ", the output " + describe(ctx, out) + " has " +
                  std::to_string(outShape[axis]));
    Shape outStrides = contiguousStrides(outShape);
    visitDType(ctx.dtype(out), [&](auto tag) {
      using T = typename decltype(tag)::type;
      int64_t offset = 0;
      for (TensorId in : inputs) {
        Shape shape = ctx.shape(in);
        if (product(shape) != 0)
          copyStrided(shape, ctx.data<T>(out) + offset * outStrides[axis], outStrides,
                      ctx.data<T>(in), ctx.strides(in));
        offset += shape[axis];
      }
    });
    return Status();
  }

private:
  int axis_;
};

/// Gather, GatherND and GatherElements: data picked at integer indices.
class IndexingStep : public GenericStep {
public:
  /// Reads only what it picks (once each: output-sized), not the whole data
  /// (an embedding table is 94 MB in BERT-base).
  Work work(const ExecContext &ctx) const override {
    Work w = Step::work(ctx);
    const TensorId data = inputs[0], out = outputs[0];
    w.bytes += double(ctx.numElements(out)) * dtypeBytes(ctx.dtype(out)) -
               double(ctx.numElements(data)) * dtypeBytes(ctx.dtype(data));
    return w;
  }

protected:
  /// The tensors exist, the indices are i64 or i32, the output has the data's dtype.
  Status checkIndexing(const ExecContext &ctx) const {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    const TensorId data = inputs[0], indices = inputs[1], out = outputs[0];
    DType indexType = ctx.dtype(indices);
    if (indexType != DType::I64 && indexType != DType::I32)
      return fail("the indices " + describe(ctx, indices) + " should be i64 or i32");
    return checkDType(ctx, out, ctx.dtype(data), "the output");
  }
};

/// Row r of the contiguous dst = the `innerShape` elements of src at element
/// offset rowOffset(r), `innerStrides` apart (Gather's and GatherND's copy):
/// one memcpy a row where they are contiguous, one load a row where a row is
/// one element (the attention mask's GatherND). OpenMP over the rows when large.
template <typename T, typename RowOffset>
void copyRows(const T *src, T *dst, int64_t rows, const Shape &innerShape,
              const Shape &innerStrides, RowOffset rowOffset) {
  const int64_t inner = product(innerShape);
  if (inner == 1) {
#pragma omp parallel for schedule(static) if (rows > kParallelThreshold)
    for (int64_t row = 0; row < rows; ++row)
      dst[row] = src[rowOffset(row)];
    return;
  }
  const Shape innerFlat = contiguousStrides(innerShape);
  const Loop<2> innerLoop = makeLoop<2>(innerShape, {&innerFlat, &innerStrides});
  const bool innerContiguous = innerLoop.shape.size() == 1 && innerLoop.strides[0][1] == 1;
#pragma omp parallel for schedule(static) if (rows * inner > kParallelThreshold && rows > 1)
  for (int64_t row = 0; row < rows; ++row) {
    const T *from = src + rowOffset(row);
    T *to = dst + row * inner;
    if (innerContiguous) {
      std::memcpy(to, from, size_t(inner) * sizeof(T));
      continue;
    }
    runRange(innerLoop, 0, inner,
             [&](int64_t, int64_t n, const std::array<int64_t, 2> &off,
                 const std::array<int64_t, 2> &st) {
               for (int64_t i = 0; i < n; ++i)
                 to[off[0] + i * st[0]] = from[off[1] + i * st[1]];
             });
  }
}

class GatherStep final : public IndexingStep {
public:
  explicit GatherStep(int axis) : axis_(axis) {}
  std::string kind() const override { return "gather"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkIndexing(ctx); !s.ok())
      return s;
    TensorId data = inputs[0], indices = inputs[1], out = outputs[0];
    Shape dataShape = ctx.shape(data), indexShape = ctx.shape(indices);
    int rank = int(dataShape.size());
    int axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      return fail("axis " + std::to_string(axis_) + " is out of range for the data " +
                  describe(ctx, data));
    Shape expected(dataShape.begin(), dataShape.begin() + axis);
    expected.insert(expected.end(), indexShape.begin(), indexShape.end());
    expected.insert(expected.end(), dataShape.begin() + axis + 1, dataShape.end());
    if (Status s = checkShape(ctx, out, expected); !s.ok())
      return s;

    // Read and check every index before writing anything.
    const int64_t dim = dataShape[axis], count = product(indexShape);
    std::vector<int64_t> index;
    const BadIndex bad = readIndices(ctx, indices, dim, index);
    if (bad.position >= 0)
      return fail("index " + std::to_string(bad.value) + " at position " +
                  indexString(indexShape, bad.position) + " of the indices " + describe(ctx, indices) +
                  " is out of range [" + std::to_string(-dim) + ", " + std::to_string(dim) +
                  ") for axis " + std::to_string(axis) + " of the data " + describe(ctx, data));

    Shape outerShape(dataShape.begin(), dataShape.begin() + axis);
    Shape innerShape(dataShape.begin() + axis + 1, dataShape.end());
    int64_t outer = product(outerShape), inner = product(innerShape);
    if (outer * count * inner == 0)
      return Status();
    Shape dataStrides = ctx.strides(data);
    Shape outerStrides(dataStrides.begin(), dataStrides.begin() + axis);
    Shape innerStrides(dataStrides.begin() + axis + 1, dataStrides.end());
    int64_t axisStride = dataStrides[axis];
    // The data offset of each outer position.
    std::vector<int64_t> outerOffsets(static_cast<size_t>(outer));
    Shape outerFlat = contiguousStrides(outerShape);
    runRange(makeLoop<2>(outerShape, {&outerFlat, &outerStrides}), 0, outer,
             [&](int64_t position, int64_t n, const std::array<int64_t, 2> &off,
                 const std::array<int64_t, 2> &st) {
               for (int64_t i = 0; i < n; ++i)
                 outerOffsets[size_t(position + i)] = off[1] + i * st[1];
             });
    visitDType(ctx.dtype(data), [&](auto tag) {
      using T = typename decltype(tag)::type;
      copyRows(ctx.data<T>(data), ctx.data<T>(out), outer * count, innerShape, innerStrides,
               [&](int64_t row) {
                 return outerOffsets[size_t(row / count)] + index[size_t(row % count)] * axisStride;
               });
    });
    return Status();
  }

private:
  int axis_;
};

/// The first (lowest) flat position of a bad index seen by any thread, and its value.
class FirstBadIndex {
public:
  void note(int64_t position, int64_t value) {
    if (position >= first_.load(std::memory_order_relaxed))
      return; // an earlier one is known
#pragma omp critical(octet_first_bad_index)
    if (position < first_.load()) {
      first_.store(position);
      value_ = value;
    }
  }
  bool any() const { return first_.load() != std::numeric_limits<int64_t>::max(); }
  int64_t position() const { return first_.load(); }
  int64_t value() const { return value_; }

private:
  std::atomic<int64_t> first_{std::numeric_limits<int64_t>::max()};
  int64_t value_ = 0;
};

class GatherNDStep final : public IndexingStep {
public:
  explicit GatherNDStep(int batchDims) : batchDims_(batchDims) {}
  std::string kind() const override { return "gather_nd"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkIndexing(ctx); !s.ok())
      return s;
    TensorId data = inputs[0], indices = inputs[1], out = outputs[0];
    const DType indexType = ctx.dtype(indices);
    Shape dataShape = ctx.shape(data), indexShape = ctx.shape(indices);
    int64_t r = int64_t(dataShape.size()), q = int64_t(indexShape.size()), b = batchDims_;
    if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q))
      return fail("batch_dims " + std::to_string(b) + " must be less than the ranks of the data " +
                  describe(ctx, data) + " and the indices " + describe(ctx, indices));
    int64_t tuple = indexShape.back();
    if (tuple < 1 || tuple > r - b)
      return fail("index tuples of " + std::to_string(tuple) + " entries (indices " +
                  describe(ctx, indices) + ") do not fit the data " + describe(ctx, data) +
                  " after " + std::to_string(b) + " batch dims");
    for (int64_t d = 0; d < b; ++d)
      if (indexShape[size_t(d)] != dataShape[size_t(d)])
        return fail("batch dim " + std::to_string(d) + " differs: indices " +
                    describe(ctx, indices) + ", data " + describe(ctx, data));
    Shape expected(indexShape.begin(), indexShape.end() - 1);
    expected.insert(expected.end(), dataShape.begin() + b + tuple, dataShape.end());
    if (Status s = checkShape(ctx, out, expected); !s.ok())
      return s;

    int64_t rows = product(Shape(indexShape.begin(), indexShape.end() - 1));
    Shape innerShape(dataShape.begin() + b + tuple, dataShape.end());
    int64_t inner = product(innerShape);
    if (rows * inner == 0)
      return Status();
    Shape dataStrides = ctx.strides(data);
    // The data offset of each batch position.
    Shape batchShape(dataShape.begin(), dataShape.begin() + b);
    Shape batchStrides(dataStrides.begin(), dataStrides.begin() + b);
    int64_t batches = product(batchShape), perBatch = rows / batches;
    std::vector<int64_t> batchOffsets(size_t(batches), 0);
    Shape batchFlat = contiguousStrides(batchShape);
    runRange(makeLoop<2>(batchShape, {&batchFlat, &batchStrides}), 0, batches,
             [&](int64_t position, int64_t n, const std::array<int64_t, 2> &off,
                 const std::array<int64_t, 2> &st) {
               for (int64_t i = 0; i < n; ++i)
                 batchOffsets[size_t(position + i)] = off[1] + i * st[1];
             });

    // Every tuple's data offset, every index checked, before anything is written.
    std::vector<int64_t> offsets(static_cast<size_t>(rows));
    Shape indexStrides = ctx.strides(indices);
    int64_t tupleStride = indexStrides.back();
    Shape rowShape(indexShape.begin(), indexShape.end() - 1);
    Shape rowStrides(indexStrides.begin(), indexStrides.end() - 1), rowFlat = contiguousStrides(rowShape);
    Loop<2> rowLoop = makeLoop<2>(rowShape, {&rowFlat, &rowStrides});
    FirstBadIndex bad;
    visitDType(indexType, [&](auto tag) {
      using I = typename decltype(tag)::type;
      const I *src = ctx.data<I>(indices);
      forEachRun(
          rowLoop,
          [&](int64_t position, int64_t n, const std::array<int64_t, 2> &off,
              const std::array<int64_t, 2> &st) {
            for (int64_t i = 0; i < n; ++i) {
              int64_t row = position + i;
              const I *t = src + off[1] + i * st[1];
              int64_t offset = batchOffsets[size_t(row / perBatch)];
              for (int64_t k = 0; k < tuple; ++k) {
                int64_t v = int64_t(t[k * tupleStride]), dim = dataShape[size_t(b + k)];
                if (v < -dim || v >= dim) {
                  bad.note(row * tuple + k, v);
                  v = 0;
                }
                offset += (v < 0 ? v + dim : v) * dataStrides[size_t(b + k)];
              }
              offsets[size_t(row)] = offset;
            }
          },
          tuple);
    });
    if (bad.any()) {
      int64_t k = bad.position() % tuple;
      return fail("index " + std::to_string(bad.value()) + " at position " +
                  indexString(indexShape, bad.position()) + " of the indices " +
                  describe(ctx, indices) + " is out of range [" +
                  std::to_string(-dataShape[size_t(b + k)]) + ", " +
                  std::to_string(dataShape[size_t(b + k)]) + ") for dim " +
                  std::to_string(b + k) + " of the data " + describe(ctx, data));
    }

    Shape innerStrides(dataStrides.begin() + b + tuple, dataStrides.end());
    visitDType(ctx.dtype(data), [&](auto tag) {
      using T = typename decltype(tag)::type;
      copyRows(ctx.data<T>(data), ctx.data<T>(out), rows, innerShape, innerStrides,
               [&](int64_t row) { return offsets[size_t(row)]; });
    });
    return Status();
  }

private:
  int batchDims_;
};

class GatherElementsStep final : public IndexingStep {
public:
  explicit GatherElementsStep(int axis) : axis_(axis) {}
  std::string kind() const override { return "gather_elements"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkIndexing(ctx); !s.ok())
      return s;
    TensorId data = inputs[0], indices = inputs[1], out = outputs[0];
    const DType indexType = ctx.dtype(indices);
    Shape dataShape = ctx.shape(data), indexShape = ctx.shape(indices);
    int rank = int(dataShape.size());
    int axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      return fail("axis " + std::to_string(axis_) + " is out of range for the data " +
                  describe(ctx, data));
    if (int(indexShape.size()) != rank)
      return fail("the indices " + describe(ctx, indices) + " should have the rank of the data " +
                  describe(ctx, data));
    for (int d = 0; d < rank; ++d)
      if (d != axis && indexShape[size_t(d)] > dataShape[size_t(d)])
        return fail("dim " + std::to_string(d) + " of the indices " + describe(ctx, indices) +
                    " exceeds the data's " + describe(ctx, data));
    if (Status s = checkShape(ctx, out, indexShape); !s.ok())
      return s;
    Shape outStrides = contiguousStrides(indexShape), indexStrides = ctx.strides(indices);
    Shape dataStrides = ctx.strides(data);
    int64_t dim = dataShape[size_t(axis)], axisStride = dataStrides[size_t(axis)];
    dataStrides[size_t(axis)] = 0; // the index gives the position along the axis
    Loop<3> loop = makeLoop<3>(indexShape, {&outStrides, &indexStrides, &dataStrides});
    if (loop.total == 0)
      return Status();
    FirstBadIndex bad;
    visitDType(indexType, [&](auto indexTag) {
      using I = typename decltype(indexTag)::type;
      const I *idx = ctx.data<I>(indices);
      visitDType(ctx.dtype(data), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T *src = ctx.data<T>(data);
        T *dst = ctx.data<T>(out);
        forEachRun(loop, [&](int64_t position, int64_t n, const std::array<int64_t, 3> &off,
                             const std::array<int64_t, 3> &st) {
          for (int64_t i = 0; i < n; ++i) {
            int64_t v = int64_t(idx[off[1] + i * st[1]]);
            if (v < -dim || v >= dim) {
              bad.note(position + i, v);
              continue;
            }
            dst[off[0] + i * st[0]] = src[off[2] + i * st[2] + (v < 0 ? v + dim : v) * axisStride];
          }
        });
      });
    });
    if (bad.any())
      return fail("index " + std::to_string(bad.value()) + " at position " +
                  indexString(indexShape, bad.position()) + " of the indices " +
                  describe(ctx, indices) + " is out of range [" + std::to_string(-dim) + ", " +
                  std::to_string(dim) + ") for axis " + std::to_string(axis) + " of the data " +
                  describe(ctx, data));
    return Status();
  }

private:
  int axis_;
};

// ---- Reductions and scans --------------------------------------------------

/// Accumulates one reduction: float sums in double, integer sums wrapping, max / min
/// NaN-propagating.
template <class T> struct Reducer {
  static constexpr bool kFloat = isFloatElement<T>;
  using Sum = std::conditional_t<kFloat, double, uint64_t>;

  static Sum sumRun(const T *x, int64_t n, int64_t stride) {
    if (stride == 1) {
      Sum lanes[8] = {};
      int64_t i = 0;
      for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; ++l)
          lanes[l] += Sum(x[i + l]);
      Sum s = 0;
      for (int l = 0; l < 8; ++l)
        s += lanes[l];
      for (; i < n; ++i)
        s += Sum(x[i]);
      return s;
    }
    Sum s = 0;
    for (int64_t i = 0; i < n; ++i)
      s += Sum(x[i * stride]);
    return s;
  }
  static T extremeRun(const T *x, int64_t n, int64_t stride, bool isMax, T acc) {
    if (isMax)
      for (int64_t i = 0; i < n; ++i)
        acc = maxOf(acc, x[i * stride]);
    else
      for (int64_t i = 0; i < n; ++i)
        acc = minOf(acc, x[i * stride]);
    return acc;
  }
};

class ReduceStep final : public GenericStep {
public:
  ReduceStep(ReduceKind kind, std::vector<int> axes) : kind_(kind), axes_(std::move(axes)) {}
  std::string kind() const override { return reduceName(kind_); }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    DType type = ctx.dtype(in);
    if (!isFloat(type) && !isInteger(type))
      return fail("does not take " + describe(ctx, in));
    if (Status s = checkDType(ctx, out, type, "the output"); !s.ok())
      return s;
    Shape shape = ctx.shape(in), strides = ctx.strides(in);
    int rank = int(shape.size());
    std::vector<bool> reduced(size_t(rank), false);
    for (int axis : axes_) {
      int a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank || reduced[size_t(a)])
        return fail("axis " + std::to_string(axis) + " is out of range or repeated for the input " +
                    describe(ctx, in));
      reduced[size_t(a)] = true;
    }
    Shape keptShape, keptStrides, squeezed, reducedShape, reducedStrides;
    for (int d = 0; d < rank; ++d) {
      if (reduced[size_t(d)]) {
        keptShape.push_back(1);
        keptStrides.push_back(0);
        reducedShape.push_back(shape[size_t(d)]);
        reducedStrides.push_back(strides[size_t(d)]);
      } else {
        keptShape.push_back(shape[size_t(d)]);
        keptStrides.push_back(strides[size_t(d)]);
        squeezed.push_back(shape[size_t(d)]);
      }
    }
    Shape outShape = ctx.shape(out);
    if (outShape != keptShape && outShape != squeezed)
      return fail("the output " + describe(ctx, out) + " should have shape " +
                  shapeString(keptShape) + " or " + shapeString(squeezed));
    Shape outStrides = contiguousStrides(keptShape);
    Loop<2> lanes = makeLoop<2>(keptShape, {&outStrides, &keptStrides});
    Loop<1> block = makeLoop<1>(reducedShape, {&reducedStrides});
    if (lanes.total == 0)
      return Status();
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      compute<T>(lanes, block, ctx.data<T>(out), ctx.data<T>(in));
    });
    return Status();
  }

private:
  template <class T>
  void compute(const Loop<2> &lanes, const Loop<1> &block, T *out, const T *in) const {
    using R = Reducer<T>;
    int64_t count = block.total;
    bool extreme = kind_ == ReduceKind::Max || kind_ == ReduceKind::Min;
    bool isMax = kind_ == ReduceKind::Max;
    auto reduceOne = [&](const T *x) -> T {
      if (extreme) {
        if (count == 0) { // ONNX: an empty max is the lowest value, an empty min the highest
          if constexpr (R::kFloat)
            return isMax ? T(-std::numeric_limits<T>::infinity())
                         : std::numeric_limits<T>::infinity();
          else
            return isMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
        }
        T acc = *x;
        if (block.shape.size() == 1)
          return R::extremeRun(x, count, block.strides[0][0], isMax, acc);
        runRange(block, 0, count,
                 [&](int64_t, int64_t n, const std::array<int64_t, 1> &off,
                     const std::array<int64_t, 1> &st) {
                   acc = R::extremeRun(x + off[0], n, st[0], isMax, acc);
                 });
        return acc;
      }
      typename R::Sum sum = 0;
      if (count == 0) {
      } else if (block.shape.size() == 1) {
        sum = R::sumRun(x, count, block.strides[0][0]);
      } else {
        runRange(block, 0, count,
                 [&](int64_t, int64_t n, const std::array<int64_t, 1> &off,
                     const std::array<int64_t, 1> &st) { sum += R::sumRun(x + off[0], n, st[0]); });
      }
      if (kind_ == ReduceKind::Sum)
        return T(sum);
      if constexpr (R::kFloat)
        return T(sum / double(count));
      else
        return count ? T(int64_t(sum) / count) : T(0);
    };
    forEachRun(
        lanes,
        [&](int64_t, int64_t n, const std::array<int64_t, 2> &off,
            const std::array<int64_t, 2> &st) {
          for (int64_t i = 0; i < n; ++i)
            out[off[0] + i * st[0]] = reduceOne(in + off[1] + i * st[1]);
        },
        std::max<int64_t>(count, 1));
  }

  ReduceKind kind_;
  std::vector<int> axes_;
};

/// The lanes along `axis` of a tensor: a loop over every other dim, for (out, in).
struct Lanes {
  Loop<2> loop;
  int64_t length = 0, outStride = 0, inStride = 0;
};

Lanes makeLanes(const Shape &shape, const Shape &inStrides, int axis) {
  Shape outStrides = contiguousStrides(shape);
  Lanes lanes;
  lanes.length = shape[size_t(axis)];
  lanes.outStride = outStrides[size_t(axis)];
  lanes.inStride = inStrides[size_t(axis)];
  Shape laneShape = shape, laneOut = outStrides, laneIn = inStrides;
  laneShape.erase(laneShape.begin() + axis);
  laneOut.erase(laneOut.begin() + axis);
  laneIn.erase(laneIn.begin() + axis);
  lanes.loop = makeLoop<2>(laneShape, {&laneOut, &laneIn});
  return lanes;
}

/// Checks a one-axis op's operands: same dtype, same shape, the axis in range (normalized).
class LaneStep : public GenericStep {
protected:
  explicit LaneStep(int axis) : axis_(axis) {}

  Status checkLaneOperands(const ExecContext &ctx, int &axis) const {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    if (Status s = checkDType(ctx, out, ctx.dtype(in), "the output"); !s.ok())
      return s;
    if (Status s = checkShape(ctx, out, ctx.shape(in)); !s.ok())
      return s;
    int rank = ctx.rank(in);
    axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank)
      return fail("axis " + std::to_string(axis_) + " is out of range for the input " +
                  describe(ctx, in));
    return Status();
  }

  int axis_;
};

class CumSumStep final : public LaneStep {
public:
  CumSumStep(int axis, bool exclusive, bool reverse)
      : LaneStep(axis), exclusive_(exclusive), reverse_(reverse) {}
  std::string kind() const override { return "cumsum"; }

  Status run(const ExecContext &ctx) const override {
    int axis = 0;
    if (Status s = checkLaneOperands(ctx, axis); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    DType type = ctx.dtype(in);
    if (!isFloat(type) && !isInteger(type))
      return fail("does not take " + describe(ctx, in));
    if (ctx.numElements(in) == 0)
      return Status();
    Lanes lanes = makeLanes(ctx.shape(in), ctx.strides(in), axis);
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using Sum = typename Reducer<T>::Sum;
      T *o = ctx.data<T>(out);
      const T *x = ctx.data<T>(in);
      int64_t len = lanes.length, so = lanes.outStride, si = lanes.inStride;
      bool exclusive = exclusive_, reverse = reverse_;
      forEachRun(
          lanes.loop,
          [&](int64_t, int64_t n, const std::array<int64_t, 2> &off,
              const std::array<int64_t, 2> &st) {
            for (int64_t lane = 0; lane < n; ++lane) {
              T *lo = o + off[0] + lane * st[0];
              const T *li = x + off[1] + lane * st[1];
              Sum sum = 0;
              for (int64_t step = 0; step < len; ++step) {
                int64_t k = reverse ? len - 1 - step : step;
                Sum v = Sum(li[k * si]);
                if (!exclusive)
                  sum += v;
                lo[k * so] = T(sum);
                if (exclusive)
                  sum += v;
              }
            }
          },
          len);
    });
    return Status();
  }

private:
  bool exclusive_, reverse_;
};

class SoftmaxStep final : public LaneStep {
public:
  explicit SoftmaxStep(int axis) : LaneStep(axis) {}
  std::string kind() const override { return "softmax"; }

  Status run(const ExecContext &ctx) const override {
    int axis = 0;
    if (Status s = checkLaneOperands(ctx, axis); !s.ok())
      return s;
    TensorId in = inputs[0], out = outputs[0];
    DType type = ctx.dtype(in);
    if (!isFloat(type))
      return fail("takes f32 or f64, not " + describe(ctx, in));
    if (ctx.numElements(in) == 0)
      return Status();
    Lanes lanes = makeLanes(ctx.shape(in), ctx.strides(in), axis);
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<T>)
        compute<T>(lanes, ctx.data<T>(out), ctx.data<T>(in));
    });
    return Status();
  }

private:
  /// exp(x - max) / sum: the exponentials go to the output lane, then scale in place.
  template <class T> static void compute(const Lanes &lanes, T *out, const T *in) {
    int64_t len = lanes.length, so = lanes.outStride, si = lanes.inStride;
    forEachRun(
        lanes.loop,
        [&](int64_t, int64_t n, const std::array<int64_t, 2> &off,
            const std::array<int64_t, 2> &st) {
          for (int64_t lane = 0; lane < n; ++lane) {
            T *o = out + off[0] + lane * st[0];
            const T *x = in + off[1] + lane * st[1];
            T max = -std::numeric_limits<T>::infinity();
            for (int64_t i = 0; i < len; ++i)
              max = std::max(max, x[i * si]);
            double sum = 0;
            for (int64_t i = 0; i < len; ++i) {
              T e = std::exp(x[i * si] - max);
              o[i * so] = e;
              sum += double(e);
            }
            T scale = T(1.0 / sum);
            for (int64_t i = 0; i < len; ++i)
              o[i * so] *= scale;
          }
        },
        len * 8);
  }
};

// ---- Index tensors ---------------------------------------------------------

class RangeStep final : public GenericStep {
public:
  RangeStep(ScalarId start, ScalarId delta) : start_(start), delta_(delta) {}
  std::string kind() const override { return "range"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId out = outputs[0];
    for (ScalarId id : {start_, delta_})
      if (id < 0 || size_t(id) >= ctx.scalars_.size())
        return fail("scalar id " + std::to_string(id) + " is not in the plan");
    if (ctx.rank(out) != 1)
      return fail("the output " + describe(ctx, out) + " should be 1-D");
    DType type = ctx.dtype(out);
    if (type != DType::I64 && type != DType::I32 && type != DType::I16 && !isFloat(type))
      return fail("the output " + describe(ctx, out) + " should be i64, i32, i16, f32 or f64");
    int64_t start = ctx.scalar(start_), delta = ctx.scalar(delta_), n = ctx.dim(out, 0);
    visitDType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      T *o = ctx.data<T>(out);
      for (int64_t i = 0; i < n; ++i)
        o[i] = T(int64_t(uint64_t(start) + uint64_t(i) * uint64_t(delta)));
    });
    return Status();
  }

private:
  ScalarId start_, delta_;
};

class FromElementsStep final : public GenericStep {
public:
  explicit FromElementsStep(std::vector<ScalarId> elements) : elements_(std::move(elements)) {}
  std::string kind() const override { return "from_elements"; }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId out = outputs[0];
    for (ScalarId id : elements_)
      if (id < 0 || size_t(id) >= ctx.scalars_.size())
        return fail("scalar id " + std::to_string(id) + " is not in the plan");
    if (Status s = checkShape(ctx, out, {int64_t(elements_.size())}); !s.ok())
      return s;
    DType type = ctx.dtype(out);
    if (type == DType::I64) {
      for (size_t i = 0; i < elements_.size(); ++i)
        ctx.data<int64_t>(out)[i] = ctx.scalar(elements_[i]);
    } else if (type == DType::I32) {
      for (size_t i = 0; i < elements_.size(); ++i) // wraps, as the reference interpreter
        ctx.data<int32_t>(out)[i] = int32_t(ctx.scalar(elements_[i]));
    } else {
      return fail("the output " + describe(ctx, out) + " should be i64 or i32");
    }
    return Status();
  }

private:
  std::vector<ScalarId> elements_;
};

// ---- MatMul ----------------------------------------------------------------

/// sum_k a[k * sa] * b[k * sb] with 8 partial sums when both are contiguous.
float dot(const float *a, int64_t sa, const float *b, int64_t sb, int64_t k) {
  if (sa == 1 && sb == 1) {
    float lanes[8] = {};
    int64_t i = 0;
    for (; i + 8 <= k; i += 8)
      for (int l = 0; l < 8; ++l)
        lanes[l] += a[i + l] * b[i + l];
    float s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) +
              ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
    for (; i < k; ++i)
      s += a[i] * b[i];
    return s;
  }
  float s = 0;
  for (int64_t i = 0; i < k; ++i)
    s += a[i * sa] * b[i * sb];
  return s;
}

class MatMulStep final : public GenericStep {
public:
  std::string kind() const override { return "matmul"; }
  /// 2·K multiply-adds per output element (K: A's last dim).
  Work work(const ExecContext &ctx) const override {
    Work w = Step::work(ctx);
    const int rankA = ctx.rank(inputs[0]);
    const int64_t k = rankA > 0 ? ctx.dim(inputs[0], rankA - 1) : 1;
    w.ops = 2.0 * double(k) * double(ctx.numElements(outputs[0]));
    return w;
  }

  Status run(const ExecContext &ctx) const override {
    if (Status s = checkTensors(ctx); !s.ok())
      return s;
    TensorId a = inputs[0], b = inputs[1], out = outputs[0];
    for (TensorId t : {a, b, out})
      if (Status s = checkDType(ctx, t, DType::F32, t == out ? "the output" : "the operand");
          !s.ok())
        return s;
    Shape as = ctx.shape(a), bs = ctx.shape(b), aStr = ctx.strides(a), bStr = ctx.strides(b);
    if (as.empty() || bs.empty())
      return fail("operands must have rank >= 1: " + describe(ctx, a) + " x " + describe(ctx, b));
    bool vecA = as.size() == 1, vecB = bs.size() == 1;
    if (vecA) { // [K] is a [1, K] row
      as.insert(as.begin(), 1);
      aStr.insert(aStr.begin(), 0);
    }
    if (vecB) { // [K] is a [K, 1] column
      bs.push_back(1);
      bStr.push_back(0);
    }
    int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k)
      return fail("the contraction dims differ: " + describe(ctx, a) + " x " + describe(ctx, b));
    Shape batchA(as.begin(), as.end() - 2), batchB(bs.begin(), bs.end() - 2);
    Shape batch = batchA.size() >= batchB.size() ? batchA : batchB;
    Shape stridesA, stridesB;
    {
      Shape smaller = batchA.size() >= batchB.size() ? batchB : batchA;
      size_t lead = batch.size() - smaller.size();
      for (size_t i = 0; i < smaller.size(); ++i) {
        int64_t &d = batch[lead + i];
        if (d == 1)
          d = smaller[i];
        else if (smaller[i] != 1 && smaller[i] != d)
          return fail("the batch dims do not broadcast: " + describe(ctx, a) + " x " +
                      describe(ctx, b));
      }
      broadcastStrides(batchA, Shape(aStr.begin(), aStr.end() - 2), batch, stridesA);
      broadcastStrides(batchB, Shape(bStr.begin(), bStr.end() - 2), batch, stridesB);
    }
    Shape expected = batch;
    if (!vecA)
      expected.push_back(m);
    if (!vecB)
      expected.push_back(n);
    if (Status s = checkShape(ctx, out, expected); !s.ok())
      return s;

    int64_t batches = product(batch);
    if (batches * m * n == 0)
      return Status();
    float *c = ctx.data<float>(out);
    if (k == 0) {
      std::fill(c, c + batches * m * n, 0.0f);
      return Status();
    }
    // Each batch's operand offsets.
    std::vector<int64_t> offA(static_cast<size_t>(batches)), offB(static_cast<size_t>(batches));
    Shape batchFlat = contiguousStrides(batch);
    runRange(makeLoop<3>(batch, {&batchFlat, &stridesA, &stridesB}), 0, batches,
             [&](int64_t position, int64_t cnt, const std::array<int64_t, 3> &off,
                 const std::array<int64_t, 3> &st) {
               for (int64_t i = 0; i < cnt; ++i) {
                 offA[size_t(position + i)] = off[1] + i * st[1];
                 offB[size_t(position + i)] = off[2] + i * st[2];
               }
             });
    Geometry g{m, k, n, aStr[aStr.size() - 2], aStr.back(), bStr[bStr.size() - 2], bStr.back()};
    const float *pa = ctx.data<float>(a), *pb = ctx.data<float>(b);
    constexpr int64_t kRows = 32;
    int64_t rowBlocks = (m + kRows - 1) / kRows, items = batches * rowBlocks;
    bool parallel = items > 1 && batches * m * n * k > (int64_t(1) << 18);
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (int64_t item = 0; item < items; ++item) {
      int64_t bi = item / rowBlocks, r0 = (item % rowBlocks) * kRows;
      block(g, pa + offA[size_t(bi)], pb + offB[size_t(bi)], c + bi * m * n, r0,
            std::min(m, r0 + kRows));
    }
    return Status();
  }

private:
  struct Geometry {
    int64_t m, k, n, sam, sak, sbk, sbn;
  };

  /// Rows [r0, r1) of C = A · B for one batch.
  static void block(const Geometry &g, const float *a, const float *b, float *c, int64_t r0,
                    int64_t r1) {
    // B's columns contiguous along k (a transposed view, Q·Kᵀ) or a single column: dot products.
    if ((g.sbk == 1 && g.sbn != 1) || g.n == 1) {
      for (int64_t i = r0; i < r1; ++i)
        for (int64_t j = 0; j < g.n; ++j)
          c[i * g.n + j] = dot(a + i * g.sam, g.sak, b + j * g.sbn, g.sbk, g.k);
      return;
    }
    // Otherwise rows of B, contiguous (packed first if they are not), scaled and accumulated.
    std::vector<float> packed;
    int64_t rowStride = g.sbk;
    if (g.sbn != 1) {
      packed.resize(size_t(g.k * g.n));
      for (int64_t kk = 0; kk < g.k; ++kk)
        for (int64_t j = 0; j < g.n; ++j)
          packed[size_t(kk * g.n + j)] = b[kk * g.sbk + j * g.sbn];
      b = packed.data();
      rowStride = g.n;
    }
    constexpr int64_t kCols = 512, kDepth = 256;
    for (int64_t j0 = 0; j0 < g.n; j0 += kCols) {
      int64_t nj = std::min(kCols, g.n - j0);
      for (int64_t i = r0; i < r1; ++i)
        std::fill(c + i * g.n + j0, c + i * g.n + j0 + nj, 0.0f);
      for (int64_t k0 = 0; k0 < g.k; k0 += kDepth) {
        int64_t k1 = std::min(g.k, k0 + kDepth);
        for (int64_t i = r0; i < r1; ++i) {
          float *ci = c + i * g.n + j0;
          for (int64_t kk = k0; kk < k1; ++kk) {
            float aik = a[i * g.sam + kk * g.sak];
            const float *bk = b + kk * rowStride + j0;
            for (int64_t j = 0; j < nj; ++j)
              ci[j] += aik * bk[j];
          }
        }
      }
    }
  }
};

template <class S, class... Args>
StepPtr make(std::vector<TensorId> ins, TensorId out, Args &&...args) {
  auto step = std::make_unique<S>(std::forward<Args>(args)...);
  step->inputs = std::move(ins);
  step->outputs = {out};
  return step;
}

} // namespace

StepPtr makeBinary(BinaryKind kind, TensorId a, TensorId b, TensorId out) {
  return make<BinaryStep>({a, b}, out, kind);
}
StepPtr makeUnary(UnaryKind kind, TensorId in, TensorId out) {
  return make<UnaryStep>({in}, out, kind);
}
StepPtr makeCast(TensorId in, TensorId out) { return make<CastStep>({in}, out); }
StepPtr makeWhere(TensorId condition, TensorId a, TensorId b, TensorId out) {
  return make<WhereStep>({condition, a, b}, out);
}
StepPtr makeGather(TensorId data, TensorId indices, int axis, TensorId out) {
  return make<GatherStep>({data, indices}, out, axis);
}
StepPtr makeGatherND(TensorId data, TensorId indices, int batchDims, TensorId out) {
  return make<GatherNDStep>({data, indices}, out, batchDims);
}
StepPtr makeGatherElements(TensorId data, TensorId indices, int axis, TensorId out) {
  return make<GatherElementsStep>({data, indices}, out, axis);
}
StepPtr makeCopy(TensorId in, TensorId out) { return make<CopyStep>({in}, out); }
StepPtr makeConcat(std::vector<TensorId> ins, int axis, TensorId out) {
  return make<ConcatStep>(std::move(ins), out, axis);
}
StepPtr makeReduce(ReduceKind kind, TensorId in, std::vector<int> axes, TensorId out) {
  return make<ReduceStep>({in}, out, kind, std::move(axes));
}
StepPtr makeCumSum(TensorId in, int axis, bool exclusive, bool reverse, TensorId out) {
  return make<CumSumStep>({in}, out, axis, exclusive, reverse);
}
StepPtr makeSoftmax(TensorId in, int axis, TensorId out) {
  return make<SoftmaxStep>({in}, out, axis);
}
StepPtr makeRange(ScalarId start, ScalarId delta, TensorId out) {
  return make<RangeStep>({}, out, start, delta);
}
StepPtr makeFromElements(std::vector<ScalarId> elements, TensorId out) {
  return make<FromElementsStep>({}, out, std::move(elements));
}
StepPtr makeMatMul(TensorId a, TensorId b, TensorId out) { return make<MatMulStep>({a, b}, out); }

} // namespace octet::rt
