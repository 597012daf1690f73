//===- Profile.h - per-step profile against the roofline --------*- C++ -*-===//
//
// Turns the step times of repeated runs (RunProfile) and each step's Work into
// a table and JSON (octetc run --profile / --profile-json, the C API's
// octet_model_last_profile_json): per step the median time and its share,
// ops and bytes, GOPS and GB/s, arithmetic intensity, and the fraction of the
// roofline bound min(peak compute, intensity x bandwidth) it reaches. The
// bandwidth is the L3's when the step's bytes fit the last-level cache, else
// DRAM's; the compute peak is FP32 FMA's, INT8 vpdpbusd's for int8 steps (a kind naming
// int8, i8, u8s8, s8s8, vnni or amx). With SampledPeaks (ComputePeakSampler) the compute
// peaks are those sampled between the profiled runs (the peak measured in the
// same run), the bandwidths the cached ceilings'. Steps of one kind on the same
// shapes (a model's twelve QKV GEMMs) are summed into classes, slowest first.
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_PROFILE_H
#define OCTET_RUNTIME_PROFILE_H

#include "runtime/Ceilings.h"
#include "runtime/Plan.h"

#include <string>
#include <vector>

namespace octet::rt {

struct StepProfile {
  size_t index = 0;
  std::string kind, location, shapes;
  double medianSeconds = 0, share = 0; ///< share of the sum of medians, 0..1
  double meanSeconds = 0;
  double ops = 0, bytes = 0;
  double gops = 0, gbs = 0, intensity = 0; ///< achieved; ops per byte
  std::string memory;                      ///< "L3" or "DRAM": the bandwidth it is held to
  std::string compute;                     ///< "fp32" or "int8": the peak it is held to
  double boundGops = 0;                    ///< min(peak, intensity x bandwidth); 0 without ceilings
  double rooflineFraction = 0;             ///< gops / boundGops
};

/// Steps of one kind on the same shapes, summed.
struct StepClassProfile {
  std::string kind, shapes;
  size_t steps = 0;
  double medianSeconds = 0, share = 0; ///< sum of the steps' medians; share of the sum
  double ops = 0, bytes = 0, gops = 0; ///< summed ops and bytes; ops over the summed medians
  double rooflineFraction = 0;         ///< gops over the ops-weighted bound; 0 without ceilings
};

struct ProfileReport {
  std::vector<StepProfile> steps;             ///< plan order
  double sumSeconds = 0, endToEndSeconds = 0; ///< sum of step medians; median run
  /// Means add up exactly: the steps' share of the runs' time is
  /// sumMeanSeconds / endToEndMeanSeconds (the rest: validation, scalars, arena).
  double sumMeanSeconds = 0, endToEndMeanSeconds = 0;
  int repeats = 0, threads = 0;
  bool haveCeilings = false;
  Ceilings ceilings; ///< the roofline's; compute peaks sampled in the run where peakSamples > 0
  /// Compute-peak samples taken between the runs, and the cached peaks they replaced.
  int peakSamples = 0;
  double cachedFp32Gflops = 0, cachedInt8Gops = 0, cachedBf16Gflops = 0;
  double handoffNs = 0; ///< the threads' cache-line handoff in those samples (0: not sampled)
  std::vector<StepClassProfile> classes; ///< slowest first
};

/// `stepSeconds[step][repeat]`; `work[step]` from the last run;
/// `endToEndSeconds[repeat]`: each whole run; `ceilings` may be null (no
/// roofline columns); `peaks`, if given and sampled, replaces their compute peaks.
ProfileReport analyzeProfile(const Plan &plan, const std::vector<std::vector<double>> &stepSeconds,
                             const std::vector<Work> &work,
                             const std::vector<double> &endToEndSeconds, int threads,
                             const Ceilings *ceilings, const SampledPeaks *peaks = nullptr);

/// The compute peak a step of this kind is held to: Int8 for INT8 kernels
/// (the kind names their types: "u8s8", "vnni", "int8", ...), Bf16 for bf16
/// kernels on vdpbf16ps ("gemm.jit_bf16"), else Fp32 (AMX bf16 tiles too: no
/// tdpbf16ps peak is measured).
enum class PeakKind { Fp32, Int8, Bf16 };
PeakKind peakKindOf(const std::string &kind);

/// The roofline bound (GOPS) of a step with `ops` and `bytes` under `ceilings`;
/// `memory` and `compute` get the ceilings chosen.
double rooflineBound(const Ceilings &ceilings, const std::string &kind, double ops, double bytes,
                     std::string *memory = nullptr, std::string *compute = nullptr);

/// The classes first, then the steps, each slowest first; `limit` step rows at
/// most (0: all).
std::string profileTable(const ProfileReport &report, size_t limit = 0);
std::string profileJson(const ProfileReport &report);

} // namespace octet::rt

#endif
