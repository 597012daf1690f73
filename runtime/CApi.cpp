//===- CApi.cpp - the C API (include/octet/octet.h) over the C++ runtime --===//
//
// Every entry point validates its pointers, catches every exception and turns
// failures into an octet_status plus the thread's last-error message. Shared
// by liboctet.so and every AOT model.so (CApiInternal.h); the compiler's
// entry points are in CApiJit.cpp and CApiAot.cpp.
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "runtime/AotLoader.h"
#include "runtime/CApiInternal.h"
#include "runtime/Executor.h"
#include "runtime/Options.h"
#include "runtime/Profile.h"

#include <omp.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

using octet::capi::fail;
using octet::capi::guarded;
using octet::rt::DType;
using octet::rt::Plan;
using octet::rt::RunError;
using octet::rt::RunTensor;

namespace {

thread_local std::string lastError;

/// The runtime's DType for a C API dtype code; false for a code outside the enum.
bool dtypeFromCode(int32_t code, DType &result) {
  if (code < OCTET_F32 || code > OCTET_F16)
    return false;
  result = DType(code - 1); // the enums list the same types in the same order
  return true;
}

/// The same for a value typed as the enum (which may hold any int from C);
/// it is read through its representation, never loaded as an enum.
bool toDType(const octet_dtype &dtype, DType &result) {
  int32_t code;
  std::memcpy(&code, &dtype, sizeof(code));
  return dtypeFromCode(code, result);
}

octet_dtype fromDType(DType dtype) { return octet_dtype(int(dtype) + 1); }
static_assert(int(octet::rt::kLastDType) + 1 == OCTET_F16, "octet_dtype ends where DType does");

octet_status ioInfo(const octet_model *model, int32_t index, octet_tensor_info *info, bool input) {
  const char *kind = input ? "input" : "output";
  if (!model)
    return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(kind) + " info: model is null");
  if (!info)
    return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(kind) + " info: info is null");
  const auto &ios = input ? model->plan->inputs : model->plan->outputs;
  if (index < 0 || size_t(index) >= ios.size())
    return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(kind) + " index " +
                                                  std::to_string(index) + " is out of range [0, " +
                                                  std::to_string(ios.size()) + ")");
  const octet::rt::IoInfo &io = ios[index];
  const auto &names = (input ? model->inputDimNames : model->outputDimNames)[index];
  info->name = io.name.c_str();
  info->dtype = fromDType(io.dtype);
  info->rank = int32_t(io.dims.size());
  info->dims = io.dims.data();
  info->dim_names = names.data();
  return OCTET_OK;
}

} // namespace

octet_status octet::capi::fail(octet_status status, const std::string &message) noexcept {
  try {
    lastError = message;
  } catch (...) {
    lastError.clear(); // out of memory for the message itself
  }
  return status;
}

octet_status octet::capi::modelFromPlan(std::unique_ptr<rt::Plan> plan,
                                        const octet_options *options, octet_model **model) {
  octet_status result = wrapPlanAsModel(std::move(plan), model);
  if (result == OCTET_OK && options)
    (*model)->profile = options->profile;
  return result;
}

octet_status octet::wrapPlanAsModel(std::unique_ptr<rt::Plan> plan, octet_model **model) {
  return guarded("octet_model", [&]() -> octet_status {
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "model output pointer is null");
    *model = nullptr;
    if (!plan)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "plan is null");
    if (rt::Status status = rt::validatePlan(*plan); !status.ok())
      return fail(OCTET_ERROR_RUNTIME, status.message());
    auto result = std::make_unique<octet_model>();
    auto names = [](const rt::IoInfo &io) {
      static const char empty[] = "";
      std::vector<const char *> list(io.dims.size(), empty);
      for (size_t d = 0; d < io.dimNames.size(); ++d)
        list[d] = io.dimNames[d].c_str();
      return list;
    };
    for (const auto &io : plan->inputs)
      result->inputDimNames.push_back(names(io));
    for (const auto &io : plan->outputs)
      result->outputDimNames.push_back(names(io));
    result->plan = std::move(plan);
    *model = result.release();
    return OCTET_OK;
  });
}

