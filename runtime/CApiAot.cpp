//===- CApiAot.cpp - the C API's compiler entry points in a model.so ------===//
//
// An AOT model.so serves the same C API as liboctet.so (CApi.cpp) but holds
// no compiler: creating a model from ONNX or calibrating is
// OCTET_ERROR_UNSUPPORTED, and octet_model_open(NULL, ...) opens the image
// this library embeds (the descriptor the linker wrote, AotLinker.cpp).
//
//===----------------------------------------------------------------------===//
#include "octet/octet.h"

#include "runtime/AotLoader.h"
#include "runtime/CApiInternal.h"

#include <string>

/// Defined by the assembly that octetc compile links into this library.
extern "C" const octet::rt::AotImageDescriptor octet_aot_image;

const octet::rt::AotImageDescriptor *octet::capi::embeddedAotImage() { return &octet_aot_image; }

namespace {

octet_status compiledModelOnly(const char *function, octet_model **model) {
  if (model)
    *model = nullptr;
  return octet::capi::fail(OCTET_ERROR_UNSUPPORTED,
                           std::string(function) +
                               ": this library is a compiled Octet model (octetc compile), "
                               "it holds no compiler; open its model with "
                               "octet_model_open(NULL, ...), or compile ONNX with liboctet.so");
}

} // namespace

extern "C" {

octet_status octet_model_create_from_file(const char *, const octet_options *,
                                          octet_model **model) {
  return compiledModelOnly("octet_model_create_from_file", model);
}

octet_status octet_model_create_from_bytes(const void *, size_t, const octet_options *,
                                           octet_model **model) {
  return compiledModelOnly("octet_model_create_from_bytes", model);
}

octet_status octet_calibrate(const char *, const char *, const octet_options *, const char *) {
  return compiledModelOnly("octet_calibrate", nullptr);
}

} // extern "C"
