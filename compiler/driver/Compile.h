//===- Compile.h - ONNX to a runnable Plan, MLIR-free interface -*- C++ -*-===//
//
// The JIT compiler's entry point for the C API and octetc: import the ONNX
// model, run the FP32 pipeline (docs/fp32-execution-plan.md), and build the
// Plan with its kernels (PlanBuilder). This header includes nothing from MLIR,
// so the C API's translation unit stays MLIR-free.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_DRIVER_COMPILE_H
#define OCTET_COMPILER_DRIVER_COMPILE_H

#include "runtime/Plan.h"
#include "runtime/Steps.h"

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

namespace octet {

struct CompileOptions {
  rt::KernelOptions kernels;
  /// The passes between import and PlanBuilder, as a textual pipeline of octet
  /// function passes ("octet-cleanup,octet-recognize"). Empty: the full FP32
  /// pipeline; "none": no pass (the imported IR is planned as it is). Any
  /// prefix of the pipeline must compute the same (octetc run --passes).
  std::string passes;
  /// Called with (pass name, IR text) after every pass when set (--print-ir-after-all).
  std::function<void(const std::string &pass, const std::string &ir)> irAfterPass;
};

/// Errors name the file, the ONNX node and op where one is at fault.
rt::Status compileOnnxFile(const std::string &path, const CompileOptions &options,
                           std::unique_ptr<rt::Plan> &plan);
rt::Status compileOnnxBytes(const void *bytes, size_t size, const CompileOptions &options,
                            std::unique_ptr<rt::Plan> &plan);

} // namespace octet

#endif
