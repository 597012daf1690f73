//===- GemmU8S8Amx.h - AMX u8 x s8 -> s32 GEMM: layout, micro-kernel, driver -*- C++ -*-===//
//
// The same GEMM as GemmU8S8 (docs/int8-gemm.md: formula, epilogue, errors) on
// Intel AMX (docs/amx.md):
//
//   C[M, N] = out( program( x_scale * w_scale[n] * (sum_k A[m, k] * B[k, n]
//                                                  - a_zero_point * colsum_B[n])
//                           + bias[n] + residual[m, n] ) )
//
// Packed layout (packU8S8Amx): ceil(N / 32) panels of 32 columns; a panel is
// ceil(K / 64) chunks of 64 K bytes; a chunk is 2 B tiles (columns 0-15,
// 16-31 of the panel) of 1 KiB each: 16 rows (K groups of 4) x 64 bytes
// (16 columns x 4 consecutive K bytes), tdpbusd's B operand as tileloadd
// reads it with a 64-byte stride. Element (k, n) is at
//   ((p * K64 + k / 64) * 2 + (n % 32) / 16) * 1024 + (k % 64) / 4 * 64 + (n % 16) * 4 + k % 4
// with p = n / 32, K64 = ceil(K / 64). Columns past N and bytes past K are 0.
//
// Micro-kernel (one call: up to 32 rows x one 32-column panel, all of K):
// tiles tmm0-3 accumulate C (row tile r, column tile c: tmm(2r + c)), tmm4-5
// hold A (16 rows x 64 K bytes each), tmm6-7 B. Per K chunk: tileloadd A0,
// (A1), B0, (B1), then tdpbusd for each (r, c). The K tail (K % 64 bytes) is
// staged: each A row's tail is read with a zero-masked byte load (never past
// the row) into a 64-byte row of a per-thread buffer, whose tile then meets
// the zero-padded B chunk. Each chunk prefetches the next 64 bytes of the A
// rows into L1 (A is reused from L2 across panels). The tile sums are stored (tilestored) as s32 rows
// of 32 into a per-thread buffer, and the AVX-512 epilogue (GemmU8S8Epilogue)
// runs over them row by row into C.
//
// Tails: N by padding (B columns are zero, the epilogue stores under a mask);
// K by padding (the staged, zero-filled tail chunk); M by the configuration:
// a call of R < 32 rows uses tiles of min(16, R) and R - 16 rows, a second
// tile configuration. A thread reissues ldtilecfg only when the configuration
// of its next call differs from the last it loaded (args.configure).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMU8S8AMX_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMU8S8AMX_H

#include "compiler/codegen/WeightLayout.h"
#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/GemmU8S8.h"
#include "compiler/codegen/x86/GemmU8S8Epilogue.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {

constexpr int kAmxPanel = 32;                 ///< columns per packed panel (2 column tiles)
constexpr int kAmxKChunk = 64;                ///< K bytes per A tile row / B chunk
constexpr int kAmxBlockRows = 32;             ///< rows per kernel call (2 row tiles)
constexpr int64_t kAmxBTileBytes = 1024;      ///< one B tile: 16 K groups x 16 columns x 4
constexpr int kAmxSumsStride = 4 * kAmxPanel; ///< bytes per row of the tile sums buffer

struct PackedU8S8Amx {
  int64_t n = 0, k = 0;
  std::vector<int8_t, CacheLineAllocator<int8_t>> data; ///< the panels
  std::vector<int32_t> colsum;                          ///< sum_k B[k, n], [N]
};

/// A packed AMX weight where it lies (PackedU8S8View's counterpart): `data`
/// must outlive the driver; `colsum` is read only at construction.
struct PackedU8S8AmxView {
  int64_t n = 0, k = 0;
  const int8_t *data = nullptr;
  int64_t bytes = 0;
  const int32_t *colsum = nullptr; ///< [N]
  PackedU8S8AmxView() = default;
  PackedU8S8AmxView(int64_t n, int64_t k, const int8_t *data, int64_t bytes,
                    const int32_t *colsum)
      : n(n), k(k), data(data), bytes(bytes), colsum(colsum) {}
  PackedU8S8AmxView(const PackedU8S8Amx &p) // NOLINT: implicit, as PackedU8S8View
      : PackedU8S8AmxView(p.n, p.k, p.data.data(), int64_t(p.data.size()),
                          p.colsum.size() == size_t(p.n) ? p.colsum.data() : nullptr) {}
};

