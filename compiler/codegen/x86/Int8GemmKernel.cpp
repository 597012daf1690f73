//===- Int8GemmKernel.cpp -------------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmKernel.h"

#include <cmath>
#include <cstring>

namespace octet::x86 {
using namespace Xbyak;

namespace {

// The epilogue's own constants (after the elementwise emitter's), by index.
enum OwnConstant {
  kOutScale,
  kClampLow,
  kClampHigh,
  kOutZeroPoint,
  kZero,
  kOutZeroPointF, ///< out_zp as a float (requantizesAfterFastGelu)
  kCodeLow,       ///< the output type's range as floats (requantizesAfterFastGelu)
  kCodeHigh,
  kOwnConstantCount
};
// |v| <= 2^24 before vcvtps2dq: in range for s32, far past any u8/s8 result.
constexpr float kClamp = 16777216.0f;
} // namespace

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

std::string checkInt8Epilogue(const Int8EpilogueConfig &c) {
  const int columns = c.elementwise ? c.elementwise->columnInputCount() : 0;
  if (columns > 0 && c.columnStride < 64)
    return "the elementwise program reads " + std::to_string(columns) +
           " per-column inputs but no column stride was given";
  if (c.elementwise && c.elementwise->resultScale() != 1.0f &&
      !c.elementwise->requantizedOutputOnly())
    return "the elementwise program leaves its result scaled, which only a requantize after a "
           "fast GELU divides out";
  if (c.output == QuantOutput::F32)
    return c.elementwise && c.elementwise->requantizedOutputOnly()
               ? "the elementwise program's fast GELU is accurate enough only for a u8/s8 "
                 "output, not f32"
               : "";
  if (!(c.outScale > 0) || !std::isfinite(c.outScale))
    return "output scale must be positive and finite";
  const int32_t lo = c.output == QuantOutput::U8 ? 0 : -128;
  if (c.outZeroPoint < lo || c.outZeroPoint > lo + 255)
    return "output zero point " + std::to_string(c.outZeroPoint) + " outside the " +
           quantOutputName(c.output) + " range";
  return "";
}

std::string int8EpilogueSuffix(const Int8EpilogueConfig &c) {
  const int columns = c.elementwise ? c.elementwise->columnInputCount() : 0;
  return std::string(c.compensation ? "_comp" : "") + (c.xScalePerRow ? "_rowscale" : "") +
         gemmEpilogueSuffix(c.bias, c.residual, c.elementwise != nullptr) +
         (columns ? "_columns" + std::to_string(columns) : "") +
         (c.elementwise && c.elementwise->requantizedOutputOnly() ? "_fastgelu" : "") + "_" +
         quantOutputName(c.output);
}

Int8GemmKernel::Int8GemmKernel(std::string name, Isa isa, size_t maxCodeBytes, int tileRows,
                               int tileColumns, int validColumns,
                               const Int8GemmKernelConfig &config)
    : GemmTileAvx512(std::move(name), isa, maxCodeBytes, tileRows, tileColumns, validColumns),
      config_(config), epilogue_(config.epilogue) {}

// A power of two has an exact reciprocal. After a fast GELU (error ~8e-5 per
// unit) the reciprocal's extra rounding (~6e-8 relative) is noise, and vdivps
// would cost about as much as that whole GELU.
bool Int8GemmKernel::multipliesByReciprocal() const {
  const float s = epilogue_.outScale;
  if (epilogue_.output == QuantOutput::F32)
    return false;
  const bool exact = std::ilogb(s) > -126 && std::ldexp(1.0f, std::ilogb(s)) == s;
  return exact || (epilogue_.elementwise && epilogue_.elementwise->requantizedOutputOnly());
}

// After a fast GELU the reciprocal already rounds once more; adding out_zp
// before the rounding moves a code only where v / out_scale lies within one
// f32 ulp of the output range (2^-16 at 255) of a tie: noise beside the
// GELU's 8e-5, and two instructions fewer per vector (no integer add, no
// unsigned clamp). Scale and bias as one FMA is such noise too.
bool Int8GemmKernel::requantizesAfterFastGelu() const {
  return epilogue_.output != QuantOutput::F32 && epilogue_.elementwise &&
         epilogue_.elementwise->requantizedOutputOnly();
}

Address Int8GemmKernel::constant(int index) const { return ptr_b[rip + ownConstants_ + 4 * index]; }

Address Int8GemmKernel::scalarConstant(int index) const {
  return dword[rip + ownConstants_ + 4 * index];
}

void Int8GemmKernel::emitU8S8Epilogue(const ColumnPointer &column,
                                      const std::function<void()> &pointAtResidualRows,
                                      bool sumsHoldComp) {
  const int v = vectors();
  if (epilogue_.compensation && !sumsHoldComp) {
    const Reg64 comp = column(ColumnArray::Comp);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j)
        vpaddd(acc(i, j), acc(i, j), zword[comp + j * 64]);
  }
  const Reg64 scale = column(ColumnArray::Scale);
  // After a fast GELU, scale and bias as one FMA: one rounding fewer than the
  // formula's, noise beside the GELU's 8e-5; one instruction fewer per vector.
  const bool biasInFma = epilogue_.bias && requantizesAfterFastGelu() && !epilogue_.xScalePerRow;
  if (epilogue_.xScalePerRow) {
    // f32(x_scale[m] * w_scale[n]) first, then times the sum: the reference's
    // two roundings.
    const Reg64 rowScales = column(ColumnArray::RowScales);
    for (int i = 0; i < mr_; ++i) {
      vbroadcastss(zA_, dword[rowScales + i * 4]);
      for (int j = 0; j < v; ++j) {
        vcvtdq2ps(acc(i, j), acc(i, j));
        vmulps(zB(0), zA_, zword[scale + j * 64]);
        vmulps(acc(i, j), acc(i, j), zB(0));
      }
    }
  } else if (biasInFma) {
    for (int j = 0; j < v; ++j) // zB is free after the K loop
      vmovups(zB(j), zword[scale + j * 64]);
    const Reg64 bias = column(ColumnArray::Bias); // may reuse scale's register
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j) {
        vcvtdq2ps(acc(i, j), acc(i, j));
        vfmadd213ps(acc(i, j), zB(j), zword[bias + j * 64]);
      }
  } else {
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j) {
        vcvtdq2ps(acc(i, j), acc(i, j));
        vmulps(acc(i, j), acc(i, j), zword[scale + j * 64]);
      }
  }
  if (epilogue_.bias && !biasInFma) {
    const Reg64 bias = column(ColumnArray::Bias);
    for (int i = 0; i < mr_; ++i)
      for (int j = 0; j < v; ++j)
        vaddps(acc(i, j), acc(i, j), zword[bias + j * 64]);
  }
  if (epilogue_.residual) {
    // Masked on the tail: residual rows are N floats, nothing past them is read.
    pointAtResidualRows();
    addRows();
  }
  if (epilogue_.elementwise) {
    if (epilogue_.elementwise->columnInputCount() > 0) {
      const Reg64 inputs = column(ColumnArray::Inputs);
      emitElementwise(*epilogue_.elementwise, &inputs, epilogue_.columnStride);
    } else {
      emitElementwise(*epilogue_.elementwise);
    }
  }
  if (epilogue_.output == QuantOutput::F32)
    return;
  if (requantizesAfterFastGelu()) {
    // RNE(clamp(v * (1 / out_scale) + out_zp, lo, hi)): one rounding in the
    // FMA, then the integer bounds (NaN takes the low one, as below); no
    // saturation is left for the store.
    vbroadcastss(zA_, scalarConstant(kOutScale));
    for (int r = 0; r < accCount_; ++r) {
      const Zmm z(r);
      vfmadd213ps(z, zA_, constant(kOutZeroPointF));
      vmaxps(z, z, constant(kCodeLow));
      // u8: vpmovusdb saturates what is above 255, and vcvtps2dq turns what is
      // above 2^31 (+inf) into 0x80000000, which it reads as 2^31: 255 too.
      if (epilogue_.output != QuantOutput::U8)
        vminps(z, z, constant(kCodeHigh));
      vcvtps2dq(z, z);
    }
    return;
  }
  // Requantize: RNE(v / out_scale) + out_zp, saturated. Divides, as the
  // formula says, unless multipliesByReciprocal().
  for (int r = 0; r < accCount_; ++r) {
    const Zmm z(r);
    if (multipliesByReciprocal())
      vmulps(z, z, constant(kOutScale));
    else
      vdivps(z, z, constant(kOutScale));
    vmaxps(z, z, constant(kClampLow)); // NaN takes the second operand: the low bound
    vminps(z, z, constant(kClampHigh));
    vcvtps2dq(z, z); // MXCSR's default rounding: to nearest even
    vpaddd(z, z, constant(kOutZeroPoint));
    if (epilogue_.output == QuantOutput::U8)
      vpmaxsd(z, z, constant(kZero)); // vpmovusdb saturates unsigned inputs only
  }
}

