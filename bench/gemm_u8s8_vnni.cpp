//===- gemm_u8s8_vnni.cpp - VNNI peak and the INT8 GEMM's share of it -----===//
//
// 1. Peak: a JIT loop of vpdpbusd only, on independent accumulators (no
//    loads, no dependency chain shorter than the unit's latency), timed on one
//    thread and on OpenMP's team (each thread its own loop). One zmm
//    vpdpbusd = 16 lanes x 4 u8*s8 MACs = 128 int8 ops (2 per MAC).
// 2. Int8GemmDriver on BERT-base shapes (M = 128, 1024; K x N = 768x768,
//    768x2304, 768x3072, 3072x768), a_zp 128, bias, f32 and u8 outputs, one
//    thread and the team: GOPS of the best run and the fraction of the
//    matching peak. "warm": one weight, run again and again, so B stays in
//    L2; "cold": the team cycles through copies of the weight (64 MiB in all,
//    BERT-base INT8's 85 MB of linears), so B comes from L3 or DRAM at every
//    run, as in a model, where each GEMM's weight was last read a layer ago.
//   gemm_u8s8_vnni [reps] [cpu|wall] [M,M,...]   (OMP_NUM_THREADS sets the team;
//   M default 128,1024; 16-32 is a short sentence at batch 1)
// `cpu`: one-thread figures and the team's peak use thread CPU time rather
// than wall time, so that time slicing on a shared host drops out; the team's
// GEMM times stay wall-clock (its threads wait for each other).
//
//===----------------------------------------------------------------------===//
#include "compiler/codegen/x86/Int8GemmDriver.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <time.h>
#include <vector>