/// Byte offset of B[k, n] in packU8S8Amx's layout for a K of `kTotal`.
int64_t amxPackedOffset(int64_t k, int64_t n, int64_t kTotal);

/// Packs B ([K, N] or [N, K] s8) into AMX panels and computes colsum_B.
/// Throws std::invalid_argument for N or K out of range or a null B.
PackedU8S8Amx packU8S8Amx(const int8_t *b, int64_t k, int64_t n, WeightLayout layout);

/// What one generated kernel computes (its cache key).
struct GemmU8S8AmxConfig {
  int rows = kAmxBlockRows; ///< 1..32 rows of A and C (two row tiles when > 16)
  int columns = kAmxPanel;  ///< 1..32 valid columns (two column tiles when > 16)
  int kTailBytes = 0;       ///< K % 64: the staged last chunk (0: none)
  GemmU8S8EpilogueConfig epilogue;
};

/// The tiles of a configuration: shared by the generator and the emulator.
struct AmxGemmTiles {
  AmxGemmTiles(int rows, int columns);
  int rowTiles, colTiles;
  int tileRows(int r) const { return r + 1 < rowTiles ? 16 : rows_ - 16 * r; }
  static int acc(int r, int c) { return 2 * r + c; }
  static int a(int r) { return 4 + r; }
  static int b(int c) { return 6 + c; }
  /// Accumulators and A: tileRows x 64 bytes; B: 16 x 64. Depends on the rows
  /// and the column tiles only (the key for reissuing ldtilecfg).
  AmxTileConfig config() const;

private:
  int rows_;
};

/// Run-time arguments, passed by pointer (System V: rdi). Strides in elements.
struct GemmU8S8AmxArgs {
  const uint8_t *a;      ///< first row of the call, K = 0
  const int8_t *b;       ///< packed panel, K chunk 0
  int32_t *sums;         ///< per-thread [32][32] s32, 64-byte aligned: the tile sums
  uint8_t *aTail;        ///< per-thread [32][64] bytes: the staged K tail of A
  void *c;               ///< top-left element of the call's C block
  const int32_t *comp;   ///< panel's first column; 32 entries readable
  const float *scale;    ///< panel's first column; 32 entries readable
  const float *bias;     ///< panel's first column; 32 entries readable
  const float *residual; ///< top-left element
  int64_t lda, ldc, ldr;
  int64_t kChunks;   ///< full 64-byte K chunks
  int64_t configure; ///< nonzero: ldtilecfg first (the thread's loaded configuration differs)
  int64_t release;   ///< nonzero: tilerelease once the sums are stored (the thread's last call)
  int64_t sumsReady; ///< nonzero: no tile code; `sums` already holds them (emulation)
  const float *xScale;  ///< per-row x scales of the call's first row (xScalePerRow)
  const float *columns; ///< the program's per-column inputs at the panel's first column
  /// The thread's next panel at K chunk 0, prefetched into L2 chunk by chunk
  /// during this call; null: no B prefetch.
  const int8_t *bNext;
};
using GemmU8S8AmxKernelFn = void (*)(const GemmU8S8AmxArgs *);

class GemmU8S8Amx : public GemmU8S8EpilogueAvx512 {
public:
  /// Throws std::invalid_argument for a configuration it cannot generate.
  /// Generating needs no AMX; running does (after requestAmxPermission()).
  explicit GemmU8S8Amx(const GemmU8S8AmxConfig &config);
  const GemmU8S8AmxConfig &config() const { return config_; }

protected:
  void generate() override;

private:
  void kStep(int) override {} // the K loop is tiles, not GemmTileAvx512's zmm walk
  void dotChunk(const Xbyak::Reg64 &aBase, int64_t aRowTileOffset, const Xbyak::Reg64 &aStride);
  void prefetchNextAChunk();
  void prefetchNextPanelChunk();
  void stageKTail();
  void rowEpilogue();

