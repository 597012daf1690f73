//===- AttentionKernels.h - kernels of the attention step -------*- C++ -*-===//
//
// The two kernels runtime/AttentionStep.cpp runs per (batch, head), both with
// every size a run-time argument, so that one set generated when the step is
// built serves every batch and sequence length (no code generation in run()):
//
//  - AttentionGemmKernel: one tile C[mr x 16·nv] = A[mr x K] · B[K x 16·nv],
//    K, lda, ldb, ldc and the columns that are inside N given per call. B rows
//    are loaded under the column masks (masked-off lanes read nothing), so B
//    may be a strided view (V's rows) as well as a packed panel (Kᵀ); C is
//    stored under the same masks. mr and nv are generation parameters.
//  - AttentionSoftmaxKernel: in place over `rows` rows of n scores,
//    x = softmax(scale · x + mask_row); n, the strides and the scale are
//    run-time values, the N % 16 tail mask is computed by the kernel. A row
//    whose every entry is -inf yields zeros (no NaN); with -FLT_MAX entries a
//    fully masked row is uniform (as FusedKernels' SoftmaxKernel). Weighted
//    (the int8 path's P·V operand, docs/attention-int8.md): no normalizing
//    pass; x = e · weights with e = exp(z - max z), and per row 1/Σe and the
//    largest x (by bits) for the quantizing pack that follows.
//
// Each kernel has a compiled C++ twin with the same arguments (the path for
// hosts without AVX-512 and for KernelOptions::allowAvx512 == false).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_ATTENTIONKERNELS_H
#define OCTET_COMPILER_CODEGEN_X86_ATTENTIONKERNELS_H

#include "compiler/codegen/x86/KernelGenerator.h"
#include "compiler/codegen/x86/VectorMath.h"

#include <cstddef>
#include <cstdint>
#include <functional>

namespace octet::x86 {

/// Arguments of one GEMM tile. Strides in floats.
struct AttentionGemmArgs {
  const float *a = nullptr; ///< A row 0, column 0 (mr rows of k floats, stride lda)
  const float *b = nullptr; ///< B row 0 (k rows, stride ldb; only `columns` of each are read)
  float *c = nullptr;       ///< C row 0 (mr rows, stride ldc; only `columns` are written)
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t k = 0;       ///< >= 0; 0 stores zeros
  int64_t columns = 0; ///< 1 .. 16·nv
  /// Per 16-column vector, the lanes below `columns` (what the JIT kernel reads).
  uint16_t columnMask[4] = {};
  /// Sets columns and columnMask.
  void setColumns(int64_t n);
};

class AttentionGemmKernel : public KernelGenerator {
public:
  static constexpr int kMaxVectors = 4;
  /// Largest mr for nv vectors: the accumulators, nv B vectors and an A
  /// broadcast fit the 32 zmm registers.
  static int maxRows(int nv) { return nv >= 4 ? 6 : 8; }

