//===- Transpose16.h - 16 x 16 dword transpose in zmm registers -*- C++ -*-===//
//
// Emits the transpose of a 16 x 16 block of 32-bit elements held in zmm0-15
// (register i = row i), zmm16-31 scratch: dword unpacks of row pairs, qword
// unpacks of pair pairs, then two rounds of 128-bit lane shuffles, after which
// `store(j, zmm)` receives column j (16 elements, one per row); and the
// row-block helpers around it. Used by the attention kernels to pack Kᵀ (f32
// and bf16 pairs).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_COMPILER_CODEGEN_X86_TRANSPOSE16_H
#define OCTET_COMPILER_CODEGEN_X86_TRANSPOSE16_H

#include <xbyak/xbyak.h>

#include <functional>

namespace octet::x86 {

/// `store(j, z)` is called for j = 0..15 (in an order of the emitter's
/// choosing) with the register holding column j; zmm0-31 are clobbered.
void emitTranspose16x16(Xbyak::CodeGenerator &g,
                        const std::function<void(int column, const Xbyak::Zmm &)> &store);

/// dst = clamp(total - start, 0, limit): the valid rows of a block.
void emitRemaining(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &dst, const Xbyak::Reg64 &total,
                   const Xbyak::Reg64 &start, int limit);

/// prefetcht0 of the first `lines` cache lines of `rows` rows, row 0 at
/// `row` (advanced by `ld` bytes per row: clobbered).
void emitPrefetchRows(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &row, const Xbyak::Reg64 &ld,
                      int rows, int lines);

/// dst = load() where `mask` has a lane set, else zero without a load: a
/// masked load whose lanes are all off still translates its address, and
/// where that page is unmapped (rows past a tensor's end) AMD Zen 4 takes a
/// fault-suppression assist: a 32-key head's 128 such loads in its V padding
/// rows cost its K/V packing 87 000 TSC cycles instead of 2 600 (so roughly
/// 650 each; bench/RESULTS.md, session 19).
void emitLoadUnlessMasked(Xbyak::CodeGenerator &g, const Xbyak::Opmask &mask, const Xbyak::Zmm &dst,
                          const std::function<void()> &load);

/// zmm i (i = 0..15) = load(i) for i < `valid`, else zero; `row` (advanced
/// by `ld` bytes per row: clobbered) is row i's address when load(i) runs.
void emitLoadRows16(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &row, const Xbyak::Reg64 &ld,
                    const Xbyak::Reg64 &valid, const std::function<void(int)> &load);

} // namespace octet::x86

#endif
