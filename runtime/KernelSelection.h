//===- KernelSelection.h - who computes each GEMM, per M bucket --*- C++ -*-===//
//
// Every linear (f32) and qlinear (INT8) step has a GEMM provider per M bucket
// (Steps.h: GemmProvider, GemmChoice, kGemmBuckets). resolveGemmChoice fills
// the Auto entries of a spec:
//  - by the rule of docs/kernel-selection.md, decided from KernelOptions::cpu
//    (the target, not necessarily this host) and what each provider can
//    express (run-time scales, zero points, K);
//  - with KernelOptions::autotune, by timing every candidate that can run on
//    this host on the GEMM's real K, N, weight and epilogue at the M each
//    bucket stands for, then decideGemmChoice: the rule's provider unless
//    another is measured faster beyond the noise.
// The result is plain data in the spec (an AOT model stores it) plus a record
// for --print-kernel-choices. Timings are cached per shape in the log, so the
// 12 identical layers of BERT-base are timed once.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_KERNELSELECTION_H
#define OCTET_RUNTIME_KERNELSELECTION_H

#include "runtime/Steps.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace octet::rt {

/// A candidate's runs in one M bucket, in ms: median and quartiles.
struct BucketTiming {
  bool timed = false;
  double medianMs = 0, lowMs = 0, highMs = 0;
};

struct GemmCandidate {
  GemmProvider provider = GemmProvider::Auto;
  /// Why it was not timed ("this CPU lacks amx_tile amx_int8"), "" otherwise.
  std::string note;
  std::array<BucketTiming, kGemmBuckets> times{};
};

/// One resolved GEMM: what --print-kernel-choices prints.
struct GemmChoiceRecord {
  std::string op;       ///< "linear" or "qlinear"
  std::string location; ///< the ONNX node (nameGemmChoices), "" until named
  const Step *step = nullptr; ///< the step built with this choice (for naming)
  int64_t k = 0, n = 0;
  std::string shapeKey; ///< what the timings depend on (the cache key)
  bool autotuned = false;
  std::vector<GemmCandidate> candidates;
  GemmChoice choice{};
  std::array<std::string, kGemmBuckets> reason;
};

struct GemmChoiceLog {
  std::vector<GemmChoiceRecord> records;
};

/// The smallest relative difference autotune treats as real (5 %).
constexpr double kMinTimingNoise = 0.05;

/// `a` is faster than `b` beyond the noise: a.median * (1 + margin) <
/// b.median, margin = max(kMinTimingNoise, each one's relative interquartile
/// spread (high - low) / median). Both must be timed.
bool fasterBeyondNoise(const BucketTiming &a, const BucketTiming &b);

/// The decision with timings (pure: tests inject them). Per bucket: the
/// rule's provider when it was not timed or no timed candidate is faster than
/// it beyond the noise; else a provider already chosen for an earlier bucket
/// that no candidate beats beyond the noise (one provider built, not two);
/// else the fastest median. Never a candidate another beats beyond the noise.
GemmChoice decideGemmChoice(const GemmChoice &rule, const std::vector<GemmCandidate> &candidates,
                            std::array<std::string, kGemmBuckets> &reason);

/// Why `provider` cannot compute this qlinear / linear on options' target, or "".
std::string whyNotProvider(const QLinearSpec &spec, DType outType, const KernelOptions &options,
                           GemmProvider provider);
std::string whyNotProvider(const LinearSpec &spec, const KernelOptions &options,
                           GemmProvider provider);

/// Fills the Auto entries of spec.provider (rule, or autotune) and returns
/// the record; `error` is set (and the record meaningless) when
/// KernelOptions::gemm forces a provider that cannot take the GEMM. With
/// options.choices set, timings of an earlier record of the same shape are
/// reused; the caller appends the record.
GemmChoiceRecord resolveGemmChoice(QLinearSpec &spec, DType outType, const KernelOptions &options,
                                   std::string &error);
GemmChoiceRecord resolveGemmChoice(LinearSpec &spec, const KernelOptions &options,
                                   std::string &error);

/// The GEMM step of a resolved `choice`: `build(provider, error)` makes one
/// step per distinct provider; when the buckets differ, a step that runs the
/// part of the input's M bucket (M = input elements / k). `record` (the
/// factory's own resolution, if any) goes to options.choices with the step.
StepPtr buildGemmStep(const GemmChoice &choice, int64_t k, std::optional<GemmChoiceRecord> record,
                      const KernelOptions &options,
                      const std::function<StepPtr(GemmProvider, std::string &)> &build,
                      std::string &error);

/// Sets each record's location from the Plan step it was built for.
void nameGemmChoices(GemmChoiceLog &log, const Plan &plan);
/// The --print-kernel-choices table: one row per GEMM and M bucket.
std::string formatGemmChoices(const GemmChoiceLog &log, const KernelOptions &options);

} // namespace octet::rt

#endif
