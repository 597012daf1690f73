//===- Options.h - the compile option vocabulary, parsed once ---*- C++ -*-===//
//
// The settings a user gives a compile (GEMM provider, ISA, target, INT8 mode,
// attention and linear precision, SmoothQuant, padding-free batches, ...) or
// an open (profile, constants) as the C API's octet_options_set keys. octetc's
// flags of the same meaning go through the same parser (tools/octetc), so
// both accept the same values and say the same thing about a bad one;
// compiler/driver/CompileSettings.h turns the settings into CompileOptions.
// No MLIR: liboctet and every model.so link it.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_OPTIONS_H
#define OCTET_RUNTIME_OPTIONS_H

#include "runtime/Steps.h" // KernelOptions::Gemm

#include <cstdint>
#include <string>

namespace octet::rt {

/// CompileOptions::Int8's values, here so that the runtime needs no compiler header.
enum class Int8Mode { None, Static, Dynamic };

/// The compile settings by option; the defaults are the C API's and octetc's.
struct OptionSettings {
  KernelOptions::Gemm gemm = KernelOptions::Gemm::Auto;
  bool allowAvx512 = true;
  std::string target = "host"; ///< KernelOptions::setTarget's name (checked when set)
  bool autotune = false;
  AttentionPrecision attention = AttentionPrecision::F32;
  bool linearBf16 = false;     ///< precision=bf16 (KernelOptions::linearBf16)
  bool attentionGiven = false; ///< `attention` was set; else it follows `precision` and `int8`
  bool printIrAfterAll = false;
  bool profile = false;
  Int8Mode int8 = Int8Mode::None;
  std::string calibrationSamples; ///< empty: octet::kDefaultCalibrationSamples
  double calibrationPercentile = 0;
  bool smoothquant = true;
  bool packTokens = true; ///< octet::CompileOptions::packTokens
  double smoothquantAlpha = 0.7;
  bool calibrationProgress = false;
  std::string externalDataDir; ///< empty: the model's folder; bytes: external data refused
  uint64_t memoryBudget = 0;   ///< bytes the model's constants may claim; 0: host memory
  /// Opening a model.so: its constants copied onto huge pages (else read where
  /// the file is mapped, shared between processes; rt::ConstantPlacement).
  bool constantsOnHugePages = true;
};

/// Why setOption refused a key or value.
struct OptionError {
  bool unknownKey = false; ///< the key is none of kOptionKeys
  std::string expected;    ///< for a bad value: what the option takes ("auto, jit or onednn")
  std::string reason;      ///< instead of `expected`, a whole sentence (an unknown target's)
};

/// Every key setOption knows, comma-separated, for messages.
extern const char *const kOptionKeys;

/// Sets `key` to `value` in `settings`; false (settings unchanged) with `error`
/// filled when the key is unknown or the value is not one it takes.
bool setOption(OptionSettings &settings, const std::string &key, const std::string &value,
               OptionError &error);

} // namespace octet::rt

#endif
