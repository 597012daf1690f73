//===- CApiTools.cpp - C API entry points for bindings --------------------===//
//
// What the Python package (python/octet, docs/python.md) needs beyond the
// core API: the progress callback's option and the machine's ceilings as
// JSON. Shared by liboctet.so and every model.so (OctetCApiCore), like
// CApi.cpp; the compile side (octet_compile_to_so, the progress lines read
// back into counts) is liboctet's JIT entry, compiler/driver/CApiJit.cpp.
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "runtime/CApiInternal.h"
#include "runtime/Ceilings.h"

#include <cstdlib>
#include <cstring>
#include <string>

using octet::capi::fail;
using octet::capi::guarded;

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
