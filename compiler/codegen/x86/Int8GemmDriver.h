//===- Int8GemmDriver.h - the INT8 GEMM driver over per-ISA micro-kernels -*- C++ -*-===//
//
//   C[M, N] = out( program( x_scale[m] * w_scale[n] * (sum_k A[m, k] * B[k, n]
//                                                  - a_zero_point * colsum_B[n])
//                           + bias[n] + residual[m, n] ) )
//
// (docs/int8-gemm.md). A: u8 [M, K] row-major with zero point a_zero_point
// (asymmetric activations; s8 activations are shifted by +128 by the caller,
// with a_zero_point = 128). B: s8, symmetric per output channel (w_scale[n]);
// constant, packed once by packInt8 for one ISA's kernels, which also computes
// colsum_B (the u8 x s8 compensation). out: f32, or u8 / s8 =
// saturate(RNE(v / out_scale) + out_zero_point). x_scale: one per tensor
// (folded into the per-column scale at construction) or one per row of A
// (run()'s xScale; the kernel forms f32(x_scale[m] * w_scale[n])). program:
// the elementwise epilogue; besides the accumulator it may read per-column
// vectors ([N] f32, run()'s `columns`), loaded like the bias. N and K are fixed
// (B is a constant weight); M is known only at run time.
//
// oneDNN's brgemm split: the driver (this class) owns what does not depend on
// the ISA, the micro-kernels (Int8GemmKernel.h: Int8GemmKernelVnni,
// Int8GemmKernelAmx) the dot products and the epilogue code:
//  - argument checks (construction and run), the host check;
//  - the per-column precompute: compensation -a_zp * colsum_B[n] (negated:
//    the VNNI kernel starts its sums from it), the combined
//    scale x_scale * w_scale[n], the bias, padded to whole panels (kernels
//    read whole vectors), and the program's per-column inputs per run
//    (columnInputs: in place where one fills whole panels);
//  - the epilogue configuration every kernel is generated with;
//  - the kernels for every call shape (rows 1..MR, full and tail panel),
//    generated at construction (no support from the host needed: a plan for
//    another CPU);
//  - blocking, tails and the OpenMP split, in the loop nest the kernel
//    family's schedule asks for (Int8GemmSchedule):
//     RegisterTile (VNNI): Kc (a multiple of 4) such that a Kc x NR byte
//       block of a B panel fits in L1d, K cut into equal blocks, between K
//       blocks a tile's s32 sums wait in a per-thread [Mc][NR] buffer; Mc
//       such that Mc x K bytes of A fit in half of L2, M cut into equal
//       blocks, each block into row tiles of equal height (at most MR),
//       one kernel call per run of tiles of one height;
//       threads take (M block, panel) pairs, panels innermost
//       (gemm_blocking, GemmF32's rule with bytes for floats), in static
//       ranges whose tails idle threads take (StealingSchedule). For a weight
//       of at most kRowSplitWeightBytes (on AMD hosts
//       kRowSplitBigWeightBytesAmd), where every thread's share of the rows
//       makes enough row tiles for the B prefetch (two lines per K step
//       there) to keep up, 6 at NR 48, the blocks are the team's rows
//       instead: each thread computes all panels of its own rows
//       (registerTileMBlock, rowSplitLines).
//     AmxTiles: M blocks of 32 rows x 32-column panels, all of K per call;
//       threads over a panels x blocks grid (gemm_blocking::threadGrid), each
//       M block passing over an L2-sized chunk of panels; a thread reloads
//       the tile configuration only when it changes and releases the tiles
//       after its last call.
// run() is thread-safe; threads: OpenMP's current team.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_INT8GEMMDRIVER_H
#define OCTET_COMPILER_CODEGEN_X86_INT8GEMMDRIVER_H

#include "compiler/codegen/Int8Gemm.h"
#include "compiler/codegen/PackedWeights.h"
#include "compiler/codegen/x86/GemmF32.h"
#include "compiler/codegen/x86/Int8GemmKernel.h"
#include "compiler/codegen/x86/NextStepPrefetch.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {

using octet::kMaxU8S8K; // PackedWeights.h

