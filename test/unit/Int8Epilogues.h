//===- Int8Epilogues.h - the epilogue programs the INT8 GEMM tests share -*- C++ -*-===//
//
// GELU (erf) as one op, and the INT8 FFN-in's GELU times a per-column input
// (the next GEMM's SmoothQuant factors), as ProgramEpilogue emitters for the
// VNNI and AMX kernels' tests.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TEST_UNIT_INT8EPILOGUES_H
#define OCTET_TEST_UNIT_INT8EPILOGUES_H

#include "compiler/codegen/x86/ProgramEpilogue.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace octet::test {

/// GELU (erf) as one op: `y = gelu(acc)`.
inline std::unique_ptr<x86::ProgramEpilogue>
geluEpilogue(x86::GeluAccuracy accuracy = x86::GeluAccuracy::Full) {
  using Op = rt::ElementwiseProgram::Op;
  rt::ElementwiseProgram program;
  program.numInputs = 1;
  program.instrs = {{Op::Input, 0, -1, 0}, {Op::GeluErf, 0, -1, 0}};
  std::string error;
  auto e = x86::ProgramEpilogue::create(program, error, {}, accuracy);
  EXPECT_TRUE(e) << error;
  return e;
}

/// `y = gelu(acc) * column[n]`, the GELU the fast one for a requantized
/// result (as the compiler builds BERT's INT8 FFN-in).
inline std::unique_ptr<x86::ProgramEpilogue> geluTimesColumnEpilogue() {
  std::string error;
  auto e = x86::ProgramEpilogue::create(x86::geluTimesColumnProgram(), error, {false, true},
                                        x86::GeluAccuracy::ForRequantize);
  EXPECT_TRUE(e) << error;
  return e;
}

} // namespace octet::test

#endif
