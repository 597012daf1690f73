// compiler/codegen/ScalarArithmetic.h: the index arithmetic the Plan builder folds
// and the executor evaluates. Edge cases where C++'s own operators are UB or round
// differently: negative operands, division by zero, INT64 overflow.
#include "compiler/codegen/ScalarArithmetic.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace {

using octet::applyIntBinary;
using octet::ArithStatus;
using octet::compareInt;
using octet::IntBinaryOp;
using octet::IntPredicate;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

/// The result of an operation expected to succeed (a failure reports the status).
int64_t ok(IntBinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0x5eed;
  ArithStatus status = applyIntBinary(op, a, b, r);
  EXPECT_EQ(status, ArithStatus::Ok) << "operands " << a << ", " << b;
  return r;
}

ArithStatus statusOf(IntBinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0x5eed;
  ArithStatus status = applyIntBinary(op, a, b, r);
  // A failed operation leaves the result alone (callers keep their own value).
  if (status != ArithStatus::Ok)
    EXPECT_EQ(r, 0x5eed);
  return status;
}

TEST(ScalarArithmetic, AddSubMul) {
  EXPECT_EQ(ok(IntBinaryOp::Add, -7, 3), -4);
  EXPECT_EQ(ok(IntBinaryOp::Sub, -7, 3), -10);
  EXPECT_EQ(ok(IntBinaryOp::Mul, -7, 3), -21);
  EXPECT_EQ(ok(IntBinaryOp::Mul, -7, -3), 21);
  EXPECT_EQ(ok(IntBinaryOp::Add, kMax, kMin), -1);
  EXPECT_EQ(ok(IntBinaryOp::Sub, -1, kMax), kMin);
  EXPECT_EQ(ok(IntBinaryOp::Mul, kMin, 1), kMin);
}

TEST(ScalarArithmetic, Overflow) {
  EXPECT_EQ(statusOf(IntBinaryOp::Add, kMax, 1), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::Add, kMin, -1), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::Sub, kMin, 1), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::Sub, 0, kMin), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::Mul, int64_t(1) << 32, int64_t(1) << 31), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::Mul, kMin, -1), ArithStatus::Overflow);
  // The one quotient outside int64: every division kind overflows, the remainder is 0.
  EXPECT_EQ(statusOf(IntBinaryOp::DivS, kMin, -1), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::FloorDivS, kMin, -1), ArithStatus::Overflow);
  EXPECT_EQ(statusOf(IntBinaryOp::CeilDivS, kMin, -1), ArithStatus::Overflow);
  EXPECT_EQ(ok(IntBinaryOp::RemS, kMin, -1), 0);
}

TEST(ScalarArithmetic, DivisionByZero) {
  for (IntBinaryOp op :
       {IntBinaryOp::DivS, IntBinaryOp::FloorDivS, IntBinaryOp::CeilDivS, IntBinaryOp::RemS}) {
    EXPECT_EQ(statusOf(op, 5, 0), ArithStatus::DivisionByZero);
    EXPECT_EQ(statusOf(op, 0, 0), ArithStatus::DivisionByZero);
    EXPECT_EQ(statusOf(op, kMin, 0), ArithStatus::DivisionByZero);
  }
}

TEST(ScalarArithmetic, RoundingOfEachDivision) {
  // {a, b, trunc, floor, ceil, rem}
  struct Case {
    int64_t a, b, divs, floordiv, ceildiv, rems;
  };
  const Case cases[] = {
      {7, 2, 3, 3, 4, 1},
      {-7, 2, -3, -4, -3, -1},
      {7, -2, -3, -4, -3, 1},
      {-7, -2, 3, 3, 4, -1},
      {6, 3, 2, 2, 2, 0},
      {-6, 3, -2, -2, -2, 0},
      {0, -5, 0, 0, 0, 0},
      {1, kMax, 0, 0, 1, 1},
      {-1, kMax, 0, -1, 0, -1},
      {kMin, 2, kMin / 2, kMin / 2, kMin / 2, 0},
      {kMax, -1, -kMax, -kMax, -kMax, 0},
      {kMin + 1, kMax, -1, -1, -1, 0},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(testing::Message() << c.a << " / " << c.b);
    EXPECT_EQ(ok(IntBinaryOp::DivS, c.a, c.b), c.divs);
    EXPECT_EQ(ok(IntBinaryOp::FloorDivS, c.a, c.b), c.floordiv);
    EXPECT_EQ(ok(IntBinaryOp::CeilDivS, c.a, c.b), c.ceildiv);
    EXPECT_EQ(ok(IntBinaryOp::RemS, c.a, c.b), c.rems);
  }
}

TEST(ScalarArithmetic, MinMaxCompare) {
  EXPECT_EQ(ok(IntBinaryOp::MinS, -3, 2), -3);
  EXPECT_EQ(ok(IntBinaryOp::MaxS, -3, 2), 2);
  EXPECT_EQ(ok(IntBinaryOp::MinS, kMin, kMax), kMin);
  EXPECT_EQ(ok(IntBinaryOp::MaxS, kMin, kMax), kMax);
  // Signed, not unsigned: -1 is below 0.
  EXPECT_TRUE(compareInt(IntPredicate::Lt, -1, 0));
  EXPECT_FALSE(compareInt(IntPredicate::Gt, -1, 0));
  EXPECT_TRUE(compareInt(IntPredicate::Le, 4, 4));
  EXPECT_FALSE(compareInt(IntPredicate::Lt, 4, 4));
  EXPECT_TRUE(compareInt(IntPredicate::Ge, kMax, kMin));
  EXPECT_TRUE(compareInt(IntPredicate::Eq, kMin, kMin));
  EXPECT_TRUE(compareInt(IntPredicate::Ne, kMin, kMax));
}

} // namespace
