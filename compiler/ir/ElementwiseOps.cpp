//===- ElementwiseOps.cpp - what a fused region may hold ------------------===//
#include "compiler/ir/ElementwiseOps.h"
#include "compiler/ir/OctetOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"

#include <tuple>

using namespace mlir;
using Opcode = octet::rt::ElementwiseProgram::Op;

namespace {

template <typename OpT, Opcode code> struct Entry {
  using Type = OpT;
  static Opcode opcode(Operation *) { return code; }
};

/// octet.scalar_gelu: its attribute picks the opcode.
struct GeluEntry {
  using Type = octet::ScalarGeluOp;
  static Opcode opcode(Operation *op) {
    return cast<octet::ScalarGeluOp>(op).getApproximate() == "tanh" ? Opcode::GeluTanh
                                                                    : Opcode::GeluErf;
  }
};

/// The table. arith.maxnumf / minnumf are not in it: they return the non-NaN
/// operand, where the program's Max / Min propagate NaN (as arith.maximumf and
/// ONNX Max do). Sigmoid, Reciprocal and Relu have no scalar op here: the
/// runtime's unary steps run octet's own ops.
using Table =
    std::tuple<Entry<arith::ConstantOp, Opcode::Constant>, Entry<arith::AddFOp, Opcode::Add>,
               Entry<arith::SubFOp, Opcode::Sub>, Entry<arith::MulFOp, Opcode::Mul>,
               Entry<arith::DivFOp, Opcode::Div>, Entry<arith::MaximumFOp, Opcode::Max>,
               Entry<arith::MinimumFOp, Opcode::Min>, Entry<math::PowFOp, Opcode::Pow>,
               Entry<arith::NegFOp, Opcode::Neg>, Entry<math::AbsFOp, Opcode::Abs>,
               Entry<math::ExpOp, Opcode::Exp>, Entry<math::LogOp, Opcode::Log>,
               Entry<math::ErfOp, Opcode::Erf>, Entry<math::TanhOp, Opcode::Tanh>,
               Entry<math::SqrtOp, Opcode::Sqrt>, Entry<math::RsqrtOp, Opcode::Rsqrt>, GeluEntry>;

template <typename... Entries>
std::optional<Opcode> lookup(Operation *op, std::tuple<Entries...> *) {
  std::optional<Opcode> found;
  ((isa<typename Entries::Type>(op) ? (found = Entries::opcode(op), true) : false) || ...);
  return found;
}

template <typename... Entries> std::string names(std::tuple<Entries...> *) {
  std::string joined;
  ((joined += (joined.empty() ? "" : ", ") + Entries::Type::getOperationName().str()), ...);
  return joined;
}

} // namespace

std::optional<Opcode> octet::elementwiseProgramOpcode(Operation *op) {
  // Unary and binary ops read f32 and give one f32; the table says which ops.
  auto isF32 = [](Type t) { return t.isF32(); };
  if (op->getNumResults() != 1 || op->getNumRegions() ||
      !llvm::all_of(op->getOperandTypes(), isF32) || !llvm::all_of(op->getResultTypes(), isF32))
    return std::nullopt;
  if (auto constant = dyn_cast<arith::ConstantOp>(op))
    if (!isa<FloatAttr>(constant.getValue()))
      return std::nullopt;
  return lookup(op, static_cast<Table *>(nullptr));
}

const std::string &octet::elementwiseProgramOpNames() {
  static const std::string joined = names(static_cast<Table *>(nullptr));
  return joined;
}
