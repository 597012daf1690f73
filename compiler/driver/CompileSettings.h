//===- CompileSettings.h - option settings to CompileOptions ----*- C++ -*-===//
//
// The one mapping from the option vocabulary (runtime/Options.h: the C API's
// octet_options_set keys, octetc's flags) to the compiler's CompileOptions,
// for liboctet's JIT entry points and octetc. Where a message goes (progress,
// IR dumps) is the caller's to set.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_DRIVER_COMPILESETTINGS_H
#define OCTET_DRIVER_COMPILESETTINGS_H

#include "compiler/driver/Compile.h"
#include "runtime/Options.h"

namespace octet {

inline CompileOptions::Int8 toInt8(rt::Int8Mode mode) {
  switch (mode) {
  case rt::Int8Mode::Static:
    return CompileOptions::Int8::Static;
  case rt::Int8Mode::Dynamic:
    return CompileOptions::Int8::Dynamic;
  case rt::Int8Mode::None:
    break;
  }
  return CompileOptions::Int8::None;
}

/// `settings` as CompileOptions (its target was checked when it was set).
inline CompileOptions compileOptionsFrom(const rt::OptionSettings &settings) {
  CompileOptions result;
  result.kernels.gemm = settings.gemm;
  result.kernels.allowAvx512 = settings.allowAvx512;
  std::string unknown; // checked by setOption
  result.kernels.setTarget(settings.target, unknown);
  result.kernels.autotune = settings.autotune;
  // Unless `attention` says otherwise, attention's matmuls follow the linears:
  // bf16 with precision=bf16 (docs/kernel-selection.md, "bf16 linears"), int8 in an
  // INT8 plan (docs/attention-int8.md), f32 otherwise.
  result.kernels.attention = settings.attentionGiven               ? settings.attention
                             : settings.linearBf16                 ? rt::AttentionPrecision::Bf16
                             : settings.int8 != rt::Int8Mode::None ? rt::AttentionPrecision::Int8
                                                                   : rt::AttentionPrecision::F32;
  result.kernels.linearBf16 = settings.linearBf16;
  result.int8 = toInt8(settings.int8);
  result.calibrationSamples = settings.calibrationSamples;
  result.calibrationPercentile = settings.calibrationPercentile;
  result.smoothquant = settings.smoothquant;
  result.packTokens = settings.packTokens;
  result.smoothquantAlpha = settings.smoothquantAlpha;
  result.externalDataDir = settings.externalDataDir;
  result.memoryBudget = settings.memoryBudget;
  return result;
}

} // namespace octet

#endif
