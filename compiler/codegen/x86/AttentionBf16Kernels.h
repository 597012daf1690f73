//===- AttentionBf16Kernels.h - attention's GEMMs on AMX-BF16 ---*- C++ -*-===//
//
// The kernels of the attention step's bf16 path (runtime/AttentionStep.cpp,
// docs/attention-bf16.md): Q·Kᵀ and P·V on AMX tiles (tdpbf16ps: bf16 pairs
// multiplied, f32 accumulated), the softmax between them in f32 as before.
//
//  - AttentionBf16PackKernel converts f32 to bf16 (round to nearest even,
//    vcvtne2ps2bf16) into the operand layouts tdpbf16ps reads:
//      Rows:   A operand, dst[r][c] (row stride ldd elements), for Q rows and P;
//      Keys:   B operand of Q·Kᵀ, 16x16-dword tiles [S/16][D/32][16][16], the
//              dword at (tile j/16, chunk kc, row r, col j%16) holding K[j][2d'],
//              K[j][2d'+1] with d' = 16 kc + r (a dword transpose, scattered);
//      Values: B operand of P·V, tiles [D/16][S/32][16][16], the dword at
//              (tile d/16, chunk kc, row r, col d%16) holding V[2p][d], V[2p+1][d]
//              with p = 16 kc + r (two rows interleaved).
//    Everything past the valid rows and columns up to the padded sizes
//    (multiples of 32) is written as zeros, so no operand needs clearing.
//  - AttentionTileBf16Kernel: C[32 x 32 colPairs] (f32) = A[32 x 32 kChunks]
//    (bf16 rows) · B (packed tiles: column tile t, chunk kc at b + (t kChunks
//    + kc) 1024 bytes), 2x2 tiles (tmm0-3 C, tmm4-5 A, tmm6-7 B), one tile
//    configuration (every tile 16 rows x 64 bytes), stored with tilestored.
//
// Generating needs neither AMX nor AVX512-BF16; running needs AMX-BF16 (and
// requestAmxPermission()) for the tile kernel, AVX512-BF16 + BW for packing.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_ATTENTIONBF16KERNELS_H
#define OCTET_COMPILER_CODEGEN_X86_ATTENTIONBF16KERNELS_H

#include "compiler/codegen/x86/AmxSupport.h"
#include "compiler/codegen/x86/KernelGenerator.h"

#include <cstdint>

namespace octet::x86 {

constexpr int kBf16Chunk = 32;          ///< bf16 elements per A tile row / B tile K
constexpr int64_t kBf16TileBytes = 1024; ///< one 16 x 16-dword tile

/// Rounds up to the bf16 operands' multiple (32).
inline int64_t bf16Padded(int64_t n) { return (n + kBf16Chunk - 1) / kBf16Chunk * kBf16Chunk; }

/// f32 -> bf16 as vcvtne2ps2bf16: round to nearest even, denormals to signed
/// zero, NaN quieted.
uint16_t toBf16(float f);
float fromBf16(uint16_t b);

enum class Bf16Pack { Rows, Keys, Values };

/// Arguments of one pack call. Strides in elements.
struct AttentionBf16PackArgs {
  const float *src = nullptr; ///< row 0, column 0
  int64_t lds = 0;
  int64_t rows = 0;    ///< valid source rows (Keys / Values: keys)
  int64_t cols = 0;    ///< valid source columns (Keys / Values: head dim)
  uint16_t *dst = nullptr;
  int64_t ldd = 0;     ///< Rows: destination row stride (>= padCols)
  int64_t padRows = 0; ///< rows written (Rows), or keys (Keys / Values: a multiple of 32)
  int64_t padCols = 0; ///< columns written, a multiple of 32 (Keys / Values: head dim)
};

class AttentionBf16PackKernel : public KernelGenerator {
public:
  explicit AttentionBf16PackKernel(Bf16Pack mode);
  using Fn = void (*)(const AttentionBf16PackArgs *);

protected:
  void generate() override;

private:
  void rowsBody();
  void keysBody();
  void valuesBody();
  /// k1 / k2 = the lanes of chunk `chunk` below `cols` (see generate()).
  void chunkMasks(const Xbyak::Reg64 &chunk);
  Bf16Pack mode_;
  Xbyak::Label interleave_;
  const Xbyak::Reg64 rArgs = rdi, rSrc = rsi, rLds = rdx, rRows = rcx, rFull = r8, rDst = r9,
                     rLdd = r10, rPadRows = r11, rChunks = rax, rRow = rbx, rCol = rbp,
                     rTmp = r12, rOut = r13, rValid = r14, rSrc2 = r15;
};

/// The C++ twin: the same layouts, toBf16 rounding.
void attentionBf16PackReference(Bf16Pack mode, const AttentionBf16PackArgs &args);

/// Arguments of one tile call. Strides in bytes.
struct AttentionTileBf16Args {
  const uint16_t *a = nullptr; ///< 32 rows of 32 kChunks bf16, stride lda
  const uint16_t *b = nullptr; ///< packed tiles (Keys or Values layout)
  float *c = nullptr;          ///< 32 rows of 32 colPairs floats, stride ldc
  int64_t lda = 0, ldc = 0;
  int64_t kChunks = 0;  ///< >= 1
  int64_t colPairs = 0; ///< pairs of 16-column tiles; 0: no tile math (release only)
  int64_t configure = 0; ///< nonzero: ldtilecfg first
  int64_t release = 0;   ///< nonzero: tilerelease last
  /// The vdpbf16ps kernel: groups of 8 rows computed (1-4; 0: all 32), the
  /// rows past them (a sequence's last block's padding) neither read nor
  /// written. The AMX kernel computes all 32 (its tiles hold 16 rows).
  int64_t rowGroups = 0;
};

class AttentionTileBf16Kernel : public KernelGenerator {
public:
  AttentionTileBf16Kernel();
  using Fn = void (*)(const AttentionTileBf16Args *);
  /// Every tile 16 rows x 64 bytes.
  static AmxTileConfig config();

protected:
  void generate() override;

private:
  Xbyak::Label tileConfig_;
  const Xbyak::Reg64 rArgs = rdi, rA = rsi, rA1 = rdx, rLda = rcx, rB0 = r8, rB1 = r9,
                     rC = r10, rLdc = r11, rK = rax, rPairs = rbx, rBPair = rbp, rStride64 = r12,
                     rC1 = r13, rPairBytes = r14;
};

/// The same computation as AttentionTileBf16Kernel (same arguments and
/// layouts; configure / release are ignored) on AVX512-BF16 without AMX:
/// vdpbf16ps, 8 rows x 2 column tiles of f32 sums in zmm registers, A pairs
/// broadcast, B read as packed (one 64-byte tile row is 16 columns' pairs).
/// Zen 4/5 and Cooper Lake run bf16 attention on this.
class AttentionDotBf16Kernel : public KernelGenerator {
public:
  AttentionDotBf16Kernel();
  using Fn = void (*)(const AttentionTileBf16Args *);

protected:
  void generate() override;
};

/// The C++ twin of one tile call: f32 sums of bf16 products, k in order
/// (rowGroups as the vdpbf16ps kernel takes it).
void attentionTileBf16Reference(const AttentionTileBf16Args &args);

} // namespace octet::x86

#endif
