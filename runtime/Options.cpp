//===- Options.cpp - the compile option vocabulary, parsed once -----------===//
#include "runtime/Options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <utility>

namespace octet::rt {
namespace {

/// The whole of `text` as a finite double (no leading space, no trailing characters).
bool parseNumber(const std::string &text, double &value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(value);
}

/// `value` as one of `choices`' spellings; false (result unchanged) for any other.
template <typename T>
bool parseChoice(const std::string &value,
                 std::initializer_list<std::pair<const char *, T>> choices, T &result) {
  for (const auto &[spelling, meaning] : choices)
    if (value == spelling) {
      result = meaning;
      return true;
    }
  return false;
}

/// A flag's two spellings, off first (e.g. "0"/"1", "off"/"on").
bool parseSwitch(const std::string &value, const char *off, const char *on, bool &result) {
  return parseChoice<bool>(value, {{off, false}, {on, true}}, result);
}

/// The options that are one setting's two spellings.
struct Switch {
  const char *key, *off, *on, *expected;
  bool OptionSettings::*setting;
};
const Switch kSwitches[] = {
    {"isa", "avx2", "host", "host or avx2", &OptionSettings::allowAvx512},
    {"autotune", "0", "1", "0 or 1", &OptionSettings::autotune},
    {"precision", "f32", "bf16", "f32 or bf16", &OptionSettings::linearBf16},
    {"print_ir_after_all", "0", "1", "0 or 1", &OptionSettings::printIrAfterAll},
    {"profile", "0", "1", "0 or 1", &OptionSettings::profile},
    {"smoothquant", "off", "on", "on or off", &OptionSettings::smoothquant},
    {"pack_tokens", "off", "on", "on or off", &OptionSettings::packTokens},
    {"calibration_progress", "0", "1", "0 or 1", &OptionSettings::calibrationProgress},
    {"constants", "mapped", "huge_pages", "huge_pages or mapped",
     &OptionSettings::constantsOnHugePages},
};

} // namespace

const char *const kOptionKeys =
    "gemm, isa, target, autotune, attention, precision, print_ir_after_all, profile, int8, "
    "calibration_samples, calibration_percentile, calibration_progress, smoothquant, "
    "smoothquant_alpha, pack_tokens, external_data_dir, memory_budget, constants";

bool setOption(OptionSettings &settings, const std::string &key, const std::string &value,
               OptionError &error) {
  error = OptionError();
  auto bad = [&](const char *expected) {
    error.expected = expected;
    return false;
  };
  const std::string &v = value;
  for (const Switch &option : kSwitches)
    if (key == option.key) {
      if (!parseSwitch(v, option.off, option.on, settings.*option.setting))
        return bad(option.expected);
      return true;
    }
  if (key == "attention") {
    using P = AttentionPrecision;
    if (v == "auto") { // follow precision and int8 (compileOptionsFrom)
      settings.attentionGiven = false;
      return true;
    }
    if (!parseChoice<P>(v, {{"f32", P::F32}, {"bf16", P::Bf16}, {"int8", P::Int8}},
                        settings.attention))
      return bad("auto, f32, bf16 or int8");
    settings.attentionGiven = true;
  } else if (key == "gemm") {
    using Gemm = KernelOptions::Gemm;
    if (!parseChoice<Gemm>(v, {{"auto", Gemm::Auto}, {"jit", Gemm::Jit}, {"onednn", Gemm::OneDnn}},
                           settings.gemm))
      return bad("auto, jit or onednn");
  } else if (key == "target") {
    KernelOptions kernels;
    if (!kernels.setTarget(v, error.reason))
      return false;
    settings.target = v;
  } else if (key == "int8") {
    if (!parseChoice<Int8Mode>(v,
                               {{"none", Int8Mode::None},
                                {"static", Int8Mode::Static},
                                {"dynamic", Int8Mode::Dynamic}},
                               settings.int8))
      return bad("none, static or dynamic");
  } else if (key == "calibration_samples") {
    if (v.empty())
      return bad("a directory of input sets or generate:N[xB][xS]");
    settings.calibrationSamples = v;
  } else if (key == "calibration_percentile") {
    double p;
    if (!parseNumber(v, p) || !(p == 0 || (p > 50 && p <= 100)))
      return bad("a number in (50, 100], e.g. 99.99, or 0 for min/max");
    settings.calibrationPercentile = p;
  } else if (key == "smoothquant_alpha") {
    double a;
    if (!parseNumber(v, a) || !(a >= 0 && a <= 1))
      return bad("a number in [0, 1]");
    settings.smoothquantAlpha = a;
  } else if (key == "external_data_dir") {
    settings.externalDataDir = v; // checked when a model reads external data
  } else if (key == "memory_budget") {
    // Digits only: strtoull alone would take a sign or leading space.
    if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])))
      return bad("a number of bytes, 0 for this host's memory");
    char *end = nullptr;
    errno = 0;
    unsigned long long bytes = std::strtoull(v.c_str(), &end, 10);
    if (errno != 0 || *end != '\0')
      return bad("a number of bytes, 0 for this host's memory");
    settings.memoryBudget = bytes;
  } else {
    error.unknownKey = true;
    return false;
  }
  return true;
}

} // namespace octet::rt
