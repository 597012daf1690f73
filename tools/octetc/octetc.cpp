//===- octetc.cpp - the Octet command line ---------------------------------===//
//
//   octetc import MODEL [-o OUT] [--elide-weights | --emit-bytecode]   ONNX → octet IR
//   octetc ops                                            supported ONNX ops
//   octetc run MODEL [--input NAME=FILE ...] [--input-sets DIR] [--int8=...] ...   compile and run
//   octetc compile MODEL -o model.so [--int8=...] ...     AOT: a self-contained model.so
//   octetc inspect model.so [--code FILE]                 what a model.so holds
//   octetc calibrate MODEL --samples DIR|generate:SPEC [-o FILE]   calibrated IR (octet.calib)
//   octetc ceilings [--refresh]                           the roofline's machine ceilings
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/aot/AotLinker.h"
#include "compiler/driver/Compile.h"
#include "compiler/driver/Samples.h"
#include "compiler/driver/TensorFiles.h"
#include "compiler/ir/Locations.h"
#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"
#include "runtime/AotLoader.h"
#include "runtime/Ceilings.h"
#include "runtime/Executor.h"
#include "runtime/KernelSelection.h"
#include "runtime/Profile.h"

#include "mlir/Bytecode/BytecodeWriter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

namespace cl = llvm::cl;

