//===- Ceilings.h - the machine's compute and bandwidth ceilings -*- C++ -*-===//
//
// The roofline's ceilings, measured by Octet on the running machine with the
// thread count a run uses:
//  - peak FP32 FMA: JIT vfmadd231ps loops (zmm with AVX-512, else ymm) with 12
//    independent accumulators per thread, so latency never limits;
//  - peak INT8: JIT vpdpbusd loops (AVX512-VNNI zmm, or AVX-VNNI ymm), else
//    AVX2's exact s16 form (vpmaddwd + vpaddd, what x86::Int8GemmAvx2 runs);
//  - peak bf16: a JIT vdpbf16ps loop (AVX512-BF16), 0 without it;
//  - peak AMX INT8: a JIT tdpbusd loop on 4 independent 16x64-byte accumulator
//    tiles, only where amxUsable() (AMX-INT8 and Linux granted XTILEDATA);
//    else amxInt8Gops = 0 and amxNote says why;
//  - read bandwidth: JIT streams of vector loads over per-thread buffers sized
//    for L2, L3 and DRAM, best of several passes, OpenMP over the threads.
// Measuring takes a few seconds, so the result is cached as JSON per host,
// CPU model and thread count (ceilingsCachePath()).
//
//===----------------------------------------------------------------------===//
#ifndef OCTET_RUNTIME_CEILINGS_H
#define OCTET_RUNTIME_CEILINGS_H

#include "compiler/codegen/Status.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace octet::x86 {
class KernelGenerator;
}

namespace octet::rt {

constexpr int kDefaultCeilingRounds = 3;

struct Ceilings {
  int threads = 0;
  std::string host, cpu;  ///< hostname and CPU brand string
  std::string fp32Isa;    ///< "avx512" or "avx2"
  double fp32Gflops = 0;  ///< peak FMA: 2 flops per lane per instruction
  std::string int8Isa;    ///< "avx512_vnni", "avx_vnni", "avx2_s16" or "" (none)
  double int8Gops = 0;    ///< peak vpdpbusd: 2 ops per u8·s8 product
  double bf16Gflops = 0;  ///< peak vdpbf16ps: 2 flops per bf16 product; 0 without AVX512-BF16
  double amxInt8Gops = 0; ///< peak tdpbusd; 0: AMX not usable
  std::string amxNote;    ///< why amxInt8Gops is 0 ("" when measured)
  double l2GBs = 0, l3GBs = 0, dramGBs = 0; ///< read bandwidth, GB/s (1e9 bytes)
  /// Total bytes streamed by all threads at each level (the buffer sizes).
  int64_t l2BufferBytes = 0, l3BufferBytes = 0, dramBufferBytes = 0;
  /// The last-level cache's capacity (sysconf; 0 if unknown): steps whose
  /// working set fits are held to l3GBs, larger ones to dramGBs.
  int64_t l3CacheBytes = 0;
  double measureSeconds = 0; ///< how long measuring took

