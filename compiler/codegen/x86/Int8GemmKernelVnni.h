//===- Int8GemmKernelVnni.h - AVX-512 VNNI u8 x s8 -> s32 micro-kernel -*- C++ -*-===//
//
// One MR x NR tile of C = epilogue(A_u8 * B_s8) over one K block, or a run
// of such tiles one below the other in one call (Int8GemmVnniArgs::tiles; the
// driver, Int8GemmDriver.h, does the blocking and threading).
//
// Packed B (PackIsa::Avx512Vnni): ceil(N / NR) panels of [ceil(K / 4)][NR][4]
// s8, element (k, n) at ((p * K4 + k / 4) * NR + n % NR) * 4 + k % 4 with
// p = n / NR: one zmm holds 4 consecutive K of 16 columns, vpdpbusd's operand
// order. Columns past N and K bytes past K are zero. NR is 48 unless 32 pads
// N to fewer columns (gemm_blocking::panelWidth).
//
// Per K step of 4: the NR/16 zmm of the packed B group are loaded once, then
// for each row the A dword (4 u8) is broadcast (vpbroadcastd) and
// `vpdpbusd acc, zA, zB` adds the 4-byte dot products into 16 s32 lanes.
// vpdpbusd's memory operand is the *signed* one, so A (unsigned) cannot be an
// embedded {1to16} broadcast: it is broadcast into a register, and B stays in
// registers across the MR rows. The MR * NR/16 s32 accumulators stay in
// registers for the whole K block; MR fills the 32 zmm beside the B group, the
// A broadcast and the epilogue's scratch (9 for NR = 48, 14 for NR = 32; fewer
// with a program).
//
// K tail: when K % 4 != 0 the last K block ends with one group of K % 4 bytes.
// Its A bytes are read with a zero-masked byte load (vmovdqu8 {k2}{z}, faults
// suppressed on masked bytes), so A rows are never read past their K bytes;
// B's packing pads the group with zeros.
//
// The first K block starts its sums from comp[n] (the compensation, negated;
// 0 without an activation zero point); earlier K blocks leave s32 partial
// sums in a per-thread buffer (`partial`, rows of NR s32) that the next block
// adds back. Epilogue on the last K block: Int8GemmKernel.h (scale or per-row
// scale, bias, residual, program with per-column inputs, f32 or u8/s8 store);
// the last K block's loop prefetches the tile's C rows (for writing) and
// residual rows, one row per unrolled step (docs/int8-gemm.md).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNELVNNI_H
#define OCTET_COMPILER_CODEGEN_X86_INT8GEMMKERNELVNNI_H

#include "compiler/codegen/x86/Int8GemmKernel.h"

#include <cstdint>

namespace octet::x86 {

/// Run-time arguments of a RegisterTile call, passed by pointer (System V:
/// rdi). Strides in elements. The generated code reads it by offset: its
/// layout is part of the code (an AOT image's bytes).
struct Int8GemmVnniArgs {
  const uint8_t *a;      ///< first row of the tile, at the K block's start
  const int8_t *b;       ///< packed panel, at the K block's group
  int32_t *partial;      ///< s32 partial sums of the tile, rows of NR (K blocks)
  void *c;               ///< tile's top-left element (f32, u8 or s8)
  const int32_t *comp;   ///< -a_zp * colsum_B at the panel's first column; NR entries readable
  const float *scale;    ///< panel's first column; NR entries readable
  const float *bias;     ///< panel's first column; NR entries readable
  const float *residual; ///< tile's top-left element
  int64_t lda, ldc, ldr;
  int64_t kGroups;      ///< full 4-byte K groups in this block, >= 0
  int64_t kTail;        ///< nonzero: one masked group of kTailBytes follows
  int64_t accumulate;   ///< nonzero: add `partial` (K blocks > 0)
  int64_t last;         ///< nonzero: last K block: epilogue and store C; else store `partial`
  const float *xScale;  ///< per-row x scale of the tile's first row (xScalePerRow), one per row
  const float *columns; ///< the program's per-column inputs at the panel's first column
  /// B bytes to pull into L2 during this call, config.bPrefetchLines cache
  /// lines per kUnroll K groups from here on (the driver's next slice of B;
  /// prefetches never fault, so any value is safe, null included).
  const int8_t *bPrefetch;
  /// Row tiles of the kernel's height to run, one below the other (0 or 1:
  /// one). After each the kernel moves a, c, residual, xScale and partial
  /// (those not null) down by its rows, lowers prefetchLeft by prefetchStep
  /// and moves bPrefetch on by prefetchStep while prefetchLeft stays above 0
  /// (else to b): a call returns with them at the tile after its last and
  /// tiles at 0 (or below). One call per run of equal tiles instead of one
  /// per tile (docs/int8-gemm.md).
  int64_t tiles;
  int64_t prefetchLeft; ///< bytes of the next slice not yet prefetched, at this tile
  int64_t prefetchStep; ///< bytes a tile's K loop prefetches
};
using Int8GemmVnniFn = void (*)(Int8GemmVnniArgs *);

/// Config: rows 1..maxRows(nr, scratch), nr 16, 32, 48 or 64, kTailBytes K % 4,
/// bPrefetchLines 1, 2 or 4.
class Int8GemmKernelVnni : public Int8GemmKernel {
public:
  /// Throws std::invalid_argument for a configuration it cannot generate.
  explicit Int8GemmKernelVnni(const Int8GemmKernelConfig &config);
  /// jit_vnni: PackIsa::Avx512Vnni, RegisterTile, K granule 4.
  static const Int8GemmKernelFamily &family();

protected:
  void generate() override;
  /// config.bPrefetchLines lines of the next B slice into L2 per unrolled K step
  /// (config.bPrefetchToL1: into L1 and L2).
  void afterUnrolledSteps() override;

private:
  void kStep(int step) override { dotGroup(step, false); }
  /// One K group; `tailGroup`: the masked last group of kTailBytes.
  void dotGroup(int step, bool tailGroup);
  static size_t argsOffset(ColumnArray array);
  /// Bytes of one C element: 4 (f32) or 1 (u8 / s8).
  int outputBytes() const { return config_.epilogue.output == QuantOutput::F32 ? 4 : 1; }

  const Xbyak::Reg64 regVec_ = r12;      // comp / scale / bias
  const Xbyak::Reg64 regXs_ = r13;       // per-row x scales
  const Xbyak::Reg64 regColumns_ = r14;  // the program's per-column inputs
  const Xbyak::Reg64 regPrefetch_ = r15; // Int8GemmVnniArgs::bPrefetch, moving on
  const Xbyak::Opmask kKTail_ = k2;      // K tail bytes (K loop only)
  // The K loop's output-row prefetch (with regRow_ / regLd_ for C): the
  // epilogue's registers, free until it starts.
  const Xbyak::Reg64 regOutRowsLeft_ = r12, regOutResidual_ = r13, regOutLdr_ = r14;
};

} // namespace octet::x86

#endif
