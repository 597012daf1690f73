//===- CApiTools.cpp - C API entry points for bindings --------------------===//
//
// What the Python package (python/octet, docs/python.md) needs beyond the
// core API: compile progress reported to a callback instead of stderr, and
// the machine's ceilings as JSON. Shared by liboctet.so and every model.so
// (OctetCApiCore), like CApi.cpp; octet_compile_to_so is in CApiJit.cpp.
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "compiler/driver/Compile.h" // CompileOptions::progress (header only)
#include "runtime/CApiInternal.h"
#include "runtime/Ceilings.h"

#include <cstdlib>
#include <cstring>
#include <string>

using octet::capi::fail;
using octet::capi::guarded;

void octet::capi::attachProgress(const octet_options &options, CompileOptions &compile) {
  if (!options.progress)
    return;
  octet_progress_fn callback = options.progress;
  void *user = options.progressUser;
  // Calibration reports lines ("calibrate: batch 3/16 (1.2 s)"); the counts
  // are read back from them so a binding can draw a bar.
  compile.progress = [callback, user](const std::string &line) {
    int64_t done = 0, total = -1;
    if (size_t at = line.find("batch "); at != std::string::npos) {
      const char *text = line.c_str() + at + 6;
      char *slash = nullptr, *end = nullptr;
      long long d = std::strtoll(text, &slash, 10);
      if (slash != text && *slash == '/') {
        long long t = std::strtoll(slash + 1, &end, 10);
        if (end != slash + 1 && t > 0) {
          done = d;
          total = t;
        }
      }
    } else if (size_t at = line.find(" batch(es)"); at != std::string::npos) {
      // "calibrate: 24 linear(s), 16 batch(es) from '...'": the start.
      size_t begin = line.rfind(' ', at - 1);
      if (begin != std::string::npos)
        total = std::strtoll(line.c_str() + begin + 1, nullptr, 10);
      if (total <= 0)
        total = -1;
    }
    callback(user, line.c_str(), done, total);
  };
}

octet_status octet::capi::copyOut(const std::string &text, const std::string &what, char *buffer,
                                  size_t size, size_t *needed) {
  if (needed)
    *needed = text.size() + 1;
  if (size < text.size() + 1)
    return fail(OCTET_ERROR_OUTPUT_TOO_SMALL, what + " needs " + std::to_string(text.size() + 1) +
                                                  " bytes, the buffer holds " +
                                                  std::to_string(size));
  std::memcpy(buffer, text.c_str(), text.size() + 1);
  return OCTET_OK;
}

extern "C" {

octet_status octet_options_set_progress(octet_options *options, octet_progress_fn callback,
                                        void *user) {
  return guarded("octet_options_set_progress", [&]() -> octet_status {
    if (!options)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, "octet_options_set_progress: options is null");
    options->progress = callback;
    options->progressUser = callback ? user : nullptr;
    return OCTET_OK;
  });
}

octet_status octet_ceilings_json(int32_t threads, int32_t refresh, char *buffer, size_t size,
                                 size_t *needed) {
  return guarded("octet_ceilings_json", [&]() -> octet_status {
    const char *at = "octet_ceilings_json: ";
    if (needed)
      *needed = 0;
    if (!buffer && size > 0)
      return fail(OCTET_ERROR_INVALID_ARGUMENT, std::string(at) + "buffer is null, size > 0");
    octet::rt::Ceilings ceilings;
    if (octet::rt::Status status =
            octet::rt::loadOrMeasureCeilings(threads, refresh != 0, ceilings);
        !status.ok())
      return fail(OCTET_ERROR_RUNTIME, at + status.message());
    return octet::capi::copyOut(ceilings.toJson(), "octet_ceilings_json: the ceilings JSON", buffer,
                                size, needed);
  });
}

} // extern "C"
