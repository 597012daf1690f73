//===- Int8GemmAvx2.cpp ---------------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmAvx2.h"

#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/x86/VectorMathAvx2.h" // avx2::hostSupported

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace octet::x86 {
using namespace Xbyak;

namespace {
/// Rows of packed A a thread's row block holds: about 192 KiB of s16, so the
/// block stays in L2 while the thread walks its panels over it.
int64_t rowBlock(int64_t pairs) {
  const int64_t rowBytes = pairs * 4;
  const int64_t rows = std::max<int64_t>(1, (192 << 10) / rowBytes);
  return std::max<int64_t>(Int8GemmKernelAvx2::kMaxRows,
                           rows / Int8GemmKernelAvx2::kMaxRows * Int8GemmKernelAvx2::kMaxRows);
}
} // namespace

// ---- the micro-kernel -------------------------------------------------------

Int8GemmKernelAvx2::Int8GemmKernelAvx2(const Int8GemmKernelAvx2Config &config)
    : KernelGenerator("qgemm_avx2_r" + std::to_string(config.rows) + "_n" +
                          std::to_string(config.columns) + (config.bias ? "_bias" : "") +
                          (config.residual ? "_residual" : ""),
                      Isa::Avx2, 16 * 1024),
      config_(config) {
  if (config.rows < 1 || config.rows > kMaxRows || config.columns < 1 || config.columns > kColumns)
    throw std::invalid_argument("Int8GemmKernelAvx2: rows must be 1..6 and columns 1..16, got " +
                                std::to_string(config.rows) + " x " +
                                std::to_string(config.columns));
  fn_ = entry<Fn>();
}

void Int8GemmKernelAvx2::generate() {
  const int rows = config_.rows, halves = (config_.columns + 7) / 8;
  const bool maskedHalf = config_.columns % 8 != 0; // the last half is partial
  const Reg64 a0 = rsi, a3 = rdx, b = rcx, pairs = r8, lda = r9, c = r10, ldc = r11;
  const Reg64 residual = rax, ldr = rbx, xs = r12, xsStride = r13, ws = r14, bias = r15;
  const Reg64 prefetch = rbp, prefetchStride = rax; // the loop's; rax is the epilogue's after
  auto acc = [](int r, int h) { return Ymm(2 * r + h); };
  const Ymm aPair(14), product(15);
  auto bHalf = [](int h) { return Ymm(12 + h); };
  Label loop, mask;

  preamble();
  mov(a0, ptr[rdi + offsetof(Int8GemmAvx2Args, a)]);
  mov(b, ptr[rdi + offsetof(Int8GemmAvx2Args, b)]);
  mov(pairs, ptr[rdi + offsetof(Int8GemmAvx2Args, pairs)]);
  mov(lda, ptr[rdi + offsetof(Int8GemmAvx2Args, lda)]);
  mov(prefetch, ptr[rdi + offsetof(Int8GemmAvx2Args, prefetch)]);
  mov(prefetchStride, ptr[rdi + offsetof(Int8GemmAvx2Args, prefetchStride)]);
  lea(a3, ptr[a0 + lda * 2]);
  add(a3, lda);
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < halves; ++h)
      vpxor(acc(r, h), acc(r, h), acc(r, h));

  // One K pair a step: B's two halves once, then each row's A pair.
  L(loop);
  for (int h = 0; h < halves; ++h)
    vmovdqu(bHalf(h), ptr[b + 32 * h]);
  prefetcht1(ptr[prefetch]);
  for (int r = 0; r < rows; ++r) {
    const Reg64 &base = r < 3 ? a0 : a3;
    const int scale = r % 3;
    vpbroadcastd(aPair, scale == 0 ? dword[base] : dword[base + lda * scale]);
    for (int h = 0; h < halves; ++h) {
      vpmaddwd(product, aPair, bHalf(h));
      vpaddd(acc(r, h), acc(r, h), product);
    }
  }
  add(a0, 4);
  add(a3, 4);
  add(b, Int8GemmKernelAvx2::kColumns * 4);
  add(prefetch, prefetchStride);
  dec(pairs);
  jnz(loop, T_NEAR);

  // Epilogue: y = f32(xs * ws) * f32(sum) [+ bias] [+ residual], as the
  // reference loop computes it (separate multiply and adds, no FMA).
  mov(c, ptr[rdi + offsetof(Int8GemmAvx2Args, c)]);
  mov(ldc, ptr[rdi + offsetof(Int8GemmAvx2Args, ldc)]);
  mov(xs, ptr[rdi + offsetof(Int8GemmAvx2Args, xScale)]);
  mov(xsStride, ptr[rdi + offsetof(Int8GemmAvx2Args, xScaleStride)]);
  mov(ws, ptr[rdi + offsetof(Int8GemmAvx2Args, wScale)]);
  if (config_.bias)
    mov(bias, ptr[rdi + offsetof(Int8GemmAvx2Args, bias)]);
  if (config_.residual) {
    mov(residual, ptr[rdi + offsetof(Int8GemmAvx2Args, residual)]);
    mov(ldr, ptr[rdi + offsetof(Int8GemmAvx2Args, ldr)]);
  }
  const Ymm multiplier(12), residualRow(13), xsRow(14), lanes(15);
  if (maskedHalf)
    vmovdqu(lanes, ptr[rip + mask]);
  for (int r = 0; r < rows; ++r) {
    vbroadcastss(xsRow, dword[xs]);
    for (int h = 0; h < halves; ++h) {
      const bool masked = maskedHalf && h == halves - 1;
      vmulps(multiplier, xsRow, ptr[ws + 32 * h]);
      vcvtdq2ps(acc(r, h), acc(r, h));
      vmulps(acc(r, h), multiplier, acc(r, h));
      if (config_.bias)
        vaddps(acc(r, h), acc(r, h), ptr[bias + 32 * h]);
      if (config_.residual) {
        if (masked) {
          vmaskmovps(residualRow, lanes, ptr[residual + 32 * h]);
          vaddps(acc(r, h), acc(r, h), residualRow);
        } else {
          vaddps(acc(r, h), acc(r, h), ptr[residual + 32 * h]);
        }
      }
      if (masked)
        vmaskmovps(ptr[c + 32 * h], lanes, acc(r, h));
      else
        vmovups(ptr[c + 32 * h], acc(r, h));
    }
    if (r + 1 < rows) {
      add(c, ldc);
      add(xs, xsStride);
      if (config_.residual)
        add(residual, ldr);
    }
  }
  vzeroupper();
  postamble();

  if (maskedHalf) {
    align(32);
    L(mask);
    for (int lane = 0; lane < 8; ++lane)
      dd(lane < config_.columns % 8 ? 0xffffffffu : 0u);
  }
}

