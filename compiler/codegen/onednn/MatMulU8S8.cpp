//===- MatMulU8S8.cpp - INT8 GEMM provider on oneDNN 2.6 matmul -----------===//

#include "compiler/codegen/onednn/MatMulU8S8.h"
#include "compiler/codegen/onednn/DnnlCommon.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <unordered_map>

namespace octet::onednn {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;
constexpr memory::dim kRuntime = DNNL_RUNTIME_DIM_VAL;
constexpr const char *kWhere = "oneDNN int8 matmul: ";

dt dataType(U8S8Output output) {
  switch (output) {
  case U8S8Output::U8:
    return dt::u8;
  case U8S8Output::S8:
    return dt::s8;
  case U8S8Output::F32:
    break;
  }
  return dt::f32;
}

size_t elementBytes(U8S8Output output) { return output == U8S8Output::F32 ? 4 : 1; }

Status fail(const std::string &what) { return Status::error(kWhere + what); }

using detail::describe;
using detail::overlaps;

template <typename Fn> Status guarded(const char *what, Fn &&body) noexcept {
  return detail::guarded(kWhere, what, std::forward<Fn>(body));
}

Status checkParams(int64_t n, int64_t k, const int8_t *weights, const MatMulU8S8Params &p) {
  if (n <= 0 || k <= 0)
    return fail("N and K must be positive (N = " + std::to_string(n) + ", K = " +
                std::to_string(k) + ")");
  if (k > MatMulU8S8::kMaxK)
    return fail("K = " + std::to_string(k) + " exceeds " + std::to_string(MatMulU8S8::kMaxK) +
                ": the s32 sums could overflow");
  if (!weights)
    return fail("null weights");
  if (p.aZeroPoint < 0 || p.aZeroPoint > 255)
    return fail("a_zero_point " + std::to_string(p.aZeroPoint) + " is outside 0..255");
  if (p.wScale.size() != 1 && int64_t(p.wScale.size()) != n)
    return fail("weight scales: " + std::to_string(p.wScale.size()) + " given, want 1 or N = " +
                std::to_string(n));
  if (!std::isfinite(p.xScale))
    return fail("x_scale is not finite");
  for (size_t j = 0; j < p.wScale.size(); ++j) {
    if (!std::isfinite(p.wScale[j]))
      return fail("weight scale " + std::to_string(j) + " is not finite");
    // The bias is passed divided by the scale (oneDNN 2.x adds it before scaling).
    if (p.bias && float(p.xScale * p.wScale[j]) == 0.0f)
      return fail("x_scale * w_scale[" + std::to_string(j) +
                  "] is 0 with a bias: oneDNN 2.6 adds the bias before the output scale, so "
                  "it cannot be expressed");
  }
  if (p.output != U8S8Output::F32) {
    if (!(p.outScale > 0) || !std::isfinite(p.outScale))
      return fail("out_scale must be positive and finite (got " + std::to_string(p.outScale) +
                  ")");
    const int32_t lo = p.output == U8S8Output::U8 ? 0 : -128, hi = lo + 255;
    if (p.outZeroPoint < lo || p.outZeroPoint > hi)
      return fail("out_zero_point " + std::to_string(p.outZeroPoint) + " is outside the " +
                  u8s8OutputName(p.output) + " range");
    if (p.residual)
      return fail("a residual with a " + std::string(u8s8OutputName(p.output)) +
                  " output: oneDNN 2.6's sum post-op reads the residual from C in C's type, "
                  "and a binary post-op cannot take a tensor with run-time M; use the f32 "
                  "output (or the JIT Int8GemmDriver)");
  }
  if (!oneDnnHasInt8Vnni()) {
    const auto [lo, hi] = std::minmax_element(weights, weights + n * k);
    if (*lo < -64 || *hi > 63)
      return fail("this host's oneDNN ISA has no VNNI: its u8 x s8 kernels sum pairs in "
                  "saturating s16 (vpmaddubsw), exact only for weights in [-64, 63]; got "
                  "weights in [" +
                  std::to_string(int(*lo)) + ", " + std::to_string(int(*hi)) + "]");
  }
  return Status();
}

} // namespace

