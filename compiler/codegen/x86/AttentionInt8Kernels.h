//===- AttentionInt8Kernels.h - attention's GEMMs on vpdpbusd ---*- C++ -*-===//
//
// The kernels of the attention step's int8 path (runtime/AttentionStep.cpp,
// --attention=int8, docs/attention-int8.md): Q·Kᵀ and P·V on vpdpbusd (u8 x s8
// quads, int32 sums), every operand quantized at run time with scales of its
// own, the scale, mask and softmax in f32 between them (the f32 path's kernel).
//
//  - AttentionInt8PackKernel quantizes f32 (x ≈ scale · q, q = round-to-even of
//    x / scale) into the operand layouts the dot kernel reads:
//      SignedRows:   A of Q·Kᵀ: per row r, q in [-127, 127] with scale m_r / 127,
//                    stored as the u8 q + 128 at dst[r][c] (row stride ldd bytes);
//      WeightedRows: A of P·V: per row r, of the weighted softmax's
//                    w[r][c] = e[r][c] · (key c's V scale) (≥ 0), with
//                    m_r = max(kInt8MinRange, rowMax[r]) given (the softmax
//                    found it): q in [0, 255], scale m_r / 255 · rowInverse[r]
//                    (1/Σe: the probabilities' normalization, applied here);
//      Keys:   B of Q·Kᵀ: per key j, s8 q with scale m_j / 127, as tiles
//              [S/16][D/64][16][16 dwords]: the dword at (tile j/16, chunk kc,
//              row r, column j%16) holds K[j][4d'..4d'+3], d' = 16 kc + r;
//              sums[j] = 128 · Σ_d q (what the u8 offset of Q adds to a score);
//      Values: B of P·V: per key j, s8 q with scale m_j / 127, as tiles
//              [D/16][S/64][16][16 dwords]: the dword at (tile d/16, chunk kc,
//              row r, column d%16) holds V[4p..4p+3][d], p = 16 kc + r.
//    Every scale belongs to one query row or one key, none is shared across
//    keys: P·V = Σ_j P[r][j] · scale_j · qV[j] = scale'_r Σ_j qP'[r][j] qV[j], so
//    a key's quantization never depends on another key (padding included),
//    and a packed batch computes what the padded one does.
//    m = max(kInt8MinRange, max |x|) over the row, key or dim (by bits, so a NaN
//    or inf wins: its scale makes every result it touches NaN, as f32 would;
//    WeightedRows: rowMax, found the same way).
//    Everything past the valid rows and columns up to the padded sizes
//    (multiples of 64) is written: zeros (SignedRows: q = 0), scale 0 for
//    padding rows and keys; so no operand needs clearing.
//  - AttentionDotInt8Kernel: C[32 x 32 colPairs] (f32) =
//      (A[32 x 64 kChunks] (u8) · B (tiles: column tile t, chunk kc at
//       b + (t kChunks + kc) KiB) − colSums) · colScale · rowScale
//    (Q·Kᵀ), or without the column terms A · B · rowScale (P·V),
//    the int32 sums in zmm registers (8 rows x 2 column tiles), A quads
//    broadcast, B rows read as packed.
//
// Generating needs no particular CPU; running needs AVX-512 (BW) for packing and
// AVX-512 VNNI for the dot kernel.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_ATTENTIONINT8KERNELS_H
#define OCTET_COMPILER_CODEGEN_X86_ATTENTIONINT8KERNELS_H

#include "compiler/codegen/x86/KernelGenerator.h"

#include <cstdint>