static cl::OptionCategory octetcCategory("octetc options");
static cl::SubCommand importCommand("import", "Import an ONNX model and print it as octet IR");
static cl::opt<std::string> importModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                        cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<std::string> importOutput("o", cl::desc("Output file (default: stdout)"),
                                         cl::value_desc("file"), cl::init("-"),
                                         cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<bool> elideWeights(
    "elide-weights",
    cl::desc("Elide large constants and weight blobs (for reading: the output does not parse "
             "back to the same model)"),
    cl::sub(importCommand), cl::cat(octetcCategory));
static cl::opt<bool> emitBytecode(
    "emit-bytecode",
    cl::desc("Write MLIR bytecode (weights stay binary: fast for large models, and octet-opt "
             "reads it)"),
    cl::sub(importCommand), cl::cat(octetcCategory));

static cl::SubCommand opsCommand("ops", "List the supported ONNX op types, one per line");

static cl::SubCommand compileCommand(
    "compile",
    "Compile an ONNX model (FP32, or INT8 with --int8) ahead of time into one self-contained "
    "shared object: the plan, the kernels' code and the weights, with the runtime linked in "
    "by the system C compiler ($CC, else cc). The C API opens it (octet_model_open), a program "
    "can link it, and octetc run runs it (docs/aot.md)");
static cl::opt<std::string> compileOutput("o", cl::desc("The model.so to write"),
                                          cl::value_desc("FILE"), cl::Required,
                                          cl::sub(compileCommand), cl::cat(octetcCategory));

static cl::SubCommand
    inspectCommand("inspect",
                   "Print what a model.so written by octetc compile holds (docs/aot.md)");
static cl::opt<std::string> inspectModel(cl::Positional, cl::Required, cl::desc("<model.so>"),
                                         cl::sub(inspectCommand), cl::cat(octetcCategory));
static cl::opt<std::string>
    inspectCode("code", cl::desc("Write the kernel code section (raw x86-64) to FILE"),
                cl::value_desc("FILE"), cl::sub(inspectCommand), cl::cat(octetcCategory));

static cl::SubCommand runCommand(
    "run",
    "Compile an ONNX model (FP32, or INT8 with --int8) and run it. Inputs come from --input files, "
    "from the input "
    "sets of --input-sets, or are made up (random token ids within the vocabulary, attention "
    "masks of ones with a padded tail on every other row, token type ids 0, f32 normal)");
static cl::opt<std::string>
    runModel(cl::Positional, cl::Required,
             cl::desc("<model.onnx> (run: or a model.so of octetc compile)"), cl::sub(runCommand),
             cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::list<std::string>
    runInputs("input",
              cl::desc("An input as NAME=FILE (.npy, or an ONNX TensorProto .pb); repeatable. "
                       "Inputs not given are made up to match the given ones' dims"),
              cl::value_desc("NAME=FILE"), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runInputSets(
    "input-sets",
    cl::desc("Run every subdirectory of DIR (sorted by name) as one input set of NAME.npy / "
             "NAME.pb files, all on one compiled model; with --output, set S's outputs go to "
             "OUTDIR/S/"),
    cl::value_desc("DIR"), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<int64_t> runBatch("batch", cl::desc("Batch size of made-up inputs (default 1)"),
                                 cl::init(1), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<int64_t> runSeq("seq", cl::desc("Sequence length of made-up inputs (default 128)"),
                               cl::init(128), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<unsigned> runSeed("seed", cl::desc("Seed of made-up inputs"), cl::init(0),
                                 cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<unsigned> runRepeat("repeat", cl::desc("Timed runs (default 10)"), cl::init(10),
                                   cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<unsigned> runWarmup("warmup", cl::desc("Untimed runs first (default 2)"),
                                   cl::init(2), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runOutput("output", cl::desc("Write each output as DIR/NAME.npy"),
                                      cl::value_desc("DIR"), cl::sub(runCommand),
                                      cl::cat(octetcCategory));
static cl::opt<std::string> runGemm("gemm",
                                    cl::desc("GEMM provider: auto (default), jit or onednn"),
                                    cl::init("auto"), cl::sub(runCommand), cl::sub(compileCommand),
                                    cl::cat(octetcCategory));
static cl::opt<std::string>
    runIsa("isa", cl::desc("host (default), or avx2: act as on a host without AVX-512"),
           cl::init("host"), cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runTarget(
    "target",
    cl::desc("The CPU to build the kernels for: host (default), avx2, avx-vnni, avx512, "
             "avx512-vnni, amx or a CPU name (zen4, sapphirerapids, ...). `run` refuses a target "
             "this CPU cannot execute"),
    cl::value_desc("NAME"), cl::init("host"), cl::sub(runCommand), cl::sub(compileCommand),
    cl::cat(octetcCategory));
static cl::opt<bool> runAutotune(
    "autotune",
    cl::desc("Choose each GEMM's provider per M bucket by timing the candidates that run here "
             "(docs/kernel-selection.md); default: the documented rule"),
    cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runAttention(
    "attention",
    cl::desc("f32 (default), or bf16: attention's Q·Kᵀ and P·V on bf16 operands (AMX-BF16, f32 "
             "sums) where the target has AMX-BF16 (docs/attention-bf16.md)"),
    cl::value_desc("f32|bf16"), cl::init("f32"), cl::sub(runCommand), cl::sub(compileCommand),
    cl::cat(octetcCategory));
static cl::opt<std::string> runPrecision(
    "precision",
    cl::desc("f32 (default), or bf16 for an FP32 model: every linear's weight stored as bf16 "
             "(half the bytes) and multiplied on vdpbf16ps with f32 sums, attention in bf16 "
             "too unless --attention=f32 (needs AVX512-BF16; not with --int8; "
             "docs/kernel-selection.md)"),
    cl::value_desc("f32|bf16"), cl::init("f32"), cl::sub(runCommand), cl::sub(compileCommand),
    cl::cat(octetcCategory));
static cl::opt<bool> runPrintKernelChoices(
    "print-kernel-choices",
    cl::desc("Print each GEMM's provider per M bucket: candidates' times, choice and reason"),
    cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runPasses(
    "passes",
    cl::desc("The passes between import and planning, as a comma-separated pipeline of function "
             "passes (default: the full FP32 pipeline; 'none': plan the imported IR as it is). "
             "Any prefix of the pipeline must compute the same outputs. With --int8 they replace "
             "the INT8 lowering only: recognition (and, static, calibration) run first, then "
             "these passes ('none': plan the recognized, calibrated FP32 IR)"),
    cl::value_desc("PIPELINE"), cl::init(""), cl::sub(runCommand), cl::sub(compileCommand),
    cl::cat(octetcCategory));
static cl::opt<std::string> runInt8(
    "int8",
    cl::desc("Compile for INT8: 'static' (calibrate on --calib samples, SmoothQuant, per-tensor "
             "activation scales), 'dynamic' (per-token activation scales at run time, no "
             "calibration) or 'none' (FP32, the default). See docs/calibration.md"),
    cl::value_desc("static|dynamic|none"), cl::init("none"), cl::sub(runCommand),
    cl::sub(compileCommand), cl::cat(octetcCategory));
// cl::desc keeps a StringRef: a description built at run time must outlive
// the option, so it is a static string, never a temporary.
static const std::string runCalibDesc =
    std::string("Calibration samples for --int8=static: a directory of input sets "
                "(like --input-sets) or generate:N[xB][xS] (N generated batches of B "
                "sequences of S tokens; default ") +
    octet::kDefaultCalibrationSamples + ")";
static cl::opt<std::string> runCalib(
    "calib", cl::desc(runCalibDesc),
    cl::value_desc("DIR|generate:SPEC"), cl::sub(runCommand), cl::sub(compileCommand),
    cl::cat(octetcCategory));
static cl::opt<double> runSmoothAlpha(
    "smoothquant-alpha",
    cl::desc("SmoothQuant's migration strength in [0, 1] for --int8=static (default 0.7)"),
    cl::init(0.7), cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<bool> runNoSmooth("no-smoothquant", cl::desc("--int8=static without SmoothQuant"),
                                 cl::sub(runCommand), cl::sub(compileCommand),
                                 cl::cat(octetcCategory));
static cl::opt<double> runCalibPercentile(
    "calib-percentile",
    cl::desc("--int8=static: clip the per-tensor activation range to the P-th percentile "
             "(P in (50, 100], e.g. 99.99; default: min/max)"),
    cl::init(0), cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<bool> runPrintIr("print-ir-after-all",
                                cl::desc("Print the IR after import and after every pass"),
                                cl::sub(runCommand), cl::sub(compileCommand),
                                cl::cat(octetcCategory));
static cl::opt<bool> runNoPackTokens(
    "no-pack-tokens",
    cl::desc("Compute every position of a padded batch, as ONNX Runtime does (default: the "
             "layers skip padding tokens and padding positions of token-wise outputs are 0; "
             "docs/padding-free.md)"),
    cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<bool> runExplainFusion(
    "explain-fusion",
    cl::desc("List every attention, LayerNorm and GELU block that was not fused, with its ONNX "
             "nodes and why (without it, one warning line says how many stayed unfused)"),
    cl::sub(runCommand), cl::sub(compileCommand), cl::cat(octetcCategory));
static cl::opt<bool> runPrintPlan("print-plan", cl::desc("Print the execution plan"),
                                  cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<bool> runProfile(
    "profile",
    cl::desc("Time every step of the plan over the repeats and print a table (median per step, "
             "share of the total, ops, bytes, GOP/s, GB/s and the fraction of the roofline bound "
             "under the machine's ceilings; see docs/profiling.md)"),
    cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string>
    runProfileJson("profile-json",
                   cl::desc("Write the --profile table as JSON to FILE (implies profiling)"),
                   cl::value_desc("FILE"), cl::sub(runCommand), cl::cat(octetcCategory));

static cl::SubCommand calibrateCommand(
    "calibrate",
    "Import an ONNX model, run the recognition passes and calibration, and write the "
    "calibrated IR: MLIR with octet.calib (per-channel abs-max, per-tensor min/max of each GEMM "
    "input) on every octet.linear / octet.fused_linear. Progress and a summary go to stderr");
static cl::opt<std::string> calibrateModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                           cl::sub(calibrateCommand), cl::cat(octetcCategory));
static const std::string calibrateSamplesDesc =
    std::string("A directory with one subdirectory per batch holding NAME.npy or "
                "NAME.pb for every model input, or generate:N[xB][xS]: N generated "
                "token batches of B sequences (default 8) of S tokens (default 128); "
                "default ") +
    octet::kDefaultCalibrationSamples;
static cl::opt<std::string> calibrateSamples(
    "samples", cl::desc(calibrateSamplesDesc),
    cl::value_desc("DIR|generate:SPEC"), cl::sub(calibrateCommand), cl::cat(octetcCategory));
static cl::opt<double> calibratePercentile(
    "percentile",
    cl::desc("Per-tensor range: the mean over batches of each batch's (100-P)-th and P-th "
             "percentile, P in (50, 100] (e.g. 99.99; default: min/max over all batches)"),
    cl::init(0), cl::sub(calibrateCommand), cl::cat(octetcCategory));
static cl::opt<std::string> calibrateOutput(
    "o", cl::desc("Output file (default: stdout; MLIR bytecode when it ends in .mlirbc)"),
    cl::value_desc("file"), cl::init("-"), cl::sub(calibrateCommand), cl::cat(octetcCategory));
static cl::opt<std::string> calibrateGemm("gemm",
                                          cl::desc("GEMM provider: auto (default), jit or onednn"),
                                          cl::init("auto"), cl::sub(calibrateCommand),
                                          cl::cat(octetcCategory));
static cl::opt<bool> calibratePrintIr("print-ir-after-all",
                                      cl::desc("Print the IR after import and after every pass"),
                                      cl::sub(calibrateCommand), cl::cat(octetcCategory));

static cl::SubCommand
    ceilingsCommand("ceilings",
                    "Print the machine's roofline ceilings (peak FP32 FMA, INT8 vpdpbusd, read "
                    "bandwidth from L2, L3 and DRAM), measured once per host and thread count and "
                    "cached");
static cl::opt<bool> ceilingsRefresh("refresh", cl::desc("Measure again, replacing the cache"),
                                     cl::sub(ceilingsCommand), cl::cat(octetcCategory));
static cl::opt<int> ceilingsRounds(
    "rounds", cl::desc("Whole measurements when measuring, each ceiling the best (default 3)"),
    cl::init(octet::rt::kDefaultCeilingRounds), cl::sub(ceilingsCommand), cl::cat(octetcCategory));
static cl::opt<bool> ceilingsJson("json", cl::desc("Print the cached JSON"),
                                  cl::sub(ceilingsCommand), cl::cat(octetcCategory));
static cl::opt<int> ceilingsThreads("threads", cl::desc("OpenMP threads (default: all)"),
                                    cl::init(0), cl::sub(ceilingsCommand), cl::cat(octetcCategory));
static cl::opt<int> runThreads("threads", cl::desc("OpenMP threads (default: all)"), cl::init(0),
                               cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string> memoryBudgetFlag(
    "memory-budget",
    cl::desc("The most memory the model may claim: its constants together (checked before any is "
             "read), and each made-up input. Bytes, or with a K, M or G suffix (powers of 1024); "
             "default: this host's physical memory"),
    cl::value_desc("BYTES"), cl::init(""), cl::sub(importCommand), cl::sub(runCommand),
    cl::sub(compileCommand), cl::sub(calibrateCommand), cl::cat(octetcCategory));

/// --memory-budget in bytes (0: the host's memory, the importer's default);
/// false with an error printed for a malformed value.
static bool memoryBudget(uint64_t &bytes) {
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
static void printDiagnostics(mlir::MLIRContext &ctx) {
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &diag) {
    auto severity = [](mlir::DiagnosticSeverity s) {
      switch (s) {
      case mlir::DiagnosticSeverity::Error:
        return "error";
      case mlir::DiagnosticSeverity::Warning:
        return "warning";
      case mlir::DiagnosticSeverity::Note:
        return "note";
      case mlir::DiagnosticSeverity::Remark:
        return "remark";
      }
      return "error";
    };
    llvm::errs() << severity(diag.getSeverity()) << ": " << octet::formatLocation(diag.getLocation())
                 << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "note: " << octet::formatLocation(note.getLocation()) << ": " << note << "\n";
    return mlir::success();
  });
}

static int runImport() {
  mlir::DialectRegistry registry;
  octet::registerOctetDialects(registry);
  mlir::MLIRContext ctx(registry);
  printDiagnostics(ctx);
  octet::ImportLimits limits;
  if (!memoryBudget(limits.memoryBudget))
    return 1;
  auto module = octet::importOnnxFile(ctx, importModel, limits);
  if (!module)
    return 1;
  std::string error;
  auto output = mlir::openOutputFile(importOutput, &error);
  if (!output) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  if (emitBytecode && elideWeights) {
    llvm::errs() << "error: --emit-bytecode and --elide-weights exclude each other\n";
    return 1;
  }
  if (emitBytecode) {
    if (failed(mlir::writeBytecodeToFile(*module, output->os())))
      return 1;
    output->keep();
    return 0;
  }
  mlir::OpPrintingFlags flags;
  // Local scope leaves out the resource section: MLIR would hex-encode every
  // blob before eliding it, which costs seconds on a BERT.
  if (elideWeights)
    flags.elideLargeElementsAttrs(16).elideLargeResourceString(64).useLocalScope();
  module->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}

namespace rt = octet::rt;
using octet::io::formatDims;
using octet::io::HostTensor;

namespace {

/// An input set: the Plan's inputs in order, and a label for messages.
struct InputSet {
  std::string label;
  std::vector<HostTensor> tensors;
};

/// Makes up an input: token ids in range, masks with padding, zeros for
/// token types, normal floats. `symbols` gives named dims; other dynamic dims
/// are the batch (dim 0) or the sequence.
bool makeInput(const rt::IoInfo &io, const std::map<std::string, int64_t> &symbols,
               std::mt19937_64 &rng, HostTensor &t, std::string &error) {
  t.dtype = io.dtype;
  for (size_t d = 0; d < io.dims.size(); ++d) {
    int64_t size = io.dims[d];
    if (size < 0) {
      auto it = symbols.find(io.dimNames[d]);
      size = it != symbols.end() && !io.dimNames[d].empty() ? it->second
             : d == 0                                       ? int64_t(runBatch)
                                                            : int64_t(runSeq);
    }
    t.dims.push_back(size);
  }
  // A model's static dims are its own claim: check them against the budget
  // before allocating (a static batch of 2^40 is an error, not an abort).
  size_t elementSize = rt::dtypeBytes(io.dtype);
  uint64_t budget = 0, bytes = elementSize;
  if (!memoryBudget(budget)) {
    error = "--memory-budget is malformed";
    return false;
  }
  if (!budget)
    budget = octet::physicalMemoryBytes();
  for (int64_t d : t.dims)
    if (d < 0 || (d > 0 && bytes > budget / uint64_t(d)) || (bytes *= uint64_t(d)) > budget) {
      error = "made-up input '" + io.name + "' would be " + formatDims(t.dims) + " " +
              rt::dtypeName(io.dtype) + ", more than the memory budget of " +
              std::to_string(budget) + " bytes (give smaller --batch / --seq, the input with " +
              "--input, or --memory-budget)";
      return false;
    }
  int64_t n = t.numElements();
  t.bytes.assign(size_t(n) * elementSize, 0);
  std::string lower = io.name;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  bool isFloat = io.dtype == rt::DType::F32 || io.dtype == rt::DType::F64;
  int64_t cols = t.dims.empty() ? 1 : t.dims.back();
  std::vector<double> values(size_t(n), 0.0);
  if (isFloat) {
    std::normal_distribution<double> normal;
    for (double &v : values)
      v = normal(rng);
  } else if (lower.find("mask") != std::string::npos) {
    // Ones, with the last quarter of every other row padded (zeros).
    for (int64_t i = 0; i < n; ++i) {
      int64_t row = cols ? i / cols : 0, col = cols ? i % cols : 0;
      int64_t keep = std::max<int64_t>(1, cols - cols / 4);
      values[size_t(i)] = (row % 2 == 1 && col >= keep) ? 0 : 1;
    }
  } else if (lower.find("token_type") != std::string::npos) {
    // zeros
  } else {
    int64_t begin = io.checkRange ? io.rangeBegin : 0, end = io.checkRange ? io.rangeEnd : 2;
    std::uniform_int_distribution<int64_t> uniform(begin, std::max(begin, end - 1));
    for (double &v : values)
      v = double(uniform(rng));
  }
  for (int64_t i = 0; i < n; ++i)
    octet::setElement(t, i, values[size_t(i)]);
  return true;
}

/// Completes an input set: checks the given inputs, makes up the missing ones
/// with the given ones' named dims.
bool completeInputSet(const rt::Plan &plan, std::vector<HostTensor *> given,
                      std::vector<std::string> sources, InputSet &set, std::mt19937_64 &rng,
                      std::string &error) {
  std::map<std::string, int64_t> symbols;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (!given[i])
      continue;
    const rt::IoInfo &io = plan.inputs[i];
    if (!octet::checkInput(io, *given[i], sources[i], error))
      return false;
    for (size_t d = 0; d < io.dims.size(); ++d)
      if (!io.dimNames[d].empty())
        symbols.try_emplace(io.dimNames[d], given[i]->dims[d]);
  }
  if (!symbols.count("batch"))
    symbols["batch"] = runBatch;
  if (!symbols.count("sequence"))
    symbols["sequence"] = runSeq;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    HostTensor made;
    if (!given[i] && !makeInput(plan.inputs[i], symbols, rng, made, error))
      return false;
    set.tensors.push_back(given[i] ? std::move(*given[i]) : std::move(made));
  }
  return true;
}

int inputIndex(const rt::Plan &plan, const std::string &name) {
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (plan.inputs[i].name == name)
      return int(i);
  return -1;
}

std::string inputNames(const rt::Plan &plan) {
  std::string names;
  for (const rt::IoInfo &io : plan.inputs)
    names += (names.empty() ? "" : ", ") + io.name;
  return names;
}

bool collectInputSets(const rt::Plan &plan, std::vector<InputSet> &sets, std::string &error) {
  std::mt19937_64 rng(runSeed);
  if (!runInputSets.empty()) {
    if (!runInputs.empty()) {
      error = "--input and --input-sets exclude each other";
      return false;
    }
    std::vector<std::string> dirs;
    if (!octet::listInputSets(runInputSets, "--input-sets", dirs, error))
      return false;
    for (const std::string &dir : dirs) {
      std::vector<HostTensor> loaded;
      std::vector<bool> present;
      if (!octet::readInputSet(plan, dir, loaded, present, error))
        return false;
      std::vector<HostTensor *> given(plan.inputs.size(), nullptr);
      std::vector<std::string> sources(plan.inputs.size());
      for (size_t i = 0; i < loaded.size(); ++i)
        if (present[i]) {
          given[i] = &loaded[i];
          sources[i] = "'" + dir + "/" + plan.inputs[i].name + "'";
        }
      InputSet set;
      set.label = llvm::sys::path::filename(dir).str();
      if (!completeInputSet(plan, given, sources, set, rng, error))
        return false;
      sets.push_back(std::move(set));
    }
    return true;
  }
  std::vector<HostTensor> loaded(plan.inputs.size());
  std::vector<HostTensor *> given(plan.inputs.size(), nullptr);
  std::vector<std::string> sources(plan.inputs.size());
  for (const std::string &spec : runInputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      error = "--input '" + spec + "': give NAME=FILE";
      return false;
    }
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    int index = inputIndex(plan, name);
    if (index < 0) {
      error = "--input '" + spec + "': the model has no input '" + name +
              "' (inputs: " + inputNames(plan) + ")";
      return false;
    }
    if (given[index]) {
      error = "--input: input '" + name + "' is given twice";
      return false;
    }
    if (!octet::io::readTensorFile(path, loaded[index], error))
      return false;
    given[index] = &loaded[index];
    sources[index] = "'" + path + "'";
  }
  InputSet set;
  set.label = "";
  if (!completeInputSet(plan, given, sources, set, rng, error))
    return false;
  sets.push_back(std::move(set));
  return true;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  if (v.empty())
    return 0;
  double pos = q * double(v.size() - 1);
  size_t lo = size_t(pos), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

/// The per-step table of --profile (runtime/Profile.h), slowest first, under
/// the machine's ceilings (measured once, then cached); --profile-json writes
/// the same as JSON (with --input-sets: the last set's).
bool printProfile(const rt::Plan &plan, const std::vector<std::vector<double>> &stepTimes,
                  const std::vector<rt::Work> &work, const std::vector<double> &runMs,
                  std::string &error) {
  const int threads = omp_get_max_threads();
  rt::Ceilings ceilings;
  bool cached = false;
  std::string note;
  rt::Status status = rt::loadOrMeasureCeilings(threads, false, ceilings, &cached, &note);
  if (!note.empty())
    llvm::errs() << "note: " << note << "\n";
  if (!status.ok())
    llvm::errs() << "warning: no roofline columns: " << status.message() << "\n";
  std::vector<std::vector<double>> seconds(stepTimes.size());
  for (size_t i = 0; i < stepTimes.size(); ++i)
    for (double ms : stepTimes[i])
      seconds[i].push_back(ms / 1e3);
  std::vector<double> runSeconds;
  for (double ms : runMs)
    runSeconds.push_back(ms / 1e3);
  rt::ProfileReport report = rt::analyzeProfile(plan, seconds, work, runSeconds, threads,
                                                status.ok() ? &ceilings : nullptr);
  if (runProfile)
    llvm::outs() << rt::profileTable(report);
  if (runProfileJson.empty())
    return true;
  std::error_code ec;
  llvm::raw_fd_ostream file(runProfileJson, ec);
  if (ec) {
    error = "cannot write --profile-json '" + runProfileJson + "': " + ec.message();
    return false;
  }
  file << rt::profileJson(report);
  return true;
}

/// Runs one input set warmup + repeat times; writes its outputs.
bool runInputSet(const rt::Plan &plan, const InputSet &set, std::string &error) {
  std::vector<rt::RunTensor> inputs(plan.inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor &t = set.tensors[i];
    if (t.dims.size() > size_t(rt::kMaxRank)) {
      error = "input '" + plan.inputs[i].name + "' has rank " + std::to_string(t.dims.size()) +
              ", more than " + std::to_string(rt::kMaxRank);
      return false;
    }
    inputs[i].data = const_cast<uint8_t *>(t.bytes.data());
    inputs[i].bytes = t.bytes.size();
    inputs[i].dtype = t.dtype;
    inputs[i].rank = int32_t(t.dims.size());
    for (size_t d = 0; d < t.dims.size(); ++d)
      inputs[i].dims[d] = t.dims[d];
  }
  std::vector<rt::RunTensor> outputs(plan.outputs.size());
  // The first run allocates the outputs; later runs write into them as
  // caller-owned buffers (and clear `allocated`), so ownership is kept here.
  std::vector<bool> owned(outputs.size(), false);
  auto release = [&] {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (owned[i] || outputs[i].allocated)
        std::free(outputs[i].data);
  };
  std::vector<double> times;
  std::vector<std::vector<double>> stepTimes(plan.steps.size()); // [step][repeat], ms
  rt::RunProfile profile;
  const bool profiling = runProfile || !runProfileJson.empty();
  unsigned total = runWarmup + std::max(1u, unsigned(runRepeat));
  for (unsigned r = 0; r < total; ++r) {
    auto start = std::chrono::steady_clock::now();
    rt::Status status = rt::execute(plan, inputs, outputs, nullptr, profiling ? &profile : nullptr);
    for (size_t i = 0; i < outputs.size(); ++i)
      owned[i] = owned[i] || outputs[i].allocated;
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!status.ok()) {
      release();
      error = (set.label.empty() ? "" : "input set '" + set.label + "': ") + status.message();
      return false;
    }
    if (r >= runWarmup) {
      times.push_back(ms);
      for (size_t i = 0; profiling && i < profile.stepSeconds.size(); ++i)
        stepTimes[i].push_back(profile.stepSeconds[i] * 1e3);
    }
  }
  if (profiling && !printProfile(plan, stepTimes, profile.stepWork, times, error)) {
    release();
    return false;
  }
  std::string prefix = set.label.empty() ? "" : "[" + set.label + "] ";
  llvm::outs() << prefix << "latency: median " << llvm::format("%.3f", percentile(times, 0.5))
               << " ms, min " << llvm::format("%.3f", *std::min_element(times.begin(), times.end()))
               << " ms, max " << llvm::format("%.3f", *std::max_element(times.begin(), times.end()))
               << " ms over " << times.size() << " run(s)\n";
  bool ok = true;
  for (size_t i = 0; i < outputs.size() && ok; ++i) {
    HostTensor t;
    t.dtype = outputs[i].dtype;
    t.dims.assign(outputs[i].dims, outputs[i].dims + outputs[i].rank);
    const uint8_t *data = static_cast<const uint8_t *>(outputs[i].data);
    t.bytes.assign(data, data + size_t(t.numElements()) * rt::dtypeBytes(t.dtype));
    llvm::outs() << prefix << "output '" << plan.outputs[i].name << "' " << rt::dtypeName(t.dtype)
                 << " " << formatDims(t.dims) << "\n";
    if (runOutput.empty())
      continue;
    std::string dir = runOutput;
    if (!set.label.empty())
      dir += "/" + set.label;
    if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
      error = "cannot create '" + dir + "': " + ec.message();
      ok = false;
      break;
    }
    ok = octet::io::writeNpy(dir + "/" + plan.outputs[i].name + ".npy", t, error);
  }
  release();
  return ok;
}

} // namespace

/// The compile flags that run and compile share (an error is printed).
static bool compileOptionsFromFlags(octet::CompileOptions &options) {
  if (runGemm == "auto")
    options.kernels.gemm = rt::KernelOptions::Gemm::Auto;
  else if (runGemm == "jit")
    options.kernels.gemm = rt::KernelOptions::Gemm::Jit;
  else if (runGemm == "onednn")
    options.kernels.gemm = rt::KernelOptions::Gemm::OneDnn;
  else {
    llvm::errs() << "error: --gemm '" << runGemm << "': give auto, jit or onednn\n";
    return false;
  }
  if (runIsa == "avx2")
    options.kernels.allowAvx512 = false;
  else if (runIsa != "host") {
    llvm::errs() << "error: --isa '" << runIsa << "': give host or avx2\n";
    return false;
  }
  if (std::string error; !options.kernels.setTarget(runTarget, error)) {
    llvm::errs() << "error: --target: " << error << "\n";
    return false;
  }
  options.kernels.autotune = runAutotune;
  if (runAttention != "f32" && runAttention != "bf16") {
    llvm::errs() << "error: --attention '" << runAttention << "': give f32 or bf16\n";
    return false;
  }
  options.kernels.attentionBf16 = runAttention == "bf16";
  if (runPrecision != "f32" && runPrecision != "bf16") {
    llvm::errs() << "error: --precision '" << runPrecision << "': give f32 or bf16\n";
    return false;
  }
  options.kernels.linearBf16 = runPrecision == "bf16";
  // --precision bf16 takes attention's matmuls to bf16 too unless --attention says otherwise.
  if (options.kernels.linearBf16 && !runAttention.getNumOccurrences())
    options.kernels.attentionBf16 = true;
  options.passes = runPasses;
  if (!memoryBudget(options.memoryBudget))
    return false;
  if (runInt8 == "static")
    options.int8 = octet::CompileOptions::Int8::Static;
  else if (runInt8 == "dynamic")
    options.int8 = octet::CompileOptions::Int8::Dynamic;
  else if (runInt8 != "none") {
    llvm::errs() << "error: --int8 '" << runInt8 << "': give static, dynamic or none\n";
    return false;
  }
  if (options.int8 != octet::CompileOptions::Int8::Static) {
    // Flags that only static INT8 reads would be silently ignored.
    for (cl::Option *flag : std::initializer_list<cl::Option *>{
             &runCalib, &runSmoothAlpha, &runNoSmooth, &runCalibPercentile})
      if (flag->getNumOccurrences()) {
        llvm::errs() << "error: --" << flag->ArgStr << " needs --int8=static\n";
        return false;
      }
  }
  options.calibrationSamples = runCalib;
  options.calibrationPercentile = runCalibPercentile;
  options.smoothquant = !runNoSmooth;
  options.packTokens = !runNoPackTokens;
  options.smoothquantAlpha = runSmoothAlpha;
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

/// Flags that only compiling reads, for a model.so (compiled already).
static const std::initializer_list<cl::Option *> compileFlags = {
    &runGemm, &runIsa, &runPasses, &runInt8, &runCalib,
    &runSmoothAlpha, &runNoSmooth, &runCalibPercentile, &runPrintIr,
    &runTarget, &runAutotune, &runPrintKernelChoices, &runExplainFusion, &runPrecision,
    &runNoPackTokens};

/// Whether `path` starts with the ELF magic (a model.so rather than ONNX).
/// Only a regular file is read (opened without blocking: a FIFO never makes
/// it wait); anything else goes to the importer, which names what it is.
static bool isElfFile(const std::string &path) {
  const char elf[4] = {0x7f, 'E', 'L', 'F'};
  char magic[4] = {};
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return false;
  struct stat st;
  bool isElf = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::read(fd, magic, 4) == 4 &&
               std::memcmp(magic, elf, 4) == 0;
  ::close(fd);
  return isElf;
}

/// The fusion report: all of it with --explain-fusion, else a warning line
/// when a block stayed unfused (a silent slow path is a bug).
static void printFusionReport(const octet::FusionReport &report) {
  if (runExplainFusion)
    llvm::outs() << report.text();
  else if (std::string warning = report.warning(); !warning.empty())
    llvm::errs() << "warning: " << warning << "\n";
}

static int runRun() {
  if (runThreads < 0) {
    llvm::errs() << "error: --threads must be positive\n";
    return 1;
  }
  if (runThreads > 0)
    omp_set_num_threads(runThreads);
  if (!llvm::sys::fs::exists(runModel)) {
    llvm::errs() << "error: cannot open '" << runModel << "': no such file\n";
    return 1;
  }
  std::unique_ptr<rt::Plan> plan;
  auto start = std::chrono::steady_clock::now();
  auto elapsedMs = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  if (isElfFile(runModel)) {
    // A model.so of octetc compile: its compile settings are inside it.
    for (cl::Option *flag : compileFlags)
      if (flag->getNumOccurrences()) {
        llvm::errs() << "error: --" << flag->ArgStr << " applies when compiling; '" << runModel
                     << "' is compiled already\n";
        return 1;
      }
    if (rt::Status status = rt::openAotModel(runModel, plan); !status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    llvm::outs() << "opened '" << runModel << "' in " << llvm::format("%.1f", elapsedMs()) << " ms";
  } else {
    octet::CompileOptions options;
    if (!compileOptionsFromFlags(options))
      return 1;
    octet::CalibrationSummary calibration;
    options.calibrationSummary = &calibration;
    rt::GemmChoiceLog choices;
    options.kernels.choices = &choices;
    octet::FusionReport fusion;
    options.fusionReport = &fusion;
    rt::Status status = octet::compileOnnxFile(runModel, options, plan);
    double compileMs = elapsedMs();
    if (!status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    printFusionReport(fusion);
    if (runPrintKernelChoices)
      llvm::outs() << rt::formatGemmChoices(choices, options.kernels);
    // A plan for another CPU is built, never run here (no SIGILL).
    if (std::string why = options.kernels.whyNotRunnableHere(); !why.empty()) {
      llvm::errs() << "error: " << why
                   << "; run it on such a CPU (octetc compile --target=" << options.kernels.target
                   << " makes a model.so for it)\n";
      return 1;
    }
    llvm::outs() << "compiled '" << runModel << "' in " << llvm::format("%.1f", compileMs) << " ms";
    if (calibration.batches > 0)
      llvm::outs() << " (calibration " << llvm::format("%.1f", 1e3 * calibration.seconds)
                   << " ms, the rest "
                   << llvm::format("%.1f", compileMs - 1e3 * calibration.seconds) << " ms)";
  }
  if (rt::Status valid = rt::validatePlan(*plan); !valid.ok()) {
    llvm::errs() << "error: internal: the plan is malformed: " << valid.message() << "\n";
    return 1;
  }
  llvm::outs() << ": " << plan->steps.size() << " steps, " << plan->tensors.size() << " tensors, "
               << plan->arenaSlots.size() << " arena slots\n";
  if (runPrintPlan)
    llvm::outs() << plan->describe();
  std::vector<InputSet> sets;
  std::string error;
  if (!collectInputSets(*plan, sets, error)) {
    llvm::errs() << "error: " << error << "\n";
    return 1;
  }
  for (const InputSet &set : sets)
    if (!runInputSet(*plan, set, error)) {
      llvm::errs() << "error: " << error << "\n";
      return 1;
    }
  return 0;
}

static int runCompile() {
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
               << image.code.size() << "; " << plan->steps.size() << " steps, "
               << image.kernelCalls << " kernel calls of " << image.kernels
               << " distinct kernels), target '" << options.kernels.target << "', "
               << (link.oneDnn ? "with" : "without") << " oneDNN\n"
               << "compiled '" << runModel << "' in " << llvm::format("%.1f", compileMs) << " ms";
  if (calibration.batches > 0)
    llvm::outs() << " (calibration " << llvm::format("%.1f", 1e3 * calibration.seconds) << " ms)";
  llvm::outs() << ", linked in " << llvm::format("%.1f", elapsedMs(linkStart)) << " ms by "
               << report.compiler << " with the runtime of " << report.runtimeDir << "\n";
  return 0;
}

/// Where the mapped byte `address` lies in its shared object's file (through
/// the loaded segments' program headers), -1 if in none: for tests that
/// patch a model.so's sections.
static int64_t fileOffsetOf(const void *address) {
  struct Search {
    uintptr_t address;
    int64_t offset = -1;
  } search{reinterpret_cast<uintptr_t>(address)};
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *data) {
        auto *s = static_cast<Search *>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &ph = info->dlpi_phdr[i];
          uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= begin && s->address < begin + ph.p_filesz) {
            s->offset = int64_t(ph.p_offset + (s->address - begin));
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.offset;
}

static int runInspect() {
  std::shared_ptr<const void> library;
  rt::PlanImageView view;
  if (rt::Status status = rt::mapAotModel(inspectModel, library, view); !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << "model.so '" << inspectModel << "': plan " << view.planBytes
               << " bytes at file offset " << fileOffsetOf(view.plan) << ", constants "
               << view.constantsBytes << " bytes at file offset " << fileOffsetOf(view.constants)
               << ", code " << view.codeBytes << " bytes at file offset " << fileOffsetOf(view.code)
               << "\n";
  if (!inspectCode.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream file(inspectCode, ec);
    if (ec) {
      llvm::errs() << "error: cannot write --code '" << inspectCode << "': " << ec.message()
                   << "\n";
      return 1;
    }
    file.write(reinterpret_cast<const char *>(view.code), view.codeBytes);
    llvm::outs() << "code section written to '" << inspectCode << "'\n";
  }
  rt::PlanImageInfo info;
  if (rt::Status status = rt::describePlanImage(view, info); !status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::outs() << "Octet " << info.octetVersion << ", plan format " << info.formatVersion
               << ", target '" << info.target << "' (" << info.features.describe() << "), "
               << info.constants.size() << " constant ranges, " << info.kernels.size()
               << " kernel calls:\n";
  for (size_t i = 0; i < info.kernels.size(); ++i)
    llvm::outs() << "  kernel " << i << ": " << info.kernels[i].name << " at code offset "
                 << info.kernels[i].offset << ", " << info.kernels[i].bytes << " bytes\n";
  std::unique_ptr<rt::Plan> plan;
  rt::KernelOptions options;
  if (rt::Status status = rt::readPlanImage(view, library, plan, &options); !status.ok()) {
    llvm::outs() << "cannot open it on this CPU: " << status.message() << "\n";
    return 0;
  }
  llvm::outs() << "target '" << options.target << "': " << plan->steps.size() << " steps, "
               << plan->inputs.size() << " inputs, " << plan->outputs.size() << " outputs\n";
  for (size_t i = 0; i < plan->steps.size(); ++i)
    llvm::outs() << "  step " << i << ": " << plan->steps[i]->kind() << " '"
                 << plan->steps[i]->location << "'\n";
  return 0;
}

static int runCalibrate() {
  octet::CompileOptions options;
  if (calibrateGemm == "auto")
    options.kernels.gemm = rt::KernelOptions::Gemm::Auto;
  else if (calibrateGemm == "jit")
    options.kernels.gemm = rt::KernelOptions::Gemm::Jit;
  else if (calibrateGemm == "onednn")
    options.kernels.gemm = rt::KernelOptions::Gemm::OneDnn;
  else {
    llvm::errs() << "error: --gemm '" << calibrateGemm << "': give auto, jit or onednn\n";
    return 1;
  }
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
  rt::Status status =
      octet::calibrateOnnxFile(calibrateModel, options, calibrateOutput, &summary);
  if (!status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  llvm::errs() << "calibrated '" << calibrateModel << "': " << summary.linears
               << " linear(s) observed over " << summary.batches << " batch(es) ("
               << summary.rows << " rows per linear) from '" << summary.samples << "' in "
               << llvm::format("%.1f", summary.seconds) << " s";
  if (calibratePercentile > 0)
    llvm::errs() << llvm::format(" (per-tensor ranges: mean %g-th percentiles)",
                                 double(calibratePercentile));
  llvm::errs() << "\n";
  return 0;
}

static int runCeilings() {
  if (ceilingsThreads < 0 || ceilingsRounds < 1) {
    llvm::errs() << "error: --threads and --rounds must be positive\n";
    return 1;
  }
  rt::Ceilings c;
  bool cached = false;
  std::string note;
  rt::Status status = rt::loadOrMeasureCeilings(ceilingsThreads, ceilingsRefresh, c, &cached, &note,
                                                ceilingsRounds);
  if (!note.empty())
    llvm::errs() << "note: " << note << "\n";
  if (!status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  if (ceilingsJson) {
    llvm::outs() << c.toJson();
    return 0;
  }
  llvm::outs() << "ceilings of '" << c.cpu << "' on " << c.host << ", " << c.threads
               << " thread(s) (" << (cached ? "cached" : "measured now") << ": "
               << rt::ceilingsCachePath(ceilingsThreads) << ")\n"
               << llvm::format("  fp32 FMA     %8.1f GFLOP/s  (%s vfmadd231ps)\n", c.fp32Gflops,
                               c.fp32Isa.c_str());
  if (c.int8Gops > 0)
    llvm::outs() << llvm::format("  int8 dot     %8.1f GOP/s    (%s vpdpbusd)\n", c.int8Gops,
                                 c.int8Isa.c_str());
  else
    llvm::outs() << "  int8 dot          - (no VNNI)\n";
  if (c.amxInt8Gops > 0)
    llvm::outs() << llvm::format("  int8 AMX     %8.1f GOP/s    (tdpbusd)\n", c.amxInt8Gops);
  else
    llvm::outs() << "  int8 AMX          -  AMX: not available ("
                 << (c.amxNote.empty() ? "not measured" : c.amxNote) << ")\n";
  auto mib = [](int64_t bytes) { return double(bytes) / double(1 << 20); };
  llvm::outs() << llvm::format("  read L2      %8.1f GB/s     (%.2f MiB in all)\n", c.l2GBs,
                               mib(c.l2BufferBytes))
               << llvm::format("  read L3      %8.1f GB/s     (%.2f MiB in all; L3 %.0f MiB)\n",
                               c.l3GBs, mib(c.l3BufferBytes), mib(c.l3CacheBytes))
               << llvm::format("  read DRAM    %8.1f GB/s     (%.0f MiB in all)\n", c.dramGBs,
                               mib(c.dramBufferBytes))
               << llvm::format("  measured in %.2f s\n", c.measureSeconds);
  return 0;
}

static int runOps() {
  for (llvm::StringRef op : octet::supportedOnnxOps())
    llvm::outs() << op << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  for (cl::SubCommand *command :
       {&cl::SubCommand::getTopLevel(), &importCommand, &opsCommand, &runCommand,
        &compileCommand, &inspectCommand, &calibrateCommand, &ceilingsCommand})
    cl::HideUnrelatedOptions(octetcCategory, *command);
  cl::ParseCommandLineOptions(argc, argv,
                              "octetc: the Octet INT8 inference compiler for BERT-family "
                              "encoders\n");
  if (importCommand)
    return runImport();
  if (opsCommand)
    return runOps();
  if (runCommand)
    return runRun();
  if (compileCommand)
    return runCompile();
  if (inspectCommand)
    return runInspect();
  if (calibrateCommand)
    return runCalibrate();
  if (ceilingsCommand)
    return runCeilings();
  llvm::errs() << "octetc: give a subcommand (import, ops, run, compile, inspect, calibrate, ceilings); see octetc --help\n";
  return 1;
}
