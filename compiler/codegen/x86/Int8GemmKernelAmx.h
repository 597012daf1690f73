//===- Int8GemmKernelAmx.h - AMX u8 x s8 -> s32 micro-kernel -------*- C++ -*-===//
//
// The INT8 GEMM's micro-kernel on Intel AMX (docs/amx.md; the driver,
// Int8GemmDriver.h, does the blocking, threading and tile-state bookkeeping).
//
// Packed B (PackIsa::Amx): ceil(N / 32) panels of 32 columns; a panel is
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
// rows into L1 (A is reused from L2 across panels). The tile sums are stored (tilestored) as s32
// rows of 32 into a per-thread buffer, and the AVX-512 epilogue (Int8GemmKernel.h) runs over them
// row by row into C.
//
// Tails: N by padding (B columns are zero, the epilogue stores under a mask);
// K by padding (the staged, zero-filled tail chunk); M by the configuration:
// a call of R < 32 rows uses tiles of min(16, R) and R - 16 rows, a second
// tile configuration. A thread reissues ldtilecfg only when the configuration
// of its next call differs from the last it loaded (args.configure).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNELAMX_H
#define OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNELAMX_H

#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/Int8GemmKernel.h"

#include <cstdint>

namespace octet::x86 {

constexpr int kAmxPanel = 32;                 ///< columns per packed panel (2 column tiles)
constexpr int kAmxKChunk = 64;                ///< K bytes per A tile row / B chunk
constexpr int kAmxBlockRows = 32;             ///< rows per kernel call (2 row tiles)
constexpr int64_t kAmxBTileBytes = 1024;      ///< one B tile: 16 K groups x 16 columns x 4
constexpr int kAmxSumsStride = 4 * kAmxPanel; ///< bytes per row of the tile sums buffer
constexpr int64_t kAmxChunkBytes = 2 * kAmxBTileBytes; ///< both column tiles of one K chunk

/// Byte offset of B[k, n] in the PackIsa::Amx layout for a K of `kTotal`.
int64_t amxPackedOffset(int64_t k, int64_t n, int64_t kTotal);

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

/// Run-time arguments of an AmxTiles call, passed by pointer (System V: rdi).
/// Strides in elements. The generated code reads it by offset: its layout is
/// part of the code (an AOT image's bytes).
struct Int8GemmAmxArgs {
  const uint8_t *a;      ///< first row of the call, K = 0
  const int8_t *b;       ///< packed panel, K chunk 0
  int32_t *sums;         ///< per-thread [32][32] s32, 64-byte aligned: the tile sums
  uint8_t *aTail;        ///< per-thread [32][64] bytes: the staged K tail of A
  void *c;               ///< top-left element of the call's C block
  const int32_t *comp;   ///< -a_zp * colsum_B at the panel's first column; 32 entries readable
  const float *scale;    ///< panel's first column; 32 entries readable
  const float *bias;     ///< panel's first column; 32 entries readable
  const float *residual; ///< top-left element
  int64_t lda, ldc, ldr;
  int64_t kChunks;      ///< full 64-byte K chunks
  int64_t configure;    ///< nonzero: ldtilecfg first (the thread's loaded configuration differs)
  int64_t release;      ///< nonzero: tilerelease once the sums are stored (the thread's last call)
  int64_t sumsReady;    ///< nonzero: no tile code; `sums` already holds them (emulation)
  const float *xScale;  ///< per-row x scales of the call's first row (xScalePerRow)
  const float *columns; ///< the program's per-column inputs at the panel's first column
  /// The thread's next panel at K chunk 0, prefetched into L2 chunk by chunk
  /// during this call; null: no B prefetch.
  const int8_t *bNext;
};
using Int8GemmAmxFn = void (*)(const Int8GemmAmxArgs *);

/// Config: rows 1..32 (two row tiles when > 16), columns 1..32 (two
/// column tiles when > 16), kTailBytes K % 64 (the staged last chunk); the
/// panel is always 32 columns (config.nr is not read).
class Int8GemmKernelAmx : public Int8GemmKernel {
public:
  /// Throws std::invalid_argument for a configuration it cannot generate.
  /// Generating needs no AMX; running does (after requestAmxPermission()).
  explicit Int8GemmKernelAmx(const Int8GemmKernelConfig &config);
  /// jit_amx: PackIsa::Amx, AmxTiles, K granule 64, 32 rows per call.
  static const Int8GemmKernelFamily &family();

protected:
  void generate() override;

private:
  void kStep(int) override {} // the K loop is tiles, not GemmTileAvx512's zmm walk
  void dotChunk(const Xbyak::Reg64 &aBase, int64_t aRowTileOffset, const Xbyak::Reg64 &aStride);
  void prefetchNextAChunk();
  void prefetchNextPanelChunk();
  void stageKTail();
  void rowEpilogue();

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
void emulateInt8GemmAmxTiles(const Int8GemmKernelConfig &config, const Int8GemmAmxArgs &args,
                             AmxTileEmulator &amx);

} // namespace octet::x86

#endif
