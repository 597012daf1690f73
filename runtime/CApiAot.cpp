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

namespace __gnu_cxx {
// libstdc++'s (eh_alloc.cc), not declared in its headers.
void __freeres() noexcept;
} // namespace __gnu_cxx

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

/// A model.so links libstdc++ statically, and that copy allocates its
/// emergency exception pool (about 71 KiB) when the library is loaded; nothing
/// frees it when the library is unloaded, so each octet_model_open /
/// octet_model_destroy of a model.so would leak it. This library's own copy
/// of __gnu_cxx::__freeres (which glibc's __libc_freeres and valgrind call for
/// the shared libstdc++) frees it, on dlclose. No exception is in flight then.
__attribute__((destructor)) void freeStaticLibstdcxxPool() { __gnu_cxx::__freeres(); }

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
