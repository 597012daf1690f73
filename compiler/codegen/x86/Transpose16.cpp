//===- Transpose16.cpp ----------------------------------------------------===//
#include "compiler/codegen/x86/Transpose16.h"

namespace octet::x86 {

using Xbyak::Zmm;

void emitTranspose16x16(Xbyak::CodeGenerator &g,
                        const std::function<void(int column, const Zmm &)> &store) {
  // Stage 1: dword pairs of rows (2k, 2k + 1); stage 2: qword pairs, so that
  // u[4k + c] lane l = rows 4k..4k+3 of column 4l + c.
  for (int k = 0; k < 8; ++k) {
    g.vpunpckldq(Zmm(16 + 2 * k), Zmm(2 * k), Zmm(2 * k + 1));
    g.vpunpckhdq(Zmm(17 + 2 * k), Zmm(2 * k), Zmm(2 * k + 1));
  }
  for (int k = 0; k < 4; ++k) {
    const Zmm t0(16 + 4 * k), t1(17 + 4 * k), t2(18 + 4 * k), t3(19 + 4 * k);
    g.vpunpcklqdq(Zmm(4 * k + 0), t0, t2);
    g.vpunpckhqdq(Zmm(4 * k + 1), t0, t2);
    g.vpunpcklqdq(Zmm(4 * k + 2), t1, t3);
    g.vpunpckhqdq(Zmm(4 * k + 3), t1, t3);
  }
  // Column j = 4l + c is lane l of u[c], u[4 + c], u[8 + c], u[12 + c]: a 4 x 4
  // transpose of 128-bit lanes.
  for (int c = 0; c < 4; ++c) {
    const Zmm x0(c), x1(4 + c), x2(8 + c), x3(12 + c);
    g.vshufi32x4(g.zmm16, x0, x1, 0x44);
    g.vshufi32x4(g.zmm17, x0, x1, 0xee);
    g.vshufi32x4(g.zmm18, x2, x3, 0x44);
    g.vshufi32x4(g.zmm19, x2, x3, 0xee);
    g.vshufi32x4(g.zmm20, g.zmm16, g.zmm18, 0x88);
    g.vshufi32x4(g.zmm21, g.zmm16, g.zmm18, 0xdd);
    g.vshufi32x4(g.zmm22, g.zmm17, g.zmm19, 0x88);
    g.vshufi32x4(g.zmm23, g.zmm17, g.zmm19, 0xdd);
    for (int l = 0; l < 4; ++l)
      store(4 * l + c, Zmm(20 + l));
  }
}

void emitRemaining(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &dst, const Xbyak::Reg64 &total,
                   const Xbyak::Reg64 &start, int limit) {
  Xbyak::Label positive, clamped;
  g.mov(dst, total);
  g.sub(dst, start);
  g.jns(positive);
  g.xor_(dst, dst);
  g.L(positive);
  g.cmp(dst, limit);
  g.jle(clamped);
  g.mov(dst, limit);
  g.L(clamped);
}

void emitPrefetchRows(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &row, const Xbyak::Reg64 &ld,
                      int rows, int lines) {
  for (int i = 0; i < rows; ++i) {
    for (int line = 0; line < lines; ++line)
      g.prefetcht0(g.ptr[row + line * 64]);
    if (i + 1 < rows)
      g.add(row, ld);
  }
}

void emitLoadUnlessMasked(Xbyak::CodeGenerator &g, const Xbyak::Opmask &mask, const Xbyak::Zmm &dst,
                          const std::function<void()> &load) {
  Xbyak::Label none, done;
  g.kortestw(mask, mask);
  g.jz(none);
  load();
  g.jmp(done);
  g.L(none);
  g.vpxord(dst, dst, dst);
  g.L(done);
}

void emitLoadRows16(Xbyak::CodeGenerator &g, const Xbyak::Reg64 &row, const Xbyak::Reg64 &ld,
                    const Xbyak::Reg64 &valid, const std::function<void(int)> &load) {
  for (int i = 0; i < 16; ++i) {
    Xbyak::Label zero, next;
    g.cmp(valid, i);
    g.jle(zero);
    load(i);
    g.jmp(next);
    g.L(zero);
    g.vpxord(Zmm(i), Zmm(i), Zmm(i));
    g.L(next);
    if (i + 1 < 16)
      g.add(row, ld);
  }
}

} // namespace octet::x86
