//===- Registration.cpp - dialects that octet IR uses ---------------------===//
#include "compiler/passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"

void octet::registerOctetDialects(mlir::DialectRegistry &registry) {
  registry.insert<octet::OctetDialect, mlir::arith::ArithDialect, mlir::math::MathDialect,
                  mlir::func::FuncDialect>();
}
