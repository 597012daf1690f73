//===- GemmF32.cpp --------------------------------------------------------===//
#include "compiler/codegen/x86/GemmF32.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>

namespace octet::x86 {

namespace {
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

int64_t cacheBytes(int name, int64_t fallback) {
  long bytes = sysconf(name);
  return bytes > 0 ? bytes : fallback;
}
int64_t l1Bytes() { return cacheBytes(_SC_LEVEL1_DCACHE_SIZE, 32 * 1024); }
int64_t l2Bytes() { return cacheBytes(_SC_LEVEL2_CACHE_SIZE, 1024 * 1024); }

/// Cuts `total` into the fewest blocks of at most `maxBlock` (at least
/// `minBlocks` of them), of equal size rounded up to a multiple of `multiple`.
int64_t evenBlock(int64_t total, int64_t maxBlock, int64_t multiple, int64_t minBlocks = 1) {
  maxBlock = std::max(multiple, maxBlock / multiple * multiple);
  int64_t blocks = std::max({ceilDiv(total, maxBlock), minBlocks, int64_t(1)});
  return roundUp(std::max<int64_t>(1, ceilDiv(total, blocks)), multiple);
}
} // namespace

int gemmF32PanelWidth(int64_t n) { return roundUp(n, 32) < roundUp(n, 48) ? 32 : 48; }

PackedWeights packB(const float *b, int64_t k, int64_t n, WeightLayout layout) {
  const int64_t nr = gemmF32PanelWidth(n);
  PackedWeights packed(roundUp(n, nr) * k, 0.0f);
  for (int64_t col = 0; col < n; ++col) {
    float *dst = packed.data() + (col / nr) * k * nr + col % nr;
    for (int64_t kk = 0; kk < k; ++kk)
      dst[kk * nr] = layout == WeightLayout::KN ? b[kk * n + col] : b[col * k + kk];
  }
  return packed;
}

GemmF32::GemmF32(int64_t n, int64_t k, const float *packedB, GemmF32Epilogue epilogue,
                 const float *bias)
    : n_(n), k_(k), packedB_(packedB), bias_(bias), epilogue_(epilogue),
      nr_(gemmF32PanelWidth(n)),
      mr_(GemmF32Avx512::maxRows(
          nr_, epilogue.elementwise ? epilogue.elementwise->scratchZmmCount() : 0)),
      kc_(evenBlock(k, l1Bytes() / (nr_ * 4), 4)), panels_(ceilDiv(n, nr_)) {
  const int tailColumns = n % nr_ ? n % nr_ : nr_;
  for (int rows = 1; rows <= mr_; ++rows)
    for (int columns : {nr_, tailColumns}) {
      GemmF32Avx512Config config{rows, nr_, columns, bias != nullptr, epilogue.residual,
                                 epilogue.elementwise};
      kernels_.push_back(std::make_unique<GemmF32Avx512>(config));
      kernelFns_.push_back(kernels_.back()->entry<GemmF32KernelFn>());
    }
}

int64_t GemmF32::mc(int64_t m) const {
  // Enough M blocks that every thread gets a (block, panel) pair, if M allows.
  int64_t wanted = std::min(ceilDiv(m, mr_), ceilDiv(omp_get_max_threads(), panels_));
  return evenBlock(m, l2Bytes() / 2 / (std::max<int64_t>(k_, 1) * 4), mr_, wanted);
}

void GemmF32::run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
                  const float *residual, int64_t ldr) const {
  assert((!epilogue_.residual || residual) && "epilogue needs a residual");
  if (m <= 0)
    return;
  const int64_t mBlock = mc(m), mBlocks = ceilDiv(m, mBlock);
  const int64_t kBlocks = std::max<int64_t>(1, ceilDiv(k_, kc_));
#pragma omp parallel for collapse(2) schedule(static) if (mBlocks * panels_ > 1)
  for (int64_t mb = 0; mb < mBlocks; ++mb)
    for (int64_t p = 0; p < panels_; ++p) {
      const int64_t rowEnd = std::min(m, (mb + 1) * mBlock), col = p * nr_;
      const bool tailPanel = n_ - col < nr_;
      const float *panel = packedB_ + p * k_ * nr_;
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        const int64_t k0 = kb * kc_;
        for (int64_t row = mb * mBlock; row < rowEnd; row += mr_) {
          GemmF32Args args{a + row * lda + k0,
                           panel + k0 * nr_,
                           c + row * ldc + col,
                           bias_ ? bias_ + col : nullptr,
                           epilogue_.residual ? residual + row * ldr + col : nullptr,
                           lda,
                           ldc,
                           ldr,
                           std::min(kc_, k_ - k0),
                           kb > 0,
                           kb == kBlocks - 1};
          kernel(int(std::min<int64_t>(mr_, rowEnd - row)), tailPanel)(&args);
        }
      }
    }
}

} // namespace octet::x86
