//===- OctetDialect.h - the octet dialect -----------------------*- C++ -*-===//
#ifndef OCTET_COMPILER_IR_OCTETDIALECT_H
#define OCTET_COMPILER_IR_OCTETDIALECT_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Dialect.h"

#include "compiler/ir/OctetDialect.h.inc"

#endif
