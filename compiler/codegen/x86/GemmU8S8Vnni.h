//===- GemmU8S8Vnni.h - AVX-512 VNNI u8 x s8 -> s32 GEMM micro-kernel -*- C++ -*-===//
//
// One MR x NR tile of C = epilogue(A_u8 * B_s8), B packed by packU8S8 into
// NR-column panels of [K/4][NR][4] bytes (GemmU8S8.h). Per K step of 4:
// the NR/16 zmm of the packed B group are loaded once, then for each row the
// A dword (4 u8) is broadcast (vpbroadcastd) and `vpdpbusd acc, zA, zB` adds
// the 4-byte dot products into 16 s32 lanes. vpdpbusd's memory operand is the
// *signed* one, so A (unsigned) cannot be an embedded {1to16} broadcast: it
// is broadcast into a register, and B stays in registers across the MR rows.
// The MR * NR/16 s32 accumulators stay in registers for the whole K block.
//
// K tail: when K % 4 != 0 the last K block ends with one group of K % 4 bytes.
// Its A bytes are read with a zero-masked byte load (vmovdqu8 {k2}{z}, faults
// suppressed on masked bytes), so A rows are never read past their K bytes;
// B's packing pads the group with zeros.
//
// Epilogue on the last K block: GemmU8S8Epilogue.h (comp, scale or per-row
// scale, bias, residual, program with per-column inputs, f32 or u8/s8 store).
// Earlier K blocks leave s32 partial sums in a per-thread buffer (`partial`,
// rows of NR s32) that the next block adds back.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_GEMMU8S8VNNI_H
#define OCTET_COMPILER_CODEGEN_X86_GEMMU8S8VNNI_H

#include "compiler/codegen/x86/GemmU8S8Epilogue.h"

#include <cstdint>

namespace octet::x86 {

/// What one generated kernel computes (its cache key).
struct GemmU8S8VnniConfig {
  int mr = 1;                ///< rows of A and C, 1..maxRows(nr, scratch)
  int nr = 48;               ///< panel width: 16, 32, 48 or 64
  int columns = 48;          ///< valid columns of the panel (< nr only for the last one)
  int kTailBytes = 0;        ///< K % 4: bytes of the masked last K group (0: none)
  GemmU8S8EpilogueConfig epilogue;
};

/// Run-time arguments, passed by pointer (System V: rdi). Strides in elements.
struct GemmU8S8Args {
  const uint8_t *a;      ///< first row of the tile, at the K block's start
  const int8_t *b;       ///< packed panel, at the K block's group
  int32_t *partial;      ///< s32 partial sums of the tile, rows of NR (K blocks)
  void *c;               ///< tile's top-left element (f32, u8 or s8)
  const int32_t *comp;   ///< panel's first column; NR entries readable
  const float *scale;    ///< panel's first column; NR entries readable
  const float *bias;     ///< panel's first column; NR entries readable
  const float *residual; ///< tile's top-left element
  int64_t lda, ldc, ldr;
  int64_t kGroups;    ///< full 4-byte K groups in this block, >= 0
  int64_t kTail;      ///< nonzero: one masked group of kTailBytes follows
  int64_t accumulate; ///< nonzero: add `partial` (K blocks > 0)
  int64_t last;       ///< nonzero: last K block: epilogue and store C; else store `partial`
  const float *xScale; ///< per-row x scale of the tile's first row (xScalePerRow), one per row
  const float *columns; ///< the program's per-column inputs at the panel's first column
};
using GemmU8S8KernelFn = void (*)(const GemmU8S8Args *);

class GemmU8S8Vnni : public GemmU8S8EpilogueAvx512 {
public:
  /// Throws std::invalid_argument for a configuration it cannot generate.
  explicit GemmU8S8Vnni(const GemmU8S8VnniConfig &config);

protected:
  void generate() override;

private:
  void kStep(int step) override { dotGroup(step, false); }
  /// One K group; `tailGroup`: the masked last group of kTailBytes.
  void dotGroup(int step, bool tailGroup);
  static size_t argsOffset(ColumnArray array);

  GemmU8S8VnniConfig config_;
  const Xbyak::Reg64 regVec_ = r12;     // comp / scale / bias
  const Xbyak::Reg64 regXs_ = r13;      // per-row x scales
  const Xbyak::Reg64 regColumns_ = r14; // the program's per-column inputs
  const Xbyak::Opmask kKTail_ = k2;     // K tail bytes (K loop only)
};

} // namespace octet::x86

#endif
