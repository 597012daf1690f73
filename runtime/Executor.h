//===- Executor.h - runs a Plan on the caller's tensors ---------*- C++ -*-===//
//
// execute() is one run: it validates the inputs against the Plan (count,
// pointers, dtype, rank, static dims, shared symbolic dims, token-id ranges),
// evaluates the scalars, sizes the outputs (checks caller buffers or allocates
// them), lays out the activation arena, resolves every tensor's address and
// runs the steps in order. It keeps no state between runs except a per-thread
// arena buffer that it reuses, so one Plan serves many threads at once.
//
// validatePlan() checks a Plan's internal references once (scalar, tensor,
// slot and input ids; view bases) so that execute() never indexes out of
// bounds; the C API calls it when a model is created.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_EXECUTOR_H
#define OCTET_RUNTIME_EXECUTOR_H

#include "runtime/Plan.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace octet::rt {

constexpr int kMaxRank = 8; // = OCTET_MAX_RANK

/// A tensor given to or returned by execute(): row-major and dense.
///  - inputs: data, dtype, rank and dims set by the caller (bytes is ignored).
///  - outputs: execute() sets dtype, rank and dims. Caller-owned: data points to
///    `bytes` bytes. Runtime-owned: data == nullptr on entry; execute() allocates
///    it (64-byte aligned, released with std::free), sets bytes and `allocated`.
struct RunTensor {
  void *data = nullptr;
  size_t bytes = 0;
  DType dtype = DType::F32;
  int32_t rank = 0;
  int64_t dims[kMaxRank] = {};
  bool allocated = false;

  int64_t numElements() const {
    int64_t count = 1;
    for (int i = 0; i < rank; ++i)
      count *= dims[i];
    return count;
  }
};

/// What went wrong in a run, for the C API's status codes.
enum class RunError : uint8_t {
  None,
  InvalidArgument, ///< wrong tensor counts, a null data pointer
  InvalidInput,    ///< an input's dtype, rank, dims or values; dims that do not fit together
  OutputTooSmall,  ///< a caller-owned output buffer (its dims are set)
  Runtime,         ///< a step failed, out of memory, a malformed plan
};

/// Wall time of each step of one run, in seconds (octetc run --profile). Timing
/// costs two clock reads per step, and nothing when no profile is asked for.
struct RunProfile {
  std::vector<double> stepSeconds;
  /// Each step's Step::work() for this run's shapes (computed after the step, untimed).
  std::vector<Work> stepWork;
};

/// Called by execute() just before each step runs, with the step's index and
/// the run's context: the step's inputs are computed and their addresses and
/// shapes resolved, so the observer can read them (and any tensor still live).
/// A non-OK Status stops the run with that message, unchanged. Calibration
/// folds every GEMM input's ranges this way as a batch runs
/// (compiler/driver/Calibrate.cpp) rather than returning each one as an
/// output. Not timed in a RunProfile; no observer costs one null test per step.
using StepObserver = std::function<Status(size_t step, const ExecContext &ctx)>;

/// Checks every id a Plan holds; the error names the entry at fault.
Status validatePlan(const Plan &plan);

/// One run of a validated Plan. On failure, outputs that execute() allocated
/// are freed again (data reset to nullptr); `error` (optional) gets the category.
/// `profile` (optional) gets each step's wall time; `observer` (optional) is
/// called before each step.
Status execute(const Plan &plan, const RunTensor *inputs, size_t numInputs, RunTensor *outputs,
               size_t numOutputs, RunError *error = nullptr, RunProfile *profile = nullptr,
               const StepObserver *observer = nullptr);

inline Status execute(const Plan &plan, const std::vector<RunTensor> &inputs,
                      std::vector<RunTensor> &outputs, RunError *error = nullptr,
                      RunProfile *profile = nullptr, const StepObserver *observer = nullptr) {
  return execute(plan, inputs.data(), inputs.size(), outputs.data(), outputs.size(), error,
                 profile, observer);
}

} // namespace octet::rt

#endif