extern "C" {

const char *octet_last_error(void) { return lastError.c_str(); }

size_t octet_dtype_size(octet_dtype dtype) {
  DType d;
  return toDType(dtype, d) ? octet::rt::dtypeBytes(d) : 0;
}

const char *octet_dtype_name(octet_dtype dtype) {
  DType d;
  return toDType(dtype, d) ? octet::rt::dtypeName(d) : "unknown";
}

octet_options *octet_options_create(void) {
  octet_options *options = new (std::nothrow) octet_options();
  if (!options)
    fail(OCTET_ERROR_RUNTIME, "octet_options_create: out of memory");
  return options;
}

octet_status octet_options_set(octet_options *options, const char *key, const char *value) {
  return guarded("octet_options_set", [&]() -> octet_status {
    if (!options || !key || !value)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string("octet_options_set: ") +
                                                    (!options ? "options"
                                                     : !key   ? "key"
                                                              : "value") +
                                                    " is null");
    std::string k(key), v(value);
    // One vocabulary for the C API and octetc (runtime/Options.h).
    if (octet::rt::OptionError error; !octet::rt::setOption(*options, k, v, error)) {
      if (error.unknownKey)
        return fail(OCTET_ERROR_INVALID_ARGUMENT,
                    "unknown option '" + k + "' (known: " + octet::rt::kOptionKeys + ")");
      if (!error.reason.empty())
        return fail(OCTET_ERROR_INVALID_ARGUMENT, "option '" + k + "': " + error.reason);
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "option '" + k + "': invalid value '" + v +
                                                    "' (expected " + error.expected + ")");
    }
    if (k != "profile" && k != "constants") // what opening a model.so reads too
      options->compileKeys.push_back(k);
    return OCTET_OK;
  });
}

void octet_options_destroy(octet_options *options) { delete options; }

octet_status octet_model_open(const char *so_path, const octet_options *options,
                              octet_model **model) {
  return guarded("octet_model_open", [&]() -> octet_status {
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_open: model is null");
    *model = nullptr;
    if (options && !options->compileKeys.empty())
      return fail(OCTET_ERROR_INVALID_ARGUMENT,
                  "octet_model_open: option '" + options->compileKeys.front() +
                      "' is a compile option; a model.so was compiled with its own "
                      "(octetc compile); only 'profile' and 'constants' apply when opening");
    std::unique_ptr<Plan> plan;
    octet::rt::Status status;
    const auto placement = !options || options->constantsOnHugePages
                               ? octet::rt::ConstantPlacement::HugePages
                               : octet::rt::ConstantPlacement::Mapped;
    if (so_path) {
      status = octet::rt::openAotModel(so_path, plan, nullptr, placement);
    } else {
      const octet::rt::AotImageDescriptor *embedded = octet::capi::embeddedAotImage();
      if (!embedded)
        return fail(OCTET_ERROR_INVALID_ARGUMENT,
                    "octet_model_open: so_path is null, which opens the model embedded in a "
                    "model.so this program links; this is liboctet.so, which embeds none");
      // The image is part of this very library: nothing to keep open.
      status = octet::rt::openAotImage(*embedded, nullptr, plan, nullptr, placement);
      if (!status.ok())
        status = octet::rt::Status::error("the embedded model: " + status.message());
    }
    if (!status.ok())
      return fail(OCTET_ERROR_INVALID_MODEL, "octet_model_open: " + status.message());
    return octet::capi::modelFromPlan(std::move(plan), options, model);
  });
}

void octet_model_destroy(octet_model *model) { delete model; }

const char *octet_model_fusion_report(const octet_model *model) {
  if (!model) {
    fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_fusion_report: model is null");
    return nullptr;
  }
  return model->fusionReport.c_str();
}

int32_t octet_model_num_inputs(const octet_model *model) {
  if (!model) {
    fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_num_inputs: model is null");
    return -1;
  }
  return int32_t(model->plan->inputs.size());
}

int32_t octet_model_num_outputs(const octet_model *model) {
  if (!model) {
    fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_model_num_outputs: model is null");
    return -1;
  }
  return int32_t(model->plan->outputs.size());
}

octet_status octet_model_input_info(const octet_model *model, int32_t index,
                                    octet_tensor_info *info) {
  return guarded("octet_model_input_info", [&] { return ioInfo(model, index, info, true); });
}

octet_status octet_model_output_info(const octet_model *model, int32_t index,
                                     octet_tensor_info *info) {
  return guarded("octet_model_output_info", [&] { return ioInfo(model, index, info, false); });
}