void Int8GemmKernel::emitU8S8Store(const std::function<void()> &pointAtOutputRows) {
  pointAtOutputRows();
  forEachRow([&](int i) {
    for (int j = 0; j < vectors(); ++j) {
      const Zmm &z = acc(i, j);
      if (epilogue_.output == QuantOutput::F32) {
        Address dst = zword[regRow_ + j * 64];
        if (isTail(j))
          vmovups(dst | kTail_, z);
        else
          vmovups(dst, z);
      } else {
        Address dst = xword[regRow_ + j * 16];
        if (isTail(j))
          dst = xword[regRow_ + j * 16] | kTail_;
        if (epilogue_.output == QuantOutput::U8)
          vpmovusdb(dst, z);
        else
          vpmovsdb(dst, z);
      }
    }
  });
}

void Int8GemmKernel::emitU8S8Constants() {
  if (epilogue_.elementwise)
    emitElementwiseConstants(*epilogue_.elementwise);
  align(64);
  L(ownConstants_);
  uint32_t own[kOwnConstantCount] = {};
  // A doubled result (EpilogueEmitter::resultScale) takes half the
  // reciprocal: exactly half, so the product is the same.
  const float resultScale = epilogue_.elementwise ? epilogue_.elementwise->resultScale() : 1.0f;
  own[kOutScale] = bitsOf(multipliesByReciprocal() ? 1.0f / epilogue_.outScale / resultScale
                                                   : epilogue_.outScale);
  own[kClampLow] = bitsOf(-kClamp);
  own[kClampHigh] = bitsOf(kClamp);
  own[kOutZeroPoint] = uint32_t(epilogue_.outZeroPoint);
  own[kZero] = 0;
  own[kOutZeroPointF] = bitsOf(float(epilogue_.outZeroPoint));
  own[kCodeLow] = bitsOf(epilogue_.output == QuantOutput::U8 ? 0.0f : -128.0f);
  own[kCodeHigh] = bitsOf(epilogue_.output == QuantOutput::U8 ? 255.0f : 127.0f);
  for (uint32_t w : own)
    dd(w);
}

} // namespace octet::x86
