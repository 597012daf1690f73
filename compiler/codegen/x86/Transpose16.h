//===- Transpose16.h - 16 x 16 dword transpose in zmm registers -*- C++ -*-===//
//
// Emits the transpose of a 16 x 16 block of 32-bit elements held in zmm0-15
// (register i = row i), zmm16-31 scratch: dword unpacks of row pairs, qword
// unpacks of pair pairs, then two rounds of 128-bit lane shuffles, after which
// `store(j, zmm)` receives column j (16 elements, one per row). Used by the
// attention kernels to pack Kᵀ (f32 and bf16 pairs).
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

} // namespace octet::x86

#endif