/// The micro-kernels for weights packed in `isa`'s layout.
const Int8GemmKernelFamily &int8GemmKernels(PackIsa isa);
/// The panel width `isa`'s kernels (and packInt8) use for N columns.
int int8GemmPanelWidth(PackIsa isa, int64_t n);

struct PackedInt8 {
  PackIsa isa = PackIsa::Avx512Vnni;
  int64_t n = 0, k = 0;
  int nr = 0;
  std::vector<int8_t, WeightAllocator<int8_t>> data; ///< the panels
  std::vector<int32_t> colsum;                       ///< sum_k B[k, n], [N]
};

/// A packed weight where it lies: a PackedInt8's, or compile-time packed
/// bytes used in place (octet-pack-weights; an AOT model's mapped constants).
/// `data` must outlive the driver; `colsum` is read only at construction.
struct PackedInt8View {
  PackIsa isa = PackIsa::Avx512Vnni;
  int64_t n = 0, k = 0;
  int nr = 0;
  const int8_t *data = nullptr;
  int64_t bytes = 0;
  const int32_t *colsum = nullptr; ///< [N]
  PackedInt8View() = default;
  PackedInt8View(PackIsa isa, int64_t n, int64_t k, int nr, const int8_t *data, int64_t bytes,
                 const int32_t *colsum)
      : isa(isa), n(n), k(k), nr(nr), data(data), bytes(bytes), colsum(colsum) {}
  PackedInt8View(const PackedInt8 &p) // NOLINT: implicit, a PackedInt8 is a view of itself
      : PackedInt8View(p.isa, p.n, p.k, p.nr, p.data.data(), int64_t(p.data.size()),
                       p.colsum.size() == size_t(p.n) ? p.colsum.data() : nullptr) {}
};

/// Packs B ([K, N] or [N, K] s8) for `isa`'s kernels and computes colsum_B.
/// Throws std::invalid_argument for N or K out of range or a null B.
PackedInt8 packInt8(PackIsa isa, const int8_t *b, int64_t k, int64_t n, WeightLayout layout);

struct Int8GemmParams {
  int32_t aZeroPoint = 0; ///< 0..255
  float xScale = 1.0f;    ///< A's scale (per tensor)
  /// Per-row A scales (dynamic per-token quantization): run() takes x_scale[M]
  /// and the kernel computes f32(x_scale[m] * w_scale[n]); `xScale` is unused.
  bool xScalePerRow = false;
  std::vector<float> wScale;                    ///< [N] per output channel, or 1 entry (per tensor)
  const float *bias = nullptr;                  ///< [N] f32, or null (copied)
  bool residual = false;                        ///< run() gets a residual [M, N] f32 to add
  const EpilogueEmitter *elementwise = nullptr; ///< must outlive the driver
  QuantOutput output = QuantOutput::F32;
  float outScale = 1.0f;    ///< u8/s8 output
  int32_t outZeroPoint = 0; ///< u8/s8 output
  /// RegisterTile: at most this many K bytes per kernel call (0: the blocking
  /// rule's, gemm_blocking::kPanelSliceL1s). Tests set it to run K blocks on small shapes.
  int64_t maxKBlock = 0;
  /// RegisterTile: N is this many equal groups of columns (a merged Q/K/V:
  /// 3) that the next step splits over the team by column ranges (the
  /// attention's heads). With 2 or more, the panels are split, never the rows,
  /// and thread t of T takes the t-th share of every group's panels (columns
  /// [t·N/(G·T), (t+1)·N/(G·T)) of each group where the panels divide them):
  /// the consumer's thread then reads lines its own core wrote. 1: no groups.
  int64_t columnGroups = 1;
};

/// Why N, K cannot be an INT8 GEMM's shape (N >= 1, 1 <= K <= kMaxU8S8K), or "".
std::string checkInt8GemmShape(int64_t n, int64_t k);
/// "" or what is wrong with `params` for N columns.
std::string checkInt8GemmParams(const Int8GemmParams &params, int64_t n);

