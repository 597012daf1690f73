//===- MatMulF32.cpp - FP32 GEMM provider on oneDNN 2.6 matmul ------------===//

#include "compiler/codegen/onednn/MatMulF32.h"
#include "compiler/codegen/onednn/DnnlCommon.h"

#include <oneapi/dnnl/dnnl.hpp>

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

/// [rows, cols] f32, row-major with leading dimension `ld` (either may be
/// kRuntime).
memory::desc rowMajor(memory::dim rows, memory::dim cols, memory::dim ld) {
  return memory::desc({rows, cols}, dt::f32, {ld, 1});
}

using detail::describe;
using detail::overlaps;

template <typename Fn> Status guarded(const char *what, Fn &&body) noexcept {
  return detail::guarded("oneDNN matmul: ", what, std::forward<Fn>(body));
}

} // namespace

struct MatMulF32::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::memory weights; // reordered into pd.weights_desc(), owned
  dnnl::memory bias;    // [1, N], owned
};

MatMulF32::MatMulF32(int64_t n, int64_t k, bool hasBias, bool residual)
    : n_(n), k_(k), hasBias_(hasBias), residual_(residual), impl_(new Impl) {}

MatMulF32::~MatMulF32() = default;

Status MatMulF32::create(int64_t n, int64_t k, const float *weights, WeightLayout layout,
                         const float *bias, bool residual, std::unique_ptr<MatMulF32> &out) {
  out.reset();
  if (n <= 0 || k <= 0)
    return Status::error("oneDNN matmul: N and K must be positive (N = " + std::to_string(n) +
                         ", K = " + std::to_string(k) + ")");
  if (!weights)
    return Status::error("oneDNN matmul: null weights");

  return guarded("create", [&]() -> Status {
    std::unique_ptr<MatMulF32> self(new MatMulF32(n, k, bias != nullptr, residual));
    Impl &impl = *self->impl_;

    // M and the leading dimensions are run-time values; N and K are not.
    const memory::desc src = rowMajor(kRuntime, k, kRuntime);
    const memory::desc dst = rowMajor(kRuntime, n, kRuntime);
    const memory::desc biasMd({1, n}, dt::f32, tag::ab);
    const memory::desc userWeights({k, n}, dt::f32, layout == WeightLayout::KN ? tag::ab : tag::ba);

    auto makePd = [&](const memory::desc &weightsMd, const dnnl::post_ops &ops) {
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      attr.set_post_ops(ops);
      dnnl::matmul::desc d = bias ? dnnl::matmul::desc(src, weightsMd, biasMd, dst)
                                  : dnnl::matmul::desc(src, weightsMd, dst);
      return dnnl::matmul::primitive_desc(d, attr, impl.engine);
    };

    // The residual is a sum post-op (C = A*B + bias + C, GEMM beta = 1); run()
    // first copies a residual that is not C into C. A binary_add post-op would
    // read it in place, but oneDNN 2.6 rejects a binary src1 with run-time
    // dims (dnnl_post_ops_append_binary -> invalid_arguments), and M is one.
    dnnl::post_ops ops;
    if (residual)
      ops.append_sum(1.f);
    // B has no run-time dims, so `any` lets oneDNN pick its layout. Should an
    // implementation refuse `any` here, fall back to the caller's plain layout.
    try {
      impl.pd = makePd(memory::desc({k, n}, dt::f32, tag::any), ops);
    } catch (const dnnl::error &) {
      impl.pd = makePd(userWeights, ops);
    }
    impl.prim = dnnl::matmul(impl.pd);

    // Reorder B once into the layout the primitive wants.
    const memory::desc wanted = impl.pd.weights_desc();
    impl.weights = dnnl::memory(wanted, impl.engine);
    if (wanted == userWeights) {
      std::memcpy(impl.weights.get_data_handle(), weights, size_t(n) * size_t(k) * sizeof(float));
    } else {
      dnnl::memory user(userWeights, impl.engine, const_cast<float *>(weights));
      dnnl::stream stream(impl.engine);
      dnnl::reorder(user, impl.weights).execute(stream, user, impl.weights);
      stream.wait();
    }
    if (bias) {
      impl.bias = dnnl::memory(biasMd, impl.engine);
      std::memcpy(impl.bias.get_data_handle(), bias, size_t(n) * sizeof(float));
    }
    out = std::move(self);
    return Status();
  });
}

Status MatMulF32::run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
                      const float *residual, int64_t ldr) const noexcept {
  if (m < 0)
    return Status::error("oneDNN matmul: negative M (" + std::to_string(m) + ")");
  if (m == 0)
    return Status();
  if (!a || !c)
    return Status::error("oneDNN matmul: null A or C");
  if (lda < k_ || ldc < n_)
    return Status::error("oneDNN matmul: lda (" + std::to_string(lda) + ") must be >= K (" +
                         std::to_string(k_) + ") and ldc (" + std::to_string(ldc) +
                         ") >= N (" + std::to_string(n_) + ")");
  if (overlaps(a, lda * 4, k_ * 4, c, ldc * 4, n_ * 4, m))
    return Status::error("oneDNN matmul: A and C overlap");
  if (residual_) {
    if (!residual)
      return Status::error("oneDNN matmul: created with a residual, but run() got none");
    if (ldr < n_)
      return Status::error("oneDNN matmul: ldr (" + std::to_string(ldr) + ") must be >= N (" +
                           std::to_string(n_) + ")");
    if (!(residual == c && ldr == ldc) && overlaps(residual, ldr * 4, n_ * 4, c, ldc * 4, n_ * 4, m))
      return Status::error("oneDNN matmul: the residual overlaps C without being C "
                           "(same pointer and stride)");
  }

  return guarded("run", [&]() -> Status {
    const Impl &impl = *impl_;
    // The sum post-op adds what C holds: bring a distinct residual into C.
    if (residual_ && residual != c) {
      const size_t rowBytes = size_t(n_) * sizeof(float);
#pragma omp parallel for schedule(static) if (m * n_ >= (int64_t(1) << 15))
      for (int64_t i = 0; i < m; ++i)
        std::memcpy(c + i * ldc, residual + i * ldr, rowBytes);
    }
    // Memory objects wrap the caller's buffers with this call's M and strides.
    dnnl::memory srcMem(rowMajor(m, k_, lda), impl.engine, const_cast<float *>(a));
    dnnl::memory dstMem(rowMajor(m, n_, ldc), impl.engine, c);
    detail::executeMatMul(impl.engine, impl.pd, impl.prim, srcMem, impl.weights, dstMem,
                          hasBias_ ? &impl.bias : nullptr);
    return Status();
  });
}

std::string MatMulF32::implementation() const { return detail::implementationName(impl_->pd); }

std::string MatMulF32::weightsFormat() const { return describe(impl_->pd.weights_desc(), /*strides=*/true); }

} // namespace octet::onednn
