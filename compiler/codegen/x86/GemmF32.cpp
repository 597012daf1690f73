//===- GemmF32.cpp --------------------------------------------------------===//
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/StealingSchedule.h"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>
#include <string>

namespace octet::x86 {

using gemm_blocking::ceilDiv;
using gemm_blocking::roundUp;

int gemmF32PanelWidth(int64_t n) { return gemm_blocking::panelWidth(n); }

PackedWeights packB(const float *b, int64_t k, int64_t n, WeightLayout layout) {
  const int64_t nr = gemmF32PanelWidth(n);
  PackedWeights packed(roundUp(n, nr) * k, 0.0f);
  if (layout == WeightLayout::KN) {
    // Row by row: each [K, N] row is read once, in order, as whole panel rows
    // (calibration packs at every run: KernelOptions::packWeightsPerRun).
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t col = 0; col < n; col += nr)
        std::copy(b + kk * n + col, b + kk * n + std::min(n, col + nr),
                  packed.data() + (col / nr) * k * nr + kk * nr);
    return packed;
  }
  for (int64_t col = 0; col < n; ++col) {
    float *dst = packed.data() + (col / nr) * k * nr + col % nr;
    for (int64_t kk = 0; kk < k; ++kk)
      dst[kk * nr] = b[col * k + kk];
  }
  return packed;
}

const float *columnInputs(const EpilogueEmitter *elementwise, int64_t n, int64_t paddedN,
                          const float *const *columns, ColumnInputs &storage, const void *out,
                          int64_t m, int64_t ldc, int64_t outBytes) {
  const int count = elementwise ? elementwise->columnInputCount() : 0;
  for (int c = 0; c < count; ++c)
    if (!columns || !columns[c])
      throw std::invalid_argument("run: the epilogue reads " + std::to_string(count) +
                                  " per-column inputs: input " + std::to_string(c) + " is missing");
  if (count == 0)
    return nullptr;
  // BERT's FFN-in (N 3072, whole 48-column panels): no copy for each run,
  // unless the output would overwrite it while other threads read it.
  const auto at = reinterpret_cast<uintptr_t>(columns ? columns[0] : nullptr);
  const auto outBegin = reinterpret_cast<uintptr_t>(out);
  const uintptr_t outEnd = outBegin + uintptr_t(((m - 1) * ldc + n) * outBytes);
  const bool apart = at + uintptr_t(n) * sizeof(float) <= outBegin || at >= outEnd;
  if (count == 1 && n == paddedN && apart)
    return columns[0];
  storage.assign(size_t(count * paddedN), 0.0f);
  for (int c = 0; c < count; ++c)
    std::copy(columns[c], columns[c] + n, storage.begin() + c * paddedN);
  return storage.data();
}

GemmF32::GemmF32(int64_t n, int64_t k, const float *packedB, GemmF32Epilogue epilogue,
                 const float *bias, int64_t maxKBlock)
    : n_(n), k_(k), packedB_(packedB), bias_(bias), epilogue_(epilogue), nr_(gemmF32PanelWidth(n)),
      mr_(GemmF32Avx512::maxRows(nr_, epilogue.elementwise ? epilogue.elementwise->scratchZmmCount()
                                                           : 0)),
      kc_(gemm_blocking::kBlock(k, nr_, sizeof(float), maxKBlock)), panels_(ceilDiv(n, nr_)) {
  buildPanelKernels(mr_, nr_, n, panels_, bias != nullptr, epilogue, kernels_, kernelFns_);
}

int64_t GemmF32::mc(int64_t m) const {
  return gemm_blocking::mBlock(m, k_, mr_, panels_, sizeof(float));
}

void GemmF32::run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
                  const float *residual, int64_t ldr, const float *const *columns) const {
  assert((!epilogue_.residual || residual) && "epilogue needs a residual");
  if (m <= 0)
    return;
  ColumnInputs storage;
  const float *inputs = columnInputs(epilogue_.elementwise, n_, panels_ * nr_, columns, storage, c,
                                     m, ldc, sizeof(float));
  const int64_t mBlock = mc(m), mBlocks = ceilDiv(m, mBlock);
  const int64_t kBlocks = std::max<int64_t>(1, ceilDiv(k_, kc_));
  const PanelGeometry geometry = PanelGeometry::of(k_, kc_, nr_, 1);
  const int64_t threads = omp_get_max_threads();
  StealingSchedule schedule(mBlocks * panels_, threads);
  // The next step's code, a part per item (NextStepPrefetch.h).
  const NextStepReads *nextStep = NextStepReads::published();
#pragma omp parallel if (mBlocks * panels_ > 1)
  {
    NextStepPrefetcher prefetcher(nextStep, omp_get_thread_num(),
                                  ceilDiv(mBlocks * panels_, threads));
    schedule.run(omp_get_thread_num(), [&](int64_t item, bool) {
      prefetcher.advance();
      const int64_t mb = item / panels_, p = item % panels_;
      const int64_t rowEnd = std::min(m, (mb + 1) * mBlock), col = p * nr_;
      const bool tailPanel = n_ - col < nr_;
      const float *panel = packedB_ + p * k_ * nr_;
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        const int64_t k0 = kb * kc_, row0 = mb * mBlock;
        // One argument block for the slice's tiles, as in Int8GemmDriver: each
        // call moves only the row pointers.
        GemmF32Args args{a + row0 * lda + k0,
                         panel + k0 * nr_,
                         c + row0 * ldc + col,
                         bias_ ? bias_ + col : nullptr,
                         epilogue_.residual ? residual + row0 * ldr + col : nullptr,
                         lda,
                         ldc,
                         ldr,
                         std::min(kc_, k_ - k0),
                         kb > 0,
                         kb == kBlocks - 1,
                         inputs ? inputs + col : nullptr};
        const NextSlice next = nextPanelSlice(packedB_, p, panels_, kb, kBlocks, geometry);
        runRowTiles(
            args, row0, rowEnd, mr_, [&](int rows) { return kernel(rows, tailPanel); }, next);
      }
    });
  }
}

} // namespace octet::x86
