//===- Compile.cpp - octetc compile: an ONNX model to a model.so ----------===//
#include "tools/octetc/Octetc.h"

#include "compiler/codegen/aot/AotLinker.h"
#include "compiler/driver/Compile.h"
#include "compiler/passes/FusionReport.h"
#include "runtime/KernelSelection.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

namespace octetc {

int runCompile() {
  if (!llvm::sys::fs::exists(runModel)) {
    llvm::errs() << "error: cannot open '" << runModel << "': no such file\n";
    return 1;
  }
  octet::CompileOptions options;
  if (!compileOptionsFromFlags(options))
    return 1;
  {
    // Fail before a long compile (and calibration) when the link cannot work.
    std::vector<std::string> command, files;
    std::string compiler, dir;
    rt::Status status = octet::aot::findCCompiler(command, compiler);
    if (status.ok())
      status = octet::aot::findAotRuntime(octet::aot::LinkOptions(), dir, files);
    if (!status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
  }
  octet::CalibrationSummary calibration;
  options.calibrationSummary = &calibration;
  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [](std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
        .count();
  };
  rt::GemmChoiceLog choices;
  options.kernels.choices = &choices;
  rt::PlanImage image;
  std::unique_ptr<rt::Plan> plan; // built for the target, never run here
  octet::FusionReport fusion;
  options.fusionReport = &fusion;
  if (rt::Status status = octet::compileOnnxFileToImage(runModel, options, image, &plan);
      !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  printFusionReport(fusion);
  if (runPrintKernelChoices)
    llvm::outs() << rt::formatGemmChoices(choices, options.kernels);
  const double compileMs = elapsedMs(start);
  octet::aot::LinkOptions link;
  link.oneDnn = rt::planUsesOneDnn(*plan);
  octet::aot::LinkReport report;
  auto linkStart = std::chrono::steady_clock::now();
  if (rt::Status status = octet::aot::linkSharedObject(image, compileOutput, link, &report);
      !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << "wrote '" << compileOutput << "': " << report.bytes << " bytes (plan "
               << image.plan.size() << ", constants " << image.constants.size() << ", code "
               << image.code.size() << "; " << plan->steps.size() << " steps, " << image.kernelCalls
               << " kernel calls of " << image.kernels << " distinct kernels), target '"
               << options.kernels.target << "', " << (link.oneDnn ? "with" : "without")
               << " oneDNN\n"
               << "compiled '" << runModel << "' in " << llvm::format("%.1f", compileMs) << " ms";
  if (calibration.batches > 0)
    llvm::outs() << " (calibration " << llvm::format("%.1f", 1e3 * calibration.seconds) << " ms)";
  llvm::outs() << ", linked in " << llvm::format("%.1f", elapsedMs(linkStart)) << " ms by "
               << report.compiler << " with the runtime of " << report.runtimeDir << "\n";
  return 0;
}

} // namespace octetc