namespace {
using namespace octet::x86;

/// for (i = 0; i < iterations; ++i) 8 x (24 independent vpdpbusd)
class VnniPeakLoop : public KernelGenerator {
public:
  static constexpr int kAccumulators = 24, kRepeat = 8;
  static constexpr double kOpsPerIteration = kAccumulators * kRepeat * 16 * 4 * 2;
  VnniPeakLoop() : KernelGenerator("vnni_peak_loop", Isa::Avx512Vnni) {}

protected:
  void generate() override {
    Xbyak::Label loop;
    for (int r = 0; r < 32; ++r)
      vpxord(Xbyak::Zmm(r), Xbyak::Zmm(r), Xbyak::Zmm(r));
    align(16);
    L(loop);
    for (int rep = 0; rep < kRepeat; ++rep)
      for (int r = 0; r < kAccumulators; ++r)
        vpdpbusd(Xbyak::Zmm(r), Xbyak::Zmm(30), Xbyak::Zmm(31));
    dec(rdi);
    jnz(loop);
    vzeroupper();
    ret();
  }
};
using PeakFn = void (*)(int64_t iterations);

bool threadCpuTime = false; // for one-thread measurements only

double seconds(const std::function<void()> &f, bool cpuTime = false) {
  if (cpuTime) {
    timespec start, end;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    f();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    return double(end.tv_sec - start.tv_sec) + 1e-9 * double(end.tv_nsec - start.tv_nsec);
  }
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Int8 GOPS of the vpdpbusd loop on `threads` threads: the best of 50 short
/// runs (a few ms each), so that a shared host's time slicing drops out. With
/// thread CPU time each thread times its own loop and the rates add up.
double peakGops(PeakFn fn, int threads) {
  const int64_t iterations = 20'000;
  const double ops = VnniPeakLoop::kOpsPerIteration * iterations;
  double best = 0;
  for (int rep = 0; rep < 50; ++rep) {
    double gops = 0;
    if (threadCpuTime) {
#pragma omp parallel num_threads(threads) reduction(+ : gops)
      gops += ops / seconds([&] { fn(iterations); }, true) / 1e9;
    } else {
      gops = ops * threads / seconds([&] {
#pragma omp parallel num_threads(threads)
               fn(iterations);
             }) /
             1e9;
    }
    best = std::max(best, gops);
  }
  return best;
}

/// Best of `reps` runs after warm-up: noise on a shared host only adds time.
double bestSeconds(int reps, const std::function<void()> &f, bool cpuTime) {
  for (int i = 0; i < 3; ++i)
    f();
  double best = 1e30;
  for (int i = 0; i < reps; ++i)
    best = std::min(best, seconds(f, cpuTime));
  return best;
}
} // namespace

int main(int argc, char **argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  threadCpuTime = argc > 2 && std::string(argv[2]) == "cpu";
  std::vector<int64_t> ms = {128, 1024};
  if (argc > 3) {
    ms.clear();
    for (const char *p = argv[3]; *p;) {
      char *end = nullptr;
      const long m = std::strtol(p, &end, 10);
      if (end == p || m < 1) {
        std::fprintf(stderr,
                     "gemm_u8s8_vnni: M list '%s': expected positive integers, "
                     "comma separated\n",
                     argv[3]);
        return 2;
      }
      if (*end && *end != ',') {
        std::fprintf(stderr, "gemm_u8s8_vnni: M list '%s': unexpected '%c'\n", argv[3], *end);
        return 2;
      }
      ms.push_back(m);
      p = *end ? end + 1 : end;
    }
  }
  if (!Int8GemmDriver::hostSupported()) {
    std::printf("host lacks AVX-512 VNNI: nothing to measure\n");
    return 0;
  }
  const int team = omp_get_max_threads();
  VnniPeakLoop peakLoop;
  PeakFn peak = peakLoop.entry<PeakFn>();
  const double peak1 = peakGops(peak, 1), peakN = peakGops(peak, team);
  std::printf("one-thread times: %s\n", threadCpuTime ? "thread CPU time" : "wall");
  std::printf("vpdpbusd peak: 1 thread %.1f GOPS, %d threads %.1f GOPS (int8 ops, 2 per MAC)\n",
              peak1, team, peakN);
  std::printf("%5s %5s %5s %4s | %9s %7s %6s | %9s %7s %6s | %14s %6s\n", "M", "K", "N", "out",
              "1t ms", "GOPS", "peak", "team ms", "GOPS", "peak", "team cold GOPS", "peak");

  std::mt19937 gen(1);
  std::uniform_int_distribution<int> u8(0, 255), s8(-128, 127);
  const int64_t kn[][2] = {{768, 768}, {768, 2304}, {768, 3072}, {3072, 768}};
  for (int64_t m : ms)
    for (auto [k, n] : kn) {
      std::vector<uint8_t> a(m * k), c(m * n * 4);
      std::vector<int8_t> w(k * n);
      std::vector<float> bias(n, 0.5f);
      for (uint8_t &x : a)
        x = uint8_t(u8(gen));
      for (int8_t &x : w)
        x = int8_t(s8(gen));
      // packs[0] is the warm weight; all of them the cold set.
      const int64_t coldBytes = int64_t(64) << 20;
      const int64_t copies = std::max<int64_t>(4, coldBytes / (k * n));
      std::vector<PackedInt8> packs;
      packs.reserve(size_t(copies));
      for (int64_t i = 0; i < copies; ++i)
        packs.push_back(
            packInt8(octet::PackIsa::Avx512Vnni, w.data(), k, n, octet::WeightLayout::KN));
      for (QuantOutput out : {QuantOutput::F32, QuantOutput::U8}) {
        Int8GemmParams params;
        params.aZeroPoint = 128;
        params.xScale = 0.02f;
        params.wScale.assign(n, 0.01f);
        params.bias = bias.data();
        params.output = out;
        params.outScale = 0.05f;
        params.outZeroPoint = 128;
        std::vector<std::unique_ptr<Int8GemmDriver>> gemms;
        for (const PackedInt8 &packed : packs)
          gemms.push_back(std::make_unique<Int8GemmDriver>(packed, params));
        const double ops = 2.0 * m * n * k;
        auto run = [&] { gemms[0]->run(a.data(), m, k, c.data(), n); };
        auto runCold = [&] {
          for (const auto &gemm : gemms)
            gemm->run(a.data(), m, k, c.data(), n);
        };
        omp_set_num_threads(1);
        const double t1 = bestSeconds(reps, run, threadCpuTime);
        omp_set_num_threads(team);
        const double tN = bestSeconds(reps, run, false);
        const double tCold = bestSeconds(std::max(3, reps / 5), runCold, false) / double(copies);
        std::printf(
            "%5ld %5ld %5ld %4s | %9.3f %7.1f %5.0f%% | %9.3f %7.1f %5.0f%% | %14.1f %5.0f%%\n",
            long(m), long(k), long(n), quantOutputName(out), t1 * 1e3, ops / t1 / 1e9,
            100 * ops / t1 / 1e9 / peak1, tN * 1e3, ops / tN / 1e9, 100 * ops / tN / 1e9 / peakN,
            ops / tCold / 1e9, 100 * ops / tCold / 1e9 / peakN);
      }
    }
  return 0;
}