// ---- the GEMM -----------------------------------------------------------------

bool Int8GemmAvx2::hostSupported() { return avx2::hostSupported(); }

Int8GemmAvx2::PackedB Int8GemmAvx2::packB(const int8_t *weight, WeightLayout layout, int64_t k,
                                          int64_t n) {
  const int64_t pairs = (k + 1) / 2, panels = (n + 15) / 16;
  PackedB b(size_t(panels * pairs * 32), 0);
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t nn = 0; nn < n; ++nn) {
      const int8_t w = layout == WeightLayout::KN ? weight[kk * n + nn] : weight[nn * k + kk];
      b[size_t(((nn / 16 * pairs + kk / 2) * 16 + nn % 16) * 2 + kk % 2)] = w;
    }
  return b;
}

Int8GemmAvx2::Int8GemmAvx2(const int8_t *weight, WeightLayout layout, int64_t k, int64_t n,
                           const Int8GemmAvx2Params &params)
    : k_(k), n_(n), pairs_((k + 1) / 2), panels_((n + 15) / 16), params_(params) {
  if (!weight || k <= 0 || n <= 0 ||
      (params.wScale.size() != 1 && int64_t(params.wScale.size()) != n))
    throw std::invalid_argument("Int8GemmAvx2: needs a weight, 1 or N weight scales and K, N > 0 "
                                "(K = " +
                                std::to_string(k) + ", N = " + std::to_string(n) + ", " +
                                std::to_string(params.wScale.size()) + " scales)");
  if (params.aZeroPoint < 0 || params.aZeroPoint > 255)
    throw std::invalid_argument("Int8GemmAvx2: the activation zero point " +
                                std::to_string(params.aZeroPoint) + " is not a u8");
  b_ = packB(weight, layout, k, n);
  wScale_.assign(size_t(panels_ * 16), 0.0f);
  for (int64_t j = 0; j < n; ++j)
    wScale_[size_t(j)] = params.wScale[params.wScale.size() == 1 ? 0 : size_t(j)];
  if (params.bias) {
    bias_.assign(size_t(panels_ * 16), 0.0f);
    std::copy(params.bias, params.bias + n, bias_.begin());
  }
  params_.wScale.clear(), params_.bias = nullptr; // copied: the caller's need not outlive this
  for (int tail = 0; tail < 2; ++tail) {
    const int columns = tail ? int(n % 16) : 16;
    if ((tail && columns == 0) || (!tail && n < 16))
      continue;
    for (int rows = 1; rows <= Int8GemmKernelAvx2::kMaxRows; ++rows) {
      Int8GemmKernelAvx2Config config;
      config.rows = rows, config.columns = columns;
      config.bias = params.bias != nullptr, config.residual = params.residual;
      kernels_[tail][rows - 1] = std::make_unique<Int8GemmKernelAvx2>(config);
    }
  }
}