namespace octet::x86 {

constexpr int kInt8Chunk = 64;           ///< k bytes per tile (16 rows of 4), and the padding unit
constexpr int64_t kInt8TileBytes = 1024; ///< one 16 x 16-dword tile
/// The smallest range m: a row of zeros (or denormals) gets a finite scale.
constexpr float kInt8MinRange = 1e-30f;

/// Rounds up to the int8 operands' multiple (64).
inline int64_t int8Padded(int64_t n) { return (n + kInt8Chunk - 1) / kInt8Chunk * kInt8Chunk; }

enum class Int8Pack { SignedRows, WeightedRows, Keys, Values };

/// Arguments of one pack call. Strides: lds in floats, ldd in bytes.
struct AttentionInt8PackArgs {
  const float *src = nullptr; ///< row 0, column 0
  int64_t lds = 0;
  int64_t rows = 0; ///< valid source rows (Keys / Values: keys)
  int64_t cols = 0; ///< valid source columns (Keys / Values: head dim)
  uint8_t *dst = nullptr;
  int64_t ldd = 0;               ///< rows: destination row stride (>= padCols)
  int64_t padRows = 0;           ///< rows written (rows), or keys (Keys / Values): a multiple of 64
  int64_t padCols = 0;           ///< columns written, a multiple of 64 (Keys / Values: head dim)
  float *scales = nullptr;       ///< per row / key (padRows)
  int32_t *sums = nullptr;       ///< Keys: per key (padRows)
  float *work = nullptr;         ///< Keys: 16 floats of scratch
  const float *rowMax = nullptr; ///< WeightedRows: each row's largest value (rows)
  const float *rowInverse = nullptr; ///< WeightedRows: each row's scale multiplier (rows)
};

class AttentionInt8PackKernel : public KernelGenerator {
public:
  explicit AttentionInt8PackKernel(Int8Pack mode);
  using Fn = void (*)(const AttentionInt8PackArgs *);

protected:
  void generate() override;

private:
  void rowsBody();
  void keysBody();
  void valuesBody();
  void loadConstants();
  /// k1-k4 (Values: k1) = the lanes of chunk `chunk` (64 columns; Values: 16)
  /// below cols (rFull whole chunks, the tail's lanes in k5).
  void chunkMasks(const Xbyak::Reg64 &chunk);
  /// xmm0 = max |x| of the row at `row` by bits (clobbers rTmp, rCol, zmm0-1,
  /// k1-k4), then scaleOfRange().
  void rowRange(const Xbyak::Reg64 &row);
  /// From xmm0 = the largest |x|: xmm0 = m, xmm1 = the scale m / levels,
  /// xmm2 = the multiplier levels / m.
  void scaleOfRange();
  /// dst = the 64 bytes of the chunk at `src` (k1-k4) times `mult`, rounded
  /// and saturated (zmm16-21 clobbered).
  void quantizeChunk(const Xbyak::Zmm &dst, const Xbyak::Zmm &mult, const Xbyak::Reg64 &src);
  Int8Pack mode_;
  Xbyak::Label dwordOrder_, quadTranspose_;
  const Xbyak::Reg64 rArgs = rdi, rSrc = rsi, rLds = rdx, rRows = rcx, rFull = r8, rDst = r9,
                     rLdd = r10, rScales = r11, rChunks = rax, rRow = rbx, rCol = rbp, rTmp = r12,
                     rOut = r13, rValid = r14, rSrc2 = r15;
  // Constants (loadConstants): |x| mask, m's floor, levels, the dword order
  // after the packs, and SignedRows' +128.
  const Xbyak::Zmm zAbs = zmm30, zMinRange = zmm29, zLevels = zmm28, zOrder = zmm27,
                   zOffset = zmm26;
};

/// The C++ twin: the same layouts, scales and rounding.
void attentionInt8PackReference(Int8Pack mode, const AttentionInt8PackArgs &args);

/// Arguments of one dot call. Strides in bytes.
struct AttentionDotInt8Args {
  const uint8_t *a = nullptr; ///< 32 rows of 64 kChunks u8, stride lda
  const int8_t *b = nullptr;  ///< packed tiles (Keys or Values layout)
  float *c = nullptr;         ///< 32 rows of 32 colPairs floats, stride ldc
  int64_t lda = 0, ldc = 0;
  int64_t kChunks = 0;              ///< >= 1
  int64_t colPairs = 0;             ///< pairs of 16-column tiles (0: nothing)
  const float *rowScale = nullptr;  ///< 32
  const float *colScale = nullptr;  ///< 32 colPairs (the column-terms kernel only)
  const int32_t *colSums = nullptr; ///< 32 colPairs, subtracted from the int32 sums (same)
  /// Groups of 8 rows computed (1-4; 0: all 32): a block's rows past them are
  /// padding (a sequence's last block), neither read nor written.
  int64_t rowGroups = 0;
};

class AttentionDotInt8Kernel : public KernelGenerator {
public:
  /// columnTerms: subtract colSums and multiply by colScale (Q·Kᵀ); without
  /// them the kernel reads neither (P·V: P has no offset, V's scales are in P).
  explicit AttentionDotInt8Kernel(bool columnTerms);
  using Fn = void (*)(const AttentionDotInt8Args *);

protected:
  void generate() override;

private:
  bool columnTerms_;
  const Xbyak::Reg64 rArgs = rdi, rA = rsi, rA4 = rdx, rLda = rcx, rLda3 = r8, rB0 = r9, rB1 = r10,
                     rC = r11, rLdc = rax, rK = rbx, rPairs = rbp, rBPair = r12, rPairBytes = r13,
                     rABase = r14, rCBase = r15;
};

/// The C++ twin of one dot call: exact int32 sums, then
/// float(sum − colSums[n]) · colScale[n] · rowScale[m] in that order, or
/// float(sum) · rowScale[m] when colSums is null (the kernel without column terms).
void attentionDotInt8Reference(const AttentionDotInt8Args &args);

} // namespace octet::x86

#endif
