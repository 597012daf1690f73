//===- GemmF32.h - blocked, threaded FP32 GEMM with packed weights -*- C++ -*-===//
//
// C[M, N] = A[M, K] * B[K, N] (+ bias, + residual, then an elementwise
// epilogue), row-major f32. N and K are fixed (B is a constant weight, packed
// once by packB); M is known only at run time (batch * sequence).
//
// Blocking rule (Inductor's cpp_gemm_template, with this kernel's registers):
//  - NR (panel width) is 48 unless 32 pads N to fewer columns (N = 100: 128
//    rather than 144). 48 loads fewer A broadcasts per FMA.
//  - MR is the most rows whose MR * NR/16 accumulators leave room for the B
//    row, the A broadcast and the epilogue's scratch: 9 for NR = 48, 14 for 32.
//  - Kc: a Kc x NR block of a B panel takes at most 4 L1d
//    (gemm_blocking::kPanelSliceL1s: the tiles after the first read it from
//    L2, which costs less than more K blocks); K is cut into equal blocks.
//  - Mc: the Mc x K block of A fits in half of L2, so it is reused from L2
//    for every panel a thread computes after it; M is cut into equal blocks.
// Threads take (M block, N panel) pairs, N panels innermost.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMF32_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMF32_H

#include "compiler/codegen/CpuFeatures.h"
#include "compiler/codegen/GemmBlocking.h"
#include "compiler/codegen/HugePages.h"
#include "compiler/codegen/WeightLayout.h"
#include "compiler/codegen/StealingSchedule.h"
#include "compiler/codegen/x86/GemmF32Avx512.h"
#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace octet::x86 {

using octet::WeightLayout;

/// The panel width packB and GemmF32 use for N columns.
int gemmF32PanelWidth(int64_t n);

/// Allocates 64-byte-aligned storage, so packed panel rows (128 or 192 bytes)
/// never straddle cache lines.
template <typename T> struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U> CacheLineAllocator(const CacheLineAllocator<U> &) {}
  T *allocate(size_t count) {
    return static_cast<T *>(::operator new(count * sizeof(T), std::align_val_t(64)));
  }
  void deallocate(T *p, size_t) { ::operator delete(p, std::align_val_t(64)); }
  template <typename U> bool operator==(const CacheLineAllocator<U> &) const { return true; }
  template <typename U> bool operator!=(const CacheLineAllocator<U> &) const { return false; }
};
/// For packed weights, which every run streams whole: 64-byte aligned, and
/// from 2 MiB on on huge pages (compiler/codegen/HugePages.h), where the
/// GEMMs wait on no page walk per 4 KiB.
template <typename T> struct WeightAllocator {
  using value_type = T;
  WeightAllocator() = default;
  template <typename U> WeightAllocator(const WeightAllocator<U> &) {}
  T *allocate(size_t count) {
    if (count * sizeof(T) < kHugePageBytes)
      return CacheLineAllocator<T>().allocate(count);
    if (void *data = hugePageAllocate(count * sizeof(T)))
      return static_cast<T *>(data);
    throw std::bad_alloc();
  }
  void deallocate(T *p, size_t count) {
    if (count * sizeof(T) < kHugePageBytes)
      CacheLineAllocator<T>().deallocate(p, count);
    else
      std::free(p);
  }
  template <typename U> bool operator==(const WeightAllocator<U> &) const { return true; }
  template <typename U> bool operator!=(const WeightAllocator<U> &) const { return false; }
};
using PackedWeights = std::vector<float, WeightAllocator<float>>;

/// Packs B into ceil(N/NR) panels of [K][NR] (columns past N are zero).
PackedWeights packB(const float *b, int64_t k, int64_t n, WeightLayout layout);

