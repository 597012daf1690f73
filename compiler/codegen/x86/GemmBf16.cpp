//===- GemmBf16.cpp -------------------------------------------------------===//
#include "compiler/codegen/x86/GemmBf16.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/StealingSchedule.h"

#include <omp.h>

#include <algorithm>
#include <cassert>
#include <stdexcept>

namespace octet::x86 {

using gemm_blocking::ceilDiv;
using gemm_blocking::roundUp;

int64_t packedBf16Elements(int64_t k, int64_t n) {
  return roundUp(n, gemmF32PanelWidth(n)) * roundUp(k, 2);
}

int64_t packedBf16Index(int64_t k, int64_t col, int64_t kSize, int64_t n) {
  const int64_t nr = gemmF32PanelWidth(n), pairs = ceilDiv(kSize, 2);
  return ((col / nr * pairs + k / 2) * nr + col % nr) * 2 + k % 2;
}

PackedBf16Weights packBf16(const float *b, int64_t k, int64_t n, WeightLayout layout) {
  PackedBf16Weights packed(size_t(packedBf16Elements(k, n)), 0);
  // Per column, so each thread writes its own pairs; BERT-base packs 85 M weights.
#pragma omp parallel for schedule(static) if (k * n > (1 << 16))
  for (int64_t col = 0; col < n; ++col)
    for (int64_t kk = 0; kk < k; ++kk)
      packed[size_t(packedBf16Index(kk, col, k, n))] =
          toBf16(layout == WeightLayout::KN ? b[kk * n + col] : b[col * k + kk]);
  return packed;
}

bool GemmBf16::hostSupported() { return CpuFeatures::host().supports(Isa::Avx512Bf16); }

GemmBf16::GemmBf16(int64_t n, int64_t k, const uint16_t *packedB, GemmF32Epilogue epilogue,
                   const float *bias, int64_t maxKBlock)
    : n_(n), k_(k), packedB_(packedB), bias_(bias), epilogue_(epilogue), nr_(gemmF32PanelWidth(n)),
      mr_(GemmF32Avx512::maxRows(nr_, epilogue.elementwise ? epilogue.elementwise->scratchZmmCount()
                                                           : 0)),
      kc_(gemm_blocking::kBlock(k, nr_, 2, maxKBlock)), panels_(ceilDiv(n, nr_)),
      kPairs_(ceilDiv(k, 2)), aStride_(bf16Padded(k)) {
  buildPanelKernels(mr_, nr_, n, panels_, bias != nullptr, epilogue, kernels_, kernelFns_);
  convert_ = std::make_unique<AttentionBf16PackKernel>(Bf16Pack::Rows);
  convertFn_ = convert_->entry<AttentionBf16PackKernel::Fn>();
}

namespace {
/// Uninitialized, cache-line aligned scratch (the conversion writes every element).
struct ScratchDeleter {
  void operator()(uint16_t *p) const { CacheLineAllocator<uint16_t>().deallocate(p, 0); }
};
} // namespace

void GemmBf16::firstReads(int64_t m, int64_t threads, std::vector<ThreadReads> &perThread) const {
  const int64_t mBlock = m > 0 ? gemm_blocking::mBlock(m, k_, mr_, panels_, 2) : 0;
  firstTileKernels(m, mBlock, panels_, n_, nr_, mr_, kernels_, threads, perThread);
  // A thread with rows of A to convert (run's share) runs the conversion first.
  for (int64_t t = 0; t < threads; ++t)
    if (m * (t + 1) / threads > m * t / threads) {
      const ThreadReads tiles = perThread[size_t(t)];
      ThreadReads &reads = perThread[size_t(t)] = ThreadReads();
      reads.add(convert_->generatedCode());
      for (int i = 0; i < tiles.count; ++i)
        reads.add(tiles.ranges[i]);
    }
}

void GemmBf16::run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
                   const float *residual, int64_t ldr, const float *const *columns) const {
  assert((!epilogue_.residual || residual) && "epilogue needs a residual");
  if (m <= 0)
    return;
  if (!hostSupported())
    throw std::runtime_error("GemmBf16: cannot run on this host: it lacks AVX512-BF16 (host has: " +
                             CpuFeatures::host().describe() + ")");
  ColumnInputs storage;
  const float *inputs = columnInputs(epilogue_.elementwise, n_, panels_ * nr_, columns, storage, c,
                                     m, ldc, sizeof(float));
  std::unique_ptr<uint16_t, ScratchDeleter> aBf16(
      CacheLineAllocator<uint16_t>().allocate(size_t(m * aStride_)));
  const int64_t mBlock = gemm_blocking::mBlock(m, k_, mr_, panels_, 2),
                mBlocks = ceilDiv(m, mBlock);
  const int64_t kBlocks = std::max<int64_t>(1, ceilDiv(k_, kc_));
  // Pairs of bf16 per K step: a K block of kc elements is kc / 2 pair rows.
  const PanelGeometry geometry = PanelGeometry::of(k_, kc_, nr_, 2);
  StealingSchedule schedule(mBlocks * panels_, omp_get_max_threads());
  // The next step's code, a part per item (NextStepPrefetch.h).
  const NextStepReads *nextStep = NextStepReads::published();
#pragma omp parallel if (mBlocks * panels_ > 1)
  {
    // Every thread converts its share of A's rows; the tiles start once all are done.
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t rowBegin = m * t / threads, rowEnd = m * (t + 1) / threads;
    if (rowEnd > rowBegin) {
      AttentionBf16PackArgs pack;
      pack.src = a + rowBegin * lda, pack.lds = lda;
      pack.rows = pack.padRows = rowEnd - rowBegin;
      pack.cols = k_, pack.padCols = aStride_;
      pack.dst = aBf16.get() + rowBegin * aStride_, pack.ldd = aStride_;
      convertFn_(&pack);
    }
#pragma omp barrier
    NextStepPrefetcher prefetcher(nextStep, int(t), ceilDiv(mBlocks * panels_, threads));
    schedule.run(t, [&](int64_t item, bool) {
      prefetcher.advance();
      const int64_t mb = item / panels_, p = item % panels_;
      const int64_t rowEnd = std::min(m, (mb + 1) * mBlock), col = p * nr_;
      const bool tailPanel = n_ - col < nr_;
      const uint16_t *panel = packedB_ + p * kPairs_ * nr_ * 2;
      for (int64_t kb = 0; kb < kBlocks; ++kb) {
        const int64_t k0 = kb * kc_, row0 = mb * mBlock; // k0 even: Kc is a multiple of 4
        // Pairs are 4 bytes like floats: lda and k count pairs (GemmBf16Avx512.h).
        // One argument block for the slice's tiles (GemmF32::run).
        GemmF32Args args{reinterpret_cast<const float *>(aBf16.get() + row0 * aStride_ + k0),
                         reinterpret_cast<const float *>(panel + k0 * nr_),
                         c + row0 * ldc + col,
                         bias_ ? bias_ + col : nullptr,
                         epilogue_.residual ? residual + row0 * ldr + col : nullptr,
                         aStride_ / 2,
                         ldc,
                         ldr,
                         ceilDiv(std::min(kc_, k_ - k0), 2),
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
