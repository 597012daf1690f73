//===- CApiInternal.h - C++ entry points behind the C API -------*- C++ -*-===//
//
// The C API is one implementation in two libraries: CApi.cpp (options,
// octet_model_open, inputs and outputs, run, profile, errors) is shared by
// liboctet.so, where CApiJit.cpp adds the JIT compiler's entry points, and
// every AOT model.so, where CApiAot.cpp answers them with "this is a compiled
// model" and provides the embedded image. This header is what they share;
// tests also use wrapPlanAsModel to serve a Plan built in C++.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_CAPIINTERNAL_H
#define OCTET_RUNTIME_CAPIINTERNAL_H

#include "octet/octet.h"
#include "runtime/Executor.h" // RunProfile
#include "runtime/Options.h"
#include "runtime/Plan.h"

#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace octet {
namespace rt {
struct AotImageDescriptor;
}
} // namespace octet

/// The option settings (runtime/Options.h, set by octet_options_set) and what
/// only the C API has.
struct octet_options : octet::rt::OptionSettings {
  /// octet_options_set_progress: compile progress to a callback (CApiTools.cpp).
  octet_progress_fn progress = nullptr;
  void *progressUser = nullptr;
  /// Keys set that only compiling reads: octet_model_open rejects them (a
  /// compiled model.so was built with its own).
  std::vector<std::string> compileKeys;
};

struct octet_model {
  std::unique_ptr<octet::rt::Plan> plan;
  /// dim_names arrays for octet_tensor_info, pointing into the plan's strings.
  std::vector<std::vector<const char *>> inputDimNames, outputDimNames;
  /// Option "profile": each run's step times, the last successful one kept.
  bool profile = false;
  mutable std::mutex profileMutex;
  mutable octet::rt::RunProfile lastProfile;
  mutable double lastRunSeconds = 0;
  mutable bool haveProfile = false;
  /// octet_model_fusion_report: the JIT compile's FusionReport::text().
  std::string fusionReport;
};

namespace octet {

/// Validates `plan` (validatePlan) and wraps it into a model that owns it.
/// On failure *model is null and octet_last_error() says why.
octet_status wrapPlanAsModel(std::unique_ptr<rt::Plan> plan, octet_model **model);

namespace capi {

/// Records `message` as the calling thread's last error; never throws.
octet_status fail(octet_status status, const std::string &message) noexcept;

/// Runs `body`, turning any exception into a status and message.
template <typename Body> octet_status guarded(const char *function, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return fail(OCTET_ERROR_RUNTIME, std::string(function) + ": out of memory");
  } catch (const std::exception &e) {
    return fail(OCTET_ERROR_RUNTIME, std::string(function) + ": " + e.what());
  } catch (...) {
    return fail(OCTET_ERROR_RUNTIME, std::string(function) + ": unknown exception");
  }
}

/// wrapPlanAsModel, then the options that apply to a built model ("profile").
octet_status modelFromPlan(std::unique_ptr<rt::Plan> plan, const octet_options *options,
                           octet_model **model);

/// The image of the model.so this code is linked into; null in liboctet.so.
const rt::AotImageDescriptor *embeddedAotImage();

/// Copies `text` and its NUL into `buffer` (`size` bytes), setting *needed (when
/// not null) to the bytes required; a buffer too small is
/// OCTET_ERROR_OUTPUT_TOO_SMALL, "<what> needs N bytes, the buffer holds M".
octet_status copyOut(const std::string &text, const std::string &what, char *buffer, size_t size,
                     size_t *needed);

} // namespace capi
} // namespace octet

#endif
