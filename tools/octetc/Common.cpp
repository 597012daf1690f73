//===- Common.cpp - what several octetc subcommands share -----------------===//
#include "tools/octetc/Octetc.h"

#include "compiler/driver/CompileSettings.h"
#include "compiler/driver/Samples.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/FusionReport.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

namespace octetc {

/// --memory-budget in bytes (0: the host's memory, the importer's default);
/// false with an error printed for a malformed value.
bool memoryBudget(uint64_t &bytes) {
  bytes = 0;
  llvm::StringRef text(memoryBudgetFlag);
  if (text.empty())
    return true;
  const size_t suffix = llvm::StringRef("KMG").find(char(std::toupper(text.back())));
  const unsigned shift = suffix == llvm::StringRef::npos ? 0 : 10 * unsigned(suffix + 1);
  if (shift)
    text = text.drop_back();
  unsigned long long value;
  if (text.getAsInteger(10, value) || value == 0 || value > (~0ull >> shift)) {
    llvm::errs() << "error: --memory-budget '" << memoryBudgetFlag
                 << "': give a positive number of bytes, optionally with K, M or G\n";
    return false;
  }
  bytes = uint64_t(value) << shift;
  return true;
}

/// Prints diagnostics as `error: <loc>: message`.
void printDiagnostics(mlir::MLIRContext &ctx) {
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    llvm::errs() << octet::severityName(diag.getSeverity()) << ": "
                 << octet::formatLocation(diag.getLocation()) << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "note: " << octet::formatLocation(note.getLocation()) << ": " << note << "\n";
    return mlir::success();
  });
}

bool setOptionFromFlag(rt::OptionSettings &settings, const char *key,
                       const cl::opt<std::string> &flag) {
  if (!flag.getNumOccurrences())
    return true; // the settings' defaults are the flags'
  rt::OptionError error;
  if (rt::setOption(settings, key, flag, error))
    return true;
  if (!error.reason.empty())
    llvm::errs() << "error: --" << flag.ArgStr << ": " << error.reason << "\n";
  else
    llvm::errs() << "error: --" << flag.ArgStr << " '" << flag << "': give " << error.expected
                 << "\n";
  return false;
}

/// The compile flags that run and compile share (an error is printed).
bool compileOptionsFromFlags(octet::CompileOptions &options) {
  // The option vocabulary is the C API's (runtime/Options.h): the same values,
  // the same rules (precision bf16 takes attention along unless --attention is given).
  rt::OptionSettings settings;
  if (!setOptionFromFlag(settings, "gemm", runGemm) ||
      !setOptionFromFlag(settings, "isa", runIsa) ||
      !setOptionFromFlag(settings, "target", runTarget) ||
      !setOptionFromFlag(settings, "attention", runAttention) ||
      !setOptionFromFlag(settings, "precision", runPrecision) ||
      !setOptionFromFlag(settings, "int8", runInt8))
    return false;
  settings.autotune = runAutotune;
  settings.calibrationSamples = runCalib; // empty: the default samples
  settings.calibrationPercentile = runCalibPercentile;
  settings.smoothquant = !runNoSmooth;
  settings.packTokens = !runNoPackTokens;
  settings.smoothquantAlpha = runSmoothAlpha;
  options = octet::compileOptionsFrom(settings);
  options.passes = runPasses;
  if (!memoryBudget(options.memoryBudget))
    return false;
  if (options.int8 != octet::CompileOptions::Int8::Static) {
    // Flags that only static INT8 reads would be silently ignored.
    for (cl::Option *flag : std::initializer_list<cl::Option *>{&runCalib, &runSmoothAlpha,
                                                                &runNoSmooth, &runCalibPercentile})
      if (flag->getNumOccurrences()) {
        llvm::errs() << "error: --" << flag->ArgStr << " needs --int8=static\n";
        return false;
      }
  }
  if (runNoSmooth && runSmoothAlpha.getNumOccurrences()) {
    llvm::errs() << "error: --smoothquant-alpha and --no-smoothquant exclude each other\n";
    return false;
  }
  if (options.int8 == octet::CompileOptions::Int8::Static) {
    if (runCalib.empty())
      llvm::errs() << "note: calibrating on " << octet::kDefaultCalibrationSamples
                   << " (generated token batches; give real ones with --calib DIR)\n";
    options.progress = [](const std::string &line) { llvm::errs() << line << "\n"; };
  }
  if (runPrintIr)
    options.irAfterPass = [](const std::string &pass, const std::string &ir) {
      llvm::errs() << "// -----// IR Dump After " << pass << " //----- //\n" << ir << "\n\n";
    };
  return true;
}

/// The fusion report: all of it with --explain-fusion, else a warning line
/// when a block stayed unfused (a silent slow path is a bug).
void printFusionReport(const octet::FusionReport &report) {
  if (runExplainFusion)
    llvm::outs() << report.text();
  else if (std::string warning = report.warning(); !warning.empty())
    llvm::errs() << "warning: " << warning << "\n";
}

} // namespace octetc
