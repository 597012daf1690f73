//===- GemmU8S8Vnni.cpp ---------------------------------------------------===//
#include "compiler/codegen/x86/GemmU8S8Vnni.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>

namespace octet::x86 {
using namespace Xbyak;

const char *quantOutputName(QuantOutput output) {
  switch (output) {
  case QuantOutput::F32:
    return "f32";
  case QuantOutput::U8:
    return "u8";
  case QuantOutput::S8:
    return "s8";
  }
  return "unknown";
}

namespace {
std::string kernelName(const GemmU8S8VnniConfig &c) {
  std::string name = "gemm_u8s8_vnni_m" + std::to_string(c.mr) + "n" + std::to_string(c.nr) + "c" +
                     std::to_string(c.columns);
  if (c.kTailBytes)
    name += "_ktail" + std::to_string(c.kTailBytes);
  if (c.compensation)
    name += "_comp";
  if (c.xScalePerRow)
    name += "_rowscale";
  return name + gemmEpilogueSuffix(c.bias, c.residual, c.elementwise) + "_" +
         quantOutputName(c.output);
}

uint32_t bitsOf(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The kernel's own constants (after the elementwise emitter's), by index.
enum OwnConstant { kOutScale, kClampLow, kClampHigh, kOutZeroPoint, kZero, kOwnConstantCount };
// |v| <= 2^24 before vcvtps2dq: in range for s32, far past any u8/s8 result.
constexpr float kClamp = 16777216.0f;
} // namespace

GemmU8S8Vnni::GemmU8S8Vnni(const GemmU8S8VnniConfig &config)
    : GemmTileAvx512(kernelName(config), Isa::Avx512Vnni, 48 * 1024, config.mr, config.nr,
                     config.columns),
      config_(config) {
  const int scratch = config.elementwise ? config.elementwise->scratchZmmCount() : 0;
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
  if (config.output != QuantOutput::F32) {
    if (!(config.outScale > 0) || !std::isfinite(config.outScale))
      reject("output scale must be positive and finite");
    int32_t lo = config.output == QuantOutput::U8 ? 0 : -128;
    if (config.outZeroPoint < lo || config.outZeroPoint > lo + 255)
      reject("output zero point " + std::to_string(config.outZeroPoint) + " outside the " +
             quantOutputName(config.output) + " range");
  }
}

Address GemmU8S8Vnni::constant(int index) const { return ptr_b[rip + ownConstants_ + 4 * index]; }

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

void GemmU8S8Vnni::epilogue() {
  const int v = vectors();
  if (config_.compensation) {
    mov(regVec_, ptr[regArgs_ + offsetof(GemmU8S8Args, comp)]);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j)
        vpsubd(acc(i, j), acc(i, j), zword[regVec_ + j * 64]);
  }
  mov(regVec_, ptr[regArgs_ + offsetof(GemmU8S8Args, scale)]);
  if (config_.xScalePerRow) {
    // f32(x_scale[m] * w_scale[n]) first, then times the sum: the reference's
    // two roundings. zA_ and zB(0) are free once the K loop is done.
    mov(regXs_, ptr[regArgs_ + offsetof(GemmU8S8Args, xScale)]);
    for (int i = 0; i < mr_; ++i) {
      vbroadcastss(zA_, dword[regXs_ + i * 4]);
      for (int j = 0; j < v; ++j) {
        vcvtdq2ps(acc(i, j), acc(i, j));
        vmulps(zB(0), zA_, zword[regVec_ + j * 64]);
        vmulps(acc(i, j), acc(i, j), zB(0));
      }
    }
  } else {
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j) {
        vcvtdq2ps(acc(i, j), acc(i, j));
        vmulps(acc(i, j), acc(i, j), zword[regVec_ + j * 64]);
      }
  }
  if (config_.bias) {
    mov(regVec_, ptr[regArgs_ + offsetof(GemmU8S8Args, bias)]);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j)
        vaddps(acc(i, j), acc(i, j), zword[regVec_ + j * 64]);
  }
  if (config_.residual) {
    // Masked on the tail: residual rows are N floats, nothing past them is read.
    loadRows(offsetof(GemmU8S8Args, residual), offsetof(GemmU8S8Args, ldr), sizeof(float));
    addRows();
  }
  if (config_.elementwise)
    emitElementwise(*config_.elementwise);
  if (config_.output == QuantOutput::F32)
    return;
  // Requantize: RNE(v / out_scale) + out_zp, saturated. A power-of-two scale
  // multiplies by its exact reciprocal; others divide, as the formula says.
  const bool exactReciprocal = std::ilogb(config_.outScale) > -126 &&
                               std::ldexp(1.0f, std::ilogb(config_.outScale)) == config_.outScale;
  for (int r = 0; r < accCount_; ++r) {
    const Zmm z(r);
    if (exactReciprocal)
      vmulps(z, z, constant(kOutScale));
    else
      vdivps(z, z, constant(kOutScale));
    vmaxps(z, z, constant(kClampLow)); // NaN takes the second operand: the low bound
    vminps(z, z, constant(kClampHigh));
    vcvtps2dq(z, z); // MXCSR's default rounding: to nearest even
    vpaddd(z, z, constant(kOutZeroPoint));
    if (config_.output == QuantOutput::U8)
      vpmaxsd(z, z, constant(kZero)); // vpmovusdb saturates unsigned inputs only
  }
}

void GemmU8S8Vnni::storeC() {
  loadRows(offsetof(GemmU8S8Args, c), offsetof(GemmU8S8Args, ldc),
           config_.output == QuantOutput::F32 ? 4 : 1);
  forEachRow([&](int i) {
    for (int j = 0; j < vectors(); ++j) {
      const Zmm &z = acc(i, j);
      if (config_.output == QuantOutput::F32) {
        Address dst = zword[regRow_ + j * 64];
        if (isTail(j))
          vmovups(dst | kTail_, z);
        else
          vmovups(dst, z);
      } else {
        Address dst = xword[regRow_ + j * 16];
        if (isTail(j))
          dst = xword[regRow_ + j * 16] | kTail_;
        if (config_.output == QuantOutput::U8)
          vpmovusdb(dst, z);
        else
          vpmovsdb(dst, z);
      }
    }
  });
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
  epilogue();
  storeC();
  L(done);
  postamble();

  if (config_.elementwise)
    emitElementwiseConstants(*config_.elementwise);
  align(64);
  L(ownConstants_);
  const bool exactReciprocal = config_.output != QuantOutput::F32 &&
                               std::ilogb(config_.outScale) > -126 &&
                               std::ldexp(1.0f, std::ilogb(config_.outScale)) == config_.outScale;
  uint32_t own[kOwnConstantCount] = {};
  own[kOutScale] = bitsOf(exactReciprocal ? 1.0f / config_.outScale : config_.outScale);
  own[kClampLow] = bitsOf(-kClamp);
  own[kClampHigh] = bitsOf(kClamp);
  own[kOutZeroPoint] = uint32_t(config_.outZeroPoint);
  own[kZero] = 0;
  for (uint32_t w : own)
    dd(w);
}

} // namespace octet::x86
