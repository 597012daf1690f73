//===- Run.cpp - octetc run: compile (or open a model.so) and run ---------===//
#include "tools/octetc/Octetc.h"

#include "compiler/driver/Compile.h"
#include "compiler/driver/Samples.h"
#include "compiler/driver/TensorFiles.h"
#include "compiler/passes/FusionReport.h"
#include "frontends/onnx/Importer.h" // physicalMemoryBytes
#include "runtime/AotLoader.h"
#include "runtime/Ceilings.h"
#include "runtime/Executor.h"
#include "runtime/KernelSelection.h"
#include "runtime/Profile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

namespace octetc {

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
  bool isFloat =
      io.dtype == rt::DType::F32 || io.dtype == rt::DType::F64 || io.dtype == rt::DType::F16;
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

/// The class and step tables of --profile (runtime/Profile.h), slowest first,
/// under the machine's ceilings (measured once, then cached) with the compute
/// peaks sampled between the runs; --profile-json writes the same as JSON
/// (with --input-sets: the last set's).
bool printProfile(const rt::Plan &plan, const std::vector<std::vector<double>> &stepTimes,
                  const std::vector<rt::Work> &work, const std::vector<double> &runMs,
                  const rt::SampledPeaks &peaks, std::string &error) {
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
                                                status.ok() ? &ceilings : nullptr, &peaks);
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
  // The compute peaks, sampled before every profiled run: a step's efficiency
  // is then a fraction of the peak of the same minutes (a shared host's moves).
  // Only the loops some step is held to (each costs 10 ms per repeat).
  std::unique_ptr<rt::ComputePeakSampler> peaks;
  if (profiling) {
    bool int8 = false, bf16 = false;
    for (const auto &step : plan.steps) {
      const rt::PeakKind held = rt::peakKindOf(step->kind());
      int8 |= held == rt::PeakKind::Int8, bf16 |= held == rt::PeakKind::Bf16;
    }
    peaks = std::make_unique<rt::ComputePeakSampler>(omp_get_max_threads(), int8, bf16);
  }
  unsigned total = runWarmup + std::max(1u, unsigned(runRepeat));
  for (unsigned r = 0; r < total; ++r) {
    if (peaks && r >= runWarmup)
      peaks->sample();
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
  if (profiling && !printProfile(plan, stepTimes, profile.stepWork, times, peaks->peaks(), error)) {
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

/// Flags that only compiling reads, for a model.so (compiled already).
const std::initializer_list<cl::Option *> compileFlags = {
    &runGemm,          &runIsa,         &runPasses,      &runInt8,
    &runCalib,         &runSmoothAlpha, &runNoSmooth,    &runCalibPercentile,
    &runPrintIr,       &runTarget,      &runAutotune,    &runPrintKernelChoices,
    &runExplainFusion, &runPrecision,   &runNoPackTokens};

/// Whether `path` starts with the ELF magic (a model.so rather than ONNX).
/// Only a regular file is read (opened without blocking: a FIFO never makes
/// it wait); anything else goes to the importer, which names what it is.
bool isElfFile(const std::string &path) {
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

} // namespace

int runRun() {
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
    rt::OptionSettings settings;
    if (!setOptionFromFlag(settings, "constants", runConstants))
      return 1;
    if (rt::Status status =
            rt::openAotModel(runModel, plan, nullptr,
                             settings.constantsOnHugePages ? rt::ConstantPlacement::HugePages
                                                           : rt::ConstantPlacement::Mapped);
        !status.ok()) {
      llvm::errs() << "error: " << status.message() << "\n";
      return 1;
    }
    llvm::outs() << "opened '" << runModel << "' in " << llvm::format("%.1f", elapsedMs()) << " ms";
  } else {
    if (runConstants.getNumOccurrences()) {
      llvm::errs() << "error: --constants applies when opening a model.so; a compile from ONNX "
                      "packs the weights onto huge pages in memory of its own\n";
      return 1;
    }
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

} // namespace octetc