/// What one run computed, summed over threads: `calls` counts tiles (on
/// RegisterTile the row tiles, several per kernel call; on AmxTiles one per
/// call); configuration loads and tile releases count on AmxTiles only.
struct Int8GemmRunStats {
  int64_t calls = 0, configLoads = 0, releases = 0;
  /// RegisterTile: row tiles of a kernel set faster than the driver's own (blocks
  /// of few tiles, prefetchSet; rows split on AMD, kRowSplitBigWeightBytesAmd)
  int64_t fewTilesCalls = 0;
  /// RegisterTile: (M block, panel) pairs a thread took from the back of
  /// another thread's range (StealingSchedule)
  int64_t stolenPairs = 0;
};

class Int8GemmDriver final : public Int8Gemm {
public:
  /// RegisterTile: weights of at most this many bytes (K x N) may have their
  /// rows split over the team (registerTileMBlock), and their kernels
  /// prefetch two lines of B per K step: BERT-base's QKV (1.7 MiB) and
  /// attention output (0.56 MiB) measured faster so on a 2 MB-L2 Xeon, its
  /// FFN GEMMs (2.25 MiB) slower.
  static constexpr int64_t kRowSplitWeightBytes = int64_t(2) << 20;
  /// On AMD hosts (hostIsAmd) weights up to this size split rows too, on the
  /// second (two-line) kernel set: on Zen 4 BERT-base's FFN GEMMs ran faster
  /// so, and the LayerNorm after them read rows its own core wrote.
  static constexpr int64_t kRowSplitBigWeightBytesAmd = int64_t(4) << 20;
  /// The fastest B prefetch pace generated (lines per unrolled K step).
  static constexpr int kMaxPrefetchLines = 4;

  /// Whether this host can run `isa`'s kernels.
  static bool hostSupported(PackIsa isa = PackIsa::Avx512Vnni);

  /// The kernels are those of `packed.isa`. `packed.data` is referenced, not
  /// copied: it must outlive this object. Throws std::invalid_argument (what
  /// and why) for bad parameters.
  Int8GemmDriver(PackedInt8View packed, Int8GemmParams params);
  ~Int8GemmDriver() override;

  /// Int8Gemm::run. A rows are read for exactly K bytes.
  void run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
           const float *residual = nullptr, int64_t ldr = 0, const float *xScale = nullptr,
           const float *const *columns = nullptr) const override;
  /// run(), counting the kernel calls.
  Int8GemmRunStats runCounted(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                              const float *residual = nullptr, int64_t ldr = 0,
                              const float *xScale = nullptr,
                              const float *const *columns = nullptr) const;
  /// AmxTiles only: the same loop nest and calls, with the tile part in
  /// AmxTileEmulator and the epilogue in the generated code (sumsReady):
  /// needs AVX-512 only. Throws std::logic_error on another schedule.
  Int8GemmRunStats runEmulated(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                               const float *residual = nullptr, int64_t ldr = 0,
                               const float *xScale = nullptr,
                               const float *const *columns = nullptr) const;

  const char *name() const override { return family_.name; }
  const Int8GemmKernelFamily &family() const { return family_; }
  int mr() const { return mr_; }     ///< rows per kernel call
  int nr() const { return nr_; }     ///< panel width
  int64_t kc() const { return kc_; } ///< K bytes per call
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  /// RegisterTile: the rows of an M block in a run of M rows on the current
  /// OpenMP team (the rule is in its definition).
  int64_t registerTileMBlock(int64_t m) const;
  /// RegisterTile: the lines of B per unrolled K step the kernels prefetch
  /// when a run of M rows on the current team splits its rows over the
  /// threads (2), or 0 where it splits the panels (the rule is in its
  /// definition).
  int rowSplitLines(int64_t m) const;
  /// RegisterTile: the (M block, panel) pairs in the order the team's static
  /// ranges take them on `threads` threads: row-major (panels innermost)
  /// without column groups, else thread t's share of every group's panels,
  /// for every M block, before thread t + 1's (Int8GemmParams::columnGroups).
  std::vector<std::pair<int64_t, int64_t>> pairOrder(int64_t mBlocks, int64_t threads) const;
  /// The pair at `index` of pairOrder(mBlocks, threads), computed: the runs
  /// and firstReads take their items from it without building the order.
  std::pair<int64_t, int64_t> pairAt(int64_t index, int64_t mBlocks, int64_t threads) const;
  /// The paces (lines of B prefetched per unrolled K step) of the kernel
  /// sets generated, ascending: this driver's own first, then faster ones
  /// for blocks of few row tiles (RegisterTile; AMX: its one set); on
  /// RegisterTile the same paces follow again, prefetching into L1 and L2
  /// (Int8GemmKernelConfig::bPrefetchToL1).
  const std::vector<int> &prefetchPaces() const { return paces_; }
  /// The kernel for calls of `rows` rows on a full or the tail panel, of
  /// kernel set `set` (an index into prefetchPaces(); -1: this host's own,
  /// the first of the half it runs). Throws std::out_of_range for a kernel
  /// not generated (a JIT driver has only this host's half).
  const Int8GemmKernel &kernel(int rows, bool tailPanel, int set = -1) const;
  /// RegisterTile: the kernel set a block of `tiles` row tiles over `kBytes`
  /// of K runs: the slowest pace whose tiles bring in the whole next panel
  /// slice, or the fastest where none does, and at least `minLines` lines
  /// (rowSplitLines); `toL1`: its twin that prefetches into L1 and L2 (the
  /// runs pass hostIsAmd()) (the rule is in its definition).
  int prefetchSet(int64_t tiles, int64_t kBytes, int minLines = 0, bool toL1 = false) const;
  /// RegisterTile: how a block of `rows` rows over `kBytes` of K runs: its
  /// equal row tiles (the first `tall` of shortRows + 1 rows, the rest of
  /// shortRows) and this host's kernel set for them (prefetchSet).
  struct BlockTiles {
    int64_t tiles, shortRows, tall;
    int set;
  };
  BlockTiles blockTiles(int64_t rows, int64_t kBytes, int minLines) const {
    const int64_t tiles = (rows + mr_ - 1) / mr_;
    return {tiles, rows / tiles, rows % tiles, prefetchSet(tiles, kBytes, minLines, hostIsAmd())};
  }
  /// RegisterTile: the code each of `threads` threads runs first in a run of
  /// M rows (the kernels of its schedule range's first block's row tiles), for
  /// the step before to prefetch (NextStepPrefetch.h); AMX: nothing
  /// (unmeasured there). A thread without items gets nothing.
  void firstReads(int64_t m, int64_t threads, std::vector<ThreadReads> &perThread) const;

