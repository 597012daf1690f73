//===- GemmU8S8Vnni.cpp ---------------------------------------------------===//
#include "compiler/codegen/x86/GemmU8S8Vnni.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;

namespace {
std::string kernelName(const GemmU8S8VnniConfig &c) {
  std::string name = "gemm_u8s8_vnni_m" + std::to_string(c.mr) + "n" + std::to_string(c.nr) + "c" +
                     std::to_string(c.columns);
  if (c.kTailBytes)
    name += "_ktail" + std::to_string(c.kTailBytes);
  return name + gemmU8S8EpilogueSuffix(c.epilogue);
}

} // namespace

/// Where GemmU8S8Args holds the pointer to `array`.
size_t GemmU8S8Vnni::argsOffset(ColumnArray array) {
  switch (array) {
  case ColumnArray::Comp:
    return offsetof(GemmU8S8Args, comp);
  case ColumnArray::Scale:
    return offsetof(GemmU8S8Args, scale);
  case ColumnArray::Bias:
    return offsetof(GemmU8S8Args, bias);
  case ColumnArray::RowScales:
    return offsetof(GemmU8S8Args, xScale);
  case ColumnArray::Inputs:
    break;
  }
  return offsetof(GemmU8S8Args, columns);
}

GemmU8S8Vnni::GemmU8S8Vnni(const GemmU8S8VnniConfig &config)
    : GemmU8S8EpilogueAvx512(kernelName(config), Isa::Avx512Vnni, 48 * 1024, config.mr,
                             config.nr, config.columns, config.epilogue),
      config_(config) {
  const int scratch =
      config.epilogue.elementwise ? config.epilogue.elementwise->scratchZmmCount() : 0;
  auto reject = [&](const std::string &why) {
    throw std::invalid_argument("GemmU8S8Vnni " + name() + ": " + why);
  };
  if (config.nr != 16 && config.nr != 32 && config.nr != 48 && config.nr != 64)
    reject("panel width must be 16, 32, 48 or 64, got " + std::to_string(config.nr));
  if (config.columns < 1 || config.columns > config.nr)
    reject("valid columns must be in 1.." + std::to_string(config.nr));
  if (config.mr < 1 || config.mr > maxRows(config.nr, scratch))
    reject("rows must be in 1.." + std::to_string(maxRows(config.nr, scratch)) +
           " for this panel width and " + std::to_string(scratch) + " epilogue scratch zmm");
  if (config.kTailBytes < 0 || config.kTailBytes > 3)
    reject("K tail bytes must be K % 4");
  if (std::string why = checkGemmU8S8Epilogue(config.epilogue); !why.empty())
    reject(why);
}

void GemmU8S8Vnni::dotGroup(int step, bool tailGroup) {
  // Padded panel columns and K bytes are zero, so the B group loads unmasked.
  for (int j = 0; j < vectors(); ++j)
    vmovdqu32(zB(j), zword[regB_ + (step * nr_ + 16 * j) * 4]);
  const Xmm xA(zA_.getIdx());
  for (int i = 0; i < mr_; ++i) {
    if (tailGroup) {
      // Only the row's last K % 4 bytes: the bytes past them may be unmapped.
      vmovdqu8(xA | kKTail_ | T_z, aRow(i, step));
      vpbroadcastd(zA_, xA);
    } else {
      vpbroadcastd(zA_, aRow(i, step));
    }
    for (int j = 0; j < vectors(); ++j)
      vpdpbusd(acc(i, j), zA_, zB(j));
  }
}

void GemmU8S8Vnni::generate() {
  const int partialRow = nr_ * 4; // bytes
  preamble();
  loadTile(offsetof(GemmU8S8Args, kGroups), offsetof(GemmU8S8Args, b), offsetof(GemmU8S8Args, a),
           offsetof(GemmU8S8Args, lda), sizeof(uint8_t));
  // K loop over 4-byte groups, then the masked K tail group.
  kLoop();
  if (config_.kTailBytes) {
    Label noTail;
    cmp(qword[regArgs_ + offsetof(GemmU8S8Args, kTail)], 0);
    je(noTail, T_NEAR);
    mov(regRow_.cvt32(), (1u << config_.kTailBytes) - 1);
    kmovw(kKTail_, regRow_.cvt32());
    dotGroup(0, true);
    L(noTail);
  }

  // Earlier K blocks left their s32 sums in `partial`.
  Label noAccumulate, lastBlock, done;
  cmp(qword[regArgs_ + offsetof(GemmU8S8Args, accumulate)], 0);
  je(noAccumulate, T_NEAR);
  mov(regRow_, ptr[regArgs_ + offsetof(GemmU8S8Args, partial)]);
  for (int i = 0; i < mr_; ++i)
    for (int j = 0; j < vectors(); ++j)
      vpaddd(acc(i, j), acc(i, j), zword[regRow_ + i * partialRow + j * 64]);
  L(noAccumulate);
  cmp(qword[regArgs_ + offsetof(GemmU8S8Args, last)], 0);
  jne(lastBlock, T_NEAR);
  mov(regRow_, ptr[regArgs_ + offsetof(GemmU8S8Args, partial)]);
  for (int i = 0; i < mr_; ++i)
    for (int j = 0; j < vectors(); ++j)
      vmovdqa32(zword[regRow_ + i * partialRow + j * 64], acc(i, j));
  jmp(done, T_NEAR);
  L(lastBlock);
  emitU8S8Epilogue(
      [&](ColumnArray array) {
        // comp, scale and bias share r12: each is used up before the next.
        const Reg64 reg = array == ColumnArray::RowScales ? regXs_
                          : array == ColumnArray::Inputs  ? regColumns_
                                                          : regVec_;
        mov(reg, ptr[regArgs_ + argsOffset(array)]);
        return reg;
      },
      [&] {
        loadRows(offsetof(GemmU8S8Args, residual), offsetof(GemmU8S8Args, ldr), sizeof(float));
      });
  emitU8S8Store([&] {
    loadRows(offsetof(GemmU8S8Args, c), offsetof(GemmU8S8Args, ldc),
             config_.epilogue.output == QuantOutput::F32 ? 4 : 1);
  });
  L(done);
  postamble();

  emitU8S8Constants();
}

} // namespace octet::x86