void Int8GemmAvx2::run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                       const float *residual, int64_t ldr, const float *xScale,
                       const float *const *) const {
  if (m <= 0)
    return;
  if (!hostSupported())
    throw std::runtime_error("Int8GemmAvx2: cannot run on this host: it lacks AVX2 (host has: " +
                             CpuFeatures::host().describe() + ")");
  if (!a || !c || lda < k_ || ldc < n_)
    throw std::invalid_argument(
        "Int8GemmAvx2: A and C are needed with lda >= K = " + std::to_string(k_) +
        " and ldc >= N = " + std::to_string(n_) + " (lda " + std::to_string(lda) + ", ldc " +
        std::to_string(ldc) + ")");
  if (params_.residual && (!residual || ldr < n_))
    throw std::invalid_argument("Int8GemmAvx2: built with a residual: it needs one with ldr >= N");
  if (params_.xScalePerRow && !xScale)
    throw std::invalid_argument("Int8GemmAvx2: built for per-row activation scales: none given");

  const int64_t aStride = pairs_ * 2; // s16 per packed A row
  std::unique_ptr<int16_t, void (*)(int16_t *)> packedA(
      CacheLineAllocator<int16_t>().allocate(size_t(m * aStride)),
      [](int16_t *p) { CacheLineAllocator<int16_t>().deallocate(p, 0); });
  int16_t *pa = packedA.get();
  const int16_t zp = int16_t(params_.aZeroPoint);
  const int64_t block = rowBlock(pairs_);
  const bool tailPanel = n_ % 16 != 0;
  const int64_t xsStride = params_.xScalePerRow ? int64_t(sizeof(float)) : 0;
  float *out = static_cast<float *>(c);
#pragma omp parallel if (m * n_ * k_ > 65536)
  {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < m; ++i) {
      const uint8_t *row = a + i * lda;
      int16_t *dst = pa + i * aStride;
      for (int64_t kk = 0; kk < k_; ++kk)
        dst[kk] = int16_t(int16_t(row[kk]) - zp);
      if (k_ % 2)
        dst[k_] = 0;
    }
    for (int64_t i0 = 0; i0 < m; i0 += block) {
      const int64_t rowsEnd = std::min(m, i0 + block);
#pragma omp for schedule(static) nowait
      for (int64_t p = 0; p < panels_; ++p) {
        const bool tail = tailPanel && p == panels_ - 1;
        Int8GemmAvx2Args args;
        args.b = b_.data() + p * pairs_ * 32;
        args.wScale = wScale_.data() + p * 16;
        args.bias = bias_.empty() ? nullptr : bias_.data() + p * 16;
        args.lda = aStride * int64_t(sizeof(int16_t));
        args.ldc = ldc * int64_t(sizeof(float));
        args.ldr = ldr * int64_t(sizeof(float));
        args.xScaleStride = xsStride;
        args.pairs = pairs_;
        // The next panel's pairs lines of 64 bytes, in `calls` slices: call
        // c prefetches from c * pairs * stride on, stride = ceil(64 / calls)
        // bytes a pair (the last panel prefetches itself: a no-op).
        const int64_t calls =
            (rowsEnd - i0 + Int8GemmKernelAvx2::kMaxRows - 1) / Int8GemmKernelAvx2::kMaxRows;
        const char *next =
            reinterpret_cast<const char *>(p + 1 < panels_ ? args.b + pairs_ * 32 : args.b);
        args.prefetchStride = (64 + calls - 1) / calls;
        for (int64_t i = i0; i < rowsEnd; i += Int8GemmKernelAvx2::kMaxRows) {
          const int rows = int(std::min<int64_t>(Int8GemmKernelAvx2::kMaxRows, rowsEnd - i));
          args.prefetch =
              next + (i - i0) / Int8GemmKernelAvx2::kMaxRows * pairs_ * args.prefetchStride;
          args.a = pa + i * aStride;
          args.c = out + i * ldc + p * 16;
          args.xScale = params_.xScalePerRow ? xScale + i : &params_.xScale;
          args.residual = residual ? residual + i * ldr + p * 16 : nullptr;
          kernel(rows, tail).run(args);
        }
      }
    }
  }
}

} // namespace octet::x86
