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

} // namespace octet::x86
