//===- ElementwiseKernel.h - a fused elementwise program over rows -*- C++ -*-===//
//
// out[r, c] = program(in_0[r, c], in_1[r, c], ...) over `rows` rows of `cols`
// floats (both run-time). Each input is either contiguous along the row
// (column stride 1) or one value per row broadcast along it (column stride 0),
// fixed when the kernel is generated; any input (and the output) has its own
// run-time row stride, 0 for a vector repeated on every row or a scalar. The
// program is lowered with ProgramLowering (ProgramEpilogue.h); the row tail
// cols % 16 runs under an opmask, so nothing past a row is read or written.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_ELEMENTWISEKERNEL_H
#define OCTET_COMPILER_CODEGEN_X86_ELEMENTWISEKERNEL_H

#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/ProgramEpilogue.h"

#include <memory>

namespace octet::x86 {

constexpr int kElementwiseMaxInputs = 8;

struct ElementwiseKernelArgs {
  const float *in[kElementwiseMaxInputs] = {};
  int64_t inRowStride[kElementwiseMaxInputs] = {}; ///< floats
  float *out = nullptr;
  int64_t outRowStride = 0; ///< floats
  int64_t rows = 0, cols = 0;
};

class ElementwiseKernel : public KernelGenerator {
public:
  using Fn = void (*)(const ElementwiseKernelArgs *);
  /// Generates the kernel (at once: run() never generates code). Null with
  /// `error` set when the program has more than kElementwiseMaxInputs inputs
  /// or cannot be lowered (ProgramLowering::plan).
  static std::unique_ptr<ElementwiseKernel> create(const rt::ElementwiseProgram &program,
                                                   std::vector<bool> broadcastColumns,
                                                   std::string &error);
  /// One call over args.rows rows (the caller splits rows among threads).
  void run(const ElementwiseKernelArgs &args) const { fn_(&args); }

protected:
  void generate() override;

private:
  ElementwiseKernel(std::vector<bool> broadcastColumns);
  ProgramLowering lowering_;
  std::vector<bool> broadcastColumns_;
  ConstantTable constants_{*this};
  Fn fn_ = nullptr;
};

} // namespace octet::x86

#endif