const char *u8s8OutputName(U8S8Output output) {
  switch (output) {
  case U8S8Output::U8:
    return "u8";
  case U8S8Output::S8:
    return "s8";
  case U8S8Output::F32:
    break;
  }
  return "f32";
}

bool oneDnnHasInt8Vnni() {
  try {
    const unsigned isa = unsigned(dnnl::get_effective_cpu_isa());
    // The ISA values are feature masks: avx512_core_vnni and everything above
    // it carry avx512_core_vnni's bit, avx2_vnni its own.
    const unsigned avx512Vnni = unsigned(dnnl_cpu_isa_avx512_core_vnni);
    const unsigned avx2Vnni = unsigned(dnnl_cpu_isa_avx2_vnni);
    return (isa & avx512Vnni) == avx512Vnni || (isa & avx2Vnni) == avx2Vnni;
  } catch (...) {
    return false;
  }
}

struct MatMulU8S8::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory weights; // reordered into pd.weights_desc(), owned
  dnnl::memory bias;    // [1, N] f32: bias[n] / scale[n], owned
};

MatMulU8S8::MatMulU8S8(int64_t n, int64_t k, U8S8Output output, bool residual)
    : n_(n), k_(k), output_(output), residual_(residual), impl_(new Impl) {}

MatMulU8S8::~MatMulU8S8() = default;

Status MatMulU8S8::create(int64_t n, int64_t k, const int8_t *weights, WeightLayout layout,
                          const MatMulU8S8Params &p, std::unique_ptr<MatMulU8S8> &out) {
  out.reset();
  if (Status s = checkParams(n, k, weights, p); !s.ok())
    return s;

  return guarded("create", [&]() -> Status {
    std::unique_ptr<MatMulU8S8> self(new MatMulU8S8(n, k, p.output, p.residual));
    Impl &impl = *self->impl_;
    const bool quantized = p.output != U8S8Output::F32;
    const bool perChannel = p.wScale.size() != 1;

    // scale[n] = x_scale * w_scale[n] in f32, rounded once (as the JIT driver).
    std::vector<float> scale(perChannel ? size_t(n) : 1);
    for (size_t j = 0; j < scale.size(); ++j)
      scale[j] = p.xScale * p.wScale[j];
    // oneDNN's output scales: scale, divided by out_scale for a quantized
    // output unless GELU must see the unscaled value first.
    std::vector<float> outputScales = scale;
    if (quantized && p.gelu == U8S8Gelu::None)
      for (float &s : outputScales)
        s = float(double(s) / double(p.outScale));

    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(perChannel ? 1 << 1 : 0, outputScales);
    if (p.aZeroPoint != 0)
      attr.set_zero_points(DNNL_ARG_SRC, 0, {p.aZeroPoint});
    if (quantized && p.outZeroPoint != 0)
      attr.set_zero_points(DNNL_ARG_DST, 0, {p.outZeroPoint});
    dnnl::post_ops ops;
    if (p.residual)
      ops.append_sum(1.f);
    if (p.gelu != U8S8Gelu::None)
      ops.append_eltwise(quantized ? 1.0f / p.outScale : 1.0f,
                         p.gelu == U8S8Gelu::Erf ? dnnl::algorithm::eltwise_gelu_erf
                                                 : dnnl::algorithm::eltwise_gelu_tanh,
                         0.f, 0.f);
    attr.set_post_ops(ops);

    // M and the leading dimensions are run-time values; N and K are not.
    const memory::desc src({kRuntime, k}, dt::u8, {kRuntime, 1});
    const memory::desc dst({kRuntime, n}, dataType(p.output), {kRuntime, 1});
    const memory::desc biasMd({1, n}, dt::f32, tag::ab);
    const memory::desc userWeights({k, n}, dt::s8,
                                   layout == WeightLayout::KN ? tag::ab : tag::ba);
    auto makePd = [&](const memory::desc &weightsMd) {
      dnnl::matmul::desc d = p.bias ? dnnl::matmul::desc(src, weightsMd, biasMd, dst)
                                    : dnnl::matmul::desc(src, weightsMd, dst);
      return dnnl::matmul::primitive_desc(d, attr, impl.engine);
    };
    // B has no run-time dims, so `any` lets oneDNN pick its layout; should an
    // implementation refuse `any`, fall back to the caller's plain layout.
    try {
      impl.pd = makePd(memory::desc({k, n}, dt::s8, tag::any));
    } catch (const dnnl::error &) {
      impl.pd = makePd(userWeights);
    }
    impl.prim = dnnl::matmul(impl.pd);

    const memory::desc wanted = impl.pd.weights_desc();
    impl.weights = dnnl::memory(wanted, impl.engine);
    if (wanted == userWeights) {
      std::memcpy(impl.weights.get_data_handle(), weights, size_t(n) * size_t(k));
    } else {
      dnnl::memory user(userWeights, impl.engine, const_cast<int8_t *>(weights));
      dnnl::stream stream(impl.engine);
      dnnl::reorder(user, impl.weights).execute(stream, user, impl.weights);
      stream.wait();
    }
    if (p.bias) {
      // oneDNN 2.x: dst = output_scale * (acc + bias), so bias / scale.
      impl.bias = dnnl::memory(biasMd, impl.engine);
      float *b = static_cast<float *>(impl.bias.get_data_handle());
      for (int64_t j = 0; j < n; ++j)
        b[j] = float(double(p.bias[j]) / double(scale[perChannel ? j : 0]));
    }
    out = std::move(self);
    return Status();
  });
}