octet_status octet_run(const octet_model *model, const octet_tensor *inputs, int32_t num_inputs,
                       octet_tensor *outputs, int32_t num_outputs) {
  return guarded("octet_run", [&]() -> octet_status {
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: model is null");
    if (num_inputs < 0 || num_outputs < 0)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: negative tensor count");
    if (num_inputs > 0 && !inputs)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: inputs is null");
    if (num_outputs > 0 && !outputs)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: outputs is null");
    const Plan &plan = *model->plan;
    // The counts are the caller's claims about its arrays: check them against
    // the model before reading an element or allocating for them.
    if (size_t(num_inputs) != plan.inputs.size())
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: expected " +
                                                    std::to_string(plan.inputs.size()) +
                                                    " inputs, got " + std::to_string(num_inputs));
    if (size_t(num_outputs) != plan.outputs.size())
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: expected " +
                                                    std::to_string(plan.outputs.size()) +
                                                    " outputs, got " + std::to_string(num_outputs));

    std::vector<RunTensor> runInputs(static_cast<size_t>(num_inputs));
    std::vector<RunTensor> runOutputs(static_cast<size_t>(num_outputs));
    for (int32_t i = 0; i < num_inputs; ++i) {
      const octet_tensor &in = inputs[i];
      RunTensor &t = runInputs[i];
      std::string where = "octet_run: input " + std::to_string(i);
      if (size_t(i) < plan.inputs.size())
        where += " '" + plan.inputs[i].name + "'";
      // The caller's dtype may be any int: read it as one (loading an
      // out-of-range value as the enum is undefined behaviour).
      int32_t dtypeCode;
      static_assert(sizeof(in.dtype) == sizeof(dtypeCode), "octet_dtype is an int");
      std::memcpy(&dtypeCode, &in.dtype, sizeof(dtypeCode));
      if (!dtypeFromCode(dtypeCode, t.dtype))
        return fail(OCTET_ERROR_INVALID_INPUT,
                    where + " has an unknown dtype " + std::to_string(dtypeCode));
      if (in.rank < 0 || in.rank > OCTET_MAX_RANK)
        return fail(OCTET_ERROR_INVALID_INPUT, where + " has rank " + std::to_string(in.rank) +
                                                   " (0 to " + std::to_string(OCTET_MAX_RANK) +
                                                   ")");
      t.data = in.data;
      t.bytes = in.bytes;
      t.rank = in.rank;
      std::memcpy(t.dims, in.dims, sizeof(int64_t) * size_t(in.rank));
    }
    for (int32_t i = 0; i < num_outputs; ++i) {
      runOutputs[i].data = outputs[i].data;
      runOutputs[i].bytes = outputs[i].data ? outputs[i].bytes : 0;
    }

    RunError error = RunError::None;
    octet::rt::RunProfile profile;
    const auto start = std::chrono::steady_clock::now();
    octet::rt::Status status = octet::rt::execute(plan, runInputs, runOutputs, &error,
                                                  model->profile ? &profile : nullptr);
    if (model->profile && status.ok()) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<std::mutex> lock(model->profileMutex);
      model->lastProfile = std::move(profile);
      model->lastRunSeconds = seconds;
      model->haveProfile = true;
    }
    if (status.ok() || error == RunError::OutputTooSmall) {
      for (int32_t i = 0; i < num_outputs; ++i) {
        const RunTensor &t = runOutputs[i];
        octet_tensor &out = outputs[i];
        out.dtype = fromDType(t.dtype);
        out.rank = t.rank;
        std::memcpy(out.dims, t.dims, sizeof(int64_t) * size_t(t.rank));
        if (status.ok()) {
          out.data = t.data;
          out.bytes = t.bytes;
        }
      }
    }
    if (status.ok())
      return OCTET_OK;
    switch (error) {
    case RunError::InvalidArgument:
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_run: " + status.message());
    case RunError::InvalidInput:
      return fail(OCTET_ERROR_INVALID_INPUT, "octet_run: " + status.message());
    case RunError::OutputTooSmall:
      return fail(OCTET_ERROR_OUTPUT_TOO_SMALL, "octet_run: " + status.message());
    default:
      return fail(OCTET_ERROR_RUNTIME, "octet_run: " + status.message());
    }
  });
}

void octet_tensor_free(void *data) { std::free(data); }

octet_status octet_model_last_profile_json(const octet_model *model, char *buffer, size_t size,
                                           size_t *needed) {
  return guarded("octet_model_last_profile_json", [&]() -> octet_status {
    const char *at = "octet_model_last_profile_json: ";
    if (needed)
      *needed = 0;
    if (!model)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(at) + "model is null");
    if (!buffer && size > 0)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(at) + "buffer is null, size > 0");
    if (!model->profile)
      return fail(OCTET_ERROR_INVALID_ARGUMENT,
                  std::string(at) + "the model was created without the option profile = 1");
    octet::rt::RunProfile profile;
    double seconds = 0;
    {
      std::lock_guard<std::mutex> lock(model->profileMutex);
      if (!model->haveProfile)
        return fail(OCTET_ERROR_INVALID_ARGUMENT,
                    std::string(at) + "no successful octet_run of this model yet");
      profile = model->lastProfile;
      seconds = model->lastRunSeconds;
    }
    std::vector<std::vector<double>> stepSeconds;
    for (double s : profile.stepSeconds)
      stepSeconds.push_back({s});
    const int threads = omp_get_max_threads();
    octet::rt::Ceilings ceilings;
    const bool haveCeilings = octet::rt::loadOrMeasureCeilings(threads, false, ceilings).ok();
    const std::string json = octet::rt::profileJson(
        octet::rt::analyzeProfile(*model->plan, stepSeconds, profile.stepWork, {seconds}, threads,
                                  haveCeilings ? &ceilings : nullptr));
    return octet::capi::copyOut(json, std::string(at) + "the profile", buffer, size, needed);
  });
}

} // extern "C"