  GemmU8S8AmxConfig config_;
  AmxGemmTiles tiles_;
  Xbyak::Label tileConfig_;
  // Tile part.
  const Xbyak::Reg64 regA_ = r9, regA1_ = r10, regStride64_ = r8, regStage_ = r12;
  const Xbyak::Reg64 regPrefetchLda3_ = rbp, regPrefetch_ = r11, regPrefetchB_ = r13; // K loop only
  // Epilogue: sums row, rows left, column arrays, residual and C rows.
  const Xbyak::Reg64 regSums_ = rax, regRowsLeft_ = r8;
  const Xbyak::Reg64 regComp_ = rsi, regScale_ = rdx, regBias_ = rcx;
  const Xbyak::Reg64 regResidual_ = r13, regLdr_ = r14, regC_ = r15, regLdc_ = r12;
  const Xbyak::Reg64 regColumns_ = r9, regRowScale_ = r10;
  const Xbyak::Opmask kKTail_ = k2;
};

/// The tile part of one kernel call in C++: the same tiles, configuration,
/// loads (A rows, the staged K tail, the packed B chunks), tdpbusd order and
/// tilestored into args.sums as the generated code.
void emulateGemmU8S8AmxTiles(const GemmU8S8AmxConfig &config, const GemmU8S8AmxArgs &args,
                             AmxTileEmulator &amx);

/// Counts of one run, summed over threads.
struct AmxRunStats {
  int64_t calls = 0, configLoads = 0, releases = 0;
};

/// Blocked, threaded driver: M blocks of 32 rows x 32-column panels, all of K
/// per call; threads over a panels x blocks grid (gemm_blocking::threadGrid),
/// each M block passing over an L2-sized chunk of panels. Kernels for every row count 1..32 that M can need and the full
/// and tail panel widths are generated at construction (no AMX needed).
class GemmU8S8AmxDriver {
public:
  /// `packed.data` is referenced, not copied: it must outlive this object.
  /// Throws std::invalid_argument (what and why) for bad parameters.
  GemmU8S8AmxDriver(PackedU8S8AmxView packed, GemmU8S8Params params);

  /// Runs on AMX; throws std::runtime_error saying why when !amxUsable().
  /// Arguments as GemmU8S8::run (throws std::invalid_argument on bad ones).
  AmxRunStats run(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                  const float *residual = nullptr, int64_t ldr = 0,
                  const float *xScale = nullptr, const float *const *columns = nullptr) const;
  /// The same loop nest and calls, with the tile part in AmxTileEmulator and
  /// the epilogue in the generated code (sumsReady): needs AVX-512 only.
  AmxRunStats runEmulated(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                          const float *residual = nullptr, int64_t ldr = 0,
                          const float *xScale = nullptr,
                          const float *const *columns = nullptr) const;

  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  const GemmU8S8Amx &kernel(int rows, bool tailPanel) const {
    return *kernels_[(rows - 1) * 2 + tailPanel];
  }

private:
  template <typename Call>
  AmxRunStats runWith(const uint8_t *a, int64_t m, int64_t lda, void *c, int64_t ldc,
                      const float *residual, int64_t ldr, const float *xScale,
                      const float *const *columns, Call call) const;

  int64_t n_, k_, panels_, kChunks_;
  PackedU8S8AmxView packed_;
  GemmU8S8Params params_;
  std::vector<int32_t, CacheLineAllocator<int32_t>> comp_;
  std::vector<float, CacheLineAllocator<float>> scale_, bias_;
  std::vector<std::unique_ptr<GemmU8S8Amx>> kernels_; // [rows - 1][tail panel], null if unused
  std::vector<GemmU8S8AmxKernelFn> kernelFns_;
};

} // namespace octet::x86

#endif