/// The per-column inputs of `elementwise` for one GEMM run as the kernels read
/// them: rows of `paddedN` floats (whole panels: the kernels read whole
/// vectors), `paddedN` apart; `columns[c]` points at input c's N floats. One
/// input whose N fills whole panels and that lies outside the run's output
/// (`m` rows of N elements of `outBytes` bytes, `ldc` elements apart from
/// `out`) is read where it lies; else they are copied, zero padded, into
/// `storage`. Null without inputs. Throws std::invalid_argument when one is
/// missing.
using ColumnInputs = std::vector<float, CacheLineAllocator<float>>;
const float *columnInputs(const EpilogueEmitter *elementwise, int64_t n, int64_t paddedN,
                          const float *const *columns, ColumnInputs &storage, const void *out,
                          int64_t m, int64_t ldc, int64_t outBytes);

struct GemmF32Epilogue {
  bool residual = false; ///< run() gets a residual [M, N] to add
  const EpilogueEmitter *elementwise = nullptr; ///< must outlive the GemmF32
};

/// The tile kernels of a panel GEMM: for rows 1..mr, one for a full panel of
/// nr columns and one for the last panel (N's tail), each prefetching the next
/// slice into L2 (prefetcht1) and, a second set, into L1 and L2 (prefetcht0:
/// AMD hosts, as Int8GemmDriver::prefetchSet picks); `fns` is indexed
/// [into L1][rows - 1][tail panel] (panelKernelIndex). A JIT driver generates
/// only this host's set (the other's entries null); an image both
/// (kernelsForAnImage), so a model.so runs on either vendor. `Kernel`:
/// GemmF32Avx512, or one that replaces its K step (GemmBf16Avx512), so both
/// drivers generate the same set.
template <typename Kernel>
void buildPanelKernels(int mr, int nr, int64_t n, int64_t panels, bool bias,
                       const GemmF32Epilogue &epilogue,
                       std::vector<std::unique_ptr<Kernel>> &kernels,
                       std::vector<GemmF32KernelFn> &fns) {
  const int tailColumns = n % nr ? int(n % nr) : nr;
  const bool everySet = kernelsForAnImage();
  for (bool toL1 : {false, true})
    for (int rows = 1; rows <= mr; ++rows)
      for (int columns : {nr, tailColumns}) {
        if (!everySet && toL1 != hostIsAmd()) {
          kernels.push_back(nullptr), fns.push_back(nullptr);
          continue;
        }
        GemmF32Avx512Config config{rows,
                                   nr,
                                   columns,
                                   bias,
                                   epilogue.residual,
                                   epilogue.elementwise,
                                   panels * nr * int64_t(sizeof(float)),
                                   kPanelPrefetchLines,
                                   toL1};
        kernels.push_back(std::make_unique<Kernel>(config));
        fns.push_back(kernels.back()->template entry<GemmF32KernelFn>());
      }
}

/// Where buildPanelKernels put this host's kernel for `rows` rows (tail: the
/// last panel's).
inline size_t panelKernelIndex(int mr, int rows, bool tailPanel) {
  return size_t(((hostIsAmd() ? mr : 0) + rows - 1) * 2 + tailPanel);
}

/// Where a packed panel's K blocks lie: K rows of NR 4-byte groups, each
/// group `perGroup` K elements (f32: 1; bf16 pairs: 2), cut into blocks of kc
/// elements (a multiple of perGroup), the last one shorter.
struct PanelGeometry {
  int64_t panelBytes, kcBytes, lastKBytes;
  static PanelGeometry of(int64_t k, int64_t kc, int nr, int perGroup) {
    using gemm_blocking::ceilDiv;
    const int64_t row = int64_t(nr) * 4, kBlocks = std::max<int64_t>(1, ceilDiv(k, kc));
    return {ceilDiv(k, perGroup) * row, kc / perGroup * row,
            ceilDiv(k - (kBlocks - 1) * kc, perGroup) * row};
  }
};

/// The next slice after K block `kb` of panel `p`: the panel's next K block,
/// else the first block of the next panel (the next item of the thread's
/// range: after the last panel, the next block's first).
inline NextSlice nextPanelSlice(const void *packed, int64_t p, int64_t panels, int64_t kb,
                                int64_t kBlocks, const PanelGeometry &g) {
  const char *base = static_cast<const char *>(packed);
  if (kb + 1 < kBlocks)
    return {base + p * g.panelBytes + (kb + 1) * g.kcBytes,
            kb + 2 < kBlocks ? g.kcBytes : g.lastKBytes};
  return {base + (p + 1) % panels * g.panelBytes, kBlocks > 1 ? g.kcBytes : g.lastKBytes};
}

