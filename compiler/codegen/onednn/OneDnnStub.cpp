//===- OneDnnStub.cpp - the oneDNN providers in a model.so without oneDNN -===//
//
// An AOT model.so links libdnnl only when one of its steps runs on oneDNN
// (docs/aot.md); the others link this instead of MatMulF32.cpp /
// MatMulU8S8.cpp, so the runtime's references resolve and the library
// depends on nothing but libc, libm and libgomp. The steps of such a model
// never create a provider; if one did, it gets this clear error, not a crash.
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/onednn/MatMulU8S8.h"

namespace octet::onednn {

namespace {
Status notLinked(const char *provider) {
  return Status::error(std::string(provider) +
                       ": this model.so was linked without oneDNN (none of its steps used it "
                       "when it was compiled)");
}
} // namespace

struct MatMulF32::Impl {};
struct MatMulU8S8::Impl {};

MatMulF32::~MatMulF32() = default;
MatMulU8S8::~MatMulU8S8() = default;

Status MatMulF32::create(int64_t, int64_t, const float *, WeightLayout, const float *, bool,
                         std::unique_ptr<MatMulF32> &out) {
  out.reset();
  return notLinked("oneDNN f32 matmul");
}

Status MatMulF32::run(const float *, int64_t, int64_t, float *, int64_t, const float *,
                      int64_t) const noexcept {
  return notLinked("oneDNN f32 matmul");
}

std::string MatMulF32::implementation() const { return "none (no oneDNN)"; }
std::string MatMulF32::weightsFormat() const { return "none (no oneDNN)"; }

Status MatMulU8S8::create(int64_t, int64_t, const int8_t *, WeightLayout, const MatMulU8S8Params &,
                          std::unique_ptr<MatMulU8S8> &out) {
  out.reset();
  return notLinked("oneDNN int8 matmul");
}

Status MatMulU8S8::run(const uint8_t *, int64_t, int64_t, void *, int64_t, const float *,
                       int64_t) const noexcept {
  return notLinked("oneDNN int8 matmul");
}

std::string MatMulU8S8::implementation() const { return "none (no oneDNN)"; }
std::string MatMulU8S8::weightsFormat() const { return "none (no oneDNN)"; }

} // namespace octet::onednn