  AttentionGemmKernel(int mr, int nv);
  using Fn = void (*)(const AttentionGemmArgs *);

protected:
  void generate() override;

private:
  int mr_, nv_;
  Xbyak::Zmm acc(int row, int vec) const { return Xbyak::Zmm(row * nv_ + vec); }
  Xbyak::Address aRow(int row) const;
  const Xbyak::Reg64 rArgs = rdi, rA = rsi, rA4 = rdx, rLda = rcx, rLda3 = r8, rB = r9, rLdb = r10,
                     rK = r11, rC = rax, rLdc = rbx;
  const Xbyak::Zmm zA = zmm31;
  Xbyak::Zmm zB(int vec) const { return Xbyak::Zmm(27 + vec); }
};

/// The dword at row `row` (0-7) of an A operand whose rows are `ld` bytes
/// apart: rows 0-3 from `base`, 4-7 from `base4` = base + 4 ld, with `ld3` =
/// 3 ld, so eight rows need no per-row pointer (the f32 and bf16 GEMM tiles).
Xbyak::Address rowDword(const Xbyak::Reg64 &base, const Xbyak::Reg64 &base4,
                        const Xbyak::Reg64 &ld, const Xbyak::Reg64 &ld3, int row);

/// Where a packed-dot kernel's arguments hold the fields emitPackedDot reads.
struct PackedDotFields {
  size_t a, b, c, lda, ldc, kChunks, colPairs;
  /// The int64 count of 8-row groups to compute (1-4; 0 or 4: all 32 rows), or
  /// kAllRows where the arguments have no such field.
  size_t rowGroups = kAllRows;
  static constexpr size_t kAllRows = ~size_t(0);
};
template <typename Args> PackedDotFields packedDotFields() {
  return {offsetof(Args, a),   offsetof(Args, b),       offsetof(Args, c),       offsetof(Args, lda),
          offsetof(Args, ldc), offsetof(Args, kChunks), offsetof(Args, colPairs)};
}

/// The body of the bf16 and int8 dot kernels (between preamble and postamble,
/// arguments at rdi): C[32 x 32 colPairs] from A (32 rows, stride lda bytes, 4
/// bytes per k step) and B packed as 16 x 16-dword tiles (column tile t, chunk
/// kc at b + (t kChunks + kc) KiB; one 64-byte tile row per k step, 16 k steps
/// per chunk). Per pair of column tiles and per group of 8 rows: accumulators
/// zmm0-15 (row r, tile t: zmm(2r + t)) cleared, then per k step the pair's
/// tile rows (zmm16-17) and, per row, its 4 bytes broadcast (zmm18-25) into
/// dot(acc, a, b). Then beforeStores(group) (rsi, rdx, r9, r10, rbx, zmm16-31
/// free; r15 − args.c is the pair's byte offset, 128 per pair, into per-column
/// vectors), and finish(acc, row 0-31, tile) before each accumulator's store.
/// With fields.rowGroups, only the first that many groups of each pair (the
/// rows past them are neither read nor written).
void emitPackedDot(Xbyak::CodeGenerator &g, const PackedDotFields &fields,
                   const std::function<void(const Xbyak::Zmm &acc, const Xbyak::Zmm &a,
                                            const Xbyak::Zmm &b)> &dot,
                   const std::function<void(int group)> &beforeStores,
                   const std::function<void(const Xbyak::Zmm &acc, int row, int tile)> &finish);

/// The C++ twin of AttentionGemmKernel (any mr, columns <= 64).
void attentionGemmReference(const AttentionGemmArgs &args, int mr);

/// Arguments of the softmax kernel. Strides in floats.
struct AttentionSoftmaxArgs {
  float *x = nullptr; ///< row 0, rewritten in place
  int64_t ldx = 0;
  int64_t rows = 0;
  int64_t n = 0;               ///< row length (>= 1 when rows > 0)
  const float *mask = nullptr; ///< row 0 of the additive mask, n contiguous floats per row
  int64_t ldMask = 0;          ///< may be 0: every row uses the same mask row
  float scale = 1;
  // Weighted kernels only:
  const float *weights = nullptr; ///< n multipliers of e, the same for every row (>= +0)
  float *rowInverse = nullptr;    ///< per row: 1 / Σe (0 when Σe is 0)
  float *rowMax = nullptr;        ///< per row: the largest e · weight by unsigned bits
};

class AttentionSoftmaxKernel : public KernelGenerator {
public:
  /// weighted: e · weights with the rows' 1/Σe and maxima, no normalizing pass.
  explicit AttentionSoftmaxKernel(bool hasMask, bool weighted = false);
  using Fn = void (*)(const AttentionSoftmaxArgs *);

protected:
  void generate() override;

private:
  /// Emits body(tail) for each 16-float vector of the current row at [rX + rCol]
  /// (full vectors in a loop, then the n % 16 tail under kTail when there is one).
  template <typename Body> void forEachVector(Body body);
  /// The three passes over `count` (1 or 2) rows from rX, interleaved.
  void emitRows(int count);
  bool hasMask_, weighted_;
  ConstantTable constants_{*this};
  VectorMath math_;
  const Xbyak::Reg64 rArgs = rdi, rX = rsi, rLdx = rdx, rRows = r8, rFull = r9, rMask = r10,
                     rLdMask = r11, rCol = rax, rI = rbx, rTail = r12, rX1 = r13, rMask1 = r14,
                     rWeights = r15, rRowMax = rbp, rRowInverse = rcx;
  const Xbyak::Opmask kTail = k1;
  const Xbyak::Zmm zScale = zmm4;
  /// One row's registers: the vector in hand, the accumulator (max, then
  /// sum), its max, 1/sum, a temporary, the weighted values' maximum, and its
  /// sum == 0 mask.
  struct RowRegisters {
    Xbyak::Zmm val, acc, max, inv, tmp, weightedMax;
    Xbyak::Opmask zero;
  };
  const RowRegisters rows_[2] = {{zmm0, zmm1, zmm2, zmm3, zmm5, zmm11, k4},
                                 {zmm6, zmm7, zmm8, zmm9, zmm10, zmm12, k5}};
};

/// The C++ twin of AttentionSoftmaxKernel (mask may be null).
void attentionSoftmaxReference(const AttentionSoftmaxArgs &args);

/// Arguments of the Kᵀ packing: dst[p][d][j] = src[64p + j][d] for keys
/// j < rows and dims d < cols, panels of 64 keys (64·cols floats each; keys
/// past `rows` up to the panel's 64 are written as zeros). Strides in floats.
struct AttentionKeysArgs {
  const float *src = nullptr; ///< key 0, dim 0
  int64_t lds = 0;
  int64_t rows = 0; ///< keys (S)
  int64_t cols = 0; ///< head dim (D)
  float *dst = nullptr; ///< ceil(rows / 64) panels of 64·cols floats
};

/// Kᵀ for the Q·Kᵀ tiles of the f32 attention, 16 keys x 16 dims at a time
/// (emitTranspose16x16), the next 16 key rows prefetched (each is a page apart
/// in a merged QKV output).
class AttentionKeysKernel : public KernelGenerator {
public:
  AttentionKeysKernel();
  using Fn = void (*)(const AttentionKeysArgs *);

protected:
  void generate() override;

private:
  const Xbyak::Reg64 rArgs = rdi, rSrc = rsi, rLds = rdx, rRows = rcx, rCols = r8, rDst = r9,
                     rRow = r10, rCol = r11, rTmp = r12, rOut = r13, rValid = r14, rPanel = r15,
                     rLanes = rbx;
};

/// The C++ twin of AttentionKeysKernel.
void attentionKeysReference(const AttentionKeysArgs &args);

} // namespace octet::x86

#endif
