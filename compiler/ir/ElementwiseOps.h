//===- ElementwiseOps.h - what a fused region may hold ----------*- C++ -*-===//
//
// The one table of scalar ops that a fused region (octet.fused's body,
// octet.fused_linear's and octet.qlinear's epilogue) may contain, each with the
// ElementwiseProgram opcode it becomes (compiler/codegen/ElementwiseProgram.h).
// octet.fused's verifier, the GEMM epilogue verifier and the Plan builder's
// programFromRegion all read it, so whatever verifies also lowers.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_IR_ELEMENTWISEOPS_H
#define OCTET_COMPILER_IR_ELEMENTWISEOPS_H

#include "compiler/codegen/ElementwiseProgram.h"

#include "mlir/IR/Operation.h"

#include <optional>
#include <string>

namespace octet {

/// The opcode `op` lowers to when it is one of the table's ops with f32 operands
/// and one f32 result (an arith.constant: of an f32 FloatAttr); nullopt otherwise.
std::optional<rt::ElementwiseProgram::Op> elementwiseProgramOpcode(mlir::Operation *op);

inline bool isElementwiseProgramOp(mlir::Operation *op) {
  return elementwiseProgramOpcode(op).has_value();
}

/// The table's op names, "arith.addf, arith.subf, ...", for diagnostics.
const std::string &elementwiseProgramOpNames();

} // namespace octet

#endif // OCTET_COMPILER_IR_ELEMENTWISEOPS_H
