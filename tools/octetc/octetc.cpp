//===- octetc.cpp - the Octet command line ---------------------------------===//
//
//   octetc import MODEL [-o OUT] [--elide-weights | --emit-bytecode]   ONNX → octet IR
//   octetc ops                                            supported ONNX ops
//   octetc run MODEL [--input NAME=FILE ...] [--input-sets DIR] [--int8=...] ...   compile and run
//   octetc calibrate MODEL --samples DIR|generate:SPEC [-o FILE]   calibrated IR (octet.calib)
//   octetc ceilings [--refresh]                           the roofline's machine ceilings
//
//===----------------------------------------------------------------------===//
#include "compiler/driver/Compile.h"
#include "compiler/driver/Samples.h"
#include "compiler/driver/TensorFiles.h"
#include "compiler/passes/Passes.h"
#include "frontends/onnx/Importer.h"
#include "runtime/Ceilings.h"
#include "runtime/Executor.h"
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

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
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

static cl::SubCommand runCommand(
    "run",
    "Compile an ONNX model (FP32, or INT8 with --int8) and run it. Inputs come from --input files, from the input "
    "sets of --input-sets, or are made up (random token ids within the vocabulary, attention "
    "masks of ones with a padded tail on every other row, token type ids 0, f32 normal)");
static cl::opt<std::string> runModel(cl::Positional, cl::Required, cl::desc("<model.onnx>"),
                                     cl::sub(runCommand), cl::cat(octetcCategory));
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
                                    cl::init("auto"), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string>
    runIsa("isa", cl::desc("host (default), or avx2: act as on a host without AVX-512"),
           cl::init("host"), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runPasses(
    "passes",
    cl::desc("The passes between import and planning, as a comma-separated pipeline of function "
             "passes (default: the full FP32 pipeline; 'none': plan the imported IR as it is). "
             "Any prefix of the pipeline must compute the same outputs. With --int8 they replace "
             "the INT8 lowering only: recognition (and, static, calibration) run first, then "
             "these passes ('none': plan the recognized, calibrated FP32 IR)"),
    cl::value_desc("PIPELINE"), cl::init(""), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<std::string> runInt8(
    "int8",
    cl::desc("Compile for INT8: 'static' (calibrate on --calib samples, SmoothQuant, per-tensor "
             "activation scales), 'dynamic' (per-token activation scales at run time, no "
             "calibration) or 'none' (FP32, the default). See docs/calibration.md"),
    cl::value_desc("static|dynamic|none"), cl::init("none"), cl::sub(runCommand),
    cl::cat(octetcCategory));
static cl::opt<std::string> runCalib(
    "calib",
    cl::desc(std::string("Calibration samples for --int8=static: a directory of input sets "
                         "(like --input-sets) or generate:N[xB][xS] (N generated batches of B "
                         "sequences of S tokens; default ") +
             octet::kDefaultCalibrationSamples + ")"),
    cl::value_desc("DIR|generate:SPEC"), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<double> runSmoothAlpha(
    "smoothquant-alpha",
    cl::desc("SmoothQuant's migration strength in [0, 1] for --int8=static (default 0.7)"),
    cl::init(0.7), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<bool> runNoSmooth("no-smoothquant",
                                 cl::desc("--int8=static without SmoothQuant"),
                                 cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<double> runCalibPercentile(
    "calib-percentile",
    cl::desc("--int8=static: clip the per-tensor activation range to the P-th percentile "
             "(P in (50, 100], e.g. 99.99; default: min/max)"),
    cl::init(0), cl::sub(runCommand), cl::cat(octetcCategory));
static cl::opt<bool> runPrintIr("print-ir-after-all",
                                cl::desc("Print the IR after import and after every pass"),
                                cl::sub(runCommand), cl::cat(octetcCategory));
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
static cl::opt<std::string> calibrateSamples(
    "samples",
    cl::desc(std::string("A directory with one subdirectory per batch holding NAME.npy or "
                         "NAME.pb for every model input, or generate:N[xB][xS]: N generated "
                         "token batches of B sequences (default 8) of S tokens (default 128); "
                         "default ") +
             octet::kDefaultCalibrationSamples),
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

/// `file` or `file:node` for the importer's locations (a node's NameLoc
/// wraps the model's FileLineColLoc).
static std::string formatLocation(mlir::Location loc) {
  if (auto file = llvm::dyn_cast<mlir::FileLineColLoc>(loc))
    return file.getFilename().str();
  if (auto name = llvm::dyn_cast<mlir::NameLoc>(loc))
    return formatLocation(name.getChildLoc()) + ":" + name.getName().str();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return text;
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
    llvm::errs() << severity(diag.getSeverity()) << ": " << formatLocation(diag.getLocation())
                 << ": " << diag << "\n";
    for (const mlir::Diagnostic &note : diag.getNotes())
      llvm::errs() << "note: " << formatLocation(note.getLocation()) << ": " << note << "\n";
    return mlir::success();
  });
}

static int runImport() {
  mlir::DialectRegistry registry;
  octet::registerOctetDialects(registry);
  mlir::MLIRContext ctx(registry);
  printDiagnostics(ctx);
  auto module = octet::importOnnxFile(ctx, importModel);
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
HostTensor makeInput(const rt::IoInfo &io, const std::map<std::string, int64_t> &symbols,
                     std::mt19937_64 &rng) {
  HostTensor t;
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
  int64_t n = t.numElements();
  size_t elementSize = rt::dtypeBytes(io.dtype);
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
  return t;
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
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    set.tensors.push_back(given[i] ? std::move(*given[i])
                                   : makeInput(plan.inputs[i], symbols, rng));
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
  auto release = [&] {
    for (rt::RunTensor &o : outputs)
      if (o.allocated)
        std::free(o.data);
  };
  std::vector<double> times;
  std::vector<std::vector<double>> stepTimes(plan.steps.size()); // [step][repeat], ms
  rt::RunProfile profile;
  const bool profiling = runProfile || !runProfileJson.empty();
  unsigned total = runWarmup + std::max(1u, unsigned(runRepeat));
  for (unsigned r = 0; r < total; ++r) {
    auto start = std::chrono::steady_clock::now();
    rt::Status status = rt::execute(plan, inputs, outputs, nullptr, profiling ? &profile : nullptr);
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

static int runRun() {
  octet::CompileOptions options;
  if (runGemm == "auto")
    options.kernels.gemm = rt::KernelOptions::Gemm::Auto;
  else if (runGemm == "jit")
    options.kernels.gemm = rt::KernelOptions::Gemm::Jit;
  else if (runGemm == "onednn")
    options.kernels.gemm = rt::KernelOptions::Gemm::OneDnn;
  else {
    llvm::errs() << "error: --gemm '" << runGemm << "': give auto, jit or onednn\n";
    return 1;
  }
  if (runIsa == "avx2")
    options.kernels.allowAvx512 = false;
  else if (runIsa != "host") {
    llvm::errs() << "error: --isa '" << runIsa << "': give host or avx2\n";
    return 1;
  }
  options.passes = runPasses;
  if (runInt8 == "static")
    options.int8 = octet::CompileOptions::Int8::Static;
  else if (runInt8 == "dynamic")
    options.int8 = octet::CompileOptions::Int8::Dynamic;
  else if (runInt8 != "none") {
    llvm::errs() << "error: --int8 '" << runInt8 << "': give static, dynamic or none\n";
    return 1;
  }
  if (options.int8 != octet::CompileOptions::Int8::Static) {
    // Flags that only static INT8 reads would be silently ignored.
    for (cl::Option *flag : std::initializer_list<cl::Option *>{
             &runCalib, &runSmoothAlpha, &runNoSmooth, &runCalibPercentile})
      if (flag->getNumOccurrences()) {
        llvm::errs() << "error: --" << flag->ArgStr << " needs --int8=static\n";
        return 1;
      }
  }
  options.calibrationSamples = runCalib;
  options.calibrationPercentile = runCalibPercentile;
  options.smoothquant = !runNoSmooth;
  options.smoothquantAlpha = runSmoothAlpha;
  if (runNoSmooth && runSmoothAlpha.getNumOccurrences()) {
    llvm::errs() << "error: --smoothquant-alpha and --no-smoothquant exclude each other\n";
    return 1;
  }
  if (options.int8 == octet::CompileOptions::Int8::Static) {
    if (runCalib.empty())
      llvm::errs() << "note: calibrating on " << octet::kDefaultCalibrationSamples
                   << " (generated token batches; give real ones with --calib DIR)\n";
    options.progress = [](const std::string &line) { llvm::errs() << line << "\n"; };
  }
  if (runThreads < 0) {
    llvm::errs() << "error: --threads must be positive\n";
    return 1;
  }
  if (runThreads > 0)
    omp_set_num_threads(runThreads);
  if (runPrintIr)
    options.irAfterPass = [](const std::string &pass, const std::string &ir) {
      llvm::errs() << "// -----// IR Dump After " << pass << " //----- //\n" << ir << "\n\n";
    };
  if (!llvm::sys::fs::exists(runModel)) {
    llvm::errs() << "error: cannot open '" << runModel << "': no such file\n";
    return 1;
  }
  std::unique_ptr<rt::Plan> plan;
  octet::CalibrationSummary calibration;
  options.calibrationSummary = &calibration;
  auto start = std::chrono::steady_clock::now();
  rt::Status status = octet::compileOnnxFile(runModel, options, plan);
  double compileMs =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    llvm::errs() << "error: " << status.message() << "\n";
    return 1;
  }
  if (rt::Status valid = rt::validatePlan(*plan); !valid.ok()) {
    llvm::errs() << "error: internal: the compiled plan is malformed: " << valid.message() << "\n";
    return 1;
  }
  llvm::outs() << "compiled '" << runModel << "' in " << llvm::format("%.1f", compileMs)
               << " ms";
  if (calibration.batches > 0)
    llvm::outs() << " (calibration " << llvm::format("%.1f", 1e3 * calibration.seconds)
                 << " ms, the rest " << llvm::format("%.1f", compileMs - 1e3 * calibration.seconds)
                 << " ms)";
  llvm::outs() << ": " << plan->steps.size() << " steps, " << plan->tensors.size()
               << " tensors, " << plan->arenaSlots.size() << " arena slots\n";
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
        &calibrateCommand, &ceilingsCommand})
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
  if (calibrateCommand)
    return runCalibrate();
  if (ceilingsCommand)
    return runCeilings();
  llvm::errs() << "octetc: give a subcommand (import, ops, run, calibrate, ceilings); see octetc --help\n";
  return 1;
}
