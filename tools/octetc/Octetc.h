//===- Octetc.h - what octetc's subcommands share --------------*- C++ -*-===//
//
// octetc is one tool with one file per subcommand (Import.cpp, Run.cpp,
// Compile.cpp, Inspect.cpp, Calibrate.cpp, Ceilings.cpp, Ops.cpp), their
// dispatch (Main.cpp) and what several share (Common.cpp). Every flag is
// defined in Flags.cpp: LLVM's cl::opt registers with its cl::SubCommand when
// constructed, so a flag and its subcommand must be built in one translation
// unit (in declaration order) rather than in files whose static
// initialization order is unspecified.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_TOOLS_OCTETC_OCTETC_H
#define OCTET_TOOLS_OCTETC_OCTETC_H

#include "runtime/Options.h"

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class MLIRContext;
}
namespace octet {
struct CompileOptions;
struct FusionReport;
} // namespace octet

namespace octetc {

namespace cl = llvm::cl;
namespace rt = octet::rt;

// Flags.cpp: every flag and subcommand, by type.
extern cl::OptionCategory octetcCategory;
extern cl::SubCommand importCommand, opsCommand, compileCommand, inspectCommand, runCommand,
    calibrateCommand, ceilingsCommand;
extern cl::opt<std::string> importModel, importOutput, compileOutput, inspectModel, inspectCode,
    runModel, runInputSets, runOutput, runGemm, runIsa, runTarget, runAttention, runPrecision,
    runPasses, runInt8, runCalib, runProfileJson, calibrateModel, calibrateSamples, calibrateOutput,
    calibrateGemm, memoryBudgetFlag, runConstants;
extern cl::opt<bool> elideWeights, emitBytecode, runAutotune, runPrintKernelChoices, runNoSmooth,
    runPrintIr, runNoPackTokens, runExplainFusion, runPrintPlan, runProfile, calibratePrintIr,
    ceilingsRefresh, ceilingsJson;
extern cl::list<std::string> runInputs;
extern cl::opt<int64_t> runBatch, runSeq;
extern cl::opt<unsigned> runSeed, runRepeat, runWarmup;
extern cl::opt<double> runSmoothAlpha, runCalibPercentile, calibratePercentile;
extern cl::opt<int> ceilingsRounds, ceilingsThreads, runThreads;

// Common.cpp
/// --memory-budget in bytes (0: the host's memory, the importer's default);
/// false with an error printed for a malformed value.
bool memoryBudget(uint64_t &bytes);
/// Prints diagnostics as `error: <loc>: message`.
void printDiagnostics(mlir::MLIRContext &ctx);
/// Sets `key` of the option vocabulary (runtime/Options.h, shared with the C
/// API) from `flag` when it was given; false with an error printed that
/// names the flag and what it takes.
bool setOptionFromFlag(rt::OptionSettings &settings, const char *key,
                       const cl::opt<std::string> &flag);
/// The compile flags that run and compile share (an error is printed).
bool compileOptionsFromFlags(octet::CompileOptions &options);
/// The fusion report: all of it with --explain-fusion, else a warning line
/// when a block stayed unfused (a silent slow path is a bug).
void printFusionReport(const octet::FusionReport &report);

// One entry point per subcommand; each returns the process's exit status.
int runImport();
int runOps();
int runRun();
int runCompile();
int runInspect();
int runCalibrate();
int runCeilings();

} // namespace octetc

#endif