  std::string toJson() const;
  /// Reads what toJson() wrote; false (with `error`) on anything else.
  static bool fromJson(const std::string &json, Ceilings &out, std::string &error);
};

/// Measures every ceiling now with `threads` OpenMP threads (<= 0: all):
/// `rounds` whole measurements, each ceiling the best of them (on a busy
/// machine one round rarely finds every ceiling in a quiet moment).
Ceilings measureCeilings(int threads, int rounds = kDefaultCeilingRounds);

/// The cache file for `threads`: $XDG_CACHE_HOME/octet (else ~/.cache/octet)
/// /ceilings-<hostname>-<CPU brand hash>-<threads>.json.
std::string ceilingsCachePath(int threads);

/// The cached ceilings for `threads` (<= 0: all), measured and cached when
/// there are none, they do not parse or `refresh` is set. A cache that cannot
/// be written is not an error (`note` says so); `fromCache` says which.
Status loadOrMeasureCeilings(int threads, bool refresh, Ceilings &out, bool *fromCache = nullptr,
                             std::string *note = nullptr, int rounds = kDefaultCeilingRounds);

/// Compute peaks sampled in a run: medians over `samples` samples (int8 0
/// without VNNI).
struct SampledPeaks {
  int samples = 0;
  double fp32Gflops = 0, int8Gops = 0, bf16Gflops = 0; ///< int8, bf16: 0 where the CPU lacks them
  double handoffNs = 0; ///< handoffNanoseconds, median of the samples (0: one thread)
  /// `ceilings` with their compute peaks replaced (unchanged with no samples).
  Ceilings apply(Ceilings ceilings) const;
};

/// The one-way time of a cache line handed between OpenMP threads 0 and 1 of a
/// `threads` team (each writes a shared flag in turn), best of 3 trials of
/// 2000 handoffs, in ns; 0 with fewer than 2 threads. Not a ceiling but the
/// state of the machine: on 2 vCPUs of an AMD Zen 4 it read 27-32 ns while
/// they shared a core complex and 150-180 ns while the hypervisor had them on
/// two, and then every step reading what the other thread wrote slowed down
/// (LayerNorms 3-4x; bench/RESULTS.md, session 19). Above
/// kFarHandoffNs a profile says so.
double handoffNanoseconds(int threads);
constexpr double kFarHandoffNs = 100;
/// What a handoff of `ns` says about the threads: past kFarHandoffNs "far
/// apart (...)", else "" (the profile and `octetc ceilings` print it).
std::string handoffNote(double ns);

/// The compute peaks sampled while something else is measured (octetc run
/// --profile samples them between the profiled runs): on a shared machine the
/// peak moves with the load, so a kernel's efficiency is a fraction of the
/// peak measured in the same run, not of the cached ceilings. Each sample()
/// times the ceilings' FMA loop and, where the CPU has them and they are asked
/// for (a plan with INT8 / vdpbf16ps steps), their vpdpbusd and vdpbf16ps
/// loops on `threads` threads: the best of 2 trials of 5 ms each (10 ms per
/// loop; a peak not sampled reads 0); and the threads' handoffNanoseconds. Shorter trials read low:
/// at 0.5 ms the team's start and join cost 3% (best of 10) to 6% (best of 3) of the peak that 5 ms
/// trials read.
class ComputePeakSampler {
public:
  explicit ComputePeakSampler(int threads, bool int8 = true, bool bf16 = true);
  ~ComputePeakSampler();
  void sample();
  SampledPeaks peaks() const;

private:
  struct Loops;
  std::unique_ptr<Loops> loops_;
  int threads_;
  std::vector<double> int8Gops_, fp32Gflops_, bf16Gflops_, handoffNs_;
};

/// Why --precision bf16 would run slower than f32 on this CPU, or "": one
/// thread's vdpbf16ps peak against its FP32 FMA peak (flops each; ~24 ms of
/// trials). Some CPUs with AVX512-BF16 execute vdpbf16ps below the FMA rate
/// (an Intel Xeon, model 207 under KVM: about half the flops).
std::string bf16SlowerThanFp32();
/// The note bf16SlowerThanFp32 gives for one thread's measured peaks
/// (GFLOP/s), or "" where bf16 is not the slower one (or either is not a
/// positive number).
std::string bf16SlowNote(double bf16Gflops, double fp32Gflops);
/// The tdpbusd peak loop (void fn(int64_t iterations)), for disassembly
/// (octet-jit-dump --kernel ceiling-tdpbusd); generating needs no AMX.
std::unique_ptr<x86::KernelGenerator> makeAmxPeakLoop();
/// Ops of one iteration of makeAmxPeakLoop()'s loop.
double amxPeakOpsPerIteration();

/// The median of `values` (the mean of the middle two for an even count; 0 if empty).
double median(std::vector<double> values);

/// Runs `body(thread)` on `threads` OpenMP threads at once, `trials` times; the
/// shortest wall time of a trial (all threads start together after a barrier).
/// The harness of the ceilings and of their independent check in bench/.
double bestParallelSeconds(int threads, int trials, const std::function<void(int)> &body);

} // namespace octet::rt

#endif