private:
  struct Call; // one kernel call's arguments, as the schedule fills them
  template <typename Invoke>
  Int8GemmRunStats runWith(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                           const float *residual, int64_t ldr, const float *xScale,
                           const float *const *columns, Invoke invoke) const;
  template <typename Args> Args tileArgs(const Call &run, int64_t row, int64_t col) const;
  template <typename Invoke>
  Int8GemmRunStats runRegisterTiles(const Call &run, Invoke invoke) const;
  template <typename Invoke> Int8GemmRunStats runAmxTiles(const Call &run, Invoke invoke) const;
  [[noreturn]] void reject(const std::string &what) const;
  /// A kernel's entry point as stored; each schedule casts it back to its own
  /// signature (Int8GemmVnniFn, Int8GemmAmxFn).
  using AnyKernelFn = void (*)();
  size_t kernelIndex(int rows, bool tailPanel, int set) const {
    return (size_t(set) * mr_ + size_t(rows - 1)) * 2 + tailPanel;
  }

  const Int8GemmKernelFamily &family_;
  int64_t n_, k_;
  PackedInt8View packed_;
  Int8GemmParams params_;
  int nr_, mr_;
  int bPrefetchLines_ = 1; // RegisterTile kernels' B prefetch per K step
  std::vector<int> paces_; // the kernel sets' B prefetch lines per K step (prefetchSet)
  int paceCount_ = 1;      // distinct paces: paces_ holds them twice on RegisterTile (L2, L1)
  int64_t kc_, panels_, panelBytes_;
  // Per column, padded to whole panels (kernels read whole vectors).
  std::vector<int32_t, CacheLineAllocator<int32_t>> comp_;
  std::vector<float, CacheLineAllocator<float>> scale_, bias_;
  // [few tiles][rows - 1][tail panel], null if unused
  std::vector<std::unique_ptr<Int8GemmKernel>> kernels_;
  std::vector<AnyKernelFn> entries_; // their code
};

} // namespace octet::x86

#endif
