//===- Calibrate.cpp - octetc calibrate: the calibrated IR ----------------===//
#include "tools/octetc/Octetc.h"

#include "compiler/driver/Compile.h"
#include "compiler/driver/Samples.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace octetc {

int runCalibrate() {
  octet::CompileOptions options;
  rt::OptionSettings settings;
  if (!setOptionFromFlag(settings, "gemm", calibrateGemm))
    return 1;
  options.kernels.gemm = settings.gemm;
  options.calibrationSamples = calibrateSamples;
  options.calibrationPercentile = calibratePercentile;
  if (!memoryBudget(options.memoryBudget))
    return 1;
  options.progress = [](const std::string &line) { llvm::errs() << line << "\n"; };
  if (calibratePrintIr)
    options.irAfterPass = [](const std::string &pass, const std::string &ir) {
      llvm::errs() << "// -----// IR Dump After " << pass << " //----- //\n" << ir << "\n\n";
    };
  if (!llvm::sys::fs::exists(calibrateModel)) {
    llvm::errs() << "error: cannot open '" << calibrateModel << "': no such file\n";
    return 1;
  }
  if (calibrateSamples.empty())
    llvm::errs() << "note: calibrating on " << octet::kDefaultCalibrationSamples
                 << " (generated token batches; give real ones with --samples DIR)\n";
  octet::CalibrationSummary summary;
  rt::Status status = octet::calibrateOnnxFile(calibrateModel, options, calibrateOutput, &summary);
  if (!status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::errs() << "calibrated '" << calibrateModel << "': " << summary.linears
               << " linear(s) observed over " << summary.batches << " batch(es) (" << summary.rows
               << " rows per linear) from '" << summary.samples << "' in "
               << llvm::format("%.1f", summary.seconds) << " s";
  if (calibratePercentile > 0)
    llvm::errs() << llvm::format(" (per-tensor ranges: mean %g-th percentiles)",
                                 double(calibratePercentile));
  llvm::errs() << "\n";
  return 0;
}

} // namespace octetc