Status MatMulU8S8::run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                       const float *residual, int64_t ldr) const noexcept {
  if (m < 0)
    return fail("negative M (" + std::to_string(m) + ")");
  if (m == 0)
    return Status();
  if (!a || !c)
    return fail("null A or C");
  if (lda < k_ || ldc < n_)
    return fail("lda (" + std::to_string(lda) + ") must be >= K (" + std::to_string(k_) +
                ") and ldc (" + std::to_string(ldc) + ") >= N (" + std::to_string(n_) + ")");
  const int64_t cBytes = int64_t(elementBytes(output_));
  if (overlaps(a, lda, k_, c, ldc * cBytes, n_ * cBytes, m))
    return fail("A and C overlap");
  if (residual_) {
    if (!residual)
      return fail("created with a residual, but run() got none");
    if (ldr < n_)
      return fail("ldr (" + std::to_string(ldr) + ") must be >= N (" + std::to_string(n_) + ")");
    if (!(residual == c && ldr == ldc) && overlaps(residual, ldr * 4, n_ * 4, c, ldc * 4, n_ * 4, m))
      return fail("the residual overlaps C without being C (same pointer and stride)");
    if (overlaps(residual, ldr * 4, n_ * 4, a, lda, k_, m))
      return fail("the residual overlaps A");
  }

  return guarded("run", [&]() -> Status {
    const Impl &impl = *impl_;
    float *cf = static_cast<float *>(c); // the residual implies an f32 output
    // The sum post-op adds what C holds: bring a distinct residual into C.
    if (residual_ && residual != cf) {
      const size_t rowBytes = size_t(n_) * sizeof(float);
#pragma omp parallel for schedule(static) if (m * n_ >= (int64_t(1) << 15))
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(cf + i * ldc, residual + i * ldr, rowBytes);
    }
    dnnl::memory srcMem(memory::desc({m, k_}, dt::u8, {lda, 1}), impl.engine,
                        const_cast<uint8_t *>(a));
    dnnl::memory dstMem(memory::desc({m, n_}, dataType(output_), {ldc, 1}), impl.engine, c);
    detail::executeMatMul(impl.engine, impl.pd, impl.prim, srcMem, impl.weights, dstMem,
                          impl.bias ? &impl.bias : nullptr);
    return Status();
  });
}

std::string MatMulU8S8::implementation() const { return detail::implementationName(impl_->pd); }

std::string MatMulU8S8::weightsFormat() const { return describe(impl_->pd.weights_desc(), /*strides=*/false); }

} // namespace octet::onednn