/// The kernels each of `threads` threads calls first in a run of M rows cut
/// into mBlock-row blocks over `panels` panels, item (block, panel) = block *
/// panels + panel taken from the StealingSchedule's ranges: its first item's
/// first row tile and, where the block ends in a shorter one, that one
/// (runRowTiles; kernels indexed [rows - 1][tail panel]), for the step before
/// to prefetch (NextStepPrefetch.h).
template <typename Kernel>
void firstTileKernels(int64_t m, int64_t mBlock, int64_t panels, int64_t n, int nr, int mr,
                      const std::vector<std::unique_ptr<Kernel>> &kernels, int64_t threads,
                      std::vector<ThreadReads> &perThread) {
  perThread.assign(size_t(std::max<int64_t>(threads, 0)), ThreadReads());
  if (m <= 0 || mBlock <= 0)
    return;
  const int64_t items = (m + mBlock - 1) / mBlock * panels;
  for (int64_t t = 0; t < threads; ++t) {
    const auto [first, end] = StealingSchedule::range(items, threads, t);
    if (first == end)
      continue;
    const int64_t mb = first / panels, p = first % panels;
    const int64_t rows = std::min(m, (mb + 1) * mBlock) - mb * mBlock;
    const bool tail = n - p * nr < nr;
    for (int64_t tileRows : {std::min<int64_t>(mr, rows), rows % mr})
      if (tileRows >= 1)
        perThread[size_t(t)].add(
            kernels[panelKernelIndex(mr, int(tileRows), tail)]->generatedCode());
  }
}

class GemmF32 {
public:
  /// `packedB` (from packB) and `bias` ([N], or null) are referenced, not
  /// copied: they must outlive this object (in AOT they live in .rodata).
  /// `maxKBlock` > 0 bounds the K elements per kernel call below the blocking
  /// rule's (gemm_blocking::kPanelSliceL1s): tests run K blocks on small shapes.
  GemmF32(int64_t n, int64_t k, const float *packedB, GemmF32Epilogue epilogue = {},
          const float *bias = nullptr, int64_t maxKBlock = 0);

  /// Strides are in floats. `residual` (stride ldr) is read only when the
  /// epilogue asked for it; `columns`: one [N] pointer per per-column input
  /// of the elementwise program. Threads: OpenMP's current team size.
  void run(const float *a, int64_t m, int64_t lda, float *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0,
           const float *const *columns = nullptr) const;

  int mr() const { return mr_; }
  int nr() const { return nr_; }
  int64_t kc() const { return kc_; }
  /// The kernels' code each of `threads` threads runs first for M rows
  /// (firstTileKernels).
  void firstReads(int64_t m, int64_t threads, std::vector<ThreadReads> &perThread) const {
    firstTileKernels(m, mc(m), panels_, n_, nr_, mr_, kernels_, threads, perThread);
  }
  /// The code of kernel (rows, tail panel), for tests.
  std::pair<const void *, size_t> kernelCode(int rows, bool tailPanel) const {
    return kernels_[panelKernelIndex(mr_, rows, tailPanel)]->generatedCode();
  }

private:
  GemmF32KernelFn kernel(int rows, bool tailPanel) const {
    return kernelFns_[panelKernelIndex(mr_, rows, tailPanel)];
  }
  int64_t mc(int64_t m) const;

  int64_t n_, k_;
  const float *packedB_;
  const float *bias_;
  GemmF32Epilogue epilogue_;
  int nr_, mr_;
  int64_t kc_, panels_;
  std::vector<std::unique_ptr<GemmF32Avx512>> kernels_;
  std::vector<GemmF32KernelFn> kernelFns_; // [into L1][rows - 1][tail panel]
};

} // namespace octet::x86

#endif
