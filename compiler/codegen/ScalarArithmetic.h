//===- ScalarArithmetic.h - signed 64-bit index arithmetic, checked -------===//
//
// The one definition of what a Plan scalar's integer operations compute
// (runtime/Plan.h: Scalar::Kind Add .. MaxS, Cmp). Two places evaluate them and
// must agree bit for bit: the compiler folds them while it builds a Plan
// (compiler/driver: a constant dim computed at build time) and the runtime
// evaluates the rest before each run (runtime/Executor.cpp). A fold that
// disagreed with the run would make a static shape differ from the dynamic
// one the same model computes.
//
// Plain C++ (the leaf, docs/architecture.md layer 1): no MLIR, no runtime.
// Errors are reported by return value, never by UB or a trap: the runtime turns
// them into an input error naming the scalar, the compiler leaves the scalar
// unfolded so that the run reports it (a model whose shape arithmetic divides
// by zero only for some inputs must still compile).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_SCALARARITHMETIC_H
#define OCTET_COMPILER_CODEGEN_SCALARARITHMETIC_H

#include <algorithm>
#include <cstdint>
#include <limits>

namespace octet {

/// The binary integer operations of index arithmetic (arith.addi .. arith.maxsi
/// on index / i64). DivS and RemS truncate toward zero like C++ (arith.divsi,
/// arith.remsi); FloorDivS and CeilDivS round toward -inf and +inf.
enum class IntBinaryOp : uint8_t { Add, Sub, Mul, DivS, FloorDivS, CeilDivS, RemS, MinS, MaxS };

/// Signed comparisons, in the order of runtime/Plan.h's Scalar::Predicate (which
/// intPredicateOf casts to this).
enum class IntPredicate : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

enum class ArithStatus : uint8_t {
  Ok,
  Overflow,       ///< the exact result is outside int64 (also INT64_MIN / -1)
  DivisionByZero, ///< a division or remainder by 0
};

/// a `op` b into `result` (left unchanged unless Ok). INT64_MIN rem -1 is 0 (the
/// mathematical remainder; only the quotient overflows).
inline ArithStatus applyIntBinary(IntBinaryOp op, int64_t a, int64_t b, int64_t &result) {
  int64_t r = 0;
  switch (op) {
  case IntBinaryOp::Add:
    if (__builtin_add_overflow(a, b, &r))
      return ArithStatus::Overflow;
    break;
  case IntBinaryOp::Sub:
    if (__builtin_sub_overflow(a, b, &r))
      return ArithStatus::Overflow;
    break;
  case IntBinaryOp::Mul:
    if (__builtin_mul_overflow(a, b, &r))
      return ArithStatus::Overflow;
    break;
  case IntBinaryOp::DivS:
  case IntBinaryOp::FloorDivS:
  case IntBinaryOp::CeilDivS:
  case IntBinaryOp::RemS: {
    if (b == 0)
      return ArithStatus::DivisionByZero;
    if (a == std::numeric_limits<int64_t>::min() && b == -1) {
      if (op != IntBinaryOp::RemS)
        return ArithStatus::Overflow;
      r = 0;
      break;
    }
    const int64_t q = a / b, rem = a % b;
    if (op == IntBinaryOp::RemS)
      r = rem;
    else if (op == IntBinaryOp::FloorDivS && rem != 0 && (rem < 0) != (b < 0))
      r = q - 1;
    else if (op == IntBinaryOp::CeilDivS && rem != 0 && (rem < 0) == (b < 0))
      r = q + 1;
    else
      r = q;
    break;
  }
  case IntBinaryOp::MinS:
    r = std::min(a, b);
    break;
  case IntBinaryOp::MaxS:
    r = std::max(a, b);
    break;
  }
  result = r;
  return ArithStatus::Ok;
}

/// a `predicate` b (arith.cmpi's signed predicates).
inline bool compareInt(IntPredicate predicate, int64_t a, int64_t b) {
  switch (predicate) {
  case IntPredicate::Eq:
    return a == b;
  case IntPredicate::Ne:
    return a != b;
  case IntPredicate::Lt:
    return a < b;
  case IntPredicate::Le:
    return a <= b;
  case IntPredicate::Gt:
    return a > b;
  case IntPredicate::Ge:
    return a >= b;
  }
  return false;
}

} // namespace octet

#endif // OCTET_COMPILER_CODEGEN_SCALARARITHMETIC_H
