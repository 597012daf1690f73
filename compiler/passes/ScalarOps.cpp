//===- ScalarOps.cpp - octet elementwise ops as scalar arith/math ---------===//
#include "compiler/passes/ScalarOps.h"

#include "compiler/ir/OctetOps.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;

Value octet::emitScalarElementwise(OpBuilder &b, Location loc, Operation *op, ValueRange operands) {
  auto cst = [&](double v) -> Value {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(v)));
  };
  auto one = [&] { return cst(1.0); };
  Value x = operands.empty() ? Value() : operands[0];
  Value y = operands.size() > 1 ? operands[1] : Value();
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](AddOp) { return arith::AddFOp::create(b, loc, x, y); })
      .Case([&](SubOp) { return arith::SubFOp::create(b, loc, x, y); })
      .Case([&](MulOp) { return arith::MulFOp::create(b, loc, x, y); })
      .Case([&](DivOp) { return arith::DivFOp::create(b, loc, x, y); })
      .Case([&](PowOp) { return math::PowFOp::create(b, loc, x, y); })
      // NaN propagates, as in octet.max/min.
      .Case([&](MaxOp) { return arith::MaximumFOp::create(b, loc, x, y); })
      .Case([&](MinOp) { return arith::MinimumFOp::create(b, loc, x, y); })
      .Case([&](ReluOp) { return arith::MaximumFOp::create(b, loc, x, cst(0.0)); })
      .Case([&](SigmoidOp) {
        // One statement per op: argument evaluation order would make the IR's
        // order depend on the compiler.
        Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
        Value denominator = arith::AddFOp::create(b, loc, one(), e);
        return arith::DivFOp::create(b, loc, one(), denominator);
      })
      .Case([&](NegOp) { return arith::NegFOp::create(b, loc, x); })
      .Case([&](AbsOp) { return math::AbsFOp::create(b, loc, x); })
      .Case([&](ExpOp) { return math::ExpOp::create(b, loc, x); })
      .Case([&](LogOp) { return math::LogOp::create(b, loc, x); })
      .Case([&](ErfOp) { return math::ErfOp::create(b, loc, x); })
      .Case([&](TanhOp) { return math::TanhOp::create(b, loc, x); })
      .Case([&](SqrtOp) { return math::SqrtOp::create(b, loc, x); })
      .Case([&](RsqrtOp) { return math::RsqrtOp::create(b, loc, x); })
      .Case([&](ReciprocalOp) { return arith::DivFOp::create(b, loc, one(), x); })
      .Case([&](GeluOp gelu) -> Value {
        Value inner;
        if (gelu.getApproximate() == "tanh") {
          // √(2/π)·(x + 0.044715·x³)
          Value cube = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
          Value sum =
              arith::AddFOp::create(b, loc, x, arith::MulFOp::create(b, loc, cst(0.044715), cube));
          inner = math::TanhOp::create(
              b, loc, arith::MulFOp::create(b, loc, cst(std::sqrt(2.0 / M_PI)), sum));
        } else {
          inner = math::ErfOp::create(b, loc, arith::MulFOp::create(b, loc, x, cst(M_SQRT1_2)));
        }
        Value onePlus = arith::AddFOp::create(b, loc, one(), inner);
        Value half = arith::MulFOp::create(b, loc, x, cst(0.5));
        return arith::MulFOp::create(b, loc, half, onePlus);
      })
      .Default([](Operation *) { return Value(); });
}

bool octet::isF32Pointwise(Operation *op) {
  if (!isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, NegOp, AbsOp, ExpOp, LogOp, ErfOp,
           TanhOp, SqrtOp, RsqrtOp, ReciprocalOp, ReluOp, SigmoidOp, GeluOp>(op))
    return false;
  auto isF32Tensor = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getElementType().isF32();
  };
  return llvm::all_of(op->getOperandTypes(), isF32Tensor) &&
         llvm::all_of(op->getResultTypes(), isF32Tensor);
}

std::optional<double> octet::getScalarConstant(Value v) {
  DenseElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != 1 ||
      !isa<FloatType>(attr.getElementType()))
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}
